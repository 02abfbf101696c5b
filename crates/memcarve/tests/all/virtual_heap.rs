//! The virtual heap on the host backend: pages committed on demand, released by policy, every commit and
//! decommit one driver operation; real host memory keeps each allocation's pattern; commit failures are clean.

use std::sync::Arc;

use memcarve::backends::host::{
    FaultInjection, HostConfig, HostDevice, HostMode, MemoryProfile, RandomFailure,
};
use memcarve::virtual_heap::{
    HeapTier, PageEvent, PeakSlack, ReleaseImmediately, RequestMix, RetainEmpty, VirtualHeapStats,
};
use memcarve::{AllocationDesc, Allocator, AllocatorConfig, Error, MemoryLocation, VirtualHeapConfig};

use crate::rng::Rng;

const MIB: u64 = 1 << 20;

fn virtual_allocator(
    mode: HostMode,
    heap: VirtualHeapConfig,
) -> (Arc<HostDevice>, Allocator<Arc<HostDevice>>) {
    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), mode)));
    let allocator =
        Allocator::new(Arc::clone(&device), AllocatorConfig::default().with_virtual_heap(heap)).unwrap();
    (device, allocator)
}

/// What `Allocator::new` makes of `heap` on a simulated H200: for the tests of settings it must refuse.
fn made_with(heap: VirtualHeapConfig) -> Result<Allocator<Arc<HostDevice>>, Error> {
    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated)));
    Allocator::new(device, AllocatorConfig::default().with_virtual_heap(heap))
}

/// A simulated heap for the randomized tests: a small reservation (the checker walks every page) and little slack
/// with no floor of spare pages, so that requests often find no ready pages.
fn tight_allocator() -> (Arc<HostDevice>, Allocator<Arc<HostDevice>>) {
    let release = PeakSlack {
        slack: 0.02,
        max_ahead_fraction: 0.25,
        min_spare_bytes: 0,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    };
    let config = VirtualHeapConfig::default().with_reserve_size(2 << 30).with_release(Arc::new(release));
    virtual_allocator(HostMode::Simulated, config)
}

#[test]
fn pages_are_committed_on_demand_and_released_by_policy() {
    let config = VirtualHeapConfig::default().with_release(Arc::new(ReleaseImmediately));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = AllocationDesc::new("x", 3 * MIB, MemoryLocation::GpuOnly);
    let a = allocator.allocate(&desc).unwrap();
    let stats = allocator.virtual_heap_stats(a.memory_type()).unwrap();
    assert_eq!((stats.committed_bytes, stats.commits), (4 * MIB, 1), "3 MiB touch two 2 MiB pages, one run");
    let b = allocator.allocate(&desc).unwrap();
    let stats = allocator.virtual_heap_stats(b.memory_type()).unwrap();
    assert_eq!(stats.committed_bytes, 6 * MIB, "b shares a page with a and adds one");
    assert_eq!(device.counters().commits, stats.commits);
    allocator.check().unwrap();
    allocator.free(a).unwrap();
    let stats = allocator.virtual_heap_stats(b.memory_type()).unwrap();
    assert_eq!(stats.committed_bytes, 4 * MIB, "the page only a used is gone, the shared one stays");
    allocator.free(b).unwrap();
    let stats = allocator.virtual_heap_stats(1).unwrap();
    assert_eq!((stats.committed_bytes, stats.live_bytes), (0, 0));
    assert_eq!(device.counters().committed_bytes, 0);
    assert_eq!(device.counters().decommits, stats.decommits);
    allocator.check().unwrap();
}

#[test]
fn the_peak_committed_bytes_are_split_into_live_partly_used_and_empty_bytes() {
    // No slack and an 8 MiB spare: a mapping maps pages ahead up to 8 MiB past the peak live bytes.
    let release = PeakSlack {
        slack: 0.0,
        max_ahead_fraction: 8.0,
        min_spare_bytes: 8 * MIB,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    };
    let config = VirtualHeapConfig::default().with_release(Arc::new(release));
    let (_, allocator) = virtual_allocator(HostMode::Simulated, config);
    let stats = |memory_type| allocator.virtual_heap_stats(memory_type).unwrap();
    let split = |stats: VirtualHeapStats| {
        (stats.peak_committed_bytes, stats.live_bytes_at_peak, stats.empty_bytes_at_peak)
    };
    let a = allocator.allocate(&AllocationDesc::new("a", 3 * MIB, MemoryLocation::GpuOnly)).unwrap();
    let memory_type = a.memory_type();
    // Two pages for the request (one of them 1 MiB free) and three ahead, to 3 + 8 MiB in all.
    assert_eq!(split(stats(memory_type)), (10 * MIB, 3 * MIB, 6 * MIB));
    // Below the peak nothing is recorded again.
    let b = allocator.allocate(&AllocationDesc::new("b", MIB, MemoryLocation::GpuOnly)).unwrap();
    assert_eq!(stats(memory_type).committed_bytes, 10 * MIB);
    assert_eq!(split(stats(memory_type)), (10 * MIB, 3 * MIB, 6 * MIB));
    allocator.free(a).unwrap();
    allocator.free(b).unwrap();
    // A larger request raises the peak: the split is what the heap holds once it is placed.
    let c = allocator.allocate(&AllocationDesc::new("c", 20 * MIB, MemoryLocation::GpuOnly)).unwrap();
    let now = stats(memory_type);
    assert!(now.peak_committed_bytes > 10 * MIB, "{now:?}");
    assert_eq!(now.committed_bytes, now.peak_committed_bytes);
    assert_eq!((now.live_bytes_at_peak, now.empty_bytes_at_peak), (20 * MIB, now.empty_bytes));
    assert!(now.peak_committed_bytes - now.empty_bytes_at_peak >= 20 * MIB, "{now:?}");
    allocator.free(c).unwrap();
    allocator.check().unwrap();
}

