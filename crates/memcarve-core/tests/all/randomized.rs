//! Long randomized workloads with the invariant checker after every operation: over a million operations in
//! total across more than twenty seeds, sizes 1 B to 256 MiB log-uniform, alignments 1 B to 64 KiB, mixed
//! resource classes, frees in random order, bad input mixed in; every seed ends by freeing everything and
//! checking that one free range spans the capacity again.

use memcarve_core::{
    Allocation, Error, Handle, LinearAllocator, ResourceClass, RingAllocator, VirtualBlock,
    VirtualBlockConfig,
};

use crate::rng::Rng;

const GIB: u64 = 1 << 30;

struct Live {
    allocation: Allocation,
    alignment: u64,
    tag: u64,
}

fn round_up(value: u64, granularity: u64) -> u64 {
    value.div_ceil(granularity) * granularity
}

/// Whether some free range could hold the request, ignoring class rules: what an honest out-of-memory denies.
fn some_free_range_fits(block: &VirtualBlock<u64>, size: u64, alignment: u64) -> bool {
    let config = block.config();
    let asize = round_up(size, config.min_granularity);
    let alignment = alignment.max(config.min_granularity);
    block.ranges().filter(|&(_, _, used)| !used).any(|(offset, len, _)| {
        let start = round_up(offset, alignment);
        start.checked_add(asize).is_some_and(|end| end <= offset + len)
    })
}

fn random_class(rng: &mut Rng) -> ResourceClass {
    ResourceClass::ALL[rng.below(4) as usize]
}

