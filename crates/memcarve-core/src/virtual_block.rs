//! [`VirtualBlock`]: the public, device-free TLSF range allocator, with owner-checked handles and optional
//! per-allocation user data.

use alloc::vec::Vec;

use crate::class::ResourceClass;
use crate::error::Error;
use crate::handle::{Allocation, Handle, next_owner_tag};
use crate::stats::Stats;
use crate::tlsf::{Tlsf, UsedRange};

/// How a [`VirtualBlock`] is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualBlockConfig {
    /// Bytes (or any unit) managed: offsets lie in `[0, capacity)`.
    pub capacity: u64,
    /// Every allocation is rounded up to a multiple of this and starts on a multiple of it (a power of two).
    /// Larger values make the allocator slightly faster and coarser. Default 1. A block of `2^35` granules or
    /// more (32 GiB at the default) sorts its free ranges by size in larger units, so that its first choice for a
    /// small request is less exact (at 64 GiB, sizes 4 bytes apart share a bin); every request is still served
    /// where a range holds it.
    pub min_granularity: u64,
    /// Vulkan's `bufferImageGranularity`: conflicting [`ResourceClass`]es never share a page of this size (a
    /// power of two; 1, the default, disables the rule).
    pub class_granularity: u64,
}

impl VirtualBlockConfig {
    /// A configuration for `capacity` with a granularity of 1 and no class rule.
    pub const fn new(capacity: u64) -> VirtualBlockConfig {
        VirtualBlockConfig { capacity, min_granularity: 1, class_granularity: 1 }
    }

    /// Sets [`VirtualBlockConfig::min_granularity`].
    pub const fn with_min_granularity(mut self, min_granularity: u64) -> VirtualBlockConfig {
        self.min_granularity = min_granularity;
        self
    }

    /// Sets [`VirtualBlockConfig::class_granularity`].
    pub const fn with_class_granularity(mut self, class_granularity: u64) -> VirtualBlockConfig {
        self.class_granularity = class_granularity;
        self
    }
}

/// One live allocation, as [`VirtualBlock::get`] and [`VirtualBlock::iter`] report it.
#[derive(Debug, PartialEq, Eq)]
pub struct AllocationInfo<'a, T> {
    /// The handle's raw form ([`Handle::to_raw`]).
    pub raw_handle: u64,
    /// Start of the range.
    pub offset: u64,
    /// Length of the range, rounded up to the minimum granularity.
    pub size: u64,
    /// The class it was allocated for.
    pub class: ResourceClass,
    /// Its user data, if any was attached.
    pub user_data: Option<&'a T>,
}

/// A freed allocation's range and user data ([`VirtualBlock::free_range`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freed<T> {
    /// Start of the range it held.
    pub offset: u64,
    /// Length of the range, rounded up to the minimum granularity.
    pub size: u64,
    /// Its user data, if any was attached.
    pub user_data: Option<T>,
}

/// A device-free range allocator over `[0, capacity)`: O(1) two-level segregated fit, resource classes,
/// move-only handles that catch double frees and foreign handles, and optional user data of type `T`.
///
/// Metadata grows with the number of ranges and is reused: in a steady state allocate and free do not touch
/// the heap.
#[derive(Debug)]
pub struct VirtualBlock<T = ()> {
    tlsf: Tlsf,
    owner: u16,
    /// User data by slot; grows with the TLSF slab, never shrinks.
    user_data: Vec<Option<T>>,
}

impl<T> VirtualBlock<T> {
    /// Zero-sized user data (such as the default `()`) carries no information, so it is not stored and the hot
    /// path never touches the user-data array: [`VirtualBlock::free`] and [`VirtualBlock::get`] report `None`.
    const STORES_USER_DATA: bool = core::mem::size_of::<T>() != 0;

    /// A block of `capacity` with the default configuration ([`VirtualBlockConfig::new`]).
    pub fn new(capacity: u64) -> Result<VirtualBlock<T>, Error> {
        VirtualBlock::with_config(VirtualBlockConfig::new(capacity))
    }

    /// A block set up by `config`; an invalid configuration is an [`Error::InvalidConfig`].
    pub fn with_config(config: VirtualBlockConfig) -> Result<VirtualBlock<T>, Error> {
        let tlsf = Tlsf::new(config.capacity, config.min_granularity, config.class_granularity)?;
        let mut user_data = Vec::new();
        if Self::STORES_USER_DATA {
            user_data.reserve(crate::tlsf::FIRST_SLOTS);
            user_data.resize_with(tlsf.slot_count(), || None);
        }
        Ok(VirtualBlock { tlsf, owner: next_owner_tag(), user_data })
    }

