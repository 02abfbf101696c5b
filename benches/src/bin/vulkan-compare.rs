//! `vulkan-compare`: memcarve's Vulkan backend against gpu-allocator 0.28 and VMA (vk-mem 0.5) on a real Vulkan
//! device, creating, binding and destroying real buffers.
//!
//! ```text
//! cargo run --release -p memcarve-benches --features vulkan --bin vulkan-compare
//! ```
//!
//! One Vulkan context (validation off; memcarve's `VulkanContext` picks a discrete GPU, else an integrated one,
//! else the first device) is shared by the three allocators, each with its default configuration and the
//! same block flags the device offers (buffer device address, memory budget and priority where enabled):
//!
//! - memcarve: `Allocator<VulkanDevice>::create_buffer(info, MemoryLocation::GpuOnly)` and `destroy_buffer`
//!   (vkCreateBuffer, vkGetBufferMemoryRequirements2 with the dedicated query, allocate, vkBindBufferMemory;
//!   vkDestroyBuffer, free);
//! - gpu-allocator: vkCreateBuffer, vkGetBufferMemoryRequirements, `Allocator::allocate` (`GpuOnly`, linear,
//!   `GpuAllocatorManaged`), vkBindBufferMemory; vkDestroyBuffer, `Allocator::free` (its README's pattern);
//! - VMA: `vmaCreateBuffer` with `VMA_MEMORY_USAGE_AUTO_PREFER_DEVICE` and `vmaDestroyBuffer`.
//!
//! Every buffer has usage `TRANSFER_DST | STORAGE_BUFFER` and a size drawn log-uniformly from 256 B – 1 MiB; the
//! sequences are generated once from a fixed seed and replayed on every allocator:
//!
//! - phase 1: create 10,000 buffers, then destroy them all in a shuffled order. One operation is one create
//!   (create + requirements + allocate + bind) or one destroy (destroy + free): time / 20,000.
//! - phase 2: create 1,000 buffers (untimed), then 100,000 timed steps of "destroy a random live buffer, create a
//!   new one": time / 200,000 operations (each step is two). The live set is destroyed afterwards, untimed.
//!
//! Each phase starts on a fresh allocator, so phase 1 includes growing the allocator's device-memory blocks and
//! releasing them. An untimed first pass per allocator checks every placement (bound at an offset aligned as the
//! driver asks, inside device-local memory, no two buffers overlapping in one `VkDeviceMemory`) and reads the
//! committed device memory: after phase 1's creates (its peak) and after every create of phase 2 (its maximum).
//! Committed memory is what each allocator's own statistics say it holds in `VkDeviceMemory` blocks: memcarve's
//! `committed_bytes()`, gpu-allocator's `capacity()` (its report's total capacity), and the sum of
//! `statistics.blockBytes` of VMA's `vmaGetHeapBudgets`. Then the phases are timed [`REPETITIONS`] times,
//! rotating which allocator goes first; the medians are reported.
//!
//! Without a Vulkan loader or device it prints a line with "skipped" on stderr and exits 0 (exit 1 instead when
//! `MEMCARVE_REQUIRE_VULKAN=1`). The last line of stdout is
//! `vulkan-compare: <device name> memcarve/vma=<r> memcarve/gpu-allocator=<r> committed memcarve/vma=<r>`: the
//! ratios of phase-2 medians (below 1: memcarve is faster) and of the phase-2 committed maxima.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use gpu_allocator::vulkan as ga;
use memcarve::backends::vulkan::{VulkanContext, VulkanContextDesc, VulkanDevice};
use memcarve::{Allocation, Allocator, AllocatorConfig, MemoryLocation};
use memcarve_benches::{Rng, Summary, log_uniform, shuffle, thousands};
use vk_mem::Alloc as _;

