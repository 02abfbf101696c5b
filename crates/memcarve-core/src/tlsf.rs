//! Two-level segregated fit (TLSF) over `[0, capacity)`: O(1) allocate and free.
//!
//! Free ranges sit in bins indexed by two bitmaps: the first level is the power of two of the size (in units of
//! the minimum granularity), the second splits each power of two into 32 sub-bins. There are 32 first levels,
//! enough for sizes below `2^35` units: a block of `2^35` granules or more (32 GiB at one byte, 16 TiB at 512)
//! counts sizes in a larger power of two instead, so its smallest bins each hold a few sizes (a block of 64 GiB at
//! one byte: sizes 4 bytes apart; of 1 TiB: 32 bytes apart), and a good fit there is less exact. Every range, free
//! or used, is a node in a slab (`Vec<Node>`) linked to its physical neighbours; free nodes are also linked in
//! their bin. Invariants (checked by `check`): nodes tile the capacity in order, no two free nodes are neighbours,
//! every free node is in the bin its size maps to, and bitmaps say exactly which bins are non-empty.
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
/// First levels: sizes below `2^(FL_COUNT + SL_BITS - 1)` units have a bin.
const FL_COUNT: usize = 32;
/// A block's bin units are chosen (`bin_units_shift`) so that its capacity is below this many: every range it
/// holds has a bin, and every request up to the capacity, rounded up, has a fitting bin in the table.
const UNITS_LIMIT: u64 = 1 << (FL_COUNT as u32 + SL_BITS - 2);
/// Bin arrays are sized to a power of two so that masked indices need no bounds checks.
const FL_SLOTS: usize = FL_COUNT;
/// Bins by first and second level, flattened: 4 KiB of heads, written whole each time a block is made.
const BIN_SLOTS: usize = FL_SLOTS * SL_COUNT;
const NIL: u32 = u32::MAX;
/// Range slots a TLSF has room for from the start: a new block's first allocations grow nothing (a fresh
/// virtual heap's first operations replayed 6 % faster, docs/BENCHMARKS.md).
pub(crate) const FIRST_SLOTS: usize = 16;
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

/// An allocation request after validation, as `allocate_with_scan` hands it to its out-of-line scan.
struct Request {
    size: u64,
    /// `size` rounded up to the minimum granularity.
    asize: u64,
    alignment: u64,
    /// `alignment`, at least the minimum granularity.
    alignment_eff: u64,
    class: ResourceClass,
    /// Whether `class` may meet a live range of a conflicting class (see `Tlsf::classes_meet`).
    classes_meet: bool,
}

/// The TLSF engine. The public face is [`crate::VirtualBlock`], which adds owner tags and user data.
#[derive(Debug, Clone)]
pub(crate) struct Tlsf {
    capacity: u64,
    /// A size in bytes, shifted right by this, is its size in bin units: the granularity's shift, or more for
    /// a capacity of `UNITS_LIMIT` granules or more (see `bin_units_shift`).
    bin_shift: u32,
    /// The granularity (a power of two), kept so the hot paths need not shift.
    min_granularity: u64,
    /// Page size within which conflicting classes must not meet (1 = no rule).
    class_granularity: u64,
    nodes: Vec<Node>,
    /// Slots holding no range, reused last-in first-out. A stack of indices rather than a list threaded
    /// through the nodes, so taking a slot does not read a cold node.
    vacant: Vec<u32>,
    first_phys: u32,
    last_phys: u32,
    free: FreeLists,
    /// Generation of the next used range. One counter for all slots: a stale handle is recognised unless
    /// 2^24 allocations happened since it was freed and its slot is in use again with the same value.
    next_generation: u32,
    used_bytes: u64,
    /// Used ranges by class (their sum is the number of used ranges).
    live_per_class: [usize; 4],
}

/// The free lists: one doubly linked list of free nodes per bin, threaded through the nodes' `prev_free` and
/// `next_free`, and the two bitmaps that say which lists are non-empty. Kept apart from the slab so that the
/// hot paths can hold the slab as a plain slice next to it: its pointer and length then stay in registers
/// instead of being reloaded after every store to a node.
#[derive(Debug, Clone)]
struct FreeLists {
    fl_bitmap: u64,
    sl_bitmaps: [u32; FL_SLOTS],
    /// Heads by [`Bin`]. Boxed: 4 KiB inline would be copied each time a block is built and moved into place.
    heads: alloc::boxed::Box<[u32; BIN_SLOTS]>,
    /// Free nodes listed.
    count: usize,
}

#[inline]
fn align_up(value: u64, alignment: u64) -> Option<u64> {
    Some(value.checked_add(alignment - 1)? & !(alignment - 1))
}

#[inline]
fn align_down(value: u64, alignment: u64) -> u64 {
    value & !(alignment - 1)
}

/// A bin: `fl * SL_COUNT + sl` for first level `fl` and second level `sl`. One number names both levels, and
/// bins compare in size order.
type Bin = usize;

/// The first level of a bin, masked so that it indexes `sl_bitmaps` without a bounds check.
#[inline]
fn fl_of(bin: Bin) -> usize {
    (bin >> SL_BITS) & (FL_SLOTS - 1)
}

/// The second level of a bin.
#[inline]
fn sl_of(bin: Bin) -> usize {
    bin & (SL_COUNT - 1)
}

