//! Reports of the allocator's state: a JSON report of our own (blocks with their allocations and free ranges,
//! statistics, diagnostics), and the same state in the layout of VMA's JSON dump (`vmaBuildStatsString` with the
//! detailed map), so that VMA's own visualizer (`tools/GpuMemDumpVis`) can draw memcarve's memory.

use serde::Serialize;
use serde_json::{Map, Value, json};

use memcarve_core::ResourceClass;

use crate::allocator::{Allocator, BlockKind};
use crate::device::{Device, MemoryHeapFlags, MemoryPropertyFlags};
use crate::diagnostics::{AllocatorStats, Diagnostics, MemoryStats};

/// One range of a block in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeReport {
    /// Offset in the block (or heap).
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// Whether an allocation holds it.
    pub used: bool,
    /// The allocation's name, when tracked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One block (or virtual heap) in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockReport {
    /// Memory type.
    pub memory_type: u32,
    /// Class of its pool (of its allocation, if dedicated; Unknown for a virtual heap).
    #[serde(serialize_with = "class_name")]
    pub class: ResourceClass,
    /// Pooled, dedicated or virtual heap.
    #[serde(serialize_with = "kind_name")]
    pub kind: BlockKind,
    /// Slot index (per pool, or among dedicated blocks).
    pub index: u32,
    /// Bytes (for a virtual heap: committed bytes).
    pub size: u64,
    /// Mapping holds on the block (0 when unmapped).
    pub map_refs: u32,
    /// Used and free ranges in offset order (empty for a virtual heap).
    pub ranges: Vec<RangeReport>,
}

/// The allocator's state as JSON-serialisable data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Memory types: index, heap and flags.
    pub memory_types: Vec<Value>,
    /// Heaps: size, flags, usage and budget.
    pub heaps: Vec<Value>,
    /// Overall statistics.
    #[serde(serialize_with = "stats_value")]
    pub total: MemoryStats,
    /// Counters and high-water marks.
    #[serde(serialize_with = "diagnostics_value")]
    pub diagnostics: Diagnostics,
    /// Every block.
    pub blocks: Vec<BlockReport>,
}

fn class_name<S: serde::Serializer>(class: &ResourceClass, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(vma_type(*class))
}

fn kind_name<S: serde::Serializer>(kind: &BlockKind, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(match kind {
        BlockKind::Pooled => "pooled",
        BlockKind::Dedicated => "dedicated",
        BlockKind::VirtualHeap => "virtual_heap",
        BlockKind::CustomPool => "custom_pool",
    })
}

fn stats_json(stats: &MemoryStats) -> Value {
    json!({
        "committed_bytes": stats.committed_bytes,
        "used_bytes": stats.used_bytes,
        "free_bytes": stats.free_bytes,
        "allocation_count": stats.allocation_count,
        "block_count": stats.block_count,
        "free_range_count": stats.free_range_count,
        "largest_free_range": stats.largest_free_range,
        "empty_block_count": stats.empty_block_count,
        "fragmentation": stats.fragmentation(),
    })
}

fn stats_value<S: serde::Serializer>(stats: &MemoryStats, serializer: S) -> Result<S::Ok, S::Error> {
    stats_json(stats).serialize(serializer)
}

fn diagnostics_value<S: serde::Serializer>(d: &Diagnostics, serializer: S) -> Result<S::Ok, S::Error> {
    json!({
        "block_creations": d.block_creations,
        "block_destructions": d.block_destructions,
        "block_reuses": d.block_reuses,
        "fallbacks": d.fallbacks,
        "reclaims": d.reclaims,
        "failures": d.failures,
        "peak_live_allocations": d.peak_live_allocations,
        "peak_live_bytes": d.peak_live_bytes,
        "peak_committed_bytes": d.peak_committed_bytes,
    })
    .serialize(serializer)
}

/// VMA's name for a class.
fn vma_type(class: ResourceClass) -> &'static str {
    match class {
        ResourceClass::Unknown => "UNKNOWN",
        ResourceClass::Buffer => "BUFFER",
        ResourceClass::LinearImage => "IMAGE_LINEAR",
        ResourceClass::OptimalImage => "IMAGE_OPTIMAL",
    }
}

fn property_names(flags: MemoryPropertyFlags) -> Vec<String> {
    flags.iter_names().map(|(name, _)| name.to_string()).collect()
}

fn heap_names(flags: MemoryHeapFlags) -> Vec<String> {
    flags.iter_names().map(|(name, _)| name.to_string()).collect()
}

/// VMA's statistics object for a set of blocks.
fn vma_stats(stats: &MemoryStats) -> Value {
    json!({
        "BlockCount": stats.block_count,
        "BlockBytes": stats.committed_bytes,
        "AllocationCount": stats.allocation_count,
        "AllocationBytes": stats.used_bytes,
        "UnusedRangeCount": stats.free_range_count,
    })
}