#[test]
fn retained_empty_pages_are_reused_without_driver_calls() {
    let config = VirtualHeapConfig::default()
        .with_release(Arc::new(RetainEmpty { bytes: 64 * MIB, live_fraction: 0.0 }));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = AllocationDesc::new("x", 16 * MIB, MemoryLocation::GpuOnly);
    for _ in 0..100 {
        let a = allocator.allocate(&desc).unwrap();
        allocator.free(a).unwrap();
    }
    assert_eq!(device.counters().commits, 1, "the same pages serve every round");
    assert_eq!(device.counters().decommits, 0);
    assert_eq!(allocator.trim_empty_blocks(), 0);
    assert_eq!(device.counters().committed_bytes, 0, "trim decommits retained pages");
    allocator.check().unwrap();
}

#[test]
fn real_host_memory_keeps_every_pattern() {
    let config =
        VirtualHeapConfig::default().with_reserve_size(1 << 30).with_release(Arc::new(ReleaseImmediately));
    keeps_every_pattern(config.clone(), 4000);
    // With pages of 8 MiB, mapped and given back as such.
    keeps_every_pattern(config.clone().with_page_size(8 * MIB), 2000);
    // In tiers: 8 MiB pages from 24 MiB committed, 32 MiB pages from 64 MiB (each tier its own reservation of
    // 1 GiB, the third's offsets from 2 GiB on).
    let tiers = vec![HeapTier::new(24 * MIB, 8 * MIB), HeapTier::new(64 * MIB, 32 * MIB)];
    let highest =
        keeps_every_pattern(config.with_release(Arc::new(PeakSlack::default())).with_tiers(tiers), 3000);
    assert!(highest >= 2 << 30, "the third tier was reached: {highest}");
}

/// Random allocations of 1 byte to 4 MiB in real host memory, each filled with a pattern that must be intact when
/// it is freed, for `steps` operations; the checker at the end, and every page given back once all is freed and
/// the heap trimmed. Returns the highest offset placed.
fn keeps_every_pattern(config: VirtualHeapConfig, steps: u64) -> u64 {
    let (device, allocator) = virtual_allocator(HostMode::Real, config);
    let mut rng = Rng::new(7);
    let mut live = Vec::new();
    let mut highest = 0;
    for step in 0..steps {
        if live.is_empty() || rng.chance(55) {
            let size = rng.log_uniform(1, 4 * MIB);
            let desc =
                AllocationDesc::new("p", size, MemoryLocation::GpuOnly).with_alignment(1 << rng.below(10));
            let allocation = allocator.allocate(&desc).unwrap();
            highest = highest.max(allocation.offset());
            let ptr = allocator.virtual_address(&allocation).unwrap();
            // SAFETY: the pointer is valid for `size` bytes while the allocation is live (host memory in real
            // mode, committed by the allocation), and no other live allocation overlaps it.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), (step % 251) as u8, size as usize) };
            live.push((allocation, (step % 251) as u8));
        } else {
            let (allocation, pattern) = live.swap_remove(rng.below(live.len() as u64) as usize);
            let ptr = allocator.virtual_address(&allocation).unwrap();
            // SAFETY: as above; the allocation is still live here.
            let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), allocation.size() as usize) };
            assert!(bytes.iter().all(|&b| b == pattern), "pattern of a live allocation was overwritten");
            allocator.free(allocation).unwrap();
        }
    }
    allocator.check().unwrap();
    for (allocation, _) in live {
        allocator.free(allocation).unwrap();
    }
    // The small region's first page is held until the heap is trimmed.
    allocator.trim_empty_blocks();
    assert_eq!(device.counters().committed_bytes, 0);
    highest
}

#[test]
fn the_heap_maps_commits_and_gives_back_pages_of_the_configured_size() {
    let page = 8 * MIB;
    let config = VirtualHeapConfig::default().with_release(Arc::new(ReleaseImmediately)).with_page_size(page);
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = |size| AllocationDesc::new("x", size, MemoryLocation::GpuOnly);
    let a = allocator.allocate(&desc(3 * MIB)).unwrap();
    let memory_type = a.memory_type();
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!((stats.committed_bytes, stats.commits), (page, 1), "3 MiB take one page of 8 MiB");
    let b = allocator.allocate(&desc(3 * MIB)).unwrap();
    let c = allocator.allocate(&desc(12 * MIB)).unwrap();
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!(stats.committed_bytes % page, 0);
    assert!(stats.committed_bytes >= 18 * MIB && stats.committed_bytes <= 4 * page, "{stats:?}");
    assert_eq!(device.counters().committed_bytes, stats.committed_bytes);
    allocator.check().unwrap();
    for allocation in [a, b, c] {
        allocator.free(allocation).unwrap();
    }
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!((stats.committed_bytes, device.counters().committed_bytes), (0, 0));
    assert_eq!(stats.decommits, device.counters().decommits);

    // A page size the device cannot map is refused when the allocator is made, as a typed error.
    for bad in [3 * MIB, MIB, 0] {
        let made = made_with(VirtualHeapConfig::default().with_page_size(bad));
        assert!(matches!(made, Err(Error::InvalidConfig { .. })), "page size {bad}: {made:?}");
    }
}

