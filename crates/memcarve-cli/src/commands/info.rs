//! `memcarve info`: the backends compiled into this binary and, for each, the devices it finds (heaps and
//! memory types with their flags) or why it finds none. Finding nothing is an answer, not an error.

use std::fmt::Write as _;

use anyhow::Result;
use clap::Args;
use memcarve::backends::host::MemoryProfile;
use memcarve::device::{MemoryHeapFlags, MemoryProperties};

/// Arguments of `memcarve info` (none yet).
#[derive(Debug, Args)]
pub struct InfoArgs {}

/// Runs `memcarve info`.
pub fn run(_args: &InfoArgs) -> Result<()> {
    let mut out = String::new();
    let built: Vec<&str> =
        ["host", "vulkan"].into_iter().filter(|name| *name == "host" || cfg!(feature = "vulkan")).collect();
    let _ =
        writeln!(out, "memcarve {}: backends compiled in: {}", env!("CARGO_PKG_VERSION"), built.join(", "));
    host(&mut out);
    vulkan(&mut out);
    let _ = writeln!(out, "\ncuda: not available (memcarve has no CUDA backend yet)");
    print!("{out}");
    Ok(())
}

fn host(out: &mut String) {
    let _ = writeln!(
        out,
        "\nhost: always built; real host memory, or simulated memory that commits nothing. Its devices are \
         memory profiles that mimic GPUs:"
    );
    for profile in MemoryProfile::all() {
        let virtual_memory = if profile.virtual_granularity.is_power_of_two() {
            format!("virtual memory in {} pages", bytes(profile.virtual_granularity))
        } else {
            "no virtual memory".to_owned()
        };
        let _ = writeln!(
            out,
            "  profile {}: budget {:.0} % of each heap, {virtual_memory}",
            profile.name,
            profile.budget_fraction * 100.0
        );
        properties(out, &profile.properties, None);
    }
}

/// Heaps (with budgets when known), memory types and limits, indented under a device.
fn properties(
    out: &mut String,
    properties: &MemoryProperties,
    budgets: Option<&[memcarve::device::HeapBudget]>,
) {
    for (index, heap) in properties.heaps.iter().enumerate() {
        let budget = budgets.and_then(|budgets| budgets.get(index)).map_or_else(String::new, |budget| {
            format!(", budget {}, used by this process {}", bytes(budget.budget), bytes(budget.usage))
        });
        let _ = writeln!(out, "    heap {index}: {} [{}]{budget}", bytes(heap.size), heap_flags(heap.flags));
    }
    for (index, memory_type) in properties.types.iter().enumerate() {
        let flags =
            if memory_type.flags.is_empty() { "no flags".to_owned() } else { memory_type.flags.to_string() };
        let _ = writeln!(
            out,
            "    type {index}: heap {} [{}]",
            memory_type.heap_index,
            flags.replace(" | ", ", ")
        );
    }
    let limits = &properties.limits;
    let _ = writeln!(
        out,
        "    limits: buffer-image granularity {}, non-coherent atom {}, {} blocks of up to {}",
        bytes(limits.buffer_image_granularity),
        bytes(limits.non_coherent_atom_size),
        if limits.max_allocation_count == u32::MAX {
            "any number of".to_owned()
        } else {
            format!("at most {}", limits.max_allocation_count)
        },
        bytes(limits.max_allocation_size)
    );
}

fn heap_flags(flags: MemoryHeapFlags) -> String {
    let mut names = Vec::new();
    if flags.contains(MemoryHeapFlags::DEVICE_LOCAL) {
        names.push("DEVICE_LOCAL");
    }
    if flags.contains(MemoryHeapFlags::MULTI_INSTANCE) {
        names.push("MULTI_INSTANCE");
    }
    if names.is_empty() { "no flags".to_owned() } else { names.join(", ") }
}

#[cfg(not(feature = "vulkan"))]
fn vulkan(out: &mut String) {
    let _ = writeln!(out, "\nvulkan: not built in (build memcarve-cli with `--features vulkan`)");
}

