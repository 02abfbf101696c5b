//! memcarve: GPU memory sub-allocation.
//!
//! This crate will hold `Allocator<D: Device>` (see DESIGN.md). Today it only re-exports the device-free core,
//! [`memcarve_core`], whose [`VirtualBlock`] is usable on its own.

pub use memcarve_core as core;
pub use memcarve_core::{Allocation, Error, Handle, ResourceClass, VirtualBlock, VirtualBlockConfig};
