//! [`VulkanContext`]: a Vulkan instance, physical device, logical device and queue with every optional feature
//! memcarve can use, optionally under the Khronos validation layer with a debug messenger that records each
//! warning and error (with its VUID). For tests, examples and small programs; engines pass their own objects to
//! [`super::VulkanDevice::new`]. Invariant: objects are destroyed once, the device before the messenger before
//! the instance, and the log outlives the messenger that writes to it.

use core::ffi::{CStr, c_void};
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use ash::vk;

use super::device::{VulkanFeatures, format_version, lock, version_at_least};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// How to build a [`VulkanContext`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VulkanContextDesc {
    /// `VkApplicationInfo::pApplicationName`.
    pub application_name: String,
    /// Enable VK_LAYER_KHRONOS_validation and record its messages; creation fails if the layer is missing.
    pub validation: bool,
    /// Highest Vulkan version to ask for (clamped to what the loader and the device offer).
    pub api_version: u32,
    /// Which physical device (in enumeration order); None picks a discrete GPU, else an integrated one, else
    /// the first.
    pub device_index: Option<usize>,
}

impl Default for VulkanContextDesc {
    fn default() -> VulkanContextDesc {
        VulkanContextDesc {
            application_name: "memcarve".into(),
            validation: false,
            api_version: vk::API_VERSION_1_3,
            device_index: None,
        }
    }
}

impl VulkanContextDesc {
    /// Sets [`VulkanContextDesc::validation`].
    pub fn with_validation(mut self, validation: bool) -> VulkanContextDesc {
        self.validation = validation;
        self
    }

    /// Sets [`VulkanContextDesc::application_name`].
    pub fn with_application_name(mut self, name: impl Into<String>) -> VulkanContextDesc {
        self.application_name = name.into();
        self
    }

    /// Sets [`VulkanContextDesc::api_version`].
    pub fn with_api_version(mut self, version: u32) -> VulkanContextDesc {
        self.api_version = version;
        self
    }

    /// Sets [`VulkanContextDesc::device_index`].
    pub fn with_device_index(mut self, index: Option<usize>) -> VulkanContextDesc {
        self.device_index = index;
        self
    }
}

/// Why a [`VulkanContext`] could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The Vulkan loader (`libvulkan.so.1`) could not be opened: no Vulkan installed.
    #[error("no Vulkan loader: {0}")]
    Loader(String),
    /// Validation was asked for and VK_LAYER_KHRONOS_validation (or its VK_EXT_debug_utils) is not installed.
    #[error("VK_LAYER_KHRONOS_validation with VK_EXT_debug_utils is not installed")]
    NoValidationLayer,
    /// The loader found no physical device (no driver), or not the one asked for.
    #[error("no Vulkan physical device")]
    NoDevice,
    /// A Vulkan call failed.
    #[error("{call} failed: {result}")]
    Vulkan {
        /// The call.
        call: &'static str,
        /// Its result.
        result: vk::Result,
    },
}

fn failed(call: &'static str) -> impl FnOnce(vk::Result) -> ContextError {
    move |result| ContextError::Vulkan { call, result }
}

/// How serious a validation message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Possibly wrong, or slow.
    Warning,
    /// A violation of the Vulkan specification.
    Error,
}

/// One message of the validation layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationMessage {
    /// Warning or error.
    pub severity: Severity,
    /// The message id: for validation errors the VUID, e.g. `VUID-vkBindBufferMemory-memoryOffset-01036`.
    pub vuid: String,
    /// The layer's text.
    pub message: String,
}

impl core::fmt::Display for ValidationMessage {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let severity = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "ERROR",
        };
        write!(f, "[{severity}] {}: {}", self.vuid, self.message)
    }
}

/// The validation layer's messages, in order of arrival.
#[derive(Debug, Default)]
pub struct ValidationLog {
    messages: Mutex<Vec<ValidationMessage>>,
}

impl ValidationLog {
    /// Every message so far.
    pub fn messages(&self) -> Vec<ValidationMessage> {
        lock(&self.messages).clone()
    }

    /// The error messages so far.
    pub fn errors(&self) -> Vec<ValidationMessage> {
        lock(&self.messages).iter().filter(|message| message.severity == Severity::Error).cloned().collect()
    }

    /// Number of error messages so far.
    pub fn error_count(&self) -> usize {
        lock(&self.messages).iter().filter(|message| message.severity == Severity::Error).count()
    }

    fn push(&self, message: ValidationMessage) {
        lock(&self.messages).push(message);
    }
}