/// The shift that turns a size in bytes into bin units, for a block of `capacity` bytes handing out multiples of
/// `1 << granularity_shift`: the granularity's, unless the capacity holds `UNITS_LIMIT` granules or more. The
/// capacity is then below `UNITS_LIMIT` units, and a request up to it, rounded up, at most `UNITS_LIMIT`.
fn bin_units_shift(capacity: u64, granularity_shift: u32) -> u32 {
    let bits = u64::BITS - capacity.leading_zeros();
    granularity_shift.max(bits.saturating_sub(UNITS_LIMIT.trailing_zeros()))
}

/// `bin_fitting` for a request that may be longer than the block (one with alignment padding added): None past
/// the table, where no range is listed.
#[inline]
fn fitting_in_table(units: u64) -> Option<Bin> {
    bin_fitting(units).filter(|&bin| bin < BIN_SLOTS)
}

/// The bin after `bin` in size order, if any.
fn bin_after(bin: Bin) -> Option<Bin> {
    (bin + 1 < FL_COUNT * SL_COUNT).then_some(bin + 1)
}

/// The bin holding free ranges of `units` units. Below `2 * SL_COUNT` units the bins are linear (one size
/// each: first level 0 and 1); above, the first level is the power of two and the second the next `SL_BITS`
/// bits. With `shift` the bits below those, that is `shift * SL_COUNT + (units >> shift)`. Written without
/// branches: the size class of random requests is unpredictable, and a mispredicted branch here cost more than
/// the arithmetic.
#[inline]
fn bin_of(units: u64) -> Bin {
    let msb = 63 - (units | 1).leading_zeros();
    let shift = msb.saturating_sub(SL_BITS);
    ((shift as usize) << SL_BITS) + (units >> shift) as usize
}

/// The lowest bin all of whose ranges hold at least `units` units (None if no bin can): `units` rounded up to
/// the next bin boundary. In the table for any request up to a block's capacity (at most `UNITS_LIMIT` units);
/// one that may be longer goes through `fitting_in_table`. Below `2 * SL_COUNT` units every bin holds one size
/// and the rounding adds nothing; written without a branch for that case, which random small requests would
/// mispredict half of the time.
#[inline]
fn bin_fitting(units: u64) -> Option<Bin> {
    let msb = 63 - (units | 1).leading_zeros();
    let rounded = units.checked_add((1u64 << msb.saturating_sub(SL_BITS)) - 1)?;
    Some(bin_of(rounded))
}

impl Node {
    /// A free node not yet in any list.
    #[inline(always)]
    fn free(offset: u64, size: u64, prev_phys: u32, next_phys: u32) -> Node {
        Node { offset, size, prev_phys, next_phys, prev_free: NIL, next_free: NIL }
    }
}

impl FreeLists {
    fn new() -> FreeLists {
        FreeLists {
            fl_bitmap: 0,
            sl_bitmaps: [0; FL_SLOTS],
            heads: alloc::boxed::Box::new([NIL; BIN_SLOTS]),
            count: 0,
        }
    }

    /// Empties every list, in place: only the listed bins' heads are reset (an unlisted bin's head is NIL).
    fn clear(&mut self) {
        for fl in 0..FL_SLOTS {
            let mut listed = self.sl_bitmaps[fl];
            while listed != 0 {
                self.heads[fl * SL_COUNT + listed.trailing_zeros() as usize] = NIL;
                listed &= listed - 1;
            }
        }
        self.fl_bitmap = 0;
        self.sl_bitmaps = [0; FL_SLOTS];
        self.count = 0;
    }

    /// Whether `bin` lists any node. The bitmap (a few hot words) answers without touching the heads.
    #[inline]
    fn is_listed(&self, bin: Bin) -> bool {
        (self.sl_bitmaps[fl_of(bin)] >> sl_of(bin)) & 1 == 1
    }

    /// The first node of `bin` (NIL if none).
    #[inline]
    fn head(&self, bin: Bin) -> u32 {
        self.heads[bin & (BIN_SLOTS - 1)]
    }

    /// Links free node `index` at the head of `bin`, which the caller computed from its size.
    ///
    /// Written without a branch: whether the list is empty depends on the data, and a mispredicted branch
    /// costs more than a store. When it is empty, the back link goes to `index` itself and is rewritten next.
    #[inline]
    fn insert(&mut self, nodes: &mut [Node], index: u32, bin: Bin) {
        let head = self.heads[bin & (BIN_SLOTS - 1)];
        let back_link = if head == NIL { index } else { head };
        nodes[back_link as usize].prev_free = index;
        let node = &mut nodes[index as usize];
        node.prev_free = NIL;
        node.next_free = head;
        self.heads[bin & (BIN_SLOTS - 1)] = index;
        self.sl_bitmaps[fl_of(bin)] |= 1 << sl_of(bin);
        self.fl_bitmap |= 1 << fl_of(bin);
        self.count += 1;
    }

    /// Unlinks free node `index` from its `bin`, which the caller already knows.
    #[inline]
    fn remove(&mut self, nodes: &mut [Node], index: u32, bin: Bin) {
        let (prev, next) = {
            let node = &nodes[index as usize];
            (node.prev_free, node.next_free)
        };
        if prev != NIL {
            nodes[prev as usize].next_free = next;
        } else {
            self.heads[bin & (BIN_SLOTS - 1)] = next;
            if next == NIL {
                let fl = fl_of(bin);
                self.sl_bitmaps[fl] &= !(1 << sl_of(bin));
                if self.sl_bitmaps[fl] == 0 {
                    self.fl_bitmap &= !(1 << fl);
                }
            }
        }
        if next != NIL {
            nodes[next as usize].prev_free = prev;
        }
        self.count -= 1;
    }

