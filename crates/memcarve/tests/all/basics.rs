//! The allocator's behaviour on single requests: placement, policy, dedicated blocks, bad input.

use std::sync::Arc;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{
    AllocationDesc, AllocationOptions, AllocationSizes, Allocator, AllocatorConfig, BudgetPolicy, Dedicated,
    Error, MemoryLocation, MemoryPropertyFlags, ResourceClass, Usage,
};

pub fn simulated(profile: MemoryProfile) -> Arc<HostDevice> {
    Arc::new(HostDevice::new(HostConfig::new(profile, HostMode::Simulated)))
}

pub fn allocator(device: &Arc<HostDevice>, config: AllocatorConfig) -> Allocator<Arc<HostDevice>> {
    Allocator::new(Arc::clone(device), config).unwrap()
}

/// `raw` rebuilt into an allocation, for a test that frees it at once: every caller hands the result straight to
/// `free`, which consumes it, so no two allocations rebuilt from one value are ever held together (and none is
/// mapped), as [`memcarve::Allocation::from_raw`] requires.
pub fn rebuilt(raw: memcarve::RawAllocation) -> memcarve::Allocation {
    // SAFETY: see above: each rebuilt allocation is consumed by `free` before the next is made.
    unsafe { memcarve::Allocation::from_raw(raw) }
}

#[test]
fn small_requests_share_a_block_per_type_and_class() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let desc = AllocationDesc::new("a", 4096, MemoryLocation::GpuOnly).with_alignment(256);
    let a = allocator.allocate(&desc).unwrap();
    let b = allocator.allocate(&desc).unwrap();
    assert_eq!(a.block_key(), b.block_key(), "same type and class share a block");
    assert_eq!(a.memory_type(), 1, "GpuOnly goes to plain device-local memory on the H200 profile");
    let image = allocator.allocate(&desc.with_class(ResourceClass::OptimalImage)).unwrap();
    assert_ne!(image.block_key(), a.block_key(), "classes live in separate pools");
    assert_eq!(allocator.block_count(), 2);
    assert_eq!(device.counters().live_blocks, 2);
    allocator.check().unwrap();
    for allocation in [a, b, image] {
        allocator.free(allocation).unwrap();
    }
    allocator.check().unwrap();
    assert_eq!(allocator.used_bytes(), 0);
    assert_eq!(allocator.block_count(), 2, "one empty block per pool stays cached");
    assert_eq!(allocator.trim_empty_blocks(), 2);
    assert_eq!(device.counters().live_blocks, 0);
}

#[test]
fn policy_choices_follow_usage_and_are_explained() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let upload = AllocationDesc::new("staging", 1 << 20, MemoryLocation::CpuToGpu);
    let choice = allocator.select_memory_type(&upload).unwrap();
    assert_eq!(choice.memory_type, 4);
    assert!(choice.flags.contains(MemoryPropertyFlags::HOST_VISIBLE | MemoryPropertyFlags::DEVICE_LOCAL));
    assert!(choice.within_budget);
    let allocation = allocator.allocate(&upload).unwrap();
    assert_eq!(allocation.memory_type(), 4);
    allocator.free(allocation).unwrap();

    let readback = AllocationDesc::new("readback", 1 << 20, MemoryLocation::GpuToCpu);
    assert_eq!(allocator.select_memory_type(&readback).unwrap().memory_type, 3);
    let no_type = AllocationDesc::new("x", 1 << 20, MemoryLocation::GpuOnly).with_memory_type_bits(0b1100);
    assert_eq!(allocator.allocate(&no_type).unwrap_err(), Error::NoCompatibleMemoryType);
}

