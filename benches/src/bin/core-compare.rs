//! `core-compare`: nanoseconds per allocate+free pair for three TLSF-style range allocators on the same
//! operation sequences, and the heap metadata each one holds.
//!
//! Run it (release, it takes a few seconds) with
//!
//! ```text
//! cargo run --release -p memcarve-benches --bin core-compare
//! ```
//!
//! Allocators, all over a 1 GiB range with a 16-byte granularity:
//!
//! - memcarve's TLSF through the public [`memcarve_core::VirtualBlock`], configured as
//!   `VirtualBlockConfig::new(1 << 30).with_min_granularity(16)`;
//! - `offset-allocator` 0.2 (a Rust port of Sebastian Aaltonen's OffsetAllocator) in 16-byte units
//!   (`ceil(size / 16)`), with nodes for 256 Ki allocations; it has no alignment, so it sits out workload (c);
//! - VMA's TLSF through `vk-mem` 0.5's `VirtualBlock` (no Vulkan device involved), given sizes rounded up to 16
//!   so that it manages the same 16-byte-granular layout as the other two.
//!
//! Every allocator is asked for the same alignment: 16 (the common granularity, so free) in (a) and (b), 256 in
//! (c). Workloads, generated once from a fixed seed and then replayed on every allocator:
//!
//! - (a) batch: 100,000 allocations of 16 B – 16 KiB (log-uniform), then all freed in a shuffled order; the
//!   time of both phases divided by 100,000.
//! - (b) churn: 10,000 live allocations of 64 B – 256 KiB (set up untimed), then 100,000 timed steps of "free a
//!   random live allocation, allocate a new one"; the time divided by 100,000.
//! - (c) as (b) with every request 256-byte aligned, and sizes that are multiples of 256 bumped by 1–255 bytes
//!   so that none is.
//!
//! Each allocator is created once per workload; an untimed first pass checks that every returned range is
//! aligned, inside the capacity and disjoint from the others (and warms the allocator up), then the workload is
//! timed [`REPETITIONS`] times, rotating which allocator goes first, and the median is reported.
//!
//! Metadata: for (b), glibc's `mallinfo2()` heap-in-use is read before an allocator is created and after its
//! setup and churn, while it is alive; the benchmark's own handle vectors are allocated before the first reading.
//!
//! The last line of stdout is machine-readable:
//! `core-compare: batch tlsf/offset=<r> churn tlsf/offset=<r> aligned/unaligned=<r> churn vma/tlsf=<r>`.

use std::hint::black_box;
use std::time::Instant;

use memcarve_benches::{Rng, Summary, heap_in_use, log_uniform, shuffle, thousands};
use memcarve_core::{Handle, ResourceClass, VirtualBlock, VirtualBlockConfig};
use vk_mem::{
    VirtualAllocation, VirtualAllocationCreateFlags, VirtualAllocationCreateInfo, VirtualBlockCreateInfo,
};

/// Bytes managed by every allocator.
const CAPACITY: u64 = 1 << 30;
/// The allocation granularity every allocator works at (memcarve's `min_granularity`, offset-allocator's unit).
const GRANULARITY: u64 = 16;
/// Node count for offset-allocator (it preallocates them and fails an allocation once they run out).
const OFFSET_MAX_ALLOCS: u32 = 256 * 1024;
/// Timed repetitions of each workload per allocator.
const REPETITIONS: usize = 21;
/// Seed of every sequence.
const SEED: u64 = 0x6D65_6D63_6172_7665;

/// Allocations in the batch workload.
const BATCH_COUNT: usize = 100_000;
/// Live allocations during churn.
const CHURN_LIVE: usize = 10_000;
/// Timed free+allocate steps in the churn workloads.
const CHURN_STEPS: usize = 100_000;
/// Alignment of workload (c).
const ALIGNED: u64 = 256;

