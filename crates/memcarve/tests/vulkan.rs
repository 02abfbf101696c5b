//! The Vulkan backend on a real driver (lavapipe in CI, the H200 through the device tool) under the Khronos
//! validation layer: every test fails if the layer reported an error, and one test proves the layer is live.
//! Without a Vulkan driver the tests say on stderr that they skipped, unless `MEMCARVE_REQUIRE_VULKAN=1`.

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]

use std::sync::Arc;

use memcarve::backends::vulkan::ash::vk;
use memcarve::backends::vulkan::{
    DedicatedObject, ResourceOptions, Severity, ValidationLog, ValidationMessage, VulkanContext,
    VulkanContextDesc, VulkanDevice, VulkanDeviceDesc, VulkanFeatures, WaitPoint,
};
use memcarve::device::{DeviceError, ExportKind};
use memcarve::{
    Allocation, AllocationDesc, Allocator, AllocatorConfig, Dedicated, Device, Error, MemoryLocation,
    ResourceClass,
};

#[path = "../examples/common/mod.rs"]
mod common;

use common::image_info;

/// An allocator over a fresh validated context, and the context's validation log.
struct Harness {
    allocator: Option<Allocator<VulkanDevice>>,
    context: Option<Arc<VulkanContext>>,
    log: Arc<ValidationLog>,
}

fn require_vulkan() -> bool {
    std::env::var("MEMCARVE_REQUIRE_VULKAN").is_ok_and(|value| value == "1")
}

/// A validated context, or None (after saying so on stderr) when this machine has no Vulkan.
fn context(test: &str) -> Option<Arc<VulkanContext>> {
    let desc = VulkanContextDesc::default().with_validation(true).with_application_name(test);
    match VulkanContext::new(&desc) {
        Ok(context) => Some(Arc::new(context)),
        Err(error) if require_vulkan() => panic!("MEMCARVE_REQUIRE_VULKAN=1 but Vulkan is unusable: {error}"),
        Err(error) => {
            eprintln!("{test}: skipped: no usable Vulkan with validation ({error})");
            None
        }
    }
}

impl Harness {
    fn new(test: &str) -> Option<Harness> {
        Harness::with_device(test, |context| VulkanDevice::from_context(context).unwrap())
    }

    fn with_device(test: &str, device: impl FnOnce(Arc<VulkanContext>) -> VulkanDevice) -> Option<Harness> {
        let context = context(test)?;
        let log = context.validation_log();
        let allocator = Allocator::new(device(Arc::clone(&context)), AllocatorConfig::default()).unwrap();
        Some(Harness { allocator: Some(allocator), context: Some(context), log })
    }

    fn allocator(&self) -> &Allocator<VulkanDevice> {
        self.allocator.as_ref().unwrap()
    }

    fn context(&self) -> &VulkanContext {
        self.context.as_ref().unwrap()
    }

    fn device(&self) -> &memcarve::backends::vulkan::ash::Device {
        self.context().device()
    }

    /// Drops the allocator and the context (so leaks are reported too) and returns every validation error.
    fn finish(mut self) -> Vec<ValidationMessage> {
        if let Some(allocator) = self.allocator.take() {
            allocator.check().unwrap();
            drop(allocator);
        }
        self.context.take();
        self.log.errors()
    }

    /// As [`Harness::finish`], failing on any validation error.
    fn assert_clean(self) {
        let errors = self.finish();
        let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(errors.is_empty(), "validation errors:\n{}", listed.join("\n"));
    }
}

fn buffer_info(size: u64, usage: vk::BufferUsageFlags) -> vk::BufferCreateInfo<'static> {
    vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE)
}

fn create_buffer(
    allocator: &Allocator<VulkanDevice>,
    size: u64,
    usage: vk::BufferUsageFlags,
    options: &ResourceOptions<'_>,
) -> (vk::Buffer, Allocation) {
    // SAFETY: the create info is valid and holds no pointers.
    unsafe { allocator.create_buffer_with_options(&buffer_info(size, usage), options) }.unwrap()
}

fn destroy_buffer(allocator: &Allocator<VulkanDevice>, (buffer, allocation): (vk::Buffer, Allocation)) {
    // SAFETY: made by `create_buffer` of this allocator; no work that uses it is pending.
    unsafe { allocator.destroy_buffer(buffer, allocation) }.unwrap();
}

fn destroy_image(allocator: &Allocator<VulkanDevice>, (image, allocation): (vk::Image, Allocation)) {
    // SAFETY: made by `create_image` of this allocator; no work that uses it is pending.
    unsafe { allocator.destroy_image(image, allocation) }.unwrap();
}

fn overlap(a: &Allocation, b: &Allocation) -> bool {
    a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size()
}

