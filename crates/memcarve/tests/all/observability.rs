//! Statistics, diagnostics, the event ring and device-memory callbacks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memcarve::backends::host::MemoryProfile;
use memcarve::diagnostics::{DeviceMemoryCallbacks, EventKind};
use memcarve::{
    AllocationDesc, AllocatorConfig, Dedicated, MemoryLocation, ResourceClass, VirtualHeapConfig,
};

use crate::basics::{allocator, simulated};

#[test]
fn stats_break_down_by_type_and_class_and_add_up() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let buffers: Vec<_> = (0..10)
        .map(|_| allocator.allocate(&AllocationDesc::new("b", 1000, MemoryLocation::GpuOnly)).unwrap())
        .collect();
    let image_desc =
        AllocationDesc::new("i", 64 << 10, MemoryLocation::GpuOnly).with_class(ResourceClass::OptimalImage);
    let image = allocator.allocate(&image_desc).unwrap();
    let upload = allocator.allocate(&AllocationDesc::new("u", 4096, MemoryLocation::CpuToGpu)).unwrap();
    let dedicated = allocator
        .allocate(
            &AllocationDesc::new("d", 1 << 20, MemoryLocation::GpuOnly).with_dedicated(Dedicated::Required),
        )
        .unwrap();
    let stats = allocator.stats();
    assert_eq!(stats.total.allocation_count, 13);
    assert_eq!(stats.total.block_count, 4);
    assert_eq!(stats.total.committed_bytes, allocator.committed_bytes());
    assert_eq!(stats.total.used_bytes + stats.total.free_bytes, stats.total.committed_bytes);
    let buffers_in_type_1 = stats.type_and_class(1, ResourceClass::Buffer);
    assert_eq!(
        (buffers_in_type_1.allocation_count, buffers_in_type_1.block_count),
        (11, 2),
        "10 pooled + dedicated"
    );
    assert_eq!(stats.type_and_class(1, ResourceClass::OptimalImage).allocation_count, 1);
    assert_eq!(stats.memory_type(4).allocation_count, 1);
    assert_eq!(stats.class(ResourceClass::Buffer).allocation_count, 12);
    let type_sum: u64 = stats.per_memory_type.iter().map(|s| s.committed_bytes).sum();
    assert_eq!(type_sum, stats.total.committed_bytes);
    assert!(stats.total.largest_free_range > 0 && stats.total.fragmentation() < 1.0);
    for a in buffers.into_iter().chain([image, upload, dedicated]) {
        allocator.free(a).unwrap();
    }
    let stats = allocator.stats();
    assert_eq!((stats.total.allocation_count, stats.total.empty_block_count), (0, 3));
}

#[test]
fn diagnostics_count_and_keep_high_water_marks() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let desc = AllocationDesc::new("x", 1 << 20, MemoryLocation::GpuOnly);
    let live: Vec<_> = (0..5).map(|_| allocator.allocate(&desc).unwrap()).collect();
    let _ = allocator.allocate(&AllocationDesc::new("bad", 0, MemoryLocation::GpuOnly));
    let d = allocator.diagnostics();
    assert_eq!((d.block_creations, d.block_reuses, d.failures), (1, 4, 1));
    assert_eq!((d.peak_live_allocations, d.peak_live_bytes), (5, 5 << 20));
    assert_eq!(d.peak_committed_bytes, allocator.committed_bytes());
    for a in live {
        allocator.free(a).unwrap();
    }
    assert_eq!(allocator.diagnostics().peak_live_allocations, 5, "peaks stay after frees");
    allocator.reset_diagnostics();
    let d = allocator.diagnostics();
    assert_eq!((d.block_creations, d.failures, d.peak_live_allocations, d.peak_live_bytes), (0, 0, 0, 0));
    assert_eq!(d.peak_committed_bytes, allocator.committed_bytes(), "the cached block is still committed");
}