/// The little every allocator under test has to offer: allocate (panicking on failure) and free.
trait RangeAllocator {
    /// Column name.
    const NAME: &'static str;
    /// What frees an allocation.
    type Handle;
    /// Allocates `size` bytes aligned to `alignment`; returns the handle and the offset. Panics if the
    /// allocator refuses (out of memory cannot happen at these sizes, so it would be a bug).
    fn allocate(&mut self, size: u64, alignment: u64) -> (Self::Handle, u64);
    /// Frees an allocation this allocator returned. Panics if the allocator reports an error.
    fn free(&mut self, handle: Self::Handle);
}

/// memcarve's TLSF, through the public `VirtualBlock`.
struct Memcarve(VirtualBlock<()>);

impl Memcarve {
    fn new() -> Memcarve {
        let config = VirtualBlockConfig::new(CAPACITY).with_min_granularity(GRANULARITY);
        Memcarve(VirtualBlock::with_config(config).expect("memcarve tlsf: VirtualBlock::with_config failed"))
    }
}

impl RangeAllocator for Memcarve {
    const NAME: &'static str = "memcarve tlsf";
    type Handle = Handle;

    #[inline]
    fn allocate(&mut self, size: u64, alignment: u64) -> (Handle, u64) {
        match self.0.allocate(size, alignment, ResourceClass::Buffer) {
            Ok(allocation) => (allocation.handle, allocation.offset),
            Err(e) => panic!("{}: allocate(size {size}, alignment {alignment}) failed: {e}", Self::NAME),
        }
    }

    #[inline]
    fn free(&mut self, handle: Handle) {
        if let Err(e) = self.0.free(handle) {
            panic!("{}: free failed: {e}", Self::NAME);
        }
    }
}

/// `offset-allocator`, in units of [`GRANULARITY`] bytes.
struct OffsetAlloc(offset_allocator::Allocator);

impl OffsetAlloc {
    fn new() -> OffsetAlloc {
        let units =
            u32::try_from(CAPACITY / GRANULARITY).expect("offset-allocator: capacity exceeds u32 units");
        OffsetAlloc(offset_allocator::Allocator::with_max_allocs(units, OFFSET_MAX_ALLOCS))
    }
}

impl RangeAllocator for OffsetAlloc {
    const NAME: &'static str = "offset-allocator";
    type Handle = offset_allocator::Allocation;

    #[inline]
    fn allocate(&mut self, size: u64, alignment: u64) -> (offset_allocator::Allocation, u64) {
        // Every offset is a multiple of the unit, so alignments up to the unit hold; larger ones cannot be asked.
        assert!(alignment <= GRANULARITY, "{}: no alignment support beyond {GRANULARITY}", Self::NAME);
        let units =
            u32::try_from(size.div_ceil(GRANULARITY)).expect("offset-allocator: size exceeds u32 units");
        match self.0.allocate(units) {
            Some(allocation) => (allocation, u64::from(allocation.offset) * GRANULARITY),
            None => panic!(
                "{}: allocate({units} units = {size} bytes) failed: out of space or out of its \
                 {OFFSET_MAX_ALLOCS} nodes",
                Self::NAME
            ),
        }
    }

    #[inline]
    fn free(&mut self, handle: offset_allocator::Allocation) {
        self.0.free(handle);
    }
}

/// VMA's TLSF through `vk-mem`'s `VirtualBlock`.
///
/// Invariant relied on by the `unsafe` calls below: the harness functions in this file take one allocator,
/// keep the handles it returns in a vector of their own, and hand each handle back to that same allocator
/// exactly once (by value; `VirtualAllocation` is neither `Copy` nor `Clone`) before they return.
struct Vma(vk_mem::VirtualBlock);

impl Vma {
    fn new() -> Vma {
        let info = VirtualBlockCreateInfo { size: CAPACITY, ..Default::default() };
        Vma(vk_mem::VirtualBlock::new(info).expect("vma tlsf: vmaCreateVirtualBlock failed"))
    }
}

impl RangeAllocator for Vma {
    const NAME: &'static str = "vma tlsf";
    type Handle = VirtualAllocation;