/// Runs `operations` random operations on a fresh block; returns how many allocations were refused for lack
/// of memory (so callers can see the workload reached the full state). The capacity, the largest request and the
/// largest growth are multiplied by `2^scale_log2`.
fn run_seed(seed: u64, operations: u64, check_every: u64, scale_log2: u32) -> u64 {
    let mut rng = Rng::new(seed);
    let min_granularity = [1, 16, 256][(seed % 3) as usize];
    let class_granularity = [1, 1024, 65536][((seed / 3) % 3) as usize];
    let capacity = (2 * GIB + rng.below(GIB)) << scale_log2;
    let config = VirtualBlockConfig::new(capacity)
        .with_min_granularity(min_granularity)
        .with_class_granularity(class_granularity);
    let mut block = VirtualBlock::<u64>::with_config(config).unwrap();
    let mut other = VirtualBlock::<u64>::new(capacity).unwrap();
    let foreign = other.allocate_with(1, 1, ResourceClass::Buffer, 0).unwrap();
    let mut live: Vec<Live> = Vec::new();
    let mut stale: Vec<u64> = Vec::new();
    let mut refused = 0;

    for step in 0..operations {
        let roll = rng.below(1000);
        if roll < 540 || live.is_empty() {
            let size = rng.log_uniform(1, (256 << 20) << scale_log2);
            let alignment = 1u64 << rng.below(17);
            let class = random_class(&mut rng);
            match block.allocate_with(size, alignment, class, step) {
                Ok(allocation) => {
                    assert_eq!(allocation.offset % alignment, 0, "seed {seed} step {step}");
                    assert_eq!(allocation.size, size);
                    let info = block.get(&allocation.handle).unwrap();
                    assert_eq!(
                        (info.offset, info.class, info.user_data),
                        (allocation.offset, class, Some(&step))
                    );
                    live.push(Live { allocation, alignment, tag: step });
                }
                Err(Error::OutOfMemory { .. }) => {
                    refused += 1;
                    if class_granularity == 1 {
                        assert!(
                            !some_free_range_fits(&block, size, alignment),
                            "seed {seed} step {step}: refused {size} at {alignment} though a range fits"
                        );
                    }
                }
                Err(Error::AlignmentTooLarge { .. }) => unreachable!("alignments stay below the capacity"),
                Err(other) => panic!("seed {seed} step {step}: unexpected {other:?}"),
            }
        } else if roll < 985 {
            let victim = live.swap_remove(rng.below(live.len() as u64) as usize);
            let raw = victim.allocation.handle.to_raw();
            assert_eq!(block.free(victim.allocation), Ok(Some(victim.tag)), "seed {seed} step {step}");
            stale.push(raw);
            if stale.len() > 64 {
                stale.swap_remove(rng.below(64) as usize);
            }
        } else if roll < 995 {
            // Bad input: each is refused with its own error and leaves the block as it was.
            let before = block.stats();
            if let Some(&raw) = stale.last() {
                assert_eq!(block.free(Handle::from_raw(raw)), Err(Error::StaleHandle), "double free");
            }
            assert_eq!(block.free(Handle::from_raw(foreign.handle.to_raw())), Err(Error::ForeignHandle));
            assert_eq!(block.allocate(0, 1, ResourceClass::Buffer), Err(Error::ZeroSize));
            assert_eq!(
                block.allocate(1, 48, ResourceClass::Buffer),
                Err(Error::InvalidAlignment { alignment: 48 })
            );
            let huge = block.capacity() + 1;
            assert_eq!(
                block.allocate(huge, 1, ResourceClass::Buffer),
                Err(Error::SizeTooLarge { size: huge, capacity: block.capacity() })
            );
            assert_eq!(block.stats(), before);
        } else if roll < 999 {
            let grown = block.capacity() + rng.log_uniform(1, (64 << 20) << scale_log2);
            block.grow(grown).unwrap();
        } else {
            // Rarely: clear everything; every live handle becomes stale.
            block.clear();
            for entry in live.drain(..) {
                assert_eq!(block.free(entry.allocation), Err(Error::StaleHandle));
            }
        }
        if step % check_every == 0 {
            if let Err(violation) = block.check() {
                panic!("seed {seed} step {step}: {violation}");
            }
            let stats = block.stats();
            assert_eq!(stats.allocation_count, live.len());
            assert_eq!(stats.used_bytes + stats.free_bytes, stats.capacity);
        }
    }

    // Every live allocation is where it was promised, aligned, and the block agrees.
    let listed: Vec<(u64, u64)> = block.iter().map(|info| (info.offset, *info.user_data.unwrap())).collect();
    assert_eq!(listed.len(), live.len());
    for entry in &live {
        assert_eq!(entry.allocation.offset % entry.alignment, 0);
        assert!(listed.contains(&(entry.allocation.offset, entry.tag)));
    }
    while !live.is_empty() {
        let victim = live.swap_remove(rng.below(live.len() as u64) as usize);
        block.free(victim.allocation).unwrap();
    }
    block.check().unwrap();
    let stats = block.stats();
    assert_eq!((stats.allocation_count, stats.free_range_count), (0, 1), "seed {seed}");
    assert_eq!(stats.largest_free_range, block.capacity(), "seed {seed}: one free range spans the capacity");
    other.free(foreign).unwrap();
    refused
}

#[test]
fn a_million_random_operations_over_24_seeds_keep_every_invariant() {
    let mut total_refused = 0;
    for seed in 0..24u64 {
        total_refused += run_seed(seed, 42_000, 1, 0);
    }
    assert!(total_refused > 0, "the workload must reach out-of-memory to test that path");
}

#[test]
fn blocks_past_the_unit_limit_keep_every_invariant() {
    // 2^14 times the capacity: 32 to 48 TiB, so even 256-byte granules are more than 2^35 and every block counts
    // its bins in larger units (2 KiB at one byte); requests from one byte up still get exactly their bytes, the
    // invariants hold after every operation, and an out-of-memory answer is honest (where no class rule is in
    // play). A request refused beside a hole within one bin unit of its size is rare at random: the unit tests
    // in tlsf.rs place such holes on purpose.
    let mut total_refused = 0;
    for seed in 0..9u64 {
        total_refused += run_seed(seed, 12_000, 1, 14);
    }
    assert!(total_refused > 0, "the workload must reach out-of-memory to test that path");
}

