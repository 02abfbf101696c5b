//! Property tests: random operation programs run against a `VirtualBlock` and a reference model, a sorted map
//! of live ranges. The model decides independently whether ranges overlap, whether the class rule holds, and
//! whether an out-of-memory answer was honest (no gap between live ranges could hold the request).

use std::collections::BTreeMap;

use memcarve_core::{Allocation, Error, Handle, ResourceClass, VirtualBlock, VirtualBlockConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Allocate {
        size: u64,
        alignment_log2: u32,
        class: u8,
    },
    /// `allocate_where` (`mode` 0), `allocate_at_end_where` (1) or `allocate_good_fit_where` (2) answering `shift`
    /// bytes into each range shown (often a position that does not hold the request: misaligned, or running past
    /// the range).
    AllocateWhere {
        size: u64,
        alignment_log2: u32,
        class: u8,
        shift: u64,
        mode: u8,
    },
    Free {
        index: usize,
    },
    FreeAgain {
        index: usize,
    },
    Grow {
        extra: u64,
    },
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u64..5000, 0u32..10, 0u8..4)
            .prop_map(|(size, alignment_log2, class)| Op::Allocate { size, alignment_log2, class }),
        3 => (1u64..5000, 0u32..10, 0u8..4, 0u64..3000, 0u8..3).prop_map(
            |(size, alignment_log2, class, shift, mode)| {
                Op::AllocateWhere { size, alignment_log2, class, shift, mode }
            }
        ),
        4 => any::<usize>().prop_map(|index| Op::Free { index }),
        1 => any::<usize>().prop_map(|index| Op::FreeAgain { index }),
        1 => (1u64..4096).prop_map(|extra| Op::Grow { extra }),
        1 => Just(Op::Clear),
    ]
}

/// The reference: live ranges by offset, with their (rounded) end and class.
#[derive(Default)]
struct Model {
    live: BTreeMap<u64, (u64, ResourceClass)>,
}

impl Model {
    /// Gaps between live ranges within `[0, capacity)`.
    fn gaps(&self, capacity: u64) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut cursor = 0;
        for (&offset, &(end, _)) in &self.live {
            if offset > cursor {
                gaps.push((cursor, offset));
            }
            cursor = end;
        }
        if cursor < capacity {
            gaps.push((cursor, capacity));
        }
        gaps
    }

    fn insert(&mut self, offset: u64, end: u64, class: ResourceClass, page: u64) {
        assert!(offset < end);
        if let Some((&before, &(before_end, before_class))) = self.live.range(..offset).next_back() {
            assert!(before_end <= offset, "overlaps the range at {before}");
            if before_class.conflicts_with(class) {
                assert!(
                    (before_end - 1) / page != offset / page,
                    "class conflict with the range at {before}"
                );
            }
        }
        if let Some((&after, &(_, after_class))) = self.live.range(offset..).next() {
            assert!(end <= after, "overlaps the range at {after}");
            if after_class.conflicts_with(class) {
                assert!((end - 1) / page != after / page, "class conflict with the range at {after}");
            }
        }
        self.live.insert(offset, (end, class));
    }
}

/// `size` times `scale` if it is even; odd sizes stay small.
fn scaled(size: u64, scale: u64) -> u64 {
    if size.is_multiple_of(2) { size * scale } else { size }
}

