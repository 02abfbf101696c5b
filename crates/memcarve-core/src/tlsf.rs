//! Two-level segregated fit (TLSF) over `[0, capacity)`: O(1) allocate and free.
//!
//! Free ranges sit in bins indexed by two bitmaps: the first level is the power of two of the size (in units of
//! the minimum granularity), the second splits each power of two into 32 sub-bins. Every range, free or used, is
//! a node in a slab (`Vec<Node>`) linked to its physical neighbours; free nodes are also linked in their bin.
//! Invariants (checked by `check`): nodes tile the capacity in order, no two free nodes are neighbours, every
//! free node is in the bin its size maps to, and bitmaps say exactly which bins are non-empty.
//!
//! Aligned requests stay O(1): the search asks for the bin that guarantees room for the size plus the worst-case
//! alignment padding, and the padding in front of the allocation goes back to the free lists. A full scan of the
//! bins runs only when that guaranteed search finds nothing (near out-of-memory), so a request fails only when no
//! free range can hold it.

use alloc::vec::Vec;

use crate::class::ResourceClass;
use crate::error::{Error, validate_request};
use crate::handle::{GENERATION_MASK, SLOT_MASK};

const SL_BITS: u32 = 5;
const SL_COUNT: usize = 1 << SL_BITS;
const FL_COUNT: usize = 64 - SL_BITS as usize + 1;
/// Bin arrays are sized to a power of two so that masked indices need no bounds checks.
const FL_SLOTS: usize = 64;
const NIL: u32 = u32::MAX;
/// Slots are addressed by 24 bits in handles.
const MAX_SLOTS: usize = SLOT_MASK as usize + 1;

/// `Node::next_free` of a used node.
const USED: u32 = u32::MAX - 1;
/// `Node::next_free` of a slab slot holding no range (listed in the vacant stack).
const VACANT: u32 = u32::MAX - 2;

/// One range, free or used, or a vacant slot: 32 bytes, so a node never straddles two cache lines. A used
/// node does not need free-list links, so those two words hold its metadata instead: `next_free` is [`USED`]
/// and `prev_free` packs the generation (24 bits), the class (2 bits) and log2 of the alignment (6 bits).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Node {
    offset: u64,
    size: u64,
    prev_phys: u32,
    next_phys: u32,
    /// Free: previous node in the bin (or NIL). Used: packed metadata.
    prev_free: u32,
    /// Free: next node in the bin (or NIL). Used: [`USED`]. Vacant: [`VACANT`].
    next_free: u32,
}

impl Node {
    #[inline]
    fn is_used(&self) -> bool {
        self.next_free == USED
    }

    #[inline]
    fn is_free(&self) -> bool {
        self.next_free != USED && self.next_free != VACANT
    }

    #[cfg(any(test, feature = "check"))]
    fn is_vacant(&self) -> bool {
        self.next_free == VACANT
    }

    /// Packs a used node's metadata into `prev_free`.
    #[inline]
    fn set_used(&mut self, generation: u32, class: ResourceClass, alignment_log2: u32) {
        self.next_free = USED;
        self.prev_free = generation | (class as u32) << 24 | alignment_log2 << 26;
    }

    #[inline]
    fn generation(&self) -> u32 {
        self.prev_free & GENERATION_MASK
    }

    #[inline]
    fn class(&self) -> ResourceClass {
        match (self.prev_free >> 24) & 3 {
            0 => ResourceClass::Unknown,
            1 => ResourceClass::Buffer,
            2 => ResourceClass::LinearImage,
            _ => ResourceClass::OptimalImage,
        }
    }

    #[cfg(any(test, feature = "check"))]
    fn alignment_log2(&self) -> u32 {
        self.prev_free >> 26
    }
}

/// A used range as the engine reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsedRange {
    pub slot: u32,
    pub generation: u32,
    pub offset: u64,
    /// Size after rounding up to the minimum granularity.
    pub size: u64,
    pub class: ResourceClass,
}

/// The TLSF engine. The public face is [`crate::VirtualBlock`], which adds owner tags and user data.
#[derive(Debug, Clone)]
pub(crate) struct Tlsf {
    capacity: u64,
    granularity_shift: u32,
    /// Page size within which conflicting classes must not meet (1 = no rule).
    class_granularity: u64,
    nodes: Vec<Node>,
    /// Slots holding no range, reused last-in first-out. A stack of indices rather than a list threaded
    /// through the nodes, so taking a slot does not read a cold node.
    vacant: Vec<u32>,
    first_phys: u32,
    last_phys: u32,
    fl_bitmap: u64,
    sl_bitmaps: [u32; FL_SLOTS],
    /// Heads of the free lists by first and second level (rows past `FL_COUNT` stay empty).
    bins: [[u32; SL_COUNT]; FL_SLOTS],
    /// Generation of the next used range. One counter for all slots: a stale handle is recognised unless
    /// 2^24 allocations happened since it was freed and its slot is in use again with the same value.
    next_generation: u32,
    used_bytes: u64,
    used_count: usize,
    free_count: usize,
    live_per_class: [usize; 4],
}

#[inline]
fn align_up(value: u64, alignment: u64) -> Option<u64> {
    Some(value.checked_add(alignment - 1)? & !(alignment - 1))
}

#[inline]
fn align_down(value: u64, alignment: u64) -> u64 {
    value & !(alignment - 1)
}

/// The bin after `(fl, sl)` in size order, if any.
fn bin_after(fl: usize, sl: usize) -> Option<(usize, usize)> {
    if sl + 1 < SL_COUNT {
        Some((fl, sl + 1))
    } else if fl + 1 < FL_COUNT {
        Some((fl + 1, 0))
    } else {
        None
    }
}