/// Smallest buffer.
const MIN_SIZE: u64 = 256;
/// Largest buffer.
const MAX_SIZE: u64 = 1 << 20;
/// Buffers created in phase 1.
const BATCH_COUNT: usize = 10_000;
/// Live buffers during phase 2.
const LIVE: usize = 1_000;
/// Destroy+create steps of phase 2.
const STEPS: usize = 100_000;
/// Timed repetitions of both phases per allocator.
const REPETITIONS: usize = 11;
/// Seed of every sequence.
const SEED: u64 = 0x7675_6C6B_616E_6331;
/// Usage of every buffer.
const USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_DST.as_raw() | vk::BufferUsageFlags::STORAGE_BUFFER.as_raw(),
);

/// Where a buffer's memory is, as its allocator reports it.
#[derive(Debug, Clone, Copy)]
struct Placement {
    memory: vk::DeviceMemory,
    offset: u64,
    size: u64,
    flags: vk::MemoryPropertyFlags,
}

/// What every allocator under test offers: create a bound buffer, destroy it, and say what it holds.
///
/// Invariant relied on by the implementations' `unsafe` blocks: the harness only destroys buffers this same
/// allocator created, each exactly once (`Buffer` is neither `Copy` nor `Clone` and is moved into `destroy`),
/// never records a command that uses them, and destroys every buffer before dropping the allocator.
trait Peer {
    /// Column name.
    const NAME: &'static str;
    /// The allocator's record of a buffer's memory.
    type Memory;
    /// Creates a buffer of `size` bytes bound to device-local memory. Panics on failure.
    fn create(&mut self, size: u64) -> Buffer<Self::Memory>;
    /// Destroys a buffer this allocator created and frees its memory. Panics on failure.
    fn destroy(&mut self, buffer: Buffer<Self::Memory>);
    /// Bytes held in `VkDeviceMemory` blocks, by the allocator's own statistics.
    fn committed(&self) -> u64;
    /// `VkDeviceMemory` blocks held.
    fn blocks(&self) -> u64;
    /// Where `buffer` is bound.
    fn placement(&self, buffer: &Buffer<Self::Memory>) -> Placement;
}

/// A bound buffer and its allocator's record of its memory.
struct Buffer<M> {
    buffer: vk::Buffer,
    memory: M,
}

fn buffer_info(size: u64) -> vk::BufferCreateInfo<'static> {
    vk::BufferCreateInfo::default().size(size).usage(USAGE).sharing_mode(vk::SharingMode::EXCLUSIVE)
}

/// The device's memory types, to name the type an allocation landed in.
fn memory_type_flags(context: &VulkanContext) -> Vec<vk::MemoryPropertyFlags> {
    // SAFETY: the physical device belongs to the context's instance, both alive while `context` is.
    let properties =
        unsafe { context.instance().get_physical_device_memory_properties(context.physical_device()) };
    properties.memory_types_as_slice().iter().map(|memory_type| memory_type.property_flags).collect()
}

/// memcarve's Vulkan backend, default configuration.
struct Memcarve {
    allocator: Allocator<VulkanDevice>,
    type_flags: Vec<vk::MemoryPropertyFlags>,
}

impl Memcarve {
    fn new(context: &Arc<VulkanContext>) -> Memcarve {
        let device = VulkanDevice::from_context(Arc::clone(context)).expect("memcarve: VulkanDevice");
        let allocator = Allocator::new(device, AllocatorConfig::default()).expect("memcarve: Allocator::new");
        Memcarve { allocator, type_flags: memory_type_flags(context) }
    }
}

impl Peer for Memcarve {
    const NAME: &'static str = "memcarve";
    type Memory = Allocation;

    #[inline]
    fn create(&mut self, size: u64) -> Buffer<Allocation> {
        // SAFETY: the create info is valid for any device (non-zero size, core usages, exclusive sharing, no
        // pointers or chain).
        match unsafe { self.allocator.create_buffer(&buffer_info(size), MemoryLocation::GpuOnly) } {
            Ok((buffer, memory)) => Buffer { buffer, memory },
            Err(e) => panic!("{}: create_buffer({size}) failed: {e}", Self::NAME),
        }
    }

    #[inline]
    fn destroy(&mut self, buffer: Buffer<Allocation>) {
        // SAFETY: the buffer was created with this allocation by this allocator and is destroyed once; the
        // device never used it (the `Peer` invariant).
        if let Err(e) = unsafe { self.allocator.destroy_buffer(buffer.buffer, buffer.memory) } {
            panic!("{}: destroy_buffer failed: {e}", Self::NAME);
        }
    }