    /// Changes free node `index`'s size (it is in `bin`) to `new_size`, in units of `1 << shift`, moving it
    /// to another list only when its bin changes.
    #[inline(always)]
    fn resize(&mut self, nodes: &mut [Node], index: u32, bin: Bin, new_size: u64, shift: u32) {
        let new_bin = bin_of(new_size >> shift);
        nodes[index as usize].size = new_size;
        if bin != new_bin {
            self.remove(nodes, index, bin);
            self.insert(nodes, index, new_bin);
        }
    }

    /// The first non-empty bin at or above `bin`.
    #[inline]
    fn non_empty_from(&self, bin: Bin) -> Option<Bin> {
        let fl = fl_of(bin);
        let sl_map = self.sl_bitmaps[fl] & (u32::MAX << sl_of(bin));
        if sl_map != 0 {
            return Some(fl << SL_BITS | sl_map.trailing_zeros() as usize);
        }
        let fl_map = self.fl_bitmap & u64::MAX.checked_shl(fl as u32 + 1).unwrap_or(0);
        if fl_map == 0 {
            return None;
        }
        let fl = fl_map.trailing_zeros() as usize;
        Some(fl << SL_BITS | self.sl_bitmaps[fl & (FL_SLOTS - 1)].trailing_zeros() as usize)
    }
}

/// Makes `a` and `b` physical neighbours (either may be NIL: the start or end of the range, whose ends
/// `first_phys` and `last_phys` track).
#[inline]
fn link(nodes: &mut [Node], first_phys: &mut u32, last_phys: &mut u32, a: u32, b: u32) {
    match a {
        NIL => *first_phys = b,
        a => nodes[a as usize].next_phys = b,
    }
    match b {
        NIL => *last_phys = a,
        b => nodes[b as usize].prev_phys = a,
    }
}

