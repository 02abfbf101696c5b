//! The trace model: a trace is a sequence of [`Event`]s (allocations and frees) plus a [`TraceSummary`] of
//! figures beside them. Events are consumed one at a time; [`LiveAllocations`] checks that a sequence is
//! well formed (every free names a live allocation, ids are unique while live) and tracks live bytes.

use std::collections::HashMap;
use std::fmt;

/// Identifies an allocation within one trace: an [`Alloc`] opens it, the [`Free`] with the same id closes it.
///
/// An id may be reused once its allocation is freed (the PyTorch importer never does; it numbers
/// allocations from 0 in the order they were made).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AllocationId(pub u64);

impl fmt::Display for AllocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where the traced program wanted the memory (the trace format's own names, mirroring the allocator's
/// memory locations without depending on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// Device-local memory the host does not touch (`gpu-only`).
    GpuOnly,
    /// Host-written, device-read memory (`upload`).
    Upload,
    /// Device-written, host-read memory (`readback`).
    Readback,
    /// The recorder said it does not know (`unknown`).
    Unknown,
}

impl Location {
    /// Every location, in the order of the format's documentation.
    pub const ALL: [Location; 4] =
        [Location::GpuOnly, Location::Upload, Location::Readback, Location::Unknown];

    /// The name used in the trace format.
    pub fn as_str(self) -> &'static str {
        match self {
            Location::GpuOnly => "gpu-only",
            Location::Upload => "upload",
            Location::Readback => "readback",
            Location::Unknown => "unknown",
        }
    }

    /// The location with this trace-format name, if any.
    pub fn from_name(name: &str) -> Option<Location> {
        Location::ALL.into_iter().find(|location| location.as_str() == name)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of resource the memory backs; matters for Vulkan's buffer-image granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// A buffer: linear layout (`buffer`).
    Buffer,
    /// An image with linear tiling (`linear-image`).
    LinearImage,
    /// An image with optimal (opaque) tiling (`optimal-image`).
    OptimalImage,
    /// The recorder said it does not know (`unknown`).
    Unknown,
}

impl Class {
    /// Every class, in the order of the format's documentation.
    pub const ALL: [Class; 4] = [Class::Buffer, Class::LinearImage, Class::OptimalImage, Class::Unknown];

    /// The name used in the trace format.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Buffer => "buffer",
            Class::LinearImage => "linear-image",
            Class::OptimalImage => "optimal-image",
            Class::Unknown => "unknown",
        }
    }

    /// The class with this trace-format name, if any.
    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|class| class.as_str() == name)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An allocation request as the traced program made it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Alloc {
    /// The allocation's id; unique among live allocations.
    pub id: AllocationId,
    /// Requested size in bytes, at least 1.
    pub size: u64,
    /// Required alignment in bytes: a power of two.
    pub alignment: u64,
    /// The stream (queue) the allocation is used on, as the recorder numbered it; 0 when it has one stream.
    pub stream: u64,
    /// Where the memory should live, if the recorder said.
    pub location: Option<Location>,
    /// The kind of resource, if the recorder said.
    pub class: Option<Class>,
    /// A debug name, if any. An empty name is the same as none: the format writes both as nothing.
    pub name: Option<String>,
    /// When it happened, in microseconds on the recorder's clock.
    pub time_us: Option<u64>,
}

impl Alloc {
    /// An allocation with only the required fields set; the optional ones are `None`.
    pub fn new(id: AllocationId, size: u64, alignment: u64, stream: u64) -> Alloc {
        Alloc { id, size, alignment, stream, location: None, class: None, name: None, time_us: None }
    }
}

/// The release of a live allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Free {
    /// The id of the allocation freed.
    pub id: AllocationId,
    /// When it happened, in microseconds on the recorder's clock.
    pub time_us: Option<u64>,
}

/// One step of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Event {
    /// An allocation is made.
    Alloc(Alloc),
    /// A live allocation is released.
    Free(Free),
}

impl Event {
    /// The id of the allocation the event is about.
    pub fn id(&self) -> AllocationId {
        match self {
            Event::Alloc(alloc) => alloc.id,
            Event::Free(free) => free.id,
        }
    }

