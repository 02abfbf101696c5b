//! In real host memory, a pattern written into each allocation when it is made is intact when it is freed:
//! no allocation ever overlaps another, whatever the mix of sizes, alignments, classes and memory types. The
//! run mixes map, write, flush, invalidate, read and unmap with allocate and free, on coherent and on
//! non-coherent memory.

use std::sync::Arc;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{AllocationDesc, AllocationSizes, Allocator, AllocatorConfig, MemoryLocation, ResourceClass};

use crate::rng::Rng;

fn run(profile: MemoryProfile, persistent: bool, seed: u64) {
    let device = Arc::new(HostDevice::new(HostConfig::new(profile, HostMode::Real)));
    let sizes = AllocationSizes::new(4 << 20, 16 << 20, 4 << 20, 16 << 20);
    let config = AllocatorConfig::default()
        .with_sizes(sizes)
        .with_dedicated_threshold(8 << 20)
        .with_persistent_mapping(persistent);
    let allocator = Allocator::new(Arc::clone(&device), config).unwrap();
    let mut rng = Rng::new(seed);
    let mut live = Vec::new();
    let locations = [MemoryLocation::CpuToGpu, MemoryLocation::GpuToCpu];
    for step in 0..20_000u64 {
        if live.is_empty() || (live.len() < 300 && rng.chance(52)) {
            let size = rng.log_uniform(1, 1 << 20);
            let desc = AllocationDesc::new("p", size, locations[rng.below(2) as usize])
                .with_alignment(1 << rng.below(12))
                .with_class(ResourceClass::ALL[rng.below(4) as usize]);
            let mut allocation = allocator.allocate(&desc).unwrap();
            let pattern = vec![(step % 253) as u8 + 1; size as usize];
            let mut mapped = allocator.map(&mut allocation).unwrap();
            mapped.write(0, &pattern).unwrap();
            mapped.flush(0, size).unwrap();
            drop(mapped);
            live.push((allocation, pattern[0]));
        } else {
            let (mut allocation, pattern) = live.swap_remove(rng.below(live.len() as u64) as usize);
            {
                let size = allocation.size();
                let mapped = allocator.map(&mut allocation).unwrap();
                mapped.invalidate(0, size).unwrap();
                let mut bytes = vec![0; size as usize];
                mapped.read(0, &mut bytes).unwrap();
                assert!(
                    bytes.iter().all(|&b| b == pattern),
                    "step {step}: a live allocation was overwritten"
                );
            }
            allocator.free(allocation).unwrap();
        }
    }
    allocator.check().unwrap();
    for (allocation, _) in live {
        allocator.free(allocation).unwrap();
    }
    let counters = device.counters();
    if persistent {
        assert_eq!(counters.maps, counters.blocks_created, "each block mapped once, at creation");
    } else {
        assert_eq!(counters.maps, counters.unmaps, "every guard released its mapping");
        assert!(counters.maps > counters.blocks_created, "blocks were mapped again after being unmapped");
    }
}

#[test]
fn patterns_survive_on_coherent_memory() {
    run(MemoryProfile::discrete(), false, 99);
}

#[test]
fn patterns_survive_on_non_coherent_memory() {
    run(MemoryProfile::non_coherent(), false, 100);
}

#[test]
fn patterns_survive_with_persistent_mapping() {
    run(MemoryProfile::discrete(), true, 101);
}