    /// Whether `handle` was made by this block (live or not): for callers that keep several blocks and must
    /// send each handle to the one that made it.
    pub fn owns(&self, handle: &Handle) -> bool {
        handle.owner() == self.owner
    }

    /// The current capacity.
    pub fn capacity(&self) -> u64 {
        self.tlsf.capacity()
    }

    /// The configuration this block runs with (capacity as it is now, after any [`VirtualBlock::grow`]).
    pub fn config(&self) -> VirtualBlockConfig {
        VirtualBlockConfig {
            capacity: self.tlsf.capacity(),
            min_granularity: self.tlsf.min_granularity(),
            class_granularity: self.tlsf.class_granularity(),
        }
    }

    /// Bytes not in use (O(1)): an upper bound on what a request could still get.
    pub fn free_bytes(&self) -> u64 {
        self.tlsf.capacity() - self.tlsf.used_bytes()
    }

    /// Whether no allocation is live.
    pub fn is_empty(&self) -> bool {
        self.tlsf.used_count() == 0
    }

    /// Allocates `size` bytes aligned to `alignment` (a power of two) for a resource of `class`.
    #[inline]
    pub fn allocate(&mut self, size: u64, alignment: u64, class: ResourceClass) -> Result<Allocation, Error> {
        self.allocate_inner(size, alignment, class, None)
    }

    /// As [`VirtualBlock::allocate`], attaching `user_data` to the allocation (not stored when `T` is zero-sized).
    pub fn allocate_with(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        user_data: T,
    ) -> Result<Allocation, Error> {
        self.allocate_inner(size, alignment, class, Some(user_data))
    }

    /// As [`VirtualBlock::allocate`], but O(1) in every case: when the bin search finds no range it fails
    /// without scanning for a range the bins round past. For callers with other blocks to try before a scan:
    /// [`Error::OutOfMemory`] here does not prove that no range fits.
    pub fn allocate_quick(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
    ) -> Result<Allocation, Error> {
        self.allocate_inner_scan(size, alignment, class, None, false)
    }

    /// Allocates where the caller prefers: `place(offset, size)` is shown up to `limit` free ranges, smallest
    /// first, and answers where in each the request should start, if anywhere; the first answer that holds the
    /// request is taken (O(limit)). `Ok(None)` when none was: allocate as usual then.
    pub fn allocate_where(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        limit: usize,
        place: impl FnMut(u64, u64) -> Option<u64>,
    ) -> Result<Option<Allocation>, Error> {
        let range = self.tlsf.allocate_where(size, alignment, class, limit, place)?;
        Ok(range.map(|range| self.adopt(range, size, None)))
    }

    /// Like [`VirtualBlock::allocate_where`], but shows `place` only the free range [`VirtualBlock::allocate`]
    /// would take (O(1)); `place` picks the position inside it. `Ok(None)` when `place` declines or no range
    /// is found that way (the near-out-of-memory scan of `allocate` is not made).
    pub fn allocate_good_fit_where(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        place: impl FnOnce(u64, u64) -> Option<u64>,
    ) -> Result<Option<Allocation>, Error> {
        let range = self.tlsf.allocate_good_fit_where(size, alignment, class, place)?;
        Ok(range.map(|range| self.adopt(range, size, None)))
    }

    /// Like [`VirtualBlock::allocate_where`], but shows `place` only the last free range by address, and only
    /// when it reaches the end of the capacity: O(1). `Ok(None)` when `place` declines or the end is in use.
    pub fn allocate_at_end_where(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        place: impl FnOnce(u64, u64) -> Option<u64>,
    ) -> Result<Option<Allocation>, Error> {
        let range = self.tlsf.allocate_at_end_where(size, alignment, class, place)?;
        Ok(range.map(|range| self.adopt(range, size, None)))
    }

    #[inline]
    fn allocate_inner(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        user_data: Option<T>,
    ) -> Result<Allocation, Error> {
        self.allocate_inner_scan(size, alignment, class, user_data, true)
    }

