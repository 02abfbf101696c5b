//! Fills an allocator with a mix of buffers and images, frees some, and writes memcarve's JSON report and the
//! same state in VMA's dump layout (readable by VMA's `tools/GpuMemDumpVis/GpuMemDumpVis.py`).
//!
//! `cargo run -p memcarve --example report_dump -- OUT_DIR`

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{AllocationDesc, Allocator, AllocatorConfig, Dedicated, MemoryLocation, ResourceClass};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated));
    let config = AllocatorConfig::default().with_tracking(true, false).with_leak_report_on_drop(false);
    let allocator = Allocator::new(device, config)?;
    let mut live = Vec::new();
    let kinds = [
        (ResourceClass::Buffer, MemoryLocation::GpuOnly, 64 << 10),
        (ResourceClass::OptimalImage, MemoryLocation::GpuOnly, 2 << 20),
        (ResourceClass::LinearImage, MemoryLocation::GpuOnly, 256 << 10),
        (ResourceClass::Buffer, MemoryLocation::CpuToGpu, 16 << 10),
    ];
    for i in 0..120u64 {
        let (class, location, scale) = kinds[(i % 4) as usize];
        let size = scale / 2 + (i * 7919) % scale;
        let desc = AllocationDesc::new("resource", size, location).with_class(class).with_alignment(256);
        live.push(allocator.allocate(&desc)?);
    }
    let dedicated = AllocationDesc::new("render target", 24 << 20, MemoryLocation::GpuOnly)
        .with_class(ResourceClass::OptimalImage)
        .with_dedicated(Dedicated::Required);
    live.push(allocator.allocate(&dedicated)?);
    // Free every third allocation to leave holes.
    let mut index = 0;
    live.retain(|_| {
        index += 1;
        index % 3 != 0
    });
    let (kept, freed): (Vec<_>, Vec<_>) = live.into_iter().enumerate().partition(|(i, _)| i % 5 != 4);
    for (_, allocation) in freed {
        allocator.free(allocation)?;
    }
    std::fs::write(format!("{out_dir}/memcarve-report.json"), allocator.report_json())?;
    std::fs::write(format!("{out_dir}/memcarve-vma-dump.json"), allocator.vma_dump_json())?;
    let stats = allocator.stats().total;
    println!(
        "{} allocations in {} blocks, {:.1} MiB committed, fragmentation {:.3}; wrote {out_dir}/memcarve-report.json \
         and {out_dir}/memcarve-vma-dump.json",
        stats.allocation_count,
        stats.block_count,
        stats.committed_bytes as f64 / (1 << 20) as f64,
        stats.fragmentation()
    );
    for (_, allocation) in kept {
        allocator.free(allocation)?;
    }
    Ok(())
}
