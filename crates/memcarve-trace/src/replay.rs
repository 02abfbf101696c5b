//! Replays a trace on memcarve's allocator, one event at a time as a live allocator would see them, on the host
//! backend in simulated mode (no memory is committed, so traces larger than this machine replay), and measures
//! what it would have cost: peak committed bytes, driver operations, and speed.
//!
//! Policies are named allocator configurations. Every figure comes from the allocator and the device as they
//! ran; none is read from the trace ahead of time. Observers (a placement log, samples after every event) cost
//! the replay one branch per event when none is installed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::virtual_heap::{PageEvent, ReleaseImmediately, RetainEmpty};
use memcarve::{
    Allocation, AllocationDesc, Allocator, AllocatorConfig, BlockKind, MemoryLocation, ResourceClass,
    VirtualHeapConfig,
};

use crate::model::{Event, PyTorchFigures};

/// A named allocator configuration to replay with.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The name used on the command line.
    pub name: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// The configuration.
    pub config: AllocatorConfig,
}

/// The policies `memcarve replay` knows, the default first.
pub fn policies() -> Vec<Policy> {
    vec![
        Policy {
            name: "vmm",
            description: "virtual heap (as the CUDA backend uses it), 2 MiB physical pages (8 MiB in a tier \
                          opened at 512 MiB allocated where requests of 32 MiB or more made 95 % of them and at \
                          most 128 MiB is committed; 32 MiB in a tier opened at 16 GiB committed) that may show at \
                          several addresses: committed memory kept \
                          within 4 % of the peak live bytes so far (at least 16 MiB until the heap has allocated 8 \
                          times its peak; or the peak committed), new pages committed ahead within that budget",
            config: AllocatorConfig::default().with_virtual_heap(VirtualHeapConfig::default()),
        },
        Policy {
            name: "vmm-retain",
            description: "virtual heap that keeps up to 64 MiB + 5 % of the live bytes committed while empty",
            config: AllocatorConfig::default().with_virtual_heap(
                VirtualHeapConfig::default()
                    .with_release(Arc::new(RetainEmpty { bytes: 64 << 20, live_fraction: 0.05 })),
            ),
        },
        Policy {
            name: "vmm-eager",
            description: "virtual heap that decommits every empty page at once (least memory, most driver calls)",
            config: AllocatorConfig::default()
                .with_virtual_heap(VirtualHeapConfig::default().with_release(Arc::new(ReleaseImmediately))),
        },
        Policy {
            name: "blocks",
            description: "block mode (as Vulkan uses it): blocks of 32 MiB growing to 256 MiB (a larger \
                          request gets a block of its size, in the pool), fullest block first; empty blocks kept \
                          while committed memory stays within its peak so far",
            config: AllocatorConfig::default(),
        },
        Policy {
            name: "blocks-eager",
            description: "block mode giving blocks back at once: one empty block cached per pool",
            config: AllocatorConfig::default().with_keep_blocks_within_peak(false),
        },
    ]
}

/// The policy named `name`, if any.
pub fn policy(name: &str) -> Option<Policy> {
    policies().into_iter().find(|policy| policy.name == name)
}

/// What a replay measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayResult {
    /// Policy name.
    pub policy: String,
    /// Allocations replayed.
    pub allocations: u64,
    /// Frees replayed.
    pub frees: u64,
    /// Frees of ids that were not live (ignored).
    pub unmatched_frees: u64,
    /// Allocations the allocator refused (none expected).
    pub failures: u64,
    /// The largest sum of requested bytes live at once.
    pub peak_live_bytes: u64,
    /// The most bytes memcarve had committed at once.
    pub peak_committed_bytes: u64,
    /// Device operations: block creations and destructions, page-run commits and decommits.
    pub driver_ops: u64,
    /// Virtual heaps: the pages the commits mapped, the physical pages they created, the pages the decommits
    /// unmapped and the physical pages those released, as a device that maps page by page counts them (CUDA, one
    /// handle per page: `scripts/check_placements.py --handles` prices them). Zero in block mode.
    pub pages: PageWork,
    /// Time spent in the allocator (reading the trace excluded).
    pub replay_time: Duration,
    /// PyTorch's own figures from the trace, when it came from a snapshot.
    pub pytorch: Option<PyTorchFigures>,
    /// Where the peak committed bytes went, when the replay used one virtual heap (none in block mode).
    pub peak_split: Option<PeakSplit>,
}

