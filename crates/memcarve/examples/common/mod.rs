//! What the Vulkan examples share: a validated context, the validation summary and exit code, a small seeded
//! generator, and the create infos, read-back buffer and barrier they (and `tests/vulkan.rs`) record. Each
//! example includes this module with `mod common;`; the test includes it by path.

#![allow(dead_code, reason = "each example uses part of it")]

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

use ash::vk;
use memcarve::backends::vulkan::{ResourceOptions, VulkanContext, VulkanContextDesc, VulkanDevice};
use memcarve::{Allocation, Allocator, MemoryLocation};

/// Creates a context with the Khronos validation layer, runs `scenario` on it, prints every validation message
/// (with its VUID) and the error count, and exits non-zero on any validation error or failure.
pub fn run_validated(
    name: &str,
    scenario: impl FnOnce(&Arc<VulkanContext>) -> Result<(), Box<dyn Error>>,
) -> ExitCode {
    match run(name, scenario) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(errors) => {
            eprintln!("FAILED: the validation layer reported {errors} error(s)");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("FAILED: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    name: &str,
    scenario: impl FnOnce(&Arc<VulkanContext>) -> Result<(), Box<dyn Error>>,
) -> Result<usize, Box<dyn Error>> {
    let desc = VulkanContextDesc::default().with_validation(true).with_application_name(name);
    let context = Arc::new(VulkanContext::new(&desc)?);
    let log = context.validation_log();
    println!(
        "device: {} (Vulkan {}.{}), validation on, {:?}",
        context.device_name(),
        vk::api_version_major(context.api_version()),
        vk::api_version_minor(context.api_version()),
        context.features()
    );
    let result = scenario(&context);
    drop(context);
    for message in log.messages() {
        println!("validation: {message}");
    }
    println!("validation errors: {}", log.error_count());
    result?;
    Ok(log.error_count())
}

/// splitmix64: a small seeded generator, so that every run does the same thing.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A 2D RGBA8 image of `side` × `side` with one mip level and layer.
pub fn image_info(
    tiling: vk::ImageTiling,
    usage: vk::ImageUsageFlags,
    side: u32,
) -> vk::ImageCreateInfo<'static> {
    vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(vk::Format::R8G8B8A8_UNORM)
        .extent(vk::Extent3D { width: side, height: side, depth: 1 })
        .mip_levels(1)
        .array_layers(1)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(tiling)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
}

/// A host-readable buffer of `size` bytes for copies from the device.
pub fn create_readback(
    allocator: &Allocator<VulkanDevice>,
    size: u64,
) -> Result<(vk::Buffer, Allocation), memcarve::Error> {
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(vk::BufferUsageFlags::TRANSFER_DST)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: the create info is valid and holds no pointers.
    unsafe {
        allocator
            .create_buffer_with_options(&info, &ResourceOptions::new("readback", MemoryLocation::GpuToCpu))
    }
}

/// Records a barrier that makes the transfer writes before it visible to host reads once the submission's
/// fence has signalled.
///
/// # Safety
/// `command_buffer` is a command buffer of `device` in the recording state, used by this thread only.
pub unsafe fn transfer_writes_to_host(device: &ash::Device, command_buffer: vk::CommandBuffer) {
    let barrier = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::HOST_READ);
    // SAFETY: (1) the caller's contract: the command buffer is recording and this thread's alone.
    unsafe {
        device.cmd_pipeline_barrier(
            command_buffer,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        );
    }
}
