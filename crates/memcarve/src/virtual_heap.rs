//! The virtual heap: for devices with [`VirtualMemory`], one address range per memory type, reserved once and
//! carved by the core's TLSF, with physical pages committed when allocations first touch them and decommitted
//! by a pluggable release policy. A request whose good fit would need new pages is placed on committed pages
//! when a bounded search finds room there; spare pages given back before a commit go largest runs first. CUDA maps onto it directly (`cuMemAddressReserve`, `cuMemCreate` +
//! `cuMemMap` per committed run, `cuMemUnmap` + `cuMemRelease` per decommitted run); the host backend models it.
//!
//! Invariants: a page is committed whenever a live allocation touches it; `page_users[p]` counts the live
//! allocations touching page `p`; `empty_pages` (a bitmap) holds exactly the committed pages with no user; every commit or
//! decommit call covers one contiguous run of pages and counts as one driver operation.

use std::fmt;
use std::sync::Arc;

use memcarve_core::{Handle, ResourceClass, VirtualBlock, VirtualBlockConfig};

use crate::device::{DeviceError, VirtualMemory};
use crate::diagnostics::{AllocationMeta, Leak};

/// What a release policy sees when it decides how much empty committed memory to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeapState {
    /// Bytes of committed pages.
    pub committed_bytes: u64,
    /// Bytes of committed pages no live allocation touches.
    pub empty_bytes: u64,
    /// Bytes of live allocations.
    pub live_bytes: u64,
    /// The most bytes ever committed at once.
    pub peak_committed_bytes: u64,
    /// The most bytes ever live at once.
    pub peak_live_bytes: u64,
    /// Page size.
    pub page_size: u64,
}

/// Decides how much empty committed memory a virtual heap keeps after a free. Keeping some avoids paying the
/// driver again when the memory is reused soon; keeping too much wastes it.
pub trait ReleasePolicy: Send + Sync + fmt::Debug {
    /// Bytes of empty committed pages to keep; pages beyond that are decommitted.
    fn retained_bytes(&self, state: &HeapState) -> u64;

    /// Extra bytes to commit beyond an allocation's last page when it needs a commit anyway (one driver call
    /// for what would otherwise be several). Default: none.
    fn commit_ahead_bytes(&self, _state: &HeapState) -> u64 {
        0
    }
}

/// Keeps committed memory within a slack of the highest live bytes seen so far: empty pages stay committed as
/// long as `committed <= max((1 + slack) × peak live so far, peak live so far + min_spare_bytes)`, and commits run ahead by what that budget allows (up
/// to `max_ahead_fraction` of the committed bytes). A workload that returns to earlier peaks (training steps,
/// generation rounds) then reuses its pages without driver calls, and peak committed stays within the slack of
/// peak live (plus fragmentation). Online: it uses only what has happened so far.
#[derive(Debug, Clone, Copy)]
pub struct PeakSlack {
    /// Allowed committed bytes above the peak live bytes so far, as a fraction (0.04 = 4 %).
    pub slack: f64,
    /// Largest commit-ahead, as a fraction of the committed bytes.
    pub max_ahead_fraction: f64,
    /// Allowed committed bytes above the peak live bytes so far, at least: pages are partly used at the edges of
    /// allocations, so a small heap needs a few spare pages whatever its size, or it maps and unmaps at the
    /// budget's edge on every batch.
    pub min_spare_bytes: u64,
}

impl Default for PeakSlack {
    /// 4 % slack, at least 16 MiB (8 pages of 2 MiB), and commits running ahead by up to a quarter of the
    /// committed bytes: on the eight recorded traces it commits at most 1.04 × the peak live bytes
    /// (docs/BENCHMARKS.md).
    fn default() -> PeakSlack {
        PeakSlack { slack: 0.04, max_ahead_fraction: 0.25, min_spare_bytes: 16 << 20 }
    }
}

impl PeakSlack {
    fn budget(&self, state: &HeapState) -> u64 {
        let proportional = (state.peak_live_bytes as f64 * (1.0 + self.slack)) as u64;
        proportional.max(state.peak_live_bytes.saturating_add(self.min_spare_bytes))
    }
}

impl ReleasePolicy for PeakSlack {
    fn retained_bytes(&self, state: &HeapState) -> u64 {
        let in_use = state.committed_bytes - state.empty_bytes;
        self.budget(state).saturating_sub(in_use)
    }