    fn committed(&self) -> u64 {
        self.allocator.committed_bytes()
    }

    fn blocks(&self) -> u64 {
        u64::from(self.allocator.block_count())
    }

    fn placement(&self, buffer: &Buffer<Allocation>) -> Placement {
        let memory = self.allocator.device_memory(&buffer.memory).expect("memcarve: device_memory");
        Placement {
            memory,
            offset: buffer.memory.offset(),
            size: buffer.memory.size(),
            flags: self.type_flags[buffer.memory.memory_type() as usize],
        }
    }
}

/// gpu-allocator 0.28, default block sizes (256 MiB device blocks).
struct GpuAllocator {
    allocator: ga::Allocator,
    /// Keeps the instance and device alive while `allocator` (dropped first) holds their handles.
    context: Arc<VulkanContext>,
}

impl GpuAllocator {
    fn new(context: &Arc<VulkanContext>) -> GpuAllocator {
        let desc = ga::AllocatorCreateDesc {
            instance: context.instance().clone(),
            device: context.device().clone(),
            physical_device: context.physical_device(),
            debug_settings: gpu_allocator::AllocatorDebugSettings::default(),
            buffer_device_address: context.features().buffer_device_address,
            allocation_sizes: gpu_allocator::AllocationSizes::default(),
        };
        let allocator = ga::Allocator::new(&desc).expect("gpu-allocator: Allocator::new");
        GpuAllocator { allocator, context: Arc::clone(context) }
    }
}

impl Peer for GpuAllocator {
    const NAME: &'static str = "gpu-allocator";
    type Memory = ga::Allocation;

    #[inline]
    fn create(&mut self, size: u64) -> Buffer<ga::Allocation> {
        let device = self.context.device();
        // SAFETY: the create info is valid for any device (see `Memcarve::create`).
        let buffer = match unsafe { device.create_buffer(&buffer_info(size), None) } {
            Ok(buffer) => buffer,
            Err(e) => panic!("{}: vkCreateBuffer({size}) failed: {e}", Self::NAME),
        };
        // SAFETY: `buffer` was just created on this device.
        let requirements = unsafe { device.get_buffer_memory_requirements(buffer) };
        let desc = ga::AllocationCreateDesc {
            name: "buffer",
            requirements,
            location: gpu_allocator::MemoryLocation::GpuOnly,
            linear: true,
            allocation_scheme: ga::AllocationScheme::GpuAllocatorManaged,
        };
        let memory = match self.allocator.allocate(&desc) {
            Ok(memory) => memory,
            Err(e) => panic!("{}: allocate({size}) failed: {e}", Self::NAME),
        };
        // SAFETY: the buffer is unbound; the allocation is live, of a type in the buffer's `memoryTypeBits`,
        // aligned and sized as `requirements` asked (gpu-allocator's contract), and its memory is this device's.
        if let Err(e) = unsafe { device.bind_buffer_memory(buffer, memory.memory(), memory.offset()) } {
            panic!("{}: vkBindBufferMemory failed: {e}", Self::NAME);
        }
        Buffer { buffer, memory }
    }

    #[inline]
    fn destroy(&mut self, buffer: Buffer<ga::Allocation>) {
        // SAFETY: the buffer was created on this device by `create`, is destroyed once and was never used by
        // the device (the `Peer` invariant); its memory is freed only after.
        unsafe { self.context.device().destroy_buffer(buffer.buffer, None) };
        if let Err(e) = self.allocator.free(buffer.memory) {
            panic!("{}: free failed: {e}", Self::NAME);
        }
    }

    fn committed(&self) -> u64 {
        self.allocator.capacity()
    }

    fn blocks(&self) -> u64 {
        self.allocator.generate_report().blocks.len() as u64
    }