    #[inline]
    fn allocate_inner_scan(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
        user_data: Option<T>,
        scan: bool,
    ) -> Result<Allocation, Error> {
        let range = if scan {
            self.tlsf.allocate(size, alignment, class)?
        } else {
            self.tlsf.allocate_with_scan(size, alignment, class, false)?
        };
        Ok(self.adopt(range, size, user_data))
    }

    /// Stores the user data of a range just allocated and makes its handle.
    #[inline]
    fn adopt(&mut self, range: UsedRange, size: u64, user_data: Option<T>) -> Allocation {
        if Self::STORES_USER_DATA {
            if self.user_data.len() < self.tlsf.slot_count() {
                self.user_data.resize_with(self.tlsf.slot_count(), || None);
            }
            self.user_data[range.slot as usize] = user_data;
        }
        Allocation {
            handle: Handle::new(self.owner, range.slot, range.generation),
            offset: range.offset,
            size,
        }
    }

    fn resolve(&self, handle: &Handle) -> Result<UsedRange, Error> {
        if handle.owner() != self.owner {
            return Err(Error::ForeignHandle);
        }
        self.tlsf.used(handle.slot(), handle.generation())
    }

    /// Frees an allocation (an [`Allocation`] or its [`Handle`]) and returns its user data. A double free, a
    /// stale handle or another block's handle is an error and changes nothing.
    #[inline]
    pub fn free(&mut self, handle: impl Into<Handle>) -> Result<Option<T>, Error> {
        Ok(self.free_range(handle)?.user_data)
    }

    /// Like [`VirtualBlock::free`], and also says where the allocation was: for callers that keep per-range
    /// state of their own (pages, say), without looking the handle up twice.
    #[inline]
    pub fn free_range(&mut self, handle: impl Into<Handle>) -> Result<Freed<T>, Error> {
        let handle = handle.into();
        if handle.owner() != self.owner {
            return Err(Error::ForeignHandle);
        }
        let range = self.tlsf.free(handle.slot(), handle.generation())?;
        let user_data =
            if Self::STORES_USER_DATA { self.user_data[range.slot as usize].take() } else { None };
        Ok(Freed { offset: range.offset, size: range.size, user_data })
    }

