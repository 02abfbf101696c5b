//! Observability: statistics (a snapshot of what is committed, used and free, by memory type and class),
//! diagnostics (cumulative counters and high-water marks since the last reset), a bounded event ring, device
//! memory callbacks for profilers, and leak reports.
//!
//! The event ring costs nothing when its capacity is 0 (the allocator checks before taking its lock); when full
//! it drops the oldest events and counts them, so sequence numbers show the gap.

use std::collections::VecDeque;
use std::fmt;

use memcarve_core::ResourceClass;

/// Usage of a set of blocks (all, one memory type, one class, or one type and class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MemoryStats {
    /// Bytes obtained from the device (blocks, or committed virtual-heap pages).
    pub committed_bytes: u64,
    /// Bytes of live allocations, as requested.
    pub used_bytes: u64,
    /// Bytes of committed memory not in use (committed minus what the ranges hold, padding included).
    pub free_bytes: u64,
    /// Live allocations.
    pub allocation_count: u64,
    /// Live blocks (a virtual heap counts as one).
    pub block_count: u64,
    /// Separate free ranges inside blocks.
    pub free_range_count: u64,
    /// The largest free range in any one block (before a future request's alignment).
    pub largest_free_range: u64,
    /// Blocks holding no allocation (kept cached).
    pub empty_block_count: u64,
}

impl MemoryStats {
    /// 1 − largest free range / free bytes: 0 when the free space is one range, towards 1 when scattered.
    pub fn fragmentation(&self) -> f64 {
        if self.free_bytes == 0 { 0.0 } else { 1.0 - self.largest_free_range as f64 / self.free_bytes as f64 }
    }

    /// Adds another set's figures to these (the largest free range is the larger of the two).
    pub fn add(&mut self, other: &MemoryStats) {
        // Saturating: sets a caller builds may hold any figures.
        self.committed_bytes = self.committed_bytes.saturating_add(other.committed_bytes);
        self.used_bytes = self.used_bytes.saturating_add(other.used_bytes);
        self.free_bytes = self.free_bytes.saturating_add(other.free_bytes);
        self.allocation_count = self.allocation_count.saturating_add(other.allocation_count);
        self.block_count = self.block_count.saturating_add(other.block_count);
        self.free_range_count = self.free_range_count.saturating_add(other.free_range_count);
        self.largest_free_range = self.largest_free_range.max(other.largest_free_range);
        self.empty_block_count = self.empty_block_count.saturating_add(other.empty_block_count);
    }
}

/// A snapshot of the allocator's memory, overall and broken down.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllocatorStats {
    /// Everything.
    pub total: MemoryStats,
    /// By memory type index.
    pub per_memory_type: Vec<MemoryStats>,
    /// By resource class (indexed by `ResourceClass as usize`).
    pub per_class: [MemoryStats; 4],
    /// By memory type, then class.
    pub per_type_and_class: Vec<[MemoryStats; 4]>,
}

impl AllocatorStats {
    pub(crate) fn new(memory_types: usize) -> AllocatorStats {
        AllocatorStats {
            total: MemoryStats::default(),
            per_memory_type: vec![MemoryStats::default(); memory_types],
            per_class: [MemoryStats::default(); 4],
            per_type_and_class: vec![[MemoryStats::default(); 4]; memory_types],
        }
    }

    pub(crate) fn add(&mut self, memory_type: u32, class: ResourceClass, stats: &MemoryStats) {
        self.total.add(stats);
        self.per_class[class as usize].add(stats);
        if let Some(per_type) = self.per_memory_type.get_mut(memory_type as usize) {
            per_type.add(stats);
        }
        if let Some(per_type) = self.per_type_and_class.get_mut(memory_type as usize) {
            per_type[class as usize].add(stats);
        }
    }

    /// Figures of one memory type (zero for an unknown index).
    pub fn memory_type(&self, memory_type: u32) -> MemoryStats {
        self.per_memory_type.get(memory_type as usize).copied().unwrap_or_default()
    }

    /// Figures of one class.
    pub fn class(&self, class: ResourceClass) -> MemoryStats {
        self.per_class[class as usize]
    }