#[test]
fn hostile_settings_and_requests_are_typed_errors_and_make_no_blocks() {
    let device = simulated(MemoryProfile::discrete());
    // An event ring of any capacity (made up front, `usize::MAX` was a panic) grows as events come.
    let events = allocator(&device, AllocatorConfig::default().with_event_capacity(usize::MAX));
    events.free(events.allocate(&AllocationDesc::new("a", 64, MemoryLocation::GpuOnly)).unwrap()).unwrap();
    drop(events);
    assert_eq!(
        Allocator::new(Arc::clone(&device), AllocatorConfig::default().with_debug_margin(u64::MAX))
            .unwrap_err(),
        Error::InvalidConfig { reason: "debug margin above 1 MiB" }
    );

    // An alignment no block can hold is refused before a block is made for it (with margins, whose sums
    // overflowed here), in the default pools and in a custom pool.
    let allocator = allocator(&device, AllocatorConfig::default().with_debug_margin(16));
    let blocks = device.counters().live_blocks;
    let huge = AllocationDesc::new("huge", 1, MemoryLocation::CpuToGpu).with_alignment(1 << 63);
    assert_eq!(allocator.allocate(&huge).unwrap_err(), Error::InvalidAlignment { alignment: 1 << 63 });
    let pool = allocator.create_pool(&memcarve::PoolDesc::new("small", 4, 1 << 20)).unwrap();
    let blocks_with_pool = device.counters().live_blocks;
    let aligned = AllocationDesc::new("x", 64, MemoryLocation::CpuToGpu).with_alignment(2 << 20);
    assert_eq!(
        allocator.allocate_in_pool(pool, &aligned).unwrap_err(),
        Error::InvalidAlignment { alignment: 2 << 20 }
    );
    assert_eq!(blocks_with_pool, blocks, "the pool makes no block of its own at first");
    assert_eq!(device.counters().live_blocks, blocks, "no block was made for either request");
    allocator.destroy_pool(pool).unwrap();
    allocator.check().unwrap();

    // A virtual heap whose reservation cannot be rounded to pages: a typed error, not an overflow.
    let heap = memcarve::VirtualHeapConfig::default().with_reserve_size(u64::MAX);
    let virtual_heap = self::allocator(&device, AllocatorConfig::default().with_virtual_heap(heap));
    assert!(virtual_heap.allocate(&AllocationDesc::new("v", 4096, MemoryLocation::GpuOnly)).is_err());
}

#[test]
fn bad_input_is_a_typed_error() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let desc = |size| AllocationDesc::new("x", size, MemoryLocation::GpuOnly);
    assert_eq!(allocator.allocate(&desc(0)).unwrap_err(), Error::ZeroSize);
    assert_eq!(
        allocator.allocate(&desc(64).with_alignment(3)).unwrap_err(),
        Error::InvalidAlignment { alignment: 3 }
    );
    assert!(matches!(allocator.allocate(&desc(1 << 40)).unwrap_err(), Error::SizeTooLarge { .. }));

    let other = allocator_for_other(&device);
    let foreign = other.allocate(&desc(64)).unwrap();
    let raw = foreign.into_raw();
    assert_eq!(allocator.free(rebuilt(raw)).unwrap_err(), Error::ForeignAllocation);
    other.free(rebuilt(raw)).unwrap();
    assert_eq!(other.free(rebuilt(raw)).unwrap_err(), Error::DoubleFree);
    assert_eq!(allocator.failures(), 3);
    allocator.check().unwrap();
    other.check().unwrap();
}

fn allocator_for_other(device: &Arc<HostDevice>) -> Allocator<Arc<HostDevice>> {
    allocator(device, AllocatorConfig::default())
}

trait Failures {
    fn failures(&self) -> u64;
}

impl Failures for Allocator<Arc<HostDevice>> {
    fn failures(&self) -> u64 {
        self.diagnostics().failures
    }
}

#[test]
fn dedicated_blocks_for_large_or_required_requests() {
    let device = simulated(MemoryProfile::discrete());
    // Freed blocks are given back at once here (kept blocks: `kept_blocks_are_reused_within_the_peak`).
    let config =
        AllocatorConfig::default().with_dedicated_threshold(64 << 20).with_keep_blocks_within_peak(false);
    let allocator = allocator(&device, config);
    let big = allocator.allocate(&AllocationDesc::new("big", 100 << 20, MemoryLocation::GpuOnly)).unwrap();
    assert!(big.is_dedicated());
    let required =
        AllocationDesc::new("export", 4096, MemoryLocation::GpuOnly).with_dedicated(Dedicated::Required);
    let small_dedicated = allocator.allocate(&required).unwrap();
    assert!(small_dedicated.is_dedicated());
    assert_eq!(device.counters().live_blocks, 2);
    let raw = big.into_raw();
    allocator.free(rebuilt(raw)).unwrap();
    assert_eq!(device.counters().live_blocks, 1, "a dedicated block goes with its allocation");
    assert_eq!(allocator.free(rebuilt(raw)).unwrap_err(), Error::DoubleFree);
    allocator.free(small_dedicated).unwrap();
    allocator.check().unwrap();
}

