//! Node storage reuses its slots: once a workload has reached its peak, repeating it allocates nothing on the
//! heap. Counted by a global allocator that tallies the calling thread's allocations (a binary of its own, so the
//! counting allocator does not slow the other tests).

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use memcarve_core::{ResourceClass, RingAllocator, VirtualBlock, VirtualBlockConfig};

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System` upholds the
// `GlobalAlloc` contract; the counter is a const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size layout), passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout` (through `alloc` or `realloc` above).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller upholds `realloc`'s contract; `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn heap_allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// One cycle: 2,000 allocations of mixed sizes and alignments, then all freed in a scrambled order.
fn cycle(block: &mut VirtualBlock<u32>, handles: &mut Vec<memcarve_core::Allocation>) {
    for i in 0..2000u64 {
        let size = 1 + (i * 7919) % 100_000;
        let alignment = 1 << (i % 9);
        handles.push(block.allocate_with(size, alignment, ResourceClass::Buffer, i as u32).unwrap());
    }
    let mut order = 0usize;
    while !handles.is_empty() {
        order = (order + 7) % handles.len();
        block.free(handles.swap_remove(order)).unwrap();
    }
}

#[test]
fn repeating_a_workload_does_not_touch_the_heap() {
    let config = VirtualBlockConfig::new(1 << 30).with_min_granularity(16);
    let mut block = VirtualBlock::<u32>::with_config(config).unwrap();
    let mut handles = Vec::with_capacity(2000);
    let start = heap_allocations();
    cycle(&mut block, &mut handles);
    assert!(heap_allocations() > start, "the first cycle grows the slab: the counter sees it");
    let before = heap_allocations();
    for _ in 0..3 {
        cycle(&mut block, &mut handles);
    }
    assert_eq!(heap_allocations() - before, 0, "the second and later cycles reuse every slot");
    assert_eq!(block.stats().free_range_count, 1);
}

#[test]
fn ring_in_steady_state_does_not_touch_the_heap() {
    let mut ring = RingAllocator::new(1 << 20).unwrap();
    let mut live = std::collections::VecDeque::with_capacity(64);
    let mut run = |ring: &mut RingAllocator, steps: u64| {
        for i in 0..steps {
            if live.len() == 32 {
                ring.free(live.pop_front().unwrap()).unwrap();
            }
            live.push_back(ring.allocate(1 + (i * 4099) % 20_000, 256).unwrap());
        }
    };
    run(&mut ring, 1000);
    let before = heap_allocations();
    run(&mut ring, 10_000);
    assert_eq!(heap_allocations() - before, 0);
}