/// The debug messenger's callback: records the message in the [`ValidationLog`] behind `user_data`.
///
/// # Safety
///
/// Called by the validation layer with a valid callback-data pointer and the `user_data` given at creation: a
/// pointer to a `ValidationLog` that the context keeps alive longer than the messenger.
unsafe extern "system" fn record_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user_data: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: `user_data` is the context's `Arc<ValidationLog>` pointer, alive while the messenger is (see the
    // function's `# Safety`); `data` is null or valid for the duration of the call, as the layer promises.
    let (Some(log), Some(data)) =
        (unsafe { user_data.cast::<ValidationLog>().as_ref() }, unsafe { data.as_ref() })
    else {
        return vk::FALSE;
    };
    let text = |text: Option<&CStr>| text.map(|text| text.to_string_lossy().into_owned()).unwrap_or_default();
    // SAFETY: the strings are null or NUL-terminated, valid for the call (the layer's promise).
    let (vuid, message) = unsafe { (text(data.message_id_name_as_c_str()), text(data.message_as_c_str())) };
    let severity = if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        Severity::Error
    } else {
        Severity::Warning
    };
    log.push(ValidationMessage { severity, vuid, message });
    // FALSE: the call that triggered the message goes on, as the specification asks of applications.
    vk::FALSE
}

/// A Vulkan instance and device set up for memcarve (see the module documentation).
pub struct VulkanContext {
    device: ash::Device,
    queue: vk::Queue,
    queue_family_index: u32,
    physical_device: vk::PhysicalDevice,
    device_name: String,
    api_version: u32,
    features: VulkanFeatures,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    instance: ash::Instance,
    log: Arc<ValidationLog>,
    /// Keeps the loader library loaded until everything above is destroyed.
    entry: ash::Entry,
}

impl core::fmt::Debug for VulkanContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VulkanContext")
            .field("device_name", &self.device_name)
            .field("api_version", &format_version(self.api_version))
            .field("features", &self.features)
            .field("validation", &self.messenger.is_some())
            .finish_non_exhaustive()
    }
}

/// What the physical device offers.
struct Offer {
    api_version: u32,
    features: VulkanFeatures,
    queue_family_index: u32,
    device_name: String,
}

impl VulkanContext {
    /// Loads Vulkan, creates an instance (with validation if asked), picks a physical device and creates a
    /// device with one queue and every optional feature memcarve can use that the device has. Without a
    /// loader, driver or (when asked) validation layer, returns an error; never panics.
    pub fn new(desc: &VulkanContextDesc) -> Result<VulkanContext, ContextError> {
        // SAFETY: opening the system's Vulkan loader runs its library initialisers, which are made to be loaded
        // this way; nothing else in this process depends on the loader's state.
        let entry = unsafe { ash::Entry::load() }.map_err(|error| ContextError::Loader(error.to_string()))?;
        // SAFETY: `entry` holds a loaded loader; this global command has no other requirement.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(failed("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        let api_version = desc.api_version.min(loader_version).max(vk::API_VERSION_1_0);

        if desc.validation {
            // SAFETY: as above.
            let layers = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(failed("vkEnumerateInstanceLayerProperties"))?;
            if !layers.iter().any(|layer| layer.layer_name_as_c_str().is_ok_and(|n| n == VALIDATION_LAYER)) {
                return Err(ContextError::NoValidationLayer);
            }
            // SAFETY: as above; the layer name is a valid NUL-terminated string.
            let extensions = unsafe { entry.enumerate_instance_extension_properties(Some(VALIDATION_LAYER)) }
                .map_err(failed("vkEnumerateInstanceExtensionProperties"))?;
            let debug_utils = ash::ext::debug_utils::NAME;
            if !extensions.iter().any(|ext| ext.extension_name_as_c_str().is_ok_and(|n| n == debug_utils)) {
                return Err(ContextError::NoValidationLayer);
            }
        }

        let log = Arc::new(ValidationLog::default());
        let application_name = CString::new(desc.application_name.replace('\0', " ")).unwrap_or_default();
        let application = vk::ApplicationInfo::default()
            .application_name(&application_name)
            .engine_name(c"memcarve")
            .api_version(api_version);
        let layers = [VALIDATION_LAYER.as_ptr()];
        let extensions = [ash::ext::debug_utils::NAME.as_ptr()];
        let mut messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(record_message))
            .user_data(Arc::as_ptr(&log).cast_mut().cast());
        let mut instance_info = vk::InstanceCreateInfo::default().application_info(&application);
        if desc.validation {
            instance_info = instance_info
                .enabled_layer_names(&layers)
                .enabled_extension_names(&extensions)
                .push_next(&mut messenger_info);
        }
        // SAFETY: the create info and everything it points to (names, layer and extension lists, the chained
        // messenger info whose user data is `log`, kept alive by the context) live across the call; the layer
        // and extension were found above.
        let instance =
            unsafe { entry.create_instance(&instance_info, None) }.map_err(failed("vkCreateInstance"))?;

