//! Requests and memory-type policy: which memory type serves a request, and why.
//!
//! Required flags and `memory_type_bits` are a hard filter that is never relaxed. Preferred flags raise a
//! type's rank, avoided flags lower it. The budget policy decides how heaps without room rank:
//! `PreferWithin` moves types whose heap has room ahead, `RequireWithin` lets the allocator reuse committed
//! blocks of an over-budget heap but not create new ones, `Ignore` ranks without looking at room.

use crate::device::{HeapBudget, MemoryProperties, MemoryPropertyFlags};
use crate::error::{Error, Result};
use memcarve_core::ResourceClass;

/// What the memory will be used for; each usage implies flags (see [`Usage::implied_flags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Usage {
    /// Only the device touches it: requires `DEVICE_LOCAL`, avoids `HOST_VISIBLE`.
    GpuOnly,
    /// The host writes, the device reads: requires `HOST_VISIBLE`, prefers `HOST_COHERENT` and
    /// `DEVICE_LOCAL`, avoids `HOST_CACHED`.
    Upload,
    /// The device writes, the host reads: requires `HOST_VISIBLE`, prefers `HOST_CACHED` and `HOST_COHERENT`.
    Readback,
    /// No implicit requirement; prefers `DEVICE_LOCAL`.
    #[default]
    Automatic,
}

impl Usage {
    /// `(required, preferred, avoided)` flags this usage implies.
    pub const fn implied_flags(self) -> (MemoryPropertyFlags, MemoryPropertyFlags, MemoryPropertyFlags) {
        use MemoryPropertyFlags as F;
        match self {
            Usage::GpuOnly => (F::DEVICE_LOCAL, F::empty(), F::HOST_VISIBLE),
            Usage::Upload => (F::HOST_VISIBLE, F::HOST_COHERENT.union(F::DEVICE_LOCAL), F::HOST_CACHED),
            Usage::Readback => (F::HOST_VISIBLE, F::HOST_CACHED.union(F::HOST_COHERENT), F::empty()),
            Usage::Automatic => (F::empty(), F::DEVICE_LOCAL, F::empty()),
        }
    }
}

/// How heap budgets affect the choice of memory type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BudgetPolicy {
    /// Types whose heap has room for the request rank ahead of those without.
    #[default]
    PreferWithin,
    /// New blocks are never created on a heap without room; already committed blocks may still be used.
    RequireWithin,
    /// Rank by flags alone.
    Ignore,
}

/// Explicit memory-type options. Flags add to those implied by [`AllocationOptions::usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct AllocationOptions {
    /// What the memory is for.
    pub usage: Usage,
    /// Flags a type must have (never relaxed).
    pub required_flags: MemoryPropertyFlags,
    /// Flags that raise a type's rank.
    pub preferred_flags: MemoryPropertyFlags,
    /// Flags that lower a type's rank without ruling it out.
    pub avoided_flags: MemoryPropertyFlags,
    /// How budgets affect the ranking.
    pub budget: BudgetPolicy,
}

impl AllocationOptions {
    /// Options for `usage` with no extra flags and [`BudgetPolicy::PreferWithin`].
    pub const fn new(usage: Usage) -> AllocationOptions {
        AllocationOptions {
            usage,
            required_flags: MemoryPropertyFlags::empty(),
            preferred_flags: MemoryPropertyFlags::empty(),
            avoided_flags: MemoryPropertyFlags::empty(),
            budget: BudgetPolicy::PreferWithin,
        }
    }

    /// Adds required flags.
    pub const fn with_required(mut self, flags: MemoryPropertyFlags) -> AllocationOptions {
        self.required_flags = self.required_flags.union(flags);
        self
    }

    /// Adds preferred flags.
    pub const fn with_preferred(mut self, flags: MemoryPropertyFlags) -> AllocationOptions {
        self.preferred_flags = self.preferred_flags.union(flags);
        self
    }

    /// Adds avoided flags.
    pub const fn with_avoided(mut self, flags: MemoryPropertyFlags) -> AllocationOptions {
        self.avoided_flags = self.avoided_flags.union(flags);
        self
    }

    /// Sets the budget policy.
    pub const fn with_budget(mut self, budget: BudgetPolicy) -> AllocationOptions {
        self.budget = budget;
        self
    }