/// A heap in tiers: the next tier opens once the committed bytes reach its threshold, new allocations go to the
/// top tier (offsets past the first tier's range), the lower tier takes none and keeps its empty pages until the top
/// one needs a mapping, and the counters are the tiers' sums (the peaks those of the sums).
#[test]
fn tiers_open_as_the_heap_grows_and_the_lower_ones_empty_into_the_top_one() {
    let tiers = vec![HeapTier::new(64 * MIB, 8 * MIB), HeapTier::new(192 * MIB, 32 * MIB)];
    let config = VirtualHeapConfig::default().with_reserve_size(1 << 30).with_tiers(tiers);
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = |size| AllocationDesc::new("t", size, MemoryLocation::GpuOnly);
    // 2 MiB pages up to 64 MiB committed.
    let mut first = Vec::new();
    while allocator.virtual_heap_stats(1).is_none_or(|stats| stats.committed_bytes < 64 * MIB) {
        first.push(allocator.allocate(&desc(3 * MIB)).unwrap());
    }
    assert!(first.iter().all(|a| a.offset() < 1 << 30), "the first tier's range");
    let memory_type = first[0].memory_type();
    let before = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!(before.committed_bytes % (2 * MIB), 0);
    // The next allocation goes to the second tier, mapped in 8 MiB pages; the first tier's empty pages (mapped
    // ahead) go back before that mapping.
    let second = allocator.allocate(&desc(3 * MIB)).unwrap();
    assert!(second.offset() >= 1 << 30 && second.offset() < 2 << 30, "{}", second.offset());
    assert_eq!(allocator.virtual_heap_stats(memory_type).unwrap().tiers, 2);
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    let kept = before.committed_bytes - before.empty_bytes;
    assert!(
        stats.committed_bytes > kept && (stats.committed_bytes - kept) % (8 * MIB) == 0,
        "{before:?} {stats:?}"
    );
    assert_eq!(stats.decommits, before.decommits + u64::from(before.empty_bytes > 0));
    assert_eq!(stats.committed_bytes, device.counters().committed_bytes);
    assert_eq!(stats.live_bytes, (first.len() as u64 + 1) * 3 * MIB);
    allocator.check().unwrap();
    // Freed, the first tier's pages stay (within the peak) until the second needs a mapping.
    for allocation in first {
        allocator.free(allocation).unwrap();
    }
    let freed = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!(freed.committed_bytes, stats.committed_bytes, "kept within the peak");
    assert!(freed.empty_bytes >= kept, "{freed:?}");
    let mut top = Vec::new();
    let decommits = device.counters().decommits;
    while allocator.virtual_heap_stats(memory_type).unwrap().commits == freed.commits {
        top.push(allocator.allocate(&desc(5 * MIB)).unwrap());
    }
    assert!(top.iter().all(|a| a.offset() >= 1 << 30), "no new allocation in the first tier");
    assert!(device.counters().decommits > decommits, "the first tier gave its empty pages back first");
    let moved = allocator.virtual_heap_stats(memory_type).unwrap();
    assert!(moved.committed_bytes <= freed.committed_bytes.max(moved.peak_committed_bytes), "{moved:?}");
    assert_eq!(moved.committed_bytes, device.counters().committed_bytes);
    allocator.check().unwrap();
    // On to the third tier: 32 MiB pages past 192 MiB committed.
    while allocator.virtual_heap_stats(memory_type).unwrap().committed_bytes < 192 * MIB {
        top.push(allocator.allocate(&desc(7 * MIB)).unwrap());
    }
    let third = allocator.allocate(&desc(MIB)).unwrap();
    assert!(third.offset() >= 2 << 30, "{}", third.offset());
    assert_eq!(allocator.virtual_heap_stats(memory_type).unwrap().tiers, 3);
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!(stats.peak_live_bytes, stats.live_bytes);
    assert!(stats.peak_committed_bytes >= stats.committed_bytes);
    assert_eq!(stats.commits, device.counters().commits);
    assert_eq!(stats.decommits, device.counters().decommits);
    allocator.check().unwrap();
    for allocation in top.into_iter().chain([second, third]) {
        allocator.free(allocation).unwrap();
    }
    allocator.trim_empty_blocks();
    allocator.check().unwrap();
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!((stats.committed_bytes, stats.live_bytes, device.counters().committed_bytes), (0, 0, 0));

    // Tiers whose pages or thresholds do not grow are refused when the allocator is made.
    for bad in [
        vec![HeapTier::new(64 * MIB, 8 * MIB), HeapTier::new(192 * MIB, 8 * MIB)],
        vec![HeapTier::new(64 * MIB, 8 * MIB), HeapTier::new(64 * MIB, 32 * MIB)],
        vec![HeapTier::new(64 * MIB, 12 * MIB)],
    ] {
        let made = made_with(VirtualHeapConfig::default().with_tiers(bad));
        assert!(matches!(made, Err(Error::InvalidConfig { .. })), "{made:?}");
    }
}

