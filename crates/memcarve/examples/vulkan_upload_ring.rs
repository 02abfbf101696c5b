//! The upload ring under the validation layer, with real copies: a stream of chunks (several times the ring's
//! size) is pushed into an `UploadRing`, copied by the device (`vkCmdCopyBuffer`) from a buffer bound to the
//! ring's allocation into a device-local buffer, two frames in flight, each with its fence; a frame's slices
//! are retired (oldest first) only after its fence signalled, and a full ring waits for the oldest frame. The
//! ring wraps around several times; an out-of-order retire is refused and hands the slice back. At the end
//! the device-local buffer is copied into a read-back buffer and every byte of the stream is compared.
//! Validation messages are printed with their VUID, and the example exits non-zero if the layer reported any
//! error.
//!
//! `cargo run -p memcarve --features vulkan --example vulkan_upload_ring`

use std::collections::VecDeque;
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

use memcarve::backends::vulkan::ash::{self, vk};
use memcarve::backends::vulkan::{ResourceOptions, VulkanContext, VulkanDevice, WaitPoint};
use memcarve::{Allocator, AllocatorConfig, MemoryLocation, UploadRing, UploadSlice};

/// Bytes of the ring.
const RING_SIZE: u64 = 256 << 10;
/// Bytes streamed through it: several laps.
const STREAM_SIZE: u64 = 1536 << 10;
/// Chunk sizes (bytes, uniform).
const CHUNK_SIZES: (u64, u64) = (1 << 10, 40 << 10);
/// Chunks per frame at most.
const CHUNKS_PER_FRAME: usize = 6;
/// Frames recorded while earlier ones may still run.
const FRAMES_IN_FLIGHT: usize = 2;
/// Alignment of every slice in the ring.
const SLICE_ALIGNMENT: u64 = 256;

mod common;

fn main() -> ExitCode {
    common::run_validated("vulkan_upload_ring", scenario)
}

use common::Rng;

/// The stream's bytes: position-dependent, so that a chunk copied to the wrong place shows.
fn stream_bytes(size: u64) -> Vec<u8> {
    let mut rng = Rng(0x0b1e_55ed);
    (0..size).map(|_| rng.next_u64() as u8).collect()
}

/// One frame's command pool, command buffer and fence, reused every `FRAMES_IN_FLIGHT` frames.
struct FrameResources {
    pool: vk::CommandPool,
    command_buffer: vk::CommandBuffer,
    fence: vk::Fence,
}

/// A submitted frame: which resources it runs on, and the ring slices its copies read.
struct InFlight {
    frame: usize,
    slices: Vec<UploadSlice>,
}

/// What the run did.
#[derive(Debug, Default)]
struct Counters {
    frames: u64,
    chunks: u64,
    bytes_copied: u64,
    wraps: u64,
    full_waits: u64,
    retired: u64,
    peak_ring_bytes: u64,
    refused_retires: u64,
}

fn scenario(context: &Arc<VulkanContext>) -> Result<(), Box<dyn Error>> {
    let allocator =
        Allocator::new(VulkanDevice::from_context(Arc::clone(context))?, AllocatorConfig::default())?;
    let device = context.device();

    let mut ring = UploadRing::new(&allocator, RING_SIZE)?;
    let ring_buffer = bind_ring_buffer(&allocator, &ring)?;
    let mut frames = Vec::with_capacity(FRAMES_IN_FLIGHT);
    let mut outcome = Ok(Counters::default());
    for _ in 0..FRAMES_IN_FLIGHT {
        match frame_resources(context) {
            Ok(resources) => frames.push(resources),
            Err(error) => outcome = Err(error),
        }
    }
    if outcome.is_ok() {
        outcome = stream(context, &allocator, &mut ring, ring_buffer, &frames);
    }

    // Whatever happened, nothing may be in flight when the objects go (a no-op wait after a clean run).
    // SAFETY: the queue is used by this thread only.
    let idle = unsafe { device.device_wait_idle() };
    // SAFETY: the device is idle: nothing uses the frames' objects or the buffer bound to the ring any more;
    // the buffer goes before the ring frees its memory.
    unsafe {
        for resources in &frames {
            device.destroy_fence(resources.fence, None);
            device.destroy_command_pool(resources.pool, None);
        }
        device.destroy_buffer(ring_buffer, None);
    }
    drop(ring);
    idle?;
    let counters = outcome?;
    println!(
        "counters: {} block(s) created, {} destroyed, {} failures; {} block(s) live, committed {} bytes, used {}",
        allocator.diagnostics().block_creations,
        allocator.diagnostics().block_destructions,
        allocator.diagnostics().failures,
        allocator.block_count(),
        allocator.committed_bytes(),
        allocator.used_bytes()
    );
    if counters.wraps < 2 || counters.full_waits == 0 || counters.refused_retires != 1 {
        return Err("the ring did not wrap, fill up and refuse as planned".into());
    }
    if allocator.used_bytes() != 0 {
        return Err("allocations are still live".into());
    }
    Ok(())
}