    fn placement(&self, buffer: &Buffer<ga::Allocation>) -> Placement {
        Placement {
            // SAFETY: only the handle is read; the allocation is live (not freed) while the harness holds it.
            memory: unsafe { buffer.memory.memory() },
            offset: buffer.memory.offset(),
            size: buffer.memory.size(),
            flags: buffer.memory.memory_properties(),
        }
    }
}

/// VMA through vk-mem 0.5, default block sizes.
struct Vma {
    allocator: vk_mem::Allocator,
    type_flags: Vec<vk::MemoryPropertyFlags>,
    /// Keeps the instance and device alive while `allocator` (dropped first) holds their handles.
    _context: Arc<VulkanContext>,
}

impl Vma {
    fn new(context: &Arc<VulkanContext>) -> Vma {
        let mut info =
            vk_mem::AllocatorCreateInfo::new(context.instance(), context.device(), context.physical_device());
        info.vulkan_api_version = context.api_version();
        let features = context.features();
        let mut flags = vk_mem::AllocatorCreateFlags::empty();
        if features.memory_budget {
            flags |= vk_mem::AllocatorCreateFlags::EXT_MEMORY_BUDGET;
        }
        if features.memory_priority {
            flags |= vk_mem::AllocatorCreateFlags::EXT_MEMORY_PRIORITY;
        }
        if features.buffer_device_address {
            flags |= vk_mem::AllocatorCreateFlags::BUFFER_DEVICE_ADDRESS;
        }
        info.flags = flags;
        // SAFETY: the instance, device and physical device belong together and stay alive as long as the
        // allocator, which is dropped before `_context`; the API version is the one the context created them
        // with (at most 1.3, which VMA supports); the flags name only extensions and features the context
        // enabled.
        let allocator = unsafe { vk_mem::Allocator::new(info) }.expect("vma: vmaCreateAllocator");
        Vma { allocator, type_flags: memory_type_flags(context), _context: Arc::clone(context) }
    }
}

impl Peer for Vma {
    const NAME: &'static str = "vma";
    type Memory = vk_mem::Allocation;

    #[inline]
    fn create(&mut self, size: u64) -> Buffer<vk_mem::Allocation> {
        let create = vk_mem::AllocationCreateInfo {
            usage: vk_mem::MemoryUsage::AutoPreferDevice,
            ..Default::default()
        };
        // SAFETY: the create info is valid for any device (see `Memcarve::create`); the allocation info asks
        // for nothing but a device-preferring memory type.
        match unsafe { self.allocator.create_buffer(&buffer_info(size), &create) } {
            Ok((buffer, memory)) => Buffer { buffer, memory },
            Err(e) => panic!("{}: vmaCreateBuffer({size}) failed: {e}", Self::NAME),
        }
    }

    #[inline]
    fn destroy(&mut self, mut buffer: Buffer<vk_mem::Allocation>) {
        // SAFETY: the buffer and allocation were created together by this allocator's `vmaCreateBuffer`, are
        // destroyed once (moved in here) and were never used by the device (the `Peer` invariant).
        unsafe { self.allocator.destroy_buffer(buffer.buffer, &mut buffer.memory) };
    }

    fn committed(&self) -> u64 {
        let budgets = self.allocator.get_heap_budgets().expect("vma: vmaGetHeapBudgets");
        budgets.iter().map(|budget| budget.statistics.blockBytes).sum()
    }

    fn blocks(&self) -> u64 {
        let budgets = self.allocator.get_heap_budgets().expect("vma: vmaGetHeapBudgets");
        budgets.iter().map(|budget| u64::from(budget.statistics.blockCount)).sum()
    }

    fn placement(&self, buffer: &Buffer<vk_mem::Allocation>) -> Placement {
        let info = self.allocator.get_allocation_info(&buffer.memory);
        Placement {
            memory: info.device_memory,
            offset: info.offset,
            size: info.size,
            flags: self.type_flags[info.memory_type as usize],
        }
    }
}

/// The operation sequences, shared by every allocator.
struct Workload {
    /// Phase 1 sizes, in creation order.
    batch: Vec<u64>,
    /// Phase 1 destruction order (indices into `batch`).
    free_order: Vec<usize>,
    /// Phase 2 initial live set.
    setup: Vec<u64>,
    /// Phase 2 steps: index of the live buffer to destroy (the live list is kept with `swap_remove` + `push`),
    /// and the size of the new one.
    steps: Vec<(usize, u64)>,
}