fn unsupported(result: Result<impl core::fmt::Debug, Error>) -> &'static str {
    match result {
        Err(Error::Device(DeviceError::Unsupported(reason))) => reason,
        other => panic!("expected an Unsupported error, got {other:?}"),
    }
}

#[test]
fn validation_layer_is_live_misaligned_bind_is_reported() {
    let Some(harness) = Harness::new("validation_layer_is_live") else { return };
    let allocator = harness.allocator();
    let device = harness.device();
    // SAFETY: a valid create info without pointers.
    let buffer =
        unsafe { device.create_buffer(&buffer_info(4096, vk::BufferUsageFlags::UNIFORM_BUFFER), None) }
            .unwrap();
    // SAFETY: the buffer was just created on this device.
    let requirements = unsafe { allocator.device().buffer_requirements(buffer) }.requirements;
    assert!(requirements.alignment > 1, "an alignment of 1 cannot be missed");
    let padded = vk::MemoryRequirements { size: requirements.size + requirements.alignment, ..requirements };
    let allocation = allocator
        .allocate_for_requirements(&padded, &ResourceOptions::new("misaligned", MemoryLocation::GpuOnly))
        .unwrap();
    assert_eq!(allocation.class(), ResourceClass::Unknown, "caller-bound memory has the unknown class");
    let memory = allocator.device_memory(&allocation).unwrap();
    // Deliberately wrong: one byte past an aligned offset (the padding keeps the range inside the allocation).
    // SAFETY: a valid buffer and live memory; the misalignment is a validation error the layer reports, and
    // lavapipe and NVIDIA only record the address of a binding that nothing ever uses.
    let _ = unsafe { device.bind_buffer_memory(buffer, memory, allocation.offset() + 1) };
    // SAFETY: never used by the device.
    unsafe { device.destroy_buffer(buffer, None) };
    allocator.free(allocation).unwrap();

    let errors = harness.finish();
    assert!(
        errors.iter().any(|error| error.vuid.contains("VUID-vkBindBufferMemory-memoryOffset")),
        "the validation layer did not report the misaligned bind: {errors:?}"
    );
    let others: Vec<_> = errors.iter().filter(|error| !error.vuid.contains("vkBindBufferMemory")).collect();
    assert!(others.is_empty(), "unexpected validation errors: {others:?}");
}

#[test]
fn buffers_share_a_block() {
    let Some(harness) = Harness::new("buffers_share_a_block") else { return };
    let allocator = harness.allocator();
    let options = ResourceOptions::new("upload", MemoryLocation::CpuToGpu);
    let a = create_buffer(allocator, 64 << 10, vk::BufferUsageFlags::TRANSFER_SRC, &options);
    let b = create_buffer(allocator, 64 << 10, vk::BufferUsageFlags::TRANSFER_SRC, &options);
    assert_eq!(a.1.block_key(), b.1.block_key(), "two small buffers share one block");
    assert!(!a.1.is_dedicated() && !overlap(&a.1, &b.1));
    assert_eq!(allocator.device_memory(&a.1).unwrap(), allocator.device_memory(&b.1).unwrap());
    assert_eq!((a.1.class(), allocator.block_count()), (ResourceClass::Buffer, 1));
    destroy_buffer(allocator, a);
    destroy_buffer(allocator, b);
    harness.assert_clean();
}

#[test]
fn image_classes_keep_apart() {
    let Some(harness) = Harness::new("image_classes_keep_apart") else { return };
    let allocator = harness.allocator();
    let optimal = image_info(
        vk::ImageTiling::OPTIMAL,
        vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST,
        256,
    );
    // SAFETY: valid create infos without pointers.
    let first = unsafe { allocator.create_image(&optimal, MemoryLocation::GpuOnly) }.unwrap();
    // SAFETY: as above.
    let second = unsafe { allocator.create_image(&optimal, MemoryLocation::GpuOnly) }.unwrap();
    assert_eq!(first.1.block_key(), second.1.block_key(), "two optimal images share one block");
    assert_eq!(first.1.class(), ResourceClass::OptimalImage);
    assert!(!overlap(&first.1, &second.1));

    let linear = image_info(vk::ImageTiling::LINEAR, vk::ImageUsageFlags::TRANSFER_SRC, 64);
    // SAFETY: as above.
    let linear = unsafe { allocator.create_image(&linear, MemoryLocation::CpuToGpu) }.unwrap();
    let buffer = create_buffer(
        allocator,
        16 << 10,
        vk::BufferUsageFlags::TRANSFER_SRC,
        &ResourceOptions::new("staging", MemoryLocation::CpuToGpu),
    );
    assert_eq!(linear.1.class(), ResourceClass::LinearImage);
    let keys = [first.1.block_key(), linear.1.block_key(), buffer.1.block_key()];
    assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2], "one block per class: {keys:?}");
    assert_eq!(allocator.block_count(), 3);

    destroy_image(allocator, first);
    destroy_image(allocator, second);
    destroy_image(allocator, linear);
    destroy_buffer(allocator, buffer);
    harness.assert_clean();
}