/// Physical devices looked at, at most (a context is opened on each, in enumeration order).
#[cfg(feature = "vulkan")]
const MAX_VULKAN_DEVICES: usize = 16;

#[cfg(feature = "vulkan")]
fn vulkan(out: &mut String) {
    use std::sync::Arc;

    use memcarve::Device;
    use memcarve::backends::vulkan::ash::vk;
    use memcarve::backends::vulkan::{ContextError, VulkanContext, VulkanContextDesc, VulkanDevice};

    let _ = write!(out, "\nvulkan: built in (ash; the loader is opened now)");
    for variable in ["VK_ICD_FILENAMES", "VK_DRIVER_FILES"] {
        if let Ok(value) = std::env::var(variable) {
            let _ = write!(out, "; {variable}={value}");
        }
    }
    out.push('\n');
    let mut found = 0;
    for index in 0..MAX_VULKAN_DEVICES {
        let desc = VulkanContextDesc::default().with_device_index(Some(index));
        let context = match VulkanContext::new(&desc) {
            Ok(context) => Arc::new(context),
            Err(ContextError::NoDevice) => {
                if index == 0 {
                    let _ = writeln!(
                        out,
                        "  no devices: the loader found no physical device (no Vulkan driver installed, or \
                         VK_ICD_FILENAMES names none)"
                    );
                }
                break;
            }
            Err(ContextError::Loader(reason)) => {
                let _ =
                    writeln!(out, "  no devices: the Vulkan loader (libvulkan.so.1) is missing: {reason}");
                break;
            }
            Err(ContextError::Vulkan { call, result })
                if matches!(
                    call,
                    "vkEnumerateInstanceVersion" | "vkCreateInstance" | "vkEnumeratePhysicalDevices"
                ) =>
            {
                let hint = if std::env::var_os("VK_ICD_FILENAMES").is_some()
                    || std::env::var_os("VK_DRIVER_FILES").is_some()
                {
                    " (check the driver files named above)"
                } else {
                    ""
                };
                let _ = writeln!(out, "  no devices: {call} failed: {result}{hint}");
                break;
            }
            Err(error) => {
                let _ = writeln!(out, "  device {index}: could not be opened: {error}");
                continue;
            }
        };
        found += 1;
        let version = context.api_version();
        let _ = writeln!(
            out,
            "  device {index}: {}, Vulkan {}.{}.{}",
            context.device_name(),
            vk::api_version_major(version),
            vk::api_version_minor(version),
            vk::api_version_patch(version)
        );
        let features = context.features();
        let named = [
            (features.memory_budget, "memory budget"),
            (features.memory_priority, "memory priority"),
            (features.buffer_device_address, "buffer device address"),
            (features.external_memory_fd, "external memory (fd)"),
            (features.timeline_semaphore, "timeline semaphores"),
        ];
        let on: Vec<&str> = named.iter().filter(|(on, _)| *on).map(|(_, name)| *name).collect();
        let _ =
            writeln!(out, "    features: {}", if on.is_empty() { "none".to_owned() } else { on.join(", ") });
        match VulkanDevice::from_context(context) {
            Ok(device) => properties(out, device.memory_properties(), Some(&device.heap_budgets())),
            Err(error) => {
                let _ = writeln!(out, "    memory properties unavailable: {error}");
            }
        }
    }
    if found > 0 {
        let _ = writeln!(out, "  {found} device{} found", if found == 1 { "" } else { "s" });
    }
}

fn bytes(value: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    let (unit, name) = match value {
        v if v >= GIB => (GIB, "GiB"),
        v if v >= MIB => (MIB, "MiB"),
        v if v >= KIB => (KIB, "KiB"),
        _ => return format!("{value} B"),
    };
    if value.is_multiple_of(unit) {
        format!("{} {name}", value / unit)
    } else {
        format!("{:.2} {name}", value as f64 / unit as f64)
    }
}