/// Runs `program` with its even sizes, answered shifts and growths multiplied by `scale` (so that a program of
/// small numbers also fills a block of many granules; with `scale` odd, sizes are not all multiples of anything);
/// odd sizes stay as they are.
fn run(program: Vec<Op>, capacity: u64, min_granularity: u64, page: u64, scale: u64) {
    let config =
        VirtualBlockConfig::new(capacity).with_min_granularity(min_granularity).with_class_granularity(page);
    let mut block = VirtualBlock::<()>::with_config(config).unwrap();
    let mut model = Model::default();
    let mut handles: Vec<Allocation> = Vec::new();
    let mut freed: Vec<u64> = Vec::new();
    for op in program {
        let op = match op {
            Op::Allocate { size, alignment_log2, class } => {
                Op::Allocate { size: scaled(size, scale), alignment_log2, class }
            }
            Op::AllocateWhere { size, alignment_log2, class, shift, mode } => Op::AllocateWhere {
                size: scaled(size, scale),
                alignment_log2,
                class,
                shift: shift * scale,
                mode,
            },
            Op::Grow { extra } => Op::Grow { extra: extra * scale },
            other => other,
        };
        match op {
            Op::Allocate { size, alignment_log2, class } => {
                let class = ResourceClass::from_u8(class).unwrap();
                let alignment = 1u64 << alignment_log2;
                match block.allocate(size, alignment, class) {
                    Ok(a) => {
                        assert_eq!(a.offset % alignment, 0);
                        let end = a.offset + size.div_ceil(min_granularity) * min_granularity;
                        assert!(end <= block.capacity());
                        model.insert(a.offset, end, class, page);
                        handles.push(a);
                    }
                    Err(Error::OutOfMemory { .. }) => {
                        // Without a class rule, the model's gaps decide alone whether memory was really short.
                        if page == 1 {
                            let asize = size.div_ceil(min_granularity) * min_granularity;
                            let alignment = alignment.max(min_granularity);
                            let fits = model
                                .gaps(block.capacity())
                                .into_iter()
                                .any(|(start, end)| start.div_ceil(alignment) * alignment + asize <= end);
                            assert!(!fits, "refused {size} at {alignment} though a gap fits");
                        }
                    }
                    Err(Error::SizeTooLarge { .. } | Error::AlignmentTooLarge { .. }) => {
                        assert!(size > block.capacity() || alignment > block.capacity());
                    }
                    Err(other) => panic!("unexpected {other:?}"),
                }
            }
            Op::AllocateWhere { size, alignment_log2, class, shift, mode } => {
                let class = ResourceClass::from_u8(class).unwrap();
                let alignment = 1u64 << alignment_log2;
                let mut shown = Vec::new();
                let mut answer = |offset, len| {
                    shown.push((offset, offset + len));
                    Some(offset + shift)
                };
                let placed = match mode {
                    0 => block.allocate_where(size, alignment, class, 4, &mut answer),
                    1 => block.allocate_at_end_where(size, alignment, class, answer),
                    _ => block.allocate_good_fit_where(size, alignment, class, answer),
                };
                assert!(shown.len() <= if mode == 0 { 4 } else { 1 });
                let gaps = model.gaps(block.capacity());
                assert!(shown.iter().all(|range| gaps.contains(range)), "only free ranges are shown");
                if mode == 1 {
                    assert!(shown.iter().all(|&(_, end)| end == block.capacity()), "only the last range");
                }
                match placed {
                    Ok(Some(a)) => {
                        assert_eq!(a.offset % alignment, 0);
                        assert_eq!(a.offset, shown.last().unwrap().0 + shift, "at the answered position");
                        let end = a.offset + size.div_ceil(min_granularity) * min_granularity;
                        model.insert(a.offset, end, class, page);
                        handles.push(a);
                    }
                    Ok(None) => {}
                    Err(Error::SizeTooLarge { .. } | Error::AlignmentTooLarge { .. }) => {
                        assert!(size > block.capacity() || alignment > block.capacity());
                    }
                    Err(other) => panic!("unexpected {other:?}"),
                }
            }
            Op::Free { index } if !handles.is_empty() => {
                let a = handles.swap_remove(index % handles.len());
                assert!(model.live.remove(&a.offset).is_some());
                freed.push(a.handle.to_raw());
                block.free(a).unwrap();
            }
            Op::FreeAgain { index } if !freed.is_empty() => {
                let raw = freed[index % freed.len()];
                assert_eq!(block.free(Handle::from_raw(raw)), Err(Error::StaleHandle));
            }
            Op::Grow { extra } => block.grow(block.capacity() + extra).unwrap(),
            Op::Clear => {
                block.clear();
                model.live.clear();
                freed.extend(handles.drain(..).map(|a| a.handle.to_raw()));
            }
            Op::Free { .. } | Op::FreeAgain { .. } => {}
        }
        block.check().unwrap();
        let stats = block.stats();
        assert_eq!(stats.allocation_count, model.live.len());
        let model_used: u64 = model.live.iter().map(|(&offset, &(end, _))| end - offset).sum();
        assert_eq!(stats.used_bytes, model_used);
        let model_gaps = model.gaps(block.capacity());
        assert_eq!(stats.free_range_count, model_gaps.len(), "free ranges are coalesced");
        let largest_gap = model_gaps.iter().map(|(s, e)| e - s).max().unwrap_or(0);
        assert_eq!(stats.largest_free_range, largest_gap);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn matches_the_model_without_class_rule(
        program in prop::collection::vec(op(), 1..300),
        capacity in 1u64..200_000,
        granularity_log2 in 0u32..6,
    ) {
        run(program, capacity, 1 << granularity_log2, 1, 1);
    }

    #[test]
    fn matches_the_model_with_class_rule(
        program in prop::collection::vec(op(), 1..300),
        capacity in 1u64..200_000,
        page_log2 in 4u32..12,
    ) {
        run(program, capacity, 16, 1 << page_log2, 1);
    }

    /// Blocks of 2^35 granules and more count sizes in larger bin units (and a growth can cross to larger ones):
    /// the answers must stay the model's all the same, out-of-memory included.
    #[test]
    fn matches_the_model_past_the_unit_limit(
        program in prop::collection::vec(op(), 1..300),
        capacity_log2 in 34u32..38,
        capacity_part in 0u64..1 << 20,
        granularity_log2 in 0u32..3,
        page_log2 in prop::sample::select(vec![0u32, 12, 24]),
    ) {
        // Capacities need not be multiples of the granularity.
        let capacity =
            (1u64 << capacity_log2) + (capacity_part << (capacity_log2 - 20)) + u64::from(granularity_log2);
        run(program, capacity, 1 << granularity_log2, 1 << page_log2, (1 << (capacity_log2 - 12)) + 1);
    }
}
