//! [`VulkanDevice`]: memcarve's [`Device`] over an ash `VkDevice`. A block is one `VkDeviceMemory`; budgets come
//! from VK_EXT_memory_budget when it is enabled, else from 80 % of each heap against memcarve's own usage.
//! Invariant: `own_usage[h]` is the sum of the sizes of the live blocks this device allocated from heap `h`.

use core::ffi::CStr;
use core::ptr::NonNull;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ash::vk;

use super::context::VulkanContext;
use super::deferred::DeferredQueue;
use crate::device::{
    BlockDesc, Device, DeviceError, DeviceLimits, ExportKind, HeapBudget, MemoryHeap, MemoryHeapFlags,
    MemoryProperties, MemoryPropertyFlags, MemoryType, NoVirtualMemory,
};

/// Block operations between two automatic budget queries (VK_EXT_memory_budget): often enough to follow other
/// processes, rarely enough that the query (a driver call) never shows in allocation times.
const BUDGET_REFRESH_INTERVAL: u64 = 32;

/// Without VK_EXT_memory_budget, this fraction of each heap (in fifths) counts as the budget, as VMA does.
const FALLBACK_BUDGET_FIFTHS: u64 = 4;

/// Which optional Vulkan extensions and features the `VkDevice` was created with. memcarve uses only what is
/// marked here; the rest falls back (see each field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct VulkanFeatures {
    /// VK_EXT_memory_budget: real heap budgets and usage. Without it: 80 % of each heap, memcarve's own usage.
    pub memory_budget: bool,
    /// VK_EXT_memory_priority with its `memoryPriority` feature: blocks carry a priority. Without it,
    /// priorities are ignored.
    pub memory_priority: bool,
    /// The `bufferDeviceAddress` feature (Vulkan 1.2 or VK_KHR_buffer_device_address): every block is
    /// allocated with `VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT`, so buffers with `SHADER_DEVICE_ADDRESS` usage
    /// can be bound anywhere. Without it such buffers are refused.
    pub buffer_device_address: bool,
    /// VK_KHR_external_memory_fd: exportable dedicated allocations and their opaque file descriptors.
    /// Without it export requests are refused.
    pub external_memory_fd: bool,
    /// The `timelineSemaphore` feature (Vulkan 1.2): deferred frees may wait on timeline values. Without it
    /// only fences are accepted.
    pub timeline_semaphore: bool,
}

impl VulkanFeatures {
    /// Nothing optional enabled.
    pub const NONE: VulkanFeatures = VulkanFeatures {
        memory_budget: false,
        memory_priority: false,
        buffer_device_address: false,
        external_memory_fd: false,
        timeline_semaphore: false,
    };

    /// Everything that memcarve can use (for narrowing with [`VulkanFeatures::intersection`]).
    pub const ALL: VulkanFeatures = VulkanFeatures {
        memory_budget: true,
        memory_priority: true,
        buffer_device_address: true,
        external_memory_fd: true,
        timeline_semaphore: true,
    };

    /// Sets [`VulkanFeatures::memory_budget`].
    pub const fn with_memory_budget(mut self, on: bool) -> VulkanFeatures {
        self.memory_budget = on;
        self
    }

    /// Sets [`VulkanFeatures::memory_priority`].
    pub const fn with_memory_priority(mut self, on: bool) -> VulkanFeatures {
        self.memory_priority = on;
        self
    }

    /// Sets [`VulkanFeatures::buffer_device_address`].
    pub const fn with_buffer_device_address(mut self, on: bool) -> VulkanFeatures {
        self.buffer_device_address = on;
        self
    }

    /// Sets [`VulkanFeatures::external_memory_fd`].
    pub const fn with_external_memory_fd(mut self, on: bool) -> VulkanFeatures {
        self.external_memory_fd = on;
        self
    }

    /// Sets [`VulkanFeatures::timeline_semaphore`].
    pub const fn with_timeline_semaphore(mut self, on: bool) -> VulkanFeatures {
        self.timeline_semaphore = on;
        self
    }

    /// Features on in both.
    pub const fn intersection(self, other: VulkanFeatures) -> VulkanFeatures {
        VulkanFeatures {
            memory_budget: self.memory_budget && other.memory_budget,
            memory_priority: self.memory_priority && other.memory_priority,
            buffer_device_address: self.buffer_device_address && other.buffer_device_address,
            external_memory_fd: self.external_memory_fd && other.external_memory_fd,
            timeline_semaphore: self.timeline_semaphore && other.timeline_semaphore,
        }
    }
}