        let messenger = if desc.validation {
            let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
            // SAFETY: VK_EXT_debug_utils is enabled on `instance`; the info's user data is `log`, which the
            // context keeps alive until after the messenger is destroyed.
            match unsafe { loader.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(messenger) => Some((loader, messenger)),
                Err(result) => {
                    // SAFETY: the instance was created above and has no children yet.
                    unsafe { instance.destroy_instance(None) };
                    return Err(ContextError::Vulkan { call: "vkCreateDebugUtilsMessengerEXT", result });
                }
            }
        } else {
            None
        };

        let destroy_instance =
            |messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>| {
                if let Some((loader, messenger)) = messenger {
                    // SAFETY: the messenger was created above on this instance and is destroyed once.
                    unsafe { loader.destroy_debug_utils_messenger(messenger, None) };
                }
                // SAFETY: the instance was created above; its only child (the messenger) is gone.
                unsafe { instance.destroy_instance(None) };
            };
        let chosen = match choose_physical_device(&instance, desc.device_index, api_version) {
            Ok(chosen) => chosen,
            Err(error) => {
                destroy_instance(messenger);
                return Err(error);
            }
        };
        let (physical_device, offer) = chosen;
        let (device, queue) = match create_device(&instance, physical_device, &offer) {
            Ok(created) => created,
            Err(error) => {
                destroy_instance(messenger);
                return Err(error);
            }
        };
        Ok(VulkanContext {
            device,
            queue,
            queue_family_index: offer.queue_family_index,
            physical_device,
            device_name: offer.device_name,
            api_version: offer.api_version,
            features: offer.features,
            messenger,
            instance,
            log,
            entry,
        })
    }

    /// The loader's entry points.
    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }

    /// The instance.
    pub fn instance(&self) -> &ash::Instance {
        &self.instance
    }

    /// The physical device.
    pub fn physical_device(&self) -> vk::PhysicalDevice {
        self.physical_device
    }

    /// The logical device.
    pub fn device(&self) -> &ash::Device {
        &self.device
    }

    /// The one queue (graphics or compute capable when the device has such a family). `vkQueueSubmit` on it
    /// needs external synchronisation: one thread at a time.
    pub fn queue(&self) -> vk::Queue {
        self.queue
    }

    /// The queue's family.
    pub fn queue_family_index(&self) -> u32 {
        self.queue_family_index
    }

    /// The Vulkan version in use: the lowest of what was asked, the loader's and the device's.
    pub fn api_version(&self) -> u32 {
        self.api_version
    }

    /// The optional features enabled on the device.
    pub fn features(&self) -> VulkanFeatures {
        self.features
    }

    /// The physical device's name.
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// Whether the validation layer is on.
    pub fn validation(&self) -> bool {
        self.messenger.is_some()
    }

    /// The validation layer's messages (empty without validation). Keep the `Arc` to read messages sent while
    /// the context is destroyed (leaked objects are reported then).
    pub fn validation_log(&self) -> Arc<ValidationLog> {
        Arc::clone(&self.log)
    }
}

