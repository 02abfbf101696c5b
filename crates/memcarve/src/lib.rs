//! memcarve: GPU memory sub-allocation.
//!
//! [`Allocator`] turns a device's memory blocks into sub-allocations: policy picks a memory type, a pool per
//! (memory type, resource class) places the request in a block carved by the core's TLSF, and only when no
//! block has room does the allocator ask the [`Device`] for a new one. The host backend
//! ([`backends::host`]) is the built-in device and test double. The device-free core is re-exported as
//! [`core`]; its `VirtualBlock` is usable on its own.
//!
//! ```
//! use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
//! use memcarve::{AllocationDesc, Allocator, AllocatorConfig, MemoryLocation};
//!
//! let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated));
//! let allocator = Allocator::new(device, AllocatorConfig::default())?;
//! let desc = AllocationDesc::new("vertices", 64 << 10, MemoryLocation::GpuOnly).with_alignment(256);
//! let allocation = allocator.allocate(&desc)?;
//! assert_eq!(allocation.offset() % 256, 0);
//! allocator.free(allocation)?;
//! # Ok::<(), memcarve::Error>(())
//! ```

pub use memcarve_core as core;
pub use memcarve_core::ResourceClass;

mod allocator;
pub mod backends;
mod custom_pool;
pub mod device;
pub mod diagnostics;
mod error;
mod heap_tiers;
mod mapping;
pub mod policy;
mod pool;
pub mod report;
mod upload_ring;
pub mod virtual_heap;

pub use allocator::{
    Allocation, AllocationSizes, Allocator, AllocatorConfig, BlockKey, BlockKind, RawAllocation,
};
pub use custom_pool::{PoolDesc, PoolId, PoolStrategy};
pub use device::{Device, MemoryPropertyFlags};
pub use diagnostics::{AllocatorStats, Diagnostics, MemoryStats};
pub use error::{Error, Result};
pub use mapping::MappedAllocation;
pub use policy::{
    AllocationDesc, AllocationOptions, BudgetPolicy, Dedicated, MemoryLocation, MemoryTypeChoice, Usage,
};
pub use upload_ring::{RetireError, UploadRing, UploadSlice};
pub use virtual_heap::{ReleasePolicy, VirtualHeapConfig};