    fn commit_ahead_bytes(&self, state: &HeapState) -> u64 {
        let room = self.budget(state).saturating_sub(state.committed_bytes);
        room.min((state.committed_bytes as f64 * self.max_ahead_fraction) as u64)
    }
}

/// Decommits every empty page at once: the least memory, the most driver calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReleaseImmediately;

impl ReleasePolicy for ReleaseImmediately {
    fn retained_bytes(&self, _state: &HeapState) -> u64 {
        0
    }
}

/// Keeps up to a fixed number of bytes of empty pages, plus a fraction of the live bytes.
#[derive(Debug, Clone, Copy)]
pub struct RetainEmpty {
    /// Bytes always allowed to stay committed while empty.
    pub bytes: u64,
    /// Extra allowance per live byte (0.05 keeps 5 % of the live bytes as slack).
    pub live_fraction: f64,
}

impl ReleasePolicy for RetainEmpty {
    fn retained_bytes(&self, state: &HeapState) -> u64 {
        self.bytes.saturating_add((state.live_bytes as f64 * self.live_fraction) as u64)
    }
}

/// How the virtual heaps of an allocator are set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VirtualHeapConfig {
    /// Address space reserved per memory type; None: the type's heap size (rounded up to the page size).
    pub reserve_size: Option<u64>,
    /// Allocation granularity inside the heap (a power of two).
    pub min_granularity: u64,
    /// When empty pages are given back.
    pub release: Arc<dyn ReleasePolicy>,
}

impl Default for VirtualHeapConfig {
    /// The heap size reserved, 512-byte granularity (as PyTorch rounds), and the default [`PeakSlack`].
    fn default() -> VirtualHeapConfig {
        VirtualHeapConfig {
            reserve_size: None,
            min_granularity: 512,
            release: Arc::new(PeakSlack::default()),
        }
    }
}

impl VirtualHeapConfig {
    /// Sets the reserved size.
    pub fn with_reserve_size(mut self, bytes: u64) -> VirtualHeapConfig {
        self.reserve_size = Some(bytes);
        self
    }

    /// Sets the release policy.
    pub fn with_release(mut self, release: Arc<dyn ReleasePolicy>) -> VirtualHeapConfig {
        self.release = release;
        self
    }

    /// Sets the allocation granularity.
    pub fn with_min_granularity(mut self, granularity: u64) -> VirtualHeapConfig {
        self.min_granularity = granularity;
        self
    }
}

/// A change of the heap's committed pages, for traces and placement logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageEvent {
    /// `[offset, offset + size)` was committed (one driver operation).
    Commit {
        /// Start, in the heap's address range.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// `[offset, offset + size)` was decommitted (one driver operation).
    Decommit {
        /// Start, in the heap's address range.
        offset: u64,
        /// Bytes.
        size: u64,
    },
}

/// Counters of one virtual heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct VirtualHeapStats {
    /// Bytes committed now.
    pub committed_bytes: u64,
    /// The most bytes committed at once.
    pub peak_committed_bytes: u64,
    /// Bytes of live allocations.
    pub live_bytes: u64,
    /// The most bytes live at once.
    pub peak_live_bytes: u64,
    /// Committed pages with no live allocation.
    pub empty_bytes: u64,
    /// Commit calls (one contiguous run each).
    pub commits: u64,
    /// Decommit calls (one contiguous run each).
    pub decommits: u64,
    /// Live allocations.
    pub allocations: u64,
}

/// A set of page indices as a bitmap, with the highest member found by scanning down from a hint: inserting
/// and removing are O(1), which matters when a large allocation covers hundreds of pages.
#[derive(Debug, Clone)]
struct PageSet {
    words: Vec<u64>,
    /// No word above this index has a bit set.
    top: usize,
}

impl PageSet {
    fn new(pages: usize) -> PageSet {
        PageSet { words: vec![0; pages.div_ceil(64)], top: 0 }
    }

    fn insert(&mut self, page: usize) {
        self.words[page / 64] |= 1 << (page % 64);
        self.top = self.top.max(page / 64);
    }

    fn remove(&mut self, page: usize) {
        self.words[page / 64] &= !(1 << (page % 64));
    }