/// A tier with a request-mix rule opens once the heap has allocated the rule's bytes, if large requests made the
/// rule's share of them; otherwise the rule is spent, a tier with no threshold of its own is left out, and the
/// next tier opens at its threshold as usual. Rules elsewhere than on the first tier, or with figures that make no
/// sense, are refused.
#[test]
fn a_request_mix_rule_opens_the_first_tier_early_only_where_large_requests_dominate() {
    let rule = RequestMix::new(64 * MIB, 16 * MIB, 0.9);
    let config = |rule| {
        let tiers =
            vec![HeapTier::new(u64::MAX, 8 * MIB).with_request_mix(rule), HeapTier::new(192 * MIB, 32 * MIB)];
        VirtualHeapConfig::default().with_reserve_size(1 << 30).with_tiers(tiers)
    };
    let desc = |size| AllocationDesc::new("t", size, MemoryLocation::GpuOnly);

    // Large requests: the rule decides at the request that brings the allocated bytes to 64 MiB (the fourth of
    // 20 MiB), before placing it, and that request goes to the tier of 8 MiB pages. With the heap's committed bytes
    // bounded below what the first three committed, the rule is spent instead and the heap stays in one tier.
    for (bound, opens) in [(None, true), (Some(1 << 30), true), (Some(16 * MIB), false)] {
        let bounded = bound.map_or(rule, |bytes| rule.with_max_committed_bytes(bytes));
        let (device, allocator) = virtual_allocator(HostMode::Simulated, config(bounded));
        let mut placed = Vec::new();
        for _ in 0..3 {
            let allocation = allocator.allocate(&desc(20 * MIB)).unwrap();
            assert!(allocation.offset() < 1 << 30, "the first tier's range");
            placed.push(allocation);
        }
        let memory_type = placed[0].memory_type();
        assert_eq!(allocator.virtual_heap_stats(memory_type).unwrap().tiers, 1);
        let fourth = allocator.allocate(&desc(20 * MIB)).unwrap();
        let stats = allocator.virtual_heap_stats(memory_type).unwrap();
        assert_eq!(stats.tiers, if opens { 2 } else { 1 }, "{bound:?}");
        let in_tier = fourth.offset() >= 1 << 30 && fourth.offset() < 2 << 30;
        assert_eq!(in_tier, opens, "{bound:?}: {}", fourth.offset());
        allocator.check().unwrap();
        for allocation in placed.into_iter().chain([fourth]) {
            allocator.free(allocation).unwrap();
        }
        allocator.trim_empty_blocks();
        assert_eq!(device.counters().committed_bytes, 0);
    }

    // Mostly small requests (large ones 20 MiB of every 36): past 64 MiB allocated the rule is spent and its
    // tier left out; at 192 MiB committed the heap opens the tier of 32 MiB pages, as its second.
    let (_device, allocator) = virtual_allocator(HostMode::Simulated, config(rule));
    allocator.record_page_events(true);
    let mut live = Vec::new();
    while allocator.virtual_heap_stats(1).is_none_or(|stats| stats.allocated_bytes < 64 * MIB) {
        live.push(allocator.allocate(&desc(20 * MIB)).unwrap());
        for _ in 0..4 {
            live.push(allocator.allocate(&desc(4 * MIB)).unwrap());
        }
    }
    let memory_type = live[0].memory_type();
    assert_eq!(allocator.virtual_heap_stats(memory_type).unwrap().tiers, 1);
    while allocator.virtual_heap_stats(memory_type).unwrap().committed_bytes < 192 * MIB {
        live.push(allocator.allocate(&desc(4 * MIB)).unwrap());
    }
    assert!(live.iter().all(|a| a.offset() < 1 << 30), "no tier opened before 192 MiB committed");
    let top = allocator.allocate(&desc(4 * MIB)).unwrap();
    let stats = allocator.virtual_heap_stats(memory_type).unwrap();
    assert_eq!(stats.tiers, 2);
    assert!(top.offset() >= 1 << 30 && top.offset() < 2 << 30, "{}", top.offset());
    let opened: Vec<u64> = allocator
        .take_page_events(memory_type)
        .into_iter()
        .filter_map(|record| match record.event {
            PageEvent::Tier { page_size, .. } => Some(page_size),
            _ => None,
        })
        .collect();
    assert_eq!(opened, [32 * MIB], "{stats:?}");
    allocator.check().unwrap();

    // Refused: a rule on a tier other than the first, a share past 1, no bytes to decide after.
    for bad in [
        vec![HeapTier::new(64 * MIB, 8 * MIB), HeapTier::new(192 * MIB, 32 * MIB).with_request_mix(rule)],
        vec![HeapTier::new(u64::MAX, 8 * MIB).with_request_mix(RequestMix::new(64 * MIB, 16 * MIB, 1.5))],
        vec![HeapTier::new(u64::MAX, 8 * MIB).with_request_mix(RequestMix::new(0, 16 * MIB, 0.5))],
    ] {
        let made = made_with(VirtualHeapConfig::default().with_tiers(bad));
        assert!(matches!(made, Err(Error::InvalidConfig { .. })), "{made:?}");
    }
}

/// Random allocations of 1 byte to `max_size` and frees for `steps` operations on an allocator whose device fails
/// some commits, the checker every `check_every` steps; then everything is freed and the empty pages trimmed, and
/// every committed page must have come back. Returns the requests refused (out of memory: any other error fails).
fn churn_under_failures(
    device: &HostDevice,
    allocator: &Allocator<Arc<HostDevice>>,
    seed: u64,
    (steps, max_size, check_every): (u32, u64, u32),
) -> u32 {
    let mut rng = Rng::new(seed);
    let mut live = Vec::new();
    let mut refused = 0;
    let mut peaks_checked = 0;
    for step in 0..steps {
        if live.is_empty() || rng.chance(52) {
            let desc = AllocationDesc::new("f", rng.log_uniform(1, max_size), MemoryLocation::GpuOnly);
            match allocator.allocate(&desc) {
                Ok(a) => live.push(a),
                Err(Error::OutOfMemory { .. }) => refused += 1,
                Err(other) => panic!("step {step}: {other}"),
            }
        } else {
            allocator.free(live.swap_remove(rng.below(live.len() as u64) as usize)).unwrap();
        }
        if step % check_every == 0
            && let Err(violation) = allocator.check()
        {
            panic!("step {step}: {violation:?}");
        }
        // What the peak held, recorded after allocations that were placed or refused, fits in the peak.
        if let Some(stats) = allocator.virtual_heap_stats(1) {
            let held = stats.live_bytes_at_peak + stats.empty_bytes_at_peak;
            assert!(held <= stats.peak_committed_bytes, "step {step}: {stats:?}");
            assert!(stats.live_bytes_at_peak <= stats.peak_live_bytes, "step {step}: {stats:?}");
            peaks_checked += 1;
        }
    }
    assert!(peaks_checked > steps / 2, "the heap's stats were there to check");
    for a in live {
        allocator.free(a).unwrap();
    }
    allocator.trim_empty_blocks();
    allocator.check().unwrap();
    assert_eq!(device.counters().committed_bytes, 0, "every committed page came back");
    refused
}

