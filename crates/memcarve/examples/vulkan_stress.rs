//! A stress run of the Vulkan backend under the validation layer: 1,536 real buffers in host-visible memory,
//! each written with a pattern of its own through a mapping and flushed; then fragmenting release/refill
//! cycles (every other buffer, or every other group of buffers, is destroyed and the holes are refilled with
//! buffers of other sizes) with the survivors' bytes read back after every release; a device copy of a sample
//! of survivors into a read-back buffer (their buffers destroyed behind the copy's fence, as deferred frees);
//! an event ring small enough to wrap around, shown by its sequence numbers and dropped count; and, once
//! everything is freed, a check that the free space of every block coalesced into one range. Validation
//! messages are printed with their VUID, and the example exits non-zero if the layer reported any error.
//!
//! `cargo run -p memcarve --features vulkan --example vulkan_stress`

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

use memcarve::backends::vulkan::ash::vk;
use memcarve::backends::vulkan::{ResourceOptions, VulkanContext, VulkanDevice, WaitPoint};
use memcarve::diagnostics::EventKind;
use memcarve::{Allocation, AllocationSizes, Allocator, AllocatorConfig, BlockKind, MemoryLocation};

/// Buffers created before the first cycle (and live after every refill).
const BUFFERS: usize = 1536;
/// Release/refill cycles; cycle `c` destroys every other group of `2^c` buffers.
const CYCLES: u32 = 4;
/// Size ranges (log-uniform, bytes) of the first fill and of each cycle's refill.
const SIZE_RANGES: [(u64, u64); CYCLES as usize + 1] =
    [(256, 64 << 10), (1 << 10, 128 << 10), (128, 16 << 10), (4 << 10, 96 << 10), (256, 32 << 10)];
/// Events the ring keeps: a few hundred, against thousands recorded.
const EVENT_CAPACITY: usize = 256;
/// Survivors copied by the device into a read-back buffer.
const DEVICE_SAMPLE: usize = 64;
const MIB: u64 = 1 << 20;

mod common;

fn main() -> ExitCode {
    common::run_validated("vulkan_stress", scenario)
}

use common::Rng;

impl Rng {
    /// A size log-uniform in `[min, max]`, rounded to 4 bytes.
    fn size(&mut self, (min, max): (u64, u64)) -> u64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let size = (min as f64 * (max as f64 / min as f64).powf(unit)) as u64;
        size.clamp(min, max).div_ceil(4) * 4
    }
}

/// The bytes a buffer holds: a function of its seed, different for every buffer.
fn pattern(seed: u64, size: u64) -> Vec<u8> {
    (0..size).map(|i| (i.wrapping_mul(0x9e37_79b1).wrapping_add(seed) >> 13) as u8 ^ seed as u8).collect()
}

/// One live buffer of the stress set.
struct Live {
    buffer: vk::Buffer,
    allocation: Allocation,
    seed: u64,
    /// The buffer's size (`VkBufferCreateInfo::size`): the bytes written, verified and copied. The allocation
    /// can be larger: its size is the driver's requirement, which may round the buffer's size up (the NVIDIA
    /// driver rounds to the buffer's 16-byte alignment; lavapipe does not), and the bytes past the buffer's end
    /// belong to no buffer, so nothing writes them and nothing may read them as the buffer's.
    size: u64,
}

/// What the run did, printed at the end.
#[derive(Debug, Default)]
struct Counters {
    created: u64,
    destroyed: u64,
    deferred: u64,
    bytes_written: u64,
    /// Buffers whose allocation (the driver's requirement size) is larger than the buffer.
    padded: u64,
    bytes_verified: u64,
    device_bytes_verified: u64,
}

