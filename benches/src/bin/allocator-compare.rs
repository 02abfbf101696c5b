//! `allocator-compare`: what the full `Allocator` costs over the bare core, and how it scales with threads.
//!
//! ```text
//! cargo run --release -p memcarve-benches --bin allocator-compare
//! ```
//!
//! One churn sequence (10,000 live allocations of 64 B – 256 KiB, then 100,000 steps of "free a random live
//! allocation, allocate a new one", sizes log-uniform, alignment 256) runs on:
//!
//! - the bare core: one `memcarve_core::VirtualBlock` of 4 GiB;
//! - the full `memcarve::Allocator` on the host backend in simulated mode (discrete profile), `GpuOnly` buffers:
//!   policy, pool lock, blocks, handles and counters included.
//!
//! Both report ns per free+allocate pair (median of 15 runs, alternating). Then throughput with threads: one
//! thread runs the churn steps ten times over on `GpuOnly` memory; two threads do the same at once, one on
//! `GpuOnly` and one on `CpuToGpu` memory (different memory types, so different pools and locks), on one shared
//! allocator (median of 7). The ratio is total operations per second with two threads over one (2.0 would be
//! perfect scaling; this machine has 2 cores).
//!
//! The last line of stdout: `allocator-compare: full/core=<r> threads2/threads1=<r>`.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{AllocationDesc, Allocator, AllocatorConfig, MemoryLocation};
use memcarve_benches::{Rng, log_uniform, median};
use memcarve_core::{ResourceClass, VirtualBlock, VirtualBlockConfig};

const LIVE: usize = 10_000;
const STEPS: usize = 100_000;
const ALIGNMENT: u64 = 256;
const REPETITIONS: usize = 15;
/// Rounds of the churn steps per thread in the scaling test (short runs time thread start-up and noise).
const THREAD_ROUNDS: usize = 10;
/// Repetitions of the scaling test.
const THREAD_REPETITIONS: usize = 7;

struct Churn {
    setup: Vec<u64>,
    steps: Vec<(u32, u64)>,
}

fn churn(seed: u64) -> Churn {
    let mut rng = Rng::new(seed);
    let setup = (0..LIVE).map(|_| log_uniform(&mut rng, 64, 256 << 10)).collect();
    let steps =
        (0..STEPS).map(|_| (rng.below(LIVE as u64) as u32, log_uniform(&mut rng, 64, 256 << 10))).collect();
    Churn { setup, steps }
}

/// ns per pair on the bare core.
fn run_core(churn: &Churn) -> f64 {
    let config = VirtualBlockConfig::new(4 << 30).with_min_granularity(16);
    let mut block = VirtualBlock::<()>::with_config(config).expect("core: VirtualBlock");
    let allocate = |block: &mut VirtualBlock<()>, size| {
        block.allocate(size, ALIGNMENT, ResourceClass::Buffer).expect("core: allocate").handle
    };
    let mut live: Vec<_> = churn.setup.iter().map(|&size| allocate(&mut block, size)).collect();
    let start = Instant::now();
    for &(victim, size) in &churn.steps {
        let handle = live.swap_remove(victim as usize);
        block.free(handle).expect("core: free");
        live.push(allocate(&mut block, size));
    }
    let ns = start.elapsed().as_nanos() as f64 / churn.steps.len() as f64;
    for handle in live {
        block.free(handle).expect("core: free");
    }
    ns
}

/// Runs the churn on `allocator` in `location`; returns the seconds the steps took.
fn run_full(allocator: &Allocator<Arc<HostDevice>>, churn: &Churn, location: MemoryLocation) -> f64 {
    run_full_rounds(allocator, churn, location, 1)
}

