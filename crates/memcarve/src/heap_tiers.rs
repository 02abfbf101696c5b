//! A virtual heap whose page grows with it: tiers of [`VirtualHeap`]s, each its own reservation with a page a
//! multiple of the one below, the next one opened when the heap's committed bytes reach its threshold. On CUDA each
//! physical page is a handle of its own, mapped, shown again and given back whole, and costs the driver about the
//! same whatever its size; a heap of tens of gigabytes in 2 MiB pages spends most of its driver time creating and
//! mapping them. Small heaps keep small pages, where a page's rounding matters next to the heap.
//!
//! Offsets: tier `k`'s address range starts at `k × span` in the heap's numbering (one reservation after another,
//! as CUDA would reserve them in one range), so an allocation's offset says its tier. Handles say it too: each
//! tier's ranges have their own owner tag.

use memcarve_core::Handle;

use crate::device::{DeviceError, VirtualMemory};
use crate::diagnostics::{AllocationMeta, Leak};
use crate::virtual_heap::{
    HeapDiagnostics, Outside, PageEvent, PageRecord, VirtualHeap, VirtualHeapConfig, VirtualHeapStats,
    VirtualPlacement,
};

/// Physical page ids of tier `k` are numbered from `k << TIER_ID_SHIFT` in page records, so that the tiers' ids
/// stay apart in placement logs.
const TIER_ID_SHIFT: u32 = 28;

/// A tier of a virtual heap past the first (see
/// [`VirtualHeapConfig::with_tiers`](crate::VirtualHeapConfig::with_tiers)): its page size and the committed
/// bytes (all tiers together) at which it opens, or, for the first of them, a rule that decides early by the
/// sizes of the heap's requests.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct HeapTier {
    /// Committed bytes of the heap (every tier) at which this tier opens (`u64::MAX`: only by `request_mix`).
    pub opens_at_bytes: u64,
    /// Its page size: a power of two, larger than the tier's below it.
    pub page_size: u64,
    /// For the first tier past the heap's own: opens it early when large requests dominate.
    pub request_mix: Option<RequestMix>,
}

impl HeapTier {
    /// A tier of `page_size` pages, opened at `opens_at_bytes` committed.
    pub fn new(opens_at_bytes: u64, page_size: u64) -> HeapTier {
        HeapTier { opens_at_bytes, page_size, request_mix: None }
    }

    /// The same tier, also opened early by `rule`.
    pub fn with_request_mix(mut self, rule: RequestMix) -> HeapTier {
        self.request_mix = Some(rule);
        self
    }
}

/// A rule that opens a heap's first tier of larger pages early, by what the heap has been asked for. It decides at
/// the request that brings the bytes the heap has allocated (freed or not, that request included) to
/// `decided_after_bytes`, before placing it: the tier opens, and takes that request, if requests of at least
/// `large_request_bytes` made at least `min_large_share` of those bytes and the heap has committed at most
/// `max_committed_bytes` so far; otherwise the rule is spent (the tier still opens at its `opens_at_bytes`, and one
/// that has none is left out). A heap whose bytes go to large requests loses little to larger pages' rounding and
/// replays faster (fewer pages to book). Moving costs driver calls in proportion to what the first tier holds (its
/// pages are given back as they empty, and the new tier grows again): the bound keeps the move to heaps that have
/// committed little, such as one whose first large request is the one deciding. O(1) per allocation until it
/// decides.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RequestMix {
    /// Bytes allocated (every request placed so far, and the one deciding) when the rule decides.
    pub decided_after_bytes: u64,
    /// Requests of at least this many bytes count as large.
    pub large_request_bytes: u64,
    /// Share of the allocated bytes, in `[0, 1]`, that large requests must have made.
    pub min_large_share: f64,
    /// The most the heap may have committed when the rule decides for the tier to open (`u64::MAX`: no bound).
    pub max_committed_bytes: u64,
}

impl RequestMix {
    /// Decides at `decided_after_bytes` allocated: large requests (at least `large_request_bytes`) must have made
    /// `min_large_share` of them. No bound on the bytes committed by then (see
    /// [`RequestMix::with_max_committed_bytes`]).
    pub fn new(decided_after_bytes: u64, large_request_bytes: u64, min_large_share: f64) -> RequestMix {
        RequestMix {
            decided_after_bytes,
            large_request_bytes,
            min_large_share,
            max_committed_bytes: u64::MAX,
        }
    }