/// How to build a [`VulkanDevice`] over objects the caller created.
#[derive(Clone)]
#[non_exhaustive]
pub struct VulkanDeviceDesc {
    /// The instance the device was created from.
    pub instance: ash::Instance,
    /// The physical device of `device`.
    pub physical_device: vk::PhysicalDevice,
    /// The logical device whose memory memcarve manages.
    pub device: ash::Device,
    /// `VkApplicationInfo::apiVersion` of the instance. memcarve uses the lower of this and the physical
    /// device's version: Vulkan 1.1 for dedicated-allocation queries, 1.2 for timeline semaphores.
    pub api_version: u32,
    /// Extensions and features enabled on `device`.
    pub features: VulkanFeatures,
    /// Priority of blocks (VK_EXT_memory_priority) when a request names none, in `[0, 1]`. Default 0.5.
    pub default_priority: f32,
}

impl core::fmt::Debug for VulkanDeviceDesc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VulkanDeviceDesc")
            .field("instance", &self.instance.handle())
            .field("physical_device", &self.physical_device)
            .field("device", &self.device.handle())
            .field("api_version", &format_version(self.api_version))
            .field("features", &self.features)
            .field("default_priority", &self.default_priority)
            .finish()
    }
}

impl VulkanDeviceDesc {
    /// A description with no optional features and default priority 0.5.
    pub fn new(
        instance: ash::Instance,
        physical_device: vk::PhysicalDevice,
        device: ash::Device,
        api_version: u32,
    ) -> VulkanDeviceDesc {
        VulkanDeviceDesc {
            instance,
            physical_device,
            device,
            api_version,
            features: VulkanFeatures::NONE,
            default_priority: DEFAULT_PRIORITY,
        }
    }

    /// Sets the enabled features.
    pub fn with_features(mut self, features: VulkanFeatures) -> VulkanDeviceDesc {
        self.features = features;
        self
    }

    /// Sets the default block priority.
    pub fn with_default_priority(mut self, priority: f32) -> VulkanDeviceDesc {
        self.default_priority = priority;
        self
    }
}

/// The object a dedicated block was allocated for (named in its `VkMemoryDedicatedAllocateInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DedicatedObject {
    /// A buffer.
    Buffer(vk::Buffer),
    /// An image.
    Image(vk::Image),
}

/// One memory block: a `VkDeviceMemory` and how it was allocated.
#[derive(Debug)]
pub struct VulkanBlock {
    memory: vk::DeviceMemory,
    size: u64,
    memory_type: u32,
    heap: u32,
    dedicated_to: Option<DedicatedObject>,
    export: Option<ExportKind>,
    device_address: bool,
    priority: Option<f32>,
}

impl VulkanBlock {
    /// The `VkDeviceMemory` (to bind resources to).
    pub fn memory(&self) -> vk::DeviceMemory {
        self.memory
    }

    /// Bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Memory type index.
    pub fn memory_type(&self) -> u32 {
        self.memory_type
    }

    /// The object named in its `VkMemoryDedicatedAllocateInfo`, if it was allocated for one.
    pub fn dedicated_to(&self) -> Option<DedicatedObject> {
        self.dedicated_to
    }

    /// How it can be exported, if it was allocated exportable.
    pub fn export(&self) -> Option<ExportKind> {
        self.export
    }

    /// Whether it was allocated with `VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT`.
    pub fn has_device_address(&self) -> bool {
        self.device_address
    }

    /// Its VK_EXT_memory_priority priority, if it was given one.
    pub fn priority(&self) -> Option<f32> {
        self.priority
    }
}

/// What the resource helpers want of the dedicated block the allocator may create during one request. The
/// Device trait's `BlockDesc` has no room for the object to name, so the helpers pass it on the side: see
/// [`BlockRequestScope`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct BlockRequest {
    /// The `VkDevice` the request is for: another device's `create_block` on this thread ignores it.
    pub device: vk::Device,
    /// The object to name in `VkMemoryDedicatedAllocateInfo`.
    pub dedicated_to: Option<DedicatedObject>,
    /// Make the block exportable.
    pub export: Option<ExportKind>,
    /// The block's priority.
    pub priority: Option<f32>,
}

thread_local! {
    /// The request of the resource helper running on this thread, if any, with how deep in device-memory
    /// callbacks the thread was when it was made: a block made at another depth (an allocation a callback makes
    /// while the request's own allocation is under way) ignores it.
    static BLOCK_REQUEST: Cell<Option<(BlockRequest, u32)>> = const { Cell::new(None) };
}