#[test]
fn dedicated_blocks_name_their_resource() {
    let Some(harness) = Harness::new("dedicated_blocks_name_their_resource") else { return };
    let allocator = harness.allocator();
    let info = image_info(vk::ImageTiling::OPTIMAL, vk::ImageUsageFlags::SAMPLED, 512);
    let options =
        ResourceOptions::new("render target", MemoryLocation::GpuOnly).with_dedicated(Dedicated::Required);
    // SAFETY: a valid create info without pointers.
    let image = unsafe { allocator.create_image_with_options(&info, &options) }.unwrap();
    assert!(image.1.is_dedicated());
    assert_eq!(image.1.offset(), 0);
    let named = allocator.with_block(&image.1, |block| (block.dedicated_to(), block.size())).unwrap();
    // SAFETY: the image is alive.
    let requirements = unsafe { allocator.device().image_requirements(image.0) };
    assert_eq!(named, (Some(DedicatedObject::Image(image.0)), requirements.requirements.size));
    eprintln!(
        "driver's answer for a 512x512 image: requires dedicated {}, prefers {}",
        requirements.requires_dedicated, requirements.prefers_dedicated
    );

    let preferred =
        ResourceOptions::new("vertices", MemoryLocation::GpuOnly).with_dedicated(Dedicated::Preferred);
    let buffer = create_buffer(allocator, 1 << 20, vk::BufferUsageFlags::VERTEX_BUFFER, &preferred);
    assert!(buffer.1.is_dedicated());
    let named = allocator.with_block(&buffer.1, |block| block.dedicated_to()).unwrap();
    assert_eq!(named, Some(DedicatedObject::Buffer(buffer.0)));

    let pooled = create_buffer(
        allocator,
        1 << 20,
        vk::BufferUsageFlags::VERTEX_BUFFER,
        &ResourceOptions::new("pooled", MemoryLocation::GpuOnly),
    );
    assert_eq!(allocator.with_block(&pooled.1, |block| block.dedicated_to()).unwrap(), None);

    destroy_image(allocator, image);
    destroy_buffer(allocator, buffer);
    destroy_buffer(allocator, pooled);
    assert_eq!(allocator.diagnostics().block_destructions, 2, "dedicated blocks go with their allocation");
    harness.assert_clean();
}

#[test]
fn vulkan_1_0_dedicated_falls_back_to_a_plain_block() {
    let Some(harness) = Harness::with_device("vulkan_1_0_dedicated_fallback", |context| {
        VulkanDevice::from_context_restricted(context, vk::API_VERSION_1_0, VulkanFeatures::NONE).unwrap()
    }) else {
        return;
    };
    let allocator = harness.allocator();
    assert_eq!(allocator.device().api_version(), vk::API_VERSION_1_0);
    let options =
        ResourceOptions::new("dedicated on 1.0", MemoryLocation::GpuOnly).with_dedicated(Dedicated::Required);
    let buffer = create_buffer(allocator, 256 << 10, vk::BufferUsageFlags::STORAGE_BUFFER, &options);
    // SAFETY: the buffer is alive.
    let requirements = unsafe { allocator.device().buffer_requirements(buffer.0) };
    assert!(!requirements.requires_dedicated && !requirements.prefers_dedicated, "1.0 has no driver answer");
    assert!(buffer.1.is_dedicated());
    assert_eq!(allocator.with_block(&buffer.1, |block| block.dedicated_to()).unwrap(), None);
    destroy_buffer(allocator, buffer);
    harness.assert_clean();
}

/// Records a copy of `size` bytes from `source` to `destination`, submits it with `fence` and returns the pool.
fn copy_buffer(
    harness: &Harness,
    source: vk::Buffer,
    destination: vk::Buffer,
    size: u64,
    fence: vk::Fence,
) -> vk::CommandPool {
    let context = harness.context();
    let device = context.device();
    let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(context.queue_family_index());
    // SAFETY: valid create and allocate infos; the command buffer is recorded, submitted once and the pool is
    // destroyed by the caller after the fence signalled; the queue is used by this thread only.
    unsafe {
        let pool = device.create_command_pool(&pool_info, None).unwrap();
        let allocate = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        let command_buffer = device.allocate_command_buffers(&allocate).unwrap()[0];
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        device.begin_command_buffer(command_buffer, &begin).unwrap();
        device.cmd_copy_buffer(
            command_buffer,
            source,
            destination,
            &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size }],
        );
        common::transfer_writes_to_host(device, command_buffer);
        device.end_command_buffer(command_buffer).unwrap();
        let buffers = [command_buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&buffers);
        device.queue_submit(context.queue(), &[submit], fence).unwrap();
        pool
    }
}