impl<D: Device> Allocator<D> {
    /// The allocator's state: memory types, heaps, statistics, diagnostics, and every block with its ranges.
    pub fn report(&self) -> Report {
        let properties = self.memory_properties();
        let budgets = self.device().heap_budgets();
        let memory_types = properties
            .types
            .iter()
            .enumerate()
            .map(|(index, t)| json!({"index": index, "heap": t.heap_index, "flags": property_names(t.flags)}))
            .collect();
        let heaps = properties
            .heaps
            .iter()
            .enumerate()
            .map(|(index, h)| {
                let budget = budgets.get(index).copied().unwrap_or_default();
                json!({"index": index, "size": h.size, "flags": heap_names(h.flags),
                       "usage": budget.usage, "budget": budget.budget})
            })
            .collect();
        Report {
            memory_types,
            heaps,
            total: self.stats().total,
            diagnostics: self.diagnostics(),
            blocks: self.block_reports(),
        }
    }

    /// [`Allocator::report`] as pretty-printed JSON.
    pub fn report_json(&self) -> String {
        serde_json::to_string_pretty(&self.report())
            .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
    }

    /// The state in the layout of VMA's JSON dump with the detailed map, readable by VMA's
    /// `GpuMemDumpVis.py`. Virtual heaps appear as one block of their committed size.
    pub fn vma_dump_json(&self) -> String {
        let properties = self.memory_properties();
        let stats: AllocatorStats = self.stats();
        let budgets = self.device().heap_budgets();
        let limits = properties.limits;
        let general = json!({
            "API": "Vulkan",
            "apiVersion": "memcarve",
            "GPU": "memcarve",
            "deviceType": 0,
            "maxMemoryAllocationCount": limits.max_allocation_count,
            "bufferImageGranularity": limits.buffer_image_granularity,
            "nonCoherentAtomSize": limits.non_coherent_atom_size,
            "memoryHeapCount": properties.heaps.len(),
            "memoryTypeCount": properties.types.len(),
        });
        let mut memory_info = Map::new();
        for (heap_index, heap) in properties.heaps.iter().enumerate() {
            let mut heap_stats = MemoryStats::default();
            let mut pools = Map::new();
            for (type_index, memory_type) in properties.types.iter().enumerate() {
                if memory_type.heap_index as usize != heap_index {
                    continue;
                }
                let type_stats = stats.memory_type(type_index as u32);
                heap_stats.add(&type_stats);
                pools.insert(
                    format!("Type {type_index}"),
                    json!({"Flags": property_names(memory_type.flags), "Stats": vma_stats(&type_stats)}),
                );
            }
            let budget = budgets.get(heap_index).copied().unwrap_or_default();
            memory_info.insert(
                format!("Heap {heap_index}"),
                json!({
                    "Flags": heap_names(heap.flags),
                    "Size": heap.size,
                    "Budget": {"BudgetBytes": budget.budget, "UsageBytes": budget.usage},
                    "Stats": vma_stats(&heap_stats),
                    "MemoryPools": pools,
                }),
            );
        }
        let mut default_pools = Map::new();
        let blocks = self.block_reports();
        for type_index in 0..properties.types.len() as u32 {
            let mut vma_blocks = Map::new();
            let mut dedicated = Vec::new();
            for block in blocks.iter().filter(|b| b.memory_type == type_index) {
                if block.kind == BlockKind::Dedicated {
                    let name = block.ranges.first().and_then(|r| r.name.clone());
                    let mut entry = json!({"Type": vma_type(block.class), "Size": block.size, "Usage": 0});
                    if let (Some(name), Some(object)) = (name, entry.as_object_mut()) {
                        object.insert("Name".into(), Value::String(name));
                    }
                    dedicated.push(entry);
                    continue;
                }
                let suballocations: Vec<Value> = if block.kind == BlockKind::VirtualHeap {
                    vec![json!({"Offset": 0, "Type": "UNKNOWN", "Size": block.size, "Usage": 0})]
                } else {
                    block
                        .ranges
                        .iter()
                        .map(|r| {
                            let kind = if r.used { vma_type(block.class) } else { "FREE" };
                            let mut entry = json!({"Offset": r.offset, "Type": kind, "Size": r.size});
                            if let Some(object) = entry.as_object_mut() {
                                if r.used {
                                    object.insert("Usage".into(), json!(0));
                                }
                                if let Some(name) = &r.name {
                                    object.insert("Name".into(), Value::String(name.clone()));
                                }
                            }
                            entry
                        })
                        .collect()
                };
                let used: Vec<_> = block.ranges.iter().filter(|r| r.used).collect();
                let unused: u64 = block.ranges.iter().filter(|r| !r.used).map(|r| r.size).sum();
                vma_blocks.insert(
                    vma_blocks.len().to_string(),
                    json!({
                        "MapRefCount": block.map_refs,
                        "TotalBytes": block.size,
                        "UnusedBytes": unused,
                        "Allocations": used.len(),
                        "UnusedRanges": block.ranges.len() - used.len(),
                        "Suballocations": suballocations,
                    }),
                );
            }
            if vma_blocks.is_empty() && dedicated.is_empty() {
                continue;
            }
            default_pools.insert(
                format!("Type {type_index}"),
                json!({
                    "PreferredBlockSize": self.config().sizes.device_max,
                    "Blocks": vma_blocks,
                    "DedicatedAllocations": dedicated,
                }),
            );
        }
        let dump = json!({
            "General": general,
            "Total": vma_stats(&stats.total),
            "MemoryInfo": memory_info,
            "DefaultPools": default_pools,
        });
        serde_json::to_string_pretty(&dump).unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
    }
}