    /// `(required, preferred, avoided)`: the usage's implied flags plus the explicit ones. A flag both required
    /// and avoided stays required.
    pub fn effective_flags(&self) -> (MemoryPropertyFlags, MemoryPropertyFlags, MemoryPropertyFlags) {
        let (required, preferred, avoided) = self.usage.implied_flags();
        let required = required | self.required_flags;
        let preferred = (preferred | self.preferred_flags) - self.avoided_flags;
        let avoided = (avoided | self.avoided_flags) - required - self.preferred_flags;
        (required, preferred, avoided)
    }
}

/// Where memory should live, as gpu-allocator names it: a shorthand for [`AllocationOptions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemoryLocation {
    /// Device-only memory ([`Usage::GpuOnly`]).
    GpuOnly,
    /// Host-written, device-read memory ([`Usage::Upload`]).
    CpuToGpu,
    /// Device-written, host-read memory ([`Usage::Readback`]).
    GpuToCpu,
    /// No preference ([`Usage::Automatic`]).
    #[default]
    Unknown,
}

impl From<MemoryLocation> for AllocationOptions {
    fn from(location: MemoryLocation) -> AllocationOptions {
        AllocationOptions::new(match location {
            MemoryLocation::GpuOnly => Usage::GpuOnly,
            MemoryLocation::CpuToGpu => Usage::Upload,
            MemoryLocation::GpuToCpu => Usage::Readback,
            MemoryLocation::Unknown => Usage::Automatic,
        })
    }
}

/// Whether a request must, may or should not get a memory block of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dedicated {
    /// Sub-allocate unless the request is over the dedicated threshold
    /// ([`crate::AllocatorConfig::dedicated_threshold`], none by default).
    #[default]
    No,
    /// Prefer a block of its own (the driver says it performs better), but sub-allocate if the block limit is
    /// reached.
    Preferred,
    /// A block of its own (the driver requires it, or the memory will be exported).
    Required,
}

/// A request for memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllocationDesc<'a> {
    /// A debug name, for reports and leak messages.
    pub name: &'a str,
    /// Bytes.
    pub size: u64,
    /// Alignment of the offset within its block, a power of two.
    pub alignment: u64,
    /// Bit `i` set: memory type `i` is acceptable (as Vulkan's `memoryTypeBits`).
    pub memory_type_bits: u32,
    /// What the memory will back; decides which pool it shares blocks with.
    pub class: ResourceClass,
    /// Memory-type options.
    pub options: AllocationOptions,
    /// Whether it gets a block of its own.
    pub dedicated: Dedicated,
    /// An opaque value stored with the allocation.
    pub user_data: u64,
}

impl<'a> AllocationDesc<'a> {
    /// A request for `size` bytes at alignment 1, any memory type, class [`ResourceClass::Buffer`], options from
    /// `location`.
    pub fn new(name: &'a str, size: u64, location: impl Into<AllocationOptions>) -> AllocationDesc<'a> {
        AllocationDesc {
            name,
            size,
            alignment: 1,
            memory_type_bits: u32::MAX,
            class: ResourceClass::Buffer,
            options: location.into(),
            dedicated: Dedicated::No,
            user_data: 0,
        }
    }

    /// Sets the alignment.
    pub fn with_alignment(mut self, alignment: u64) -> AllocationDesc<'a> {
        self.alignment = alignment;
        self
    }

    /// Sets the acceptable memory types.
    pub fn with_memory_type_bits(mut self, bits: u32) -> AllocationDesc<'a> {
        self.memory_type_bits = bits;
        self
    }

    /// Sets the resource class.
    pub fn with_class(mut self, class: ResourceClass) -> AllocationDesc<'a> {
        self.class = class;
        self
    }

    /// Sets the dedicated-block choice.
    pub fn with_dedicated(mut self, dedicated: Dedicated) -> AllocationDesc<'a> {
        self.dedicated = dedicated;
        self
    }

    /// Sets the user data.
    pub fn with_user_data(mut self, user_data: u64) -> AllocationDesc<'a> {
        self.user_data = user_data;
        self
    }
}

