//! The allocator end to end on the host backend: a simulated H200-like device, memory-type policy, pooled and
//! dedicated allocations, an out-of-memory fallback, and the counters.
//!
//! `cargo run -p memcarve --example host_quickstart`

use memcarve::backends::host::{FaultInjection, HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{AllocationDesc, Allocator, AllocatorConfig, Dedicated, MemoryLocation, ResourceClass};

fn main() -> Result<(), memcarve::Error> {
    let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated));
    let allocator = Allocator::new(device, AllocatorConfig::default())?;

    // Policy: where would each kind of memory go, and why?
    for (what, location) in [
        ("vertex buffer", MemoryLocation::GpuOnly),
        ("staging buffer", MemoryLocation::CpuToGpu),
        ("readback buffer", MemoryLocation::GpuToCpu),
    ] {
        let choice = allocator.select_memory_type(&AllocationDesc::new(what, 1 << 20, location))?;
        println!(
            "{what:<16} -> memory type {} (heap {}, {}), score {}, within budget: {}",
            choice.memory_type, choice.heap, choice.flags, choice.score, choice.within_budget
        );
    }

    // Many small buffers share one block; images get blocks of their own class.
    let buffers: Vec<_> = (0..1000)
        .map(|i| {
            allocator.allocate(
                &AllocationDesc::new("mesh", 4096 + i * 16, MemoryLocation::GpuOnly).with_alignment(256),
            )
        })
        .collect::<Result<_, _>>()?;
    let texture = AllocationDesc::new("texture", 8 << 20, MemoryLocation::GpuOnly)
        .with_alignment(64 << 10)
        .with_class(ResourceClass::OptimalImage);
    let textures: Vec<_> = (0..4).map(|_| allocator.allocate(&texture)).collect::<Result<_, _>>()?;
    let exported = allocator.allocate(
        &AllocationDesc::new("interop", 16 << 20, MemoryLocation::GpuOnly)
            .with_dedicated(Dedicated::Required),
    )?;
    println!(
        "1000 buffers + 4 textures + 1 dedicated: {} blocks, {:.1} MiB committed for {:.1} MiB used",
        allocator.block_count(),
        allocator.committed_bytes() as f64 / (1 << 20) as f64,
        allocator.used_bytes() as f64 / (1 << 20) as f64
    );

    // Out of memory on the best type: the request falls back to the next one.
    let next_attempt = allocator.device().counters().block_creation_attempts + 1;
    let fail_next =
        FaultInjection { fail_block_creation_at: Some(next_attempt), ..FaultInjection::default() };
    allocator.device().set_faults(fail_next);
    let big = allocator.allocate(&AllocationDesc::new("big", 64 << 20, MemoryLocation::GpuOnly))?;
    println!("after an injected failure, 'big' went to memory type {}", big.memory_type());

    for allocation in buffers.into_iter().chain(textures).chain([exported, big]) {
        allocator.free(allocation)?;
    }
    println!("freed everything; trimmed {} cached empty blocks", allocator.trim_empty_blocks());
    println!("diagnostics: {:?}", allocator.diagnostics());
    Ok(())
}