/// The bin holding free ranges of `units` units. Below `SL_COUNT` units the bins are linear (first level 0);
/// above, `fl` is the power of two and `sl` the next `SL_BITS` bits. Written without branches: the size class
/// of random requests is unpredictable, and a mispredicted branch here cost more than the arithmetic.
#[inline]
fn bin_of(units: u64) -> (usize, usize) {
    let msb = 63 - (units | 1).leading_zeros();
    let top = msb.max(SL_BITS);
    let large = u32::from(units >= SL_COUNT as u64);
    let fl = top - SL_BITS + large;
    let sl = (units >> (top - SL_BITS)) as usize - ((large as usize) << SL_BITS);
    (fl as usize, sl)
}

/// The lowest bin all of whose ranges hold at least `units` units (None if no bin can).
#[inline]
fn bin_fitting(units: u64) -> Option<(usize, usize)> {
    if units < SL_COUNT as u64 {
        return Some((0, units as usize));
    }
    let msb = 63 - units.leading_zeros();
    let rounded = units.checked_add((1u64 << (msb - SL_BITS)) - 1)?;
    Some(bin_of(rounded))
}

impl Tlsf {
    /// A TLSF over `[0, capacity)` handing out multiples of `min_granularity` (a power of two) and keeping
    /// conflicting resource classes `class_granularity` apart (a power of two; 1 disables the rule).
    pub fn new(capacity: u64, min_granularity: u64, class_granularity: u64) -> Result<Tlsf, Error> {
        if capacity == 0 {
            return Err(Error::InvalidConfig { reason: "capacity is zero" });
        }
        if !min_granularity.is_power_of_two() {
            return Err(Error::InvalidConfig { reason: "minimum granularity is not a power of two" });
        }
        if !class_granularity.is_power_of_two() {
            return Err(Error::InvalidConfig { reason: "class granularity is not a power of two" });
        }
        let mut tlsf = Tlsf {
            capacity,
            granularity_shift: min_granularity.trailing_zeros(),
            class_granularity,
            nodes: Vec::new(),
            vacant: Vec::new(),
            first_phys: NIL,
            last_phys: NIL,
            fl_bitmap: 0,
            sl_bitmaps: [0; FL_SLOTS],
            bins: [[NIL; SL_COUNT]; FL_SLOTS],
            next_generation: 0,
            used_bytes: 0,
            used_count: 0,
            free_count: 0,
            live_per_class: [0; 4],
        };
        tlsf.reset_ranges();
        Ok(tlsf)
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn min_granularity(&self) -> u64 {
        1 << self.granularity_shift
    }

    pub fn class_granularity(&self) -> u64 {
        self.class_granularity
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    pub fn used_count(&self) -> usize {
        self.used_count
    }

    pub fn free_count(&self) -> usize {
        self.free_count
    }

    /// Number of slab slots, used or not: the engine's metadata grows with this.
    pub fn slot_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes of metadata held on the heap (slab and bins).
    pub fn metadata_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node>()
            + core::mem::size_of_val(&self.bins)
            + self.vacant.capacity() * 4
    }

    /// Forgets every range: one free range covers the capacity again. Every slot becomes vacant, so every
    /// handle given out before is stale afterwards (until its slot is reused with its generation; see `handle`).
    pub fn reset_ranges(&mut self) {
        self.vacant.clear();
        for index in (0..self.nodes.len()).rev() {
            let node = &mut self.nodes[index];
            node.next_free = VACANT;
            self.vacant.push(index as u32);
        }
        self.fl_bitmap = 0;
        self.sl_bitmaps = [0; FL_SLOTS];
        self.bins = [[NIL; SL_COUNT]; FL_SLOTS];
        self.used_bytes = 0;
        self.used_count = 0;
        self.free_count = 0;
        self.live_per_class = [0; 4];
        // One slot is always available here: either a vacant one or a fresh one in an empty slab.
        let whole = self.new_slot(0, self.capacity, NIL, NIL);
        self.first_phys = whole;
        self.last_phys = whole;
        self.insert_free(whole);
    }

    /// Takes a vacant slot (or grows the slab) for a free range. Callers reserve room first.
    fn new_slot(&mut self, offset: u64, size: u64, prev_phys: u32, next_phys: u32) -> u32 {
        let node = Node { offset, size, prev_phys, next_phys, prev_free: NIL, next_free: NIL };
        if let Some(index) = self.vacant.pop() {
            // Written whole, never read first: a reused slot is usually cold.
            self.nodes[index as usize] = node;
            index
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    fn release_slot(&mut self, index: u32) {
        self.nodes[index as usize].next_free = VACANT;
        self.vacant.push(index);
    }

    /// Whether `extra` more slots can be had without exceeding what handles can address.
    fn can_take_slots(&self, extra: usize) -> bool {
        self.vacant.len() >= extra || self.nodes.len() + (extra - self.vacant.len()) <= MAX_SLOTS
    }

    fn insert_free(&mut self, index: u32) {
        let units = self.nodes[index as usize].size >> self.granularity_shift;
        let (fl, sl) = bin_of(units);
        let head = self.bins[fl & (FL_SLOTS - 1)][sl & (SL_COUNT - 1)];
        {
            let node = &mut self.nodes[index as usize];
            node.prev_free = NIL;
            node.next_free = head;
        }
        if head != NIL {
            self.nodes[head as usize].prev_free = index;
        }
        self.bins[fl & (FL_SLOTS - 1)][sl & (SL_COUNT - 1)] = index;
        self.sl_bitmaps[fl & (FL_SLOTS - 1)] |= 1 << sl;
        self.fl_bitmap |= 1 << fl;
        self.free_count += 1;
    }

    fn remove_free(&mut self, index: u32) {
        let bin = bin_of(self.nodes[index as usize].size >> self.granularity_shift);
        self.remove_free_in(index, bin);
    }

    /// Unlinks free node `index` from its bin `(fl, sl)`, which the caller already knows.
    fn remove_free_in(&mut self, index: u32, (fl, sl): (usize, usize)) {
        let (prev, next) = {
            let node = &self.nodes[index as usize];
            (node.prev_free, node.next_free)
        };
        if prev != NIL {
            self.nodes[prev as usize].next_free = next;
        } else {
            let fl = fl & (FL_SLOTS - 1);
            self.bins[fl][sl & (SL_COUNT - 1)] = next;
            if next == NIL {
                self.sl_bitmaps[fl] &= !(1 << sl);
                if self.sl_bitmaps[fl] == 0 {
                    self.fl_bitmap &= !(1 << fl);
                }
            }
        }
        if next != NIL {
            self.nodes[next as usize].prev_free = prev;
        }
        self.free_count -= 1;
    }

    /// The first non-empty bin at or above `(fl, sl)`.
    #[inline]
    fn non_empty_bin_from(&self, fl: usize, sl: usize) -> Option<(usize, usize)> {
        let sl_map = self.sl_bitmaps[fl & (FL_SLOTS - 1)] & (u32::MAX << sl);
        if sl_map != 0 {
            return Some((fl, sl_map.trailing_zeros() as usize));
        }
        let fl_map = self.fl_bitmap & u64::MAX.checked_shl(fl as u32 + 1).unwrap_or(0);
        if fl_map == 0 {
            return None;
        }
        let fl = fl_map.trailing_zeros() as usize;
        Some((fl, self.sl_bitmaps[fl & (FL_SLOTS - 1)].trailing_zeros() as usize))
    }

    /// Where a request would start inside free node `index`, if it fits there.
    #[inline]
    fn fit(
        &self,
        index: u32,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        classes_meet: bool,
    ) -> Option<u64> {
        let node = &self.nodes[index as usize];
        let start = node.offset;
        let end = node.offset + node.size;
        let mut offset = align_up(start, alignment)?;
        if classes_meet {
            let page = self.class_granularity;
            // Neighbours of a free node are used nodes (free ones are always merged).
            if node.prev_phys != NIL
                && self.nodes[node.prev_phys as usize].class().conflicts_with(class)
                && align_down(offset, page) < start
            {
                offset = align_up(offset, page)?;
            }
            let alloc_end = offset.checked_add(size)?;
            if alloc_end > end {
                return None;
            }
            if node.next_phys != NIL
                && self.nodes[node.next_phys as usize].class().conflicts_with(class)
                && alloc_end > align_down(end, page)
            {
                return None;
            }
            return Some(offset);
        }
        let alloc_end = offset.checked_add(size)?;
        (alloc_end <= end).then_some(offset)
    }

    /// Whether a request of `class` may meet a live range of a conflicting class (so granularity pages matter).
    #[inline]
    fn classes_meet(&self, class: ResourceClass) -> bool {
        self.class_granularity > self.min_granularity()
            && ResourceClass::ALL
                .iter()
                .zip(self.live_per_class)
                .any(|(&other, live)| live > 0 && other.conflicts_with(class))
    }

    /// Whether the request fits in free node `index` at exactly `offset`.
    fn fit_at(
        &self,
        index: u32,
        offset: u64,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        classes_meet: bool,
    ) -> bool {
        let node = &self.nodes[index as usize];
        let (start, end) = (node.offset, node.offset + node.size);
        if offset < start || !offset.is_multiple_of(alignment) {
            return false;
        }
        let Some(alloc_end) = offset.checked_add(size) else { return false };
        if alloc_end > end {
            return false;
        }
        if classes_meet {
            let page = self.class_granularity;
            if node.prev_phys != NIL
                && self.nodes[node.prev_phys as usize].class().conflicts_with(class)
                && align_down(offset, page) < start
            {
                return false;
            }
            if node.next_phys != NIL
                && self.nodes[node.next_phys as usize].class().conflicts_with(class)
                && alloc_end > align_down(end, page)
            {
                return false;
            }
        }
        true
    }

    /// Allocates `size` bytes at `alignment` for `class`.
    pub fn allocate(&mut self, size: u64, alignment: u64, class: ResourceClass) -> Result<UsedRange, Error> {
        self.allocate_with_scan(size, alignment, class, true)
    }

    /// As `allocate`; with `scan` false the near-out-of-memory scan is skipped, so a request may fail although
    /// some free range could hold it (O(1) always: for callers that have other blocks to try first).
    pub fn allocate_with_scan(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        scan: bool,
    ) -> Result<UsedRange, Error> {
        validate_request(size, alignment, self.capacity)?;
        if !self.can_take_slots(2) {
            return Err(Error::TooManyAllocations);
        }
        let granularity = self.min_granularity();
        let oom = Error::OutOfMemory { size, alignment };
        let asize = align_up(size, granularity).ok_or(oom)?;
        let alignment_eff = alignment.max(granularity);
        let classes_meet = self.classes_meet(class);

        let units = asize >> self.granularity_shift;
        let (fl, sl) = bin_of(units);
        if alignment <= granularity && !classes_meet {
            // Plain request (the common case): any range of `asize` bytes holds it at its start, so neither
            // step below needs the general fit test.
            if (self.sl_bitmaps[fl & (FL_SLOTS - 1)] >> sl) & 1 == 1 {
                let head = self.bins[fl & (FL_SLOTS - 1)][sl & (SL_COUNT - 1)];
                let node = &self.nodes[head as usize];
                if node.size >= asize {
                    let offset = node.offset;
                    return Ok(self.take(head, (fl, sl), offset, asize, alignment, class));
                }
            }
            if let Some((gfl, gsl)) = bin_fitting(units)
                && let Some(bin) = self.non_empty_bin_from(gfl, gsl)
            {
                let candidate = self.bins[bin.0 & (FL_SLOTS - 1)][bin.1 & (SL_COUNT - 1)];
                let offset = self.nodes[candidate as usize].offset;
                return Ok(self.take(candidate, bin, offset, asize, alignment, class));
            }
        } else {
            // 1. Good fit: the first range in the request's own bin, if it happens to hold the request.
            // The bitmap (a few hot words) answers "is the bin empty?" without touching the bin array.
            if (self.sl_bitmaps[fl & (FL_SLOTS - 1)] >> sl) & 1 == 1 {
                let head = self.bins[fl & (FL_SLOTS - 1)][sl & (SL_COUNT - 1)];
                if let Some(offset) = self.fit(head, asize, alignment_eff, class, classes_meet) {
                    return Ok(self.take(head, (fl, sl), offset, asize, alignment, class));
                }
            }
            // 2. O(1): the lowest bin whose every range holds the request plus the worst-case padding.
            let mut slack = alignment_eff - granularity;
            if classes_meet {
                let page = self.class_granularity;
                slack = alignment_eff.max(page) - granularity + (page - granularity);
            }
            if let Some(needed) = asize.checked_add(slack)
                && let Some((gfl, gsl)) = bin_fitting(needed >> self.granularity_shift)
                && let Some(bin) = self.non_empty_bin_from(gfl, gsl)
            {
                let candidate = self.bins[bin.0 & (FL_SLOTS - 1)][bin.1 & (SL_COUNT - 1)];
                if let Some(offset) = self.fit(candidate, asize, alignment_eff, class, classes_meet) {
                    return Ok(self.take(candidate, bin, offset, asize, alignment, class));
                }
            }
        }
        // 3. Near out-of-memory: scan every range that might hold the request.
        if !scan {
            return Err(oom);
        }
        match self.scan(fl, sl, asize, alignment_eff, class, classes_meet) {
            Some((index, bin, offset)) => Ok(self.take(index, bin, offset, asize, alignment, class)),
            None => Err(oom),
        }
    }

    /// The slow path of `allocate`: walks every free range from bin `(fl, sl)` up and returns the first that
    /// holds the request. Kept out of line so the O(1) path stays small.
    #[cold]
    #[inline(never)]
    fn scan(
        &self,
        fl: usize,
        sl: usize,
        asize: u64,
        alignment_eff: u64,
        class: ResourceClass,
        classes_meet: bool,
    ) -> Option<(u32, (usize, usize), u64)> {
        let mut next_bin = Some((fl, sl));
        while let Some((bfl, bsl)) = next_bin.and_then(|(f, s)| self.non_empty_bin_from(f, s)) {
            let mut index = self.bins[bfl & (FL_SLOTS - 1)][bsl & (SL_COUNT - 1)];
            while index != NIL {
                if let Some(offset) = self.fit(index, asize, alignment_eff, class, classes_meet) {
                    return Some((index, (bfl, bsl), offset));
                }
                index = self.nodes[index as usize].next_free;
            }
            next_bin = bin_after(bfl, bsl);
        }
        None
    }

    /// Allocates where the caller prefers: `place(offset, size)` is shown free ranges, smallest bins first (from
    /// the request's own bin up), and answers where in the range the request should start, if anywhere; the
    /// first answer that holds the request (alignment, bounds, classes) is taken. At most `limit` ranges are
    /// shown: O(limit) calls. `Ok(None)` when none was taken; the caller then allocates as usual. For callers that
    /// prefer some addresses over others (a virtual heap preferring committed pages).
    pub fn allocate_where(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        limit: usize,
        mut place: impl FnMut(u64, u64) -> Option<u64>,
    ) -> Result<Option<UsedRange>, Error> {
        validate_request(size, alignment, self.capacity)?;
        if !self.can_take_slots(2) {
            return Err(Error::TooManyAllocations);
        }
        let granularity = self.min_granularity();
        let asize = align_up(size, granularity).ok_or(Error::OutOfMemory { size, alignment })?;
        let alignment_eff = alignment.max(granularity);
        let classes_meet = self.classes_meet(class);
        let (fl, sl) = bin_of(asize >> self.granularity_shift);
        let mut left = limit;
        let mut next_bin = Some((fl, sl));
        while let Some((bfl, bsl)) = next_bin.and_then(|(f, s)| self.non_empty_bin_from(f, s)) {
            let mut index = self.bins[bfl & (FL_SLOTS - 1)][bsl & (SL_COUNT - 1)];
            while index != NIL {
                if left == 0 {
                    return Ok(None);
                }
                left -= 1;
                let node = &self.nodes[index as usize];
                if let Some(offset) = place(node.offset, node.size)
                    && self.fit_at(index, offset, asize, alignment_eff, class, classes_meet)
                {
                    return Ok(Some(self.take(index, (bfl, bsl), offset, asize, alignment, class)));
                }
                index = self.nodes[index as usize].next_free;
            }
            next_bin = bin_after(bfl, bsl);
        }
        Ok(None)
    }

    /// Changes a free node's size, moving it between bins only when its bin changes.
    fn resize_free(&mut self, index: u32, new_size: u64) {
        let bin = bin_of(self.nodes[index as usize].size >> self.granularity_shift);
        self.resize_free_in(index, bin, new_size);
    }

    /// As `resize_free`, for a node whose current bin the caller knows.
    fn resize_free_in(&mut self, index: u32, bin: (usize, usize), new_size: u64) {
        if bin == bin_of(new_size >> self.granularity_shift) {
            self.nodes[index as usize].size = new_size;
        } else {
            self.remove_free_in(index, bin);
            self.nodes[index as usize].size = new_size;
            self.insert_free(index);
        }
    }

    /// Carves `[offset, offset + size)` out of free node `index`. Padding in front becomes a free node of its
    /// own; a tail, if any, stays in `index` (often in the same bin, which then needs no list update).
    fn take(
        &mut self,
        index: u32,
        bin: (usize, usize),
        offset: u64,
        size: u64,
        alignment: u64,
        class: ResourceClass,
    ) -> UsedRange {
        let (start, end, prev) = {
            let node = &self.nodes[index as usize];
            (node.offset, node.offset + node.size, node.prev_phys)
        };
        let alloc_end = offset + size;
        let used = if alloc_end < end {
            // The free node keeps the tail; the allocation gets a slot of its own, linked in before it.
            let used = self.new_slot(offset, size, prev, index);
            match prev {
                NIL => self.first_phys = used,
                p => self.nodes[p as usize].next_phys = used,
            }
            self.nodes[index as usize].prev_phys = used;
            self.nodes[index as usize].offset = alloc_end;
            self.resize_free_in(index, bin, end - alloc_end);
            used
        } else {
            self.remove_free_in(index, bin);
            index
        };
        if offset > start {
            // `prev` is still the range before the allocation; the pad goes in between.
            let pad = self.new_slot(start, offset - start, prev, used);
            match prev {
                NIL => self.first_phys = pad,
                p => self.nodes[p as usize].next_phys = pad,
            }
            self.nodes[used as usize].prev_phys = pad;
            self.insert_free(pad);
        }
        let node = &mut self.nodes[used as usize];
        node.offset = offset;
        node.size = size;
        let generation = self.next_generation;
        node.set_used(generation, class, alignment.trailing_zeros());
        self.next_generation = (generation + 1) & GENERATION_MASK;
        self.used_bytes += size;
        self.used_count += 1;
        self.live_per_class[class as usize] += 1;
        // Nothing is read back from the node: it may be cold, and its stores still in flight.
        UsedRange { slot: used, generation, offset, size, class }
    }

    /// The used range in `slot` if it still holds `generation`.
    pub fn used(&self, slot: u32, generation: u32) -> Result<UsedRange, Error> {
        match self.nodes.get(slot as usize) {
            Some(node) if node.is_used() && node.generation() == generation => {
                Ok(UsedRange { slot, generation, offset: node.offset, size: node.size, class: node.class() })
            }
            _ => Err(Error::StaleHandle),
        }
    }

    /// Frees the used range in `slot`, merging it with free neighbours. A free neighbour absorbs the range in
    /// place (no bin update unless its bin changes) and the freed slot becomes vacant.
    pub fn free(&mut self, slot: u32, generation: u32) -> Result<UsedRange, Error> {
        let used = self.used(slot, generation)?;
        // The node stays marked used until `insert_free` or `release_slot` below rewrites its tag.
        let (prev, next) = {
            let node = &self.nodes[slot as usize];
            (node.prev_phys, node.next_phys)
        };
        self.used_bytes -= used.size;
        self.used_count -= 1;
        self.live_per_class[used.class as usize] -= 1;

        let prev_free = prev != NIL && self.nodes[prev as usize].is_free();
        let next_free = next != NIL && self.nodes[next as usize].is_free();
        match (prev_free, next_free) {
            (false, false) => self.insert_free(slot),
            (true, false) => {
                let grown = self.nodes[prev as usize].size + used.size;
                self.resize_free(prev, grown);
                self.link(prev, next);
                self.release_slot(slot);
            }
            (false, true) => {
                let grown = self.nodes[next as usize].size + used.size;
                self.nodes[next as usize].offset = used.offset;
                self.resize_free(next, grown);
                self.link(prev, next);
                self.release_slot(slot);
            }
            (true, true) => {
                let (next_size, after) = {
                    let n = &self.nodes[next as usize];
                    (n.size, n.next_phys)
                };
                self.remove_free(next);
                let grown = self.nodes[prev as usize].size + used.size + next_size;
                self.resize_free(prev, grown);
                self.link(prev, after);
                self.release_slot(slot);
                self.release_slot(next);
            }
        }
        Ok(used)
    }

    /// Makes `a` and `b` physical neighbours (either may be NIL: the start or end of the range).
    fn link(&mut self, a: u32, b: u32) {
        match a {
            NIL => self.first_phys = b,
            a => self.nodes[a as usize].next_phys = b,
        }
        match b {
            NIL => self.last_phys = a,
            b => self.nodes[b as usize].prev_phys = a,
        }
    }

    /// Extends the capacity to `new_capacity`; live ranges stay where they are.
    pub fn grow(&mut self, new_capacity: u64) -> Result<(), Error> {
        if new_capacity < self.capacity {
            return Err(Error::InvalidConfig { reason: "grow cannot shrink the capacity" });
        }
        if new_capacity == self.capacity {
            return Ok(());
        }
        let added = new_capacity - self.capacity;
        let last = self.last_phys;
        if self.nodes[last as usize].is_free() {
            self.remove_free(last);
            self.nodes[last as usize].size += added;
            self.insert_free(last);
        } else {
            if !self.can_take_slots(1) {
                return Err(Error::TooManyAllocations);
            }
            let tail = self.new_slot(self.capacity, added, last, NIL);
            self.nodes[last as usize].next_phys = tail;
            self.last_phys = tail;
            self.insert_free(tail);
        }
        self.capacity = new_capacity;
        Ok(())
    }

    /// Size of the largest free range (scans one bin: the highest non-empty one).
    pub fn largest_free(&self) -> u64 {
        if self.fl_bitmap == 0 {
            return 0;
        }
        let fl = 63 - self.fl_bitmap.leading_zeros() as usize;
        let sl = 31 - self.sl_bitmaps[fl].leading_zeros() as usize;
        let mut largest = 0;
        let mut index = self.bins[fl & (FL_SLOTS - 1)][sl & (SL_COUNT - 1)];
        while index != NIL {
            let node = &self.nodes[index as usize];
            largest = largest.max(node.size);
            index = node.next_free;
        }
        largest
    }

    /// Used ranges in offset order.
    pub fn used_ranges(&self) -> UsedRanges<'_> {
        UsedRanges { tlsf: self, next: self.first_phys }
    }

    /// Every range, free or used, in offset order: `(offset, size, used)`.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        let mut next = self.first_phys;
        core::iter::from_fn(move || {
            if next == NIL {
                return None;
            }
            let node = &self.nodes[next as usize];
            next = node.next_phys;
            Some((node.offset, node.size, node.is_used()))
        })
    }

    /// Checks every structural invariant; see the module documentation.
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), crate::check::Violation> {
        use crate::check::Violation;
        let fail = |what: &'static str, offset: u64| Err(Violation { what, offset });
        let granularity = self.min_granularity();

        // Physical order: contiguous tiling of [0, capacity).
        let mut expected_offset = 0u64;
        let mut prev = NIL;
        let mut index = self.first_phys;
        let (mut free_nodes, mut used_nodes, mut used_bytes, mut walked) = (0usize, 0usize, 0u64, 0usize);
        let mut live_per_class = [0usize; 4];
        let mut prev_was_free = false;
        let mut last_used: Option<&Node> = None;
        while index != NIL {
            walked += 1;
            if walked > self.nodes.len() {
                return fail("physical list has a cycle", expected_offset);
            }
            let node = &self.nodes[index as usize];
            if node.prev_phys != prev {
                return fail("physical back link broken", node.offset);
            }
            if node.offset != expected_offset {
                return fail("ranges overlap or leave a gap", node.offset);
            }
            if node.size == 0 {
                return fail("empty range", node.offset);
            }
            if node.is_vacant() {
                return fail("vacant slot in the physical list", node.offset);
            }
            if node.is_free() {
                if prev_was_free {
                    return fail("two free neighbours not coalesced", node.offset);
                }
                free_nodes += 1;
                prev_was_free = true;
            } else {
                if !node.offset.is_multiple_of(1u64 << node.alignment_log2())
                    || !node.offset.is_multiple_of(granularity)
                {
                    return fail("used range misaligned", node.offset);
                }
                if !node.size.is_multiple_of(granularity) {
                    return fail("used size not a multiple of the granularity", node.offset);
                }
                if let Some(before) = last_used {
                    let page = self.class_granularity;
                    if before.class().conflicts_with(node.class())
                        && align_down(before.offset + before.size - 1, page) == align_down(node.offset, page)
                    {
                        return fail("conflicting classes share a granularity page", node.offset);
                    }
                }
                last_used = Some(node);
                used_nodes += 1;
                used_bytes += node.size;
                live_per_class[node.class() as usize] += 1;
                prev_was_free = false;
            }
            expected_offset = node
                .offset
                .checked_add(node.size)
                .ok_or(Violation { what: "range end overflows", offset: node.offset })?;
            prev = index;
            index = node.next_phys;
        }
        if expected_offset != self.capacity {
            return fail("ranges do not add up to the capacity", expected_offset);
        }
        if prev != self.last_phys {
            return fail("last range pointer is wrong", expected_offset);
        }
        if used_nodes != self.used_count || used_bytes != self.used_bytes || free_nodes != self.free_count {
            return fail("counters disagree with the ranges", used_bytes);
        }
        if live_per_class != self.live_per_class {
            return fail("per-class counters disagree with the ranges", 0);
        }

        // Bins: every free node exactly once, in the bin of its size, bitmaps matching.
        let mut listed = 0usize;
        for fl in 0..FL_COUNT {
            if ((self.fl_bitmap >> fl) & 1 == 1) != (self.sl_bitmaps[fl] != 0) {
                return fail("first-level bitmap disagrees with second level", fl as u64);
            }
            for sl in 0..SL_COUNT {
                let head = self.bins[fl & (FL_SLOTS - 1)][sl & (SL_COUNT - 1)];
                if ((self.sl_bitmaps[fl] >> sl) & 1 == 1) != (head != NIL) {
                    return fail("second-level bitmap disagrees with the bin", (fl * SL_COUNT + sl) as u64);
                }
                let mut prev_free = NIL;
                let mut index = head;
                while index != NIL {
                    listed += 1;
                    if listed > self.free_count {
                        return fail("free lists hold more nodes than there are free ranges", 0);
                    }
                    let node = &self.nodes[index as usize];
                    if !node.is_free() {
                        return fail("non-free node in a free list", node.offset);
                    }
                    if node.prev_free != prev_free {
                        return fail("free-list back link broken", node.offset);
                    }
                    if bin_of(node.size >> self.granularity_shift) != (fl, sl) {
                        return fail("free range in the wrong bin", node.offset);
                    }
                    prev_free = index;
                    index = node.next_free;
                }
            }
        }
        if listed != self.free_count {
            return fail("a free range is missing from the bins", 0);
        }

        // Vacant slots: each listed once, and together with the ranges they account for the whole slab.
        let mut listed_vacant = alloc::vec![false; self.nodes.len()];
        for &index in &self.vacant {
            let seen = listed_vacant
                .get_mut(index as usize)
                .ok_or(Violation { what: "vacant index out of range", offset: index as u64 })?;
            if *seen || !self.nodes[index as usize].is_vacant() {
                return fail("vacant stack lists a slot twice or a slot in use", index as u64);
            }
            *seen = true;
        }
        if self.vacant.len() + walked != self.nodes.len() {
            return fail("slots lost: vacant + ranges != slab size", self.vacant.len() as u64);
        }
        Ok(())
    }
}

