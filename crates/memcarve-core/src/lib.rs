//! memcarve-core: range allocators that deal only in offsets and sizes.
//!
//! Everything here manages an abstract range `[0, capacity)` with `u64` offsets and never touches memory, so it
//! is `no_std`, free of `unsafe`, and can be tested to exhaustion without a device. The GPU allocator
//! (`memcarve`) carves device memory blocks with it; [`VirtualBlock`] is also useful on its own, for
//! sub-ranges of one big buffer, descriptor heaps or bindless tables.
//!
//! - [`VirtualBlock`]: O(1) two-level segregated fit (TLSF) with resource classes and user data.
//! - [`LinearAllocator`] (a stack: free in reverse order, or all at once) and [`RingAllocator`] (free in FIFO
//!   order with wraparound) for transient memory.
//! - [`ResourceClass`]: Vulkan's buffer-image granularity rule.
//!
//! ```
//! use memcarve_core::{ResourceClass, VirtualBlock};
//!
//! let mut block = VirtualBlock::<()>::new(1 << 20)?;
//! let a = block.allocate(1000, 256, ResourceClass::Buffer)?;
//! assert_eq!(a.offset % 256, 0);
//! assert_eq!(block.stats().allocation_count, 1);
//! block.free(a)?;
//! assert_eq!(block.stats().largest_free_range, 1 << 20);
//! # Ok::<(), memcarve_core::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core, clippy::std_instead_of_alloc)]

extern crate alloc;

#[cfg(any(test, feature = "check"))]
mod check;
mod class;
mod error;
mod handle;
mod linear;
mod stats;
mod tlsf;
mod virtual_block;

#[cfg(any(test, feature = "check"))]
pub use check::Violation;
pub use class::ResourceClass;
pub use error::Error;
pub use handle::{Allocation, Handle};
pub use linear::{LinearAllocator, RingAllocator};
pub use stats::Stats;
pub use virtual_block::{AllocationInfo, Freed, VirtualBlock, VirtualBlockConfig};

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