/// Sets this thread's [`BlockRequest`] for the duration of one `Allocator::allocate` call and restores the
/// previous one when dropped.
///
/// Why this is sound: `Allocator::allocate` creates blocks on the calling thread, and creates at most one
/// successful block with `BlockDesc::dedicated` set per request (a failed attempt creates nothing and may be
/// retried), so the request reaches exactly the dedicated block of the allocation being made; the first
/// successful dedicated block consumes it. Pooled blocks (`dedicated == false`) never take it. The one way
/// the allocator runs other code meanwhile is a device-memory callback (a block destroyed to make room), which
/// may allocate on this thread: the request is matched only at the callback depth it was made at, so such an
/// allocation neither takes it nor uses it up. The helpers still check the resulting block (`dedicated_to`)
/// before binding, so if the allocator ever created blocks elsewhere, they would fail with an error instead of
/// binding wrongly.
pub(super) struct BlockRequestScope {
    previous: Option<(BlockRequest, u32)>,
}

impl BlockRequestScope {
    pub(super) fn enter(request: BlockRequest) -> BlockRequestScope {
        let entry = (request, crate::allocator::callback_depth());
        BlockRequestScope { previous: BLOCK_REQUEST.with(|slot| slot.replace(Some(entry))) }
    }
}

impl Drop for BlockRequestScope {
    fn drop(&mut self) {
        BLOCK_REQUEST.with(|slot| slot.set(self.previous));
    }
}

fn current_request(device: vk::Device) -> Option<BlockRequest> {
    let depth = crate::allocator::callback_depth();
    BLOCK_REQUEST
        .with(Cell::get)
        .filter(|(request, at)| request.device == device && *at == depth)
        .map(|(request, _)| request)
}

/// Budgets read by the last VK_EXT_memory_budget query, and memcarve's own usage at that moment.
#[derive(Debug, Default)]
struct BudgetSnapshot {
    budgets: Vec<HeapBudget>,
    own_usage: Vec<u64>,
}

/// A Vulkan device as memcarve's [`Device`]: blocks are `VkDeviceMemory` objects.
pub struct VulkanDevice {
    instance: ash::Instance,
    physical_device: vk::PhysicalDevice,
    device: ash::Device,
    external_memory_fd: Option<ash::khr::external_memory_fd::Device>,
    api_version: u32,
    features: VulkanFeatures,
    default_priority: f32,
    device_name: String,
    properties: MemoryProperties,
    own_usage: Vec<AtomicU64>,
    budget: Mutex<BudgetSnapshot>,
    operations_since_refresh: AtomicU64,
    pub(super) deferred: DeferredQueue,
    /// Keeps the context (instance and device) alive while this device lives; None for caller-owned handles.
    /// Declared last: fields drop in order, so the context goes after everything that uses it.
    context: Option<Arc<VulkanContext>>,
}

impl core::fmt::Debug for VulkanDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VulkanDevice")
            .field("device", &self.device.handle())
            .field("name", &self.device_name)
            .field("api_version", &format_version(self.api_version))
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

/// `major.minor.patch` of a Vulkan version number.
pub(super) fn format_version(version: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(version),
        vk::api_version_minor(version),
        vk::api_version_patch(version)
    )
}

/// The memory priority of blocks no one asked a priority for (Vulkan's own default).
const DEFAULT_PRIORITY: f32 = 0.5;

/// A memory priority Vulkan accepts (`[0, 1]`): clamped, and `fallback` for NaN, which `clamp` would pass on.
fn valid_priority(priority: f32, fallback: f32) -> f32 {
    if priority.is_nan() { fallback } else { priority.clamp(0.0, 1.0) }
}

/// Whether `version` is at least `major.minor`.
pub(super) fn version_at_least(version: u32, major: u32, minor: u32) -> bool {
    (vk::api_version_major(version), vk::api_version_minor(version)) >= (major, minor)
}

