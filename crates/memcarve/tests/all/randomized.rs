//! A randomized workload of a million operations over the discrete profile, across many seeds, with live
//! bytes capped at 1 GiB: every live allocation lies inside its block, none overlap, accounting adds up, and
//! the allocator's own checker passes.

use std::collections::{BTreeMap, HashMap};

use memcarve::backends::host::MemoryProfile;
use memcarve::{
    Allocation, AllocationDesc, AllocationSizes, AllocatorConfig, BlockKey, Dedicated, MemoryLocation,
    ResourceClass,
};

use crate::basics::{allocator, simulated};
use crate::rng::Rng;

const LIVE_CAP: u64 = 1 << 30;

/// Live ranges per block, for the overlap check.
#[derive(Default)]
struct Shadow {
    blocks: HashMap<BlockKey, BTreeMap<u64, u64>>,
    live_bytes: u64,
}

impl Shadow {
    fn insert(&mut self, allocation: &Allocation) {
        let ranges = self.blocks.entry(allocation.block_key()).or_default();
        let (offset, end) = (allocation.offset(), allocation.offset() + allocation.size());
        if let Some((&before, &before_end)) = ranges.range(..=offset).next_back() {
            assert!(before_end <= offset, "overlaps the allocation at {before}");
        }
        if let Some((&after, _)) = ranges.range(offset..).next() {
            assert!(end <= after, "overlaps the allocation at {after}");
        }
        ranges.insert(offset, end);
        self.live_bytes += allocation.size();
    }

    fn remove(&mut self, allocation: &Allocation) {
        let ranges = self.blocks.get_mut(&allocation.block_key()).unwrap();
        assert!(ranges.remove(&allocation.offset()).is_some());
        self.live_bytes -= allocation.size();
    }
}

fn run(seed: u64, operations: u64) {
    let mut rng = Rng::new(seed);
    let device = simulated(MemoryProfile::discrete());
    let sizes = AllocationSizes::new(8 << 20, 64 << 20, 4 << 20, 32 << 20);
    let config = AllocatorConfig::default().with_sizes(sizes).with_dedicated_threshold(48 << 20);
    let allocator = allocator(&device, config);
    let locations = [MemoryLocation::GpuOnly, MemoryLocation::CpuToGpu, MemoryLocation::GpuToCpu];
    let mut live: Vec<Allocation> = Vec::new();
    let mut shadow = Shadow::default();
    for step in 0..operations {
        let allocate = live.is_empty() || (shadow.live_bytes < LIVE_CAP && rng.chance(52));
        if allocate {
            let size = rng.log_uniform(1, 64 << 20);
            let mut desc = AllocationDesc::new("random", size, locations[rng.below(3) as usize])
                .with_alignment(1 << rng.below(13))
                .with_class(ResourceClass::ALL[rng.below(4) as usize])
                .with_user_data(step);
            if rng.chance(1) {
                desc = desc.with_dedicated(Dedicated::Required);
            }
            let allocation =
                allocator.allocate(&desc).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            assert_eq!(allocation.offset() % desc.alignment, 0);
            assert_eq!(allocation.user_data(), step);
            let block_size = allocator.with_block(&allocation, |block| block.size()).unwrap();
            assert!(allocation.offset() + allocation.size() <= block_size, "inside its block");
            shadow.insert(&allocation);
            live.push(allocation);
        } else {
            let victim = live.swap_remove(rng.below(live.len() as u64) as usize);
            shadow.remove(&victim);
            allocator.free(victim).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
        }
        if step % 1000 == 0 {
            allocator.check().unwrap_or_else(|v| panic!("seed {seed} step {step}: {v}"));
            assert_eq!(allocator.used_bytes(), shadow.live_bytes);
            assert_eq!(u64::from(allocator.block_count()), device.counters().live_blocks);
        }
    }
    assert!(allocator.committed_bytes() >= shadow.live_bytes);
    for allocation in live {
        allocator.free(allocation).unwrap();
    }
    allocator.check().unwrap();
    assert_eq!(allocator.used_bytes(), 0);
    allocator.trim_empty_blocks();
    assert_eq!(device.counters().live_blocks, 0, "seed {seed}: every block returned");
}

#[test]
fn a_million_random_operations_over_twenty_seeds() {
    for seed in 0..20 {
        run(seed, 50_000);
    }
}
