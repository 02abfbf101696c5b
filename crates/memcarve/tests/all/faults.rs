//! Fault injection: block creations failing at random through a long workload. Every failure is a clean
//! error, the allocator stays consistent, and at the end everything frees with nothing leaked.

use memcarve::backends::host::{FaultInjection, MemoryProfile, RandomFailure};
use memcarve::{AllocationDesc, AllocationSizes, AllocatorConfig, Error, MemoryLocation};

use crate::basics::{allocator, simulated};
use crate::rng::Rng;

#[test]
fn random_block_creation_failures_are_clean_errors() {
    for seed in 0..4 {
        let device = simulated(MemoryProfile::discrete());
        device.set_faults(FaultInjection {
            random_failure: Some(RandomFailure { probability: 0.3, seed }),
            ..FaultInjection::default()
        });
        let sizes = AllocationSizes::new(1 << 20, 4 << 20, 1 << 20, 4 << 20);
        let allocator = allocator(
            &device,
            AllocatorConfig::default()
                .with_sizes(sizes)
                .with_max_empty_blocks_per_pool(0)
                .with_keep_blocks_within_peak(false),
        );
        let mut rng = Rng::new(seed);
        let mut live = Vec::new();
        let mut refused = 0;
        for step in 0..20_000 {
            if live.is_empty() || rng.chance(55) {
                let desc = AllocationDesc::new("f", rng.log_uniform(1, 2 << 20), MemoryLocation::GpuOnly);
                match allocator.allocate(&desc) {
                    Ok(a) => live.push(a),
                    Err(Error::OutOfMemory { .. }) => refused += 1,
                    Err(other) => panic!("seed {seed} step {step}: {other}"),
                }
            } else {
                allocator.free(live.swap_remove(rng.below(live.len() as u64) as usize)).unwrap();
            }
            if step % 500 == 0 {
                allocator.check().unwrap();
                assert_eq!(u64::from(allocator.block_count()), device.counters().live_blocks);
            }
        }
        assert!(refused > 0, "failures were injected and surfaced");
        assert!(allocator.diagnostics().fallbacks > 0, "GpuOnly fell back to its second type");
        for a in live {
            allocator.free(a).unwrap();
        }
        allocator.check().unwrap();
        assert_eq!(device.counters().live_blocks, 0, "empty blocks are not cached here: nothing left");
    }
}

#[test]
fn nth_failure_and_byte_limit() {
    let device = simulated(MemoryProfile::discrete());
    // One empty block cached per pool, none kept beyond: out-of-memory is what reclaims it.
    let allocator = allocator(&device, AllocatorConfig::default().with_keep_blocks_within_peak(false));
    // Only type 1 and then type 4 are device-local: fail the first creation, the request falls back to type 4.
    device.set_faults(FaultInjection { fail_block_creation_at: Some(1), ..FaultInjection::default() });
    let a = allocator.allocate(&AllocationDesc::new("a", 1 << 20, MemoryLocation::GpuOnly)).unwrap();
    assert_eq!(a.memory_type(), 4);
    assert_eq!(allocator.diagnostics().fallbacks, 1);
    // A byte limit just above what is committed: the next block cannot be created anywhere.
    let committed = allocator.committed_bytes();
    device
        .set_faults(FaultInjection { byte_limit: Some(committed + (1 << 20)), ..FaultInjection::default() });
    let big = AllocationDesc::new("big", 64 << 20, MemoryLocation::GpuOnly);
    assert!(matches!(allocator.allocate(&big), Err(Error::OutOfMemory { .. })));
    allocator.check().unwrap();
    allocator.free(a).unwrap();
    // With the empty block cached, out-of-memory reclaims it and succeeds if that makes room.
    device.set_faults(FaultInjection {
        byte_limit: Some(allocator.committed_bytes() + (40 << 20)),
        ..FaultInjection::default()
    });
    let fits_after_reclaim = AllocationDesc::new("x", 60 << 20, MemoryLocation::GpuOnly);
    let allocation = allocator.allocate(&fits_after_reclaim);
    assert!(allocation.is_ok() && allocator.diagnostics().reclaims == 1, "{allocation:?}");
    allocator.free(allocation.unwrap()).unwrap();
    allocator.check().unwrap();
}