#[test]
fn small_granularities_and_tiny_capacity_under_pressure() {
    // A capacity of a few pages makes the bins' near-full scan and the class rules bite often.
    for seed in 100..108u64 {
        let mut rng = Rng::new(seed);
        let config = VirtualBlockConfig::new(8192 + rng.below(8192)).with_class_granularity(256);
        let mut block = VirtualBlock::<()>::with_config(config).unwrap();
        let mut live = Vec::new();
        for step in 0..20_000 {
            if rng.chance(55) || live.is_empty() {
                let size = rng.log_uniform(1, 2048);
                let alignment = 1u64 << rng.below(9);
                if let Ok(a) = block.allocate(size, alignment, random_class(&mut rng)) {
                    live.push(a);
                }
            } else {
                block.free(live.swap_remove(rng.below(live.len() as u64) as usize)).unwrap();
            }
            if let Err(violation) = block.check() {
                panic!("seed {seed} step {step}: {violation}");
            }
        }
        for a in live {
            block.free(a).unwrap();
        }
        assert_eq!(block.stats().free_range_count, 1);
    }
}

/// Live ranges must not overlap: sorted by offset, each ends before the next begins.
fn assert_disjoint(mut ranges: Vec<(u64, u64)>) {
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        assert!(pair[0].0 + pair[0].1 <= pair[1].0, "overlap: {pair:?}");
    }
}

#[test]
fn ring_random_fifo_workload() {
    for seed in 0..4u64 {
        let mut rng = Rng::new(seed);
        let capacity = 1 << 20;
        let mut ring = RingAllocator::new(capacity).unwrap();
        let mut live = std::collections::VecDeque::new();
        for step in 0..50_000 {
            if rng.chance(52) || live.is_empty() {
                let size = rng.log_uniform(1, 128 << 10);
                let alignment = 1u64 << rng.below(9);
                match ring.allocate(size, alignment) {
                    Ok(a) => {
                        assert!(a.offset % alignment == 0 && a.offset + size <= capacity);
                        live.push_back(a);
                    }
                    Err(Error::OutOfMemory { .. }) => {}
                    Err(other) => panic!("seed {seed} step {step}: {other:?}"),
                }
            } else if live.len() > 1 && rng.chance(5) {
                let newest = live.back().unwrap().handle.to_raw();
                assert_eq!(ring.free(Handle::from_raw(newest)), Err(Error::OutOfOrderFree), "seed {seed}");
            } else {
                ring.free(live.pop_front().unwrap()).unwrap();
            }
            ring.check().unwrap_or_else(|v| panic!("seed {seed} step {step}: {v}"));
            let stats = ring.stats();
            assert_eq!(stats.allocation_count, live.len());
            assert_eq!(stats.used_bytes + stats.free_bytes, capacity);
            assert_disjoint(live.iter().map(|a| (a.offset, a.size)).collect());
        }
        while let Some(a) = live.pop_front() {
            ring.free(a).unwrap();
        }
        assert_eq!(ring.stats().largest_free_range, capacity);
    }
}

#[test]
fn stack_random_lifo_workload() {
    let mut rng = Rng::new(7);
    let capacity = 1 << 24;
    let mut stack = LinearAllocator::new(capacity).unwrap();
    let mut live: Vec<Allocation> = Vec::new();
    for step in 0..50_000 {
        if rng.chance(50) || live.is_empty() {
            let size = rng.log_uniform(1, 1 << 16);
            if let Ok(a) = stack.allocate(size, 1 << rng.below(12)) {
                live.push(a);
            }
        } else if rng.chance(2) {
            stack.free_all();
            for a in live.drain(..) {
                assert_eq!(stack.free(a), Err(Error::StaleHandle));
            }
        } else {
            stack.free(live.pop().unwrap()).unwrap();
        }
        stack.check().unwrap_or_else(|v| panic!("step {step}: {v}"));
        assert_disjoint(live.iter().map(|a| (a.offset, a.size)).collect());
    }
}