/// A virtual heap counts its allocations itself (under its lock); the diagnostics and `used_bytes` add them to
/// what the memory type's blocks count, and a reset starts both windows.
#[test]
fn diagnostics_count_a_virtual_heaps_allocations_beside_the_blocks() {
    let device = simulated(MemoryProfile::discrete());
    let allocator =
        allocator(&device, AllocatorConfig::default().with_virtual_heap(VirtualHeapConfig::default()));
    let desc = AllocationDesc::new("x", 1 << 20, MemoryLocation::GpuOnly);
    let mut live: Vec<_> = (0..6).map(|_| allocator.allocate(&desc).unwrap()).collect();
    let own = allocator
        .allocate(
            &AllocationDesc::new("d", 3 << 20, MemoryLocation::GpuOnly).with_dedicated(Dedicated::Required),
        )
        .unwrap();
    assert_eq!(own.memory_type(), live[0].memory_type(), "the dedicated block is of the heap's memory type");
    assert_eq!(allocator.used_bytes(), (6 << 20) + (3 << 20));
    let d = allocator.diagnostics();
    assert_eq!((d.peak_live_allocations, d.peak_live_bytes), (7, (6 << 20) + (3 << 20)));
    // The first allocation mapped pages (with pages ahead for the next ones); the others found them ready.
    let mapped_for = 1 + 5 - d.block_reuses;
    assert!((1..=6).contains(&mapped_for), "{d:?}");
    for allocation in live.drain(2..) {
        allocator.free(allocation).unwrap();
    }
    assert_eq!(allocator.used_bytes(), (2 << 20) + (3 << 20));
    assert_eq!(allocator.diagnostics().peak_live_allocations, 7, "peaks stay after frees");
    allocator.reset_diagnostics();
    let d = allocator.diagnostics();
    assert_eq!((d.block_reuses, d.peak_live_allocations, d.peak_live_bytes), (0, 3, (2 << 20) + (3 << 20)));
    let again = allocator.allocate(&desc).unwrap();
    let d = allocator.diagnostics();
    assert_eq!((d.block_reuses, d.peak_live_allocations), (1, 4), "its pages were ready: {d:?}");
    for allocation in live.into_iter().chain([own, again]) {
        allocator.free(allocation).unwrap();
    }
    assert_eq!(allocator.used_bytes(), 0);
}

#[test]
fn event_ring_records_in_order_and_wraps() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default().with_event_capacity(8));
    let desc = AllocationDesc::new("x", 4096, MemoryLocation::GpuOnly);
    let a = allocator.allocate(&desc).unwrap();
    let (events, dropped) = allocator.events();
    assert_eq!(dropped, 0);
    assert!(matches!(events[0].kind, EventKind::BlockCreated { memory_type: 1, .. }));
    assert!(matches!(events[1].kind, EventKind::Allocated { size: 4096, .. }));
    allocator.free(a).unwrap();
    for _ in 0..10 {
        let b = allocator.allocate(&desc).unwrap();
        allocator.free(b).unwrap();
    }
    let (events, dropped) = allocator.events();
    assert_eq!(events.len(), 8);
    assert_eq!(dropped, 3 + 20 - 8, "block created, allocated, freed, then ten rounds of two");
    assert!(events.windows(2).all(|w| w[1].sequence == w[0].sequence + 1));
    assert!(matches!(events.last().unwrap().kind, EventKind::Freed { size: 4096, .. }));
    assert_eq!(allocator.trim_empty_blocks(), 1);
    let (events, _) = allocator.events();
    assert!(matches!(events[events.len() - 2].kind, EventKind::BlockDestroyed { .. }));
    assert!(matches!(events.last().unwrap().kind, EventKind::Trimmed { blocks: 1 }));

    let quiet = crate::basics::allocator(&device, AllocatorConfig::default());
    drop(quiet.allocate(&desc).map(|a| quiet.free(a)));
    assert_eq!(quiet.events(), (Vec::new(), 0), "capacity 0 records nothing");
}

#[test]
fn virtual_heap_commits_appear_in_the_ring() {
    let device = simulated(MemoryProfile::discrete());
    let config =
        AllocatorConfig::default().with_virtual_heap(VirtualHeapConfig::default()).with_event_capacity(16);
    let allocator = allocator(&device, config);
    let a = allocator.allocate(&AllocationDesc::new("x", 3 << 20, MemoryLocation::GpuOnly)).unwrap();
    let (events, _) = allocator.events();
    // The request's two pages, and what the default release policy commits ahead of it (half of that), from
    // the request's start (above the region kept for small requests).
    let offset = a.offset();
    assert!(offset > 0 && offset.is_multiple_of(2 << 20), "{offset}");
    assert!(
        matches!(events[0].kind, EventKind::Committed { offset: o, size, .. } if o == offset && size == 6 << 20)
    );
    assert_eq!(allocator.diagnostics().peak_committed_bytes, 6 << 20);
    allocator.free(a).unwrap();
    allocator.trim_empty_blocks();
    let (events, _) = allocator.events();
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::Decommitted { .. })));
    assert_eq!(allocator.committed_bytes(), 0);
}

#[derive(Debug, Default)]
struct Profiler {
    created: AtomicU64,
    destroyed: AtomicU64,
    bytes: AtomicU64,
}

impl DeviceMemoryCallbacks for Profiler {
    fn block_created(&self, _memory_type: u32, size: u64) {
        self.created.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(size, Ordering::Relaxed);
    }

    fn block_destroyed(&self, _memory_type: u32, size: u64) {
        self.destroyed.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_sub(size, Ordering::Relaxed);
    }
}