#[test]
fn commit_failures_are_clean_and_lose_nothing() {
    let config = VirtualHeapConfig::default().with_release(Arc::new(ReleaseImmediately));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    device.set_faults(FaultInjection {
        random_failure: Some(RandomFailure { probability: 0.5, seed: 3 }),
        ..FaultInjection::default()
    });
    let refused = churn_under_failures(&device, &allocator, 11, (20_000, 8 * MIB, 500));
    assert!(refused > 0, "failures on both device-local types surface as out-of-memory");
    assert!(allocator.diagnostics().fallbacks > 0);
}

#[test]
fn commit_failures_among_retained_pages_leave_the_page_books_right() {
    // The other failure test gives every empty page back at once; here free pages stay mapped (and are mapped
    // again at fresh addresses, and a small reservation runs out, so that unused mappings are dropped): a failed
    // mapping among them must leave every page's books right, checked after every operation.
    let release = PeakSlack {
        slack: 0.02,
        max_ahead_fraction: 0.25,
        min_spare_bytes: 0,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    };
    let config = VirtualHeapConfig::default().with_reserve_size(256 * MIB).with_release(Arc::new(release));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    device.set_faults(FaultInjection {
        random_failure: Some(RandomFailure { probability: 0.3, seed: 5 }),
        ..FaultInjection::default()
    });
    assert!(churn_under_failures(&device, &allocator, 13, (6_000, 24 * MIB, 1)) > 0);
}

#[test]
fn commit_failures_in_tiers_leave_the_page_books_right() {
    // Tiers of 8 MiB pages from 32 MiB committed and 32 MiB pages from 96 MiB, a device failing three mappings
    // (and reservations) in ten: refused requests, tiers refused or opened, lower tiers giving their pages back
    // before a mapping that then fails; the checker after every operation, and every page back at the end.
    let tiers = vec![HeapTier::new(32 * MIB, 8 * MIB), HeapTier::new(96 * MIB, 32 * MIB)];
    let config = VirtualHeapConfig::default().with_reserve_size(256 * MIB).with_tiers(tiers);
    for seed in [5, 6, 7] {
        let (device, allocator) = virtual_allocator(HostMode::Simulated, config.clone());
        device.set_faults(FaultInjection {
            random_failure: Some(RandomFailure { probability: 0.3, seed }),
            ..FaultInjection::default()
        });
        assert!(churn_under_failures(&device, &allocator, 13 + seed, (4_000, 24 * MIB, 1)) > 0);
        let tiers = allocator.virtual_heap_stats(1).unwrap().tiers;
        assert!(tiers > 1, "seed {seed}: {tiers} tiers opened");
    }
}

#[test]
fn randomized_peak_slack_swaps_keep_the_page_books_right() {
    randomized_swaps(tight_allocator);
}

#[test]
fn randomized_swaps_in_tiers_keep_the_page_books_right() {
    randomized_swaps(|| {
        let (_, allocator) = tight_allocator();
        let tiers = vec![HeapTier::new(128 * MIB, 8 * MIB), HeapTier::new(512 * MIB, 32 * MIB)];
        let config = allocator.config().virtual_heap.clone().unwrap().with_tiers(tiers);
        virtual_allocator(HostMode::Simulated, config)
    });
}

/// The randomized swaps of [`randomized_peak_slack_swaps_keep_the_page_books_right`] on allocators `make` makes.
fn randomized_swaps(make: impl Fn() -> (Arc<HostDevice>, Allocator<Arc<HostDevice>>)) {
    // A small reservation (the checker walks every page) and no floor of spare pages, so requests often find no
    // ready pages: placement on ready pages, mappings of free pages at fresh addresses, unmaps of conflicting
    // ones, and (the reservation running out) unmaps of unused addresses all run, with the checker (users,
    // mappings, owners, free queue, bytes) after every operation.
    for seed in 1..=8 {
        let (device, allocator) = make();
        let mut rng = Rng::new(seed);
        let mut live = Vec::new();
        let mut live_bytes = 0u64;
        let mut aliased_steps = 0u32;
        for step in 0..10_000 {
            if live.is_empty() || (live_bytes < 1 << 30 && rng.chance(50)) {
                let desc = AllocationDesc::new("r", rng.log_uniform(1, 64 * MIB), MemoryLocation::GpuOnly);
                let allocation =
                    allocator.allocate(&desc).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                live_bytes += allocation.size();
                live.push(allocation);
            } else {
                let allocation = live.swap_remove(rng.below(live.len() as u64) as usize);
                live_bytes -= allocation.size();
                allocator.free(allocation).unwrap();
            }
            allocator.check().unwrap_or_else(|v| panic!("seed {seed} step {step}: {v:?}"));
            let stats = allocator.virtual_heap_stats(1).unwrap();
            aliased_steps += u32::from(stats.mapped_bytes > stats.committed_bytes);
        }
        assert!(aliased_steps > 0, "seed {seed}: pages showed at several addresses at some point");
        for allocation in live {
            allocator.free(allocation).unwrap();
        }
        allocator.trim_empty_blocks();
        allocator.check().unwrap();
        assert_eq!(device.counters().committed_bytes, 0, "seed {seed}: every committed page came back");
    }
}