#[test]
fn blocks_grow_and_oversized_requests_get_their_own_block() {
    let device = simulated(MemoryProfile::discrete());
    let sizes = AllocationSizes::new(4 << 20, 16 << 20, 4 << 20, 16 << 20);
    let allocator = allocator(&device, AllocatorConfig::default().with_sizes(sizes));
    let desc = AllocationDesc::new("x", 3 << 20, MemoryLocation::GpuOnly);
    let mut live: Vec<_> = (0..8).map(|_| allocator.allocate(&desc).unwrap()).collect();
    // 4 MiB holds one, then 8 MiB two, then 16 MiB five: three blocks for eight.
    assert_eq!(allocator.block_count(), 3);
    // Larger than the next block: a block sized for it alone, in the pool (no dedicated threshold by default),
    // however large.
    for size in [40 << 20, 300 << 20] {
        let oversized = allocator.allocate(&AllocationDesc::new("y", size, MemoryLocation::GpuOnly)).unwrap();
        assert!(!oversized.is_dedicated(), "{size} bytes: a pooled block of its own");
        live.push(oversized);
    }
    assert_eq!(allocator.block_count(), 5);
    allocator.check().unwrap();
    for allocation in live {
        allocator.free(allocation).unwrap();
    }
    allocator.check().unwrap();
}

#[test]
fn the_block_limit_does_not_keep_block_mode_from_the_heap() {
    // 16 blocks growing from 32 to 256 MiB would stop at 3.5 GiB of a 16 GiB heap whose budget is 12.8 GiB.
    // From three quarters of the limit on, new blocks hold each remaining slot's share of the budget left
    // (rounded up to a power of two, but no more than the budget left, at most the device's 4 GiB), so the
    // heap fills to its budget.
    const GIB: u64 = 1 << 30;
    let device = simulated(MemoryProfile::integrated());
    let allocator = allocator(&device, AllocatorConfig::default().with_max_memory_blocks(16));
    let desc = AllocationDesc::new("fill", 64 << 20, MemoryLocation::GpuOnly);
    let mut live = Vec::new();
    let error = loop {
        match allocator.allocate(&desc) {
            Ok(allocation) => live.push(allocation),
            Err(error) => break error,
        }
    };
    let allocated = live.len() as u64 * (64 << 20);
    let budget = 16 * GIB / 5 * 4;
    assert!(allocated * 100 >= budget * 95, "{allocated} bytes before {error:?}");
    assert!(matches!(error, Error::OutOfMemory { .. } | Error::TooManyBlocks { limit: 16 }), "{error:?}");
    assert!(allocator.block_count() <= 16);
    allocator.check().unwrap();
    for allocation in live {
        allocator.free(allocation).unwrap();
    }
    allocator.check().unwrap();
}

#[test]
fn a_freed_oversized_block_serves_smaller_requests() {
    // Its block stays in the pool (kept within the peak), and requests of other sizes are carved from it
    // instead of getting blocks of their own: no driver call.
    const MIB: u64 = 1 << 20;
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let large =
        allocator.allocate(&AllocationDesc::new("large", 300 * MIB, MemoryLocation::GpuOnly)).unwrap();
    let key = large.block_key();
    allocator.free(large).unwrap();
    let blocks = allocator.block_count();
    let smaller: Vec<_> = [200 * MIB, 60 * MIB, 20 * MIB]
        .into_iter()
        .map(|size| {
            allocator.allocate(&AllocationDesc::new("smaller", size, MemoryLocation::GpuOnly)).unwrap()
        })
        .collect();
    assert!(smaller.iter().all(|allocation| allocation.block_key() == key));
    assert_eq!(allocator.block_count(), blocks);
    for allocation in smaller {
        allocator.free(allocation).unwrap();
    }
    allocator.check().unwrap();
}