    /// Calls `apply(word index, mask)` for the words covering pages `first..=last`.
    fn for_words(first: usize, last: usize, mut apply: impl FnMut(usize, u64)) {
        for word in first / 64..=last / 64 {
            let low = if word == first / 64 { first % 64 } else { 0 };
            let high = if word == last / 64 { last % 64 } else { 63 };
            apply(word, (u64::MAX >> (63 - high)) & (u64::MAX << low));
        }
    }

    fn insert_range(&mut self, first: usize, last: usize) {
        Self::for_words(first, last, |word, mask| self.words[word] |= mask);
        self.top = self.top.max(last / 64);
    }

    fn remove_range(&mut self, first: usize, last: usize) {
        Self::for_words(first, last, |word, mask| self.words[word] &= !mask);
    }

    fn contains(&self, page: usize) -> bool {
        (self.words[page / 64] >> (page % 64)) & 1 == 1
    }

    /// The highest page in the set.
    fn highest(&mut self) -> Option<usize> {
        loop {
            let word = self.words[self.top];
            if word != 0 {
                return Some(self.top * 64 + 63 - word.leading_zeros() as usize);
            }
            if self.top == 0 {
                return None;
            }
            self.top -= 1;
        }
    }

    /// Every maximal run of consecutive members, as `(first, last)`, in ascending order.
    fn runs(&self) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (index, &word) in self.words.iter().enumerate().take(self.top + 1) {
            let mut bits = word;
            while bits != 0 {
                let start = index * 64 + bits.trailing_zeros() as usize;
                // Length of the run of ones starting at `start` within this word.
                let length = (bits >> (start % 64)).trailing_ones() as usize;
                let end = start + length - 1;
                match runs.last_mut() {
                    Some(run) if run.1 + 1 == start => run.1 = end,
                    _ => runs.push((start, end)),
                }
                bits &= if end % 64 == 63 { 0 } else { !0u64 << (end % 64 + 1) };
            }
        }
        runs
    }

    fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
        self.top = 0;
    }
}

/// One memory type's virtual heap. Not thread-safe by itself; the allocator wraps it in a lock.
pub(crate) struct VirtualHeap<V: VirtualMemory> {
    reservation: Option<V::Reservation>,
    ranges: VirtualBlock<Box<AllocationMeta>>,
    page_shift: u32,
    page_users: Vec<u32>,
    committed: Vec<bool>,
    /// One past the highest committed page (0 when none is).
    committed_end: usize,
    empty_pages: PageSet,
    release: Arc<dyn ReleasePolicy>,
    stats: VirtualHeapStats,
    /// Page events since the last `take_events`, when recording is on.
    events: Option<Vec<PageEvent>>,
    /// Page events of the current operation, for the allocator's event ring (when `observe` is on).
    pending: Vec<PageEvent>,
    observe: bool,
}

impl<V: VirtualMemory> fmt::Debug for VirtualHeap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualHeap").field("stats", &self.stats).finish_non_exhaustive()
    }
}

/// Where an allocation landed in a virtual heap.
#[derive(Debug)]
pub(crate) struct VirtualPlacement {
    pub handle: Handle,
    pub offset: u64,
}

impl<V: VirtualMemory> VirtualHeap<V> {
    /// Reserves `size` bytes (rounded up to the page size) of address space for `memory_type`.
    pub fn new(
        vm: &V,
        memory_type: u32,
        size: u64,
        page_size: u64,
        config: &VirtualHeapConfig,
    ) -> Result<VirtualHeap<V>, DeviceError> {
        if !page_size.is_power_of_two() {
            return Err(DeviceError::Unsupported("virtual memory page size is not a power of two"));
        }
        let size = size.max(page_size).next_multiple_of(page_size);
        let pages = usize::try_from(size >> page_size.trailing_zeros())
            .map_err(|_| DeviceError::Unsupported("reservation too large"))?;
        let ranges = VirtualBlock::with_config(
            VirtualBlockConfig::new(size).with_min_granularity(config.min_granularity),
        )
        .map_err(|_| DeviceError::Unsupported("invalid virtual heap granularity"))?;
        // SAFETY: (1) `memory_type` is valid and the caller obtained `page_size` from `vm.granularity(memory_type)`,
        // which therefore returned Some.
        let reservation = unsafe { vm.reserve(memory_type, size)? };
        Ok(VirtualHeap {
            reservation: Some(reservation),
            ranges,
            page_shift: page_size.trailing_zeros(),
            page_users: vec![0; pages],
            committed: vec![false; pages],
            committed_end: 0,
            empty_pages: PageSet::new(pages),
            release: Arc::clone(&config.release),
            stats: VirtualHeapStats::default(),
            events: None,
            pending: Vec::new(),
            observe: false,
        })
    }

