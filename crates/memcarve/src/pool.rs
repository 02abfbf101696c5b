//! Pools: one per (memory type, resource class), each a list of device blocks carved by the core's TLSF.
//!
//! A pool never calls the device while it is asked to place a request in its existing blocks; creating and
//! destroying blocks is the allocator's job, so the pool lock is never held across a driver call (which can take
//! a millisecond). Invariants: every block's `VirtualBlock` capacity equals the block's size; a block is
//! destroyed only when it holds no allocation; empty blocks are counted in `empty_blocks`.

use memcarve_core::{Handle, ResourceClass, VirtualBlock, VirtualBlockConfig};

use crate::diagnostics::AllocationMeta;
use crate::mapping::Mapping;

/// One device block and its sub-allocator.
#[derive(Debug)]
pub(crate) struct PoolBlock<B> {
    pub block: B,
    pub ranges: VirtualBlock<Box<AllocationMeta>>,
    pub size: u64,
    /// Changes whenever the slot is reused for another block, so handles into an old block are recognised.
    pub generation: u32,
    /// The block's host mapping, while any allocation in it is mapped (or for good, if persistent).
    pub mapping: Option<Mapping>,
}

/// Where a placed request landed.
#[derive(Debug)]
pub(crate) struct Placement {
    pub block_index: u32,
    pub block_generation: u32,
    pub handle: Handle,
    pub offset: u64,
}

/// Blocks of one memory type and class.
#[derive(Debug)]
pub(crate) struct Pool<B> {
    pub memory_type: u32,
    pub class: ResourceClass,
    /// Block slots; `None` where a block was destroyed (its slot is reused by the next block).
    blocks: Vec<Option<PoolBlock<B>>>,
    /// Generation the next block in each slot gets (kept across `None`).
    slot_generations: Vec<u32>,
    /// Live block slots, kept roughly in order of free bytes, fullest first (one bubble pass per placement):
    /// the order requests try the blocks in.
    order: Vec<u32>,
    /// Size of the next regular block (grows to the maximum).
    pub next_block_size: u64,
    /// Blocks that hold no allocation right now.
    pub empty_blocks: usize,
    pub committed_bytes: u64,
}

impl<B> Pool<B> {
    pub fn new(memory_type: u32, class: ResourceClass, first_block_size: u64) -> Pool<B> {
        Pool {
            memory_type,
            class,
            blocks: Vec::new(),
            slot_generations: Vec::new(),
            order: Vec::new(),
            next_block_size: first_block_size,
            empty_blocks: 0,
            committed_bytes: 0,
        }
    }

    /// Places a request in an existing block, fullest first (as VMA does: allocations gather in few blocks,
    /// and empty blocks stay empty, to be reused whole or given back): first with the O(1) search in every
    /// block, then, before the caller pays for a new block, with the scan that finds any range that fits.
    pub fn place(&mut self, size: u64, alignment: u64) -> Option<Placement> {
        self.sort_step();
        for scan in [false, true] {
            for &index in &self.order {
                let Some(entry) = self.blocks[index as usize].as_mut() else { continue };
                if entry.ranges.free_bytes() < size {
                    continue;
                }
                let was_empty = entry.ranges.is_empty();
                let placed = if scan {
                    entry.ranges.allocate(size, alignment, self.class)
                } else {
                    entry.ranges.allocate_quick(size, alignment, self.class)
                };
                if let Ok(allocation) = placed {
                    if was_empty {
                        self.empty_blocks -= 1;
                    }
                    return Some(Placement {
                        block_index: index,
                        block_generation: entry.generation,
                        handle: allocation.handle,
                        offset: allocation.offset,
                    });
                }
            }
        }
        None
    }

    /// One bubble pass over `order` by free bytes (ties: the newer slot first): O(blocks), and the order is
    /// sorted after a few placements while the blocks' fill changes a little at a time.
    fn sort_step(&mut self) {
        let key = |blocks: &[Option<PoolBlock<B>>], index: u32| {
            let free = blocks[index as usize].as_ref().map_or(u64::MAX, |entry| entry.ranges.free_bytes());
            (free, core::cmp::Reverse(index))
        };
        for at in 1..self.order.len() {
            if key(&self.blocks, self.order[at - 1]) > key(&self.blocks, self.order[at]) {
                self.order.swap(at - 1, at);
            }
        }
    }

