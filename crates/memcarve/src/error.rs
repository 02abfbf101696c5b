//! The allocator's error type: every way a request or a free can be refused. After any of these the allocator
//! is unchanged and consistent.

use crate::device::DeviceError;

/// Why the allocator refused a request or a free.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request for zero bytes.
    #[error("allocation size is zero")]
    ZeroSize,
    /// The alignment is not a power of two, or is larger than any block that could hold the request.
    #[error("alignment {alignment} is not a power of two, or larger than the block that would hold it")]
    InvalidAlignment {
        /// The alignment asked for.
        alignment: u64,
    },
    /// The request is larger than any compatible heap or than the device's largest block.
    #[error("size {size} exceeds what any compatible memory type can hold ({limit})")]
    SizeTooLarge {
        /// The size asked for.
        size: u64,
        /// The largest size a compatible memory type could hold.
        limit: u64,
    },
    /// No memory type satisfies `memory_type_bits` and the required flags.
    #[error("no memory type satisfies the request's type bits and required flags")]
    NoCompatibleMemoryType,
    /// Every compatible memory type is out of memory (or over budget under `BudgetPolicy::RequireWithin`).
    #[error("out of memory for {size} bytes in every compatible memory type")]
    OutOfMemory {
        /// The size asked for.
        size: u64,
    },
    /// The allocator's block limit (`max_memory_blocks` or the device's) is reached.
    #[error("too many memory blocks (limit {limit})")]
    TooManyBlocks {
        /// The limit in force.
        limit: u32,
    },
    /// The allocation was already freed.
    #[error("allocation was already freed")]
    DoubleFree,
    /// The allocation was made by another allocator.
    #[error("allocation belongs to another allocator")]
    ForeignAllocation,
    /// The allocation's memory type is not host-visible, so it cannot be mapped.
    #[error("memory type {memory_type} is not host-visible")]
    NotHostVisible {
        /// The memory type.
        memory_type: u32,
    },
    /// A range lies outside the allocation.
    #[error("range [{offset}, +{size}) lies outside the allocation of {len} bytes")]
    OutOfBounds {
        /// Start of the range, relative to the allocation.
        offset: u64,
        /// Bytes in the range.
        size: u64,
        /// The allocation's size.
        len: u64,
    },
    /// A debug margin around an allocation was overwritten: something wrote outside its allocation.
    #[error("debug margin overwritten around the allocation at offset {offset} of memory type {memory_type}")]
    Corruption {
        /// Memory type of the block.
        memory_type: u32,
        /// Offset of the damaged allocation's range in its block.
        offset: u64,
    },
    /// A stack or ring pool was asked to free something other than the allocation that must go next.
    #[error("this pool frees in stack (newest first) or ring (oldest first) order")]
    OutOfOrderFree,
    /// The pool id names no live pool of this allocator.
    #[error("no such custom pool")]
    InvalidPool,
    /// A custom pool still holds allocations.
    #[error("custom pool still holds {allocations} allocations")]
    PoolNotEmpty {
        /// Live allocations in it.
        allocations: usize,
    },
    /// Every custom pool slot is in use.
    #[error("too many custom pools (limit {limit})")]
    TooManyPools {
        /// The limit.
        limit: usize,
    },
    /// An upload-ring slice was retired before an older one.
    #[error("upload ring slices must be retired oldest first")]
    OutOfOrderRetire,
    /// A custom pool was to be reset or destroyed while [`crate::MappedAllocation`] guards hold its memory
    /// mapped: drop them first.
    #[error("{guards} mapping guards still hold this pool's memory")]
    StillMapped {
        /// Guards alive on the pool's blocks.
        guards: u64,
    },
    /// A block has as many mapping guards as its counter holds (only guards leaked with `mem::forget` get
    /// there).
    #[error("too many mapping guards on one block")]
    TooManyMappings,
    /// A configuration value is invalid.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The device failed in a way other than running out of memory.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// The allocator's result type.
pub type Result<T, E = Error> = core::result::Result<T, E>;