/// A Vulkan error code as a [`DeviceError`].
pub(super) fn device_error(result: vk::Result, call: &str) -> DeviceError {
    match result {
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => DeviceError::OutOfDeviceMemory,
        vk::Result::ERROR_OUT_OF_HOST_MEMORY => DeviceError::OutOfHostMemory,
        vk::Result::ERROR_TOO_MANY_OBJECTS => DeviceError::TooManyObjects,
        other => DeviceError::Other(format!("{call} failed: {other}")),
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these locks are held, so a poisoned lock still guards consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl VulkanDevice {
    /// A device over caller-owned Vulkan objects. Refuses features whose extension the physical device lacks
    /// or whose Vulkan version is below what memcarve needs (1.1 for memory budget and export, 1.2 for
    /// timeline semaphores), with [`DeviceError::Unsupported`].
    ///
    /// # Safety
    ///
    /// 1. `desc.instance`, `desc.physical_device` and `desc.device` are valid; `device` was created from
    ///    `physical_device`, which belongs to `instance`.
    /// 2. They outlive the returned device and every allocator over it.
    /// 3. Every feature marked in `desc.features` was enabled when `device` was created, and
    ///    `desc.api_version` is the apiVersion the instance was created with.
    pub unsafe fn new(desc: VulkanDeviceDesc) -> Result<VulkanDevice, DeviceError> {
        // SAFETY: (1) the caller promises valid handles; the rest of `VulkanDevice::new`'s conditions are
        // passed through to `with_context`'s.
        unsafe { VulkanDevice::with_context(desc, None) }
    }

    /// A device over a [`VulkanContext`], which it keeps alive: the context's features and version are used.
    pub fn from_context(context: Arc<VulkanContext>) -> Result<VulkanDevice, DeviceError> {
        let (api_version, features) = (context.api_version(), context.features());
        VulkanDevice::from_context_restricted(context, api_version, features)
    }

    /// A device over a [`VulkanContext`] using at most `api_version` and the features of `features` that the
    /// context enabled (to test fallbacks on a device that has more).
    pub fn from_context_restricted(
        context: Arc<VulkanContext>,
        api_version: u32,
        features: VulkanFeatures,
    ) -> Result<VulkanDevice, DeviceError> {
        let desc = VulkanDeviceDesc::new(
            context.instance().clone(),
            context.physical_device(),
            context.device().clone(),
            api_version.min(context.api_version()),
        )
        .with_features(features.intersection(context.features()));
        // SAFETY: (1) the context created these handles from one another and destroys them only when dropped;
        // (2) the device keeps the context alive through the `Arc` it stores; (3) the features are those the
        // context enabled (intersected), and the version is at most the instance's.
        unsafe { VulkanDevice::with_context(desc, Some(context)) }
    }

    /// # Safety
    ///
    /// As for [`VulkanDevice::new`]; with a context, (2) holds through the stored `Arc`.
    unsafe fn with_context(
        desc: VulkanDeviceDesc,
        context: Option<Arc<VulkanContext>>,
    ) -> Result<VulkanDevice, DeviceError> {
        let instance = &desc.instance;
        // SAFETY: the caller promises `physical_device` is a valid handle of `instance` (condition 1).
        let device_properties = unsafe { instance.get_physical_device_properties(desc.physical_device) };
        let api_version = desc.api_version.min(device_properties.api_version);
        // SAFETY: as above.
        let extensions = unsafe { instance.enumerate_device_extension_properties(desc.physical_device) }
            .map_err(|result| device_error(result, "vkEnumerateDeviceExtensionProperties"))?;
        let has_extension =
            |name: &CStr| extensions.iter().any(|ext| ext.extension_name_as_c_str().is_ok_and(|n| n == name));

        let features = desc.features;
        let v1_1 = version_at_least(api_version, 1, 1);
        let v1_2 = version_at_least(api_version, 1, 2);
        if features.memory_budget && !(v1_1 && has_extension(ash::ext::memory_budget::NAME)) {
            return Err(DeviceError::Unsupported("VK_EXT_memory_budget (with Vulkan 1.1) is not available"));
        }
        if features.memory_priority && !has_extension(ash::ext::memory_priority::NAME) {
            return Err(DeviceError::Unsupported("VK_EXT_memory_priority is not available"));
        }
        if features.buffer_device_address
            && !(v1_2 || (v1_1 && has_extension(ash::khr::buffer_device_address::NAME)))
        {
            return Err(DeviceError::Unsupported("buffer device address needs Vulkan 1.2 or the extension"));
        }
        if features.external_memory_fd && !(v1_1 && has_extension(ash::khr::external_memory_fd::NAME)) {
            return Err(DeviceError::Unsupported(
                "VK_KHR_external_memory_fd (with Vulkan 1.1) is not available",
            ));
        }
        if features.timeline_semaphore && !v1_2 {
            return Err(DeviceError::Unsupported("timeline semaphores need Vulkan 1.2"));
        }

        // SAFETY: as above.
        let memory = unsafe { instance.get_physical_device_memory_properties(desc.physical_device) };
        let max_allocation_size = if v1_1 {
            let mut maintenance3 = vk::PhysicalDeviceMaintenance3Properties::default();
            let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut maintenance3);
            // SAFETY: the handle is valid (condition 1) and Vulkan 1.1 is available on instance and device
            // (checked above), so vkGetPhysicalDeviceProperties2 is loaded; the output chain is well formed.
            unsafe { instance.get_physical_device_properties2(desc.physical_device, &mut properties2) };
            maintenance3.max_memory_allocation_size
        } else {
            u64::MAX
        };
        let heaps: Vec<MemoryHeap> = memory
            .memory_heaps_as_slice()
            .iter()
            .map(|heap| MemoryHeap {
                size: heap.size,
                flags: MemoryHeapFlags::from_bits_truncate(heap.flags.as_raw()),
            })
            .collect();
        let types = memory
            .memory_types_as_slice()
            .iter()
            .map(|ty| MemoryType {
                heap_index: ty.heap_index,
                flags: MemoryPropertyFlags::from_bits_truncate(ty.property_flags.as_raw()),
            })
            .collect();
        let largest_heap = heaps.iter().map(|heap| heap.size).max().unwrap_or(0);
        let limits = &device_properties.limits;
        let properties = MemoryProperties {
            heaps,
            types,
            limits: DeviceLimits::new(
                limits.buffer_image_granularity.max(1),
                limits.non_coherent_atom_size.max(1),
                limits.max_memory_allocation_count,
                max_allocation_size.min(largest_heap),
            ),
        };
        let external_memory_fd = features
            .external_memory_fd
            .then(|| ash::khr::external_memory_fd::Device::new(instance, &desc.device));
        let device_name = device_properties
            .device_name_as_c_str()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let heap_count = properties.heaps.len();
        let device = VulkanDevice {
            instance: desc.instance.clone(),
            physical_device: desc.physical_device,
            device: desc.device.clone(),
            external_memory_fd,
            api_version,
            features,
            default_priority: valid_priority(desc.default_priority, DEFAULT_PRIORITY),
            device_name,
            properties,
            own_usage: (0..heap_count).map(|_| AtomicU64::new(0)).collect(),
            budget: Mutex::new(BudgetSnapshot::default()),
            operations_since_refresh: AtomicU64::new(0),
            deferred: DeferredQueue::default(),
            context,
        };
        device.refresh_budget();
        Ok(device)
    }

    /// The context this device keeps alive, when it was made by [`VulkanDevice::from_context`].
    pub fn context(&self) -> Option<&Arc<VulkanContext>> {
        self.context.as_ref()
    }

    /// The ash device.
    pub fn device(&self) -> &ash::Device {
        &self.device
    }

    /// The ash instance.
    pub fn instance(&self) -> &ash::Instance {
        &self.instance
    }

    /// The physical device.
    pub fn physical_device(&self) -> vk::PhysicalDevice {
        self.physical_device
    }

    /// The Vulkan version memcarve uses: the lower of the instance's and the physical device's.
    pub fn api_version(&self) -> u32 {
        self.api_version
    }

    /// The optional features in use.
    pub fn features(&self) -> VulkanFeatures {
        self.features
    }

    /// The physical device's name.
    pub fn name(&self) -> &str {
        &self.device_name
    }

    /// Bytes of live blocks memcarve allocated from each heap.
    pub fn own_usage(&self) -> Vec<u64> {
        self.own_usage.iter().map(|usage| usage.load(Ordering::Relaxed)).collect()
    }

    /// Queries VK_EXT_memory_budget now (it is also queried every few block operations on its own). Without
    /// the extension there is nothing to query: budgets are 80 % of each heap.
    pub fn refresh_budget(&self) {
        if !self.features.memory_budget {
            return;
        }
        let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
        let mut properties2 = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
        // SAFETY: the physical device is valid for this device's lifetime (`new`'s conditions 1 and 2);
        // VK_EXT_memory_budget and Vulkan 1.1 were checked in `new`, so the function is loaded and the chained
        // structure is allowed; the output chain is well formed.
        unsafe {
            self.instance.get_physical_device_memory_properties2(self.physical_device, &mut properties2)
        };
        let own_usage = self.own_usage();
        let budgets = (0..self.properties.heaps.len())
            .map(|heap| HeapBudget {
                usage: budget.heap_usage.get(heap).copied().unwrap_or(0),
                budget: budget
                    .heap_budget
                    .get(heap)
                    .copied()
                    .unwrap_or(0)
                    .min(self.properties.heaps[heap].size),
            })
            .collect();
        *lock(&self.budget) = BudgetSnapshot { budgets, own_usage };
        self.operations_since_refresh.store(0, Ordering::Relaxed);
    }

    /// The memory requirements of `buffer`, with the driver's dedicated-allocation answer on Vulkan 1.1+.
    ///
    /// # Safety
    ///
    /// 1. `buffer` is a valid buffer of this device.
    pub unsafe fn buffer_requirements(&self, buffer: vk::Buffer) -> ResourceRequirements {
        if !version_at_least(self.api_version, 1, 1) {
            // SAFETY: (1) the caller promises a valid buffer of this device.
            let requirements = unsafe { self.device.get_buffer_memory_requirements(buffer) };
            return ResourceRequirements::plain(requirements);
        }
        let info = vk::BufferMemoryRequirementsInfo2::default().buffer(buffer);
        let mut dedicated = vk::MemoryDedicatedRequirements::default();
        let mut requirements2 = vk::MemoryRequirements2::default().push_next(&mut dedicated);
        // SAFETY: (1) the caller promises a valid buffer; Vulkan 1.1 is available (checked above), so the
        // function is loaded and VkMemoryDedicatedRequirements may be chained.
        unsafe { self.device.get_buffer_memory_requirements2(&info, &mut requirements2) };
        let requirements = requirements2.memory_requirements;
        ResourceRequirements::with_dedicated(requirements, &dedicated)
    }

    /// The memory requirements of `image`, with the driver's dedicated-allocation answer on Vulkan 1.1+.
    ///
    /// # Safety
    ///
    /// 1. `image` is a valid image of this device, not created disjoint.
    pub unsafe fn image_requirements(&self, image: vk::Image) -> ResourceRequirements {
        if !version_at_least(self.api_version, 1, 1) {
            // SAFETY: (1) the caller promises a valid, non-disjoint image of this device.
            let requirements = unsafe { self.device.get_image_memory_requirements(image) };
            return ResourceRequirements::plain(requirements);
        }
        let info = vk::ImageMemoryRequirementsInfo2::default().image(image);
        let mut dedicated = vk::MemoryDedicatedRequirements::default();
        let mut requirements2 = vk::MemoryRequirements2::default().push_next(&mut dedicated);
        // SAFETY: (1) the caller promises a valid, non-disjoint image (so no plane info is needed); Vulkan 1.1
        // is available (checked above).
        unsafe { self.device.get_image_memory_requirements2(&info, &mut requirements2) };
        let requirements = requirements2.memory_requirements;
        ResourceRequirements::with_dedicated(requirements, &dedicated)
    }

    /// The VK_KHR_external_memory_fd functions, when that feature is on.
    pub(super) fn external_memory_fd(&self) -> Option<&ash::khr::external_memory_fd::Device> {
        self.external_memory_fd.as_ref()
    }

    fn heap_of(&self, memory_type: u32) -> Option<u32> {
        self.properties.types.get(memory_type as usize).map(|ty| ty.heap_index)
    }

    fn count_operation(&self) {
        self.operations_since_refresh.fetch_add(1, Ordering::Relaxed);
    }
}

/// A resource's memory requirements and the driver's dedicated-allocation answer.
#[derive(Debug, Clone, Copy)]
pub struct ResourceRequirements {
    /// Size, alignment and acceptable memory types.
    pub requirements: vk::MemoryRequirements,
    /// The driver requires a block of its own (`requiresDedicatedAllocation`).
    pub requires_dedicated: bool,
    /// The driver performs better with a block of its own (`prefersDedicatedAllocation`).
    pub prefers_dedicated: bool,
}

impl ResourceRequirements {
    fn plain(requirements: vk::MemoryRequirements) -> ResourceRequirements {
        ResourceRequirements { requirements, requires_dedicated: false, prefers_dedicated: false }
    }

    fn with_dedicated(
        requirements: vk::MemoryRequirements,
        dedicated: &vk::MemoryDedicatedRequirements<'_>,
    ) -> ResourceRequirements {
        ResourceRequirements {
            requirements,
            requires_dedicated: dedicated.requires_dedicated_allocation == vk::TRUE,
            prefers_dedicated: dedicated.prefers_dedicated_allocation == vk::TRUE,
        }
    }
}

// SAFETY: (1) `properties` is read once in `new` and never changes; Vulkan allocates memory of type `t` from
// heap `memoryTypes[t].heapIndex`. (2) vkAllocateMemory returns a new `VkDeviceMemory` of exactly
// `allocationSize = desc.size` bytes that aliases no other live allocation, valid until vkFreeMemory in
// `destroy_block`. (3) `map` maps the whole block (`VK_WHOLE_SIZE`) and checks the 64-byte alignment itself
// (Vulkan guarantees `minMemoryMapAlignment` >= 64 anyway); the pointer stays valid until vkUnmapMemory or
// vkFreeMemory. (4) ash's `Device` and `Instance` are function tables plus handles (`Send + Sync`); the only
// Vulkan commands here that need external synchronisation are vkMapMemory, vkUnmapMemory and vkFreeMemory on
// one `VkDeviceMemory`, and the allocator serialises those per block (under the block's pool or dedicated
// lock, destroying each block once).
unsafe impl Device for VulkanDevice {
    type Block = VulkanBlock;
    type Virtual = NoVirtualMemory;

    fn memory_properties(&self) -> &MemoryProperties {
        &self.properties
    }

    fn heap_budgets(&self) -> Vec<HeapBudget> {
        let own_now = self.own_usage();
        if !self.features.memory_budget {
            return self
                .properties
                .heaps
                .iter()
                .zip(&own_now)
                .map(|(heap, &usage)| HeapBudget { usage, budget: heap.size / 5 * FALLBACK_BUDGET_FIFTHS })
                .collect();
        }
        if self.operations_since_refresh.load(Ordering::Relaxed) >= BUDGET_REFRESH_INTERVAL {
            self.refresh_budget();
        }
        let snapshot = lock(&self.budget);
        (0..self.properties.heaps.len())
            .map(|heap| {
                let queried = snapshot.budgets.get(heap).copied().unwrap_or_default();
                let then = snapshot.own_usage.get(heap).copied().unwrap_or(0);
                let now = own_now.get(heap).copied().unwrap_or(0);
                // The driver's usage at the query, moved by what memcarve allocated or freed since.
                let usage = queried.usage.saturating_add(now).saturating_sub(then);
                HeapBudget { usage, budget: queried.budget }
            })
            .collect()
    }

    unsafe fn create_block(&self, desc: &BlockDesc) -> Result<VulkanBlock, DeviceError> {
        let heap = self.heap_of(desc.memory_type).ok_or(DeviceError::Other(format!(
            "memory type {} does not exist on this device",
            desc.memory_type
        )))?;
        let request = if desc.dedicated { current_request(self.device.handle()) } else { None };
        let export = desc.export.or(request.and_then(|request| request.export));
        if export.is_some() && self.external_memory_fd.is_none() {
            return Err(DeviceError::Unsupported("memory export needs VK_KHR_external_memory_fd"));
        }
        // VkMemoryDedicatedAllocateInfo is Vulkan 1.1; on 1.0 the block is dedicated only in how it is used.
        let dedicated_to = request
            .and_then(|request| request.dedicated_to)
            .filter(|_| version_at_least(self.api_version, 1, 1));
        let priority = self.features.memory_priority.then(|| {
            let asked = request.and_then(|request| request.priority).unwrap_or(self.default_priority);
            valid_priority(asked, self.default_priority)
        });

        let mut dedicated_info = match dedicated_to {
            Some(DedicatedObject::Buffer(buffer)) => {
                vk::MemoryDedicatedAllocateInfo::default().buffer(buffer)
            }
            Some(DedicatedObject::Image(image)) => vk::MemoryDedicatedAllocateInfo::default().image(image),
            None => vk::MemoryDedicatedAllocateInfo::default(),
        };
        let mut flags_info =
            vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let mut export_info = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut priority_info =
            vk::MemoryPriorityAllocateInfoEXT::default().priority(priority.unwrap_or(self.default_priority));
        let mut info =
            vk::MemoryAllocateInfo::default().allocation_size(desc.size).memory_type_index(desc.memory_type);
        if dedicated_to.is_some() {
            info = info.push_next(&mut dedicated_info);
        }
        if self.features.buffer_device_address {
            info = info.push_next(&mut flags_info);
        }
        if export.is_some() {
            info = info.push_next(&mut export_info);
        }
        if priority.is_some() {
            info = info.push_next(&mut priority_info);
        }
        // SAFETY: the device is valid (`new`'s conditions 1 and 2); the memory type exists (checked above) and
        // the size is non-zero and within `maxMemoryAllocationSize` (the trait's condition 1). Each chained
        // structure is allowed: VkMemoryDedicatedAllocateInfo and VkMemoryAllocateFlagsInfo need Vulkan 1.1
        // (checked for the former; BDA needs 1.1 at least, checked in `new`), the export info needs
        // VK_KHR_external_memory_fd and the priority info VK_EXT_memory_priority, which the caller of `new`
        // promised were enabled. A named dedicated object is the request's own, freshly created resource, and
        // the allocator sizes dedicated blocks to the resource's requirements.
        let memory = unsafe { self.device.allocate_memory(&info, None) }
            .map_err(|result| device_error(result, "vkAllocateMemory"))?;
        if request.is_some() {
            // Consumed: any later dedicated block on this thread in the same scope (a device-memory callback
            // allocating, say) must not name this request's object too.
            BLOCK_REQUEST.with(|slot| slot.set(None));
        }
        self.own_usage[heap as usize].fetch_add(desc.size, Ordering::Relaxed);
        self.count_operation();
        Ok(VulkanBlock {
            memory,
            size: desc.size,
            memory_type: desc.memory_type,
            heap,
            dedicated_to,
            export,
            device_address: self.features.buffer_device_address,
            priority,
        })
    }

    unsafe fn destroy_block(&self, block: VulkanBlock) {
        // SAFETY: the trait's conditions: (1) the block came from this device and is freed once; (2) it is not
        // mapped and nothing uses its memory any more.
        unsafe { self.device.free_memory(block.memory, None) };
        self.own_usage[block.heap as usize].fetch_sub(block.size, Ordering::Relaxed);
        self.count_operation();
    }

    unsafe fn map(&self, block: &VulkanBlock) -> Result<NonNull<u8>, DeviceError> {
        // SAFETY: the trait's condition (1): the block is this device's, host-visible and not mapped; the
        // allocator serialises mapping of one block.
        let ptr =
            unsafe { self.device.map_memory(block.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .map_err(|result| device_error(result, "vkMapMemory"))?;
        match NonNull::new(ptr.cast::<u8>()) {
            Some(ptr) if (ptr.as_ptr() as usize).is_multiple_of(64) => Ok(ptr),
            _ => {
                // SAFETY: the block was mapped just above and nothing has seen the pointer.
                unsafe { self.device.unmap_memory(block.memory) };
                Err(DeviceError::Other("vkMapMemory returned a null or misaligned pointer".into()))
            }
        }
    }

    unsafe fn unmap(&self, block: &VulkanBlock) {
        // SAFETY: the trait's condition (1): the block is mapped and no reference into it outlives this call.
        unsafe { self.device.unmap_memory(block.memory) };
    }

    unsafe fn flush(&self, block: &VulkanBlock, offset: u64, size: u64) -> Result<(), DeviceError> {
        let range = vk::MappedMemoryRange::default().memory(block.memory).offset(offset).size(size);
        // SAFETY: the trait's condition (1): the block is mapped and the range is atom-aligned (or reaches the
        // block's end) inside it, which is what Vulkan asks of a VkMappedMemoryRange.
        unsafe { self.device.flush_mapped_memory_ranges(&[range]) }
            .map_err(|result| device_error(result, "vkFlushMappedMemoryRanges"))
    }

    unsafe fn invalidate(&self, block: &VulkanBlock, offset: u64, size: u64) -> Result<(), DeviceError> {
        let range = vk::MappedMemoryRange::default().memory(block.memory).offset(offset).size(size);
        // SAFETY: as for `flush`.
        unsafe { self.device.invalidate_mapped_memory_ranges(&[range]) }
            .map_err(|result| device_error(result, "vkInvalidateMappedMemoryRanges"))
    }
}

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        // Deferred frees still pending: their memory is gone with the allocator's blocks (the allocator drops
        // its blocks before its device); the buffers and images they carried are destroyed here so that nothing
        // leaks. The allocator's contract already requires the device to be done with them.
        self.deferred.destroy_remaining(&self.device);
    }
}

#[cfg(test)]
mod tests {
    use super::{BlockRequest, BlockRequestScope, current_request, valid_priority};
    use ash::vk::{self, Handle};

    #[test]
    fn a_block_request_is_not_seen_from_inside_a_device_memory_callback() {
        let device = vk::Device::from_raw(1);
        let request = BlockRequest { device, dedicated_to: None, export: None, priority: Some(0.75) };
        let _scope = BlockRequestScope::enter(request);
        assert!(current_request(device).is_some());
        assert!(current_request(vk::Device::from_raw(2)).is_none(), "another device's");
        {
            // A callback allocating on this thread while the request's own allocation is under way.
            let _inside = crate::allocator::CallbackScope::enter();
            assert!(current_request(device).is_none());
            // A helper called from inside the callback makes its own request, seen at that depth.
            let inner = BlockRequestScope::enter(BlockRequest { priority: Some(0.25), ..request });
            assert_eq!(current_request(device).and_then(|r| r.priority), Some(0.25));
            drop(inner);
            assert!(current_request(device).is_none());
        }
        assert_eq!(current_request(device).and_then(|r| r.priority), Some(0.75), "the outer request again");
    }

    #[test]
    fn priorities_are_clamped_and_nan_takes_the_fallback() {
        assert_eq!(valid_priority(f32::NAN, 0.5), 0.5);
        assert_eq!(valid_priority(2.0, 0.5), 1.0);
        assert_eq!(valid_priority(-1.0, 0.5), 0.0);
        assert_eq!(valid_priority(0.25, 0.5), 0.25);
    }
}
