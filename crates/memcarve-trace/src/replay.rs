//! Replays a trace on memcarve's allocator, one event at a time as a live allocator would see them, on the host
//! backend in simulated mode (no memory is committed, so traces larger than this machine replay), and measures
//! what it would have cost: peak committed bytes, driver operations, and speed.
//!
//! Policies are named allocator configurations. Every figure comes from the allocator and the device as they
//! ran; none is read from the trace ahead of time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::virtual_heap::{PageEvent, ReleaseImmediately};
use memcarve::{Allocation, AllocationDesc, Allocator, AllocatorConfig, MemoryLocation, VirtualHeapConfig};

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
            description: "virtual heap (as the CUDA backend uses it): 2 MiB pages committed on demand, empty pages \
                          kept up to 64 MiB + 5 % of live bytes",
            config: AllocatorConfig::default().with_virtual_heap(VirtualHeapConfig::default()),
        },
        Policy {
            name: "vmm-eager",
            description: "virtual heap that decommits every empty page at once (least memory, most driver calls)",
            config: AllocatorConfig::default()
                .with_virtual_heap(VirtualHeapConfig::default().with_release(Arc::new(ReleaseImmediately))),
        },
        Policy {
            name: "blocks",
            description: "block mode (as Vulkan uses it): blocks of 32 MiB growing to 256 MiB, one empty block \
                          cached per pool, dedicated blocks from 128 MiB",
            config: AllocatorConfig::default(),
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
    /// Time spent in the allocator (reading the trace excluded).
    pub replay_time: Duration,
    /// PyTorch's own figures from the trace, when it came from a snapshot.
    pub pytorch: Option<PyTorchFigures>,
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

    /// (Allocations + frees) per second of replay.
    pub fn ops_per_sec(&self) -> f64 {
        let seconds = self.replay_time.as_secs_f64();
        if seconds == 0.0 { 0.0 } else { (self.allocations + self.frees) as f64 / seconds }
    }
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
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Placement::Alloc { id, offset, size } => write!(f, "alloc,{id},{offset},{size}"),
            Placement::Free { id } => write!(f, "free,{id},,"),
            Placement::Map { offset, size } => write!(f, "map,,{offset},{size}"),
            Placement::Unmap { offset, size } => write!(f, "unmap,,{offset},{size}"),
        }
    }
}

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
                replay_time: Duration::ZERO,
                pytorch: None,
            },
            placements: None,
        })
    }

    /// Reports every allocation, free, map and unmap to `sink`, in replay order (virtual-heap policies report
    /// page runs; block policies report block creations as `map` and destructions as `unmap`, numbering blocks
    /// in one address space).
    pub fn with_placements(mut self, sink: impl FnMut(Placement) + 'static) -> Replayer {
        self.allocator.record_page_events(true);
        self.placements = Some(Box::new(sink));
        self
    }

    /// Replays a batch of events (already read, so that reading is not timed).
    pub fn replay(&mut self, events: &[Event]) {
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
                                self.log_pages();
                                let offset = allocation.offset();
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
                        }
                    }
                    None => self.result.unmatched_frees += 1,
                },
            }
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
            for event in self.allocator.take_page_events(memory_type) {
                self.emit(match event {
                    PageEvent::Commit { offset, size } => Placement::Map { offset, size },
                    PageEvent::Decommit { offset, size } => Placement::Unmap { offset, size },
                });
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

    /// Ends the replay: figures from the allocator and the device.
    pub fn finish(mut self, pytorch: Option<PyTorchFigures>) -> ReplayResult {
        let counters = self.device.counters();
        self.result.peak_committed_bytes = self.allocator.diagnostics().peak_committed_bytes;
        self.result.driver_ops =
            counters.blocks_created + counters.blocks_destroyed + counters.commits + counters.decommits;
        self.result.pytorch = pytorch;
        let _ = &self.policy;
        self.result
    }
}