#[test]
fn map_write_flush_and_read_back_through_a_device_copy() {
    let Some(harness) = Harness::new("map_write_flush_read_back") else { return };
    let allocator = harness.allocator();
    let device = harness.device();
    let size = 96 << 10;
    let mut upload = create_buffer(
        allocator,
        size,
        vk::BufferUsageFlags::TRANSFER_SRC,
        &ResourceOptions::new("upload", MemoryLocation::CpuToGpu),
    );
    let mut readback = create_buffer(
        allocator,
        size,
        vk::BufferUsageFlags::TRANSFER_DST,
        &ResourceOptions::new("readback", MemoryLocation::GpuToCpu),
    );
    let pattern: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    {
        let mut mapped = allocator.map(&mut upload.1).unwrap();
        mapped.write(0, &pattern).unwrap();
        mapped.flush(0, size).unwrap();
        assert!(mapped.write(size - 1, &[0, 0]).is_err(), "writes past the allocation are refused");
    }
    // SAFETY: a valid create info.
    let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
    let pool = copy_buffer(&harness, upload.0, readback.0, size, fence);
    // SAFETY: the fence was submitted above.
    unsafe { device.wait_for_fences(&[fence], true, u64::MAX) }.unwrap();
    let mut read = vec![0u8; size as usize];
    {
        let mapped = allocator.map(&mut readback.1).unwrap();
        mapped.invalidate(0, size).unwrap();
        mapped.read(0, &mut read).unwrap();
    }
    assert!(read == pattern, "the device copy did not carry the bytes");

    // The copy is finished (the fence signalled): the deferred frees go at the next check.
    // SAFETY: both buffers were made by this allocator and the copy, their only use, ends at the fence, which
    // lives until the frees are processed below.
    unsafe {
        allocator.destroy_buffer_after(upload.0, upload.1, WaitPoint::Fence(fence)).unwrap();
        allocator.destroy_buffer_after(readback.0, readback.1, WaitPoint::Fence(fence)).unwrap();
    }
    assert_eq!(allocator.process_deferred().unwrap(), 2);
    // SAFETY: the fence signalled and nothing waits on it; the pool's command buffer has completed.
    unsafe {
        device.destroy_fence(fence, None);
        device.destroy_command_pool(pool, None);
    }
    harness.assert_clean();
}

#[test]
fn deferred_free_waits_for_the_fence() {
    let Some(harness) = Harness::new("deferred_free_waits_for_the_fence") else { return };
    let allocator = harness.allocator();
    let device = harness.device();
    let options = ResourceOptions::new("frame data", MemoryLocation::CpuToGpu);
    let buffer = create_buffer(allocator, 32 << 10, vk::BufferUsageFlags::UNIFORM_BUFFER, &options);
    let used = allocator.used_bytes();
    // SAFETY: a valid create info.
    let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
    // SAFETY: the buffer is this allocator's; the device never used it; the fence lives until processed.
    unsafe { allocator.destroy_buffer_after(buffer.0, buffer.1, WaitPoint::Fence(fence)) }.unwrap();
    assert_eq!((allocator.process_deferred().unwrap(), allocator.pending_deferred_frees()), (0, 1));
    assert_eq!(allocator.used_bytes(), used, "nothing is freed before the fence signals");

    // SAFETY: an empty submission that signals the fence when the queue's earlier work is done.
    unsafe { device.queue_submit(harness.context().queue(), &[], fence) }.unwrap();
    // SAFETY: the fence was submitted.
    unsafe { device.wait_for_fences(&[fence], true, u64::MAX) }.unwrap();
    // No explicit processing: the next resource call frees it.
    let next = create_buffer(allocator, 32 << 10, vk::BufferUsageFlags::UNIFORM_BUFFER, &options);
    assert_eq!(allocator.pending_deferred_frees(), 0);
    assert_eq!(allocator.used_bytes(), next.1.size());
    destroy_buffer(allocator, next);
    // SAFETY: signalled, and no longer referenced by the queue of frees.
    unsafe { device.destroy_fence(fence, None) };
    harness.assert_clean();
}