    #[inline]
    fn allocate(&mut self, size: u64, alignment: u64) -> (VirtualAllocation, u64) {
        let info = VirtualAllocationCreateInfo {
            size: size.next_multiple_of(GRANULARITY),
            alignment,
            user_data: 0,
            flags: VirtualAllocationCreateFlags::empty(),
        };
        // SAFETY: `vmaVirtualAllocate` needs a live block, used by one thread at a time, and a valid request.
        // The block was created by `vk_mem::VirtualBlock::new` and is destroyed only by its `Drop`, so it is live
        // while `self` is; `&mut self` makes this call exclusive. The request is valid because this harness only
        // passes sizes >= 16 (non-zero) and power-of-two alignments (16 or 256), with no flags and no user data.
        match unsafe { self.0.allocate(info) } {
            Ok((allocation, offset)) => (allocation, offset),
            Err(e) => panic!("{}: allocate(size {size}, alignment {alignment}) failed: {e}", Self::NAME),
        }
    }

    #[inline]
    fn free(&mut self, mut handle: VirtualAllocation) {
        // SAFETY: `vmaVirtualFree` needs a live block used exclusively (as in `allocate`: owned by `self`, and
        // `&mut self`) and an allocation that this block returned and that is still live. The latter is the
        // harness invariant documented on `Vma`: each handle comes from this block's `allocate` and, being moved
        // in by value and not `Clone`, reaches `free` once; it is dropped right after, so it cannot be reused.
        unsafe { self.0.free(&mut handle) };
    }
}

/// Workload (a): sizes in allocation order and the order (indices into `sizes`) in which they are freed.
struct Batch {
    sizes: Vec<u64>,
    free_order: Vec<u32>,
}

/// One churn step: free the live allocation at position `victim`, then allocate `size`.
#[derive(Clone, Copy)]
struct Step {
    victim: u32,
    size: u64,
}

/// Workloads (b) and (c): the untimed setup and the timed steps.
///
/// Live handles are kept in a vector; a step `swap_remove`s the victim and pushes the new allocation, so the
/// positions evolve identically for every allocator.
#[derive(Clone)]
struct Churn {
    alignment: u64,
    setup: Vec<u64>,
    steps: Vec<Step>,
}

fn generate_batch(rng: &mut Rng) -> Batch {
    let sizes = (0..BATCH_COUNT).map(|_| log_uniform(rng, 16, 16 * 1024)).collect();
    let mut free_order: Vec<u32> = (0..BATCH_COUNT as u32).collect();
    shuffle(rng, &mut free_order);
    Batch { sizes, free_order }
}

fn generate_churn(rng: &mut Rng) -> Churn {
    let setup = (0..CHURN_LIVE).map(|_| log_uniform(rng, 64, 256 * 1024)).collect();
    let steps = (0..CHURN_STEPS)
        .map(|_| Step { victim: rng.below(CHURN_LIVE as u64) as u32, size: log_uniform(rng, 64, 256 * 1024) })
        .collect();
    Churn { alignment: GRANULARITY, setup, steps }
}

/// Workload (c) from (b): the same sequence, 256-byte aligned, with multiples of 256 bumped by 1–255 bytes.
fn aligned_variant(churn: &Churn, rng: &mut Rng) -> Churn {
    let mut bump = |size: u64| {
        if size.is_multiple_of(ALIGNED) { size + rng.range_inclusive(1, ALIGNED - 1) } else { size }
    };
    Churn {
        alignment: ALIGNED,
        setup: churn.setup.iter().map(|&s| bump(s)).collect(),
        steps: churn.steps.iter().map(|&s| Step { victim: s.victim, size: bump(s.size) }).collect(),
    }
}