fn scenario(context: &Arc<VulkanContext>) -> Result<(), Box<dyn Error>> {
    // Small blocks (2 MiB growing to 8 MiB) so that the set spans several; every empty block is kept until the
    // end so that the coalescing check sees all of them; a small event ring that wraps many times.
    let config = AllocatorConfig::default()
        .with_sizes(AllocationSizes::new(2 * MIB, 8 * MIB, 2 * MIB, 8 * MIB))
        .with_max_empty_blocks_per_pool(64)
        .with_event_capacity(EVENT_CAPACITY);
    let allocator = Allocator::new(VulkanDevice::from_context(Arc::clone(context))?, config)?;
    let mut rng = Rng(0x5eed_57e5);
    let mut counters = Counters::default();
    let mut next_seed = 1u64;

    let mut slots: Vec<Option<Live>> = Vec::with_capacity(BUFFERS);
    for _ in 0..BUFFERS {
        let size = rng.size(SIZE_RANGES[0]);
        slots.push(Some(create(&allocator, size, &mut next_seed, &mut counters)?));
    }
    let (memory_type, alignment) = match slots.first() {
        // SAFETY: the buffer is alive (it is in `slots`).
        Some(Some(live)) => (live.allocation.memory_type(), unsafe {
            allocator.device().buffer_requirements(live.buffer).requirements.alignment
        }),
        _ => return Err("no buffer was created".into()),
    };
    println!(
        "filled: {BUFFERS} buffers, memory type {memory_type} ({}), {} bytes written and flushed; buffers are \
         aligned to {alignment} bytes (the gaps this leaves after unaligned sizes count as free ranges); {} \
         buffer(s) got an allocation larger than the buffer (the driver's requirement size)",
        allocator.memory_properties().types[memory_type as usize].flags,
        counters.bytes_written,
        counters.padded
    );
    print_state(&allocator, "after fill");
    let dropped_after_fill = events(&allocator, "after the fill")?;

    for cycle in 0..CYCLES {
        // Release every other group of 2^cycle buffers: holes of varying widths all over the blocks.
        let group = 1usize << cycle;
        let mut released = 0;
        for (index, slot) in slots.iter_mut().enumerate() {
            if (index / group) % 2 == 1
                && let Some(live) = slot.take()
            {
                // SAFETY: the buffer was made by this allocator with this allocation and the device never used
                // it (only the host wrote it).
                unsafe { allocator.destroy_buffer(live.buffer, live.allocation) }?;
                counters.destroyed += 1;
                released += 1;
            }
        }
        allocator.check().map_err(|violation| format!("allocator invariant broken: {violation}"))?;
        print_state(&allocator, &format!("cycle {cycle}: released {released} (groups of {group})"));
        verify(&allocator, &mut slots, &mut counters)?;

        // Refill the holes with buffers of another size range.
        let range = SIZE_RANGES[cycle as usize + 1];
        for slot in slots.iter_mut().filter(|slot| slot.is_none()) {
            let size = rng.size(range);
            *slot = Some(create(&allocator, size, &mut next_seed, &mut counters)?);
        }
        allocator.check().map_err(|violation| format!("allocator invariant broken: {violation}"))?;
        print_state(&allocator, &format!("cycle {cycle}: refilled {released} ({}..{} B)", range.0, range.1));
    }
    verify(&allocator, &mut slots, &mut counters)?;
    println!(
        "verified every survivor after each release and at the end: {} bytes read back through mappings",
        counters.bytes_verified
    );

    device_copy_sample(context, &allocator, &mut slots, &mut counters)?;

    // Release everything else, in an order unlike the allocation order (from the middle out).
    let middle = slots.len() / 2;
    let order = (0..slots.len()).map(|k| if k % 2 == 0 { middle + k / 2 } else { middle - 1 - k / 2 });
    for index in order {
        if let Some(live) = slots.get_mut(index).and_then(Option::take) {
            // SAFETY: made by this allocator; the device used none of these (the sample copied above is out
            // of `slots` already).
            unsafe { allocator.destroy_buffer(live.buffer, live.allocation) }?;
            counters.destroyed += 1;
        }
    }
    allocator.check().map_err(|violation| format!("allocator invariant broken: {violation}"))?;

    let dropped = events(&allocator, "at the end")?;
    if dropped <= dropped_after_fill {
        return Err("the event ring dropped nothing after the fill".into());
    }
    coalesced(&allocator)?;

    let diagnostics = allocator.diagnostics();
    println!(
        "counters: buffers created {}, destroyed {} ({} of them deferred on a fence); bytes written {}, \
         verified on the host {}, verified after a device copy {}",
        counters.created,
        counters.destroyed,
        counters.deferred,
        counters.bytes_written,
        counters.bytes_verified,
        counters.device_bytes_verified
    );
    println!(
        "allocator: {} block(s) created, {} destroyed, {} requests served from existing blocks, {} failures, \
         peak {} live allocations / {} live bytes, peak committed {} bytes",
        diagnostics.block_creations,
        diagnostics.block_destructions,
        diagnostics.block_reuses,
        diagnostics.failures,
        diagnostics.peak_live_allocations,
        diagnostics.peak_live_bytes,
        diagnostics.peak_committed_bytes
    );
    let trimmed = allocator.trim_empty_blocks();
    println!("trimmed {trimmed} empty block(s); {} block(s) live now", allocator.block_count());
    if counters.created < BUFFERS as u64 || counters.created != counters.destroyed {
        return Err("not every buffer was created and destroyed".into());
    }
    if allocator.block_count() != 0 || allocator.committed_bytes() != 0 {
        return Err("blocks are still live after the trim".into());
    }
    Ok(())
}