impl Workload {
    fn generate(seed: u64) -> Workload {
        let mut rng = Rng::new(seed);
        let batch = (0..BATCH_COUNT).map(|_| log_uniform(&mut rng, MIN_SIZE, MAX_SIZE)).collect();
        let mut free_order: Vec<usize> = (0..BATCH_COUNT).collect();
        shuffle(&mut rng, &mut free_order);
        let setup = (0..LIVE).map(|_| log_uniform(&mut rng, MIN_SIZE, MAX_SIZE)).collect();
        let steps = (0..STEPS)
            .map(|_| (rng.below(LIVE as u64) as usize, log_uniform(&mut rng, MIN_SIZE, MAX_SIZE)))
            .collect();
        Workload { batch, free_order, setup, steps }
    }
}

/// What the untimed first pass found.
struct Measured {
    /// Committed after phase 1's creates (its peak) and blocks then.
    phase1_committed: u64,
    phase1_blocks: u64,
    /// Bytes requested by phase 1's live buffers at its peak.
    phase1_live: u64,
    /// The most committed after any create of phase 2 (setup included), and blocks then.
    phase2_committed: u64,
    phase2_blocks: u64,
    /// The most bytes requested by phase 2's live buffers.
    phase2_live: u64,
    /// Memory types used.
    types: BTreeSet<String>,
}

/// Checks the placements of a live set: aligned and sized as the driver asks, device-local, disjoint.
fn check_placements<P: Peer>(
    peer: &P,
    context: &VulkanContext,
    live: &[&Buffer<P::Memory>],
    when: &str,
) -> BTreeSet<String> {
    let mut types = BTreeSet::new();
    let mut ranges = Vec::with_capacity(live.len());
    for buffer in live {
        let placement = peer.placement(buffer);
        // SAFETY: the buffer is live on this device (the harness has not destroyed it).
        let requirements = unsafe { context.device().get_buffer_memory_requirements(buffer.buffer) };
        assert!(
            placement.offset.is_multiple_of(requirements.alignment.max(1)),
            "{} ({when}): offset {} not aligned to {}",
            P::NAME,
            placement.offset,
            requirements.alignment
        );
        assert!(
            placement.size >= requirements.size,
            "{} ({when}): {} bytes for {}",
            P::NAME,
            placement.size,
            requirements.size
        );
        assert!(
            placement.flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL),
            "{} ({when}): memory type {:?} is not device-local",
            P::NAME,
            placement.flags
        );
        types.insert(format!("{:?}", placement.flags));
        ranges.push((vk::Handle::as_raw(placement.memory), placement.offset, placement.size));
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((memory_a, a, a_size), (memory_b, b, _)) = (pair[0], pair[1]);
        assert!(
            memory_a != memory_b || a + a_size <= b,
            "{} ({when}): ranges at {a}+{a_size} and {b} of one VkDeviceMemory overlap",
            P::NAME
        );
    }
    types
}