/// Times one batch run: ns per allocate+free pair. `slots` is scratch space with room for every handle.
fn time_batch<A: RangeAllocator>(alloc: &mut A, batch: &Batch, slots: &mut Vec<Option<A::Handle>>) -> f64 {
    slots.clear();
    let start = Instant::now();
    for &size in &batch.sizes {
        let (handle, offset) = alloc.allocate(size, GRANULARITY);
        black_box(offset);
        slots.push(Some(handle));
    }
    for &index in &batch.free_order {
        let handle = slots[index as usize].take().expect("batch: an allocation freed twice");
        alloc.free(handle);
    }
    let elapsed = start.elapsed();
    elapsed.as_nanos() as f64 / batch.sizes.len() as f64
}

/// Allocates the churn setup (untimed) into `live`, which must be empty with room for [`CHURN_LIVE`] handles.
fn churn_setup<A: RangeAllocator>(alloc: &mut A, churn: &Churn, live: &mut Vec<A::Handle>) {
    debug_assert!(live.is_empty());
    for &size in &churn.setup {
        let (handle, offset) = alloc.allocate(size, churn.alignment);
        black_box(offset);
        live.push(handle);
    }
}

/// Times the churn steps: ns per free+allocate pair.
fn churn_steps<A: RangeAllocator>(alloc: &mut A, churn: &Churn, live: &mut Vec<A::Handle>) -> f64 {
    let start = Instant::now();
    for step in &churn.steps {
        let victim = live.swap_remove(step.victim as usize);
        alloc.free(victim);
        let (handle, offset) = alloc.allocate(step.size, churn.alignment);
        black_box(offset);
        live.push(handle);
    }
    let elapsed = start.elapsed();
    elapsed.as_nanos() as f64 / churn.steps.len() as f64
}

/// Frees everything in `live`.
fn free_all<A: RangeAllocator>(alloc: &mut A, live: &mut Vec<A::Handle>) {
    for handle in live.drain(..) {
        alloc.free(handle);
    }
}

/// One complete, timed churn run (setup and teardown untimed).
fn time_churn<A: RangeAllocator>(alloc: &mut A, churn: &Churn, live: &mut Vec<A::Handle>) -> f64 {
    churn_setup(alloc, churn, live);
    let ns = churn_steps(alloc, churn, live);
    free_all(alloc, live);
    ns
}

/// Panics unless every `(offset, size)` is `alignment`-aligned, inside the capacity and disjoint from the rest.
fn check_placement(name: &str, workload: &str, ranges: &mut [(u64, u64)], alignment: u64) {
    for &(offset, size) in ranges.iter() {
        assert!(
            offset.is_multiple_of(alignment),
            "{name} ({workload}): offset {offset} not {alignment}-aligned"
        );
        assert!(offset + size <= CAPACITY, "{name} ({workload}): range {offset}+{size} beyond the capacity");
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((a, a_size), (b, _)) = (pair[0], pair[1]);
        assert!(a + a_size <= b, "{name} ({workload}): ranges at {a}+{a_size} and {b} overlap");
    }
}

/// Untimed first pass of the batch workload that checks every placement (and warms the allocator up).
fn validate_batch<A: RangeAllocator>(alloc: &mut A, batch: &Batch) {
    let mut handles = Vec::with_capacity(batch.sizes.len());
    let mut ranges = Vec::with_capacity(batch.sizes.len());
    for &size in &batch.sizes {
        let (handle, offset) = alloc.allocate(size, GRANULARITY);
        handles.push(Some(handle));
        ranges.push((offset, size.next_multiple_of(GRANULARITY)));
    }
    check_placement(A::NAME, "batch", &mut ranges, GRANULARITY);
    for &index in &batch.free_order {
        alloc.free(handles[index as usize].take().expect("batch: an allocation freed twice"));
    }
}