/// Iterator over used ranges in offset order.
pub(crate) struct UsedRanges<'a> {
    tlsf: &'a Tlsf,
    next: u32,
}

impl Iterator for UsedRanges<'_> {
    type Item = UsedRange;

    fn next(&mut self) -> Option<UsedRange> {
        while self.next != NIL {
            let slot = self.next;
            let node = &self.tlsf.nodes[slot as usize];
            self.next = node.next_phys;
            if node.is_used() {
                return Some(UsedRange {
                    slot,
                    generation: node.generation(),
                    offset: node.offset,
                    size: node.size,
                    class: node.class(),
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceClass::*;

    fn tlsf(capacity: u64) -> Tlsf {
        Tlsf::new(capacity, 16, 1).unwrap()
    }

    #[test]
    fn bins_are_monotonic_and_fitting_bins_hold_the_request() {
        let mut last = (0, 0);
        for units in 1..100_000u64 {
            let bin = bin_of(units);
            assert!(bin >= last, "bin_of must not decrease");
            last = bin;
            // Every range in the fitting bin or above is at least `units` long: the fitting bin's lower bound.
            let (fl, sl) = bin_fitting(units).unwrap();
            let lower = if fl == 0 { sl as u64 } else { ((SL_COUNT + sl) as u64) << (fl - 1) };
            assert!(lower >= units, "units {units}: fitting bin starts at {lower}");
        }
        assert_eq!(bin_fitting(u64::MAX), None);
        assert_eq!(bin_of(u64::MAX).0, FL_COUNT - 1);
    }

    #[test]
    fn allocate_and_free_coalesce_both_neighbours() {
        let mut t = tlsf(1024);
        let a = t.allocate(100, 1, Buffer).unwrap();
        let b = t.allocate(100, 1, Buffer).unwrap();
        let c = t.allocate(100, 1, Buffer).unwrap();
        assert_eq!((a.offset, b.offset, c.offset), (0, 112, 224));
        t.check().unwrap();
        t.free(a.slot, a.generation).unwrap();
        t.free(c.slot, c.generation).unwrap();
        t.check().unwrap();
        assert_eq!(t.free_count(), 2);
        t.free(b.slot, b.generation).unwrap();
        t.check().unwrap();
        assert_eq!(t.free_count(), 1);
        assert_eq!(t.largest_free(), 1024);
    }

    #[test]
    fn double_free_is_stale() {
        let mut t = tlsf(1024);
        let a = t.allocate(64, 1, Buffer).unwrap();
        t.free(a.slot, a.generation).unwrap();
        assert_eq!(t.free(a.slot, a.generation), Err(Error::StaleHandle));
        // The slot is reused by the next allocation, with a new generation.
        let b = t.allocate(64, 1, Buffer).unwrap();
        assert_eq!(t.free(a.slot, a.generation), Err(Error::StaleHandle));
        t.free(b.slot, b.generation).unwrap();
        assert_eq!(t.free(999, 0), Err(Error::StaleHandle));
        t.check().unwrap();
    }

    #[test]
    fn aligned_request_returns_front_padding_to_the_bins() {
        let mut t = tlsf(1 << 20);
        let a = t.allocate(48, 1, Buffer).unwrap();
        let b = t.allocate(1000, 4096, Buffer).unwrap();
        assert_eq!(b.offset, 4096);
        t.check().unwrap();
        // The padding [48, 4096) is free and serves the next small request.
        let c = t.allocate(64, 16, Buffer).unwrap();
        assert!(c.offset >= 48 && c.offset + 64 <= 4096, "{}", c.offset);
        for r in [a, b, c] {
            t.free(r.slot, r.generation).unwrap();
        }
        t.check().unwrap();
        assert_eq!(t.largest_free(), 1 << 20);
    }

    #[test]
    fn last_fitting_range_is_found_even_when_bins_round_up() {
        // A free range of 1000 units sits in a bin whose lower bound is below 1000: the O(1) search would skip
        // it, the scan must not.
        let mut t = tlsf(16 * 1000);
        let r = t.allocate(16 * 999, 1, Buffer).unwrap();
        t.free(r.slot, r.generation).unwrap();
        let r = t.allocate(16 * 1000, 1, Buffer).unwrap();
        assert_eq!(r.offset, 0);
        assert_eq!(t.allocate(16, 1, Buffer), Err(Error::OutOfMemory { size: 16, alignment: 1 }));
        t.check().unwrap();
    }

    #[test]
    fn conflicting_classes_never_share_a_page() {
        let mut t = Tlsf::new(64 * 1024, 16, 1024).unwrap();
        let buf = t.allocate(100, 16, Buffer).unwrap();
        let img = t.allocate(100, 16, OptimalImage).unwrap();
        assert_eq!(buf.offset, 0);
        assert_eq!(img.offset, 1024, "optimal image must start on the next page");
        let buf2 = t.allocate(100, 16, Buffer).unwrap();
        assert_eq!(buf2.offset, 2048, "buffer after the image's page");
        let lin = t.allocate(100, 16, LinearImage).unwrap();
        assert_eq!(lin.offset, buf2.offset + 112, "linear image may share a page with a buffer");
        t.check().unwrap();
        let small = t.allocate(64, 16, Buffer).unwrap();
        assert!(small.offset >= 112);
        t.check().unwrap();
    }

    #[test]
    fn gap_before_a_conflicting_neighbour_is_used_up_to_the_page_edge() {
        let mut t = Tlsf::new(2048, 16, 1024).unwrap();
        let _buf = t.allocate(100, 16, Buffer).unwrap();
        let _img = t.allocate(1024, 16, OptimalImage).unwrap();
        // Only [112, 1024) is left; a buffer may fill it exactly, but not one byte past the image's page.
        assert_eq!(t.allocate(913, 16, Buffer), Err(Error::OutOfMemory { size: 913, alignment: 16 }));
        let fill = t.allocate(912, 16, Buffer).unwrap();
        assert_eq!(fill.offset, 112);
        t.check().unwrap();
    }

    #[test]
    fn class_rule_holds_at_the_block_end_and_after_coalescing() {
        let mut t = Tlsf::new(4096, 16, 1024).unwrap();
        // Fill the last page with an optimal image, leave the rest to buffers.
        let img = t.allocate(1024, 1024, OptimalImage).unwrap();
        assert_eq!(img.offset, 0);
        let tail_img = t.allocate(512, 16, OptimalImage).unwrap();
        assert_eq!(tail_img.offset, 1024);
        // A buffer may not use the rest of page 1 ([1536, 2048)).
        let buf = t.allocate(512, 16, Buffer).unwrap();
        assert_eq!(buf.offset, 2048);
        t.check().unwrap();
        // Freeing the tail image leaves [1024, 2048) free between the image at 0 and the buffer at 2048.
        t.free(tail_img.slot, tail_img.generation).unwrap();
        t.check().unwrap();
        // Now the whole of [0.., 2048) except page 0 is free: a buffer may sit at 1024 (page 1 has no image).
        let buf2 = t.allocate(1024, 16, Buffer).unwrap();
        assert_eq!(buf2.offset, 1024);
        t.check().unwrap();
        // Fill to the very end with buffers; an optimal image must not go into the last page's remainder.
        let buf3 = t.allocate(512, 16, Buffer).unwrap();
        assert_eq!(buf3.offset, 2560);
        let end_img = t.allocate(512, 16, OptimalImage);
        assert!(matches!(end_img, Ok(ref r) if r.offset == 3072), "{end_img:?}");
        assert!(t.allocate(16, 16, OptimalImage).is_ok(), "space left on page 3 for an image");
        assert_eq!(t.allocate(16, 16, Buffer), Err(Error::OutOfMemory { size: 16, alignment: 16 }));
        t.check().unwrap();
    }

    #[test]
    fn grow_extends_a_free_tail_or_adds_one() {
        let mut t = tlsf(1024);
        let a = t.allocate(1024, 1, Buffer).unwrap();
        t.grow(2048).unwrap();
        t.check().unwrap();
        let b = t.allocate(1024, 1, Buffer).unwrap();
        assert_eq!(b.offset, 1024);
        t.free(b.slot, b.generation).unwrap();
        t.grow(4096).unwrap();
        t.check().unwrap();
        assert_eq!(t.largest_free(), 3072);
        assert!(matches!(t.grow(100), Err(Error::InvalidConfig { .. })));
        t.free(a.slot, a.generation).unwrap();
        t.check().unwrap();
    }

    #[test]
    fn reset_makes_old_handles_stale_and_keeps_slots() {
        let mut t = tlsf(1 << 16);
        let ranges: Vec<_> = (0..10).map(|_| t.allocate(100, 1, Buffer).unwrap()).collect();
        let slots = t.slot_count();
        t.reset_ranges();
        t.check().unwrap();
        for r in &ranges {
            assert_eq!(t.free(r.slot, r.generation), Err(Error::StaleHandle));
        }
        let again: Vec<_> = (0..10).map(|_| t.allocate(100, 1, Buffer).unwrap()).collect();
        assert_eq!(t.slot_count(), slots, "slots are reused, not added");
        for r in again {
            t.free(r.slot, r.generation).unwrap();
        }
        t.check().unwrap();
    }

    #[test]
    fn odd_capacity_tail_is_tracked() {
        let mut t = tlsf(1000); // not a multiple of 16
        let a = t.allocate(992, 1, Buffer).unwrap();
        t.check().unwrap();
        assert_eq!(t.allocate(1, 1, Buffer), Err(Error::OutOfMemory { size: 1, alignment: 1 }));
        t.free(a.slot, a.generation).unwrap();
        t.check().unwrap();
        assert_eq!(t.largest_free(), 1000);
    }
}
