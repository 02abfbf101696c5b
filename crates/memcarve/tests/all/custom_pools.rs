//! Custom pools: their own block size, block-count limits and strategy (TLSF, stack, ring).

use std::sync::Arc;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{
    Allocation, AllocationDesc, Allocator, AllocatorConfig, Error, MemoryLocation, PoolDesc, PoolStrategy,
};

fn setup() -> (Arc<HostDevice>, Allocator<Arc<HostDevice>>) {
    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Real)));
    let allocator = Allocator::new(Arc::clone(&device), AllocatorConfig::default()).unwrap();
    (device, allocator)
}

fn desc(size: u64) -> AllocationDesc<'static> {
    AllocationDesc::new("pooled", size, MemoryLocation::Unknown)
}

#[test]
fn tlsf_pool_grows_to_its_limit() {
    let (device, allocator) = setup();
    let pool = allocator.create_pool(&PoolDesc::new("meshes", 1, 1 << 20).with_block_count(1, 3)).unwrap();
    assert_eq!(device.counters().live_blocks, 1, "min_blocks created with the pool");
    let live: Vec<Allocation> =
        (0..3).map(|_| allocator.allocate_in_pool(pool, &desc(900 << 10)).unwrap()).collect();
    assert_eq!(device.counters().live_blocks, 3);
    assert!(live.iter().all(|a| a.memory_type() == 1));
    assert!(matches!(allocator.allocate_in_pool(pool, &desc(900 << 10)), Err(Error::OutOfMemory { .. })));
    assert!(matches!(allocator.allocate_in_pool(pool, &desc(2 << 20)), Err(Error::SizeTooLarge { .. })));
    assert_eq!(allocator.destroy_pool(pool), Err(Error::PoolNotEmpty { allocations: 3 }));
    assert_eq!(allocator.stats().total.allocation_count, 3);
    allocator.check().unwrap();
    for a in live {
        allocator.free(a).unwrap();
    }
    allocator.destroy_pool(pool).unwrap();
    assert_eq!(device.counters().live_blocks, 0);
    assert_eq!(allocator.allocate_in_pool(pool, &desc(16)).unwrap_err(), Error::InvalidPool, "stale pool id");
}

#[test]
fn stack_pool_frees_newest_first_and_resets() {
    let (_device, allocator) = setup();
    let pool = allocator
        .create_pool(&PoolDesc::new("frame", 2, 1 << 20).with_strategy(PoolStrategy::Stack))
        .unwrap();
    let a = allocator.allocate_in_pool(pool, &desc(1000)).unwrap();
    let mut b = allocator.allocate_in_pool(pool, &desc(1000).with_alignment(256)).unwrap();
    assert_eq!((a.offset(), b.offset()), (0, 1024));
    let a_raw = a.into_raw();
    assert_eq!(allocator.free(crate::basics::rebuilt(a_raw)), Err(Error::OutOfOrderFree));
    // Mapped writes work in custom pools of host-visible memory.
    allocator.map(&mut b).unwrap().write(0, b"frame data").unwrap();
    allocator.free(b).unwrap();
    allocator.free(crate::basics::rebuilt(a_raw)).unwrap();
    let c = allocator.allocate_in_pool(pool, &desc(64)).unwrap();
    let c_raw = c.into_raw();
    allocator.reset_pool(pool).unwrap();
    assert_eq!(allocator.used_bytes(), 0, "reset released everything");
    assert_eq!(allocator.free(crate::basics::rebuilt(c_raw)), Err(Error::DoubleFree), "stale after reset");
    allocator.check().unwrap();
    allocator.destroy_pool(pool).unwrap();
}