    /// Figures of one memory type and class: the blocks a similar request could reuse.
    pub fn type_and_class(&self, memory_type: u32, class: ResourceClass) -> MemoryStats {
        self.per_type_and_class.get(memory_type as usize).map(|c| c[class as usize]).unwrap_or_default()
    }
}

/// Cumulative counters and high-water marks since the allocator was made or [`reset`](crate::Allocator::reset_diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Diagnostics {
    /// Device blocks created.
    pub block_creations: u64,
    /// Device blocks destroyed.
    pub block_destructions: u64,
    /// Requests served from blocks (or committed pages) that already existed.
    pub block_reuses: u64,
    /// Requests that moved on to a lower-ranked memory type after a better one ran out.
    pub fallbacks: u64,
    /// Times cached empty blocks or pages were reclaimed because the device ran out of memory, or (kept blocks)
    /// because a heap's budget had no room for a request.
    pub reclaims: u64,
    /// Requests refused.
    pub failures: u64,
    /// The most allocations live at once, summed over memory types, and within a memory type over its virtual
    /// heap (which counts its own, under its lock) and its blocks: each of those peaks is exact; the sum is an
    /// upper bound of the overall peak when they peaked at different times. (Tracking one overall peak would
    /// make every thread write one shared counter.)
    pub peak_live_allocations: u64,
    /// The most bytes live at once (as requested), summed over memory types like `peak_live_allocations`.
    pub peak_live_bytes: u64,
    /// The most bytes committed at once.
    pub peak_committed_bytes: u64,
}

/// What happened, as the event ring records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// A request succeeded.
    Allocated {
        /// Memory type.
        memory_type: u32,
        /// Bytes requested.
        size: u64,
        /// Offset in its block or heap.
        offset: u64,
    },
    /// A request failed.
    AllocationFailed {
        /// Bytes requested.
        size: u64,
    },
    /// An allocation was freed.
    Freed {
        /// Memory type.
        memory_type: u32,
        /// Bytes.
        size: u64,
        /// Offset in its block or heap.
        offset: u64,
    },
    /// A device block was created.
    BlockCreated {
        /// Memory type.
        memory_type: u32,
        /// Bytes.
        size: u64,
    },
    /// A device block was destroyed.
    BlockDestroyed {
        /// Memory type.
        memory_type: u32,
        /// Bytes.
        size: u64,
    },
    /// Cached empty blocks were trimmed.
    Trimmed {
        /// Blocks destroyed.
        blocks: u64,
    },
    /// Virtual-heap pages were committed.
    Committed {
        /// Memory type.
        memory_type: u32,
        /// Offset in the heap.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// Virtual-heap pages were decommitted.
    Decommitted {
        /// Memory type.
        memory_type: u32,
        /// Offset in the heap.
        offset: u64,
        /// Bytes.
        size: u64,
    },
}

/// One recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Monotonic, from 0; a gap means events were dropped.
    pub sequence: u64,
    /// What happened.
    pub kind: EventKind,
}

/// A bounded ring of the latest events.
#[derive(Debug, Default)]
pub(crate) struct EventRing {
    capacity: usize,
    events: VecDeque<Event>,
    next_sequence: u64,
    dropped: u64,
}

impl EventRing {
    pub fn new(capacity: usize) -> EventRing {
        // Room for the first events only: a large capacity grows as events come (one of `usize::MAX` made
        // up front would be a panic, one of 2^40 an abort).
        let room = capacity.min(Self::FIRST_ROOM);
        EventRing { capacity, events: VecDeque::with_capacity(room), next_sequence: 0, dropped: 0 }
    }

    /// Events a new ring has room for before it grows.
    const FIRST_ROOM: usize = 4096;

    pub fn push(&mut self, kind: EventKind) {
        if self.capacity == 0 {
            return;
        }
        if self.events.len() == self.capacity {
            self.events.pop_front();
            self.dropped += 1;
        }
        self.events.push_back(Event { sequence: self.next_sequence, kind });
        self.next_sequence += 1;
    }

