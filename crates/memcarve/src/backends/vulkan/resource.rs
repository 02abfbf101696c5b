//! Buffers and images with memory: create the object, ask the driver what memory it needs (and whether it wants
//! a block of its own), allocate in the pool of the object's class, bind. Invariant: a helper either returns a
//! bound object with its live allocation or leaves nothing behind (object destroyed, allocation freed).

use core::ffi::c_void;

use ash::vk;
use memcarve_core::ResourceClass;

use super::device::{
    BlockRequest, BlockRequestScope, DedicatedObject, ResourceRequirements, VulkanDevice, device_error,
};
use crate::allocator::{Allocation, Allocator};
use crate::device::{DeviceError, ExportKind};
use crate::error::{Error, Result};
use crate::policy::{AllocationDesc, AllocationOptions, Dedicated};

/// How a resource's memory is allocated: the memory-type options plus what only Vulkan has (priority,
/// export).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ResourceOptions<'a> {
    /// A debug name.
    pub name: &'a str,
    /// Memory-type options.
    pub options: AllocationOptions,
    /// At least this much of a block of its own; the driver's dedicated answer can raise it.
    pub dedicated: Dedicated,
    /// VK_EXT_memory_priority priority in `[0, 1]`. Priorities belong to blocks, so with the extension on a
    /// request with a priority prefers a block of its own; without the extension it is ignored.
    pub priority: Option<f32>,
    /// Make the memory exportable this way; the allocation is then always dedicated (and the resource is
    /// created with the matching external-memory info).
    pub export: Option<ExportKind>,
    /// An opaque value stored with the allocation.
    pub user_data: u64,
}

impl<'a> ResourceOptions<'a> {
    /// Options named `name` for `location` (a [`crate::MemoryLocation`] or [`AllocationOptions`]).
    pub fn new(name: &'a str, location: impl Into<AllocationOptions>) -> ResourceOptions<'a> {
        ResourceOptions {
            name,
            options: location.into(),
            dedicated: Dedicated::No,
            priority: None,
            export: None,
            user_data: 0,
        }
    }

    /// Sets the least dedicated choice.
    pub fn with_dedicated(mut self, dedicated: Dedicated) -> ResourceOptions<'a> {
        self.dedicated = dedicated;
        self
    }

    /// Sets the priority.
    pub fn with_priority(mut self, priority: f32) -> ResourceOptions<'a> {
        self.priority = Some(priority);
        self
    }

    /// Asks for exportable memory.
    pub fn with_export(mut self, export: ExportKind) -> ResourceOptions<'a> {
        self.export = Some(export);
        self
    }

    /// Sets the user data.
    pub fn with_user_data(mut self, user_data: u64) -> ResourceOptions<'a> {
        self.user_data = user_data;
        self
    }
}

const fn unsupported(reason: &'static str) -> Error {
    Error::Device(DeviceError::Unsupported(reason))
}

fn vulkan_error(result: vk::Result, call: &str) -> Error {
    Error::Device(device_error(result, call))
}

