//! Drives a `VirtualBlock` through a mixed workload and prints its statistics: the quick-start job until the
//! `memcarve replay` command exists.
//!
//! `cargo run --release -p memcarve-core --example virtual_block`

use memcarve_core::{Allocation, ResourceClass, VirtualBlock, VirtualBlockConfig};

/// A small deterministic generator (xorshift64*), so every run prints the same figures.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn main() -> Result<(), memcarve_core::Error> {
    const CAPACITY: u64 = 256 << 20;
    let config = VirtualBlockConfig::new(CAPACITY).with_min_granularity(16).with_class_granularity(1024);
    let mut block = VirtualBlock::<&'static str>::with_config(config)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut live: Vec<Allocation> = Vec::new();
    let classes = [ResourceClass::Buffer, ResourceClass::OptimalImage, ResourceClass::LinearImage];
    let names = ["vertex buffer", "texture", "staging image"];
    let (mut allocations, mut frees, mut refused) = (0u64, 0u64, 0u64);

    let start = std::time::Instant::now();
    for step in 0..200_000u64 {
        // Grow towards ~4,000 live allocations, then churn.
        if live.len() < 4_000 || rng.next().is_multiple_of(2) {
            let size = 1u64 << (6 + rng.next() % 14); // 64 B .. 512 KiB
            let size = size + rng.next() % size;
            let alignment = 1u64 << (rng.next() % 9); // 1 .. 256
            let kind = (step % 3) as usize;
            match block.allocate_with(size, alignment, classes[kind], names[kind]) {
                Ok(allocation) => {
                    allocations += 1;
                    live.push(allocation);
                }
                Err(memcarve_core::Error::OutOfMemory { .. }) => refused += 1,
                Err(other) => return Err(other),
            }
        } else {
            let victim = live.swap_remove((rng.next() % live.len() as u64) as usize);
            block.free(victim)?;
            frees += 1;
        }
    }
    let elapsed = start.elapsed();

    let stats = block.stats();
    println!("VirtualBlock of {} MiB, granularity 16 B, buffer-image granularity 1 KiB", CAPACITY >> 20);
    println!(
        "operations        {} allocations, {} frees, {} refused (out of memory)",
        allocations, frees, refused
    );
    println!(
        "time              {:.1} ns per operation",
        elapsed.as_nanos() as f64 / (allocations + frees) as f64
    );
    println!("live allocations  {}", stats.allocation_count);
    println!("used              {:.1} MiB of {:.1} MiB", mib(stats.used_bytes), mib(stats.capacity));
    println!(
        "free ranges       {} (largest {:.1} MiB)",
        stats.free_range_count,
        mib(stats.largest_free_range)
    );
    println!("fragmentation     {:.3}", stats.fragmentation());
    println!("metadata          {:.1} KiB", block.metadata_bytes() as f64 / 1024.0);
    for (class, name) in classes.iter().zip(names) {
        let count = block.iter().filter(|info| info.class == *class).count();
        println!("  {name:<15} {count} live");
    }
    for allocation in live {
        block.free(allocation)?;
    }
    let empty = block.stats();
    println!(
        "after freeing all: {} free range of {:.1} MiB",
        empty.free_range_count,
        mib(empty.largest_free_range)
    );
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}
