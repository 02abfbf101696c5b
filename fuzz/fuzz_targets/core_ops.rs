//! Fuzzes memcarve-core with arbitrary operation sequences on a `VirtualBlock`, a `RingAllocator` and a
//! `LinearAllocator`, including forged raw handles: nothing may panic, every invariant must hold after every
//! operation, and every range handed out must be aligned and disjoint from the live ones.
//!
//! `cargo +nightly fuzz run core_ops` from the repository root (see docs/FUZZING.md).
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use memcarve_core::{
    Allocation, Handle, LinearAllocator, ResourceClass, RingAllocator, VirtualBlock, VirtualBlockConfig,
};

#[derive(Debug, Arbitrary)]
enum Op {
    Allocate { size: u32, alignment_log2: u8, class: u8 },
    Free { index: u16 },
    FreeRaw { raw: u64 },
    FreeStale { index: u16 },
    Grow { extra: u32 },
    Clear,
    RingAllocate { size: u16, alignment_log2: u8 },
    RingFree { newest: bool },
    StackAllocate { size: u16, alignment_log2: u8 },
    StackFree { oldest: bool },
    StackFreeAll,
}

#[derive(Debug, Arbitrary)]
struct Program {
    capacity: u32,
    min_granularity_log2: u8,
    class_granularity_log2: u8,
    ops: Vec<Op>,
}

fn disjoint_insert(live: &mut BTreeMap<u64, u64>, offset: u64, end: u64) {
    if let Some((_, &before_end)) = live.range(..=offset).next_back() {
        assert!(before_end <= offset, "overlap before {offset}");
    }
    if let Some((&after, _)) = live.range(offset..).next() {
        assert!(end <= after, "overlap after {offset}");
    }
    live.insert(offset, end);
}

fuzz_target!(|program: Program| {
    let capacity = u64::from(program.capacity.max(1));
    let min_granularity = 1u64 << (program.min_granularity_log2 % 9);
    let config = VirtualBlockConfig::new(capacity)
        .with_min_granularity(min_granularity)
        .with_class_granularity(1 << (program.class_granularity_log2 % 17));
    let Ok(mut block) = VirtualBlock::<u32>::with_config(config) else { return };
    let Ok(mut ring) = RingAllocator::new(capacity) else { return };
    let Ok(mut stack) = LinearAllocator::new(capacity) else { return };
    let mut live: Vec<Allocation> = Vec::new();
    let mut ranges: BTreeMap<u64, u64> = BTreeMap::new();
    let mut stale: Vec<u64> = Vec::new();
    let mut ring_live: std::collections::VecDeque<Allocation> = Default::default();
    let mut stack_live: Vec<Allocation> = Vec::new();

    for op in program.ops.into_iter().take(2000) {
        match op {
            Op::Allocate { size, alignment_log2, class } => {
                let alignment = 1u64.checked_shl(u32::from(alignment_log2)).unwrap_or(0);
                let class = ResourceClass::from_u8(class % 4).unwrap_or_default();
                if let Ok(a) = block.allocate_with(u64::from(size), alignment, class, size) {
                    assert_eq!(a.offset % alignment, 0);
                    let end = a.offset + u64::from(size).div_ceil(min_granularity) * min_granularity;
                    disjoint_insert(&mut ranges, a.offset, end);
                    live.push(a);
                }
            }
            Op::Free { index } if !live.is_empty() => {
                let a = live.swap_remove(usize::from(index) % live.len());
                ranges.remove(&a.offset);
                stale.push(a.handle.to_raw());
                let size = a.size;
                assert_eq!(block.free(a), Ok(Some(size as u32)));
            }
            Op::FreeRaw { raw } => {
                // A forged handle either names a live allocation (then it is freed) or is refused.
                if let Some(position) = live.iter().position(|a| a.handle.to_raw() == raw) {
                    let a = live.swap_remove(position);
                    ranges.remove(&a.offset);
                    assert!(block.free(a).is_ok());
                } else {
                    assert!(block.free(Handle::from_raw(raw)).is_err());
                }
            }
            Op::FreeStale { index } if !stale.is_empty() => {
                let raw = stale[usize::from(index) % stale.len()];
                assert!(block.free(Handle::from_raw(raw)).is_err());
            }
            Op::Grow { extra } => {
                let _ = block.grow(block.capacity().saturating_add(u64::from(extra)));
            }
            Op::Clear => {
                block.clear();
                ranges.clear();
                stale.extend(live.drain(..).map(|a| a.handle.to_raw()));
            }
            Op::RingAllocate { size, alignment_log2 } => {
                if let Ok(a) = ring.allocate(u64::from(size), 1u64 << (alignment_log2 % 16)) {
                    ring_live.push_back(a);
                }
            }
            Op::RingFree { newest } => {
                if newest && ring_live.len() > 1 {
                    let raw = ring_live.back().map(|a| a.handle.to_raw()).unwrap_or_default();
                    assert!(ring.free(Handle::from_raw(raw)).is_err());
                } else if let Some(a) = ring_live.pop_front() {
                    assert!(ring.free(a).is_ok());
                }
            }
            Op::StackAllocate { size, alignment_log2 } => {
                if let Ok(a) = stack.allocate(u64::from(size), 1u64 << (alignment_log2 % 16)) {
                    stack_live.push(a);
                }
            }
            Op::StackFree { oldest } => {
                if oldest && stack_live.len() > 1 {
                    let raw = stack_live[0].handle.to_raw();
                    assert!(stack.free(Handle::from_raw(raw)).is_err());
                } else if let Some(a) = stack_live.pop() {
                    assert!(stack.free(a).is_ok());
                }
            }
            Op::StackFreeAll => {
                stack.free_all();
                stack_live.clear();
            }
            Op::Free { .. } | Op::FreeStale { .. } => {}
        }
        block.check().expect("VirtualBlock invariant");
        ring.check().expect("ring invariant");
        stack.check().expect("stack invariant");
        assert_eq!(block.stats().allocation_count, live.len());
        assert_eq!(ring.stats().allocation_count, ring_live.len());
    }
});
