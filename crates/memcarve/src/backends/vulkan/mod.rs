//! The Vulkan backend (feature `vulkan`), over ash: [`VulkanDevice`] is memcarve's [`crate::Device`] for a
//! `VkDevice` (blocks are `VkDeviceMemory`), and `Allocator<VulkanDevice>` gains buffer and image helpers that
//! create, allocate, bind and destroy, plus frees deferred until a fence or timeline value is reached.
//! Invariant: memcarve binds only resources it can bind whole at one offset (no sparse, disjoint or
//! DRM-format-modifier images), and a dedicated block is only ever bound to the object it names.
//!
//! ```no_run
//! use std::sync::Arc;
//! use ash::vk;
//! use memcarve::backends::vulkan::{VulkanContext, VulkanContextDesc, VulkanDevice};
//! use memcarve::{Allocator, AllocatorConfig, MemoryLocation};
//!
//! let context = Arc::new(VulkanContext::new(&VulkanContextDesc::default())?);
//! let allocator = Allocator::new(VulkanDevice::from_context(context)?, AllocatorConfig::default())?;
//! let info = vk::BufferCreateInfo::default().size(64 << 10).usage(vk::BufferUsageFlags::TRANSFER_SRC);
//! // SAFETY: the create info is valid and holds no pointers.
//! let (buffer, mut allocation) = unsafe { allocator.create_buffer(&info, MemoryLocation::CpuToGpu)? };
//! allocator.map(&mut allocation)?.write(0, b"hello")?;
//! // SAFETY: the device never used the buffer.
//! unsafe { allocator.destroy_buffer(buffer, allocation)? };
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod context;
mod deferred;
mod device;
mod resource;

pub use ash;
pub use context::{
    ContextError, Severity, ValidationLog, ValidationMessage, VulkanContext, VulkanContextDesc,
};
pub use deferred::{DeferRejected, DeferredResource, WaitPoint};
pub use device::{
    DedicatedObject, ResourceRequirements, VulkanBlock, VulkanDevice, VulkanDeviceDesc, VulkanFeatures,
};
pub use resource::ResourceOptions;