    /// Looks up a live allocation.
    pub fn get(&self, handle: &Handle) -> Result<AllocationInfo<'_, T>, Error> {
        let range = self.resolve(handle)?;
        Ok(self.info(range))
    }

    /// Replaces an allocation's user data, returning the previous value.
    pub fn set_user_data(&mut self, handle: &Handle, user_data: T) -> Result<Option<T>, Error> {
        let range = self.resolve(handle)?;
        Ok(if Self::STORES_USER_DATA { self.user_data[range.slot as usize].replace(user_data) } else { None })
    }

    fn info(&self, range: UsedRange) -> AllocationInfo<'_, T> {
        AllocationInfo {
            raw_handle: Handle::new(self.owner, range.slot, range.generation).to_raw(),
            offset: range.offset,
            size: range.size,
            class: range.class,
            user_data: if Self::STORES_USER_DATA {
                self.user_data[range.slot as usize].as_ref()
            } else {
                None
            },
        }
    }

    /// Live allocations in offset order.
    pub fn iter(&self) -> impl Iterator<Item = AllocationInfo<'_, T>> + '_ {
        self.tlsf.used_ranges().map(|range| self.info(range))
    }

    /// A snapshot of usage. O(1) but for the largest free range, which scans one bin.
    pub fn stats(&self) -> Stats {
        let used_bytes = self.tlsf.used_bytes();
        Stats {
            capacity: self.tlsf.capacity(),
            used_bytes,
            free_bytes: self.tlsf.capacity() - used_bytes,
            allocation_count: self.tlsf.used_count(),
            free_range_count: self.tlsf.free_count(),
            largest_free_range: self.tlsf.largest_free(),
        }
    }

    /// Frees everything at once; every handle given out before becomes stale. User data is dropped.
    pub fn clear(&mut self) {
        self.tlsf.reset_ranges();
        self.user_data.iter_mut().for_each(|slot| *slot = None);
    }

    /// Extends the capacity to `new_capacity` (the underlying memory grew); live allocations keep their offsets.
    /// Shrinking is an [`Error::InvalidConfig`].
    pub fn grow(&mut self, new_capacity: u64) -> Result<(), Error> {
        self.tlsf.grow(new_capacity)?;
        if Self::STORES_USER_DATA && self.user_data.len() < self.tlsf.slot_count() {
            self.user_data.resize_with(self.tlsf.slot_count(), || None);
        }
        Ok(())
    }

    /// Every range, free or used, in offset order as `(offset, size, used)`: for reports and visualisation.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        self.tlsf.ranges()
    }

    /// Heap bytes this block holds for its bookkeeping (slab, bins and user data slots).
    pub fn metadata_bytes(&self) -> usize {
        self.tlsf.metadata_bytes() + self.user_data.capacity() * core::mem::size_of::<Option<T>>()
    }

    /// Checks every invariant of the block (O(n)); see [`Violation`](crate::Violation).
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), crate::check::Violation> {
        self.tlsf.check()?;
        if Self::STORES_USER_DATA && self.user_data.len() < self.tlsf.slot_count() {
            return Err(crate::check::Violation { what: "user data slots missing", offset: 0 });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceClass::Buffer;

    #[test]
    fn free_range_says_where_the_allocation_was() {
        let mut block: VirtualBlock<u32> =
            VirtualBlock::with_config(VirtualBlockConfig::new(1 << 20).with_min_granularity(256)).unwrap();
        let a = block.allocate(1000, 1, Buffer).unwrap();
        let b = block.allocate(100, 4096, Buffer).unwrap();
        let (a_offset, b_offset) = (a.offset, b.offset);
        let raw = b.handle.to_raw();
        block.set_user_data(&b.handle, 7).unwrap();
        let freed = block.free_range(b.handle).unwrap();
        assert_eq!(freed, Freed { offset: b_offset, size: 256, user_data: Some(7) }, "size rounded to 256");
        assert_eq!(block.free_range(Handle::from_raw(raw)).unwrap_err(), Error::StaleHandle);
        let freed = block.free_range(a.handle).unwrap();
        assert_eq!((freed.offset, freed.size, freed.user_data), (a_offset, 1024, None));
        assert!(block.is_empty());
        block.check().unwrap();
    }

    #[test]
    fn bad_input_is_a_typed_error_and_changes_nothing() {
        let mut block = VirtualBlock::<()>::new(1 << 20).unwrap();
        let keep = block.allocate(100, 1, Buffer).unwrap();
        let before = block.stats();
        assert_eq!(block.allocate(0, 1, Buffer), Err(Error::ZeroSize));
        assert_eq!(block.allocate(1, 3, Buffer), Err(Error::InvalidAlignment { alignment: 3 }));
        assert_eq!(block.allocate(1, 0, Buffer), Err(Error::InvalidAlignment { alignment: 0 }));
        assert_eq!(
            block.allocate((1 << 20) + 1, 1, Buffer),
            Err(Error::SizeTooLarge { size: (1 << 20) + 1, capacity: 1 << 20 })
        );
        assert_eq!(
            block.allocate(1, 1 << 21, Buffer),
            Err(Error::AlignmentTooLarge { alignment: 1 << 21, capacity: 1 << 20 })
        );
        assert_eq!(
            block.allocate(1 << 20, 1, Buffer),
            Err(Error::OutOfMemory { size: 1 << 20, alignment: 1 })
        );
        assert_eq!(block.stats(), before);
        block.check().unwrap();
        block.free(keep).unwrap();
    }

    #[test]
    fn allocate_where_takes_the_callers_position_or_nothing() {
        let mut block = VirtualBlock::<()>::new(1 << 16).unwrap();
        let low = block.allocate(1024, 1, Buffer).unwrap();
        let fence = block.allocate(1024, 1, Buffer).unwrap();
        block.free(low).unwrap();
        // Free ranges now: [0, 1024) and [2048, 65536). The caller wants the second half of the first one.
        let mut shown = Vec::new();
        let mut want_back_half = |offset: u64, size: u64| {
            shown.push((offset, size));
            (size == 1024).then_some(offset + 512)
        };
        let placed = block.allocate_where(512, 256, Buffer, 8, &mut want_back_half).unwrap().unwrap();
        assert_eq!(placed.offset, 512);
        assert_eq!(shown, [(0, 1024)], "the smaller range comes first and is taken");
        block.check().unwrap();
        assert_eq!(
            block.ranges().filter(|&(_, _, used)| !used).count(),
            2,
            "the front pad [0, 512) stays free"
        );
        // Positions that do not hold the request (misaligned, past the end, before the range) are not taken.
        let before = block.stats();
        for bad in
            [|o: u64, _| Some(o + 1), |o: u64, s: u64| Some(o + s - 100), |o: u64, _| o.checked_sub(512)]
        {
            assert_eq!(block.allocate_where(256, 256, Buffer, 8, bad).unwrap(), None);
        }
        // Nothing is shown beyond the limit, and bad input is still a typed error.
        assert_eq!(block.allocate_where(256, 1, Buffer, 0, |o, _| Some(o)).unwrap(), None);
        assert_eq!(block.allocate_where(0, 1, Buffer, 8, |o, _| Some(o)), Err(Error::ZeroSize));
        assert_eq!(block.stats(), before);
        block.check().unwrap();
        block.free(placed.handle).unwrap();
        block.free(fence).unwrap();
        assert_eq!(block.stats().largest_free_range, 1 << 16);
    }

    #[test]
    fn allocate_good_fit_where_shows_the_range_allocate_would_take() {
        let mut block = VirtualBlock::<()>::new(1 << 16).unwrap();
        let a = block.allocate(4096, 1, Buffer).unwrap();
        let fence = block.allocate(1024, 1, Buffer).unwrap();
        block.free(a).unwrap();
        // Free: [0, 4096) and [5120, 65536). A 2 KiB request's good fit is the first; the caller takes its end.
        let mut shown = None;
        let placed = block
            .allocate_good_fit_where(2048, 512, Buffer, |offset, size| {
                shown = Some((offset, size));
                Some(offset + size - 2048)
            })
            .unwrap()
            .unwrap();
        assert_eq!((placed.offset, shown), (2048, Some((0, 4096))));
        block.check().unwrap();
        // Declined, or a position that does not hold the request: nothing taken.
        let before = block.stats();
        assert_eq!(block.allocate_good_fit_where(1024, 1, Buffer, |_, _| None).unwrap(), None);
        assert_eq!(block.allocate_good_fit_where(1024, 1, Buffer, |o, s| Some(o + s - 512)).unwrap(), None);
        assert_eq!(block.allocate_good_fit_where(1024, 256, Buffer, |o, _| Some(o + 1)).unwrap(), None);
        assert_eq!(
            block.allocate_good_fit_where(1 << 17, 1, Buffer, |o, _| Some(o)).map(|_| ()),
            Err(Error::SizeTooLarge { size: 1 << 17, capacity: 1 << 16 })
        );
        assert_eq!(block.stats(), before);
        // The same range `allocate` takes (freeing restores the same free ranges).
        let by_where = block.allocate_good_fit_where(1024, 1, Buffer, |o, _| Some(o)).unwrap().unwrap();
        block.free(by_where.handle).unwrap();
        let by_allocate = block.allocate(1024, 1, Buffer).unwrap();
        assert_eq!(by_allocate.offset, by_where.offset);
        for handle in [placed.handle, fence.handle, by_allocate.handle] {
            block.free(handle).unwrap();
        }
        block.check().unwrap();
    }

    #[test]
    fn allocate_at_end_where_shows_only_the_last_free_range() {
        let mut block = VirtualBlock::<()>::new(1 << 16).unwrap();
        let low = block.allocate(1024, 1, Buffer).unwrap();
        let fence = block.allocate(1024, 1, Buffer).unwrap();
        block.free(low).unwrap();
        // Free ranges: [0, 1024) and [2048, 65536); only the second reaches the end.
        let mut shown = None;
        let placed = block
            .allocate_at_end_where(4096, 4096, Buffer, |offset, size| {
                shown = Some((offset, size));
                Some(offset.max(8192))
            })
            .unwrap()
            .unwrap();
        assert_eq!((placed.offset, shown), (8192, Some((2048, (1 << 16) - 2048))));
        block.check().unwrap();
        // A position that does not hold the request, or a declined range, takes nothing.
        let before = block.stats();
        assert_eq!(block.allocate_at_end_where(1024, 1, Buffer, |o, s| Some(o + s - 512)).unwrap(), None);
        assert_eq!(block.allocate_at_end_where(1024, 1, Buffer, |_, _| None).unwrap(), None);
        assert_eq!(block.allocate_at_end_where(0, 1, Buffer, |o, _| Some(o)), Err(Error::ZeroSize));
        assert_eq!(block.stats(), before);
        // With the end in use, nothing is shown.
        let tail = block.allocate_at_end_where(1024, 1, Buffer, |o, s| Some(o + s - 1024)).unwrap().unwrap();
        assert_eq!(tail.offset, (1 << 16) - 1024);
        assert_eq!(block.allocate_at_end_where(512, 1, Buffer, |o, _| Some(o)).unwrap(), None);
        for handle in [placed.handle, fence.handle, tail.handle] {
            block.free(handle).unwrap();
        }
        block.check().unwrap();
        assert_eq!(block.stats().largest_free_range, 1 << 16);
    }

    #[test]
    fn handles_are_checked_for_owner_and_generation() {
        let mut a = VirtualBlock::<()>::new(4096).unwrap();
        let mut b = VirtualBlock::<()>::new(4096).unwrap();
        let from_a = a.allocate(64, 1, Buffer).unwrap();
        let raw = from_a.handle.to_raw();
        // b has the same slot layout but a different owner.
        let from_b = b.allocate(64, 1, Buffer).unwrap();
        assert_eq!(b.free(Handle::from_raw(raw)), Err(Error::ForeignHandle));
        assert!(a.owns(&from_a.handle) && !b.owns(&from_a.handle) && b.owns(&from_b.handle));
        assert_eq!(a.free(from_a), Ok(None));
        assert!(a.owns(&Handle::from_raw(raw)), "a freed handle is still the block's own");
        assert_eq!(a.free(Handle::from_raw(raw)), Err(Error::StaleHandle), "double free");
        assert_eq!(a.get(&Handle::from_raw(raw)).map(|i| i.offset), Err(Error::StaleHandle));
        assert_eq!(a.free(Handle::from_raw(u64::MAX)), Err(Error::ForeignHandle));
        b.free(from_b).unwrap();
        a.check().unwrap();
        b.check().unwrap();
    }

    #[test]
    fn user_data_travels_with_the_allocation() {
        let mut block = VirtualBlock::<&'static str>::new(4096).unwrap();
        let a = block.allocate_with(10, 1, Buffer, "vertices").unwrap();
        let b = block.allocate(10, 1, Buffer).unwrap();
        assert_eq!(block.get(&a.handle).unwrap().user_data, Some(&"vertices"));
        assert_eq!(block.set_user_data(&b.handle, "indices"), Ok(None));
        let names: Vec<_> = block.iter().map(|i| *i.user_data.unwrap()).collect();
        assert_eq!(names, ["vertices", "indices"]);
        assert_eq!(block.free(a), Ok(Some("vertices")));
        assert_eq!(block.free(b), Ok(Some("indices")));
    }

    #[test]
    fn clear_frees_everything_and_invalidates_handles() {
        let mut block = VirtualBlock::<u32>::new(1 << 16).unwrap();
        let handles: Vec<_> = (0..20).map(|i| block.allocate_with(100, 16, Buffer, i).unwrap()).collect();
        block.clear();
        block.check().unwrap();
        assert!(block.is_empty());
        assert_eq!(block.stats().largest_free_range, 1 << 16);
        for a in handles {
            assert_eq!(block.free(a), Err(Error::StaleHandle));
        }
    }

    #[test]
    fn grow_keeps_live_allocations() {
        let mut block = VirtualBlock::<()>::new(1000).unwrap();
        let a = block.allocate(1000, 1, Buffer).unwrap();
        block.grow(3000).unwrap();
        let b = block.allocate(2000, 1, Buffer).unwrap();
        assert_eq!((a.offset, b.offset), (0, 1000));
        assert_eq!(block.config().capacity, 3000);
        block.check().unwrap();
        block.free(a).unwrap();
        block.free(b).unwrap();
    }

    #[test]
    fn invalid_configs_are_rejected() {
        assert!(matches!(VirtualBlock::<()>::new(0), Err(Error::InvalidConfig { .. })));
        let bad_gran = VirtualBlockConfig::new(100).with_min_granularity(3);
        assert!(matches!(VirtualBlock::<()>::with_config(bad_gran), Err(Error::InvalidConfig { .. })));
        let bad_class = VirtualBlockConfig::new(100).with_class_granularity(0);
        assert!(matches!(VirtualBlock::<()>::with_config(bad_class), Err(Error::InvalidConfig { .. })));
    }
}