/// Streams the chunks through the ring into a device-local buffer, then reads that buffer back and compares.
fn stream(
    context: &VulkanContext,
    allocator: &Allocator<VulkanDevice>,
    ring: &mut UploadRing<'_, VulkanDevice>,
    ring_buffer: vk::Buffer,
    frames: &[FrameResources],
) -> Result<Counters, Box<dyn Error>> {
    let device = context.device();
    let destination_info = vk::BufferCreateInfo::default()
        .size(STREAM_SIZE)
        .usage(vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::TRANSFER_SRC)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: the create info is valid and holds no pointers.
    let destination = unsafe {
        allocator.create_buffer_with_options(
            &destination_info,
            &ResourceOptions::new("device-local destination", MemoryLocation::GpuOnly),
        )
    }?;
    println!(
        "destination: {STREAM_SIZE} bytes of device-local memory, type {} ({}), offset {}",
        destination.1.memory_type(),
        allocator.memory_properties().types[destination.1.memory_type() as usize].flags,
        destination.1.offset()
    );

    let stream = stream_bytes(STREAM_SIZE);
    let mut rng = Rng(0xc0ff_eeee);
    let mut counters = Counters::default();
    let mut in_flight: VecDeque<InFlight> = VecDeque::new();
    let mut position = 0u64;
    let mut last_offset = 0u64;
    let mut refusal_shown = false;

    while position < STREAM_SIZE {
        let frame = (counters.frames % FRAMES_IN_FLIGHT as u64) as usize;
        // The frame's command buffer and fence are free again once the frame that last used them retired.
        while in_flight.iter().any(|f| f.frame == frame) {
            retire_oldest(device, frames, ring, &mut in_flight, &mut counters, &mut refusal_shown)?;
        }
        let mut slices = Vec::new();
        let mut copies = Vec::new();
        while slices.len() < CHUNKS_PER_FRAME && position < STREAM_SIZE {
            let size = (CHUNK_SIZES.0 + rng.next_u64() % (CHUNK_SIZES.1 - CHUNK_SIZES.0 + 1))
                .min(STREAM_SIZE - position);
            let chunk = &stream[position as usize..(position + size) as usize];
            let slice = match ring.push(size, SLICE_ALIGNMENT) {
                Ok(slice) => slice,
                Err(memcarve::Error::OutOfMemory { .. }) if !in_flight.is_empty() => {
                    // Full: wait for the oldest frame's copies, retire its slices, try again.
                    counters.full_waits += 1;
                    retire_oldest(device, frames, ring, &mut in_flight, &mut counters, &mut refusal_shown)?;
                    continue;
                }
                // Full with nothing in flight: this frame's own slices fill the ring; submit it as it is.
                Err(memcarve::Error::OutOfMemory { .. }) if !slices.is_empty() => break,
                Err(error) => return Err(error.into()),
            };
            // Every other chunk in two writes at offsets within its slice, the rest in one.
            if counters.chunks % 2 == 0 {
                ring.write(&slice, 0, chunk)?;
            } else {
                let half = chunk.len() / 2;
                ring.write(&slice, half as u64, &chunk[half..])?;
                ring.write(&slice, 0, &chunk[..half])?;
            }
            if slice.offset() < last_offset {
                counters.wraps += 1;
                println!(
                    "frame {:>3}: the ring wrapped: chunk at stream offset {position} goes to ring offset {} \
                     (the previous one was at {last_offset}); {} bytes in live slices",
                    counters.frames,
                    slice.offset(),
                    ring.used_bytes()
                );
            }
            last_offset = slice.offset();
            counters.peak_ring_bytes = counters.peak_ring_bytes.max(ring.used_bytes());
            copies.push(vk::BufferCopy { src_offset: slice.offset(), dst_offset: position, size });
            slices.push(slice);
            position += size;
            counters.chunks += 1;
            counters.bytes_copied += size;
        }
        submit_copies(context, &frames[frame], ring_buffer, destination.0, &copies)?;
        in_flight.push_back(InFlight { frame, slices });
        counters.frames += 1;
    }
    while !in_flight.is_empty() {
        retire_oldest(device, frames, ring, &mut in_flight, &mut counters, &mut refusal_shown)?;
    }
    println!(
        "streamed {} bytes in {} chunks over {} frames through a {RING_SIZE}-byte ring: {} wraparounds, {} \
         waits on a full ring, {} slices retired in FIFO order, peak {} bytes in live slices, {} out-of-order \
         retire(s) refused",
        counters.bytes_copied,
        counters.chunks,
        counters.frames,
        counters.wraps,
        counters.full_waits,
        counters.retired,
        counters.peak_ring_bytes,
        counters.refused_retires
    );
    if ring.used_bytes() != 0 {
        return Err(
            format!("{} bytes still in live slices after every frame retired", ring.used_bytes()).into()
        );
    }

    if !read_back(context, allocator, &frames[0], destination, &stream)? {
        return Err("the destination's deferred free was not processed after its fence".into());
    }
    Ok(counters)
}