#[test]
fn deferred_free_waits_for_a_timeline_value() {
    let Some(harness) = Harness::new("deferred_free_waits_for_a_timeline_value") else { return };
    if !harness.context().features().timeline_semaphore {
        eprintln!("deferred_free_waits_for_a_timeline_value: skipped: no timeline semaphores on this device");
        return;
    }
    let allocator = harness.allocator();
    let device = harness.device();
    let mut timeline = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
    let info = vk::SemaphoreCreateInfo::default().push_next(&mut timeline);
    // SAFETY: a valid create info; timeline semaphores are enabled.
    let semaphore = unsafe { device.create_semaphore(&info, None) }.unwrap();
    let buffer = create_buffer(
        allocator,
        8 << 10,
        vk::BufferUsageFlags::STORAGE_BUFFER,
        &ResourceOptions::new("timeline", MemoryLocation::GpuOnly),
    );
    let wait = WaitPoint::Timeline { semaphore, value: 2 };
    // SAFETY: the device never used the buffer; the semaphore lives until the free is processed.
    unsafe { allocator.destroy_buffer_after(buffer.0, buffer.1, wait) }.unwrap();
    let signal = |value| {
        // SAFETY: a host signal to a higher value of a valid timeline semaphore.
        unsafe {
            device.signal_semaphore(&vk::SemaphoreSignalInfo::default().semaphore(semaphore).value(value))
        }
        .unwrap()
    };
    signal(1);
    assert_eq!((allocator.process_deferred().unwrap(), allocator.pending_deferred_frees()), (0, 1));
    signal(2);
    assert_eq!((allocator.process_deferred().unwrap(), allocator.pending_deferred_frees()), (1, 0));
    assert_eq!(allocator.used_bytes(), 0);
    // SAFETY: no longer referenced by anything.
    unsafe { device.destroy_semaphore(semaphore, None) };
    harness.assert_clean();
}

#[test]
fn pending_deferred_frees_destroy_their_objects_when_the_allocator_drops() {
    let Some(mut harness) = Harness::new("pending_deferred_frees_on_drop") else { return };
    let allocator = harness.allocator.take().unwrap();
    let device = harness.device().clone();
    // SAFETY: a valid create info.
    let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
    for _ in 0..3 {
        let options = ResourceOptions::new("never signalled", MemoryLocation::GpuOnly);
        let buffer = create_buffer(&allocator, 4096, vk::BufferUsageFlags::STORAGE_BUFFER, &options);
        // SAFETY: the device never uses the buffer (so dropping the allocator before the fence signals frees
        // nothing in use); the fence outlives the allocator.
        unsafe { allocator.destroy_buffer_after(buffer.0, buffer.1, WaitPoint::Fence(fence)) }.unwrap();
    }
    // SAFETY: the image and its allocation are this allocator's, and the device never uses them; the fence
    // outlives the allocator.
    unsafe {
        let info = image_info(vk::ImageTiling::OPTIMAL, vk::ImageUsageFlags::SAMPLED, 64);
        let image = allocator.create_image(&info, MemoryLocation::GpuOnly).unwrap();
        allocator.destroy_image_after(image.0, image.1, WaitPoint::Fence(fence)).unwrap();
    }
    assert_eq!((allocator.process_deferred().unwrap(), allocator.pending_deferred_frees()), (0, 4));
    assert!(
        matches!(allocator.wait_deferred(1_000_000), Err(Error::Device(DeviceError::Other(_)))),
        "times out"
    );
    // Dropping with frees pending: the memory goes with the blocks, the buffers and the image with the
    // device; the validation layer reports any object left when the context destroys the device.
    drop(allocator);
    // SAFETY: nothing references the fence any more.
    unsafe { device.destroy_fence(fence, None) };
    harness.assert_clean();
}

#[test]
fn a_wait_on_the_queue_keeps_its_entries_until_it_returns() {
    // While `wait_deferred` passes the queue's fences to the driver, no other thread's processing may take those
    // entries out (their owners could then destroy the fences under the wait): even an entry whose fence has
    // signalled stays until the wait returns. Entries queued after the wait began are processed as usual.
    let Some(harness) = Harness::new("wait_keeps_entries") else { return };
    let allocator = harness.allocator();
    let device = harness.device();
    // SAFETY: valid create infos.
    let (waiting, signalled) = unsafe {
        let signalled = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
        (
            device.create_fence(&vk::FenceCreateInfo::default(), None).unwrap(),
            device.create_fence(&signalled, None).unwrap(),
        )
    };
    let free_after = |fence| {
        let allocation =
            allocator.allocate(&AllocationDesc::new("deferred", 4096, MemoryLocation::GpuOnly)).unwrap();
        // SAFETY: the device never uses the memory; the fences live until the frees are processed.
        unsafe { allocator.free_after(allocation, WaitPoint::Fence(fence)) }.unwrap();
    };
    free_after(waiting);
    free_after(signalled);
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| allocator.wait_deferred(2_000_000_000));
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert_eq!(allocator.process_deferred().unwrap(), 0, "both held while the wait is on");
        free_after(signalled);
        assert_eq!(allocator.process_deferred().unwrap(), 1, "one queued after the wait began goes");
        assert_eq!(allocator.pending_deferred_frees(), 2);
        assert!(matches!(waiter.join().unwrap(), Err(Error::Device(DeviceError::Other(_)))), "timed out");
    });
    assert_eq!(allocator.pending_deferred_frees(), 1, "the timed-out wait processed the signalled entry");
    // SAFETY: an empty submission that signals the fence; then waited for.
    unsafe {
        device.queue_submit(harness.context().queue(), &[], waiting).unwrap();
        device.wait_for_fences(&[waiting], true, u64::MAX).unwrap();
    }
    assert_eq!((allocator.process_deferred().unwrap(), allocator.pending_deferred_frees()), (1, 0));
    // SAFETY: both signalled and no longer referenced by the queue.
    unsafe {
        device.destroy_fence(waiting, None);
        device.destroy_fence(signalled, None);
    }
    harness.assert_clean();
}