#[test]
fn peak_slack_reuses_pages_across_rounds_within_its_budget() {
    let config = VirtualHeapConfig::default().with_release(Arc::new(PeakSlack {
        slack: 0.03,
        max_ahead_fraction: 0.25,
        min_spare_bytes: 0,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    }));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let mut peak_live = 0u64;
    let mut commits_after_first_round = 0;
    for round in 0..5 {
        // Each round grows to about 1 GiB of 4 MiB + 1 KiB tensors, then frees them all.
        let live: Vec<_> = (0..250)
            .map(|_| {
                allocator
                    .allocate(&AllocationDesc::new("t", 4 * MIB + 1024, MemoryLocation::GpuOnly))
                    .unwrap()
            })
            .collect();
        peak_live = peak_live.max(live.iter().map(|a| a.size()).sum());
        let committed = allocator.virtual_heap_stats(1).unwrap().committed_bytes;
        assert!(committed as f64 <= 1.03 * peak_live as f64 + (2 * MIB) as f64, "round {round}: {committed}");
        for a in live {
            allocator.free(a).unwrap();
        }
        if round == 0 {
            commits_after_first_round = device.counters().commits;
        }
    }
    assert_eq!(device.counters().commits, commits_after_first_round, "later rounds reuse the pages");
    assert_eq!(device.counters().decommits, 0, "within the budget nothing is decommitted");
    // Without running ahead nearly every request would need a commit of its own.
    assert!(
        commits_after_first_round < 250 / 2,
        "commits run ahead: {commits_after_first_round} for 250 requests"
    );
    allocator.check().unwrap();
}

#[test]
fn a_request_that_fits_no_hole_maps_the_free_pages_at_fresh_addresses() {
    let config = VirtualHeapConfig::default().with_release(Arc::new(PeakSlack {
        slack: 0.03,
        max_ahead_fraction: 0.0,
        min_spare_bytes: 0,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    }));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = |size| AllocationDesc::new("t", size, MemoryLocation::GpuOnly);
    // 400 MiB live in 4 MiB tensors, then every other one freed: 200 MiB of free physical pages in 4 MiB holes,
    // all within the budget of 1.03 × 400 MiB, so they stay.
    let mut live: Vec<_> = (0..100).map(|_| allocator.allocate(&desc(4 * MIB)).unwrap()).collect();
    let mut kept = Vec::new();
    for (i, a) in live.drain(..).enumerate() {
        if i % 2 == 0 {
            allocator.free(a).unwrap();
        } else {
            kept.push(a);
        }
    }
    let before = allocator.virtual_heap_stats(1).unwrap();
    assert_eq!((before.empty_bytes, before.committed_bytes), (200 * MIB, 400 * MIB), "the holes stay");
    let calls = device.counters();
    // A 200 MiB request fits in no hole. The holes' physical pages, mapped once more at fresh addresses, hold
    // it: one call, no new memory, nothing unmapped.
    let big = allocator.allocate(&desc(200 * MIB)).unwrap();
    let stats = allocator.virtual_heap_stats(1).unwrap();
    assert_eq!((stats.live_bytes, stats.committed_bytes, stats.empty_bytes), (400 * MIB, 400 * MIB, 0));
    assert_eq!(device.counters().committed_bytes, 400 * MIB);
    assert_eq!(device.counters().commits - calls.commits, 1);
    assert_eq!(device.counters().decommits, calls.decommits);
    assert_eq!(stats.mapped_bytes, 600 * MIB, "each hole's pages show at two addresses");
    allocator.check().unwrap();
    // Freed, its pages serve the holes again (the other address of each), with no call either.
    allocator.free(big).unwrap();
    let calls = device.counters();
    let refill: Vec<_> = (0..50).map(|_| allocator.allocate(&desc(4 * MIB)).unwrap()).collect();
    assert_eq!((device.counters().commits, device.counters().decommits), (calls.commits, calls.decommits));
    assert_eq!(allocator.virtual_heap_stats(1).unwrap().committed_bytes, 400 * MIB);
    allocator.check().unwrap();
    for a in kept.into_iter().chain(refill) {
        allocator.free(a).unwrap();
    }
    allocator.check().unwrap();
}

#[test]
fn a_request_that_fits_a_hole_on_committed_pages_goes_there_rather_than_to_new_pages() {
    let config = VirtualHeapConfig::default().with_release(Arc::new(PeakSlack {
        slack: 1.0,
        max_ahead_fraction: 0.0,
        min_spare_bytes: 64 * MIB,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    }));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = |size| AllocationDesc::new("t", size, MemoryLocation::GpuOnly);
    const KIB: u64 = 1 << 10;
    // Two holes in one TLSF bin (5 MiB to 5.125 MiB), the smaller freed last so that it heads the bin.
    let small = allocator.allocate(&desc(5 * MIB + 16 * KIB)).unwrap();
    let spacer_a = allocator.allocate(&desc(MIB)).unwrap();
    let large = allocator.allocate(&desc(5 * MIB + 100 * KIB)).unwrap();
    let spacer_b = allocator.allocate(&desc(MIB)).unwrap();
    let large_offset = large.offset();
    allocator.free(large).unwrap();
    allocator.free(small).unwrap();
    let commits = device.counters().commits;
    assert_eq!(allocator.virtual_heap_stats(1).unwrap().decommits, 0, "the holes stay committed");
    // The bin's head is too small, and TLSF's guaranteed fit is the uncommitted space past `spacer_b`; the
    // larger hole, second in the bin, holds the request on committed pages.
    let request = allocator.allocate(&desc(5 * MIB + 50 * KIB)).unwrap();
    assert_eq!(request.offset(), large_offset);
    assert_eq!(device.counters().commits, commits, "no new pages");
    allocator.check().unwrap();
    for a in [request, spacer_a, spacer_b] {
        allocator.free(a).unwrap();
    }
    allocator.check().unwrap();
}