/// Creates a transfer-source buffer as large as the ring and binds it to the ring's allocation, so that copies
/// read the slices at their offsets. The ring's block is dedicated but names no object, so any buffer whose
/// requirements it meets may be bound to it.
fn bind_ring_buffer(
    allocator: &Allocator<VulkanDevice>,
    ring: &UploadRing<'_, VulkanDevice>,
) -> Result<vk::Buffer, Box<dyn Error>> {
    let allocation = ring.allocation().ok_or("the ring has no allocation")?;
    let (memory, block_size) = allocator.with_block(allocation, |block| (block.memory(), block.size()))?;
    let device = allocator.device();
    let info = vk::BufferCreateInfo::default()
        .size(allocation.size())
        .usage(vk::BufferUsageFlags::TRANSFER_SRC)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: the create info is valid and holds no pointers.
    let buffer = unsafe { device.device().create_buffer(&info, None) }?;
    // SAFETY: the buffer was just created on this device.
    let requirements = unsafe { device.buffer_requirements(buffer) };
    let needs = requirements.requirements;
    let problem = if needs.memory_type_bits & (1 << allocation.memory_type()) == 0 {
        Some("the ring's memory type is not allowed for a transfer-source buffer")
    } else if !allocation.offset().is_multiple_of(needs.alignment) {
        Some("the ring's offset does not meet the buffer's alignment")
    } else if allocation.offset() + needs.size > block_size {
        Some("the buffer needs more bytes than the ring's block has")
    } else if requirements.requires_dedicated {
        Some("the driver requires a dedicated allocation naming the buffer")
    } else {
        None
    };
    if let Some(problem) = problem {
        // SAFETY: the buffer was created above, never bound or used.
        unsafe { device.device().destroy_buffer(buffer, None) };
        return Err(format!("cannot bind a buffer to the upload ring: {problem}").into());
    }
    // SAFETY: the buffer is unbound; the memory is the ring's live block, of an allowed type; offset and size
    // meet the buffer's requirements (checked above); the ring keeps the memory until the buffer is destroyed.
    unsafe { device.device().bind_buffer_memory(buffer, memory, allocation.offset()) }?;
    println!(
        "ring: {RING_SIZE} bytes, memory type {} ({}), dedicated {}, offset {} in VkDeviceMemory {memory:?} of {} \
         bytes; VkBuffer {buffer:?} bound to it (needs {} bytes, alignment {})",
        allocation.memory_type(),
        allocator.memory_properties().types[allocation.memory_type() as usize].flags,
        allocation.is_dedicated(),
        allocation.offset(),
        block_size,
        needs.size,
        needs.alignment
    );
    Ok(buffer)
}

fn frame_resources(context: &VulkanContext) -> Result<FrameResources, Box<dyn Error>> {
    let device = context.device();
    let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(context.queue_family_index());
    // SAFETY: valid create and allocate infos for this device; the objects are destroyed at the end of the
    // scenario after every submission finished.
    unsafe {
        let pool = device.create_command_pool(&pool_info, None)?;
        let allocate = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        let command_buffer = device.allocate_command_buffers(&allocate)?[0];
        let fence = device.create_fence(&vk::FenceCreateInfo::default(), None)?;
        Ok(FrameResources { pool, command_buffer, fence })
    }
}

/// Records the frame's copies from the ring into the destination and submits them with the frame's fence.
fn submit_copies(
    context: &VulkanContext,
    frame: &FrameResources,
    ring_buffer: vk::Buffer,
    destination: vk::Buffer,
    copies: &[vk::BufferCopy],
) -> Result<(), Box<dyn Error>> {
    let device = context.device();
    // SAFETY: the frame's command buffer is not pending (the frame that last used it was retired after its
    // fence signalled, and the fence was reset); the buffers are alive and bound, the copy regions lie inside
    // both (slices inside the ring, stream offsets inside the destination) and do not overlap; host writes to
    // the slices happened before the submission (which makes them visible to the device); the queue is used by
    // this thread only.
    unsafe {
        device.reset_command_pool(frame.pool, vk::CommandPoolResetFlags::empty())?;
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        device.begin_command_buffer(frame.command_buffer, &begin)?;
        device.cmd_copy_buffer(frame.command_buffer, ring_buffer, destination, copies);
        device.end_command_buffer(frame.command_buffer)?;
        let buffers = [frame.command_buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&buffers);
        device.queue_submit(context.queue(), &[submit], frame.fence)?;
    }
    Ok(())
}