#[test]
fn timeline_waits_are_refused_without_timeline_semaphores() {
    let Some(harness) = Harness::with_device("timeline_waits_refused", |context| {
        VulkanDevice::from_context_restricted(context, vk::API_VERSION_1_3, VulkanFeatures::NONE).unwrap()
    }) else {
        return;
    };
    let allocator = harness.allocator();
    let buffer = create_buffer(
        allocator,
        4 << 10,
        vk::BufferUsageFlags::STORAGE_BUFFER,
        &ResourceOptions::new("refused", MemoryLocation::GpuOnly),
    );
    let wait = WaitPoint::Timeline { semaphore: vk::Semaphore::null(), value: 1 };
    // SAFETY: the conditions hold vacuously: the call is refused and hands everything back.
    let refused = unsafe { allocator.destroy_buffer_after(buffer.0, buffer.1, wait) }.unwrap_err();
    assert!(matches!(refused.error, Error::Device(DeviceError::Unsupported(_))), "{refused}");
    assert_eq!(allocator.pending_deferred_frees(), 0);
    let memcarve::backends::vulkan::DeferredResource::Buffer(returned) = refused.resource else { panic!() };
    destroy_buffer(allocator, (returned, refused.allocation));
    harness.assert_clean();
}

#[test]
fn budgets_fall_back_to_heap_sizes_and_own_usage() {
    let Some(harness) = Harness::with_device("budgets_fall_back", |context| {
        VulkanDevice::from_context_restricted(context, vk::API_VERSION_1_3, VulkanFeatures::NONE).unwrap()
    }) else {
        return;
    };
    let allocator = harness.allocator();
    let heaps = allocator.memory_properties().heaps.clone();
    let before = allocator.device().heap_budgets();
    for (heap, budget) in heaps.iter().zip(&before) {
        assert_eq!((budget.usage, budget.budget), (0, heap.size / 5 * 4), "80 % of the heap, nothing used");
    }
    let buffer = create_buffer(
        allocator,
        1 << 20,
        vk::BufferUsageFlags::STORAGE_BUFFER,
        &ResourceOptions::new("counted", MemoryLocation::GpuOnly),
    );
    let memory_type = buffer.1.memory_type();
    let heap = allocator.memory_properties().types[memory_type as usize].heap_index as usize;
    let after = allocator.device().heap_budgets();
    assert_eq!(after[heap].usage, allocator.committed_bytes(), "usage is memcarve's own blocks");
    assert_eq!(allocator.device().own_usage()[heap], allocator.committed_bytes());
    destroy_buffer(allocator, buffer);
    assert_eq!(allocator.trim_empty_blocks(), 1);
    assert_eq!(allocator.device().heap_budgets()[heap].usage, 0);
    harness.assert_clean();
}

#[test]
fn memory_budget_extension_reports_real_budgets() {
    let Some(harness) = Harness::new("memory_budget_extension") else { return };
    let allocator = harness.allocator();
    if !allocator.device().features().memory_budget {
        eprintln!(
            "memory_budget_extension: skipped: VK_EXT_memory_budget is not available (lavapipe lacks it)"
        );
        harness.assert_clean();
        return;
    }
    allocator.device().refresh_budget();
    let heaps = allocator.memory_properties().heaps.clone();
    for (heap, budget) in heaps.iter().zip(allocator.device().heap_budgets()) {
        assert!(budget.budget > 0 && budget.budget <= heap.size, "{budget:?} for a heap of {}", heap.size);
    }
    harness.assert_clean();
}

