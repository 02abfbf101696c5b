//! Linear allocators for transient memory, where lifetimes are ordered and bookkeeping must be minimal:
//! [`LinearAllocator`] is a stack (bump forward, free the newest first or everything at once) and
//! [`RingAllocator`] a FIFO ring (free the oldest first, wrap around at the end). Both hand out handles that
//! carry a 48-bit sequence number, so a double free, a stale handle and a free out of order are errors.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::error::{Error, validate_request};
use crate::handle::{Allocation, Handle, next_owner_tag};
use crate::stats::Stats;

#[inline]
fn align_up(value: u64, alignment: u64) -> Option<u64> {
    Some(value.checked_add(alignment - 1)? & !(alignment - 1))
}

/// Where a live entry stands relative to the one that must be freed next.
fn classify(sequence: u64, expected: Option<u64>, next_sequence: u64, live: impl Fn(u64) -> bool) -> Error {
    match expected {
        _ if sequence >= next_sequence => Error::ForeignHandle,
        Some(_) if live(sequence) => Error::OutOfOrderFree,
        _ => Error::StaleHandle,
    }
}

#[derive(Debug, Clone, Copy)]
struct StackEntry {
    sequence: u64,
    /// Top of the stack before this entry, restored when it is freed.
    previous_top: u64,
}

/// A stack allocator over `[0, capacity)`: allocations bump a top pointer; only the newest live allocation
/// can be freed ([`Error::OutOfOrderFree`] otherwise), or all at once with [`LinearAllocator::free_all`].
#[derive(Debug)]
pub struct LinearAllocator {
    capacity: u64,
    top: u64,
    owner: u16,
    next_sequence: u64,
    entries: Vec<StackEntry>,
}

impl LinearAllocator {
    /// A stack over `[0, capacity)`.
    pub fn new(capacity: u64) -> Result<LinearAllocator, Error> {
        if capacity == 0 {
            return Err(Error::InvalidConfig { reason: "capacity is zero" });
        }
        Ok(LinearAllocator {
            capacity,
            top: 0,
            owner: next_owner_tag(),
            next_sequence: 0,
            entries: Vec::new(),
        })
    }

