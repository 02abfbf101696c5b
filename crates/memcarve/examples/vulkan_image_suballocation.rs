//! Image classes under the validation layer: two optimal images share one block; a linear image and a buffer
//! land in separate blocks of their own class, so `bufferImageGranularity` never splits a page between linear
//! and optimal resources. Validation messages are printed with their VUID, and the example exits non-zero if
//! the layer reported any error.
//!
//! `cargo run -p memcarve --features vulkan --example vulkan_image_suballocation`

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

use memcarve::backends::vulkan::ash::vk;
use memcarve::backends::vulkan::{ResourceOptions, VulkanContext, VulkanDevice};
use memcarve::{Allocation, Allocator, AllocatorConfig, MemoryLocation};

mod common;

use common::image_info;

fn main() -> ExitCode {
    common::run_validated("vulkan_image_suballocation", scenario)
}

fn describe(
    allocator: &Allocator<VulkanDevice>,
    name: &str,
    allocation: &Allocation,
) -> Result<(), Box<dyn Error>> {
    let key = allocation.block_key();
    println!(
        "{name:<18} class {:<12} type {} block {:?} #{} offset {:>8} size {:>8} VkDeviceMemory {:?}",
        format!("{:?}", allocation.class()),
        key.memory_type,
        key.kind,
        key.index,
        allocation.offset(),
        allocation.size(),
        allocator.device_memory(allocation)?
    );
    Ok(())
}

fn scenario(context: &Arc<VulkanContext>) -> Result<(), Box<dyn Error>> {
    let allocator =
        Allocator::new(VulkanDevice::from_context(Arc::clone(context))?, AllocatorConfig::default())?;
    println!(
        "bufferImageGranularity = {} bytes",
        allocator.memory_properties().limits.buffer_image_granularity
    );

    let sampled = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST;
    let optimal = image_info(vk::ImageTiling::OPTIMAL, sampled, 512);
    let linear = image_info(vk::ImageTiling::LINEAR, vk::ImageUsageFlags::TRANSFER_SRC, 256);
    let buffer_info = vk::BufferCreateInfo::default()
        .size(64 << 10)
        .usage(vk::BufferUsageFlags::TRANSFER_SRC)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: every create info is valid and holds no pointers.
    let (albedo, normals, mut staging_image, staging_buffer) = unsafe {
        (
            allocator.create_image_with_options(
                &optimal,
                &ResourceOptions::new("albedo", MemoryLocation::GpuOnly),
            )?,
            allocator.create_image_with_options(
                &optimal,
                &ResourceOptions::new("normals", MemoryLocation::GpuOnly),
            )?,
            allocator.create_image_with_options(
                &linear,
                &ResourceOptions::new("staging image", MemoryLocation::CpuToGpu),
            )?,
            allocator.create_buffer_with_options(
                &buffer_info,
                &ResourceOptions::new("staging buffer", MemoryLocation::CpuToGpu),
            )?,
        )
    };
    describe(&allocator, "albedo (optimal)", &albedo.1)?;
    describe(&allocator, "normals (optimal)", &normals.1)?;
    describe(&allocator, "staging image", &staging_image.1)?;
    describe(&allocator, "staging buffer", &staging_buffer.1)?;

    let share = albedo.1.block_key() == normals.1.block_key();
    let apart = staging_image.1.block_key() != staging_buffer.1.block_key()
        && staging_image.1.block_key() != albedo.1.block_key()
        && staging_buffer.1.block_key() != albedo.1.block_key();
    println!("optimal images share one block: {share}");
    println!("linear image, buffer and optimal images in separate blocks: {apart}");
    println!("{} block(s) live, {} bytes committed", allocator.block_count(), allocator.committed_bytes());

    // A linear image is host-addressable: write one row through its mapping.
    allocator.map(&mut staging_image.1)?.write(0, &[0xff; 1024])?;

    // SAFETY: all four were made by this allocator and the device never used them.
    unsafe {
        allocator.destroy_image(albedo.0, albedo.1)?;
        allocator.destroy_image(normals.0, normals.1)?;
        allocator.destroy_image(staging_image.0, staging_image.1)?;
        allocator.destroy_buffer(staging_buffer.0, staging_buffer.1)?;
    }
    if !share || !apart {
        return Err("resources were not placed by class".into());
    }
    Ok(())
}