    /// Whether `order` names every live block slot once and nothing else (for checks).
    #[cfg(any(test, feature = "check"))]
    pub fn order_is_complete(&self) -> bool {
        let mut listed = self.order.clone();
        listed.sort_unstable();
        let live: Vec<u32> = self.blocks().map(|(index, _)| index).collect();
        listed == live
    }

    /// Adds a new (empty) block and returns its slot index.
    pub fn add_block(
        &mut self,
        block: B,
        size: u64,
        class_granularity: u64,
        mapping: Option<Mapping>,
    ) -> Result<u32, (B, Option<Mapping>)> {
        let config = VirtualBlockConfig::new(size).with_class_granularity(class_granularity.max(1));
        let ranges = match VirtualBlock::with_config(config) {
            Ok(ranges) => ranges,
            Err(_) => return Err((block, mapping)),
        };
        let index = match self.blocks.iter().position(Option::is_none) {
            Some(index) => index,
            None => {
                self.blocks.push(None);
                self.slot_generations.push(0);
                self.blocks.len() - 1
            }
        };
        let generation = self.slot_generations[index];
        self.blocks[index] = Some(PoolBlock { block, ranges, size, generation, mapping });
        self.order.push(index as u32);
        self.empty_blocks += 1;
        self.committed_bytes += size;
        Ok(index as u32)
    }

    /// Places a request in the block at `index` (just added for it).
    pub fn place_in(&mut self, index: u32, size: u64, alignment: u64) -> Option<Placement> {
        let entry = self.blocks.get_mut(index as usize)?.as_mut()?;
        let allocation = entry.ranges.allocate(size, alignment, self.class).ok()?;
        self.empty_blocks -= 1;
        Some(Placement {
            block_index: index,
            block_generation: entry.generation,
            handle: allocation.handle,
            offset: allocation.offset,
        })
    }

    /// Frees a placed range. Returns whether its block became empty.
    pub fn free(
        &mut self,
        block_index: u32,
        block_generation: u32,
        handle: Handle,
    ) -> Result<bool, memcarve_core::Error> {
        let entry = match self.blocks.get_mut(block_index as usize) {
            Some(Some(entry)) if entry.generation == block_generation => entry,
            // The block was destroyed since: it only is when empty, so this range was freed before.
            _ => return Err(memcarve_core::Error::StaleHandle),
        };
        entry.ranges.free(handle)?;
        let empty = entry.ranges.is_empty();
        if empty {
            self.empty_blocks += 1;
        }
        Ok(empty)
    }

    /// Removes up to `keep_at_most`-exceeding empty blocks (all of them with 0), returning the device blocks to
    /// destroy. The newest empty blocks are kept: they are the largest.
    pub fn take_empty_blocks(&mut self, keep_at_most: usize) -> Vec<(B, Option<Mapping>, u64)> {
        let mut taken = Vec::new();
        let mut kept = 0;
        for index in (0..self.blocks.len()).rev() {
            let is_empty = matches!(&self.blocks[index], Some(entry) if entry.ranges.is_empty());
            if !is_empty {
                continue;
            }
            if kept < keep_at_most {
                kept += 1;
                continue;
            }
            if let Some(entry) = self.blocks[index].take() {
                self.order.retain(|&slot| slot as usize != index);
                self.slot_generations[index] = entry.generation.wrapping_add(1);
                self.empty_blocks -= 1;
                self.committed_bytes -= entry.size;
                taken.push((entry.block, entry.mapping, entry.size));
            }
        }
        taken
    }

    /// Removes every block (for the allocator's drop), live allocations or not.
    pub fn take_all_blocks(&mut self) -> Vec<(B, Option<Mapping>, u64)> {
        self.empty_blocks = 0;
        self.committed_bytes = 0;
        self.order.clear();
        self.blocks.drain(..).flatten().map(|entry| (entry.block, entry.mapping, entry.size)).collect()
    }

    /// Live blocks with their sub-allocators.
    pub fn blocks(&self) -> impl Iterator<Item = (u32, &PoolBlock<B>)> + '_ {
        self.blocks
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| slot.as_ref().map(|entry| (index as u32, entry)))
    }

    /// The device block at `index`, if live and of `generation`, for changes to its mapping.
    pub fn block_mut(&mut self, index: u32, generation: u32) -> Option<&mut PoolBlock<B>> {
        match self.blocks.get_mut(index as usize) {
            Some(Some(entry)) if entry.generation == generation => Some(entry),
            _ => None,
        }
    }
}