    /// The same rule, opening the tier only if the heap has committed at most `bytes` when it decides.
    pub fn with_max_committed_bytes(mut self, bytes: u64) -> RequestMix {
        self.max_committed_bytes = bytes;
        self
    }

    /// Whether the rule's figures make sense: positive byte counts and a share in `[0, 1]`.
    pub(crate) fn is_valid(&self) -> bool {
        self.decided_after_bytes > 0
            && self.large_request_bytes > 0
            && (0.0..=1.0).contains(&self.min_large_share)
    }
}

/// One memory type's virtual heap in tiers. Not thread-safe by itself; the allocator wraps it in a lock. A heap
/// with one tier open costs its operations a check of `upper` and of the next threshold over the first tier's own.
pub(crate) struct TieredHeap<V: VirtualMemory> {
    first: VirtualHeap<V>,
    /// The tiers opened above the first, in order.
    upper: Vec<VirtualHeap<V>>,
    /// The committed bytes at which the next tier opens (`u64::MAX`: none will, all are open or the device
    /// refused one).
    next_opens_at: u64,
    /// Address range per tier in the heap's numbering.
    span: u64,
    /// What the tiers past the first are to be, in order.
    plan: Vec<HeapTier>,
    memory_type: u32,
    config: VirtualHeapConfig,
    /// Event recording asked for (applies to tiers opened later too).
    recording: bool,
    /// Peaks over the sum of the tiers, kept once more than one is open.
    peaks: Peaks,
    /// Page events of the current operation with offsets in the heap's numbering (when observing).
    pending: Vec<PageEvent>,
    /// Tiers whose opening the page records have told (the first one needs no telling).
    announced: usize,
    /// Bytes of large requests so far, while the first planned tier's [`RequestMix`] has not decided.
    large_bytes: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Peaks {
    committed: u64,
    live: u64,
    live_at_peak: u64,
    empty_at_peak: u64,
}

impl<V: VirtualMemory> TieredHeap<V> {
    /// The first tier: `size` bytes of address space for `memory_type` in pages of `page_size`; the others as
    /// `config.tiers` says (those with pages larger than `page_size`), each opened when needed with a reservation
    /// of the same size.
    pub fn new(
        vm: &V,
        memory_type: u32,
        size: u64,
        page_size: u64,
        config: &VirtualHeapConfig,
    ) -> Result<TieredHeap<V>, DeviceError> {
        let plan: Vec<HeapTier> =
            config.tiers.iter().copied().filter(|tier| tier.page_size > page_size).collect();
        // Page sizes are checked where they are used: the allocator's config check, and each tier's
        // `VirtualHeap::new` (a tier the device refuses is never opened).
        let largest = plan.iter().map(|tier| tier.page_size).fold(page_size, u64::max);
        // The first tier's reservation is the size asked for (what a heap of one tier reserves); each tier's
        // range in the numbering is that, rounded up to the largest page.
        let first = VirtualHeap::new(vm, memory_type, size, page_size, config)?;
        let span = size
            .max(largest)
            .checked_next_multiple_of(largest)
            .ok_or(DeviceError::Unsupported("reservation too large"))?;
        Ok(TieredHeap {
            first,
            upper: Vec::new(),
            next_opens_at: opens_at(&plan, 1),
            span,
            large_bytes: 0,
            plan,
            memory_type,
            config: config.clone(),
            recording: false,
            peaks: Peaks::default(),
            pending: Vec::new(),
            announced: 1,
        })
    }

    /// Every tier open, the first first.
    fn tiers(&self) -> impl Iterator<Item = &VirtualHeap<V>> + '_ {
        core::iter::once(&self.first).chain(&self.upper)
    }