#[test]
fn require_within_budget_reuses_blocks_but_creates_none_on_a_full_heap() {
    let device = simulated(MemoryProfile::lavapipe());
    let allocator = allocator(&device, AllocatorConfig::default());
    let options = AllocationOptions::new(Usage::GpuOnly).with_budget(BudgetPolicy::RequireWithin);
    let small = AllocationDesc::new("small", 1 << 20, options);
    let first = allocator.allocate(&small).unwrap();
    // Fill the heap's budget (80 % of 4 GiB) with dedicated blocks under the Ignore policy.
    let filler_options = AllocationOptions::new(Usage::GpuOnly).with_budget(BudgetPolicy::Ignore);
    let mut fillers = Vec::new();
    while let Ok(a) = allocator
        .allocate(&AllocationDesc::new("fill", 512 << 20, filler_options).with_dedicated(Dedicated::Required))
    {
        fillers.push(a);
        if device.heap_budgets_over() {
            break;
        }
    }
    assert!(device.heap_budgets_over(), "the heap is over budget now");
    // Still fits in the first block: allowed.
    let reuse = allocator.allocate(&small).unwrap();
    assert_eq!(reuse.block_key(), first.block_key());
    // Needs a new block: refused.
    let big = AllocationDesc::new("big", 64 << 20, options);
    assert!(matches!(allocator.allocate(&big).unwrap_err(), Error::OutOfMemory { .. }));
    for a in fillers.into_iter().chain([first, reuse]) {
        allocator.free(a).unwrap();
    }
    allocator.check().unwrap();
}

trait OverBudget {
    fn heap_budgets_over(&self) -> bool;
}

impl OverBudget for Arc<HostDevice> {
    fn heap_budgets_over(&self) -> bool {
        use memcarve::Device;
        self.heap_budgets().iter().any(|b| b.usage > b.budget)
    }
}

#[test]
fn every_profile_serves_every_usage_it_can() {
    for profile in MemoryProfile::all() {
        let name = profile.name;
        let device = simulated(profile);
        let allocator = allocator(&device, AllocatorConfig::default());
        for location in [MemoryLocation::GpuOnly, MemoryLocation::CpuToGpu, MemoryLocation::GpuToCpu] {
            let desc = AllocationDesc::new("x", 1 << 16, location);
            let allocation = allocator.allocate(&desc).unwrap_or_else(|e| panic!("{name} {location:?}: {e}"));
            allocator.free(allocation).unwrap();
        }
        allocator.check().unwrap();
    }
}

#[test]
fn the_common_request_gets_the_type_the_flags_rank_first() {
    // Requests with no explicit flags take a precomputed answer; it must be the type ranking by flags puts
    // first, in block mode and in virtual-heap mode, on every profile, for every usage.
    use memcarve::Device;
    use memcarve::policy::best_memory_type;
    for profile in MemoryProfile::all() {
        let name = profile.name;
        for config in
            [AllocatorConfig::default(), AllocatorConfig::default().with_virtual_heap(Default::default())]
        {
            let device = simulated(profile.clone());
            let allocator = allocator(&device, config);
            let properties = device.memory_properties().clone();
            for usage in [Usage::GpuOnly, Usage::Upload, Usage::Readback, Usage::Automatic] {
                let desc = AllocationDesc::new("x", 1 << 16, AllocationOptions::new(usage));
                let Some(expected) = best_memory_type(&properties, &desc) else { continue };
                // The first request creates memory, the second reuses it (the fast path).
                let first = allocator.allocate(&desc).unwrap_or_else(|e| panic!("{name} {usage:?}: {e}"));
                let second = allocator.allocate(&desc).unwrap_or_else(|e| panic!("{name} {usage:?}: {e}"));
                assert_eq!(first.memory_type(), expected, "{name} {usage:?}");
                assert_eq!(second.memory_type(), expected, "{name} {usage:?}");
                allocator.free(first).unwrap();
                allocator.free(second).unwrap();
            }
            allocator.check().unwrap();
        }
    }
}