#[test]
fn a_physical_page_given_back_is_unmapped_at_every_address_it_shows_at() {
    let config = VirtualHeapConfig::default().with_release(Arc::new(PeakSlack {
        slack: 0.0,
        max_ahead_fraction: 0.0,
        min_spare_bytes: 0,
        spare_until_allocated: f64::INFINITY,
        loading_ahead_bytes: 0,
        ..PeakSlack::default()
    }));
    let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
    let desc = |size| AllocationDesc::new("t", size, MemoryLocation::GpuOnly);
    // Holes of 1 page between 1-page tensors; a 3-page request maps three of them at fresh addresses.
    let mut live: Vec<_> = (0..8).map(|_| allocator.allocate(&desc(2 * MIB)).unwrap()).collect();
    let kept: Vec<_> = live
        .drain(..)
        .enumerate()
        .filter_map(|(i, a)| {
            if i % 2 == 0 {
                allocator.free(a).unwrap();
                None
            } else {
                Some(a)
            }
        })
        .collect();
    let big = allocator.allocate(&desc(6 * MIB)).unwrap();
    allocator.free(big).unwrap();
    let stats = allocator.virtual_heap_stats(1).unwrap();
    assert_eq!((stats.committed_bytes, stats.empty_bytes), (16 * MIB, 8 * MIB));
    assert!(stats.mapped_bytes > stats.committed_bytes, "free pages show at two addresses: {stats:?}");
    // Trimming gives the free pages back: each address they are mapped at is unmapped (one call per run).
    let calls = device.counters().decommits;
    allocator.trim_empty_blocks();
    let stats = allocator.virtual_heap_stats(1).unwrap();
    assert_eq!((stats.committed_bytes, stats.empty_bytes, stats.mapped_bytes), (8 * MIB, 0, 8 * MIB));
    assert_eq!(device.counters().committed_bytes, 8 * MIB);
    let unmaps = device.counters().decommits - calls;
    assert!((2..=5).contains(&unmaps), "the fresh run in one call, the holes one each: {unmaps}");
    allocator.check().unwrap();
    for a in kept {
        allocator.free(a).unwrap();
    }
    allocator.trim_empty_blocks();
    assert_eq!(device.counters().committed_bytes, 0);
}

#[test]
fn require_within_budget_refuses_commits_on_a_full_heap() {
    use memcarve::{AllocationOptions, BudgetPolicy, Usage};
    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::lavapipe(), HostMode::Simulated)));
    // Pages are released at once and never committed ahead, so every new request needs a commit.
    let heap = VirtualHeapConfig::default().with_release(Arc::new(ReleaseImmediately));
    let allocator =
        Allocator::new(Arc::clone(&device), AllocatorConfig::default().with_virtual_heap(heap)).unwrap();
    let ignore = AllocationOptions::new(Usage::GpuOnly).with_budget(BudgetPolicy::Ignore);
    // lavapipe's one heap is 4 GiB with a budget of 80 %: fill 3.5 GiB and half a page.
    let filler = allocator.allocate(&AllocationDesc::new("fill", 3585 * MIB, ignore)).unwrap();
    let require = AllocationOptions::new(Usage::GpuOnly).with_budget(BudgetPolicy::RequireWithin);
    let refused = allocator.allocate(&AllocationDesc::new("new pages", 64 * MIB, require));
    assert!(matches!(refused, Err(Error::OutOfMemory { .. })), "{refused:?}");
    // Pages already committed may still be used: a small request fits in the filler's last, half-used page.
    let inside = allocator.allocate(&AllocationDesc::new("committed page", 512, require)).unwrap();
    allocator.free(filler).unwrap();
    let fits = allocator.allocate(&AllocationDesc::new("now within", 64 * MIB, require)).unwrap();
    allocator.free(fits).unwrap();
    allocator.free(inside).unwrap();
    allocator.check().unwrap();
}

/// Generation rounds as transformers runs them with a dynamic KV cache: weights, then per round fresh caches of
/// `first` bytes and, per step and layer, a K and a V cache each replaced by a copy `token` bytes longer (the copy
/// allocated, attention scores allocated, then the old copy and the scores freed), a query before and a logits
/// tensor after; the checker after every step. `touch` sees every allocation right after it is made (`true`) and
/// right before it is freed (`false`). Returns the virtual heap's counters after each round.
fn generate_with_growing_caches(
    allocator: &Allocator<Arc<HostDevice>>,
    layers: usize,
    rounds: &[(u64, u64)],
    token: u64,
    touch: impl FnMut(&memcarve::Allocation, bool),
) -> Vec<VirtualHeapStats> {
    let touch = std::cell::RefCell::new(touch);
    let touch = |allocation: &memcarve::Allocation, made: bool| (touch.borrow_mut())(allocation, made);
    let allocate = |size: u64| {
        let allocation =
            allocator.allocate(&AllocationDesc::new("g", size, MemoryLocation::GpuOnly)).unwrap();
        touch(&allocation, true);
        allocation
    };
    let free = |allocation: memcarve::Allocation| {
        touch(&allocation, false);
        allocator.free(allocation).unwrap();
    };
    let weights = allocate(48 * MIB);
    let mut stats = Vec::new();
    for &(first, steps) in rounds {
        let mut caches: Vec<memcarve::Allocation> = (0..2 * layers).map(|_| allocate(first)).collect();
        for step in 1..=steps {
            let cache_size = first + step * token;
            for layer in 0..layers {
                let query = allocate(token);
                for kv in 0..2 {
                    let copy = allocate(cache_size);
                    let old = std::mem::replace(&mut caches[2 * layer + kv], copy);
                    let scores = allocate(cache_size / 16);
                    free(old);
                    free(scores);
                }
                free(query);
            }
            free(allocate(3 * MIB + 64 * 1024));
            allocator.check().unwrap_or_else(|v| panic!("step {step}: {v:?}"));
        }
        caches.into_iter().for_each(free);
        stats.push(allocator.virtual_heap_stats(weights.memory_type()).unwrap());
    }
    free(weights);
    allocator.check().unwrap();
    stats
}