/// The untimed first pass: both phases with placement checks and committed readings.
fn measure<P: Peer>(make: impl Fn() -> P, context: &VulkanContext, work: &Workload) -> Measured {
    let mut peer = make();
    let mut slots: Vec<Option<Buffer<P::Memory>>> =
        work.batch.iter().map(|&size| Some(peer.create(size))).collect();
    let phase1_committed = peer.committed();
    let phase1_blocks = peer.blocks();
    let live: Vec<_> = slots.iter().flatten().collect();
    let mut types = check_placements(&peer, context, &live, "phase 1");
    for &index in &work.free_order {
        peer.destroy(slots[index].take().expect("phase 1: a buffer destroyed twice"));
    }
    drop(peer);

    let mut peer = make();
    let (mut phase2_committed, mut phase2_blocks) = (0, 0);
    let mut sizes = Vec::with_capacity(LIVE);
    let mut live = Vec::with_capacity(LIVE);
    let mut note = |peer: &P| {
        let committed = peer.committed();
        if committed > phase2_committed {
            phase2_committed = committed;
            phase2_blocks = peer.blocks();
        }
    };
    for &size in &work.setup {
        live.push(peer.create(size));
        sizes.push(size);
        note(&peer);
    }
    let mut live_bytes: u64 = sizes.iter().sum();
    let mut phase2_live = live_bytes;
    for &(victim, size) in &work.steps {
        peer.destroy(live.swap_remove(victim));
        live_bytes -= sizes.swap_remove(victim);
        live.push(peer.create(size));
        sizes.push(size);
        live_bytes += size;
        phase2_live = phase2_live.max(live_bytes);
        note(&peer);
    }
    let refs: Vec<_> = live.iter().collect();
    types.extend(check_placements(&peer, context, &refs, "phase 2"));
    for buffer in live.drain(..) {
        peer.destroy(buffer);
    }
    Measured {
        phase1_committed,
        phase1_blocks,
        phase1_live: work.batch.iter().sum(),
        phase2_committed,
        phase2_blocks,
        phase2_live,
        types,
    }
}

/// One timed repetition of phase 1 on a fresh allocator: ns per create, ns per destroy.
fn time_phase1<P: Peer>(
    make: &impl Fn() -> P,
    work: &Workload,
    slots: &mut Vec<Option<Buffer<P::Memory>>>,
) -> (f64, f64) {
    let mut peer = make();
    slots.clear();
    let start = Instant::now();
    for &size in &work.batch {
        slots.push(Some(peer.create(size)));
    }
    let created = start.elapsed();
    let start = Instant::now();
    for &index in &work.free_order {
        peer.destroy(slots[index].take().expect("phase 1: a buffer destroyed twice"));
    }
    let destroyed = start.elapsed();
    black_box(&peer);
    drop(peer);
    let per = |elapsed: std::time::Duration| elapsed.as_nanos() as f64 / BATCH_COUNT as f64;
    (per(created), per(destroyed))
}

/// One timed repetition of phase 2 on a fresh allocator: ns per operation (a step is two).
fn time_phase2<P: Peer>(make: &impl Fn() -> P, work: &Workload, live: &mut Vec<Buffer<P::Memory>>) -> f64 {
    let mut peer = make();
    live.clear();
    for &size in &work.setup {
        live.push(peer.create(size));
    }
    let start = Instant::now();
    for &(victim, size) in &work.steps {
        peer.destroy(live.swap_remove(victim));
        live.push(peer.create(size));
    }
    let elapsed = start.elapsed();
    for buffer in live.drain(..) {
        peer.destroy(buffer);
    }
    drop(peer);
    elapsed.as_nanos() as f64 / (2 * STEPS) as f64
}

/// Timings of one allocator.
#[derive(Default)]
struct Samples {
    create: Vec<f64>,
    destroy: Vec<f64>,
    phase1: Vec<f64>,
    phase2: Vec<f64>,
}