/// Creates a host-visible buffer of `size` bytes, writes its pattern through a mapping and flushes it.
fn create(
    allocator: &Allocator<VulkanDevice>,
    size: u64,
    next_seed: &mut u64,
    counters: &mut Counters,
) -> Result<Live, Box<dyn Error>> {
    let seed = *next_seed;
    *next_seed += 1;
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::STORAGE_BUFFER)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: the create info is valid and holds no pointers.
    let (buffer, mut allocation) = unsafe {
        allocator.create_buffer_with_options(&info, &ResourceOptions::new("stress", MemoryLocation::CpuToGpu))
    }?;
    {
        let mut mapped = allocator.map(&mut allocation)?;
        mapped.write(0, &pattern(seed, size))?;
        mapped.flush(0, size)?;
    }
    counters.created += 1;
    counters.bytes_written += size;
    counters.padded += u64::from(allocation.size() > size);
    Ok(Live { buffer, allocation, seed, size })
}

/// Checks that no two live allocations share bytes, then reads every live buffer back through a mapping and
/// compares it with its pattern.
fn verify(
    allocator: &Allocator<VulkanDevice>,
    slots: &mut [Option<Live>],
    counters: &mut Counters,
) -> Result<(), Box<dyn Error>> {
    let mut ranges: Vec<_> = slots
        .iter()
        .flatten()
        .map(|live| {
            (live.allocation.block_key(), live.allocation.offset(), live.allocation.size(), live.seed)
        })
        .collect();
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((block, offset, size, seed), (next_block, next_offset, _, next_seed)) = (pair[0], pair[1]);
        if block == next_block && offset + size > next_offset {
            return Err(format!(
                "buffers {seed} and {next_seed} overlap in {block:?} ([{offset}, {}) and {next_offset})",
                offset + size
            )
            .into());
        }
    }
    for live in slots.iter_mut().flatten() {
        let size = live.size;
        let mut read = vec![0u8; size as usize];
        {
            let mapped = allocator.map(&mut live.allocation)?;
            mapped.invalidate(0, size)?;
            mapped.read(0, &mut read)?;
        }
        if read != pattern(live.seed, size) {
            return Err(format!(
                "buffer {} (offset {} in {:?}) lost its bytes",
                live.seed,
                live.allocation.offset(),
                live.allocation.block_key()
            )
            .into());
        }
        counters.bytes_verified += size;
    }
    Ok(())
}