/// As `run_full`, with the steps repeated `rounds` times after one setup (long enough to time threads).
fn run_full_rounds(
    allocator: &Allocator<Arc<HostDevice>>,
    churn: &Churn,
    location: MemoryLocation,
    rounds: usize,
) -> f64 {
    let desc = |size| AllocationDesc::new("bench", size, location).with_alignment(ALIGNMENT);
    let mut live: Vec<_> =
        churn.setup.iter().map(|&size| allocator.allocate(&desc(size)).expect("full: allocate")).collect();
    let start = Instant::now();
    for _ in 0..rounds {
        for &(victim, size) in &churn.steps {
            let allocation = live.swap_remove(victim as usize);
            allocator.free(allocation).expect("full: free");
            let allocation = allocator.allocate(&desc(size)).expect("full: allocate");
            black_box(allocation.offset());
            live.push(allocation);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    for allocation in live {
        allocator.free(allocation).expect("full: free");
    }
    seconds
}

fn new_allocator() -> Allocator<Arc<HostDevice>> {
    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated)));
    Allocator::new(device, AllocatorConfig::default()).expect("full: Allocator::new")
}

fn main() {
    let sequence = churn(0x6d63_6172_7665);
    let second = churn(0x7365_636f_6e64);
    let allocator = new_allocator();
    // Warm up both (blocks created, slabs grown) before timing.
    run_core(&sequence);
    run_full(&allocator, &sequence, MemoryLocation::GpuOnly);

    let (mut core, mut full) = (Vec::new(), Vec::new());
    for repetition in 0..REPETITIONS {
        if repetition % 2 == 0 {
            core.push(run_core(&sequence));
            full.push(run_full(&allocator, &sequence, MemoryLocation::GpuOnly) * 1e9 / STEPS as f64);
        } else {
            full.push(run_full(&allocator, &sequence, MemoryLocation::GpuOnly) * 1e9 / STEPS as f64);
            core.push(run_core(&sequence));
        }
    }
    let (core_ns, full_ns) = (median(&mut core), median(&mut full));

    let (mut one, mut two) = (Vec::new(), Vec::new());
    let shared = Arc::new(new_allocator());
    run_full(&shared, &second, MemoryLocation::CpuToGpu);
    for _ in 0..THREAD_REPETITIONS {
        let seconds = run_full_rounds(&shared, &sequence, MemoryLocation::GpuOnly, THREAD_ROUNDS);
        one.push(2.0 * (THREAD_ROUNDS * STEPS) as f64 / seconds);
        let barrier = Arc::new(Barrier::new(2));
        let start = Instant::now();
        let threads: Vec<_> = [(MemoryLocation::GpuOnly, 0), (MemoryLocation::CpuToGpu, 1)]
            .into_iter()
            .map(|(location, which)| {
                let (shared, barrier) = (Arc::clone(&shared), Arc::clone(&barrier));
                let sequence = if which == 0 { churn(0x6d63_6172_7665) } else { churn(0x7365_636f_6e64) };
                std::thread::spawn(move || {
                    barrier.wait();
                    run_full_rounds(&shared, &sequence, location, THREAD_ROUNDS)
                })
            })
            .collect();
        let busiest = threads.into_iter().map(|t| t.join().expect("thread panicked")).fold(0.0, f64::max);
        black_box(start.elapsed());
        two.push(2.0 * 2.0 * (THREAD_ROUNDS * STEPS) as f64 / busiest);
    }
    let (one_ops, two_ops) = (median(&mut one), median(&mut two));

    println!("allocator-compare: churn of {LIVE} live, {STEPS} steps, 64 B - 256 KiB, alignment {ALIGNMENT}");
    println!("  bare core TLSF (VirtualBlock)          {core_ns:8.1} ns per free+allocate");
    println!("  full Allocator (host, simulated)       {full_ns:8.1} ns per free+allocate");
    println!("  1 thread  (GpuOnly)                    {:8.2} M ops/s", one_ops / 1e6);
    println!("  2 threads (GpuOnly + CpuToGpu)         {:8.2} M ops/s", two_ops / 1e6);
    println!(
        "allocator-compare: full/core={:.2} threads2/threads1={:.2}",
        full_ns / core_ns,
        two_ops / one_ops
    );
}