#[test]
fn a_pool_is_neither_reset_nor_destroyed_while_a_guard_maps_it() {
    let (device, allocator) = setup();
    let pool = allocator
        .create_pool(&PoolDesc::new("staging", 2, 1 << 20).with_strategy(PoolStrategy::Stack))
        .unwrap();
    let mut a = allocator.allocate_in_pool(pool, &desc(1000)).unwrap();
    let a_offset = a.offset();
    let mut mapped = allocator.map(&mut a).unwrap();
    mapped.write(0, b"kept").unwrap();
    assert_eq!(allocator.reset_pool(pool), Err(Error::StillMapped { guards: 1 }));
    // The refused reset changed nothing: `a` is still live, so the next allocation goes above it.
    assert_eq!(allocator.stats().total.allocation_count, 1);
    let b = allocator.allocate_in_pool(pool, &desc(1000)).unwrap();
    assert!(b.offset() >= a_offset + 1000);
    let mut out = [0; 4];
    mapped.read(0, &mut out).unwrap();
    assert_eq!(&out, b"kept");
    allocator.free(b).unwrap();
    drop(mapped);
    assert_eq!(device.counters().maps, device.counters().unmaps, "the guard's mapping was released");

    // Reset with no guard: `a` is stale, and mapping it is refused (its bytes may be another allocation's).
    allocator.reset_pool(pool).unwrap();
    let mut c = allocator.allocate_in_pool(pool, &desc(1000)).unwrap();
    assert_eq!(c.offset(), a_offset, "the reset handed a's bytes out again");
    assert_eq!(allocator.map(&mut a).unwrap_err(), Error::DoubleFree);
    let guard = allocator.map(&mut c).unwrap();
    assert_eq!(allocator.destroy_pool(pool), Err(Error::PoolNotEmpty { allocations: 1 }));
    drop(guard);
    allocator.reset_pool(pool).unwrap();
    allocator.destroy_pool(pool).unwrap();
    assert_eq!(allocator.free(a), Err(Error::DoubleFree));
    assert_eq!(allocator.free(c), Err(Error::DoubleFree));
    assert_eq!(device.counters().maps, device.counters().unmaps);
}

#[test]
fn an_allocation_reset_away_stays_stale_when_its_range_handle_comes_round_again() {
    // A TLSF's handles carry a 24-bit generation: 2^24 allocations after a reset, a new allocation's range handle
    // can equal one the reset made stale. The pool's epoch, renewed by the reset, still tells them apart.
    let (_device, allocator) = setup();
    let pool = allocator.create_pool(&PoolDesc::new("cycled", 1, 1 << 20)).unwrap();
    let stale = allocator.allocate_in_pool(pool, &desc(4096)).unwrap();
    allocator.reset_pool(pool).unwrap();
    for _ in 0..(1u32 << 24) - 1 {
        allocator.free(allocator.allocate_in_pool(pool, &desc(4096)).unwrap()).unwrap();
    }
    let live = allocator.allocate_in_pool(pool, &desc(4096)).unwrap();
    assert_eq!((live.offset(), live.size()), (stale.offset(), stale.size()));
    assert_eq!(allocator.free(stale), Err(Error::DoubleFree));
    assert_eq!(allocator.stats().total.allocation_count, 1, "the live allocation was left alone");
    allocator.free(live).unwrap();
    allocator.destroy_pool(pool).unwrap();
}

#[test]
fn ring_pool_frees_oldest_first_and_wraps() {
    let (_device, allocator) = setup();
    let pool =
        allocator.create_pool(&PoolDesc::new("ring", 4, 4096).with_strategy(PoolStrategy::Ring)).unwrap();
    let mut live = std::collections::VecDeque::new();
    let mut wrapped = false;
    for _ in 0..100 {
        match allocator.allocate_in_pool(pool, &desc(1000)) {
            Ok(a) => {
                wrapped |= a.offset() == 0 && !live.is_empty();
                live.push_back(a);
            }
            Err(Error::OutOfMemory { .. }) => allocator.free(live.pop_front().unwrap()).unwrap(),
            Err(other) => panic!("{other}"),
        }
    }
    assert!(wrapped, "the ring wrapped to its start");
    let newest = live.pop_back().unwrap().into_raw();
    if !live.is_empty() {
        assert_eq!(allocator.free(crate::basics::rebuilt(newest)), Err(Error::OutOfOrderFree));
    }
    while let Some(a) = live.pop_front() {
        allocator.free(a).unwrap();
    }
    allocator.free(crate::basics::rebuilt(newest)).unwrap();
    allocator.destroy_pool(pool).unwrap();
    assert_eq!(
        allocator.create_pool(&PoolDesc::new("bad", 99, 4096)).unwrap_err(),
        Error::InvalidConfig { reason: "pool memory type out of range" }
    );
}