    /// When it happened, if recorded.
    pub fn time_us(&self) -> Option<u64> {
        match self {
            Event::Alloc(alloc) => alloc.time_us,
            Event::Free(free) => free.time_us,
        }
    }
}

/// PyTorch's own figures for a trace taken from its caching allocator, kept beside the events so that a
/// replay can be compared with what PyTorch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PyTorchFigures {
    /// The largest running sum of `segment_alloc`/`segment_map` minus `segment_free`/`segment_unmap` sizes:
    /// the most memory PyTorch held from the driver at once while recording.
    pub peak_reserved_bytes: u64,
    /// How many segment operations (`segment_alloc`, `segment_free`, `segment_map`, `segment_unmap`)
    /// PyTorch made: its driver calls.
    pub segment_ops: u64,
    /// How many out-of-memory (`oom`) entries the snapshot recorded.
    pub ooms: u64,
}

impl PyTorchFigures {
    /// PyTorch's overhead against a peak of live bytes: peak reserved / peak live (1.00 is the limit).
    /// `None` when `peak_live_bytes` is 0.
    pub fn overhead(&self, peak_live_bytes: u64) -> Option<f64> {
        ratio(self.peak_reserved_bytes, peak_live_bytes)
    }
}

/// Figures of a whole trace: counts of its events and, for an imported trace, what the import dropped and
/// PyTorch's own figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TraceSummary {
    /// Allocations made.
    pub allocations: u64,
    /// Frees of allocations made within the trace.
    pub frees: u64,
    /// Frees the importer dropped because their allocation predates the recording (not in the events).
    pub dropped_frees: u64,
    /// Allocations still live at the end of the trace.
    pub live_at_end: u64,
    /// The largest sum of requested sizes of allocations live at once.
    pub peak_live_bytes: u64,
    /// PyTorch's figures, for traces imported from a PyTorch snapshot.
    pub pytorch: Option<PyTorchFigures>,
}

impl TraceSummary {
    /// PyTorch's overhead on this trace (peak reserved / peak live), if the trace has PyTorch figures and a
    /// non-zero peak.
    pub fn pytorch_overhead(&self) -> Option<f64> {
        self.pytorch.and_then(|pytorch| pytorch.overhead(self.peak_live_bytes))
    }
}

fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator != 0).then(|| numerator as f64 / denominator as f64)
}

/// Counts of a sequence of events, as far as [`LiveAllocations`] has seen it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TraceStats {
    /// Events seen.
    pub events: u64,
    /// Allocations seen.
    pub allocations: u64,
    /// Frees seen.
    pub frees: u64,
    /// Allocations live now.
    pub live: u64,
    /// Requested bytes of the allocations live now.
    pub live_bytes: u64,
    /// The largest value `live_bytes` has had.
    pub peak_live_bytes: u64,
}

/// Why an event cannot follow the events before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventFault {
    /// An allocation of 0 bytes.
    ZeroSize {
        /// The allocation.
        id: AllocationId,
    },
    /// An alignment that is not a power of two.
    BadAlignment {
        /// The allocation.
        id: AllocationId,
        /// Its alignment.
        alignment: u64,
    },
    /// An allocation whose id is already live.
    DuplicateId {
        /// The id.
        id: AllocationId,
    },
    /// A free of an id that is not live.
    UnknownId {
        /// The id.
        id: AllocationId,
    },
}

impl fmt::Display for EventFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventFault::ZeroSize { id } => write!(f, "allocation {id} has size 0"),
            EventFault::BadAlignment { id, alignment } => {
                write!(f, "allocation {id} has alignment {alignment}, not a power of two")
            }
            EventFault::DuplicateId { id } => {
                write!(f, "allocation {id} is made while an allocation {id} is live")
            }
            EventFault::UnknownId { id } => write!(f, "free of allocation {id}, which is not live"),
        }
    }
}

/// The allocations live after a sequence of events: checks each next event against them and keeps the
/// [`TraceStats`]. Memory is proportional to the live allocations, not to the events.
#[derive(Debug, Clone, Default)]
pub struct LiveAllocations {
    sizes: HashMap<AllocationId, u64>,
    stats: TraceStats,
}