/// An explained choice of memory type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryTypeChoice {
    /// The memory type index.
    pub memory_type: u32,
    /// Its heap.
    pub heap: u32,
    /// Its property flags.
    pub flags: MemoryPropertyFlags,
    /// Rank score: +4 per preferred flag present, -4 per avoided flag present, -1 per flag neither asked for
    /// nor required (simpler types first). Higher is better.
    pub score: i32,
    /// Whether the heap's budget has room for the request right now.
    pub within_budget: bool,
}

/// Memory types that can serve a request, best first. At most 32 (Vulkan's limit), kept inline so ranking
/// allocates nothing.
#[derive(Debug, Clone, Copy)]
pub struct RankedTypes {
    choices: [Option<MemoryTypeChoice>; 32],
    len: usize,
}

impl RankedTypes {
    /// The choices, best first.
    pub fn iter(&self) -> impl Iterator<Item = &MemoryTypeChoice> + '_ {
        self.choices[..self.len].iter().flatten()
    }

    /// The best choice, if any type qualifies.
    pub fn first(&self) -> Option<&MemoryTypeChoice> {
        self.iter().next()
    }

    /// Number of qualifying types.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no type qualifies.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The best memory type for `desc` by flags alone (every heap counted as having room): what
/// [`rank_memory_types`] with no budgets puts first, found in one pass without building the ranking.
pub fn best_memory_type(properties: &MemoryProperties, desc: &AllocationDesc<'_>) -> Option<u32> {
    let (required, preferred, avoided) = desc.options.effective_flags();
    let special = MemoryPropertyFlags::PROTECTED | MemoryPropertyFlags::LAZILY_ALLOCATED;
    let weight = |flags: MemoryPropertyFlags| flags.bits().count_ones() as i32;
    let mut best: Option<(i32, u32)> = None;
    for (index, memory_type) in properties.types.iter().enumerate().take(32) {
        let flags = memory_type.flags;
        if desc.memory_type_bits & (1 << index) == 0
            || !flags.contains(required)
            || flags.intersects(special - required)
        {
            continue;
        }
        let unasked = flags - required - preferred - avoided;
        let score = 4 * weight(flags & preferred) - 4 * weight(flags & avoided) - weight(unasked);
        if best.is_none_or(|(best_score, _)| score > best_score) {
            best = Some((score, index as u32));
        }
    }
    best.map(|(_, index)| index)
}