#[test]
fn callbacks_see_every_block() {
    let device = simulated(MemoryProfile::discrete());
    let profiler = Arc::new(Profiler::default());
    let allocator = allocator(&device, AllocatorConfig::default().with_callbacks(profiler.clone()));
    let live: Vec<_> = (0..20)
        .map(|i| {
            allocator.allocate(&AllocationDesc::new("x", (i + 1) << 20, MemoryLocation::GpuOnly)).unwrap()
        })
        .collect();
    assert_eq!(profiler.created.load(Ordering::Relaxed), device.counters().blocks_created);
    assert_eq!(profiler.bytes.load(Ordering::Relaxed), allocator.committed_bytes());
    for a in live {
        allocator.free(a).unwrap();
    }
    drop(allocator);
    assert_eq!(profiler.created.load(Ordering::Relaxed), profiler.destroyed.load(Ordering::Relaxed));
    assert_eq!(profiler.bytes.load(Ordering::Relaxed), 0);
}

#[test]
fn leak_report_names_what_is_still_live() {
    let device = simulated(MemoryProfile::discrete());
    let config = AllocatorConfig::default().with_tracking(true, true).with_leak_report_on_drop(false);
    let allocator = allocator(&device, config);
    let kept =
        allocator.allocate(&AllocationDesc::new("shadow map", 12345, MemoryLocation::GpuOnly)).unwrap();
    let freed = allocator.allocate(&AllocationDesc::new("temporary", 100, MemoryLocation::GpuOnly)).unwrap();
    let exported = allocator
        .allocate(
            &AllocationDesc::new("interop", 4096, MemoryLocation::GpuOnly)
                .with_dedicated(Dedicated::Required),
        )
        .unwrap();
    allocator.free(freed).unwrap();
    let report = allocator.leak_report();
    let mut names: Vec<_> = report.leaks.iter().map(|l| (l.name.as_str(), l.size)).collect();
    names.sort();
    assert_eq!(names, [("interop", 4096), ("shadow map", 12345)]);
    assert_eq!(report.total_bytes(), 12345 + 4096);
    let leak = report.leaks.iter().find(|l| l.name == "shadow map").unwrap();
    let backtrace = leak.backtrace.as_deref().unwrap();
    assert!(
        backtrace.contains("leak_report_names_what_is_still_live"),
        "the backtrace shows the test: {backtrace}"
    );
    let text = report.to_string();
    assert!(text.contains("2 allocations") && text.contains("shadow map"));
    allocator.free(kept).unwrap();
    allocator.free(exported).unwrap();
    assert!(allocator.leak_report().is_empty());

    // Without tracking, leaks are still listed, by size.
    let untracked =
        crate::basics::allocator(&device, AllocatorConfig::default().with_leak_report_on_drop(false));
    let a = untracked.allocate(&AllocationDesc::new("x", 777, MemoryLocation::CpuToGpu)).unwrap();
    let report = untracked.leak_report();
    assert_eq!((report.leaks.len(), report.leaks[0].size, report.leaks[0].name.as_str()), (1, 777, ""));
    untracked.free(a).unwrap();
}

#[test]
fn reports_describe_every_block_and_range() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default().with_tracking(true, false));
    let a = allocator.allocate(&AllocationDesc::new("vertices", 1000, MemoryLocation::GpuOnly)).unwrap();
    let b = allocator.allocate(&AllocationDesc::new("indices", 500, MemoryLocation::GpuOnly)).unwrap();
    let texture = AllocationDesc::new("albedo", 1 << 20, MemoryLocation::GpuOnly)
        .with_class(ResourceClass::OptimalImage)
        .with_dedicated(Dedicated::Required);
    let c = allocator.allocate(&texture).unwrap();
    allocator.free(a).unwrap();

    let report = allocator.report();
    assert_eq!(report.blocks.len(), 2);
    let pooled =
        report.blocks.iter().find(|block| !block.ranges.is_empty() && block.ranges.len() > 1).unwrap();
    let covered: u64 = pooled.ranges.iter().map(|r| r.size).sum();
    assert_eq!(covered, pooled.size, "ranges tile the block");
    assert!(pooled.ranges.iter().any(|r| r.used && r.name.as_deref() == Some("indices")));
    let json: serde_json::Value = serde_json::from_str(&allocator.report_json()).unwrap();
    assert_eq!(json["blocks"].as_array().unwrap().len(), 2);
    assert_eq!(json["total"]["allocation_count"], 2);

    let dump: serde_json::Value = serde_json::from_str(&allocator.vma_dump_json()).unwrap();
    assert_eq!(dump["General"]["API"], "Vulkan");
    let type_1 = &dump["DefaultPools"]["Type 1"];
    let suballocations = type_1["Blocks"]["0"]["Suballocations"].as_array().unwrap();
    assert!(suballocations.iter().any(|s| s["Type"] == "FREE"));
    assert!(suballocations.iter().any(|s| s["Type"] == "BUFFER" && s["Name"] == "indices"));
    assert_eq!(type_1["DedicatedAllocations"][0]["Type"], "IMAGE_OPTIMAL");
    assert_eq!(dump["Total"]["AllocationCount"], 2);
    allocator.free(b).unwrap();
    allocator.free(c).unwrap();
}