/// Marks slot `index` vacant and stacks it for reuse.
#[inline(always)]
fn release_slot(nodes: &mut [Node], vacant: &mut Vec<u32>, index: u32) {
    nodes[index as usize].next_free = VACANT;
    vacant.push(index);
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
        let bin_shift = bin_units_shift(capacity, min_granularity.trailing_zeros());
        let mut tlsf = Tlsf {
            capacity,
            bin_shift,
            min_granularity,
            class_granularity,
            nodes: Vec::with_capacity(FIRST_SLOTS),
            vacant: Vec::new(),
            first_phys: NIL,
            last_phys: NIL,
            free: FreeLists::new(),
            next_generation: 0,
            used_bytes: 0,
            live_per_class: [0; 4],
        };
        tlsf.reset_ranges();
        Ok(tlsf)
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn min_granularity(&self) -> u64 {
        self.min_granularity
    }

    pub fn class_granularity(&self) -> u64 {
        self.class_granularity
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    pub fn used_count(&self) -> usize {
        self.live_per_class.iter().sum()
    }

    pub fn free_count(&self) -> usize {
        self.free.count
    }

    /// Number of slab slots, used or not: the engine's metadata grows with this.
    pub fn slot_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes of metadata held on the heap (slab and bins).
    pub fn metadata_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node>()
            + core::mem::size_of_val(&*self.free.heads)
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
        self.free.clear();
        self.used_bytes = 0;
        self.live_per_class = [0; 4];
        // One slot is always available here: either a vacant one or a fresh one in an empty slab.
        let whole = self.new_slot();
        self.nodes[whole as usize] = Node::free(0, self.capacity, NIL, NIL);
        self.first_phys = whole;
        self.last_phys = whole;
        self.insert_free(whole);
    }

    /// Takes a vacant slot, or grows the slab by one, and returns its index; the caller writes the node whole
    /// (a reused slot is usually cold, so it is never read first). Callers reserve room first.
    #[inline(always)]
    fn new_slot(&mut self) -> u32 {
        match self.vacant.pop() {
            Some(index) => index,
            None => self.push_slot(),
        }
    }

    /// Grows the slab by one vacant node (out of line: in a steady state every slot comes from the vacant stack).
    #[cold]
    #[inline(never)]
    fn push_slot(&mut self) -> u32 {
        self.nodes.push(Node { next_free: VACANT, ..Node::free(0, 0, NIL, NIL) });
        (self.nodes.len() - 1) as u32
    }

    /// Whether `extra` more slots can be had without exceeding what handles can address.
    fn can_take_slots(&self, extra: usize) -> bool {
        self.vacant.len() >= extra || self.nodes.len() + (extra - self.vacant.len()) <= MAX_SLOTS
    }

    /// A request of `bytes` (a multiple of the granularity) in bin units, rounded up: every range in
    /// `bin_fitting` of it holds `bytes`. (Its own bin, where a range of exactly `bytes` would be listed, is that
    /// of the units rounded down: no range in a lower bin holds it.)
    #[inline(always)]
    fn request_units(&self, bytes: u64) -> u64 {
        debug_assert!(bytes > 0);
        ((bytes - 1) >> self.bin_shift) + 1
    }

    fn insert_free(&mut self, index: u32) {
        let bin = bin_of(self.nodes[index as usize].size >> self.bin_shift);
        self.free.insert(&mut self.nodes, index, bin);
    }

    fn remove_free(&mut self, index: u32) {
        let bin = bin_of(self.nodes[index as usize].size >> self.bin_shift);
        self.free.remove(&mut self.nodes, index, bin);
    }

    /// Where a request would start inside free node `index`, if it fits there.
    #[inline(always)]
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
            if self.meets_previous(node, offset, class) {
                offset = align_up(offset, self.class_granularity)?;
            }
            let alloc_end = offset.checked_add(size)?;
            if alloc_end > end || self.meets_next(node, alloc_end, class) {
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
        !(classes_meet
            && (self.meets_previous(node, offset, class) || self.meets_next(node, alloc_end, class)))
    }

    /// Whether a range of `class` starting at `offset` in free `node` would share a granularity page with the
    /// used range before the node, of a conflicting class. (Neighbours of a free node are used nodes: free ones
    /// are always merged.)
    #[inline(always)]
    fn meets_previous(&self, node: &Node, offset: u64, class: ResourceClass) -> bool {
        node.prev_phys != NIL
            && self.nodes[node.prev_phys as usize].class().conflicts_with(class)
            && align_down(offset, self.class_granularity) < node.offset
    }

    /// Whether a range of `class` ending at `alloc_end` in free `node` would share a granularity page with the
    /// used range after the node, of a conflicting class.
    #[inline(always)]
    fn meets_next(&self, node: &Node, alloc_end: u64, class: ResourceClass) -> bool {
        node.next_phys != NIL
            && self.nodes[node.next_phys as usize].class().conflicts_with(class)
            && alloc_end > align_down(node.offset + node.size, self.class_granularity)
    }

    /// Allocates `size` bytes at `alignment` for `class`.
    #[inline]
    pub fn allocate(&mut self, size: u64, alignment: u64, class: ResourceClass) -> Result<UsedRange, Error> {
        self.allocate_with_scan(size, alignment, class, true)
    }

    /// As `allocate`; with `scan` false the near-out-of-memory scan is skipped, so a request may fail although
    /// some free range could hold it (O(1) always: for callers that have other blocks to try first).
    #[inline]
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

        let units = self.request_units(asize);
        let bin = bin_of(asize >> self.bin_shift);
        // Each way of finding a range has its own copy of `take`, specialised to it; the scan goes out of line.
        if alignment <= granularity && !classes_meet {
            // Plain request (the common case): any range of `asize` bytes holds it at its start, so it needs
            // no fit test.
            if let Some((index, bin, offset)) = self.find_plain(units, asize, bin) {
                return Ok(self.take(index, bin, offset, asize, alignment, class));
            }
        } else if let Some((index, bin, offset)) =
            self.find_fitting(asize, alignment_eff, class, classes_meet, bin)
        {
            return Ok(self.take(index, bin, offset, asize, alignment, class));
        }
        if !scan {
            return Err(Error::OutOfMemory { size, alignment });
        }
        let request = Request { size, asize, alignment, alignment_eff, class, classes_meet };
        self.allocate_scanned(&request, bin)
    }

    /// Near out-of-memory, when the O(1) search of `allocate_with_scan` found nothing: scans every range that
    /// might hold the request, from its own bin up.
    #[cold]
    #[inline(never)]
    fn allocate_scanned(&mut self, request: &Request, bin: Bin) -> Result<UsedRange, Error> {
        let &Request { size, asize, alignment, alignment_eff, class, classes_meet } = request;
        let (index, bin, offset) = self
            .scan(bin, asize, alignment_eff, class, classes_meet)
            .ok_or(Error::OutOfMemory { size, alignment })?;
        Ok(self.take(index, bin, offset, asize, alignment, class))
    }

    /// Where a plain request (alignment within the granularity, no class rule in play) goes: the first range
    /// of its own bin if it is large enough (good fit), else the first range of the lowest bin that guarantees
    /// room. Returns the node, its bin and the offset (the node's start). `units` is the request in bin units
    /// rounded up (`request_units`), `bin` its own bin.
    #[inline]
    fn find_plain(&self, units: u64, asize: u64, bin: Bin) -> Option<(u32, Bin, u64)> {
        // Both candidates are looked up and one is selected, rather than branching on whether the good fit
        // holds the request: that depends on the data, and is only known once the head's node has arrived.
        let head = self.free.head(bin);
        let good_fit = self.nodes.get(head as usize).is_some_and(|node| node.size >= asize);
        let fitting = bin_fitting(units).and_then(|fitting| self.free.non_empty_from(fitting));
        let bin = if good_fit { Some(bin) } else { fitting }?;
        let index = self.free.head(bin);
        Some((index, bin, self.nodes[index as usize].offset))
    }

    /// As `find_plain` for a request with alignment padding or class pages to respect: the good-fit candidate
    /// and the guaranteed bin both go through the general fit test.
    #[inline]
    fn find_fitting(
        &self,
        asize: u64,
        alignment_eff: u64,
        class: ResourceClass,
        classes_meet: bool,
        bin: Bin,
    ) -> Option<(u32, Bin, u64)> {
        // 1. Good fit: the first range in the request's own bin, if it happens to hold the request.
        if self.free.is_listed(bin) {
            let head = self.free.head(bin);
            if let Some(offset) = self.fit(head, asize, alignment_eff, class, classes_meet) {
                return Some((head, bin, offset));
            }
        }
        // 2. O(1): the lowest bin whose every range holds the request plus the worst-case padding.
        let granularity = self.min_granularity();
        let mut slack = alignment_eff - granularity;
        if classes_meet {
            let page = self.class_granularity;
            slack = alignment_eff.max(page) - granularity + (page - granularity);
        }
        let needed = asize.checked_add(slack)?;
        let fitting = self.free.non_empty_from(fitting_in_table(self.request_units(needed))?)?;
        let candidate = self.free.head(fitting);
        let offset = self.fit(candidate, asize, alignment_eff, class, classes_meet)?;
        Some((candidate, fitting, offset))
    }

    /// The slow path of `allocate`: walks every free range from `bin` up and returns the first that
    /// holds the request. Kept out of line so the O(1) path stays small.
    #[cold]
    #[inline(never)]
    fn scan(
        &self,
        bin: Bin,
        asize: u64,
        alignment_eff: u64,
        class: ResourceClass,
        classes_meet: bool,
    ) -> Option<(u32, Bin, u64)> {
        self.find_free(bin, usize::MAX, |index| self.fit(index, asize, alignment_eff, class, classes_meet))
    }

    /// Walks the free ranges from `bin` up, smallest bins first, and returns the first whose `pick` gives a start
    /// offset, with its bin; `None` when there is none or after `limit` ranges.
    #[inline]
    fn find_free(
        &self,
        bin: Bin,
        limit: usize,
        mut pick: impl FnMut(u32) -> Option<u64>,
    ) -> Option<(u32, Bin, u64)> {
        let mut left = limit;
        let mut next_bin = Some(bin);
        while let Some(bin) = next_bin.and_then(|bin| self.free.non_empty_from(bin)) {
            let mut index = self.free.head(bin);
            while index != NIL {
                if left == 0 {
                    return None;
                }
                left -= 1;
                if let Some(offset) = pick(index) {
                    return Some((index, bin, offset));
                }
                index = self.nodes[index as usize].next_free;
            }
            next_bin = bin_after(bin);
        }
        None
    }

    /// What the `allocate_*where` entry points check and derive first: the request is valid and a split has
    /// slots. Returns the rounded size, the effective alignment and whether classes must be kept apart.
    fn placed_request(
        &self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
    ) -> Result<(u64, u64, bool), Error> {
        validate_request(size, alignment, self.capacity)?;
        if !self.can_take_slots(2) {
            return Err(Error::TooManyAllocations);
        }
        let granularity = self.min_granularity();
        let asize = align_up(size, granularity).ok_or(Error::OutOfMemory { size, alignment })?;
        Ok((asize, alignment.max(granularity), self.classes_meet(class)))
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
        let (asize, alignment_eff, classes_meet) = self.placed_request(size, alignment, class)?;
        let found = self.find_free(bin_of(asize >> self.bin_shift), limit, |index| {
            let node = &self.nodes[index as usize];
            place(node.offset, node.size)
                .filter(|&offset| self.fit_at(index, offset, asize, alignment_eff, class, classes_meet))
        });
        Ok(found.map(|(index, bin, offset)| self.take(index, bin, offset, asize, alignment, class)))
    }

    /// Like [`Tlsf::allocate_where`], but shows `place` only the range `allocate` would take (its good fit, or
    /// the head of the lowest bin that surely holds the request): O(1). For callers that take TLSF's choice of
    /// range but want a say in the position inside it.
    pub fn allocate_good_fit_where(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        place: impl FnOnce(u64, u64) -> Option<u64>,
    ) -> Result<Option<UsedRange>, Error> {
        let (asize, alignment_eff, classes_meet) = self.placed_request(size, alignment, class)?;
        let (units, bin) = (self.request_units(asize), bin_of(asize >> self.bin_shift));
        let found = if alignment <= self.min_granularity() && !classes_meet {
            self.find_plain(units, asize, bin)
        } else {
            self.find_fitting(asize, alignment_eff, class, classes_meet, bin)
        };
        Ok(found.and_then(|(index, _, _)| self.take_where(index, asize, alignment, class, place)))
    }

    /// Like [`Tlsf::allocate_where`], but shows `place` only the last range by address, when it is free: O(1).
    /// For callers that keep the end of the capacity for fresh ranges (a virtual heap placing a request on
    /// address pages it has never mapped).
    pub fn allocate_at_end_where(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        place: impl FnOnce(u64, u64) -> Option<u64>,
    ) -> Result<Option<UsedRange>, Error> {
        let (asize, _, _) = self.placed_request(size, alignment, class)?;
        let index = self.last_phys;
        if index == NIL || !self.nodes[index as usize].is_free() {
            return Ok(None);
        }
        Ok(self.take_where(index, asize, alignment, class, place))
    }

    /// Shows free node `index` to `place` and takes the position it answers, if that holds the request
    /// (`asize` rounded bytes; alignment, bounds, classes).
    fn take_where(
        &mut self,
        index: u32,
        asize: u64,
        alignment: u64,
        class: ResourceClass,
        place: impl FnOnce(u64, u64) -> Option<u64>,
    ) -> Option<UsedRange> {
        let alignment_eff = alignment.max(self.min_granularity());
        let classes_meet = self.classes_meet(class);
        let node = &self.nodes[index as usize];
        let bin = bin_of(node.size >> self.bin_shift);
        let offset = place(node.offset, node.size)
            .filter(|&offset| self.fit_at(index, offset, asize, alignment_eff, class, classes_meet))?;
        Some(self.take(index, bin, offset, asize, alignment, class))
    }

    /// Carves `[offset, offset + size)` out of free node `index`, which is in `bin`. Padding in front becomes a
    /// free node of its own; a tail, if any, stays in `index` (often in the same bin, which then needs no list
    /// update).
    #[inline(always)]
    fn take(
        &mut self,
        index: u32,
        bin: Bin,
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
        // Slots first (taking one may grow the slab); from then on the slab is a fixed slice.
        let split = alloc_end < end;
        let used = if split { self.new_slot() } else { index };
        let pad = if offset > start { self.new_slot() } else { NIL };
        let shift = self.bin_shift;
        let nodes = &mut self.nodes[..];
        if split {
            // The free node keeps the tail; the allocation gets a slot of its own, linked in before it.
            nodes[used as usize] = Node::free(offset, size, prev, index);
            match prev {
                NIL => self.first_phys = used,
                p => nodes[p as usize].next_phys = used,
            }
            nodes[index as usize].prev_phys = used;
            nodes[index as usize].offset = alloc_end;
            self.free.resize(nodes, index, bin, end - alloc_end, shift);
        } else {
            self.free.remove(nodes, index, bin);
        }
        if pad != NIL {
            // `prev` is still the range before the allocation; the pad goes in between.
            nodes[pad as usize] = Node::free(start, offset - start, prev, used);
            match prev {
                NIL => self.first_phys = pad,
                p => nodes[p as usize].next_phys = pad,
            }
            nodes[used as usize].prev_phys = pad;
            self.free.insert(nodes, pad, bin_of((offset - start) >> shift));
        }
        let node = &mut nodes[used as usize];
        node.offset = offset;
        node.size = size;
        let generation = self.next_generation;
        node.set_used(generation, class, alignment.trailing_zeros());
        self.next_generation = (generation + 1) & GENERATION_MASK;
        self.used_bytes += size;
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
    #[inline]
    pub fn free(&mut self, slot: u32, generation: u32) -> Result<UsedRange, Error> {
        let used = self.used(slot, generation)?;
        let shift = self.bin_shift;
        let nodes = &mut self.nodes[..];
        // The node stays marked used until the free lists or `release_slot` below rewrite its tag.
        let (prev, next) = {
            let node = &nodes[slot as usize];
            (node.prev_phys, node.next_phys)
        };
        self.used_bytes -= used.size;
        self.live_per_class[used.class as usize] -= 1;

        let prev_free = prev != NIL && nodes[prev as usize].is_free();
        let next_free = next != NIL && nodes[next as usize].is_free();
        // A free neighbour absorbs the range: `keep` is the free node that survives, `grown` its new size.
        let (keep, grown) = match (prev_free, next_free) {
            (false, false) => {
                self.free.insert(nodes, slot, bin_of(used.size >> shift));
                return Ok(used);
            }
            (true, false) => {
                link(nodes, &mut self.first_phys, &mut self.last_phys, prev, next);
                release_slot(nodes, &mut self.vacant, slot);
                (prev, nodes[prev as usize].size + used.size)
            }
            (false, true) => {
                nodes[next as usize].offset = used.offset;
                link(nodes, &mut self.first_phys, &mut self.last_phys, prev, next);
                release_slot(nodes, &mut self.vacant, slot);
                (next, nodes[next as usize].size + used.size)
            }
            (true, true) => {
                let (next_size, after) = {
                    let n = &nodes[next as usize];
                    (n.size, n.next_phys)
                };
                self.free.remove(nodes, next, bin_of(next_size >> shift));
                link(nodes, &mut self.first_phys, &mut self.last_phys, prev, after);
                release_slot(nodes, &mut self.vacant, slot);
                release_slot(nodes, &mut self.vacant, next);
                (prev, nodes[prev as usize].size + used.size + next_size)
            }
        };
        let bin = bin_of(nodes[keep as usize].size >> shift);
        self.free.resize(nodes, keep, bin, grown, shift);
        Ok(used)
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
        let tail_is_free = self.nodes[last as usize].is_free();
        if !tail_is_free && !self.can_take_slots(1) {
            return Err(Error::TooManyAllocations);
        }
        let bin_shift = bin_units_shift(new_capacity, self.min_granularity.trailing_zeros());
        if bin_shift != self.bin_shift {
            // At `UNITS_LIMIT` granules or more: larger bin units, so every free range moves to the bin of its
            // size in them (a walk of every range, at most once per doubling of the capacity).
            self.bin_shift = bin_shift;
            self.free.clear();
            let mut index = self.first_phys;
            while index != NIL {
                if self.nodes[index as usize].is_free() {
                    self.insert_free(index);
                }
                index = self.nodes[index as usize].next_phys;
            }
        }
        if tail_is_free {
            self.remove_free(last);
            self.nodes[last as usize].size += added;
            self.insert_free(last);
        } else {
            let tail = self.new_slot();
            self.nodes[tail as usize] = Node::free(self.capacity, added, last, NIL);
            self.nodes[last as usize].next_phys = tail;
            self.last_phys = tail;
            self.insert_free(tail);
        }
        self.capacity = new_capacity;
        Ok(())
    }

    /// Size of the largest free range (scans one bin: the highest non-empty one).
    pub fn largest_free(&self) -> u64 {
        if self.free.fl_bitmap == 0 {
            return 0;
        }
        let fl = 63 - self.free.fl_bitmap.leading_zeros() as usize;
        let sl = 31 - self.free.sl_bitmaps[fl].leading_zeros() as usize;
        let mut largest = 0;
        let mut index = self.free.head(fl << SL_BITS | sl);
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
        if self.bin_shift != bin_units_shift(self.capacity, granularity.trailing_zeros()) {
            return fail("bin units do not suit the capacity", self.capacity);
        }

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
        if used_nodes != self.used_count() || used_bytes != self.used_bytes || free_nodes != self.free.count {
            return fail("counters disagree with the ranges", used_bytes);
        }
        if live_per_class != self.live_per_class {
            return fail("per-class counters disagree with the ranges", 0);
        }

        // Bins: every free node exactly once, in the bin of its size, bitmaps matching.
        let mut listed = 0usize;
        for fl in 0..FL_COUNT {
            if ((self.free.fl_bitmap >> fl) & 1 == 1) != (self.free.sl_bitmaps[fl] != 0) {
                return fail("first-level bitmap disagrees with second level", fl as u64);
            }
            for sl in 0..SL_COUNT {
                let bin = fl << SL_BITS | sl;
                let head = self.free.heads[bin];
                if ((self.free.sl_bitmaps[fl] >> sl) & 1 == 1) != (head != NIL) {
                    return fail("second-level bitmap disagrees with the bin", (fl * SL_COUNT + sl) as u64);
                }
                let mut prev_free = NIL;
                let mut index = head;
                while index != NIL {
                    listed += 1;
                    if listed > self.free.count {
                        return fail("free lists hold more nodes than there are free ranges", 0);
                    }
                    let node = &self.nodes[index as usize];
                    if !node.is_free() {
                        return fail("non-free node in a free list", node.offset);
                    }
                    if node.prev_free != prev_free {
                        return fail("free-list back link broken", node.offset);
                    }
                    if bin_of(node.size >> self.bin_shift) != bin {
                        return fail("free range in the wrong bin", node.offset);
                    }
                    prev_free = index;
                    index = node.next_free;
                }
            }
        }
        if listed != self.free.count {
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
        let mut last = 0;
        for units in 1..100_000u64 {
            let bin = bin_of(units);
            assert!(bin >= last, "bin_of must not decrease");
            last = bin;
            // The classic two-level mapping: first level 0 linear below SL_COUNT, then powers of two.
            let (fl, sl) = if units < SL_COUNT as u64 {
                (0, units as usize)
            } else {
                let msb = 63 - units.leading_zeros();
                ((msb - SL_BITS + 1) as usize, (units >> (msb - SL_BITS)) as usize - SL_COUNT)
            };
            assert_eq!((bin >> SL_BITS, sl_of(bin)), (fl, sl), "units {units}");
            // Every range in the fitting bin or above is at least `units` long: the fitting bin's lower bound.
            let fitting = bin_fitting(units).unwrap();
            let (fl, sl) = (fitting >> SL_BITS, sl_of(fitting));
            let lower = if fl == 0 { sl as u64 } else { ((SL_COUNT + sl) as u64) << (fl - 1) };
            assert!(lower >= units, "units {units}: fitting bin starts at {lower}");
        }
        assert_eq!(bin_fitting(u64::MAX), None);
        // The table's last bin holds the largest sizes below twice the limit; a request that would need a bin
        // past it has none.
        assert_eq!(bin_of(2 * UNITS_LIMIT - 1), BIN_SLOTS - 1);
        assert!(bin_fitting(UNITS_LIMIT + 1).is_some_and(|bin| bin < BIN_SLOTS));
        assert_eq!(fitting_in_table(UNITS_LIMIT + 1), bin_fitting(UNITS_LIMIT + 1));
        assert_eq!(bin_fitting(2 * UNITS_LIMIT - 1), Some(BIN_SLOTS));
        assert_eq!(fitting_in_table(2 * UNITS_LIMIT - 1), None);
    }

    #[test]
    fn bin_units_grow_only_past_the_limit() {
        assert_eq!(bin_units_shift(1, 0), 0);
        assert_eq!(bin_units_shift(UNITS_LIMIT - 1, 0), 0);
        assert_eq!(bin_units_shift(UNITS_LIMIT, 0), 1);
        assert_eq!(bin_units_shift((UNITS_LIMIT << 9) - 1, 9), 9, "512-byte granules: under 16 TiB");
        assert_eq!(bin_units_shift(UNITS_LIMIT << 9, 4), 10);
        assert_eq!(bin_units_shift(u64::MAX, 0), 64 - 35);
        for capacity in [UNITS_LIMIT, 3 << 40, u64::MAX] {
            let shift = bin_units_shift(capacity, 0);
            assert!(capacity >> shift < UNITS_LIMIT, "capacity {capacity}");
        }
    }

    #[test]
    fn blocks_past_the_unit_limit_serve_every_size() {
        for capacity in [UNITS_LIMIT + 12_345, (5 << 40) + 1, u64::MAX] {
            let mut t = Tlsf::new(capacity, 1, 1).unwrap();
            // The whole capacity, then all but one byte beside a one-byte range.
            let whole = t.allocate(capacity, 1, Buffer).unwrap();
            assert_eq!((whole.offset, whole.size), (0, capacity));
            t.check().unwrap();
            t.free(whole.slot, whole.generation).unwrap();
            let big = t.allocate(capacity - 1, 1, Buffer).unwrap();
            let one = t.allocate(1, 1, Buffer).unwrap();
            assert_eq!((big.offset, one.offset), (0, capacity - 1));
            t.check().unwrap();
            // Small sizes of one bin unit or less each still get exactly their bytes, and come back.
            t.free(big.slot, big.generation).unwrap();
            let small: Vec<UsedRange> = (1..=64).map(|size| t.allocate(size, 1, Buffer).unwrap()).collect();
            assert_eq!(t.used_bytes(), 1 + (1..=64).sum::<u64>());
            t.check().unwrap();
            for range in small.iter().step_by(2) {
                t.free(range.slot, range.generation).unwrap();
            }
            // A 3-byte request goes into a hole the small ranges left, not into the large free range after them:
            // with 2-byte units the 3-byte hole is its good fit; with units of 256 bytes and more every hole
            // shares one bin, and the last freed (63 bytes) is its head.
            let again = t.allocate(3, 1, Buffer).unwrap();
            let expected = if t.bin_shift == 1 { small[2].offset } else { small[62].offset };
            assert_eq!(again.offset, expected, "capacity {capacity}");
            t.check().unwrap();
        }
    }

    #[test]
    fn past_the_unit_limit_an_exact_hole_is_found() {
        // Bin units of 8 bytes: a hole of any size holds a request of its size, and refuses one byte more.
        let capacity = 4 * UNITS_LIMIT + 7;
        for hole in 1..=20 {
            let mut t = Tlsf::new(capacity, 1, 1).unwrap();
            assert_eq!(t.bin_shift, 3);
            let _front = t.allocate(100, 1, Buffer).unwrap();
            let middle = t.allocate(hole, 1, Buffer).unwrap();
            let _rest = t.allocate(capacity - 100 - hole, 1, Buffer).unwrap();
            t.free(middle.slot, middle.generation).unwrap();
            assert_eq!(
                t.allocate(hole + 1, 1, Buffer),
                Err(Error::OutOfMemory { size: hole + 1, alignment: 1 })
            );
            let taken = t.allocate(hole, 1, Buffer).unwrap();
            assert_eq!(taken.offset, 100, "hole {hole}");
            // The placing entry points see it too.
            t.free(taken.slot, taken.generation).unwrap();
            let placed = t.allocate_where(hole, 1, Buffer, 8, |offset, _| Some(offset)).unwrap().unwrap();
            assert_eq!(placed.offset, 100, "hole {hole}, allocate_where");
            t.free(placed.slot, placed.generation).unwrap();
            let placed =
                t.allocate_good_fit_where(hole, 1, Buffer, |offset, _| Some(offset)).unwrap().unwrap();
            assert_eq!(placed.offset, 100, "hole {hole}, allocate_good_fit_where");
            t.check().unwrap();
        }
    }

    #[test]
    fn past_the_unit_limit_a_hole_behind_a_smaller_one_in_its_bin_is_found() {
        // Bin units of 8 bytes: an 8-byte hole and a larger one share a bin, the 8-byte one at its head (freed
        // last). A request the size of the larger hole is no good fit for the head and has no guaranteed bin: the
        // scan must walk on to the larger hole.
        let capacity = 4 * UNITS_LIMIT + 7;
        for hole in 9..16 {
            let mut t = Tlsf::new(capacity, 1, 1).unwrap();
            let _front = t.allocate(100, 1, Buffer).unwrap();
            let larger = t.allocate(hole, 1, Buffer).unwrap();
            let _spacer = t.allocate(50, 1, Buffer).unwrap();
            let smaller = t.allocate(8, 1, Buffer).unwrap();
            let _rest = t.allocate(capacity - 158 - hole, 1, Buffer).unwrap();
            t.free(larger.slot, larger.generation).unwrap();
            t.free(smaller.slot, smaller.generation).unwrap();
            assert_eq!(
                t.allocate_with_scan(hole, 1, Buffer, false),
                Err(Error::OutOfMemory { size: hole, alignment: 1 })
            );
            assert_eq!(t.allocate(hole, 1, Buffer).unwrap().offset, 100, "hole {hole}");
            t.check().unwrap();
        }
    }

    #[test]
    fn grow_past_the_unit_limit_after_a_used_range_adds_a_tail() {
        let capacity = UNITS_LIMIT - 4096;
        let mut t = Tlsf::new(capacity, 1, 1).unwrap();
        let first = t.allocate(4096, 1, Buffer).unwrap();
        let _rest = t.allocate(capacity - 4096, 1, Buffer).unwrap();
        t.free(first.slot, first.generation).unwrap();
        t.grow(2 * UNITS_LIMIT).unwrap();
        assert_eq!(t.bin_shift, 2);
        t.check().unwrap();
        assert_eq!(t.allocate(4096, 1, Buffer).unwrap().offset, 0);
        assert_eq!(t.allocate(UNITS_LIMIT + 4096, 1, Buffer).unwrap().offset, capacity);
        t.check().unwrap();
    }

    #[test]
    fn grow_past_the_unit_limit_rebins_the_free_ranges() {
        let mut t = Tlsf::new(UNITS_LIMIT - 4096, 1, 1).unwrap();
        let kept: Vec<UsedRange> = (0..8).map(|_| t.allocate(1000, 1, Buffer).unwrap()).collect();
        for range in kept.iter().step_by(2) {
            t.free(range.slot, range.generation).unwrap();
        }
        assert_eq!(t.bin_shift, 0);
        t.grow(4 * UNITS_LIMIT).unwrap();
        assert_eq!(t.bin_shift, 3);
        t.check().unwrap();
        // The holes left by the freed ranges are still found, and the grown tail serves a range past the limit.
        let hole = t.allocate(1000, 1, Buffer).unwrap();
        assert!(hole.offset < 8000);
        let tail = t.allocate(3 * UNITS_LIMIT, 1, Buffer).unwrap();
        t.check().unwrap();
        t.free(tail.slot, tail.generation).unwrap();
        t.free(hole.slot, hole.generation).unwrap();
        for range in kept.iter().skip(1).step_by(2) {
            t.free(range.slot, range.generation).unwrap();
        }
        t.check().unwrap();
        assert_eq!((t.used_bytes(), t.free_count(), t.largest_free()), (0, 1, 4 * UNITS_LIMIT));
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
    fn metadata_counts_the_bin_heads() {
        // The heads (a u32 per bin) are boxed; the box's pointer alone would count 8 bytes.
        let tlsf = Tlsf::new(1 << 20, 16, 1).unwrap();
        assert!(tlsf.metadata_bytes() >= BIN_SLOTS * core::mem::size_of::<u32>());
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