impl LiveAllocations {
    /// No live allocations, no events seen.
    pub fn new() -> LiveAllocations {
        LiveAllocations::default()
    }

    /// Checks `event` and applies it. On a fault nothing changes.
    pub fn apply(&mut self, event: &Event) -> Result<(), EventFault> {
        match event {
            Event::Alloc(alloc) => {
                if alloc.size == 0 {
                    return Err(EventFault::ZeroSize { id: alloc.id });
                }
                if !alloc.alignment.is_power_of_two() {
                    return Err(EventFault::BadAlignment { id: alloc.id, alignment: alloc.alignment });
                }
                if self.sizes.contains_key(&alloc.id) {
                    return Err(EventFault::DuplicateId { id: alloc.id });
                }
                self.sizes.insert(alloc.id, alloc.size);
                let stats = &mut self.stats;
                stats.allocations += 1;
                stats.live += 1;
                stats.live_bytes = stats.live_bytes.saturating_add(alloc.size);
                stats.peak_live_bytes = stats.peak_live_bytes.max(stats.live_bytes);
            }
            Event::Free(free) => {
                let size = self.sizes.remove(&free.id).ok_or(EventFault::UnknownId { id: free.id })?;
                let stats = &mut self.stats;
                stats.frees += 1;
                stats.live -= 1;
                stats.live_bytes = stats.live_bytes.saturating_sub(size);
            }
        }
        self.stats.events += 1;
        Ok(())
    }

    /// The requested size of a live allocation.
    pub fn size_of(&self, id: AllocationId) -> Option<u64> {
        self.sizes.get(&id).copied()
    }

    /// Counts so far.
    pub fn stats(&self) -> TraceStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(id: u64, size: u64) -> Event {
        Event::Alloc(Alloc::new(AllocationId(id), size, 512, 0))
    }

    fn free(id: u64) -> Event {
        Event::Free(Free { id: AllocationId(id), time_us: None })
    }

    #[test]
    fn live_allocations_track_peak_and_reject_bad_sequences() {
        let mut live = LiveAllocations::new();
        live.apply(&alloc(1, 100)).unwrap();
        live.apply(&alloc(2, 50)).unwrap();
        assert_eq!(live.apply(&alloc(2, 7)), Err(EventFault::DuplicateId { id: AllocationId(2) }));
        live.apply(&free(1)).unwrap();
        assert_eq!(live.apply(&free(1)), Err(EventFault::UnknownId { id: AllocationId(1) }));
        live.apply(&alloc(1, 20)).unwrap(); // reuse after free is fine
        assert_eq!(live.apply(&alloc(3, 0)), Err(EventFault::ZeroSize { id: AllocationId(3) }));
        let mut odd = Alloc::new(AllocationId(3), 8, 3, 0);
        assert!(matches!(live.apply(&Event::Alloc(odd.clone())), Err(EventFault::BadAlignment { .. })));
        odd.alignment = 0;
        assert!(matches!(live.apply(&Event::Alloc(odd)), Err(EventFault::BadAlignment { .. })));
        let stats = live.stats();
        assert_eq!(
            stats,
            TraceStats { events: 4, allocations: 3, frees: 1, live: 2, live_bytes: 70, peak_live_bytes: 150 }
        );
        assert_eq!(live.size_of(AllocationId(1)), Some(20));
    }

    #[test]
    fn names_round_trip() {
        for location in Location::ALL {
            assert_eq!(Location::from_name(location.as_str()), Some(location));
        }
        for class in Class::ALL {
            assert_eq!(Class::from_name(class.as_str()), Some(class));
        }
        assert_eq!(Location::from_name("gpu"), None);
    }

    #[test]
    fn overhead_is_none_without_a_peak() {
        let figures = PyTorchFigures { peak_reserved_bytes: 300, segment_ops: 2, ooms: 0 };
        assert_eq!(figures.overhead(0), None);
        assert_eq!(figures.overhead(200), Some(1.5));
        let summary =
            TraceSummary { peak_live_bytes: 200, pytorch: Some(figures), ..TraceSummary::default() };
        assert_eq!(summary.pytorch_overhead(), Some(1.5));
    }
}