    fn tiers_mut(&mut self) -> impl Iterator<Item = &mut VirtualHeap<V>> + '_ {
        core::iter::once(&mut self.first).chain(&mut self.upper)
    }

    fn tier_mut(&mut self, index: usize) -> &mut VirtualHeap<V> {
        match index.checked_sub(1) {
            Some(upper) => &mut self.upper[upper],
            None => &mut self.first,
        }
    }

    /// The tier whose ranges made `handle` (the first if none did: it then refuses the handle).
    fn tier_of(&self, handle: &Handle) -> usize {
        self.upper.iter().position(|tier| tier.owns(handle)).map_or(0, |upper| upper + 1)
    }

    /// The counters, summed over the tiers (peaks over the sums).
    pub fn stats(&self) -> VirtualHeapStats {
        let first = VirtualHeapStats { tiers: 1 + self.upper.len() as u32, ..self.first.stats() };
        if self.upper.is_empty() {
            return first;
        }
        let mut sum = self.upper.iter().map(VirtualHeap::stats).fold(first, |mut sum, stats| {
            sum.committed_bytes += stats.committed_bytes;
            sum.live_bytes += stats.live_bytes;
            sum.empty_bytes += stats.empty_bytes;
            sum.mapped_bytes += stats.mapped_bytes;
            sum.commits += stats.commits;
            sum.decommits += stats.decommits;
            sum.allocations += stats.allocations;
            sum.allocated_bytes += stats.allocated_bytes;
            sum
        });
        sum.peak_committed_bytes = self.peaks.committed;
        sum.peak_live_bytes = self.peaks.live;
        sum.live_bytes_at_peak = self.peaks.live_at_peak;
        sum.empty_bytes_at_peak = self.peaks.empty_at_peak;
        sum
    }

    #[inline(always)]
    pub(crate) fn committed_bytes(&self) -> u64 {
        let first = self.first.committed_bytes();
        if self.upper.is_empty() {
            first
        } else {
            first + self.upper.iter().map(VirtualHeap::committed_bytes).sum::<u64>()
        }
    }

    pub(crate) fn diagnostics(&self) -> HeapDiagnostics {
        let mut all = self.first.diagnostics();
        for tier in &self.upper {
            let diagnostics = tier.diagnostics();
            all.reuses += diagnostics.reuses;
            all.peak_allocations += diagnostics.peak_allocations;
            all.peak_live_bytes += diagnostics.peak_live_bytes;
        }
        all
    }

    pub(crate) fn reset_diagnostics(&mut self) {
        self.tiers_mut().for_each(VirtualHeap::reset_diagnostics);
    }

    pub fn record_events(&mut self, on: bool) {
        self.recording = on;
        self.tiers_mut().for_each(|tier| tier.record_events(on));
    }

    pub fn observe(&mut self, on: bool) {
        self.tiers_mut().for_each(|tier| tier.observe(on));
    }

    /// Page events of the operations since the last call (when observing), offsets in the heap's numbering.
    #[inline(always)]
    pub fn drain_pending(&mut self) -> std::vec::Drain<'_, PageEvent> {
        if self.upper.is_empty() {
            return self.first.drain_pending();
        }
        self.pending.extend(self.first.drain_pending());
        for (index, tier) in self.upper.iter_mut().enumerate() {
            let base = (index as u64 + 1) * self.span;
            self.pending.extend(tier.drain_pending().map(|event| shifted(event, base)));
        }
        self.pending.drain(..)
    }

    pub fn set_meta(&mut self, handle: &Handle, meta: Box<AllocationMeta>) {
        let tier = self.tier_of(handle);
        self.tier_mut(tier).set_meta(handle, meta);
    }

    pub fn leaks(&self, memory_type: u32, out: &mut Vec<Leak>) {
        self.tiers().for_each(|tier| tier.leaks(memory_type, out));
    }

    /// Page events recorded since the last call: offsets in the heap's numbering, physical ids per tier apart
    /// ([`TIER_ID_SHIFT`]), and a [`PageEvent::Tier`] before the first events of a tier opened since.
    pub fn take_events(&mut self) -> Vec<PageRecord> {
        let mut records = self.first.take_events();
        for (upper, tier) in self.upper.iter_mut().enumerate() {
            let index = upper + 1;
            let (base, ids) = (index as u64 * self.span, (index as u32) << TIER_ID_SHIFT);
            if index >= self.announced {
                self.announced = index + 1;
                let page_size = tier.page_size();
                records.push(PageRecord {
                    event: PageEvent::Tier { offset: base, page_size },
                    physical: Vec::new(),
                });
            }
            records.extend(tier.take_events().into_iter().map(|mut record| {
                record.event = shifted(record.event, base);
                record.physical.iter_mut().for_each(|(first, _)| *first += ids);
                record
            }));
        }
        records
    }

    /// Places `size` bytes in the top tier. Lower tiers take no new allocations: they empty as their
    /// allocations are freed, and keep their empty pages (as a heap keeps them within its peak) until the top
    /// tier needs a mapping, when they give them all back first. The top tier's release policy sees the whole
    /// heap (the lower tiers' committed and live bytes, the heap's peaks), so what it keeps and maps ahead stays
    /// within one budget.
    #[inline(always)]
    pub fn allocate(
        &mut self,
        vm: &V,
        size: u64,
        alignment: u64,
        may_commit: bool,
    ) -> Result<Option<VirtualPlacement>, DeviceError> {
        if self.upper.is_empty() {
            if let Some(rule) = self.plan.first().and_then(|tier| tier.request_mix) {
                return self.allocate_under_rule(vm, rule, size, alignment, may_commit);
            }
            let placed = self.first.allocate(vm, size, alignment, may_commit)?;
            if self.first.committed_bytes() >= self.next_opens_at {
                self.open_next(vm);
            }
            return Ok(placed);
        }
        self.allocate_in_tiers(vm, size, alignment, may_commit)
    }

    /// [`TieredHeap::allocate`] in one tier while the first planned tier's [`RequestMix`] has not decided: the
    /// request that brings the allocated bytes to its threshold decides before it is placed.
    #[inline(never)]
    fn allocate_under_rule(
        &mut self,
        vm: &V,
        rule: RequestMix,
        size: u64,
        alignment: u64,
        may_commit: bool,
    ) -> Result<Option<VirtualPlacement>, DeviceError> {
        let large = if size >= rule.large_request_bytes { size } else { 0 };
        if self.first.allocated_bytes().saturating_add(size) >= rule.decided_after_bytes
            && self.decide(vm, rule, size, large)
        {
            return self.allocate_in_tiers(vm, size, alignment, may_commit);
        }
        let placed = self.first.allocate(vm, size, alignment, may_commit)?;
        if placed.is_some() {
            self.large_bytes += large;
        }
        if self.first.committed_bytes() >= self.next_opens_at {
            self.open_next(vm);
        }
        Ok(placed)
    }

    /// [`TieredHeap::allocate`] with more than one tier open.
    fn allocate_in_tiers(
        &mut self,
        vm: &V,
        size: u64,
        alignment: u64,
        may_commit: bool,
    ) -> Result<Option<VirtualPlacement>, DeviceError> {
        let top = self.upper.len();
        let (lower, rest) = self.upper.split_at_mut(top - 1);
        let top_tier = &mut rest[0];
        let mut placed = None;
        if self.first.empty_bytes() > 0 || lower.iter().any(|tier| tier.empty_bytes() > 0) {
            // Without a mapping if it can; otherwise the lower tiers' empty pages go back before it maps (when it
            // may).
            placed = top_tier.allocate(vm, size, alignment, false)?;
            if placed.is_none() && may_commit {
                self.first.trim(vm);
                lower.iter_mut().for_each(|tier| {
                    tier.trim(vm);
                });
            }
        }
        if placed.is_none() {
            let outside = self.outside_of(top);
            self.upper[top - 1].set_outside(outside);
            placed = self.upper[top - 1].allocate(vm, size, alignment, may_commit)?;
        }
        let committed = self.note_peaks();
        let Some(mut placement) = placed else { return Ok(None) };
        placement.offset += top as u64 * self.span;
        if committed >= self.next_opens_at {
            self.open_next(vm);
        }
        Ok(Some(placement))
    }

    /// The first planned tier's [`RequestMix`] decides, before placing the request of `size` bytes (`large` of them
    /// counting as large) that brings the heap's allocated bytes to its threshold: the tier opens now (true: the
    /// request goes to it), or the rule is spent.
    #[cold]
    #[inline(never)]
    fn decide(&mut self, vm: &V, rule: RequestMix, size: u64, large: u64) -> bool {
        // Spent either way (a tier the device refuses is not asked for again).
        self.plan[0].request_mix = None;
        let allocated = self.first.allocated_bytes().saturating_add(size);
        let dominated = (self.large_bytes + large) as f64 >= rule.min_large_share * allocated as f64;
        if dominated && self.first.committed_bytes() <= rule.max_committed_bytes {
            // A tier the device refuses leaves the heap in one tier, as `open_next` says.
            self.open_next(vm);
            return !self.upper.is_empty();
        }
        if self.plan[0].opens_at_bytes == u64::MAX {
            // Only the rule would have opened it.
            self.plan.remove(0);
        }
        self.next_opens_at = opens_at(&self.plan, 1);
        false
    }

    /// Opens the next tier (the committed bytes reached its threshold); a reservation the device refuses leaves
    /// the heap as it is, and no more tiers are tried.
    #[cold]
    #[inline(never)]
    fn open_next(&mut self, vm: &V) {
        let Some(next) = self.plan.get(self.upper.len()).copied() else { return };
        // The new tier numbers its offsets from `(upper + 1) × span` to its end: one whose end would pass
        // `u64::MAX` (spans of 2^62 bytes or more) is not opened, like one the device refuses.
        if (self.upper.len() as u64 + 2).checked_mul(self.span).is_none() {
            self.next_opens_at = u64::MAX;
            return;
        }
        let Ok(mut tier) = VirtualHeap::new(vm, self.memory_type, self.span, next.page_size, &self.config)
        else {
            self.next_opens_at = u64::MAX;
            return;
        };
        tier.record_events(self.recording);
        if self.upper.is_empty() {
            let stats = self.first.stats();
            self.peaks = Peaks {
                committed: stats.peak_committed_bytes,
                live: stats.peak_live_bytes,
                live_at_peak: stats.live_bytes_at_peak,
                empty_at_peak: stats.empty_bytes_at_peak,
            };
        }
        self.upper.push(tier);
        self.next_opens_at = opens_at(&self.plan, self.upper.len() + 1);
    }

    /// The tiers other than `index`, with the whole heap's peaks.
    fn outside_of(&self, index: usize) -> Outside {
        let mut outside = Outside {
            peak_committed_bytes: self.peaks.committed,
            peak_live_bytes: self.peaks.live,
            ..Outside::default()
        };
        for (other, tier) in self.tiers().enumerate() {
            if other != index {
                outside.committed_bytes += tier.committed_bytes();
                outside.live_bytes += tier.live_bytes();
                outside.allocated_bytes += tier.allocated_bytes();
                outside.allocations += tier.allocations_made();
            }
        }
        outside
    }

    /// Updates the peaks of the sums after an operation; returns the committed bytes.
    fn note_peaks(&mut self) -> u64 {
        let (mut committed, mut live, mut empty) = (0, 0, 0);
        for tier in self.tiers() {
            committed += tier.committed_bytes();
            live += tier.live_bytes();
            empty += tier.empty_bytes();
        }
        self.peaks.live = self.peaks.live.max(live);
        if committed > self.peaks.committed {
            self.peaks = Peaks { committed, live: self.peaks.live, live_at_peak: live, empty_at_peak: empty };
        }
        committed
    }

    #[inline(always)]
    pub fn free(&mut self, vm: &V, handle: Handle, size: u64) -> Result<(), memcarve_core::Error> {
        if self.upper.is_empty() {
            return self.first.free(vm, handle, size);
        }
        self.free_in_tiers(vm, handle, size)
    }

    /// [`TieredHeap::free`] with more than one tier open.
    fn free_in_tiers(&mut self, vm: &V, handle: Handle, size: u64) -> Result<(), memcarve_core::Error> {
        let tier = self.tier_of(&handle);
        let outside = self.outside_of(tier);
        let heap = self.tier_mut(tier);
        heap.set_outside(outside);
        heap.free(vm, handle, size)?;
        self.note_peaks();
        Ok(())
    }

    pub fn trim(&mut self, vm: &V) -> u64 {
        self.tiers_mut().map(|tier| tier.trim(vm)).sum()
    }

    /// The host address of `offset` (host memory only).
    pub fn host_address(&self, vm: &V, offset: u64) -> Option<core::ptr::NonNull<u8>> {
        let tier = self.tiers().nth((offset / self.span) as usize)?;
        let base = tier.host_address(vm)?;
        // Inside the tier's reservation, so inside one mapping.
        core::ptr::NonNull::new(base.as_ptr().wrapping_add((offset % self.span) as usize))
    }

    pub fn destroy(&mut self, vm: &V) {
        self.tiers_mut().for_each(|tier| tier.destroy(vm));
    }

    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), memcarve_core::Violation> {
        self.tiers().try_for_each(VirtualHeap::check)
    }
}

/// The threshold of the tier after the `open` first ones (`u64::MAX` when there is none).
fn opens_at(plan: &[HeapTier], open: usize) -> u64 {
    plan.get(open - 1).map_or(u64::MAX, |tier| tier.opens_at_bytes)
}

fn shifted(event: PageEvent, base: u64) -> PageEvent {
    match event {
        PageEvent::Commit { offset, size } => PageEvent::Commit { offset: offset + base, size },
        PageEvent::Decommit { offset, size } => PageEvent::Decommit { offset: offset + base, size },
        PageEvent::Tier { offset, page_size } => PageEvent::Tier { offset: offset + base, page_size },
    }
}