/// The page work of a replay's virtual heaps (see [`ReplayResult::pages`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageWork {
    /// Address pages mapped (a physical page mapped at several addresses counts at each).
    pub mapped: u64,
    /// Physical pages created (mapped for the first time).
    pub created: u64,
    /// Address pages unmapped.
    pub unmapped: u64,
    /// Physical pages released (left mapped nowhere).
    pub released: u64,
}

/// A virtual heap's committed bytes when they first reached their peak, in three parts that add up to them:
/// the bytes of live allocations, the free bytes of pages partly used by them (placement: allocations' edges,
/// holes between them), and pages no live allocation touched (the release policy: pages kept after frees or
/// mapped ahead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeakSplit {
    /// Bytes of live allocations.
    pub live_bytes: u64,
    /// Free bytes inside pages that live allocations use.
    pub partly_used_bytes: u64,
    /// Bytes of committed pages no live allocation used.
    pub empty_bytes: u64,
}

impl ReplayResult {
    /// Peak committed / peak live bytes (1.00 is the limit).
    pub fn overhead(&self) -> f64 {
        if self.peak_live_bytes == 0 {
            0.0
        } else {
            self.peak_committed_bytes as f64 / self.peak_live_bytes as f64
        }
    }

    /// Whether `other`, a replay of the same trace under the same policy, came out the same: the same
    /// allocations, frees, failures, peak committed bytes, driver operations and page work (its time may differ).
    pub fn same_outcome(&self, other: &ReplayResult) -> bool {
        let figures = |r: &ReplayResult| {
            (r.allocations, r.frees, r.peak_committed_bytes, r.driver_ops, r.pages, r.failures)
        };
        figures(self) == figures(other)
    }

    /// (Allocations + frees) per second of replay.
    pub fn ops_per_sec(&self) -> f64 {
        let seconds = self.replay_time.as_secs_f64();
        if seconds == 0.0 { 0.0 } else { (self.allocations + self.frees) as f64 / seconds }
    }
}

/// Pages in runs of physical pages.
fn pages(runs: &[(u32, u32)]) -> u64 {
    runs.iter().map(|&(_, count)| u64::from(count)).sum()
}

/// One line of a placement log (see [`Replayer::with_placements`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// `alloc,<id>,<offset>,<size>`.
    Alloc {
        /// Trace id.
        id: u64,
        /// Offset in the heap (or, in block mode, in the block's range of the numbering).
        offset: u64,
        /// Requested size.
        size: u64,
    },
    /// `free,<id>,,`.
    Free {
        /// Trace id.
        id: u64,
    },
    /// `map,,<offset>,<size>`.
    Map {
        /// Start.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// `unmap,,<offset>,<size>`.
    Unmap {
        /// Start.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// `pages,<first>,<offset>,<count>`: after a `map` of the virtual heap, `count` pages from `offset` on show
    /// physical pages `first`, `first + 1`, …; a physical page may show at several addresses, and lives while
    /// it is mapped at one (committed bytes count physical pages, not mapped addresses).
    Pages {
        /// First physical page id.
        first: u32,
        /// Address of the first page.
        offset: u64,
        /// Pages.
        count: u32,
    },
    /// `tier,<index>,<offset>,<page size>`: a tier of the virtual heap opened (see
    /// `VirtualHeapConfig::with_tiers`): from `offset` on, addresses are mapped in pages of `page_size` bytes.
    /// The first tier's pages are the heap's page size, told by no line.
    Tier {
        /// The tier's index (1 for the first tier opened).
        index: u64,
        /// Start of its address range.
        offset: u64,
        /// Its page size.
        page_size: u64,
    },
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Placement::Alloc { id, offset, size } => write!(f, "alloc,{id},{offset},{size}"),
            Placement::Free { id } => write!(f, "free,{id},,"),
            Placement::Map { offset, size } => write!(f, "map,,{offset},{size}"),
            Placement::Unmap { offset, size } => write!(f, "unmap,,{offset},{size}"),
            Placement::Pages { first, offset, count } => write!(f, "pages,{first},{offset},{count}"),
            Placement::Tier { index, offset, page_size } => write!(f, "tier,{index},{offset},{page_size}"),
        }
    }
}

/// The state of a replay after one event (see [`Replayer::with_samples`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The event's index in the trace, from 0 (every event counts: unmatched frees and refused allocations
    /// too).
    pub event: u64,
    /// Requested bytes live after it.
    pub live_bytes: u64,
    /// Bytes memcarve had committed after it: live blocks and committed virtual-heap pages.
    pub committed_bytes: u64,
}