/// Whether a `pNext` chain holds a structure of type `s_type`.
///
/// # Safety
///
/// 1. `next` is null or the head of a valid Vulkan structure chain.
unsafe fn chain_contains(mut next: *const c_void, s_type: vk::StructureType) -> bool {
    while !next.is_null() {
        // SAFETY: (1) every element of a valid chain starts with `sType` and `pNext`, as `BaseInStructure`.
        let header = unsafe { &*next.cast::<vk::BaseInStructure<'_>>() };
        if header.s_type == s_type {
            return true;
        }
        next = header.p_next.cast();
    }
    false
}

/// The dedicated choice: the larger of what the caller asked, what the driver answered and what the feature
/// needs.
fn dedicated_choice(
    device: &VulkanDevice,
    options: &ResourceOptions<'_>,
    driver: &ResourceRequirements,
) -> Dedicated {
    if options.dedicated == Dedicated::Required || driver.requires_dedicated || options.export.is_some() {
        Dedicated::Required
    } else if options.dedicated == Dedicated::Preferred
        || driver.prefers_dedicated
        || (options.priority.is_some() && device.features().memory_priority)
    {
        Dedicated::Preferred
    } else {
        Dedicated::No
    }
}

impl Allocator<VulkanDevice> {
    /// Creates a buffer, allocates its memory by `location` and binds it. See
    /// [`Allocator::create_buffer_with_options`].
    ///
    /// # Safety
    ///
    /// As for [`Allocator::create_buffer_with_options`].
    pub unsafe fn create_buffer(
        &self,
        info: &vk::BufferCreateInfo<'_>,
        location: impl Into<AllocationOptions>,
    ) -> Result<(vk::Buffer, Allocation)> {
        // SAFETY: the caller upholds `create_buffer_with_options`'s conditions.
        unsafe { self.create_buffer_with_options(info, &ResourceOptions::new("buffer", location)) }
    }

    /// Creates a buffer, allocates its memory in the buffer pool of the best memory type (or a block of its
    /// own, when asked or when the driver requires or prefers it) and binds it at the allocation's offset.
    /// Sparse buffers are refused; buffers with `SHADER_DEVICE_ADDRESS` usage need
    /// [`super::VulkanFeatures::buffer_device_address`].
    ///
    /// # Safety
    ///
    /// 1. `info` is a valid `VkBufferCreateInfo` for this device (its pointers and `pNext` chain valid; with
    ///    `options.export`, its chain holds no `VkExternalMemoryBufferCreateInfo` other than one for opaque
    ///    file descriptors).
    /// 2. The allocation's memory is not freed while the device may still use the buffer: the safe
    ///    [`Allocator::free`] of the allocation, and dropping the allocator, free it at once, so release the
    ///    pair with [`Allocator::destroy_buffer`] once the device is done with it, or with
    ///    [`Allocator::destroy_buffer_after`] and a wait point.
    pub unsafe fn create_buffer_with_options(
        &self,
        info: &vk::BufferCreateInfo<'_>,
        options: &ResourceOptions<'_>,
    ) -> Result<(vk::Buffer, Allocation)> {
        self.process_deferred_quietly();
        let device = self.device();
        let sparse = vk::BufferCreateFlags::SPARSE_BINDING
            | vk::BufferCreateFlags::SPARSE_RESIDENCY
            | vk::BufferCreateFlags::SPARSE_ALIASED;
        if info.flags.intersects(sparse) {
            return Err(unsupported("sparse buffers are bound page by page; memcarve does not bind them"));
        }
        if info.usage.contains(vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS)
            && !device.features().buffer_device_address
        {
            return Err(unsupported("SHADER_DEVICE_ADDRESS buffers need buffer_device_address enabled"));
        }
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut create_info = *info;
        if options.export.is_some() {
            self.check_buffer_export(info)?;
            // SAFETY: (1) the caller promises a valid chain.
            if !unsafe { chain_contains(info.p_next, vk::StructureType::EXTERNAL_MEMORY_BUFFER_CREATE_INFO) }
            {
                external.p_next = info.p_next;
                create_info.p_next = (&raw const external).cast();
            }
        }
        // SAFETY: (1) the caller promises a valid create info; the external-memory info prepended to its chain
        // lives until the call returns and is allowed (export needs VK_KHR_external_memory_fd, checked).
        let buffer = unsafe { device.device().create_buffer(&create_info, None) }
            .map_err(|result| vulkan_error(result, "vkCreateBuffer"))?;
        // SAFETY: `buffer` was just created on this device.
        let requirements = unsafe { device.buffer_requirements(buffer) };
        let result = self.allocate_and_bind(
            DedicatedObject::Buffer(buffer),
            &requirements,
            ResourceClass::Buffer,
            options,
        );
        match result {
            Ok(allocation) => Ok((buffer, allocation)),
            Err(error) => {
                // SAFETY: the buffer was created above, is bound to nothing that stays (the allocation was freed
                // or never made) and was never handed out.
                unsafe { device.device().destroy_buffer(buffer, None) };
                Err(error)
            }
        }
    }

    /// Creates an image, allocates its memory by `location` and binds it. See
    /// [`Allocator::create_image_with_options`].
    ///
    /// # Safety
    ///
    /// As for [`Allocator::create_image_with_options`].
    pub unsafe fn create_image(
        &self,
        info: &vk::ImageCreateInfo<'_>,
        location: impl Into<AllocationOptions>,
    ) -> Result<(vk::Image, Allocation)> {
        // SAFETY: the caller upholds `create_image_with_options`'s conditions.
        unsafe { self.create_image_with_options(info, &ResourceOptions::new("image", location)) }
    }

    /// Creates an image and binds it to memory allocated in the pool of its class: linear images
    /// (`VK_IMAGE_TILING_LINEAR`) and optimal images share blocks only with their own class, and
    /// `bufferImageGranularity` is honoured. Sparse, disjoint (multi-planar, bound per plane) and
    /// DRM-format-modifier images are refused with [`DeviceError::Unsupported`].
    ///
    /// # Safety
    ///
    /// 1. `info` is a valid `VkImageCreateInfo` for this device (its pointers and `pNext` chain valid; with
    ///    `options.export`, its chain holds no `VkExternalMemoryImageCreateInfo` other than one for opaque
    ///    file descriptors).
    /// 2. As for [`Allocator::create_buffer_with_options`], for the image ([`Allocator::destroy_image`] or
    ///    [`Allocator::destroy_image_after`]).
    pub unsafe fn create_image_with_options(
        &self,
        info: &vk::ImageCreateInfo<'_>,
        options: &ResourceOptions<'_>,
    ) -> Result<(vk::Image, Allocation)> {
        self.process_deferred_quietly();
        let device = self.device();
        let sparse = vk::ImageCreateFlags::SPARSE_BINDING
            | vk::ImageCreateFlags::SPARSE_RESIDENCY
            | vk::ImageCreateFlags::SPARSE_ALIASED;
        if info.flags.intersects(sparse) {
            return Err(unsupported("sparse images are bound page by page; memcarve does not bind them"));
        }
        if info.flags.contains(vk::ImageCreateFlags::DISJOINT) {
            return Err(unsupported(
                "disjoint images need one binding per plane; memcarve does not bind them",
            ));
        }
        let class = match info.tiling {
            vk::ImageTiling::LINEAR => ResourceClass::LinearImage,
            vk::ImageTiling::OPTIMAL => ResourceClass::OptimalImage,
            vk::ImageTiling::DRM_FORMAT_MODIFIER_EXT => {
                return Err(unsupported("DRM-format-modifier images are for import and export of their own"));
            }
            _ => return Err(unsupported("unknown image tiling")),
        };
        let mut external = vk::ExternalMemoryImageCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut create_info = *info;
        if options.export.is_some() {
            self.check_image_export(info)?;
            // SAFETY: (1) the caller promises a valid chain.
            if !unsafe { chain_contains(info.p_next, vk::StructureType::EXTERNAL_MEMORY_IMAGE_CREATE_INFO) } {
                external.p_next = info.p_next;
                create_info.p_next = (&raw const external).cast();
            }
        }
        // SAFETY: (1) the caller promises a valid create info; the prepended external-memory info lives until
        // the call returns and is allowed (export needs VK_KHR_external_memory_fd, checked).
        let image = unsafe { device.device().create_image(&create_info, None) }
            .map_err(|result| vulkan_error(result, "vkCreateImage"))?;
        // SAFETY: `image` was just created on this device, not disjoint (refused above).
        let requirements = unsafe { device.image_requirements(image) };
        match self.allocate_and_bind(DedicatedObject::Image(image), &requirements, class, options) {
            Ok(allocation) => Ok((image, allocation)),
            Err(error) => {
                // SAFETY: the image was created above, is bound to nothing that stays and was never handed out.
                unsafe { device.device().destroy_image(image, None) };
                Err(error)
            }
        }
    }

    /// Destroys a buffer made by [`Allocator::create_buffer`], then frees its allocation. A foreign or freed
    /// allocation is an error, and then nothing is destroyed.
    ///
    /// # Safety
    ///
    /// 1. `buffer` was created with `allocation` by this allocator and is destroyed once.
    /// 2. The device no longer uses it (pending command buffers included); else see
    ///    [`Allocator::destroy_buffer_after`].
    pub unsafe fn destroy_buffer(&self, buffer: vk::Buffer, allocation: Allocation) -> Result<()> {
        self.with_block(&allocation, |_| ())?;
        // SAFETY: (1) and (2) by the caller.
        unsafe { self.device().device().destroy_buffer(buffer, None) };
        let freed = self.free(allocation);
        self.process_deferred_quietly();
        freed
    }

    /// Destroys an image made by [`Allocator::create_image`], then frees its allocation. A foreign or freed
    /// allocation is an error, and then nothing is destroyed.
    ///
    /// # Safety
    ///
    /// As for [`Allocator::destroy_buffer`], for the image.
    pub unsafe fn destroy_image(&self, image: vk::Image, allocation: Allocation) -> Result<()> {
        self.with_block(&allocation, |_| ())?;
        // SAFETY: by the caller, as for `destroy_buffer`.
        unsafe { self.device().device().destroy_image(image, None) };
        let freed = self.free(allocation);
        self.process_deferred_quietly();
        freed
    }

    /// Allocates memory for requirements the caller queried itself, for objects it creates and binds itself
    /// (class [`ResourceClass::Unknown`]: kept apart from every other class). Bind at
    /// [`Allocation::offset`] in [`Allocator::device_memory`]. A dedicated block names no object, so export is
    /// refused here (drivers may require exported memory to name its resource): use the create helpers.
    pub fn allocate_for_requirements(
        &self,
        requirements: &vk::MemoryRequirements,
        options: &ResourceOptions<'_>,
    ) -> Result<Allocation> {
        if options.export.is_some() {
            return Err(unsupported(
                "export needs the resource: use create_buffer or create_image with_export",
            ));
        }
        self.process_deferred_quietly();
        let driver = ResourceRequirements {
            requirements: *requirements,
            requires_dedicated: false,
            prefers_dedicated: false,
        };
        let dedicated = dedicated_choice(self.device(), options, &driver);
        self.allocate_with_request(None, requirements, ResourceClass::Unknown, dedicated, options)
    }

    /// The `VkDeviceMemory` that holds `allocation`.
    pub fn device_memory(&self, allocation: &Allocation) -> Result<vk::DeviceMemory> {
        self.with_block(allocation, |block| block.memory())
    }

    /// A new opaque file descriptor for the memory of an allocation made with [`ResourceOptions::with_export`]
    /// (`vkGetMemoryFdKHR`); the caller owns it (CUDA imports it with `cudaImportExternalMemory`).
    #[cfg(unix)]
    pub fn export_fd(&self, allocation: &Allocation) -> Result<std::os::fd::OwnedFd> {
        use std::os::fd::{FromRawFd, OwnedFd};

        let device = self.device();
        let functions = device
            .external_memory_fd()
            .ok_or(unsupported("memory export needs VK_KHR_external_memory_fd"))?;
        let (memory, export) = self.with_block(allocation, |block| (block.memory(), block.export()))?;
        if export != Some(ExportKind::OpaqueFd) {
            return Err(unsupported("the allocation was not made exportable (ResourceOptions::with_export)"));
        }
        let info = vk::MemoryGetFdInfoKHR::default()
            .memory(memory)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        // SAFETY: the memory is a live block of this device (the allocation holds it) allocated with
        // VkExportMemoryAllocateInfo for OPAQUE_FD, as vkGetMemoryFdKHR requires.
        let fd =
            unsafe { functions.get_memory_fd(&info) }.map_err(|r| vulkan_error(r, "vkGetMemoryFdKHR"))?;
        if fd < 0 {
            return Err(Error::Device(DeviceError::Other("vkGetMemoryFdKHR returned no descriptor".into())));
        }
        // SAFETY: vkGetMemoryFdKHR returns a new file descriptor that the caller owns and must close.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn check_buffer_export(&self, info: &vk::BufferCreateInfo<'_>) -> Result<()> {
        let device = self.device();
        if device.external_memory_fd().is_none() {
            return Err(unsupported("memory export needs VK_KHR_external_memory_fd"));
        }
        let query = vk::PhysicalDeviceExternalBufferInfo::default()
            .flags(info.flags)
            .usage(info.usage)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut properties = vk::ExternalBufferProperties::default();
        // SAFETY: the physical device is valid for the device's lifetime; Vulkan 1.1 is available (the export
        // feature requires it, checked in `VulkanDevice::new`).
        unsafe {
            device.instance().get_physical_device_external_buffer_properties(
                device.physical_device(),
                &query,
                &mut properties,
            )
        };
        let features = properties.external_memory_properties.external_memory_features;
        if !features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
            return Err(unsupported("the device cannot export buffers of this usage as opaque fds"));
        }
        Ok(())
    }

    fn check_image_export(&self, info: &vk::ImageCreateInfo<'_>) -> Result<()> {
        let device = self.device();
        if device.external_memory_fd().is_none() {
            return Err(unsupported("memory export needs VK_KHR_external_memory_fd"));
        }
        let mut external_info = vk::PhysicalDeviceExternalImageFormatInfo::default()
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let query = vk::PhysicalDeviceImageFormatInfo2::default()
            .format(info.format)
            .ty(info.image_type)
            .tiling(info.tiling)
            .usage(info.usage)
            .flags(info.flags)
            .push_next(&mut external_info);
        let mut external_properties = vk::ExternalImageFormatProperties::default();
        let mut properties = vk::ImageFormatProperties2::default().push_next(&mut external_properties);
        // SAFETY: as in `check_buffer_export`; both chains are well formed and allowed with
        // VK_KHR_external_memory_fd.
        let supported = unsafe {
            device.instance().get_physical_device_image_format_properties2(
                device.physical_device(),
                &query,
                &mut properties,
            )
        };
        if supported.is_err() {
            return Err(unsupported(
                "the device cannot export images of this format and usage as opaque fds",
            ));
        }
        let features = external_properties.external_memory_properties.external_memory_features;
        if !features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
            return Err(unsupported(
                "the device cannot export images of this format and usage as opaque fds",
            ));
        }
        Ok(())
    }

    /// Allocates for `object` and binds it; on failure the allocation is freed (the object is the caller's).
    fn allocate_and_bind(
        &self,
        object: DedicatedObject,
        requirements: &ResourceRequirements,
        class: ResourceClass,
        options: &ResourceOptions<'_>,
    ) -> Result<Allocation> {
        let device = self.device();
        let dedicated = dedicated_choice(device, options, requirements);
        let allocation =
            self.allocate_with_request(Some(object), &requirements.requirements, class, dedicated, options)?;
        let (memory, dedicated_to) =
            match self.with_block(&allocation, |block| (block.memory(), block.dedicated_to())) {
                Ok(found) => found,
                Err(error) => {
                    let _ = self.free(allocation);
                    return Err(error);
                }
            };
        // A block named for another object must never be bound; one the driver requires for this object must
        // name it (on Vulkan 1.0 there is no naming, and no driver answer either).
        let misplaced = dedicated_to.is_some_and(|named| named != object)
            || (requirements.requires_dedicated && dedicated_to != Some(object));
        if misplaced {
            let _ = self.free(allocation);
            return Err(Error::Device(DeviceError::Other(
                "the dedicated block does not name its resource".into(),
            )));
        }
        let bound = match object {
            // SAFETY: the buffer is valid and unbound (just created by the caller); the memory is live and of a
            // type in the buffer's `memoryTypeBits`; the offset honours the required alignment and the
            // allocation covers the required size; a dedicated block names this buffer (checked above).
            DedicatedObject::Buffer(buffer) => unsafe {
                device.device().bind_buffer_memory(buffer, memory, allocation.offset())
            },
            // SAFETY: as for the buffer, for the image (not disjoint, so bound whole).
            DedicatedObject::Image(image) => unsafe {
                device.device().bind_image_memory(image, memory, allocation.offset())
            },
        };
        match bound {
            Ok(()) => Ok(allocation),
            Err(result) => {
                let _ = self.free(allocation);
                Err(vulkan_error(result, "vkBind*Memory"))
            }
        }
    }

    /// Allocates, passing the object, export and priority to a dedicated block through a
    /// [`BlockRequestScope`].
    fn allocate_with_request(
        &self,
        object: Option<DedicatedObject>,
        requirements: &vk::MemoryRequirements,
        class: ResourceClass,
        dedicated: Dedicated,
        options: &ResourceOptions<'_>,
    ) -> Result<Allocation> {
        let desc = AllocationDesc::new(options.name, requirements.size, options.options)
            .with_alignment(requirements.alignment.max(1))
            .with_memory_type_bits(requirements.memory_type_bits)
            .with_class(class)
            .with_dedicated(dedicated)
            .with_user_data(options.user_data);
        let device = self.device();
        let _scope = (dedicated != Dedicated::No).then(|| {
            BlockRequestScope::enter(BlockRequest {
                device: device.device().handle(),
                dedicated_to: object,
                export: options.export,
                priority: options.priority,
            })
        });
        let allocation = self.allocate(&desc)?;
        if options.export.is_some() {
            let exportable = self.with_block(&allocation, |block| block.export() == options.export);
            if exportable != Ok(true) {
                let _ = self.free(allocation);
                return Err(unsupported("the allocator gave a block that is not exportable"));
            }
        }
        Ok(allocation)
    }
}