/// One line of block, range and fragmentation figures.
fn print_state(allocator: &Allocator<VulkanDevice>, label: &str) {
    let total = allocator.stats().total;
    println!(
        "{label:<44} live {:>4} in {:>2} block(s), committed {:>8}, used {:>8}, free ranges {:>4}, \
         largest free {:>7}, fragmentation {:.3}",
        total.allocation_count,
        total.block_count,
        total.committed_bytes,
        total.used_bytes,
        total.free_range_count,
        total.largest_free_range,
        total.fragmentation()
    );
}

/// Copies a sample of survivors with the device into one read-back buffer, destroys their buffers behind the
/// copy's fence (deferred frees), and verifies the copied bytes.
fn device_copy_sample(
    context: &VulkanContext,
    allocator: &Allocator<VulkanDevice>,
    slots: &mut [Option<Live>],
    counters: &mut Counters,
) -> Result<(), Box<dyn Error>> {
    let step = (slots.len() / DEVICE_SAMPLE).max(1);
    let sample: Vec<Live> = slots.iter_mut().step_by(step).filter_map(Option::take).collect();
    let total: u64 = sample.iter().map(|live| live.size).sum();
    let mut readback = common::create_readback(allocator, total)?;
    let mut regions = Vec::with_capacity(sample.len());
    let mut offset = 0;
    for live in &sample {
        regions.push((live.buffer, offset, live.size));
        offset += live.size;
    }

    let device = context.device();
    let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(context.queue_family_index());
    // SAFETY: a valid create info.
    let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }?;
    // SAFETY: a valid create info.
    let pool = unsafe { device.create_command_pool(&pool_info, None) }?;
    // SAFETY: the pool is this device's; the command buffer is recorded once, submitted once with `fence`, and
    // freed with the pool after the fence signalled; every buffer named is alive and bound (created by the
    // allocator); the queue is used by this thread only.
    unsafe {
        let allocate = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        let command_buffer = device.allocate_command_buffers(&allocate)?[0];
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        device.begin_command_buffer(command_buffer, &begin)?;
        for &(source, dst_offset, size) in &regions {
            device.cmd_copy_buffer(
                command_buffer,
                source,
                readback.0,
                &[vk::BufferCopy { src_offset: 0, dst_offset, size }],
            );
        }
        common::transfer_writes_to_host(device, command_buffer);
        device.end_command_buffer(command_buffer)?;
        let buffers = [command_buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&buffers);
        device.queue_submit(context.queue(), &[submit], fence)?;
    }

    // The sources are done with once the copy is: hand them back now, freed when the fence has signalled.
    let mut expected = Vec::with_capacity(total as usize);
    for live in sample {
        expected.extend(pattern(live.seed, live.size));
        // SAFETY: made by this allocator with this allocation and destroyed by nothing else; the device's only
        // use of it is the copy submitted above, which ends at `fence`; the fence is neither reset nor
        // destroyed until the deferred frees were processed (below).
        unsafe { allocator.destroy_buffer_after(live.buffer, live.allocation, WaitPoint::Fence(fence)) }?;
        counters.deferred += 1;
    }
    let pending = allocator.pending_deferred_frees();
    // SAFETY: the fence was submitted above.
    unsafe { device.wait_for_fences(&[fence], true, u64::MAX) }?;
    let mut read = vec![0u8; total as usize];
    {
        let mapped = allocator.map(&mut readback.1)?;
        mapped.invalidate(0, total)?;
        mapped.read(0, &mut read)?;
    }
    let freed = allocator.process_deferred()?;
    counters.destroyed += freed as u64;
    println!(
        "device copy: {} survivors ({total} bytes) copied into a read-back buffer; {pending} deferred frees \
         pending behind the fence, {freed} processed after it signalled",
        regions.len()
    );
    // SAFETY: the copy finished (the fence signalled): nothing uses the read-back buffer, the fence (its
    // deferred frees are processed) or the pool's command buffer.
    unsafe {
        allocator.destroy_buffer(readback.0, readback.1)?;
        device.destroy_fence(fence, None);
        device.destroy_command_pool(pool, None);
    }
    if read != expected {
        return Err("the device copy of the survivors differs from their patterns".into());
    }
    if freed != regions.len() || allocator.pending_deferred_frees() != 0 {
        return Err(format!("{freed} deferred frees processed, {} expected", regions.len()).into());
    }
    counters.device_bytes_verified += total;
    counters.created += 1;
    counters.destroyed += 1;
    Ok(())
}