/// Where each device block of a block policy lies in the placement log's one address space. Blocks are laid
/// out in creation order with a gap after each, so that no two blocks ever touch in the log.
struct BlockNumbering {
    /// Live blocks by slot: (generation, start in the numbering, bytes).
    blocks: HashMap<BlockSlot, (u32, u64, u64)>,
    next_start: u64,
    /// The device's count of destroyed blocks when last looked at.
    destroyed: u64,
}

/// A block slot of the allocator: slots are reused, told apart by their generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct BlockSlot {
    memory_type: u32,
    class: ResourceClass,
    kind: BlockKind,
    pool: u32,
    index: u32,
}

/// Where block numbering starts when the policy also has virtual heaps (whose offsets lie below).
const BLOCKS_ABOVE_HEAPS: u64 = 1 << 50;
/// Blocks in the numbering start on this boundary and are separated by at least this much.
const BLOCK_GAP: u64 = 1 << 20;

/// Replays events on a fresh allocator of one policy.
pub struct Replayer {
    policy: String,
    device: Arc<HostDevice>,
    allocator: Allocator<Arc<HostDevice>>,
    /// Live allocations by trace id: a dense vector for small ids, a map for the rest.
    dense: Vec<Option<Allocation>>,
    sparse: HashMap<u64, Allocation>,
    live_bytes: u64,
    result: ReplayResult,
    placements: Option<Box<dyn FnMut(Placement)>>,
    /// Block numbering for the placement log (on with it).
    numbering: Option<BlockNumbering>,
    samples: Option<Box<dyn FnMut(Sample)>>,
    /// The index of the next event.
    next_event: u64,
    /// Tiers of the virtual heap opened so far (placement logs number them).
    tiers_seen: u64,
}

const DENSE_IDS: u64 = 1 << 24;