/// Times both phases of one allocator once and adds the samples.
fn time_once<P: Peer>(make: &impl Fn() -> P, work: &Workload, samples: &mut Samples) {
    let mut slots = Vec::with_capacity(BATCH_COUNT);
    let mut live = Vec::with_capacity(LIVE);
    let (create, destroy) = time_phase1(make, work, &mut slots);
    samples.create.push(create);
    samples.destroy.push(destroy);
    samples.phase1.push((create + destroy) / 2.0);
    samples.phase2.push(time_phase2(make, work, &mut live));
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn main() {
    let started = Instant::now();
    let context =
        match VulkanContext::new(&VulkanContextDesc::default().with_application_name("vulkan-compare")) {
            Ok(context) => Arc::new(context),
            Err(error) => {
                if std::env::var("MEMCARVE_REQUIRE_VULKAN").is_ok_and(|v| v == "1") {
                    eprintln!("vulkan-compare: no Vulkan device ({error}) and MEMCARVE_REQUIRE_VULKAN=1");
                    std::process::exit(1);
                }
                eprintln!("vulkan-compare: skipped: no Vulkan device ({error})");
                return;
            }
        };
    let device_name = context.device_name().to_string();
    let version = context.api_version();
    eprintln!(
        "vulkan-compare: {device_name} (Vulkan {}.{}), features {:?}; generating sequences (seed {SEED:#x})",
        vk::api_version_major(version),
        vk::api_version_minor(version),
        context.features()
    );
    let work = Workload::generate(SEED);

    let make_memcarve = || Memcarve::new(&context);
    let make_gpu_allocator = || GpuAllocator::new(&context);
    let make_vma = || Vma::new(&context);

    eprintln!("vulkan-compare: checking pass");
    let measured = [
        measure(make_memcarve, &context, &work),
        measure(make_gpu_allocator, &context, &work),
        measure(make_vma, &context, &work),
    ];

    let mut samples: [Samples; 3] = Default::default();
    for rep in 0..REPETITIONS {
        eprintln!("vulkan-compare: repetition {}/{REPETITIONS}", rep + 1);
        for turn in 0..3 {
            match (rep + turn) % 3 {
                0 => time_once(&make_memcarve, &work, &mut samples[0]),
                1 => time_once(&make_gpu_allocator, &work, &mut samples[1]),
                _ => time_once(&make_vma, &work, &mut samples[2]),
            }
        }
    }
    let names = [Memcarve::NAME, GpuAllocator::NAME, Vma::NAME];
    let summaries: Vec<[Summary; 4]> = samples
        .into_iter()
        .map(|s| {
            [Summary::of(s.create), Summary::of(s.destroy), Summary::of(s.phase1), Summary::of(s.phase2)]
        })
        .collect();

    println!(
        "vulkan-compare: {device_name} (Vulkan {}.{}), validation off, seed {SEED:#x}, median [min-max] of \
         {REPETITIONS} repetitions",
        vk::api_version_major(version),
        vk::api_version_minor(version)
    );
    println!(
        "buffers: TRANSFER_DST | STORAGE_BUFFER, {MIN_SIZE} B - 1 MiB log-uniform, GpuOnly (device-local); \
         fresh allocator per phase"
    );
    println!(
        "ns per operation; an operation is one create (vkCreateBuffer + requirements + allocate + \
         vkBindBufferMemory) or one destroy (vkDestroyBuffer + free)"
    );
    println!();
    let (name_width, col) = (15, 26);
    println!(
        "{:<name_width$}{:>col$}{:>col$}{:>col$}{:>col$}",
        "allocator", "phase 1 create", "phase 1 destroy", "phase 1 (20,000 ops)", "phase 2 (200,000 ops)"
    );
    for (name, summary) in names.iter().zip(&summaries) {
        println!(
            "{:<name_width$}{:>col$}{:>col$}{:>col$}{:>col$}",
            name,
            summary[0].cell(),
            summary[1].cell(),
            summary[2].cell(),
            summary[3].cell()
        );
    }
    println!();
    println!(
        "committed device memory (VkDeviceMemory blocks, by each allocator's statistics), checking pass; \
         phase 1 peak: {} requested by {} live buffers; phase 2: at most {} requested by {} live",
        mib(measured[0].phase1_live),
        thousands(BATCH_COUNT as u64),
        mib(measured[0].phase2_live),
        thousands(LIVE as u64)
    );
    for (name, m) in names.iter().zip(&measured) {
        println!(
            "  {:<15}phase 1 peak {:>12} in {:>3} blocks   phase 2 max {:>12} in {:>3} blocks   types {}",
            name,
            mib(m.phase1_committed),
            m.phase1_blocks,
            mib(m.phase2_committed),
            m.phase2_blocks,
            m.types.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    println!();
    eprintln!("vulkan-compare: done in {:.1} s", started.elapsed().as_secs_f64());
    let phase2 = |i: usize| summaries[i][3].median;
    println!(
        "vulkan-compare: {device_name} memcarve/vma={:.2} memcarve/gpu-allocator={:.2} committed memcarve/vma={:.2}",
        phase2(0) / phase2(2),
        phase2(0) / phase2(1),
        measured[0].phase2_committed as f64 / measured[2].phase2_committed as f64
    );
}
