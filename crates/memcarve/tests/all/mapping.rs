//! Mapping: shared block mappings with a reference count, bounds-checked access, flush and invalidate rounded
//! to the atom size, and the typed errors for memory that cannot be mapped or ranges outside the allocation.

use std::sync::Arc;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{AllocationDesc, Allocator, AllocatorConfig, Dedicated, Error, MemoryLocation};

fn real(profile: MemoryProfile, config: AllocatorConfig) -> (Arc<HostDevice>, Allocator<Arc<HostDevice>>) {
    let device = Arc::new(HostDevice::new(HostConfig::new(profile, HostMode::Real)));
    let allocator = Allocator::new(Arc::clone(&device), config).unwrap();
    (device, allocator)
}

#[test]
fn allocations_in_one_block_share_one_mapping() {
    let (device, allocator) = real(MemoryProfile::discrete(), AllocatorConfig::default());
    let desc = AllocationDesc::new("upload", 1000, MemoryLocation::CpuToGpu);
    let mut a = allocator.allocate(&desc).unwrap();
    let mut b = allocator.allocate(&desc).unwrap();
    assert_eq!(a.block_key(), b.block_key());
    let mut map_a = allocator.map(&mut a).unwrap();
    let mut map_b = allocator.map(&mut b).unwrap();
    assert_eq!(device.counters().maps, 1, "one device mapping for the block");
    map_a.write(0, b"hello").unwrap();
    drop(map_a);
    assert_eq!(device.counters().unmaps, 0, "still held by b's guard");
    // A second guard of `a`, once the first is gone, sees what the first wrote.
    let map_a = allocator.map(&mut a).unwrap();
    let mut out = [0u8; 5];
    map_a.read(0, &mut out).unwrap();
    assert_eq!(&out, b"hello");
    map_b.copy_from_slice(&[7; 1000]).unwrap();
    map_a.read(0, &mut out).unwrap();
    assert_eq!(&out, b"hello", "b's writes stay in b");
    drop(map_a);
    assert_eq!(device.counters().unmaps, 0, "still held by b's guard");
    assert_eq!(device.counters().maps, 1, "mapped once all along");
    drop(map_b);
    assert_eq!(device.counters().unmaps, 1);
    allocator.free(a).unwrap();
    allocator.free(b).unwrap();
}

#[test]
fn unmappable_memory_and_bad_ranges_are_typed_errors() {
    let (_, allocator) = real(MemoryProfile::discrete(), AllocatorConfig::default());
    let mut gpu = allocator.allocate(&AllocationDesc::new("gpu", 64, MemoryLocation::GpuOnly)).unwrap();
    assert_eq!(allocator.map(&mut gpu).unwrap_err(), Error::NotHostVisible { memory_type: 1 });
    let mut upload =
        allocator.allocate(&AllocationDesc::new("upload", 64, MemoryLocation::CpuToGpu)).unwrap();
    let mut mapped = allocator.map(&mut upload).unwrap();
    assert_eq!(mapped.write(60, &[0; 5]).unwrap_err(), Error::OutOfBounds { offset: 60, size: 5, len: 64 });
    assert_eq!(
        mapped.read(64, &mut [0; 1]).unwrap_err(),
        Error::OutOfBounds { offset: 64, size: 1, len: 64 }
    );
    assert_eq!(mapped.flush(0, 65).unwrap_err(), Error::OutOfBounds { offset: 0, size: 65, len: 64 });
    assert!(mapped.invalidate(u64::MAX, 2).is_err(), "overflowing ranges are errors, not panics");
    drop(mapped);
    allocator.free(gpu).unwrap();
    allocator.free(upload).unwrap();

    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated)));
    let simulated = Allocator::new(device, AllocatorConfig::default()).unwrap();
    let mut upload =
        simulated.allocate(&AllocationDesc::new("upload", 64, MemoryLocation::CpuToGpu)).unwrap();
    assert!(
        matches!(simulated.map(&mut upload).unwrap_err(), Error::Device(_)),
        "simulated memory cannot be mapped"
    );
    simulated.free(upload).unwrap();
}