#[test]
fn a_growing_cache_series_moves_in_few_driver_calls_within_the_budget() {
    // 12 layers of K and V caches growing by 96 KiB a step (GPT-2 small's at batch 8, about), a first round to
    // 14.6 MiB each, then shorter prompts generating longer: each copy is a little larger than the hole its
    // predecessor leaves, so without the series handling the caches drift and every few copies need pages
    // mapped at fresh addresses, even where the first round's pages would do.
    let rounds = [(9 * MIB, 60), (6 * MIB, 80), (4 * MIB, 100), (7 * MIB, 70)];
    let run = |series: bool| {
        let config = VirtualHeapConfig::default().with_growing_series(series);
        let (device, allocator) = virtual_allocator(HostMode::Simulated, config);
        let stats = generate_with_growing_caches(&allocator, 12, &rounds, 96 * 1024, |_, _| {});
        let last = stats.last().unwrap();
        assert_eq!(device.counters().commits + device.counters().decommits, last.commits + last.decommits);
        stats
    };
    let (on, off) = (run(true), run(false));
    // Driver operations in the rounds after the first (which sets the peak).
    let later = |stats: &[VirtualHeapStats]| {
        let (first, last) = (&stats[0], stats.last().unwrap());
        last.commits + last.decommits - first.commits - first.decommits
    };
    let last = |stats: &[VirtualHeapStats]| *stats.last().unwrap();
    let overhead =
        |stats: &VirtualHeapStats| stats.peak_committed_bytes as f64 / stats.peak_live_bytes as f64;
    let (on_last, off_last) = (last(&on), last(&off));
    eprintln!(
        "growing caches: series {} operations ({} after the first round) at {:.3} x, {} mappings for {} pages; \
         without {} ({}) at {:.3} x",
        on_last.commits + on_last.decommits,
        later(&on),
        overhead(&on_last),
        on_last.mapped_bytes >> 21,
        on_last.committed_bytes >> 21,
        off_last.commits + off_last.decommits,
        later(&off),
        overhead(&off_last),
    );
    assert_eq!(on_last.peak_live_bytes, off_last.peak_live_bytes);
    let total = |stats: &VirtualHeapStats| stats.commits + stats.decommits;
    assert!(total(&on_last) < total(&off_last), "{} vs {}", total(&on_last), total(&off_last));
    assert!(2 * later(&on) <= later(&off), "{} vs {}", later(&on), later(&off));
    assert!(overhead(&on_last) <= 1.05 && overhead(&on_last) <= overhead(&off_last));
    // Mappings stay within the heap's bound (8 per physical page, counting at least 64, checked before each
    // mapping, which may add a series' worth of pages).
    let pages = (on_last.committed_bytes >> 21).max(64);
    assert!(on_last.mapped_bytes >> 21 <= 9 * pages, "{} mappings", on_last.mapped_bytes >> 21);
}

#[test]
fn a_growing_cache_series_keeps_every_pattern_in_real_memory() {
    // The series maps live members' pages at fresh addresses ahead of time: no allocation may use such an
    // address while the member lives. Every allocation is filled with its own byte when made and checked when
    // freed.
    let config = VirtualHeapConfig::default().with_reserve_size(4 << 30);
    let (_device, allocator) = virtual_allocator(HostMode::Real, config);
    let mut patterns = std::collections::HashMap::new();
    let mut next = 0u8;
    let rounds = [(3 * MIB, 40), (2 * MIB, 50)];
    let stats = generate_with_growing_caches(&allocator, 6, &rounds, 48 * 1024, |allocation, made| {
        let ptr = allocator.virtual_address(allocation).unwrap();
        // SAFETY: the pointer is valid for the allocation's size while it is live (host memory in real mode), and
        // no other live allocation overlaps it.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), allocation.size() as usize) };
        if made {
            next = next.wrapping_add(1);
            bytes.fill(next);
            patterns.insert(ptr.as_ptr() as usize, next);
        } else {
            let pattern = patterns.remove(&(ptr.as_ptr() as usize)).unwrap();
            assert!(bytes.iter().all(|&b| b == pattern), "a live allocation was overwritten");
        }
    });
    assert!(stats.last().unwrap().mapped_bytes > 0);
}

#[test]
fn randomized_growing_series_among_other_requests_keep_the_page_books_right() {
    // Caches replaced by larger copies (so the series handling runs: grid ranges, members' pages mapped ahead,
    // the cursor, stale mappings unmapped) among random requests and frees, with little slack so that requests
    // often find no ready pages; the checker after every operation.
    for seed in 1..=4 {
        let (device, allocator) = tight_allocator();
        let mut rng = Rng::new(seed);
        let desc = |size: u64| AllocationDesc::new("s", size, MemoryLocation::GpuOnly);
        let check =
            |step: u64| allocator.check().unwrap_or_else(|v| panic!("seed {seed} step {step}: {v:?}"));
        let first = rng.log_uniform(MIB, 4 * MIB);
        let token = rng.log_uniform(8 * 1024, 128 * 1024);
        let mut caches: Vec<_> = (0..8).map(|_| allocator.allocate(&desc(first)).unwrap()).collect();
        let mut others = Vec::new();
        for step in 1..=250u64 {
            for cache in caches.iter_mut() {
                let copy = allocator.allocate(&desc(first + step * token)).unwrap();
                check(step);
                allocator.free(std::mem::replace(cache, copy)).unwrap();
                check(step);
                if others.is_empty() || rng.chance(50) {
                    others.push(allocator.allocate(&desc(rng.log_uniform(1, 16 * MIB))).unwrap());
                } else {
                    allocator.free(others.swap_remove(rng.below(others.len() as u64) as usize)).unwrap();
                }
                check(step);
            }
        }
        let stats = allocator.virtual_heap_stats(caches[0].memory_type()).unwrap();
        assert!(stats.mapped_bytes > stats.committed_bytes, "seed {seed}: pages showed at several addresses");
        for allocation in caches.into_iter().chain(others) {
            allocator.free(allocation).unwrap();
        }
        allocator.trim_empty_blocks();
        check(0);
        assert_eq!(device.counters().committed_bytes, 0, "seed {seed}: every committed page came back");
    }
}