/// Untimed first pass of a churn workload: the live set is checked after the setup and after the steps.
fn validate_churn<A: RangeAllocator>(alloc: &mut A, churn: &Churn, workload: &str) {
    let mut live = Vec::with_capacity(CHURN_LIVE);
    let mut ranges = Vec::with_capacity(CHURN_LIVE);
    for &size in &churn.setup {
        let (handle, offset) = alloc.allocate(size, churn.alignment);
        live.push(handle);
        ranges.push((offset, size.next_multiple_of(GRANULARITY)));
    }
    check_placement(A::NAME, workload, &mut ranges.clone(), churn.alignment);
    for step in &churn.steps {
        alloc.free(live.swap_remove(step.victim as usize));
        ranges.swap_remove(step.victim as usize);
        let (handle, offset) = alloc.allocate(step.size, churn.alignment);
        live.push(handle);
        ranges.push((offset, step.size.next_multiple_of(GRANULARITY)));
    }
    check_placement(A::NAME, workload, &mut ranges, churn.alignment);
    free_all(alloc, &mut live);
}

/// Heap bytes (by `mallinfo2`) an allocator holds after the churn setup and steps, and what `report` says about
/// it at that point. The handle vector is allocated before the first reading so it is not counted.
fn churn_footprint<A: RangeAllocator>(
    make: impl FnOnce() -> A,
    churn: &Churn,
    report: impl FnOnce(&A) -> Option<usize>,
) -> (Option<usize>, Option<usize>) {
    let mut live = Vec::with_capacity(CHURN_LIVE);
    let before = heap_in_use();
    let mut alloc = make();
    churn_setup(&mut alloc, churn, &mut live);
    black_box(churn_steps(&mut alloc, churn, &mut live));
    let after = heap_in_use();
    let reported = report(&alloc);
    free_all(&mut alloc, &mut live);
    drop(alloc);
    let held = match (before, after) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    (held, reported)
}

/// A table cell: the summary, or `-` where an allocator sits a workload out.
fn cell(summary: Option<Summary>) -> String {
    summary.map_or_else(|| "-".to_string(), |s| s.cell())
}

/// One row of results.
struct Row {
    workload: &'static str,
    memcarve: Summary,
    offset: Option<Summary>,
    vma: Summary,
}

fn run_batch(batch: &Batch) -> Row {
    let (mut m, mut o, mut v) = (Memcarve::new(), OffsetAlloc::new(), Vma::new());
    validate_batch(&mut m, batch);
    validate_batch(&mut o, batch);
    validate_batch(&mut v, batch);
    let mut m_slots = Vec::with_capacity(BATCH_COUNT);
    let mut o_slots = Vec::with_capacity(BATCH_COUNT);
    let mut v_slots = Vec::with_capacity(BATCH_COUNT);
    let (mut m_ns, mut o_ns, mut v_ns) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..REPETITIONS {
        for turn in 0..3 {
            match (rep + turn) % 3 {
                0 => m_ns.push(time_batch(&mut m, batch, &mut m_slots)),
                1 => o_ns.push(time_batch(&mut o, batch, &mut o_slots)),
                _ => v_ns.push(time_batch(&mut v, batch, &mut v_slots)),
            }
        }
    }
    Row {
        workload: "(a) batch: 100k x 16 B-16 KiB, shuffled free",
        memcarve: Summary::of(m_ns),
        offset: Some(Summary::of(o_ns)),
        vma: Summary::of(v_ns),
    }
}

fn run_churn(churn: &Churn, with_offset: bool, workload: &'static str, tag: &str) -> Row {
    let (mut m, mut o, mut v) = (Memcarve::new(), OffsetAlloc::new(), Vma::new());
    validate_churn(&mut m, churn, tag);
    if with_offset {
        validate_churn(&mut o, churn, tag);
    }
    validate_churn(&mut v, churn, tag);
    let mut m_live = Vec::with_capacity(CHURN_LIVE);
    let mut o_live = Vec::with_capacity(CHURN_LIVE);
    let mut v_live = Vec::with_capacity(CHURN_LIVE);
    let (mut m_ns, mut o_ns, mut v_ns) = (Vec::new(), Vec::new(), Vec::new());
    let players = if with_offset { 3 } else { 2 };
    for rep in 0..REPETITIONS {
        for turn in 0..players {
            // With two players, turn 0/1 map to memcarve/VMA; with three, offset-allocator is 1 and VMA 2.
            match ((rep + turn) % players, with_offset) {
                (0, _) => m_ns.push(time_churn(&mut m, churn, &mut m_live)),
                (1, true) => o_ns.push(time_churn(&mut o, churn, &mut o_live)),
                _ => v_ns.push(time_churn(&mut v, churn, &mut v_live)),
            }
        }
    }
    Row {
        workload,
        memcarve: Summary::of(m_ns),
        offset: with_offset.then(|| Summary::of(o_ns)),
        vma: Summary::of(v_ns),
    }
}

