//! Four threads, a million operations in total, on one allocator: no overlap, exact accounting at the end.

use std::sync::Arc;

use memcarve::backends::host::MemoryProfile;
use memcarve::{AllocationDesc, AllocatorConfig, MemoryLocation, ResourceClass};

use crate::basics::{allocator, simulated};
use crate::rng::Rng;

#[test]
fn four_threads_a_million_operations() {
    let device = simulated(MemoryProfile::discrete());
    let allocator = Arc::new(allocator(&device, AllocatorConfig::default()));
    let threads: Vec<_> = (0..4u64)
        .map(|thread| {
            let allocator = Arc::clone(&allocator);
            std::thread::spawn(move || {
                let mut rng = Rng::new(1000 + thread);
                let location = [MemoryLocation::GpuOnly, MemoryLocation::CpuToGpu][thread as usize % 2];
                let mut live = Vec::new();
                let mut ranges = Vec::new();
                for _ in 0..250_000 {
                    if live.len() < 200 && (live.is_empty() || rng.chance(55)) {
                        let desc = AllocationDesc::new("t", rng.log_uniform(16, 1 << 20), location)
                            .with_alignment(1 << rng.below(9))
                            .with_class(ResourceClass::ALL[rng.below(4) as usize]);
                        live.push(allocator.allocate(&desc).unwrap());
                    } else {
                        let victim = live.swap_remove(rng.below(live.len() as u64) as usize);
                        allocator.free(victim).unwrap();
                    }
                }
                for a in &live {
                    ranges.push((a.block_key(), a.offset(), a.size()));
                }
                (live, ranges)
            })
        })
        .collect();
    let mut all_live = Vec::new();
    let mut all_ranges = Vec::new();
    for thread in threads {
        let (live, ranges) = thread.join().unwrap();
        all_live.extend(live);
        all_ranges.extend(ranges);
    }
    // Survivors of every thread: no two overlap in one block.
    all_ranges.sort();
    for pair in all_ranges.windows(2) {
        if pair[0].0 == pair[1].0 {
            assert!(pair[0].1 + pair[0].2 <= pair[1].1, "overlap: {pair:?}");
        }
    }
    let live_bytes: u64 = all_live.iter().map(|a| a.size()).sum();
    assert_eq!(allocator.used_bytes(), live_bytes);
    allocator.check().unwrap();
    for a in all_live {
        allocator.free(a).unwrap();
    }
    assert_eq!(allocator.used_bytes(), 0);
    allocator.trim_empty_blocks();
    assert_eq!(device.counters().live_blocks, 0);
}
