//! The Vulkan backend under the validation layer: two upload buffers placed by policy share one block, are
//! mapped, written, flushed and read back; a GPU-only image gets a dedicated block that names it; heap budgets
//! and the allocator's counters are printed. Validation messages are printed with their VUID, and the example
//! exits non-zero if the layer reported any error.
//!
//! `cargo run -p memcarve --features vulkan --example vulkan_buffer_suballocation`

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

use memcarve::backends::vulkan::ash::vk;
use memcarve::backends::vulkan::{ResourceOptions, VulkanContext, VulkanDevice};
use memcarve::{AllocationDesc, Allocator, AllocatorConfig, Dedicated, Device, MemoryLocation};

const BUFFER_SIZE: u64 = 64 << 10;

mod common;

fn main() -> ExitCode {
    common::run_validated("vulkan_buffer_suballocation", scenario)
}

fn scenario(context: &Arc<VulkanContext>) -> Result<(), Box<dyn Error>> {
    let allocator =
        Allocator::new(VulkanDevice::from_context(Arc::clone(context))?, AllocatorConfig::default())?;

    let choice = allocator.select_memory_type(&AllocationDesc::new(
        "upload",
        BUFFER_SIZE,
        MemoryLocation::CpuToGpu,
    ))?;
    println!(
        "policy: upload memory -> type {} (heap {}, {}), score {}, within budget: {}",
        choice.memory_type, choice.heap, choice.flags, choice.score, choice.within_budget
    );

    // Two upload buffers: the policy picks the type, the buffer pool of that type gives both one block.
    let info = vk::BufferCreateInfo::default()
        .size(BUFFER_SIZE)
        .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::VERTEX_BUFFER)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: the create info is valid and holds no pointers.
    let mut vertices = unsafe {
        allocator
            .create_buffer_with_options(&info, &ResourceOptions::new("vertices", MemoryLocation::CpuToGpu))
    }?;
    // SAFETY: as above.
    let mut indices = unsafe {
        allocator
            .create_buffer_with_options(&info, &ResourceOptions::new("indices", MemoryLocation::CpuToGpu))
    }?;
    for (name, (_, allocation)) in [("vertices", &vertices), ("indices", &indices)] {
        println!(
            "{name:<8}: memory type {}, offset {:>6}, size {}, {:?}, VkDeviceMemory {:?}",
            allocation.memory_type(),
            allocation.offset(),
            allocation.size(),
            allocation.block_key(),
            allocator.device_memory(allocation)?
        );
    }
    if vertices.1.block_key() != indices.1.block_key() {
        return Err("the two upload buffers did not share a block".into());
    }
    println!("both upload buffers share one block ({} block(s) live)", allocator.block_count());

    // Map, write, flush (a checked no-op on coherent memory), and read back through a second mapping.
    let pattern: Vec<u8> = (0..BUFFER_SIZE).map(|i| (i % 251) as u8).collect();
    for (_, allocation) in [&mut vertices, &mut indices] {
        let mut mapped = allocator.map(allocation)?;
        mapped.write(0, &pattern)?;
        mapped.flush(0, BUFFER_SIZE)?;
    }
    let mut read = vec![0u8; BUFFER_SIZE as usize];
    allocator.map(&mut indices.1)?.read(0, &mut read)?;
    if read != pattern {
        return Err("read-back differs from what was written".into());
    }
    println!("mapped, wrote, flushed and read back {BUFFER_SIZE} bytes per buffer");

    // A GPU-only image with a block of its own, allocated with VkMemoryDedicatedAllocateInfo naming it.
    let image_info = vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(vk::Format::R8G8B8A8_UNORM)
        .extent(vk::Extent3D { width: 1024, height: 1024, depth: 1 })
        .mip_levels(1)
        .array_layers(1)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(vk::ImageTiling::OPTIMAL)
        .usage(vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .initial_layout(vk::ImageLayout::UNDEFINED);
    let options =
        ResourceOptions::new("render target", MemoryLocation::GpuOnly).with_dedicated(Dedicated::Required);
    // SAFETY: the create info is valid and holds no pointers.
    let image = unsafe { allocator.create_image_with_options(&image_info, &options) }?;
    let named = allocator.with_block(&image.1, |block| block.dedicated_to())?;
    println!(
        "image   : dedicated {}, size {}, memory type {}, block names {:?}",
        image.1.is_dedicated(),
        image.1.size(),
        image.1.memory_type(),
        named
    );
    if !image.1.is_dedicated() {
        return Err("the GPU-only image did not get a dedicated block".into());
    }

    let device = allocator.device();
    for (heap, (budget, own)) in device.heap_budgets().iter().zip(device.own_usage()).enumerate() {
        println!(
            "heap {heap}: usage {} of budget {} bytes (memcarve's blocks: {own}; {})",
            budget.usage,
            budget.budget,
            if device.features().memory_budget {
                "VK_EXT_memory_budget"
            } else {
                "fallback: 80 % of the heap"
            }
        );
    }
    let diagnostics = allocator.diagnostics();
    println!(
        "counters: {} block(s) live, {} created, {} destroyed, {} reused, {} failures; committed {} bytes, used {}",
        allocator.block_count(),
        diagnostics.block_creations,
        diagnostics.block_destructions,
        diagnostics.block_reuses,
        diagnostics.failures,
        allocator.committed_bytes(),
        allocator.used_bytes()
    );

    // SAFETY: all three were made by this allocator and the device never used them.
    unsafe {
        allocator.destroy_buffer(vertices.0, vertices.1)?;
        allocator.destroy_buffer(indices.0, indices.1)?;
        allocator.destroy_image(image.0, image.1)?;
    }
    println!("destroyed everything; {} block(s) kept cached for reuse", allocator.block_count());
    Ok(())
}