fn bytes(n: Option<usize>) -> String {
    n.map_or_else(|| "n/a".to_string(), |n| format!("{} B", thousands(n as u64)))
}

fn main() {
    let started = Instant::now();
    eprintln!("core-compare: generating sequences (seed {SEED:#x})");
    let mut rng = Rng::new(SEED);
    let batch = generate_batch(&mut rng);
    let churn = generate_churn(&mut rng);
    let aligned = aligned_variant(&churn, &mut rng);

    eprintln!("core-compare: (a) batch");
    let a = run_batch(&batch);
    eprintln!("core-compare: (b) churn");
    let b = run_churn(&churn, true, "(b) churn: 10k live 64 B-256 KiB, 100k steps", "churn");
    eprintln!("core-compare: (c) aligned churn");
    let c = run_churn(&aligned, false, "(c) churn as (b), 256-byte aligned", "aligned churn");

    eprintln!("core-compare: metadata after (b)");
    let (m_heap, m_reported) = churn_footprint(Memcarve::new, &churn, |m| Some(m.0.metadata_bytes()));
    let (o_heap, _) = churn_footprint(OffsetAlloc::new, &churn, |_| None);
    let (v_heap, _) = churn_footprint(Vma::new, &churn, |_| None);

    println!(
        "core-compare: ns per allocate+free pair, median [min-max] of {REPETITIONS} repetitions \
         (capacity 1 GiB, granularity {GRANULARITY} B, seed {SEED:#x})"
    );
    println!();
    let name_width = 46;
    let col = 22;
    println!(
        "{:<name_width$}{:>col$}{:>col$}{:>col$}",
        "workload",
        Memcarve::NAME,
        OffsetAlloc::NAME,
        Vma::NAME
    );
    for row in [&a, &b, &c] {
        println!(
            "{:<name_width$}{:>col$}{:>col$}{:>col$}",
            row.workload,
            cell(Some(row.memcarve)),
            cell(row.offset),
            cell(Some(row.vma))
        );
    }
    println!();
    println!(
        "metadata held after (b) setup + churn ({} live), heap in use by mallinfo2 (uordblks + hblkhd):",
        thousands(CHURN_LIVE as u64)
    );
    println!(
        "  {:<18}{:>14}   (block.metadata_bytes() = {})",
        Memcarve::NAME,
        bytes(m_heap),
        bytes(m_reported)
    );
    println!(
        "  {:<18}{:>14}   (node arrays preallocated for {} allocations)",
        OffsetAlloc::NAME,
        bytes(o_heap),
        thousands(u64::from(OFFSET_MAX_ALLOCS))
    );
    println!("  {:<18}{:>14}", Vma::NAME, bytes(v_heap));
    println!();

    let offset = |row: &Row| row.offset.map_or(f64::NAN, |s| s.median);
    eprintln!("core-compare: done in {:.1} s", started.elapsed().as_secs_f64());
    println!(
        "core-compare: batch tlsf/offset={:.2} churn tlsf/offset={:.2} aligned/unaligned={:.2} churn vma/tlsf={:.2}",
        a.memcarve.median / offset(&a),
        b.memcarve.median / offset(&b),
        c.memcarve.median / b.memcarve.median,
        b.vma.median / b.memcarve.median
    );
}