impl Replayer {
    /// A replayer for `policy` on the simulated `discrete` (H200) profile.
    pub fn new(policy: &Policy) -> Result<Replayer, memcarve::Error> {
        let device =
            Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated)));
        let config = policy.config.clone().with_leak_report_on_drop(false);
        let allocator = Allocator::new(Arc::clone(&device), config)?;
        Ok(Replayer {
            policy: policy.name.to_string(),
            device,
            allocator,
            dense: Vec::new(),
            sparse: HashMap::new(),
            live_bytes: 0,
            result: ReplayResult {
                policy: policy.name.to_string(),
                allocations: 0,
                frees: 0,
                unmatched_frees: 0,
                failures: 0,
                peak_live_bytes: 0,
                peak_committed_bytes: 0,
                driver_ops: 0,
                pages: PageWork::default(),
                replay_time: Duration::ZERO,
                pytorch: None,
                peak_split: None,
            },
            placements: None,
            numbering: None,
            samples: None,
            next_event: 0,
            tiers_seen: 0,
        })
    }

    /// Reports every allocation, free, map and unmap to `sink`, in replay order (virtual-heap policies report
    /// page runs; block policies report block creations as `map` and destructions as `unmap`, numbering blocks
    /// in one address space).
    pub fn with_placements(mut self, sink: impl FnMut(Placement) + 'static) -> Replayer {
        self.allocator.record_page_events(true);
        self.placements = Some(Box::new(sink));
        let next_start = if self.allocator.config().virtual_heap.is_some() { BLOCKS_ABOVE_HEAPS } else { 0 };
        self.numbering = Some(BlockNumbering {
            blocks: HashMap::new(),
            next_start,
            destroyed: self.device.counters().blocks_destroyed,
        });
        self
    }

    /// Hands `sink` a [`Sample`] after every event, once its placements (if logged) are out: enough to draw
    /// live and committed bytes over the whole trace and to find the moment of any peak.
    pub fn with_samples(mut self, sink: impl FnMut(Sample) + 'static) -> Replayer {
        self.samples = Some(Box::new(sink));
        self
    }

    /// Reads `events` in batches of `batch` and replays each (reading is not timed); `progress` gets the number of
    /// events replayed so far after each batch. Stops at the first read error.
    pub fn replay_all<E>(
        &mut self,
        events: impl Iterator<Item = Result<Event, E>>,
        batch: usize,
        mut progress: impl FnMut(u64),
    ) -> Result<(), E> {
        let mut events = events.peekable();
        let mut buffer = Vec::with_capacity(batch);
        let mut done = 0u64;
        while events.peek().is_some() {
            buffer.clear();
            for event in events.by_ref().take(batch) {
                buffer.push(event?);
            }
            self.replay(&buffer);
            done += buffer.len() as u64;
            progress(done);
        }
        Ok(())
    }

    /// Replays a batch of events (already read, so that reading is not timed).
    pub fn replay(&mut self, events: &[Event]) {
        // The table of live allocations by id is the replay's, not the allocator's: it is grown before the clock
        // starts, so that its growth (copies, fresh pages) is not counted as the allocator's time.
        let highest = events
            .iter()
            .filter_map(|event| match event {
                Event::Alloc(alloc) if alloc.id.0 < DENSE_IDS => Some(alloc.id.0 as usize),
                _ => None,
            })
            .max();
        if let Some(highest) = highest
            && self.dense.len() <= highest
        {
            self.dense.resize_with(highest + 1, || None);
        }
        let start = Instant::now();
        for event in events {
            match event {
                Event::Alloc(alloc) => {
                    let desc = AllocationDesc::new("", alloc.size, MemoryLocation::GpuOnly)
                        .with_alignment(alloc.alignment.max(1));
                    match self.allocator.allocate(&desc) {
                        Ok(allocation) => {
                            self.result.allocations += 1;
                            self.live_bytes += alloc.size;
                            self.result.peak_live_bytes = self.result.peak_live_bytes.max(self.live_bytes);
                            if self.placements.is_some() {
                                self.log_destroyed_blocks();
                                self.log_pages();
                                let offset = self.placed_offset(&allocation);
                                self.emit(Placement::Alloc { id: alloc.id.0, offset, size: alloc.size });
                            }
                            self.insert(alloc.id.0, allocation);
                        }
                        Err(_) => self.result.failures += 1,
                    }
                }
                Event::Free(free) => match self.remove(free.id.0) {
                    Some(allocation) => {
                        self.live_bytes -= allocation.size();
                        self.result.frees += 1;
                        // Our own live allocation: freeing it cannot fail.
                        let _ = self.allocator.free(allocation);
                        if self.placements.is_some() {
                            self.emit(Placement::Free { id: free.id.0 });
                            self.log_pages();
                            self.log_destroyed_blocks();
                        }
                    }
                    None => self.result.unmatched_frees += 1,
                },
            }
            if let Some(sink) = self.samples.as_mut() {
                sink(Sample {
                    event: self.next_event,
                    live_bytes: self.live_bytes,
                    committed_bytes: self.device.counters().committed_bytes,
                });
            }
            self.next_event += 1;
        }
        self.result.replay_time += start.elapsed();
    }

    fn emit(&mut self, placement: Placement) {
        if let Some(sink) = self.placements.as_mut() {
            sink(placement);
        }
    }

    fn log_pages(&mut self) {
        for memory_type in 0..self.allocator.memory_properties().types.len() as u32 {
            for record in self.allocator.take_page_events(memory_type) {
                match record.event {
                    PageEvent::Commit { offset, size } => {
                        self.emit(Placement::Map { offset, size });
                        let page =
                            if record.physical.is_empty() { 0 } else { size / pages(&record.physical) };
                        let mut at = offset;
                        for (first, count) in record.physical {
                            self.emit(Placement::Pages { first, offset: at, count });
                            at += u64::from(count) * page;
                        }
                    }
                    PageEvent::Decommit { offset, size } => self.emit(Placement::Unmap { offset, size }),
                    PageEvent::Tier { offset, page_size } => {
                        self.tiers_seen += 1;
                        let index = self.tiers_seen;
                        self.emit(Placement::Tier { index, offset, page_size });
                    }
                }
            }
        }
    }

    /// The allocation's offset in the placement log's address space: its heap offset, or its offset in its
    /// block plus the block's start in the numbering (logging the block as mapped when it is new).
    fn placed_offset(&mut self, allocation: &Allocation) -> u64 {
        let key = allocation.block_key();
        if key.kind == BlockKind::VirtualHeap {
            return allocation.offset();
        }
        let slot = BlockSlot {
            memory_type: key.memory_type,
            class: key.class,
            kind: key.kind,
            pool: key.pool,
            index: key.index,
        };
        let Some(numbering) = self.numbering.as_mut() else { return allocation.offset() };
        let mut unmapped = None;
        let start = match numbering.blocks.get(&slot) {
            Some(&(generation, start, _)) if generation == key.generation => start,
            stale => {
                // A slot reused by a new block within one event: the old block is gone.
                if let Some(&(_, start, size)) = stale {
                    unmapped = Some(Placement::Unmap { offset: start, size });
                }
                let size = self.allocator.with_block(allocation, |block| block.size()).unwrap_or(0);
                let start = numbering.next_start;
                numbering.next_start = (start + size).next_multiple_of(BLOCK_GAP) + BLOCK_GAP;
                numbering.blocks.insert(slot, (key.generation, start, size));
                if let Some(unmap) = unmapped.take() {
                    self.emit(unmap);
                }
                self.emit(Placement::Map { offset: start, size });
                start
            }
        };
        start + allocation.offset()
    }

    /// Logs blocks the device destroyed since the last look as unmapped (only when some were).
    fn log_destroyed_blocks(&mut self) {
        let destroyed = self.device.counters().blocks_destroyed;
        let Some(numbering) = self.numbering.as_mut() else { return };
        if destroyed == numbering.destroyed {
            return;
        }
        numbering.destroyed = destroyed;
        let live: std::collections::HashSet<(u32, ResourceClass, BlockKind, u32)> = self
            .allocator
            .block_reports()
            .iter()
            .map(|block| (block.memory_type, block.class, block.kind, block.index))
            .collect();
        let mut gone: Vec<(BlockSlot, u64, u64)> = numbering
            .blocks
            .iter()
            .filter(|(slot, _)| !live.contains(&(slot.memory_type, slot.class, slot.kind, slot.index)))
            .map(|(slot, &(_, start, size))| (*slot, start, size))
            .collect();
        gone.sort_by_key(|&(_, start, _)| start);
        for (slot, start, size) in gone {
            numbering.blocks.remove(&slot);
            if let Some(sink) = self.placements.as_mut() {
                sink(Placement::Unmap { offset: start, size });
            }
        }
    }

    fn insert(&mut self, id: u64, allocation: Allocation) {
        if id < DENSE_IDS {
            let index = id as usize;
            if self.dense.len() <= index {
                self.dense.resize_with(index + 1, || None);
            }
            if let Some(previous) = self.dense[index].replace(allocation) {
                // An id reused while live: the trace is inconsistent; keep the newer one, free the older.
                self.live_bytes -= previous.size();
                let _ = self.allocator.free(previous);
            }
        } else if let Some(previous) = self.sparse.insert(id, allocation) {
            self.live_bytes -= previous.size();
            let _ = self.allocator.free(previous);
        }
    }

    fn remove(&mut self, id: u64) -> Option<Allocation> {
        if id < DENSE_IDS {
            self.dense.get_mut(id as usize).and_then(Option::take)
        } else {
            self.sparse.remove(&id)
        }
    }

    /// [`ReplayResult::peak_split`]: from the one virtual heap that committed memory, if its peak is the
    /// allocator's.
    fn peak_split(&self) -> Option<PeakSplit> {
        let types = self.allocator.memory_properties().types.len() as u32;
        let mut heaps = (0..types)
            .filter_map(|memory_type| self.allocator.virtual_heap_stats(memory_type))
            .filter(|stats| stats.peak_committed_bytes > 0);
        let stats = heaps.next()?;
        if heaps.next().is_some() || stats.peak_committed_bytes != self.result.peak_committed_bytes {
            return None;
        }
        let used = stats.peak_committed_bytes.checked_sub(stats.empty_bytes_at_peak)?;
        Some(PeakSplit {
            live_bytes: stats.live_bytes_at_peak,
            partly_used_bytes: used.checked_sub(stats.live_bytes_at_peak)?,
            empty_bytes: stats.empty_bytes_at_peak,
        })
    }

    /// Ends the replay: figures from the allocator and the device.
    pub fn finish(mut self, pytorch: Option<PyTorchFigures>) -> ReplayResult {
        let counters = self.device.counters();
        self.result.peak_committed_bytes = self.allocator.diagnostics().peak_committed_bytes;
        self.result.driver_ops =
            counters.blocks_created + counters.blocks_destroyed + counters.commits + counters.decommits;
        self.result.pages = PageWork {
            mapped: counters.pages_mapped,
            created: counters.pages_created,
            unmapped: counters.pages_unmapped,
            released: counters.pages_released,
        };
        self.result.pytorch = pytorch;
        self.result.peak_split = self.peak_split();
        let _ = &self.policy;
        self.result
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::rc::Rc;

    use super::*;
    use crate::model::{Alloc, AllocationId, Free};
    use memcarve::virtual_heap::HeapTier;

    const MIB: u64 = 1 << 20;

    /// Allocations of growing sizes, half of them freed again, then the rest: blocks are created, emptied and
    /// destroyed, and a dedicated block comes and goes.
    fn events() -> Vec<Event> {
        let sizes = [MIB, 3 * MIB, 20 * MIB, 200 * MIB, 40 * MIB, 7 * MIB, 60 * MIB, 90 * MIB, 5 * MIB];
        let mut events = Vec::new();
        for round in 0..3u64 {
            for (index, &size) in sizes.iter().enumerate() {
                let id = AllocationId(round * 100 + index as u64);
                let alloc = Alloc::new(id, size + round * 4096, 256, 0);
                events.push(Event::Alloc(alloc));
            }
            for index in (0..sizes.len() as u64).step_by(2) {
                events.push(Event::Free(Free { id: AllocationId(round * 100 + index), time_us: None }));
            }
        }
        for round in 0..3u64 {
            for index in (1..sizes.len() as u64).step_by(2) {
                events.push(Event::Free(Free { id: AllocationId(round * 100 + index), time_us: None }));
            }
        }
        events.push(Event::Free(Free { id: AllocationId(12345), time_us: None }));
        events
    }

    /// Replays `events` under `policy` with both observers on.
    fn observe(policy: &Policy, events: &[Event]) -> (ReplayResult, Vec<Placement>, Vec<Sample>) {
        let placements = Rc::new(RefCell::new(Vec::new()));
        let samples = Rc::new(RefCell::new(Vec::new()));
        let (p, s) = (Rc::clone(&placements), Rc::clone(&samples));
        let mut replayer = Replayer::new(policy)
            .unwrap()
            .with_placements(move |placement| p.borrow_mut().push(placement))
            .with_samples(move |sample| s.borrow_mut().push(sample));
        replayer.replay(&events[..5]);
        replayer.replay(&events[5..]);
        let result = replayer.finish(None);
        let placements = placements.borrow().clone();
        let samples = samples.borrow().clone();
        (result, placements, samples)
    }

    #[test]
    fn replays_of_the_same_events_have_the_same_outcome_and_others_do_not() {
        let policy = &policies()[0];
        let replay = |events: &[Event]| {
            let mut replayer = Replayer::new(policy).unwrap();
            replayer.replay(events);
            replayer.finish(None)
        };
        let events = events();
        let (first, again) = (replay(&events), replay(&events));
        assert!(first.same_outcome(&again) && again.same_outcome(&first));
        let fewer = replay(&events[..events.len() / 2]);
        assert!(!first.same_outcome(&fewer));
        let mut failed = again.clone();
        failed.failures += 1;
        assert!(!first.same_outcome(&failed));
    }

    #[test]
    fn replay_all_reads_in_batches_and_stops_at_the_first_read_error() {
        let events = events();
        let policy = &policies()[0];
        let mut whole = Replayer::new(policy).unwrap();
        whole.replay(&events);
        let whole = whole.finish(None);
        let mut batched = Replayer::new(policy).unwrap();
        let mut seen = Vec::new();
        batched.replay_all(events.iter().cloned().map(Ok::<_, ()>), 4, |done| seen.push(done)).unwrap();
        let expected: Vec<u64> =
            (1..=events.len().div_ceil(4) as u64).map(|b| (b * 4).min(events.len() as u64)).collect();
        assert_eq!(seen, expected, "progress after every batch");
        let batched = batched.finish(None);
        assert_eq!(batched.peak_committed_bytes, whole.peak_committed_bytes);
        assert_eq!(batched.driver_ops, whole.driver_ops);
        // A read error ends the replay with that error; the batch it cut short is not replayed.
        let mut failing = Replayer::new(policy).unwrap();
        let faulty = events
            .iter()
            .cloned()
            .map(Ok)
            .take(6)
            .chain([Err("bad line")])
            .chain(events.iter().cloned().map(Ok));
        let mut calls = Vec::new();
        assert_eq!(failing.replay_all(faulty, 4, |done| calls.push(done)), Err("bad line"));
        assert_eq!(calls, vec![4]);
    }

    #[test]
    fn the_peak_is_split_where_one_virtual_heap_holds_it() {
        let events = events();
        for policy in policies() {
            let mut replayer = Replayer::new(&policy).unwrap();
            replayer.replay(&events);
            let result = replayer.finish(None);
            let virtual_heap = policy.config.virtual_heap.is_some();
            assert_eq!(result.peak_split.is_some(), virtual_heap, "{}", policy.name);
            if let Some(split) = result.peak_split {
                let sum = split.live_bytes + split.partly_used_bytes + split.empty_bytes;
                assert_eq!(sum, result.peak_committed_bytes, "{}: {split:?}", policy.name);
                assert!(split.live_bytes > 0 && split.live_bytes <= result.peak_live_bytes, "{split:?}");
            }
        }
    }

    #[test]
    fn samples_come_once_per_event_and_agree_with_the_result() {
        let events = events();
        for policy in policies() {
            let (result, _, samples) = observe(&policy, &events);
            assert_eq!(samples.len(), events.len(), "{}", policy.name);
            assert!(samples.iter().enumerate().all(|(index, sample)| sample.event == index as u64));
            assert_eq!(samples.iter().map(|s| s.live_bytes).max(), Some(result.peak_live_bytes));
            assert_eq!(samples.iter().map(|s| s.committed_bytes).max(), Some(result.peak_committed_bytes));
            assert_eq!(samples.last().unwrap().live_bytes, 0);
            assert!(samples.iter().all(|s| s.committed_bytes >= s.live_bytes), "{}", policy.name);
        }
    }

    /// Every policy's placement log, blocks included, describes memory consistently: live allocations lie
    /// in mapped ranges and never overlap, neither in addresses nor in the physical pages behind them, maps never
    /// overlap, unmaps remove what was mapped, and the committed bytes recounted from it (blocks, and physical
    /// pages mapped at one address or more) are the device's after each event.
    #[test]
    fn placement_logs_are_consistent_for_every_policy() {
        const PAGE: u64 = 2 << 20;
        let events = events();
        for policy in policies().into_iter().chain([tiered_policy()]) {
            let (result, placements, samples) = observe(&policy, &events);
            // Tiers opened: start -> page size (below the first, the heap's page).
            let mut tiers: BTreeMap<u64, u64> = BTreeMap::new();
            let page_at = |tiers: &BTreeMap<u64, u64>, at: u64| {
                tiers.range(..=at).next_back().map_or(PAGE, |(_, &p)| p)
            };
            let mut mapped: BTreeMap<u64, u64> = BTreeMap::new(); // start -> size, as mapped
            let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new(); // offset -> (size, id)
            let mut by_id: HashMap<u64, u64> = HashMap::new();
            let mut shows: HashMap<u64, u32> = HashMap::new(); // address page -> physical page
            let mut mappings: HashMap<u32, u32> = HashMap::new(); // physical page -> addresses showing it
            let mut users: HashMap<u32, (u64, u32)> = HashMap::new(); // physical page -> (address page, users)
            let (mut committed, mut peak) = (0u64, 0u64);
            let mut work = PageWork::default(); // the page work, recounted
            for placement in &placements {
                match *placement {
                    Placement::Map { offset, size } => {
                        let overlaps =
                            mapped.range(..offset + size).next_back().is_some_and(|(&s, &z)| s + z > offset);
                        assert!(!overlaps, "{}: {placement}", policy.name);
                        mapped.insert(offset, size);
                        // New memory unless `pages` lines say the physical pages are mapped elsewhere already.
                        committed += size;
                    }
                    Placement::Tier { index, offset, page_size } => {
                        assert_eq!(index, tiers.len() as u64 + 1, "{}: {placement}", policy.name);
                        assert!(page_size > page_at(&tiers, offset), "{}: {placement}", policy.name);
                        assert!(!covered(&mapped, offset, offset + 1), "{}: {placement}", policy.name);
                        tiers.insert(offset, page_size);
                    }
                    Placement::Pages { first, offset, count } => {
                        let page_size = page_at(&tiers, offset);
                        for index in 0..u64::from(count) {
                            let (page, id) = (offset + index * page_size, first + index as u32);
                            assert!(covered(&mapped, page, page + page_size), "{}: {placement}", policy.name);
                            assert!(shows.insert(page, id).is_none(), "{}: {placement}", policy.name);
                            let count = mappings.entry(id).or_default();
                            if *count > 0 {
                                committed -= page_size;
                            }
                            work.mapped += 1;
                            work.created += u64::from(*count == 0);
                            *count += 1;
                        }
                    }
                    Placement::Unmap { offset, size } => {
                        // Page runs are unmapped in parts, or several at once: cut out what was asked.
                        let end = offset + size;
                        assert!(covered(&mapped, offset, end), "{}: {placement} not mapped", policy.name);
                        let touched: Vec<(u64, u64)> = mapped
                            .range(..end)
                            .rev()
                            .take_while(|&(&start, &length)| start + length > offset)
                            .map(|(&start, &length)| (start, length))
                            .collect();
                        for (start, length) in touched {
                            mapped.remove(&start);
                            if start < offset {
                                mapped.insert(start, offset - start);
                            }
                            if start + length > end {
                                mapped.insert(end, start + length - end);
                            }
                        }
                        committed -= size;
                        let page_size = page_at(&tiers, offset);
                        for page in (offset..end).step_by(page_size as usize) {
                            if let Some(id) = shows.remove(&page) {
                                let count = mappings.get_mut(&id).unwrap();
                                *count -= 1;
                                if *count > 0 {
                                    committed += page_size; // still mapped elsewhere: not given back
                                }
                                work.unmapped += 1;
                                work.released += u64::from(*count == 0);
                                assert!(users.get(&id).is_none_or(|&(at, _)| at != page), "{}", policy.name);
                            }
                        }
                    }
                    Placement::Alloc { id, offset, size } => {
                        assert!(
                            covered(&mapped, offset, offset + size),
                            "{}: {placement} outside",
                            policy.name
                        );
                        let overlaps = live
                            .range(..offset + size)
                            .next_back()
                            .is_some_and(|(&o, &(z, _))| o + z > offset);
                        assert!(!overlaps, "{}: {placement} overlaps", policy.name);
                        let page_size = page_at(&tiers, offset);
                        for page in
                            (offset / page_size * page_size..offset + size).step_by(page_size as usize)
                        {
                            if let Some(&physical) = shows.get(&page) {
                                let entry = users.entry(physical).or_insert((page, 0));
                                assert_eq!(entry.0, page, "{}: {placement} shares memory", policy.name);
                                entry.1 += 1;
                            }
                        }
                        live.insert(offset, (size, id));
                        by_id.insert(id, offset);
                    }
                    Placement::Free { id } => {
                        let offset = by_id.remove(&id).unwrap();
                        let (size, _) = live.remove(&offset).unwrap();
                        let page_size = page_at(&tiers, offset);
                        for page in
                            (offset / page_size * page_size..offset + size).step_by(page_size as usize)
                        {
                            if let Some(physical) = shows.get(&page) {
                                let entry = users.get_mut(physical).unwrap();
                                entry.1 -= 1;
                                if entry.1 == 0 {
                                    users.remove(physical);
                                }
                            }
                        }
                    }
                }
                if !matches!(placement, Placement::Map { .. }) {
                    peak = peak.max(committed);
                }
            }
            assert_eq!(peak, result.peak_committed_bytes, "{}", policy.name);
            assert_eq!(committed, samples.last().unwrap().committed_bytes, "{}", policy.name);
            assert_eq!(work, result.pages, "{}", policy.name);
            assert!(live.is_empty());
            if policy.name == "vmm-tiers" {
                assert_eq!(tiers.len(), 2, "both tiers opened");
            }
        }
    }

    /// The default policy with tiers that open early: 8 MiB pages from 64 MiB committed, 32 MiB from 256 MiB.
    fn tiered_policy() -> Policy {
        let heap = VirtualHeapConfig::default()
            .with_tiers(vec![HeapTier::new(64 << 20, 8 << 20), HeapTier::new(256 << 20, 32 << 20)]);
        Policy {
            name: "vmm-tiers",
            description: "virtual heap with early tiers",
            config: AllocatorConfig::default().with_virtual_heap(heap),
        }
    }

    /// Whether mapped runs (start -> size, disjoint) cover `[from, to)` without a hole.
    fn covered(mapped: &BTreeMap<u64, u64>, from: u64, to: u64) -> bool {
        let mut at = from;
        while at < to {
            match mapped.range(..=at).next_back() {
                Some((&start, &length)) if start + length > at => at = start + length,
                _ => return false,
            }
        }
        true
    }

    #[test]
    fn block_numbering_gives_each_block_its_own_range() {
        let events = events();
        let (result, placements, _) = observe(&policy("blocks").unwrap(), &events);
        let maps: Vec<(u64, u64)> = placements
            .iter()
            .filter_map(|p| match *p {
                Placement::Map { offset, size } => Some((offset, size)),
                _ => None,
            })
            .collect();
        let unmaps = placements.iter().filter(|p| matches!(p, Placement::Unmap { .. })).count();
        assert!(unmaps > 0);
        assert_eq!(
            (maps.len() + unmaps) as u64,
            result.driver_ops,
            "a map per creation, an unmap per destruction"
        );
        assert!(maps.windows(2).all(|w| w[1].0 > w[0].0 + w[0].1), "blocks never touch: {maps:?}");
        assert_eq!(maps[0].0, 0);
    }
}