    pub fn stats(&self) -> VirtualHeapStats {
        self.stats
    }

    /// Starts (or stops) recording page events.
    pub fn record_events(&mut self, on: bool) {
        self.events = on.then(Vec::new);
    }

    /// Also collects page events for the allocator's event ring (drained with `drain_pending`).
    pub fn observe(&mut self, on: bool) {
        self.observe = on;
    }

    /// Page events of the operations since the last call (when observing).
    pub fn drain_pending(&mut self) -> std::vec::Drain<'_, PageEvent> {
        self.pending.drain(..)
    }

    /// Attaches tracking data to a live allocation.
    pub fn set_meta(&mut self, handle: &Handle, meta: Box<AllocationMeta>) {
        let _ = self.ranges.set_user_data(handle, meta);
    }

    /// Every live allocation, for leak reports.
    pub fn leaks(&self, memory_type: u32, out: &mut Vec<Leak>) {
        out.extend(self.ranges.iter().map(|info| {
            Leak::from_meta(info.user_data.map(|m| &**m), info.size, memory_type, ResourceClass::Unknown)
        }));
    }

    /// Page events recorded since the last call.
    pub fn take_events(&mut self) -> Vec<PageEvent> {
        self.events.as_mut().map(core::mem::take).unwrap_or_default()
    }

    fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    /// Bytes the ranges hold for a request of `size`: rounded up to the heap's granularity.
    fn span(&self, size: u64) -> u64 {
        size.next_multiple_of(self.ranges.config().min_granularity)
    }

    /// Pages `[first, last]` touched by `[offset, offset + size)`.
    fn pages(&self, offset: u64, size: u64) -> (usize, usize) {
        ((offset >> self.page_shift) as usize, ((offset + size - 1) >> self.page_shift) as usize)
    }

    fn state(&self) -> HeapState {
        HeapState {
            committed_bytes: self.stats.committed_bytes,
            empty_bytes: self.stats.empty_bytes,
            live_bytes: self.stats.live_bytes,
            peak_committed_bytes: self.stats.peak_committed_bytes,
            peak_live_bytes: self.stats.peak_live_bytes,
            page_size: self.page_size(),
        }
    }

    /// Allocates `size` bytes and commits the pages it touches that are not committed yet.
    /// With `may_commit` false only committed pages may be used: a request that would need a commit gets
    /// `Ok(None)` (no room), as under `BudgetPolicy::RequireWithin` on an over-budget heap.
    pub fn allocate(
        &mut self,
        vm: &V,
        size: u64,
        alignment: u64,
        may_commit: bool,
    ) -> Result<Option<VirtualPlacement>, DeviceError> {
        let mut allocation = match self.ranges.allocate(size, alignment, ResourceClass::Unknown) {
            Ok(allocation) => allocation,
            Err(_) => return Ok(None),
        };
        let (mut first, mut last) = self.pages(allocation.offset, self.span(size));
        if self.committed[first..=last].contains(&false) {
            // The good fit needs new pages; a free range on committed pages costs no driver call and no memory.
            let _ = self.ranges.free(allocation.handle);
            allocation = match self.place_on_committed(size, alignment) {
                Some(allocation) => allocation,
                None => match self.ranges.allocate(size, alignment, ResourceClass::Unknown) {
                    Ok(allocation) => allocation,
                    Err(_) => return Ok(None),
                },
            };
            (first, last) = self.pages(allocation.offset, self.span(size));
        }
        if !may_commit && self.committed[first..=last].contains(&false) {
            let _ = self.ranges.free(allocation.handle);
            return Ok(None);
        }
        let commit_last = self.extend_commit(first, last, size);
        if self.committed[first..=commit_last].contains(&false) {
            self.release_before_commit(vm, first, last, commit_last, size);
        }
        if let Err(error) = self.commit_missing(vm, first, commit_last) {
            // Nothing is lost: the range goes back, and pages committed on the way stay as empty pages for the
            // release policy.
            let _ = self.ranges.free(allocation.handle);
            self.release(vm);
            return Err(error);
        }
        self.take_pages(first, last);
        self.stats.live_bytes += size;
        self.stats.peak_live_bytes = self.stats.peak_live_bytes.max(self.stats.live_bytes);
        self.stats.allocations += 1;
        Ok(Some(VirtualPlacement { handle: allocation.handle, offset: allocation.offset }))
    }

    /// Places a request on committed pages only, looking at up to 64 free ranges (smallest first) and, in each,
    /// at up to 16 positions: each next position starts on the first committed page after the uncommitted run
    /// that ruled out the one before. Bounded work; it runs only when TLSF's good fit would need new pages.
    fn place_on_committed(&mut self, size: u64, alignment: u64) -> Option<memcarve_core::Allocation> {
        const RANGES: usize = 64;
        const POSITIONS: usize = 16;
        let span = self.span(size);
        let (shift, committed) = (self.page_shift, &self.committed[..self.committed_end]);
        let place = |start: u64, len: u64| {
            let end = start + len;
            let mut offset = start.next_multiple_of(alignment);
            for _ in 0..POSITIONS {
                if offset + span > end {
                    return None;
                }
                let (first, last) = ((offset >> shift) as usize, ((offset + span - 1) >> shift) as usize);
                if last >= committed.len() {
                    return None;
                }
                let Some(i) = committed[first..=last].iter().rposition(|&c| !c) else { return Some(offset) };
                // Skip the whole uncommitted run: the next position starts on the first committed page after it.
                let uncommitted = first + i;
                let next = uncommitted + 1 + committed[uncommitted + 1..].iter().position(|&c| c)?;
                offset = ((next as u64) << shift).next_multiple_of(alignment);
            }
            None
        };
        self.ranges.allocate_where(size, alignment, ResourceClass::Unknown, RANGES, place).ok().flatten()
    }

    /// Counts a new allocation as a user of pages `[first, last]` (all committed). Only the first and the last
    /// page can have other users: every page in between lies inside the allocation's range, which no other live
    /// allocation overlaps, so those pages were empty and are taken in one pass over the bitmap's words.
    fn take_pages(&mut self, first: usize, last: usize) {
        for page in [first, last].into_iter().take(if last > first { 2 } else { 1 }) {
            if self.page_users[page] == 0 {
                self.empty_pages.remove(page);
                self.stats.empty_bytes -= self.page_size();
            }
            self.page_users[page] += 1;
        }
        if last > first + 1 {
            self.page_users[first + 1..last].fill(1);
            self.empty_pages.remove_range(first + 1, last - 1);
            self.stats.empty_bytes -= ((last - first - 1) as u64) << self.page_shift;
        }
    }

    /// The inverse of [`VirtualHeap::take_pages`], for an allocation being freed.
    fn leave_pages(&mut self, first: usize, last: usize) {
        for page in [first, last].into_iter().take(if last > first { 2 } else { 1 }) {
            self.page_users[page] -= 1;
            if self.page_users[page] == 0 {
                self.empty_pages.insert(page);
                self.stats.empty_bytes += self.page_size();
            }
        }
        if last > first + 1 {
            self.page_users[first + 1..last].fill(0);
            self.empty_pages.insert_range(first + 1, last - 1);
            self.stats.empty_bytes += ((last - first - 1) as u64) << self.page_shift;
        }
    }

    /// Extends `[first, last]` forward over uncommitted pages by the release policy's commit-ahead, when the
    /// range needs a commit at all (so a commit that happens anyway covers the next requests too).
    fn extend_commit(&self, first: usize, last: usize, size: u64) -> usize {
        if self.committed[first..=last].iter().all(|&c| c) {
            return last;
        }
        let mut state = self.state();
        // Count the request as live already: the budget is judged as it will be once it is placed.
        state.live_bytes += size;
        state.peak_live_bytes = state.peak_live_bytes.max(state.live_bytes);
        let missing = self.committed[first..=last].iter().filter(|&&c| !c).count() as u64;
        state.committed_bytes += missing << self.page_shift;
        let ahead_pages = (self.release.commit_ahead_bytes(&state) >> self.page_shift) as usize;
        let mut extended = last;
        while extended + 1 < self.committed.len()
            && extended - last < ahead_pages
            && !self.committed[extended + 1]
        {
            extended += 1;
        }
        extended
    }

    /// Commits every uncommitted page in `[first, last]`, one call per contiguous run. Pages committed here
    /// enter as empty pages (the caller then takes them).
    fn commit_missing(&mut self, vm: &V, first: usize, last: usize) -> Result<(), DeviceError> {
        let mut page = first;
        while page <= last {
            if self.committed[page] {
                page += 1;
                continue;
            }
            let run_start = page;
            while page <= last && !self.committed[page] {
                page += 1;
            }
            let offset = (run_start as u64) << self.page_shift;
            let size = ((page - run_start) as u64) << self.page_shift;
            let Some(reservation) = self.reservation.as_ref() else {
                return Err(DeviceError::Unsupported("virtual heap already released"));
            };
            // SAFETY: (1) the run is page-aligned (whole pages), inside the reservation (pages index it), and
            // none of its pages is committed (checked just above under `&mut self`).
            unsafe { vm.commit(reservation, offset, size)? };
            self.committed[run_start..page].fill(true);
            self.empty_pages.insert_range(run_start, page - 1);
            self.committed_end = self.committed_end.max(page);
            self.stats.commits += 1;
            self.stats.committed_bytes += size;
            self.stats.empty_bytes += size;
            self.stats.peak_committed_bytes = self.stats.peak_committed_bytes.max(self.stats.committed_bytes);
            self.note(PageEvent::Commit { offset, size });
        }
        Ok(())
    }

    /// Before pages `[first, commit_last]` are committed for a request of `size` at `[first, last]`, decommits the
    /// empty pages the release policy would not keep once the request is placed. Releasing only on the next free
    /// would let committed memory hold the old spare pages and the new ones at once, which sets the peak when a
    /// large request does not fit in the spare pages (they are not contiguous).
    fn release_before_commit(&mut self, vm: &V, first: usize, last: usize, commit_last: usize, size: u64) {
        // Hide the empty pages the request will take, so the release pass cannot pick them.
        let mut taken = 0u64;
        for page in first..=last {
            if self.empty_pages.contains(page) {
                self.empty_pages.remove(page);
                taken += 1;
            }
        }
        let taken_bytes = taken << self.page_shift;
        self.stats.empty_bytes -= taken_bytes;
        let uncommitted = |from: usize, to: usize| {
            (self.committed[from..=to].iter().filter(|&&c| !c).count() as u64) << self.page_shift
        };
        let missing = uncommitted(first, commit_last);
        let ahead = if commit_last > last { uncommitted(last + 1, commit_last) } else { 0 };
        // The heap as it will be once the request is placed: the commit-ahead pages are empty pages then.
        let mut state = self.state();
        state.live_bytes += size;
        state.peak_live_bytes = state.peak_live_bytes.max(state.live_bytes);
        state.committed_bytes += missing;
        state.empty_bytes += ahead;
        // Release only what would raise the peak committed bytes, and never below what the policy keeps: the
        // spare pages are likely reused soon, and each decommit now may cost a commit later.
        let over_peak = state.committed_bytes.saturating_sub(self.stats.peak_committed_bytes);
        let keep = self.release.retained_bytes(&state).max(state.empty_bytes.saturating_sub(over_peak));
        self.release_largest_runs(vm, keep.saturating_sub(ahead));
        for page in first..=last {
            if self.committed[page] && self.page_users[page] == 0 {
                self.empty_pages.insert(page);
            }
        }
        self.stats.empty_bytes += taken_bytes;
    }

    /// Frees an allocation; pages it leaves empty are given to the release policy.
    pub fn free(&mut self, vm: &V, handle: Handle, size: u64) -> Result<(), memcarve_core::Error> {
        let offset = self.ranges.get(&handle)?.offset;
        self.ranges.free(handle)?;
        let (first, last) = self.pages(offset, self.span(size));
        self.leave_pages(first, last);
        self.stats.live_bytes -= size;
        self.stats.allocations -= 1;
        self.release(vm);
        Ok(())
    }

    /// Decommits empty pages beyond what the release policy keeps, highest addresses first, in contiguous runs.
    fn release(&mut self, vm: &V) {
        let keep = self.release.retained_bytes(&self.state());
        self.release_down_to(vm, keep);
    }

    /// Decommits empty pages, highest addresses first, until at most `keep` bytes of them are left.
    fn release_down_to(&mut self, vm: &V, keep: u64) {
        while self.stats.empty_bytes > keep {
            let Some(last) = self.empty_pages.highest() else { break };
            // Extend the run downwards while the pages below are empty too, but no further than needed.
            let excess_pages = ((self.stats.empty_bytes - keep).div_ceil(self.page_size())) as usize;
            let mut first = last;
            while last - first + 1 < excess_pages && first > 0 && self.empty_pages.contains(first - 1) {
                first -= 1;
            }
            self.decommit_run(vm, first, last);
        }
    }

    /// Decommits empty pages until at most `keep` bytes of them are left, largest runs of empty pages first: each
    /// run is one driver call, so this gives back the most memory per call. The last run taken is the smallest
    /// that covers what is left to give back, decommitted from its top. O(pages / 64 + runs × log runs); used
    /// before a commit, where the excess may be hundreds of pages scattered over many runs.
    fn release_largest_runs(&mut self, vm: &V, keep: u64) {
        if self.stats.empty_bytes <= keep {
            return;
        }
        let mut runs = self.empty_pages.runs();
        runs.sort_unstable_by_key(|&(first, last)| core::cmp::Reverse(last - first));
        let mut index = 0;
        while self.stats.empty_bytes > keep && index < runs.len() {
            let excess_pages = ((self.stats.empty_bytes - keep).div_ceil(self.page_size())) as usize;
            // The smallest run that covers the excess, if any; otherwise the largest left.
            let covering = runs[index..].iter().rposition(|&(first, last)| last - first + 1 >= excess_pages);
            let (first, last) = match covering {
                Some(offset) => {
                    let (first, last) = runs[index + offset];
                    (first.max(last + 1 - excess_pages), last)
                }
                None => runs[index],
            };
            if covering.is_none() {
                index += 1;
            }
            self.decommit_run(vm, first, last);
            if covering.is_some() {
                break;
            }
        }
    }

    fn note(&mut self, event: PageEvent) {
        if let Some(events) = self.events.as_mut() {
            events.push(event);
        }
        if self.observe {
            self.pending.push(event);
        }
    }

    fn decommit_run(&mut self, vm: &V, first: usize, last: usize) {
        let offset = (first as u64) << self.page_shift;
        let size = ((last - first + 1) as u64) << self.page_shift;
        if let Some(reservation) = self.reservation.as_ref() {
            // SAFETY: (1) the run is whole pages inside the reservation; each page is committed and has no user
            // (it is in `empty_pages`), so nothing uses its memory.
            unsafe { vm.decommit(reservation, offset, size) };
        }
        self.committed[first..=last].fill(false);
        self.empty_pages.remove_range(first, last);
        if last + 1 == self.committed_end {
            self.committed_end = self.committed[..first].iter().rposition(|&c| c).map_or(0, |page| page + 1);
        }
        self.stats.decommits += 1;
        self.stats.committed_bytes -= size;
        self.stats.empty_bytes -= size;
        self.note(PageEvent::Decommit { offset, size });
    }

    /// Decommits every empty page; returns the bytes given back.
    pub fn trim(&mut self, vm: &V) -> u64 {
        let before = self.stats.committed_bytes;
        while let Some(last) = self.empty_pages.highest() {
            let mut first = last;
            while first > 0 && self.empty_pages.contains(first - 1) {
                first -= 1;
            }
            self.decommit_run(vm, first, last);
        }
        before - self.stats.committed_bytes
    }

    /// The host address of the heap's start (host memory only).
    pub fn host_address(&self, vm: &V) -> Option<core::ptr::NonNull<u8>> {
        self.reservation.as_ref().and_then(|reservation| vm.host_address(reservation))
    }

    /// Decommits everything and releases the reservation (live allocations or not).
    pub fn destroy(&mut self, vm: &V) {
        let mut page = 0;
        while page < self.committed.len() {
            if !self.committed[page] {
                page += 1;
                continue;
            }
            let start = page;
            while page < self.committed.len() && self.committed[page] {
                page += 1;
            }
            let offset = (start as u64) << self.page_shift;
            let size = ((page - start) as u64) << self.page_shift;
            if let Some(reservation) = self.reservation.as_ref() {
                // SAFETY: (1) the run is whole committed pages inside the reservation; the heap is being
                // destroyed with its allocator, whose contract is that nothing uses its memory any more.
                unsafe { vm.decommit(reservation, offset, size) };
            }
            self.committed[start..page].iter_mut().for_each(|c| *c = false);
        }
        self.committed_end = 0;
        self.empty_pages.clear();
        self.stats.committed_bytes = 0;
        self.stats.empty_bytes = 0;
        if let Some(reservation) = self.reservation.take() {
            // SAFETY: (1) the reservation came from `vm`, is released once (taken out of the Option), and every
            // committed page was decommitted just above.
            unsafe { vm.release(reservation) };
        }
    }

    /// Checks the page bookkeeping against the ranges (O(n)); for tests.
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), memcarve_core::Violation> {
        let fail = |what, offset| Err(memcarve_core::Violation { what, offset });
        self.ranges.check()?;
        let mut users = vec![0u32; self.page_users.len()];
        for info in self.ranges.iter() {
            let (first, last) = self.pages(info.offset, info.size);
            users[first..=last].iter_mut().for_each(|count| *count += 1);
            if self.committed[first..=last].contains(&false) {
                return fail("a live allocation touches an uncommitted page", info.offset);
            }
        }
        let mut empty = 0u64;
        for (page, (&count, &committed)) in self.page_users.iter().zip(&self.committed).enumerate() {
            if count != users[page] {
                return fail(
                    "page user count disagrees with the allocations",
                    (page as u64) << self.page_shift,
                );
            }
            if count > 0 && !committed {
                return fail("page with users is not committed", (page as u64) << self.page_shift);
            }
            let is_empty = committed && count == 0;
            if is_empty != self.empty_pages.contains(page) {
                return fail("empty page set disagrees with the pages", (page as u64) << self.page_shift);
            }
            empty += u64::from(is_empty) << self.page_shift;
        }
        if self.committed_end != self.committed.iter().rposition(|&c| c).map_or(0, |page| page + 1) {
            return fail(
                "committed end disagrees with the pages",
                (self.committed_end as u64) << self.page_shift,
            );
        }
        let committed = self.committed.iter().filter(|&&c| c).count() as u64;
        if committed << self.page_shift != self.stats.committed_bytes || empty != self.stats.empty_bytes {
            return fail("committed or empty bytes disagree with the pages", 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::PageSet;

    #[test]
    fn page_set_runs_cross_word_boundaries_and_match_a_plain_walk() {
        let mut set = PageSet::new(300);
        let members = [0, 1, 2, 62, 63, 64, 65, 127, 128, 191, 192, 193, 255, 299];
        members.iter().for_each(|&page| set.insert(page));
        assert_eq!(
            set.runs(),
            [(0, 2), (62, 65), (127, 128), (191, 193), (255, 255), (299, 299)],
            "runs merge across the 64-page words"
        );
        // Against a plain walk over a pseudo-random set.
        let mut set = PageSet::new(1000);
        let mut expected: Vec<(usize, usize)> = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for page in 0..1000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if !state.is_multiple_of(3) {
                set.insert(page);
                match expected.last_mut() {
                    Some(run) if run.1 + 1 == page => run.1 = page,
                    _ => expected.push((page, page)),
                }
            }
        }
        assert_eq!(set.runs(), expected);
        assert!(PageSet::new(64).runs().is_empty());
    }

    #[test]
    fn page_set_range_updates_match_page_by_page_updates() {
        let ranges = [(0, 0), (3, 70), (63, 64), (64, 127), (100, 299), (128, 128), (5, 250), (0, 299)];
        let mut by_range = PageSet::new(300);
        let mut by_page = PageSet::new(300);
        for (step, &(first, last)) in ranges.iter().enumerate() {
            if step % 3 == 2 {
                by_range.remove_range(first, last);
                (first..=last).for_each(|page| by_page.remove(page));
            } else {
                by_range.insert_range(first, last);
                (first..=last).for_each(|page| by_page.insert(page));
            }
            assert_eq!(by_range.words, by_page.words, "after {first}..={last}");
            assert_eq!(by_range.highest(), by_page.highest());
        }
    }
}