/// Ranks every memory type that can serve `desc`. `budgets` are the heaps' current usage and budget; with
/// None every heap counts as having room (the ranking by flags alone, for reusing memory already committed).
pub fn rank_memory_types(
    properties: &MemoryProperties,
    budgets: Option<&[HeapBudget]>,
    desc: &AllocationDesc<'_>,
) -> Result<RankedTypes> {
    let (required, preferred, avoided) = desc.options.effective_flags();
    // Protected and lazily allocated memory are for special resources: only when asked for.
    let special = MemoryPropertyFlags::PROTECTED | MemoryPropertyFlags::LAZILY_ALLOCATED;
    let mut ranked = RankedTypes { choices: [None; 32], len: 0 };
    let weight = |flags: MemoryPropertyFlags| flags.bits().count_ones() as i32;
    for (index, memory_type) in properties.types.iter().enumerate().take(32) {
        let flags = memory_type.flags;
        if desc.memory_type_bits & (1 << index) == 0 || !flags.contains(required) {
            continue;
        }
        if flags.intersects(special - required) {
            continue;
        }
        let heap = memory_type.heap_index;
        let within_budget = budgets.is_none_or(|budgets| {
            let budget = budgets.get(heap as usize).copied().unwrap_or_default();
            budget.usage.saturating_add(desc.size) <= budget.budget
        });
        let unasked = flags - required - preferred - avoided;
        let score = 4 * weight(flags & preferred) - 4 * weight(flags & avoided) - weight(unasked);
        ranked.choices[ranked.len] =
            Some(MemoryTypeChoice { memory_type: index as u32, heap, flags, score, within_budget });
        ranked.len += 1;
    }
    if ranked.len == 0 {
        return Err(Error::NoCompatibleMemoryType);
    }
    let budget_first = desc.options.budget != BudgetPolicy::Ignore;
    ranked.choices[..ranked.len].sort_by_key(|choice| {
        let choice = choice.as_ref().map(|c| (budget_first && !c.within_budget, -c.score, c.memory_type));
        choice.unwrap_or((true, i32::MAX, u32::MAX))
    });
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{DeviceLimits, MemoryHeap, MemoryHeapFlags, MemoryType};
    use MemoryPropertyFlags as F;

    /// The H200's five types: 0 plain host, 1 device, 2 host coherent, 3 host cached, 4 device+host (ReBAR).
    fn discrete() -> MemoryProperties {
        let heap = |size, flags| MemoryHeap { size, flags };
        let ty = |heap_index, flags| MemoryType { heap_index, flags };
        MemoryProperties {
            heaps: vec![
                heap(150 << 30, MemoryHeapFlags::DEVICE_LOCAL),
                heap(94 << 30, MemoryHeapFlags::empty()),
            ],
            types: vec![
                ty(1, F::empty()),
                ty(0, F::DEVICE_LOCAL),
                ty(1, F::HOST_VISIBLE | F::HOST_COHERENT),
                ty(1, F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED),
                ty(0, F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT),
            ],
            limits: DeviceLimits::new(1024, 64, u32::MAX, 0xffe0_0000),
        }
    }

    fn roomy() -> Vec<HeapBudget> {
        vec![HeapBudget { usage: 0, budget: 120 << 30 }, HeapBudget { usage: 0, budget: 75 << 30 }]
    }

    fn order(desc: &AllocationDesc<'_>, budgets: &[HeapBudget]) -> Vec<u32> {
        rank_memory_types(&discrete(), Some(budgets), desc).unwrap().iter().map(|c| c.memory_type).collect()
    }

    #[test]
    fn usages_pick_the_expected_types() {
        let gpu = AllocationDesc::new("gpu", 1 << 20, MemoryLocation::GpuOnly);
        assert_eq!(order(&gpu, &roomy())[0], 1, "plain device-local beats device+host");
        for desc in [&gpu, &AllocationDesc::new("u", 1, MemoryLocation::CpuToGpu)] {
            assert_eq!(
                best_memory_type(&discrete(), desc),
                Some(order(desc, &roomy())[0]),
                "one pass agrees"
            );
        }
        let upload = AllocationDesc::new("upload", 1 << 20, MemoryLocation::CpuToGpu);
        assert_eq!(order(&upload, &roomy())[0], 4, "coherent and device-local");
        let readback = AllocationDesc::new("readback", 1 << 20, MemoryLocation::GpuToCpu);
        assert_eq!(order(&readback, &roomy())[0], 3, "cached and coherent");
        let any = AllocationDesc::new("any", 1 << 20, MemoryLocation::Unknown);
        assert_eq!(order(&any, &roomy())[0], 1);
    }

    #[test]
    fn required_flags_and_type_bits_are_never_relaxed() {
        let desc = AllocationDesc::new("x", 1 << 20, MemoryLocation::GpuOnly).with_memory_type_bits(0b0_1100);
        assert_eq!(
            rank_memory_types(&discrete(), Some(&roomy()), &desc).map(|r| r.len()),
            Err(Error::NoCompatibleMemoryType)
        );
        let host_only =
            AllocationDesc::new("x", 1 << 20, MemoryLocation::CpuToGpu).with_memory_type_bits(0b0_0100);
        assert_eq!(order(&host_only, &roomy()), [2]);
    }

    #[test]
    fn avoided_flags_lower_rank_without_excluding() {
        let options = AllocationOptions::new(Usage::Upload).with_avoided(F::DEVICE_LOCAL);
        let desc = AllocationDesc::new("x", 1 << 20, options);
        assert_eq!(order(&desc, &roomy()), [2, 3, 4]);
    }

    #[test]
    fn budget_policies_rank_full_heaps() {
        let full_device = vec![HeapBudget { usage: 119 << 30, budget: 120 << 30 }, roomy()[1]];
        let upload = AllocationDesc::new("x", 2 << 30, MemoryLocation::CpuToGpu);
        assert_eq!(order(&upload, &full_device)[0], 2, "PreferWithin moves the host heap ahead");
        let ranked = rank_memory_types(&discrete(), Some(&full_device), &upload).unwrap();
        assert!(!ranked.iter().find(|c| c.memory_type == 4).unwrap().within_budget);
        let mut ignore = upload;
        ignore.options = ignore.options.with_budget(BudgetPolicy::Ignore);
        assert_eq!(order(&ignore, &full_device)[0], 4, "Ignore ranks by flags alone");
    }
}