#[test]
fn kept_blocks_are_reused_within_the_peak() {
    const MIB: u64 = 1 << 20;
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default().with_dedicated_threshold(64 * MIB));
    let desc = |size: u64| AllocationDesc::new("big", size, MemoryLocation::GpuOnly);

    // A freed dedicated block stays, and serves a request up to a sixteenth smaller.
    let first = allocator.allocate(&desc(150 * MIB)).unwrap();
    let raw = first.into_raw();
    allocator.free(rebuilt(raw)).unwrap();
    assert_eq!(device.counters().live_blocks, 1, "kept");
    assert_eq!(allocator.free(rebuilt(raw)).unwrap_err(), Error::DoubleFree);
    let stats = allocator.stats().total;
    assert_eq!((stats.committed_bytes, stats.used_bytes, stats.empty_block_count), (150 * MIB, 0, 1));
    assert!(allocator.leak_report().is_empty(), "a kept block is no leak");
    let again = allocator.allocate(&desc(145 * MIB)).unwrap();
    assert!(again.is_dedicated() && again.size() == 145 * MIB);
    assert_eq!(device.counters().blocks_created, 1, "reused, not created");
    assert!(allocator.free(rebuilt(raw)).is_err(), "the old handle stays stale");
    allocator.free(again).unwrap();

    // Too small for it (more than a sixteenth smaller): a new block, and the kept one goes first, so that
    // committed memory does not pass its peak (150 MiB).
    let small = allocator.allocate(&desc(100 * MIB)).unwrap();
    assert_eq!(device.counters().blocks_created, 2);
    assert_eq!(device.counters().live_blocks, 1, "the kept block was given back before the new one");
    assert_eq!(allocator.diagnostics().peak_committed_bytes, 150 * MIB);
    allocator.free(small).unwrap();

    // Pools keep their empty blocks too, and a repeat of the same requests creates nothing.
    let pooled = || (0..40).map(|_| allocator.allocate(&desc(3 * MIB)).unwrap()).collect::<Vec<_>>();
    let live = pooled();
    let created = device.counters().blocks_created;
    for allocation in live {
        allocator.free(allocation).unwrap();
    }
    let kept = device.counters().live_blocks;
    assert!(kept > 1, "the pool's empty blocks and the dedicated block are kept");
    let live = pooled();
    assert_eq!(device.counters().blocks_created, created, "the kept blocks served the repeat");
    for allocation in live {
        allocator.free(allocation).unwrap();
    }
    allocator.check().unwrap();
    assert_eq!(allocator.trim_empty_blocks() as u64, kept);
    assert_eq!(device.counters().live_blocks, 0);

    // A block that was asked for as its own is not kept: it may have been made for one resource.
    let own = allocator.allocate(&desc(MIB).with_dedicated(Dedicated::Required)).unwrap();
    allocator.free(own).unwrap();
    assert_eq!(device.counters().live_blocks, 0);
    allocator.check().unwrap();
}

#[test]
fn kept_blocks_give_way_to_the_budget() {
    // Blocks kept empty must not make a heap look full: a request that needs a new block finds the kept ones of
    // a heap without budget room given back, and lands in device-local memory instead of falling back to the
    // host heap.
    let device = simulated(MemoryProfile::discrete());
    let allocator = allocator(&device, AllocatorConfig::default());
    let filler = AllocationOptions::new(Usage::GpuOnly).with_budget(BudgetPolicy::Ignore);
    let mut fillers = Vec::new();
    while !device.heap_budgets_over() {
        fillers.push(allocator.allocate(&AllocationDesc::new("fill", 2000 << 20, filler)).unwrap());
    }
    for a in fillers {
        allocator.free(a).unwrap();
    }
    assert!(device.heap_budgets_over(), "the freed blocks are kept, and count against the budget");
    // No preference but device-local; 3000 MiB: no kept block holds it, so it needs a new one.
    let request = AllocationDesc::new("next", 3000 << 20, AllocationOptions::new(Usage::Automatic));
    let allocation = allocator.allocate(&request).unwrap();
    let device_local = allocator.memory_properties().types[allocation.memory_type() as usize]
        .flags
        .contains(MemoryPropertyFlags::DEVICE_LOCAL);
    assert!(device_local, "no fallback to host memory");
    assert_eq!(allocator.diagnostics().fallbacks, 0);
    assert!(!device.heap_budgets_over(), "the kept blocks were given back");
    allocator.free(allocation).unwrap();
    allocator.check().unwrap();
}
