//! Custom pools: blocks of one memory type and class with their own block size, block-count limits and
//! strategy, outside the default pools. A TLSF pool grows up to its maximum block count; a stack (linear) or
//! ring pool has exactly one block and frees in reverse or FIFO order, for transient memory.
//!
//! Invariant: a pool holds between `min_blocks` and `max_blocks` blocks, all of `block_size` bytes; a pool is
//! destroyed only when no allocation lives in it.

use memcarve_core::{
    Handle, LinearAllocator, ResourceClass, RingAllocator, VirtualBlock, VirtualBlockConfig,
};

use crate::mapping::Mapping;

/// How a custom pool carves its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PoolStrategy {
    /// Two-level segregated fit: any free order, several blocks.
    #[default]
    Tlsf,
    /// A stack in one block: free the newest first (or everything with `reset_pool`).
    Stack,
    /// A ring in one block: free the oldest first; wraps around.
    Ring,
}

/// How a custom pool is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolDesc<'a> {
    /// A debug name.
    pub name: &'a str,
    /// Memory type of its blocks.
    pub memory_type: u32,
    /// Class of the resources it holds.
    pub class: ResourceClass,
    /// Bytes per block.
    pub block_size: u64,
    /// Blocks created with the pool (and never trimmed).
    pub min_blocks: u32,
    /// Most blocks the pool may hold (1 for stack and ring pools).
    pub max_blocks: u32,
    /// How blocks are carved.
    pub strategy: PoolStrategy,
}

impl<'a> PoolDesc<'a> {
    /// A TLSF pool of `block_size`-byte blocks of `memory_type`, growing without a limit.
    pub fn new(name: &'a str, memory_type: u32, block_size: u64) -> PoolDesc<'a> {
        PoolDesc {
            name,
            memory_type,
            class: ResourceClass::Buffer,
            block_size,
            min_blocks: 0,
            max_blocks: u32::MAX,
            strategy: PoolStrategy::Tlsf,
        }
    }

    /// Sets the class.
    pub fn with_class(mut self, class: ResourceClass) -> PoolDesc<'a> {
        self.class = class;
        self
    }

    /// Sets the block-count limits.
    pub fn with_block_count(mut self, min_blocks: u32, max_blocks: u32) -> PoolDesc<'a> {
        self.min_blocks = min_blocks;
        self.max_blocks = max_blocks;
        self
    }

    /// Sets the strategy (stack and ring pools have one block).
    pub fn with_strategy(mut self, strategy: PoolStrategy) -> PoolDesc<'a> {
        self.strategy = strategy;
        self
    }
}

/// Names a custom pool of one allocator. Stale after `destroy_pool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PoolId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// The range allocator of one custom-pool block.
#[derive(Debug)]
pub(crate) enum Ranges {
    Tlsf(Box<VirtualBlock<()>>),
    Stack(LinearAllocator),
    Ring(RingAllocator),
}

impl Ranges {
    pub fn new(
        strategy: PoolStrategy,
        size: u64,
        class_granularity: u64,
    ) -> Result<Ranges, memcarve_core::Error> {
        Ok(match strategy {
            PoolStrategy::Tlsf => Ranges::Tlsf(Box::new(VirtualBlock::with_config(
                VirtualBlockConfig::new(size).with_class_granularity(class_granularity.max(1)),
            )?)),
            PoolStrategy::Stack => Ranges::Stack(LinearAllocator::new(size)?),
            PoolStrategy::Ring => Ranges::Ring(RingAllocator::new(size)?),
        })
    }

    pub fn allocate(
        &mut self,
        size: u64,
        alignment: u64,
        class: ResourceClass,
    ) -> Result<memcarve_core::Allocation, memcarve_core::Error> {
        match self {
            Ranges::Tlsf(block) => block.allocate(size, alignment, class),
            Ranges::Stack(stack) => stack.allocate(size, alignment),
            Ranges::Ring(ring) => ring.allocate(size, alignment),
        }
    }

    pub fn free(&mut self, handle: Handle) -> Result<(), memcarve_core::Error> {
        match self {
            Ranges::Tlsf(block) => block.free(handle).map(|_| ()),
            Ranges::Stack(stack) => stack.free(handle),
            Ranges::Ring(ring) => ring.free(handle),
        }
    }

    /// Whether `handle` names a live allocation of these ranges (one reset by `reset` is not).
    pub fn is_live(&self, handle: &Handle) -> bool {
        match self {
            Ranges::Tlsf(block) => block.get(handle).is_ok(),
            Ranges::Stack(stack) => stack.is_live(handle),
            Ranges::Ring(ring) => ring.is_live(handle),
        }
    }

    pub fn stats(&self) -> memcarve_core::Stats {
        match self {
            Ranges::Tlsf(block) => block.stats(),
            Ranges::Stack(stack) => stack.stats(),
            Ranges::Ring(ring) => ring.stats(),
        }
    }

    /// Frees everything (stack and ring: all at once; TLSF: clear).
    pub fn reset(&mut self) {
        match self {
            Ranges::Tlsf(block) => block.clear(),
            Ranges::Stack(stack) => stack.free_all(),
            Ranges::Ring(ring) => ring.free_all(),
        }
    }
}

/// One block of a custom pool.
#[derive(Debug)]
pub(crate) struct CustomBlock<B> {
    pub block: B,
    pub size: u64,
    pub mapping: Option<Mapping>,
    pub ranges: Ranges,
}

/// A custom pool's state.
#[derive(Debug)]
pub(crate) struct CustomPool<B> {
    pub name: String,
    pub memory_type: u32,
    pub class: ResourceClass,
    pub block_size: u64,
    pub max_blocks: u32,
    pub strategy: PoolStrategy,
    pub generation: u32,
    /// Names this pool's current allocations: new at creation and at every reset, never reused by the
    /// allocator (so an allocation made before a reset is stale for good, whatever its range handle says).
    pub epoch: u32,
    pub blocks: Vec<CustomBlock<B>>,
    /// Live allocations and their requested bytes (for `reset_pool` and leak reports).
    pub live_count: u64,
    pub live_bytes: u64,
}

impl<B> CustomPool<B> {
    pub fn block_mut(&mut self, index: u32) -> Option<&mut CustomBlock<B>> {
        self.blocks.get_mut(index as usize)
    }

    /// Live allocations in the pool.
    pub fn allocation_count(&self) -> usize {
        self.blocks.iter().map(|b| b.ranges.stats().allocation_count).sum()
    }
}