/// Prints the event ring's window and checks that it wrapped: the oldest held event's sequence number is the
/// dropped count, and the held sequence numbers are consecutive.
fn events(allocator: &Allocator<VulkanDevice>, label: &str) -> Result<u64, Box<dyn Error>> {
    let (events, dropped) = allocator.events();
    let (first, last) = match (events.first(), events.last()) {
        (Some(first), Some(last)) => (first.sequence, last.sequence),
        _ => return Err("the event ring is empty".into()),
    };
    println!(
        "event ring {label}: capacity {EVENT_CAPACITY}, {} held (sequence {first}..={last}), {dropped} dropped, \
         {} recorded in all",
        events.len(),
        last + 1
    );
    for event in events.iter().take(3).chain(events.iter().skip(events.len().saturating_sub(3))) {
        println!("  #{:<6} {:?}", event.sequence, event.kind);
    }
    let (mut allocated, mut freed, mut blocks) = (0, 0, 0);
    for event in &events {
        match event.kind {
            EventKind::Allocated { .. } => allocated += 1,
            EventKind::Freed { .. } => freed += 1,
            _ => blocks += 1,
        }
    }
    println!("  held: {allocated} allocated, {freed} freed, {blocks} block events");
    let consecutive = events.windows(2).all(|pair| pair[1].sequence == pair[0].sequence + 1);
    if events.len() != EVENT_CAPACITY || dropped == 0 || first != dropped || !consecutive {
        return Err("the event ring did not wrap as expected".into());
    }
    Ok(dropped)
}

/// With every buffer freed, each block must be one free range as large as the block.
fn coalesced(allocator: &Allocator<VulkanDevice>) -> Result<(), Box<dyn Error>> {
    let reports = allocator.block_reports();
    let mut whole = 0;
    for block in &reports {
        let one_range = matches!(block.ranges.as_slice(), [range] if !range.used && range.size == block.size);
        println!(
            "block {:?} #{:<2} {:>8} bytes: {} free range(s), {}",
            block.kind,
            block.index,
            block.size,
            block.ranges.iter().filter(|range| !range.used).count(),
            if one_range { "coalesced" } else { "NOT coalesced" }
        );
        whole += usize::from(one_range && block.kind == BlockKind::Pooled);
    }
    let total = allocator.stats().total;
    let largest_block = reports.iter().map(|block| block.size).max().unwrap_or(0);
    println!(
        "after freeing everything: {} block(s), {} free range(s), largest free range {} (largest block {}), \
         free {} of {} committed, {} allocation(s)",
        total.block_count,
        total.free_range_count,
        total.largest_free_range,
        largest_block,
        total.free_bytes,
        total.committed_bytes,
        total.allocation_count
    );
    let ok = whole == reports.len()
        && !reports.is_empty()
        && total.free_range_count == total.block_count
        && total.largest_free_range == largest_block
        && total.free_bytes == total.committed_bytes
        && total.allocation_count == 0
        && allocator.used_bytes() == 0;
    if !ok {
        return Err("freed space did not coalesce into one range per block".into());
    }
    println!("freed space coalesced: one free range per block, each as large as its block");
    Ok(())
}
