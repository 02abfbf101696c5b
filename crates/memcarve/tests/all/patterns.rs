//! In real host memory, a pattern written into each allocation when it is made is intact when it is freed:
//! no allocation ever overlaps another, whatever the mix of sizes, alignments, classes and memory types.
//! (Blocks are mapped here through the device directly; the allocator's own mapping comes later.)

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Arc;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{
    Allocation, AllocationDesc, AllocationSizes, Allocator, AllocatorConfig, BlockKey, Device,
    MemoryLocation, ResourceClass,
};

use crate::rng::Rng;

/// Maps each block while it holds allocations of the test: mapped on its first allocation, unmapped before
/// its last one is freed (so the allocator may destroy it).
#[derive(Default)]
struct Mappings {
    blocks: HashMap<BlockKey, (NonNull<u8>, usize)>,
}

impl Mappings {
    fn add(&mut self, allocator: &Allocator<Arc<HostDevice>>, allocation: &Allocation) -> NonNull<u8> {
        let device = allocator.device();
        let entry = self.blocks.entry(allocation.block_key()).or_insert_with(|| {
            let base = allocator
                .with_block(allocation, |block| {
                    // SAFETY: (1) the block is host-visible (CpuToGpu and GpuToCpu require it), made by this
                    // device, and not mapped: it is mapped only here, while absent from `blocks`.
                    unsafe { device.map(block) }.unwrap()
                })
                .unwrap();
            (base, 0)
        });
        entry.1 += 1;
        entry.0
    }

    fn remove(&mut self, allocator: &Allocator<Arc<HostDevice>>, allocation: &Allocation) {
        let key = allocation.block_key();
        let Some(entry) = self.blocks.get_mut(&key) else { panic!("unmapped block") };
        entry.1 -= 1;
        if entry.1 == 0 {
            self.blocks.remove(&key);
            // SAFETY: (1) mapped in `add`; no pointer into it is used after this.
            allocator.with_block(allocation, |block| unsafe { allocator.device().unmap(block) }).unwrap();
        }
    }
}

#[test]
fn patterns_survive_in_real_host_memory() {
    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Real)));
    let sizes = AllocationSizes::new(4 << 20, 16 << 20, 4 << 20, 16 << 20);
    let config = AllocatorConfig::default().with_sizes(sizes).with_dedicated_threshold(8 << 20);
    let allocator = Allocator::new(Arc::clone(&device), config).unwrap();
    let mut mappings = Mappings::default();
    let mut rng = Rng::new(99);
    let mut live = Vec::new();
    let locations = [MemoryLocation::CpuToGpu, MemoryLocation::GpuToCpu];
    for step in 0..30_000u64 {
        if live.is_empty() || (live.len() < 400 && rng.chance(52)) {
            let desc =
                AllocationDesc::new("p", rng.log_uniform(1, 1 << 20), locations[rng.below(2) as usize])
                    .with_alignment(1 << rng.below(12))
                    .with_class(ResourceClass::ALL[rng.below(4) as usize]);
            let allocation = allocator.allocate(&desc).unwrap();
            let base = mappings.add(&allocator, &allocation);
            let pattern = (step % 253) as u8 + 1;
            // SAFETY: the block is mapped for its whole size and the allocation lies inside it; no other live
            // allocation overlaps it (the property under test, checked when it is freed).
            unsafe {
                let ptr = base.as_ptr().add(allocation.offset() as usize);
                std::ptr::write_bytes(ptr, pattern, allocation.size() as usize);
            }
            live.push((allocation, base, pattern));
        } else {
            let (allocation, base, pattern) = live.swap_remove(rng.below(live.len() as u64) as usize);
            // SAFETY: as above; the allocation and its block's mapping are live until the calls below.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    base.as_ptr().add(allocation.offset() as usize),
                    allocation.size() as usize,
                )
            };
            assert!(bytes.iter().all(|&b| b == pattern), "step {step}: a live allocation was overwritten");
            mappings.remove(&allocator, &allocation);
            allocator.free(allocation).unwrap();
        }
    }
    allocator.check().unwrap();
    for (allocation, _, _) in live {
        mappings.remove(&allocator, &allocation);
        allocator.free(allocation).unwrap();
    }
    assert_eq!(device.counters().maps, device.counters().unmaps);
    assert!(device.counters().maps > 1, "blocks were mapped, unmapped and mapped again");
}