/// Picks the physical device and reads what it offers.
fn choose_physical_device(
    instance: &ash::Instance,
    index: Option<usize>,
    api_version: u32,
) -> Result<(vk::PhysicalDevice, Offer), ContextError> {
    // SAFETY: the instance is valid.
    let devices =
        unsafe { instance.enumerate_physical_devices() }.map_err(failed("vkEnumeratePhysicalDevices"))?;
    let rank = |device: &vk::PhysicalDevice| {
        // SAFETY: the handle was just enumerated from this instance.
        let properties = unsafe { instance.get_physical_device_properties(*device) };
        match properties.device_type {
            vk::PhysicalDeviceType::DISCRETE_GPU => 0,
            vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
            vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
            _ => 3,
        }
    };
    let physical_device = match index {
        Some(index) => devices.get(index).copied(),
        None => devices.iter().copied().min_by_key(rank),
    }
    .ok_or(ContextError::NoDevice)?;

    // SAFETY: the handle was enumerated from this instance.
    let properties = unsafe { instance.get_physical_device_properties(physical_device) };
    let api_version = api_version.min(properties.api_version);
    // SAFETY: as above.
    let extensions = unsafe { instance.enumerate_device_extension_properties(physical_device) }
        .map_err(failed("vkEnumerateDeviceExtensionProperties"))?;
    let has =
        |name: &CStr| extensions.iter().any(|ext| ext.extension_name_as_c_str().is_ok_and(|n| n == name));
    let v1_1 = version_at_least(api_version, 1, 1);
    let v1_2 = version_at_least(api_version, 1, 2);

    let has_priority_extension = has(ash::ext::memory_priority::NAME);
    let mut features12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut priority = vk::PhysicalDeviceMemoryPriorityFeaturesEXT::default();
    if v1_1 {
        let mut features2 = vk::PhysicalDeviceFeatures2::default();
        if v1_2 {
            features2 = features2.push_next(&mut features12);
        }
        if has_priority_extension {
            features2 = features2.push_next(&mut priority);
        }
        // SAFETY: Vulkan 1.1 is available on instance and device; the chain holds only structures of
        // Vulkan 1.2 (when available) and of supported extensions.
        unsafe { instance.get_physical_device_features2(physical_device, &mut features2) };
    }
    let features = VulkanFeatures::NONE
        .with_memory_budget(v1_1 && has(ash::ext::memory_budget::NAME))
        .with_memory_priority(v1_1 && has_priority_extension && priority.memory_priority == vk::TRUE)
        .with_external_memory_fd(v1_1 && has(ash::khr::external_memory_fd::NAME))
        .with_buffer_device_address(v1_2 && features12.buffer_device_address == vk::TRUE)
        .with_timeline_semaphore(v1_2 && features12.timeline_semaphore == vk::TRUE);

    // SAFETY: as above.
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical_device) };
    let wanted = vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE;
    let queue_family_index = families
        .iter()
        .position(|family| family.queue_count > 0 && family.queue_flags.intersects(wanted))
        .or_else(|| families.iter().position(|family| family.queue_count > 0))
        .ok_or(ContextError::NoDevice)? as u32;
    let device_name =
        properties.device_name_as_c_str().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((physical_device, Offer { api_version, features, queue_family_index, device_name }))
}

/// Creates the logical device with the offered features and returns it with its queue.
fn create_device(
    instance: &ash::Instance,
    physical_device: vk::PhysicalDevice,
    offer: &Offer,
) -> Result<(ash::Device, vk::Queue), ContextError> {
    let features = offer.features;
    let mut extensions = Vec::new();
    if features.memory_budget {
        extensions.push(ash::ext::memory_budget::NAME.as_ptr());
    }
    if features.memory_priority {
        extensions.push(ash::ext::memory_priority::NAME.as_ptr());
    }
    if features.external_memory_fd {
        extensions.push(ash::khr::external_memory_fd::NAME.as_ptr());
    }
    let priorities = [1.0f32];
    let queue_info = vk::DeviceQueueCreateInfo::default()
        .queue_family_index(offer.queue_family_index)
        .queue_priorities(&priorities);
    let mut features12 = vk::PhysicalDeviceVulkan12Features::default()
        .buffer_device_address(features.buffer_device_address)
        .timeline_semaphore(features.timeline_semaphore);
    let mut priority = vk::PhysicalDeviceMemoryPriorityFeaturesEXT::default().memory_priority(true);
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(core::slice::from_ref(&queue_info))
        .enabled_extension_names(&extensions);
    if version_at_least(offer.api_version, 1, 2) {
        info = info.push_next(&mut features12);
    }
    if features.memory_priority {
        info = info.push_next(&mut priority);
    }
    // SAFETY: the physical device belongs to the instance; the extensions and features enabled are those it
    // offers (read in `choose_physical_device`); the create info and what it points to live across the call.
    let device =
        unsafe { instance.create_device(physical_device, &info, None) }.map_err(failed("vkCreateDevice"))?;
    // SAFETY: the family and queue index 0 were requested in the create info.
    let queue = unsafe { device.get_device_queue(offer.queue_family_index, 0) };
    Ok((device, queue))
}

impl Drop for VulkanContext {
    fn drop(&mut self) {
        // SAFETY: the device is valid; waiting needs no other condition. Its error (device lost) changes
        // nothing below.
        let _ = unsafe { self.device.device_wait_idle() };
        // SAFETY: every `VulkanDevice` over this context holds an `Arc` to it, so none is alive now; the
        // device was created by this context and is destroyed once. Objects the user left are reported by the
        // validation layer.
        unsafe { self.device.destroy_device(None) };
        if let Some((loader, messenger)) = self.messenger.take() {
            // SAFETY: created by this context on `instance`, destroyed once; `log` is still alive.
            unsafe { loader.destroy_debug_utils_messenger(messenger, None) };
        }
        // SAFETY: its children (device, messenger) are gone; the entry (loader library) outlives this call.
        unsafe { self.instance.destroy_instance(None) };
    }
}