    /// The events held, oldest first, and how many were dropped since the start.
    pub fn snapshot(&self) -> (Vec<Event>, u64) {
        (self.events.iter().copied().collect(), self.dropped)
    }
}

/// Hooks a profiler can install to see every device block come and go.
pub trait DeviceMemoryCallbacks: Send + Sync + fmt::Debug {
    /// A block of `size` bytes of `memory_type` was created.
    fn block_created(&self, memory_type: u32, size: u64);
    /// A block of `size` bytes of `memory_type` was destroyed.
    fn block_destroyed(&self, memory_type: u32, size: u64);
}

/// What the allocator keeps about one allocation when `AllocatorConfig::track_allocations` is on.
#[derive(Debug)]
pub(crate) struct AllocationMeta {
    pub name: Box<str>,
    pub size: u64,
    pub backtrace: Option<std::backtrace::Backtrace>,
}

/// One allocation still live, as a leak report lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// Its name (empty unless names are tracked: `AllocatorConfig::track_allocations`).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// Memory type.
    pub memory_type: u32,
    /// Class.
    pub class: ResourceClass,
    /// Where it was allocated, when backtraces are captured.
    pub backtrace: Option<String>,
}

impl Leak {
    /// A leak entry from what is known: tracking data if any, else the range's size.
    pub(crate) fn from_meta(
        meta: Option<&AllocationMeta>,
        range_size: u64,
        memory_type: u32,
        class: ResourceClass,
    ) -> Leak {
        Leak {
            name: meta.map(|m| m.name.to_string()).unwrap_or_default(),
            size: meta.map_or(range_size, |m| m.size),
            memory_type,
            class,
            backtrace: meta.and_then(|m| m.backtrace.as_ref()).map(|b| b.to_string()),
        }
    }
}

/// Allocations still live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeakReport {
    /// Each live allocation.
    pub leaks: Vec<Leak>,
}

impl LeakReport {
    /// Whether nothing is live.
    pub fn is_empty(&self) -> bool {
        self.leaks.is_empty()
    }

    /// Bytes live in total.
    pub fn total_bytes(&self) -> u64 {
        self.leaks.iter().fold(0u64, |total, leak| total.saturating_add(leak.size))
    }
}

impl fmt::Display for LeakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "memcarve: {} allocations ({} bytes) still live", self.leaks.len(), self.total_bytes())?;
        for leak in &self.leaks {
            let name = if leak.name.is_empty() { "(unnamed)" } else { &leak.name };
            writeln!(f, "  {name}: {} bytes, memory type {}, {:?}", leak.size, leak.memory_type, leak.class)?;
            if let Some(backtrace) = &leak.backtrace {
                for line in backtrace.lines() {
                    writeln!(f, "      {line}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_latest_and_counts_the_dropped() {
        let mut ring = EventRing::new(3);
        for size in 0..5 {
            ring.push(EventKind::AllocationFailed { size });
        }
        let (events, dropped) = ring.snapshot();
        assert_eq!(dropped, 2);
        assert_eq!(events.iter().map(|e| e.sequence).collect::<Vec<_>>(), [2, 3, 4]);
        let mut off = EventRing::new(0);
        off.push(EventKind::Trimmed { blocks: 1 });
        assert_eq!(off.snapshot(), (Vec::new(), 0));
    }

    #[test]
    fn stats_add_up_and_fragmentation_follows_free_ranges() {
        let a = MemoryStats {
            committed_bytes: 100,
            used_bytes: 40,
            free_bytes: 60,
            largest_free_range: 60,
            ..MemoryStats::default()
        };
        let b = MemoryStats {
            committed_bytes: 100,
            used_bytes: 70,
            free_bytes: 30,
            largest_free_range: 10,
            ..MemoryStats::default()
        };
        let mut total = a;
        total.add(&b);
        assert_eq!((total.committed_bytes, total.free_bytes, total.largest_free_range), (200, 90, 60));
        assert!((total.fragmentation() - (1.0 - 60.0 / 90.0)).abs() < 1e-12);
        assert_eq!(a.fragmentation(), 0.0);
    }
}