#[test]
fn flushes_round_to_the_atom_on_non_coherent_memory_and_skip_coherent_memory() {
    let (device, allocator) = real(MemoryProfile::non_coherent(), AllocatorConfig::default());
    let desc = AllocationDesc::new("upload", 1000, MemoryLocation::CpuToGpu);
    let first = allocator.allocate(&desc).unwrap();
    let mut second = allocator.allocate(&desc).unwrap();
    assert_ne!(second.offset() % 256, 0, "the second allocation starts inside an atom");
    let mapped = allocator.map(&mut second).unwrap();
    // The host backend refuses flushes not rounded to the atom: success shows the rounding happened.
    mapped.flush(3, 10).unwrap();
    mapped.invalidate(0, 1000).unwrap();
    assert_eq!((device.counters().flushes, device.counters().invalidates), (1, 1));
    drop(mapped);
    allocator.free(first).unwrap();
    allocator.free(second).unwrap();

    let (device, allocator) = real(MemoryProfile::discrete(), AllocatorConfig::default());
    let mut coherent = allocator.allocate(&desc).unwrap();
    let mapped = allocator.map(&mut coherent).unwrap();
    mapped.flush(0, 1000).unwrap();
    assert_eq!(device.counters().flushes, 0, "coherent memory needs no flush");
    drop(mapped);
    allocator.free(coherent).unwrap();
}

#[test]
fn dedicated_and_persistent_mappings() {
    let config = AllocatorConfig::default().with_persistent_mapping(true);
    let (device, allocator) = real(MemoryProfile::discrete(), config);
    let mut pooled = allocator.allocate(&AllocationDesc::new("p", 4096, MemoryLocation::CpuToGpu)).unwrap();
    assert_eq!(device.counters().maps, 1, "mapped when the block was created");
    drop(allocator.map(&mut pooled).unwrap());
    assert_eq!(
        (device.counters().maps, device.counters().unmaps),
        (1, 0),
        "persistent: no map or unmap per use"
    );
    let mut dedicated = allocator
        .allocate(
            &AllocationDesc::new("d", 4096, MemoryLocation::CpuToGpu).with_dedicated(Dedicated::Required),
        )
        .unwrap();
    let mut mapped = allocator.map(&mut dedicated).unwrap();
    mapped.write(4095, &[1]).unwrap();
    drop(mapped);
    allocator.free(dedicated).unwrap();
    allocator.free(pooled).unwrap();
    allocator.trim_empty_blocks();
    assert_eq!(device.counters().maps, device.counters().unmaps, "destroyed blocks were unmapped first");
}

#[test]
fn debug_margins_catch_writes_outside_an_allocation() {
    let config = AllocatorConfig::default().with_debug_margin(64);
    let (_, allocator) = real(MemoryProfile::discrete(), config);
    let desc = AllocationDesc::new("guarded", 100, MemoryLocation::CpuToGpu).with_alignment(256);
    let mut a = allocator.allocate(&desc).unwrap();
    let b = allocator.allocate(&desc).unwrap();
    assert_eq!(a.offset() % 256, 0, "margins keep the alignment");
    assert!(b.offset() >= a.offset() + 100 + 64, "b lies past a's back margin");
    allocator.map(&mut a).unwrap().write(0, &[1; 100]).unwrap();
    allocator.check_corruption().unwrap();

    // Write one byte past `a` through a raw pointer, as a buggy shader or memcpy would.
    let mapped = allocator.map(&mut a).unwrap();
    // SAFETY: the byte past `a` is inside its back margin, which lies in the same mapped block.
    unsafe { *mapped.as_ptr().add(100) = 0 };
    drop(mapped);
    assert!(matches!(allocator.check_corruption(), Err(Error::Corruption { memory_type: 4, .. })));
    assert!(matches!(allocator.free(a), Err(Error::Corruption { .. })), "reported on free too");
    allocator.check_corruption().unwrap();
    assert_eq!(allocator.used_bytes(), 100, "the damaged allocation was freed all the same");
    allocator.free(b).unwrap();
    allocator.check().unwrap();

    // Device-only memory has no margins (it cannot be mapped to check them).
    let gpu = allocator.allocate(&AllocationDesc::new("gpu", 100, MemoryLocation::GpuOnly)).unwrap();
    allocator.free(gpu).unwrap();
}

#[test]
fn corruption_checks_running_beside_allocations_find_nothing() {
    // Margins are written under the pool's lock as a request is placed, so a check running meanwhile on another
    // thread never meets a range whose margins are not written yet (it used to: a false `Corruption`).
    let config = AllocatorConfig::default().with_debug_margin(64);
    let (_, allocator) = real(MemoryProfile::discrete(), config);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let checker = scope.spawn(|| {
            let mut checks = 0u64;
            loop {
                allocator.check_corruption().unwrap();
                checks += 1;
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return checks;
                }
            }
        });
        for round in 0..2_000u64 {
            let desc = AllocationDesc::new("churn", 100 + round % 900, MemoryLocation::CpuToGpu);
            let allocations: Vec<_> = (0..8).map(|_| allocator.allocate(&desc).unwrap()).collect();
            for allocation in allocations {
                allocator.free(allocation).unwrap();
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(checker.join().unwrap() > 0);
    });
    allocator.check_corruption().unwrap();
}
