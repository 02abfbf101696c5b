//! Device backends, each behind a Cargo feature.

#[cfg(feature = "host")]
pub mod host;
#[cfg(feature = "vulkan")]
pub mod vulkan;