/// Waits for the oldest frame in flight and retires its slices, oldest first. The first time a frame has two
/// slices, retiring the second first is tried and must be refused, handing the slice back.
fn retire_oldest(
    device: &ash::Device,
    frames: &[FrameResources],
    ring: &mut UploadRing<'_, VulkanDevice>,
    in_flight: &mut VecDeque<InFlight>,
    counters: &mut Counters,
    refusal_shown: &mut bool,
) -> Result<(), Box<dyn Error>> {
    let Some(oldest) = in_flight.pop_front() else { return Ok(()) };
    let fence = frames[oldest.frame].fence;
    // SAFETY: the fence was submitted with the frame; once it signalled nothing uses the frame's slices or
    // command buffer, and resetting it is allowed (no submission pending on it).
    unsafe {
        device.wait_for_fences(&[fence], true, u64::MAX)?;
        device.reset_fences(&[fence])?;
    }
    let mut slices = oldest.slices.into_iter();
    if !*refusal_shown && slices.len() >= 2 {
        let (Some(first), Some(second)) = (slices.next(), slices.next()) else {
            return Err("a frame of two slices yielded fewer".into());
        };
        let second = match ring.retire(second) {
            Ok(()) => return Err("an out-of-order retire was accepted".into()),
            Err(refused) => {
                println!(
                    "retiring the slice at ring offset {} before the one at {} was refused ({}); the slice came \
                     back unchanged",
                    refused.slice.offset(),
                    first.offset(),
                    refused.error
                );
                refused.slice
            }
        };
        *refusal_shown = true;
        counters.refused_retires += 1;
        ring.retire(first)?;
        ring.retire(second)?;
        counters.retired += 2;
    }
    for slice in slices {
        ring.retire(slice)?;
        counters.retired += 1;
    }
    Ok(())
}

/// Copies the device-local destination into a host-visible read-back buffer and compares it with the stream.
/// The destination is destroyed behind the copy's fence (a deferred free).
fn read_back(
    context: &VulkanContext,
    allocator: &Allocator<VulkanDevice>,
    frame: &FrameResources,
    destination: (vk::Buffer, memcarve::Allocation),
    stream: &[u8],
) -> Result<bool, Box<dyn Error>> {
    let device = context.device();
    let mut readback = common::create_readback(allocator, STREAM_SIZE)?;
    // SAFETY: the frame's command buffer and fence are idle (every frame retired); the buffers are alive and
    // bound; the first barrier orders the ring copies of earlier submissions before this copy's reads, the
    // second makes this copy's writes visible to the host once the fence signalled.
    unsafe {
        device.reset_command_pool(frame.pool, vk::CommandPoolResetFlags::empty())?;
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        device.begin_command_buffer(frame.command_buffer, &begin)?;
        let before = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ);
        device.cmd_pipeline_barrier(
            frame.command_buffer,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[before],
            &[],
            &[],
        );
        device.cmd_copy_buffer(
            frame.command_buffer,
            destination.0,
            readback.0,
            &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: STREAM_SIZE }],
        );
        common::transfer_writes_to_host(device, frame.command_buffer);
        device.end_command_buffer(frame.command_buffer)?;
        let buffers = [frame.command_buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&buffers);
        device.queue_submit(context.queue(), &[submit], frame.fence)?;
    }
    // SAFETY: the destination was made by this allocator and is destroyed by nothing else; its last use is the
    // copy just submitted, which ends at the fence; the fence stays valid and unreset until the deferred free
    // is processed below.
    unsafe { allocator.destroy_buffer_after(destination.0, destination.1, WaitPoint::Fence(frame.fence)) }?;
    let pending = allocator.pending_deferred_frees();
    // SAFETY: the fence was submitted above.
    unsafe { device.wait_for_fences(&[frame.fence], true, u64::MAX) }?;
    let mut read = vec![0u8; STREAM_SIZE as usize];
    {
        let mapped = allocator.map(&mut readback.1)?;
        mapped.invalidate(0, STREAM_SIZE)?;
        mapped.read(0, &mut read)?;
    }
    let freed = allocator.process_deferred()?;
    // SAFETY: the copy finished (the fence signalled); nothing uses the read-back buffer.
    unsafe { allocator.destroy_buffer(readback.0, readback.1) }?;
    let mismatch = read.iter().zip(stream).position(|(read, expected)| read != expected);
    match mismatch {
        None => println!(
            "read-back: {STREAM_SIZE} bytes copied device-local -> host-visible, invalidated and compared: all \
             equal; the destination was freed behind the fence ({pending} pending, {freed} processed)"
        ),
        Some(at) => return Err(format!("read-back differs from the stream at byte {at}").into()),
    }
    Ok(freed == 1)
}
