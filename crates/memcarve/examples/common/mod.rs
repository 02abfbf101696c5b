//! What the Vulkan examples share: a validated context, the validation summary and exit code, and a small
//! seeded generator. Each example includes this module with `mod common;`.

#![allow(dead_code, reason = "each example uses part of it")]

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

use ash::vk;
use memcarve::backends::vulkan::{VulkanContext, VulkanContextDesc};

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