#[test]
fn features_the_device_lacks_are_refused_at_creation() {
    let Some(context) = context("features_refused") else { return };
    let log = context.validation_log();
    let missing = VulkanFeatures::NONE
        .with_memory_budget(!context.features().memory_budget)
        .with_memory_priority(!context.features().memory_priority);
    if missing == VulkanFeatures::NONE {
        eprintln!(
            "features_refused: skipped: this device has VK_EXT_memory_budget and VK_EXT_memory_priority"
        );
        return;
    }
    let desc = VulkanDeviceDesc::new(
        context.instance().clone(),
        context.physical_device(),
        context.device().clone(),
        context.api_version(),
    )
    .with_features(missing);
    // SAFETY: the handles come from `context`, which outlives the result; the features claimed are refused
    // before any of them is used (that is what the test checks).
    let refused = unsafe { VulkanDevice::new(desc) };
    assert!(matches!(refused, Err(DeviceError::Unsupported(_))), "{refused:?}");
    drop(context);
    assert_eq!(log.error_count(), 0, "{:?}", log.errors());
}

#[test]
fn memory_priority_goes_to_dedicated_blocks_or_is_ignored() {
    let Some(harness) = Harness::new("memory_priority") else { return };
    let allocator = harness.allocator();
    let options = ResourceOptions::new("hot", MemoryLocation::GpuOnly).with_priority(0.9);
    let buffer = create_buffer(allocator, 64 << 10, vk::BufferUsageFlags::STORAGE_BUFFER, &options);
    let priority = allocator.with_block(&buffer.1, |block| block.priority()).unwrap();
    if allocator.device().features().memory_priority {
        assert!(buffer.1.is_dedicated(), "a priority needs a block of its own");
        assert_eq!(priority, Some(0.9));
        // A NaN priority (which `f32::clamp` keeps) reaches the driver as the device's default.
        let nan = ResourceOptions::new("nan", MemoryLocation::GpuOnly).with_priority(f32::NAN);
        let other = create_buffer(allocator, 64 << 10, vk::BufferUsageFlags::STORAGE_BUFFER, &nan);
        assert_eq!(allocator.with_block(&other.1, |block| block.priority()).unwrap(), Some(0.5));
        destroy_buffer(allocator, other);
    } else {
        eprintln!("memory_priority: VK_EXT_memory_priority absent, checking the fallback only");
        assert!(
            !buffer.1.is_dedicated(),
            "without the extension the priority is ignored and the buffer pooled"
        );
        assert_eq!(priority, None);
    }
    destroy_buffer(allocator, buffer);
    harness.assert_clean();
}

#[test]
fn buffer_device_address_blocks_carry_the_flag() {
    let Some(harness) = Harness::new("buffer_device_address") else { return };
    let allocator = harness.allocator();
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
    let options = ResourceOptions::new("addressed", MemoryLocation::GpuOnly);
    if !allocator.device().features().buffer_device_address {
        eprintln!("buffer_device_address: skipped: the device lacks bufferDeviceAddress");
        harness.assert_clean();
        return;
    }
    let first = create_buffer(allocator, 64 << 10, usage, &options);
    let second = create_buffer(allocator, 64 << 10, usage, &options);
    assert_eq!(first.1.block_key(), second.1.block_key());
    assert!(allocator.with_block(&first.1, |block| block.has_device_address()).unwrap());
    let address = |buffer| {
        // SAFETY: a live buffer with SHADER_DEVICE_ADDRESS usage, bound to memory.
        unsafe {
            harness.device().get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buffer))
        }
    };
    let (a, b) = (address(first.0), address(second.0));
    assert!(a != 0 && b != 0 && a != b);
    destroy_buffer(allocator, first);
    destroy_buffer(allocator, second);
    harness.assert_clean();

    // A device told not to use the feature refuses such buffers instead of binding them to unflagged memory.
    let Some(harness) = Harness::with_device("buffer_device_address_off", |context| {
        VulkanDevice::from_context_restricted(context, vk::API_VERSION_1_3, VulkanFeatures::NONE).unwrap()
    }) else {
        return;
    };
    // SAFETY: a valid create info without pointers.
    let refused =
        unsafe { harness.allocator().create_buffer_with_options(&buffer_info(4096, usage), &options) };
    assert!(unsupported(refused).contains("buffer_device_address"));
    harness.assert_clean();
}