    /// Bytes managed.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Allocates `size` bytes at `alignment` on top of the stack.
    pub fn allocate(&mut self, size: u64, alignment: u64) -> Result<Allocation, Error> {
        validate_request(size, alignment, self.capacity)?;
        let oom = Error::OutOfMemory { size, alignment };
        let offset = align_up(self.top, alignment).ok_or(oom)?;
        let end = offset.checked_add(size).ok_or(oom)?;
        if end > self.capacity {
            return Err(oom);
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.entries.push(StackEntry { sequence, previous_top: self.top });
        self.top = end;
        Ok(Allocation { handle: Handle::from_sequence(self.owner, sequence), offset, size })
    }

    /// Frees the newest live allocation; anything else is an error and changes nothing.
    pub fn free(&mut self, handle: impl Into<Handle>) -> Result<(), Error> {
        let handle = handle.into();
        if handle.owner() != self.owner {
            return Err(Error::ForeignHandle);
        }
        let sequence = handle.sequence();
        match self.entries.last() {
            Some(top) if top.sequence == sequence => {
                self.top = top.previous_top;
                self.entries.pop();
                Ok(())
            }
            top => Err(classify(sequence, top.map(|e| e.sequence), self.next_sequence, |s| self.holds(s))),
        }
    }

    /// Frees everything; every handle given out before becomes stale.
    pub fn free_all(&mut self) {
        self.entries.clear();
        self.top = 0;
    }

    /// Whether `handle` names a live allocation of this stack (O(log n)).
    pub fn is_live(&self, handle: &Handle) -> bool {
        handle.owner() == self.owner && self.holds(handle.sequence())
    }

    /// Whether the entry of `sequence` is live (entries are kept in sequence order).
    fn holds(&self, sequence: u64) -> bool {
        self.entries.binary_search_by_key(&sequence, |entry| entry.sequence).is_ok()
    }

    /// A snapshot of usage: alignment padding between allocations counts as used.
    pub fn stats(&self) -> Stats {
        let free = self.capacity - self.top;
        Stats {
            capacity: self.capacity,
            used_bytes: self.top,
            free_bytes: free,
            allocation_count: self.entries.len(),
            free_range_count: usize::from(free > 0),
            largest_free_range: free,
        }
    }

    /// Checks the stack's invariants (O(n)).
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), crate::check::Violation> {
        let fail = |what, offset| Err(crate::check::Violation { what, offset });
        if self.top > self.capacity {
            return fail("top beyond capacity", self.top);
        }
        let mut previous: Option<StackEntry> = None;
        for entry in &self.entries {
            if let Some(p) = previous
                && (p.sequence >= entry.sequence || p.previous_top > entry.previous_top)
            {
                return fail("stack entries out of order", entry.previous_top);
            }
            if entry.sequence >= self.next_sequence || entry.previous_top > self.top {
                return fail("stack entry beyond the top", entry.previous_top);
            }
            previous = Some(*entry);
        }
        if self.entries.is_empty() && self.top != 0 {
            return fail("empty stack with a non-zero top", self.top);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
struct RingEntry {
    sequence: u64,
    /// Where the space this entry holds begins: the head before it was allocated (any skipped end-of-ring
    /// space and alignment padding belong to the entry).
    begin: u64,
    /// One past its last byte (read by the checker; the head already records the newest entry's end).
    #[cfg_attr(not(any(test, feature = "check")), allow(dead_code))]
    end: u64,
}

/// A ring over `[0, capacity)`: allocations advance a head and wrap to the start when the end is reached;
/// frees must come in allocation order (oldest first), else [`Error::OutOfOrderFree`]. An allocation never
/// straddles the end of the ring.
#[derive(Debug)]
pub struct RingAllocator {
    capacity: u64,
    head: u64,
    owner: u16,
    next_sequence: u64,
    entries: VecDeque<RingEntry>,
}

impl RingAllocator {
    /// A ring over `[0, capacity)`.
    pub fn new(capacity: u64) -> Result<RingAllocator, Error> {
        if capacity == 0 {
            return Err(Error::InvalidConfig { reason: "capacity is zero" });
        }
        Ok(RingAllocator {
            capacity,
            head: 0,
            owner: next_owner_tag(),
            next_sequence: 0,
            entries: VecDeque::new(),
        })
    }

    /// Bytes managed.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Start of the oldest live entry's space, or None when the ring is empty.
    fn tail(&self) -> Option<u64> {
        self.entries.front().map(|e| e.begin)
    }

    /// Allocates `size` bytes at `alignment` at the head, wrapping to offset 0 when the end has no room.
    pub fn allocate(&mut self, size: u64, alignment: u64) -> Result<Allocation, Error> {
        validate_request(size, alignment, self.capacity)?;
        let fits_at = |start: u64, limit: u64| {
            let offset = align_up(start, alignment)?;
            let end = offset.checked_add(size)?;
            (end <= limit).then_some((offset, end))
        };
        let placed = match self.tail() {
            // Empty: start over at 0 so the whole ring is one free range.
            None => fits_at(0, self.capacity),
            // Not wrapped: free space is [head, capacity) and then [0, tail).
            Some(tail) if self.head > tail => fits_at(self.head, self.capacity).or_else(|| fits_at(0, tail)),
            // Wrapped (or full when head == tail): free space is [head, tail).
            Some(tail) => fits_at(self.head, tail),
        };
        let (offset, end) = placed.ok_or(Error::OutOfMemory { size, alignment })?;
        let begin = if self.entries.is_empty() { 0 } else { self.head };
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.entries.push_back(RingEntry { sequence, begin, end });
        self.head = end;
        Ok(Allocation { handle: Handle::from_sequence(self.owner, sequence), offset, size })
    }

    /// Frees the oldest live allocation; anything else is an error and changes nothing.
    pub fn free(&mut self, handle: impl Into<Handle>) -> Result<(), Error> {
        let handle = handle.into();
        if handle.owner() != self.owner {
            return Err(Error::ForeignHandle);
        }
        let sequence = handle.sequence();
        match self.entries.front() {
            Some(oldest) if oldest.sequence == sequence => {
                self.entries.pop_front();
                if self.entries.is_empty() {
                    self.head = 0;
                }
                Ok(())
            }
            oldest => {
                Err(classify(sequence, oldest.map(|e| e.sequence), self.next_sequence, |s| self.holds(s)))
            }
        }
    }

    /// Frees everything; every handle given out before becomes stale.
    pub fn free_all(&mut self) {
        self.entries.clear();
        self.head = 0;
    }

    /// Whether `handle` names a live allocation of this ring (O(log n)).
    pub fn is_live(&self, handle: &Handle) -> bool {
        handle.owner() == self.owner && self.holds(handle.sequence())
    }

    /// Whether the entry of `sequence` is live (entries are kept in sequence order).
    fn holds(&self, sequence: u64) -> bool {
        self.entries.binary_search_by_key(&sequence, |entry| entry.sequence).is_ok()
    }

    /// A snapshot of usage: padding and space skipped at the end of the ring count as used until the entry
    /// that skipped them is freed.
    pub fn stats(&self) -> Stats {
        let (used, free_ranges): (u64, [u64; 2]) = match self.tail() {
            None => (0, [self.capacity, 0]),
            Some(tail) if self.head > tail => (self.head - tail, [self.capacity - self.head, tail]),
            Some(tail) => (self.capacity - (tail - self.head), [tail - self.head, 0]),
        };
        Stats {
            capacity: self.capacity,
            used_bytes: used,
            free_bytes: self.capacity - used,
            allocation_count: self.entries.len(),
            free_range_count: free_ranges.iter().filter(|&&r| r > 0).count(),
            largest_free_range: free_ranges[0].max(free_ranges[1]),
        }
    }

    /// Checks the ring's invariants (O(n)): entries follow each other around the ring without overlap.
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), crate::check::Violation> {
        let fail = |what, offset| Err(crate::check::Violation { what, offset });
        let mut cursor: Option<u64> = None;
        let mut wrapped = false;
        let mut last_sequence = None;
        for entry in &self.entries {
            if entry.end > self.capacity || entry.end == 0 {
                return fail("ring entry out of range", entry.end);
            }
            if last_sequence.is_some_and(|s| s >= entry.sequence) || entry.sequence >= self.next_sequence {
                return fail("ring sequence out of order", entry.begin);
            }
            last_sequence = Some(entry.sequence);
            if let Some(c) = cursor
                && entry.begin != c
            {
                return fail("ring entries not contiguous", entry.begin);
            }
            if entry.end <= entry.begin {
                // This entry wrapped to the start of the ring; only one may.
                if wrapped {
                    return fail("ring wrapped twice", entry.begin);
                }
                wrapped = true;
                if let Some(front) = self.entries.front()
                    && entry.end > front.begin
                {
                    return fail("ring head overran its tail", entry.end);
                }
            } else if wrapped && self.entries.front().is_some_and(|f| entry.end > f.begin) {
                return fail("ring head overran its tail", entry.end);
            }
            cursor = Some(entry.end);
        }
        match cursor {
            Some(c) if c != self.head => fail("ring head disagrees with the newest entry", self.head),
            None if self.head != 0 => fail("empty ring with a non-zero head", self.head),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_frees_in_reverse_order_only() {
        let mut stack = LinearAllocator::new(1024).unwrap();
        let a = stack.allocate(10, 1).unwrap();
        let b = stack.allocate(10, 64).unwrap();
        assert_eq!((a.offset, b.offset), (0, 64));
        let a_raw = a.handle.to_raw();
        assert_eq!(stack.free(a), Err(Error::OutOfOrderFree));
        stack.check().unwrap();
        stack.free(b).unwrap();
        assert_eq!(stack.stats().used_bytes, 10);
        stack.free(Handle::from_raw(a_raw)).unwrap();
        assert_eq!(stack.free(Handle::from_raw(a_raw)), Err(Error::StaleHandle));
        assert_eq!(stack.stats().used_bytes, 0);
        stack.check().unwrap();
    }

    #[test]
    fn stack_free_all_and_bad_input() {
        let mut stack = LinearAllocator::new(100).unwrap();
        let a = stack.allocate(60, 1).unwrap();
        assert_eq!(stack.allocate(60, 1), Err(Error::OutOfMemory { size: 60, alignment: 1 }));
        assert_eq!(stack.allocate(0, 1), Err(Error::ZeroSize));
        assert_eq!(stack.allocate(1, 6), Err(Error::InvalidAlignment { alignment: 6 }));
        assert!(stack.is_live(&a.handle));
        stack.free_all();
        assert!(!stack.is_live(&a.handle), "stale after free_all");
        assert_eq!(stack.free(a), Err(Error::StaleHandle));
        assert_eq!(stack.free(Handle::from_raw(12345)), Err(Error::ForeignHandle));
        assert_eq!(stack.stats().free_bytes, 100);
        stack.check().unwrap();
    }

    #[test]
    fn ring_wraps_and_frees_fifo() {
        let mut ring = RingAllocator::new(100).unwrap();
        let a = ring.allocate(40, 1).unwrap();
        let b = ring.allocate(40, 1).unwrap();
        assert_eq!((a.offset, b.offset), (0, 40));
        // 20 left at the end, none at the start until `a` is freed.
        assert_eq!(ring.allocate(30, 1), Err(Error::OutOfMemory { size: 30, alignment: 1 }));
        let b_raw = b.handle.to_raw();
        assert_eq!(ring.free(b), Err(Error::OutOfOrderFree));
        ring.free(a).unwrap();
        let c = ring.allocate(30, 1).unwrap();
        assert_eq!(c.offset, 0, "wrapped to the start");
        ring.check().unwrap();
        assert_eq!(ring.stats().used_bytes, 90, "skipped end space belongs to the wrapping entry");
        let d = ring.allocate(10, 1).unwrap();
        assert_eq!(d.offset, 30);
        assert_eq!(ring.allocate(1, 1), Err(Error::OutOfMemory { size: 1, alignment: 1 }), "full");
        ring.check().unwrap();
        ring.free(Handle::from_raw(b_raw)).unwrap();
        ring.free(c).unwrap();
        ring.free(d).unwrap();
        assert_eq!(ring.stats().largest_free_range, 100);
        ring.check().unwrap();
    }

    #[test]
    fn ring_rejects_stale_and_foreign_handles() {
        let mut ring = RingAllocator::new(64).unwrap();
        let other = RingAllocator::new(64).unwrap();
        let a = ring.allocate(8, 8).unwrap();
        let raw = a.handle.to_raw();
        assert!(ring.is_live(&a.handle) && !other.is_live(&a.handle));
        ring.free(a).unwrap();
        assert!(!ring.is_live(&Handle::from_raw(raw)), "freed");
        assert_eq!(ring.free(Handle::from_raw(raw)), Err(Error::StaleHandle));
        let foreign_raw = raw ^ (u64::from(other.owner ^ ring.owner) << 48);
        assert!(!ring.is_live(&Handle::from_raw(foreign_raw)));
        assert_eq!(ring.free(Handle::from_raw(foreign_raw)), Err(Error::ForeignHandle));
        ring.check().unwrap();
    }
}