#[test]
fn exportable_dedicated_allocation_gives_an_opaque_fd() {
    let Some(harness) = Harness::new("export_opaque_fd") else { return };
    let allocator = harness.allocator();
    if !allocator.device().features().external_memory_fd {
        eprintln!("export_opaque_fd: skipped: VK_KHR_external_memory_fd is not available");
        harness.assert_clean();
        return;
    }
    let options = ResourceOptions::new("interop", MemoryLocation::GpuOnly).with_export(ExportKind::OpaqueFd);
    let exported = create_buffer(allocator, 1 << 20, vk::BufferUsageFlags::STORAGE_BUFFER, &options);
    assert!(exported.1.is_dedicated(), "exported memory has a block of its own");
    let named = allocator.with_block(&exported.1, |block| (block.dedicated_to(), block.export())).unwrap();
    assert_eq!(named, (Some(DedicatedObject::Buffer(exported.0)), Some(ExportKind::OpaqueFd)));
    let fd = allocator.export_fd(&exported.1).unwrap();
    let file = std::fs::File::from(fd);
    assert!(file.metadata().is_ok(), "the descriptor is open");
    drop(file);

    let image_info = image_info(vk::ImageTiling::OPTIMAL, vk::ImageUsageFlags::SAMPLED, 128);
    // SAFETY: a valid create info without pointers.
    let image = unsafe { allocator.create_image_with_options(&image_info, &options) };
    match image {
        Ok(image) => {
            drop(allocator.export_fd(&image.1).unwrap());
            destroy_image(allocator, image);
        }
        Err(error) => eprintln!("export_opaque_fd: images are not exportable here: {error}"),
    }

    let plain = create_buffer(
        allocator,
        4096,
        vk::BufferUsageFlags::STORAGE_BUFFER,
        &ResourceOptions::new("plain", MemoryLocation::GpuOnly),
    );
    assert!(unsupported(allocator.export_fd(&plain.1)).contains("not made exportable"));
    let requirements = vk::MemoryRequirements { size: 4096, alignment: 256, memory_type_bits: u32::MAX };
    assert!(unsupported(allocator.allocate_for_requirements(&requirements, &options)).contains("export"));
    destroy_buffer(allocator, plain);
    destroy_buffer(allocator, exported);
    harness.assert_clean();
}

#[test]
fn sparse_disjoint_and_drm_modifier_resources_are_refused() {
    let Some(harness) = Harness::new("sparse_disjoint_refused") else { return };
    let allocator = harness.allocator();
    let usage = vk::ImageUsageFlags::SAMPLED;
    let sparse = image_info(vk::ImageTiling::OPTIMAL, usage, 64).flags(vk::ImageCreateFlags::SPARSE_BINDING);
    let disjoint = image_info(vk::ImageTiling::OPTIMAL, usage, 64)
        .format(vk::Format::G8_B8R8_2PLANE_420_UNORM)
        .flags(vk::ImageCreateFlags::DISJOINT);
    let drm = image_info(vk::ImageTiling::DRM_FORMAT_MODIFIER_EXT, usage, 64);
    // SAFETY: the helpers refuse these before any Vulkan call.
    unsafe {
        assert!(unsupported(allocator.create_image(&sparse, MemoryLocation::GpuOnly)).contains("sparse"));
        assert!(unsupported(allocator.create_image(&disjoint, MemoryLocation::GpuOnly)).contains("disjoint"));
        assert!(unsupported(allocator.create_image(&drm, MemoryLocation::GpuOnly)).contains("DRM"));
        let sparse_buffer = buffer_info(4096, vk::BufferUsageFlags::STORAGE_BUFFER)
            .flags(vk::BufferCreateFlags::SPARSE_BINDING);
        assert!(
            unsupported(allocator.create_buffer(&sparse_buffer, MemoryLocation::GpuOnly)).contains("sparse")
        );
    }
    assert_eq!((allocator.block_count(), allocator.diagnostics().failures), (0, 0), "nothing was allocated");
    harness.assert_clean();
}

#[test]
fn threads_each_get_blocks_named_for_their_own_buffers() {
    let Some(harness) = Harness::new("threads_dedicated") else { return };
    let allocator = harness.allocator();
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            scope.spawn(move || {
                for round in 0..8u64 {
                    let dedicated = if round % 2 == 0 { Dedicated::Required } else { Dedicated::No };
                    let options = ResourceOptions::new("threaded", MemoryLocation::GpuOnly)
                        .with_dedicated(dedicated)
                        .with_user_data(thread * 100 + round);
                    let buffer = create_buffer(
                        allocator,
                        (round + 1) * 4096,
                        vk::BufferUsageFlags::STORAGE_BUFFER,
                        &options,
                    );
                    let named = allocator.with_block(&buffer.1, |block| block.dedicated_to()).unwrap();
                    let expected =
                        (dedicated == Dedicated::Required).then_some(DedicatedObject::Buffer(buffer.0));
                    assert_eq!(named, expected);
                    assert_eq!(buffer.1.user_data(), thread * 100 + round);
                    destroy_buffer(allocator, buffer);
                }
            });
        }
    });
    assert_eq!(allocator.used_bytes(), 0);
    harness.assert_clean();
}

#[test]
fn severities_order_and_messages_print_their_vuid() {
    let message = ValidationMessage {
        severity: Severity::Error,
        vuid: "VUID-vkBindBufferMemory-memoryOffset-01036".into(),
        message: "misaligned".into(),
    };
    assert!(message.to_string().contains("VUID-vkBindBufferMemory-memoryOffset-01036"));
    assert!(Severity::Warning < Severity::Error);
}
