//! `Allocator<D>`: turns a device's memory blocks into sub-allocations.
//!
//! A request flows one way: policy ranks the memory types, the pool of the best type and the request's class
//! places it in an existing block, and only when no block has room does the allocator ask the device for a
//! new one. Locks are per pool (plus one for dedicated blocks) and are never held across a device call, so
//! threads working on different memory types or classes do not wait for each other, and a slow driver call
//! blocks nobody. Invariant: every live device block is owned by exactly one pool slot or dedicated slot, and is
//! destroyed exactly once (when empty and given back: trimmed, reclaimed on out-of-memory, or to keep a new block
//! within the peak; when freed if dedicated and not kept; or when the allocator drops).

use core::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use memcarve_core::{Handle, ResourceClass};

use crate::custom_pool::{CustomBlock, CustomPool, PoolDesc, PoolId, PoolStrategy, Ranges};
use crate::device::{BlockDesc, Device, DeviceError, MemoryProperties, MemoryPropertyFlags, VirtualMemory};
use crate::diagnostics::{
    AllocationMeta, AllocatorStats, DeviceMemoryCallbacks, Diagnostics, Event, EventKind, EventRing, Leak,
    LeakReport, MemoryStats,
};
use crate::error::{Error, Result};
use crate::heap_tiers::TieredHeap;
use crate::mapping::{MappedAllocation, MappedPtr, Mapping, atom_range, check_range};
use crate::policy::{
    AllocationDesc, AllocationOptions, BudgetPolicy, Dedicated, MemoryTypeChoice, RankedTypes, Usage,
    best_memory_type, rank_memory_types,
};
use crate::pool::{Placement, Pool};
use crate::report::{BlockReport, RangeReport};
use crate::virtual_heap::{PageEvent, PageRecord, VirtualHeapConfig, VirtualHeapStats};

const MIB: u64 = 1 << 20;

/// Sizes of the blocks pools create. A pool's first block has the initial size, each further block doubles
/// it up to the maximum; a request larger than the next block size gets a block sized for it alone, in its pool
/// (sub-allocatable once it is freed). Once three quarters of the block limit
/// ([`AllocatorConfig::max_memory_blocks`]) are live, new blocks are at least each remaining slot's share of
/// the heap's budget left, past the maximum if need be, so that the limit does not cap the memory in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllocationSizes {
    /// First block of a device-local memory type.
    pub device_initial: u64,
    /// Largest regular block of a device-local memory type.
    pub device_max: u64,
    /// First block of a host-visible, not device-local memory type.
    pub host_initial: u64,
    /// Largest regular block of such a type.
    pub host_max: u64,
}

impl AllocationSizes {
    /// Sizes with the given values (each is rounded up to 1 MiB when used).
    pub const fn new(
        device_initial: u64,
        device_max: u64,
        host_initial: u64,
        host_max: u64,
    ) -> AllocationSizes {
        AllocationSizes { device_initial, device_max, host_initial, host_max }
    }
}

impl Default for AllocationSizes {
    /// 32 MiB growing to 256 MiB for device-local memory, 8 MiB growing to 64 MiB for host memory: small first
    /// blocks keep light users light, doubling keeps heavy users at few driver calls.
    fn default() -> AllocationSizes {
        AllocationSizes::new(32 * MIB, 256 * MIB, 8 * MIB, 64 * MIB)
    }
}

/// How an [`Allocator`] is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AllocatorConfig {
    /// Block sizes.
    pub sizes: AllocationSizes,
    /// Most live device blocks (pooled and dedicated together); the device's own limit applies too. Near it,
    /// new blocks grow past [`AllocationSizes`]' maximum (see there).
    pub max_memory_blocks: u32,
    /// Requests of at least this many bytes get a dedicated block (block mode; a virtual heap keeps them).
    /// Default: none (`u64::MAX`). A request larger than the next block still gets a block sized for it, but
    /// in its pool, so that once it is free any request can use it: a dedicated block serves only requests of
    /// about its size, and on 58 H200 traces in block mode dedicated blocks from 128 MiB made 12 of them exceed
    /// 1.5 × PyTorch's driver operations (up to 13.5 ×), creating and destroying blocks as tensor sizes varied;
    /// without them all stay within it (63 traces since), at about the same overhead (docs/BENCHMARKS.md).
    /// Requests that ask for a dedicated block ([`crate::Dedicated`]) get one either way.
    pub dedicated_threshold: u64,
    /// Empty blocks each pool keeps cached instead of destroying them at once. One avoids paying the driver
    /// (about 1 ms for a `vkFreeMemory`) again and again when usage hovers around a block boundary; more would
    /// hold memory nobody uses. [`Allocator::trim_empty_blocks`] releases them all.
    pub max_empty_blocks_per_pool: usize,
    /// Also keep empty blocks beyond that, and the blocks of freed dedicated allocations (for later requests
    /// of about their size, up to a sixteenth smaller), as long as the committed bytes stay within the most
    /// committed so far: before a new block would take committed memory past that peak, kept blocks are
    /// destroyed first, so keeping them never raises the peak. A workload that returns to an earlier peak (a
    /// training step, a frame, a batch) then reuses its blocks instead of paying the driver again. Default on;
    /// [`Allocator::trim_empty_blocks`] releases them all.
    pub keep_blocks_within_peak: bool,
    /// Serve requests from one virtual heap per memory type instead of blocks, on devices with virtual memory
    /// (CUDA; the host backend models it). Dedicated requests still get blocks of their own.
    pub virtual_heap: Option<VirtualHeapConfig>,
    /// Map every block of a host-visible memory type when it is created and keep it mapped, so that mapping an
    /// allocation is only pointer arithmetic (VMA's persistent mapping). Off by default.
    pub persistent_mapping: bool,
    /// Events kept in the event ring ([`Allocator::events`]); 0 (the default) records nothing and costs nothing.
    pub event_capacity: usize,
    /// Hooks called whenever a device block is created or destroyed.
    pub callbacks: Option<Arc<dyn DeviceMemoryCallbacks>>,
    /// Keep each allocation's name (and size) for leak reports; costs a small heap allocation per request.
    pub track_allocations: bool,
    /// Also capture a backtrace per allocation (expensive; implies `track_allocations`).
    pub capture_backtraces: bool,
    /// Print a leak report to stderr when the allocator is dropped with allocations still live (default on).
    pub report_leaks_on_drop: bool,
    /// Guard bytes before and after every pooled allocation in host-visible memory, filled with a pattern and
    /// checked on free and by [`Allocator::check_corruption`] (VMA's corruption detection). 0 (default): off;
    /// at most 1 MiB (`Allocator::new` refuses more).
    pub debug_margin: u64,
}

impl Default for AllocatorConfig {
    fn default() -> AllocatorConfig {
        AllocatorConfig {
            sizes: AllocationSizes::default(),
            max_memory_blocks: 256,
            dedicated_threshold: u64::MAX,
            max_empty_blocks_per_pool: 1,
            keep_blocks_within_peak: true,
            virtual_heap: None,
            persistent_mapping: false,
            event_capacity: 0,
            callbacks: None,
            track_allocations: false,
            capture_backtraces: false,
            report_leaks_on_drop: true,
            debug_margin: 0,
        }
    }
}

impl AllocatorConfig {
    /// Sets the block sizes.
    pub fn with_sizes(mut self, sizes: AllocationSizes) -> AllocatorConfig {
        self.sizes = sizes;
        self
    }

    /// Sets the block limit.
    pub fn with_max_memory_blocks(mut self, max: u32) -> AllocatorConfig {
        self.max_memory_blocks = max;
        self
    }

    /// Sets the dedicated threshold.
    pub fn with_dedicated_threshold(mut self, bytes: u64) -> AllocatorConfig {
        self.dedicated_threshold = bytes;
        self
    }

    /// Serves requests from virtual heaps (see [`AllocatorConfig::virtual_heap`]).
    pub fn with_virtual_heap(mut self, config: VirtualHeapConfig) -> AllocatorConfig {
        self.virtual_heap = Some(config);
        self
    }

    /// Keeps host-visible blocks mapped for their whole life.
    pub fn with_persistent_mapping(mut self, persistent: bool) -> AllocatorConfig {
        self.persistent_mapping = persistent;
        self
    }

    /// Sets the event ring's capacity.
    pub fn with_event_capacity(mut self, capacity: usize) -> AllocatorConfig {
        self.event_capacity = capacity;
        self
    }

    /// Installs device-memory callbacks.
    pub fn with_callbacks(mut self, callbacks: Arc<dyn DeviceMemoryCallbacks>) -> AllocatorConfig {
        self.callbacks = Some(callbacks);
        self
    }

    /// Keeps names (and, with `backtraces`, call stacks) of live allocations for leak reports.
    pub fn with_tracking(mut self, names: bool, backtraces: bool) -> AllocatorConfig {
        self.track_allocations = names || backtraces;
        self.capture_backtraces = backtraces;
        self
    }

    /// Sets the debug margin (guard bytes on each side of host-visible pooled allocations).
    pub fn with_debug_margin(mut self, bytes: u64) -> AllocatorConfig {
        self.debug_margin = bytes;
        self
    }

    /// Whether dropping the allocator prints a leak report.
    pub fn with_leak_report_on_drop(mut self, report: bool) -> AllocatorConfig {
        self.report_leaks_on_drop = report;
        self
    }

    /// Sets how many empty blocks each pool keeps.
    pub fn with_max_empty_blocks_per_pool(mut self, count: usize) -> AllocatorConfig {
        self.max_empty_blocks_per_pool = count;
        self
    }

    /// Sets [`AllocatorConfig::keep_blocks_within_peak`].
    pub fn with_keep_blocks_within_peak(mut self, keep: bool) -> AllocatorConfig {
        self.keep_blocks_within_peak = keep;
        self
    }
}

/// Where an allocation's memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Pooled {
        block: u32,
        generation: u32,
        handle: u64,
    },
    /// `generation` names the allocation, `block` the device block in the slot (a kept block outlives its
    /// allocation and may serve another).
    Dedicated {
        slot: u32,
        generation: u32,
        block: u32,
    },
    Virtual {
        handle: u64,
    },
    /// `epoch` is the pool's when the allocation was made (see `CustomPool::epoch`).
    Custom {
        pool: u32,
        epoch: u32,
        block: u32,
        handle: u64,
    },
}

/// What kind of memory holds an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    /// A block shared through a pool.
    Pooled,
    /// A block of its own.
    Dedicated,
    /// The memory type's virtual heap (offsets are within its reserved address range).
    VirtualHeap,
    /// A block of a custom pool.
    CustomPool,
}

/// A live allocation. Not `Copy` or `Clone`: [`Allocator::free`] consumes it.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "dropping an allocation leaks its memory until the allocator is dropped"]
pub struct Allocation {
    raw: RawAllocation,
}

/// Identifies one memory block of an allocator (see [`Allocation::block_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    /// Memory type of the block.
    pub memory_type: u32,
    /// Class of its pool (for a dedicated block: of its allocation).
    pub class: ResourceClass,
    /// Pooled, dedicated or the virtual heap.
    pub kind: BlockKind,
    /// Slot index within its pool or the dedicated list.
    pub index: u32,
    /// Custom pool index (0 otherwise).
    pub pool: u32,
    /// Generation of the slot (slots are reused by later blocks); for a custom pool, the pool's epoch, which a
    /// reset renews (allocations made before and after a reset have different keys).
    pub generation: u32,
}

/// An allocation's plain-data form, for FFI and tests ([`Allocation::into_raw`], [`Allocation::from_raw`]).
/// Freeing it twice is detected.
// Fields in declared order: left to reorder, the compiler packed the class byte against the place's fields,
// and moving an allocation (returned by value, kept in a caller's table) then copied it with overlapping
// unaligned moves that stall store-to-load forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct RawAllocation {
    allocator: u32,
    memory_type: u32,
    class: ResourceClass,
    offset: u64,
    size: u64,
    user_data: u64,
    place: Place,
    /// Bytes of debug margin in front of the allocation (0: no margins).
    front_margin: u64,
}

impl Allocation {
    /// Offset of the allocation within its memory block.
    pub fn offset(&self) -> u64 {
        self.raw.offset
    }

    /// Size requested.
    pub fn size(&self) -> u64 {
        self.raw.size
    }

    /// Memory type index.
    pub fn memory_type(&self) -> u32 {
        self.raw.memory_type
    }

    /// Resource class.
    pub fn class(&self) -> ResourceClass {
        self.raw.class
    }

    /// Whether it has a block of its own.
    pub fn is_dedicated(&self) -> bool {
        matches!(self.raw.place, Place::Dedicated { .. })
    }

    /// The user data given at allocation.
    pub fn user_data(&self) -> u64 {
        self.raw.user_data
    }

    /// Which block holds it: equal keys mean the same block, so reports and tests can group allocations.
    pub fn block_key(&self) -> BlockKey {
        let (kind, index, generation, pool) = match self.raw.place {
            Place::Pooled { block, generation, .. } => (BlockKind::Pooled, block, generation, 0),
            Place::Dedicated { slot, block, .. } => (BlockKind::Dedicated, slot, block, 0),
            Place::Virtual { .. } => (BlockKind::VirtualHeap, 0, 0, 0),
            Place::Custom { pool, epoch, block, .. } => (BlockKind::CustomPool, block, epoch, pool),
        };
        BlockKey { memory_type: self.raw.memory_type, class: self.raw.class, kind, index, generation, pool }
    }

    /// The plain-data form; the allocation stays live until freed through [`Allocation::from_raw`].
    pub fn into_raw(self) -> RawAllocation {
        self.raw
    }

    /// Rebuilds an allocation from [`Allocation::into_raw`]. Freeing a rebuilt allocation that was already
    /// freed is an [`Error::DoubleFree`], not corruption.
    ///
    /// # Safety
    ///
    /// At most one [`Allocation`] may stand for a live allocation at a time: `raw` must not be rebuilt while
    /// the allocation it came from, or another one rebuilt from the same value, is still held (not yet freed or
    /// turned back into raw form). Two copies would let one be freed (its block destroyed, its range handed out
    /// again) while [`Allocator::map`] holds the other mapped. A value whose allocation was freed may be rebuilt
    /// to be freed again (the typed [`Error::DoubleFree`]) only soon after: its range handle carries a 24-bit
    /// generation, so once its block has made about 2^24 more allocations it may name a live allocation again.
    pub unsafe fn from_raw(raw: RawAllocation) -> Allocation {
        Allocation { raw }
    }
}

/// Live counters of one memory type, on a cache line of their own: threads working on different memory types
/// never write the same line (a shared counter bouncing between cores cost more than the allocation itself).
#[derive(Debug, Default)]
#[repr(align(128))]
struct TypeCounters {
    live_allocations: AtomicU64,
    live_bytes: AtomicU64,
    peak_live_allocations: AtomicU64,
    peak_live_bytes: AtomicU64,
    block_reuses: AtomicU64,
}

impl TypeCounters {
    fn add_live(&self, bytes: u64) {
        let count = self.live_allocations.fetch_add(1, Ordering::Relaxed) + 1;
        let live = self.live_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        // Peaks are read first: they change rarely, so the line mostly stays shared instead of written.
        if count > self.peak_live_allocations.load(Ordering::Relaxed) {
            self.peak_live_allocations.fetch_max(count, Ordering::Relaxed);
        }
        if live > self.peak_live_bytes.load(Ordering::Relaxed) {
            self.peak_live_bytes.fetch_max(live, Ordering::Relaxed);
        }
    }

    fn remove_live(&self, bytes: u64) {
        self.live_allocations.fetch_sub(1, Ordering::Relaxed);
        self.live_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The allocator's counters, kept as atomics so that no lock is shared between pools.
#[derive(Debug, Default)]
struct AtomicDiagnostics {
    block_creations: AtomicU64,
    block_destructions: AtomicU64,
    fallbacks: AtomicU64,
    reclaims: AtomicU64,
    failures: AtomicU64,
    committed_bytes: AtomicU64,
    peak_committed_bytes: AtomicU64,
}

impl AtomicDiagnostics {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn change_committed(&self, added: u64, removed: u64) {
        if added > 0 {
            let now = self.committed_bytes.fetch_add(added, Ordering::Relaxed) + added;
            self.peak_committed_bytes.fetch_max(now, Ordering::Relaxed);
        }
        if removed > 0 {
            self.committed_bytes.fetch_sub(removed, Ordering::Relaxed);
        }
    }
}

#[derive(Debug)]
struct DedicatedBlock<B> {
    block: B,
    mapping: Option<Mapping>,
    meta: Option<Box<AllocationMeta>>,
    memory_type: u32,
    class: ResourceClass,
    /// The block's size.
    size: u64,
    /// The allocation's size (0: the block is kept empty, for reuse).
    used: u64,
    /// Whether another request may reuse the block: it was made for a request dedicated by its size alone,
    /// plain (a block named for one resource, or exported, serves only that one).
    reusable: bool,
    /// When it was last emptied (a count of emptied blocks), to give back the longest-empty first.
    emptied: u64,
    generation: u32,
    /// Names the device block among those the slot has held (see [`Place::Dedicated`]).
    block_generation: u32,
}

#[derive(Debug)]
struct DedicatedBlocks<B> {
    slots: Vec<Option<DedicatedBlock<B>>>,
    generations: Vec<u32>,
    /// Per slot: the block generation the next block in it gets.
    block_generations: Vec<u32>,
    /// Blocks emptied so far (for [`DedicatedBlock::emptied`]).
    emptied: u64,
}

impl<B> DedicatedBlocks<B> {
    /// The block of the live allocation `(slot, generation)` names, if that allocation is live: the slot holds a
    /// block, with that allocation generation, and the block is in use (a kept block serves no handle).
    fn live_mut(&mut self, slot: u32, generation: u32) -> Option<&mut DedicatedBlock<B>> {
        self.slots
            .get_mut(slot as usize)?
            .as_mut()
            .filter(|entry| entry.generation == generation && entry.used > 0)
    }

    /// Takes the block out of `slot` (to destroy it): later blocks in the slot get a new block generation.
    fn take(&mut self, slot: usize) -> Option<DedicatedBlock<B>> {
        let entry = self.slots.get_mut(slot)?.take()?;
        self.block_generations[slot] = entry.block_generation.wrapping_add(1);
        Some(entry)
    }
}

static NEXT_ALLOCATOR_ID: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// How many [`DeviceMemoryCallbacks`] calls this thread is inside (a callback may call the allocator).
    static CALLBACK_DEPTH: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
}

/// How deep in device-memory callbacks this thread is: a backend that hands per-request state to its
/// `create_block` through the thread (Vulkan's dedicated-object request) matches it only at the depth it was
/// set at, so that an allocation a callback makes meanwhile never takes the outer request's state.
#[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
pub(crate) fn callback_depth() -> u32 {
    CALLBACK_DEPTH.with(core::cell::Cell::get)
}

/// Marks this thread as inside a device-memory callback while it lives.
pub(crate) struct CallbackScope;

impl CallbackScope {
    pub(crate) fn enter() -> CallbackScope {
        CALLBACK_DEPTH.with(|depth| depth.set(depth.get().saturating_add(1)));
        CallbackScope
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CALLBACK_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// The byte debug margins are filled with.
const MARGIN_PATTERN: u8 = 0xDC;

/// The largest debug margin (`AllocatorConfig::debug_margin`): margins catch stray writes near an allocation,
/// and one this large keeps every margin sum far from overflowing.
const MAX_DEBUG_MARGIN: u64 = 1 << 20;

/// A kept dedicated block serves a request up to `1 / DEDICATED_REUSE_SLACK` smaller than itself. On the traces an
/// eighth let moe_train commit 1.056 × its peak live bytes instead of 1.045 × (for 83 block operations instead of
/// 89); exact sizes only cost two_stream_train 146 operations instead of 32 (docs/BENCHMARKS.md).
const DEDICATED_REUSE_SLACK: u64 = 16;

/// Custom pools one allocator can hold at once.
const MAX_CUSTOM_POOLS: usize = 64;

/// Gives back one hold on a block's mapping, unmapping it when the last non-persistent hold goes.
fn release_block_mapping<D: Device>(device: &D, block: &D::Block, mapping: &mut Option<Mapping>) {
    if let Some(state) = mapping.as_mut() {
        state.users = state.users.saturating_sub(1);
        if state.users == 0 && !state.persistent {
            *mapping = None;
            // SAFETY: (1) the block is mapped and this was the last hold on it; no pointer into the mapping
            // outlives the hold being given back.
            unsafe { device.unmap(block) };
        }
    }
}

/// Takes a hold on a block's mapping, mapping it first if nobody holds it; returns the block's address.
fn acquire_mapping<D: Device>(
    device: &D,
    block: &D::Block,
    mapping: &mut Option<Mapping>,
) -> Result<NonNull<u8>> {
    if let Some(state) = mapping.as_mut() {
        // Only guards leaked with `mem::forget` reach the limit; wrapping would unmap under the live ones.
        state.users = state.users.checked_add(1).ok_or(Error::TooManyMappings)?;
        return Ok(state.ptr.0);
    }
    // SAFETY: (1) the caller checked that the block's type is host-visible; the block is not mapped, since
    // `mapping` is None and every mapping of it is recorded there under the lock the caller holds.
    let ptr = unsafe { device.map(block)? };
    *mapping = Some(Mapping { ptr: MappedPtr(ptr), users: 1, persistent: false });
    Ok(ptr)
}

/// [`Error::StillMapped`] while guards hold any of a custom pool's blocks mapped.
fn refuse_while_mapped<B>(pool: &CustomPool<B>) -> Result<()> {
    let guards: u64 = pool.blocks.iter().filter_map(|entry| entry.mapping).map(|m| u64::from(m.users)).sum();
    if guards > 0 {
        return Err(Error::StillMapped { guards });
    }
    Ok(())
}

/// Device out-of-memory becomes the allocator's recoverable [`Error::OutOfMemory`]; the rest pass through.
fn device_error(error: DeviceError) -> Error {
    match error {
        DeviceError::OutOfDeviceMemory | DeviceError::OutOfHostMemory => Error::OutOfMemory { size: 0 },
        other => Error::Device(other),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while a lock is held, so a poisoned lock still guards consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What `mutex` guards, through `&mut` (no lock taken), poisoned or not as [`lock`].
fn unlocked<T>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// Turns device memory into sub-allocations. `Send + Sync`; every method takes `&self`.
///
/// Dropping the allocator destroys every block it holds, live allocations or not: destroy the device resources
/// bound to its memory (buffers, images) first.
pub struct Allocator<D: Device> {
    device: D,
    id: u32,
    properties: MemoryProperties,
    config: AllocatorConfig,
    /// `memory_type * 4 + class`.
    pools: Vec<Mutex<Pool<D::Block>>>,
    dedicated: Mutex<DedicatedBlocks<D::Block>>,
    /// Whether new virtual heaps record page events ([`Allocator::record_page_events`]).
    record_pages: AtomicBool,
    /// Custom pools, a fixed number of slots (each with its own lock).
    custom_pools: Vec<Mutex<Option<CustomPool<D::Block>>>>,
    /// Generation the next pool in each custom slot gets.
    custom_generations: Mutex<Vec<u32>>,
    /// One per memory type, created on first use (virtual-heap mode only).
    heaps: Vec<Mutex<Option<TieredHeap<D::Virtual>>>>,
    live_blocks: AtomicU32,
    /// The next custom pool epoch (see `CustomPool::epoch`).
    next_pool_epoch: AtomicU32,
    block_limit: u32,
    diagnostics: AtomicDiagnostics,
    /// Live counters and peaks per memory type.
    type_counters: Vec<TypeCounters>,
    events: Mutex<EventRing>,
    /// The best memory type by flags for each [`Usage`] with no explicit flags and every type acceptable: the
    /// common request, answered without ranking the types each time.
    best_by_usage: [Option<u32>; 4],
}

impl<D: Device> core::fmt::Debug for Allocator<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Allocator")
            .field("id", &self.id)
            .field("live_blocks", &self.live_blocks.load(Ordering::Relaxed))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<D: Device> Allocator<D> {
    /// An allocator over `device` with `config`.
    pub fn new(device: D, config: AllocatorConfig) -> Result<Allocator<D>> {
        let properties = device.memory_properties().clone();
        if properties.types.is_empty() || properties.types.len() > 32 {
            return Err(Error::InvalidConfig { reason: "device must report 1 to 32 memory types" });
        }
        let sizes = config.sizes;
        if sizes.device_initial == 0 || sizes.host_initial == 0 || sizes.device_max < sizes.device_initial {
            return Err(Error::InvalidConfig { reason: "block sizes must be non-zero and max >= initial" });
        }
        if sizes.host_max < sizes.host_initial || config.max_memory_blocks == 0 {
            return Err(Error::InvalidConfig { reason: "host max below initial, or a block limit of 0" });
        }
        if config.debug_margin > MAX_DEBUG_MARGIN {
            return Err(Error::InvalidConfig { reason: "debug margin above 1 MiB" });
        }
        let granularity = device.virtual_memory().and_then(|vm| {
            (0..properties.types.len() as u32).filter_map(|memory_type| vm.granularity(memory_type)).max()
        });
        if let Some(heap) = config.virtual_heap.as_ref() {
            if let Some(page_size) = heap.page_size
                && (!page_size.is_power_of_two() || granularity.is_some_and(|largest| page_size < largest))
            {
                return Err(Error::InvalidConfig {
                    reason: "the virtual heap's page size must be a power of two, at least the device's granularity",
                });
            }
            // Each tier's pages larger than the tier's before it, and its threshold higher (tiers with pages no
            // larger than the heap's are left out when it is made); the first tier alone may have a request-mix
            // rule, and with one it may have no threshold (`u64::MAX`), which the others' need not exceed.
            let mut below = (1, 0);
            for (index, tier) in heap.tiers.iter().enumerate() {
                let by_rule_only = tier.opens_at_bytes == u64::MAX && tier.request_mix.is_some();
                if !tier.page_size.is_power_of_two()
                    || tier.page_size <= below.0
                    || (!by_rule_only && tier.opens_at_bytes <= below.1)
                {
                    return Err(Error::InvalidConfig {
                        reason: "the virtual heap's tiers need power-of-two pages and thresholds that grow tier by tier",
                    });
                }
                if tier.request_mix.is_some_and(|rule| index > 0 || !rule.is_valid()) {
                    return Err(Error::InvalidConfig {
                        reason: "a request-mix rule belongs to the first tier, with positive sizes and a share in [0, 1]",
                    });
                }
                below = (tier.page_size, if by_rule_only { below.1 } else { tier.opens_at_bytes });
            }
        }
        let max_block = properties.limits.max_allocation_size;
        let mut pools = Vec::with_capacity(properties.types.len() * 4);
        for (index, memory_type) in properties.types.iter().enumerate() {
            let device_local = memory_type.flags.contains(MemoryPropertyFlags::DEVICE_LOCAL);
            let initial = if device_local { sizes.device_initial } else { sizes.host_initial };
            let heap_size = properties.heaps.get(memory_type.heap_index as usize).map_or(0, |h| h.size);
            // A heap smaller than eight blocks would be hoarded by a few of them: scale blocks down.
            let first = initial.min(heap_size / 8).min(max_block).max(MIB).next_multiple_of(MIB);
            for class in ResourceClass::ALL {
                pools.push(Mutex::new(Pool::new(index as u32, class, first)));
            }
        }
        let block_limit = config.max_memory_blocks.min(properties.limits.max_allocation_count);
        let heaps = (0..properties.types.len()).map(|_| Mutex::new(None)).collect();
        let events = Mutex::new(EventRing::new(config.event_capacity));
        let type_counters = (0..properties.types.len()).map(|_| TypeCounters::default()).collect();
        let custom_pools = (0..MAX_CUSTOM_POOLS).map(|_| Mutex::new(None)).collect();
        let custom_generations = Mutex::new(vec![0; MAX_CUSTOM_POOLS]);
        let best_by_usage = [Usage::GpuOnly, Usage::Upload, Usage::Readback, Usage::Automatic].map(|usage| {
            best_memory_type(&properties, &AllocationDesc::new("", 1, AllocationOptions::new(usage)))
        });
        // Ids are never reused: an allocation of a dropped allocator must not pass for one of a later allocator
        // (after `u32::MAX - 1` allocators in one process, `new` refuses).
        let id = NEXT_ALLOCATOR_ID
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |id| id.checked_add(1))
            .map_err(|_| Error::InvalidConfig { reason: "every allocator id has been used" })?;
        Ok(Allocator {
            device,
            id,
            properties,
            config,
            pools,
            dedicated: Mutex::new(DedicatedBlocks {
                slots: Vec::new(),
                generations: Vec::new(),
                block_generations: Vec::new(),
                emptied: 0,
            }),
            heaps,
            live_blocks: AtomicU32::new(0),
            next_pool_epoch: AtomicU32::new(0),
            block_limit,
            diagnostics: AtomicDiagnostics::default(),
            type_counters,
            custom_pools,
            custom_generations,
            record_pages: AtomicBool::new(false),
            events,
            best_by_usage,
        })
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The device's memory properties.
    pub fn memory_properties(&self) -> &MemoryProperties {
        &self.properties
    }

    /// The configuration.
    pub fn config(&self) -> &AllocatorConfig {
        &self.config
    }

    fn pool(&self, memory_type: u32, class: ResourceClass) -> &Mutex<Pool<D::Block>> {
        &self.pools[memory_type as usize * 4 + class as usize]
    }

    /// Every memory type that could serve `desc`, best first, with the reasons.
    pub fn rank_memory_types(&self, desc: &AllocationDesc<'_>) -> Result<RankedTypes> {
        rank_memory_types(&self.properties, Some(&self.device.heap_budgets()), desc)
    }

    /// The memory type `desc` would go to first, with the reasons (type, heap, flags, score, budget room).
    pub fn select_memory_type(&self, desc: &AllocationDesc<'_>) -> Result<MemoryTypeChoice> {
        let ranked = self.rank_memory_types(desc)?;
        ranked.first().copied().ok_or(Error::NoCompatibleMemoryType)
    }

    /// Allocates memory for `desc`.
    pub fn allocate(&self, desc: &AllocationDesc<'_>) -> Result<Allocation> {
        let result = self.allocate_inner(desc);
        match &result {
            Ok(allocation) => {
                // A virtual heap counts its own, under its lock.
                if !matches!(allocation.raw.place, Place::Virtual { .. }) {
                    self.type_counters[allocation.memory_type() as usize].add_live(desc.size);
                }
                if self.config.track_allocations {
                    self.attach_meta(allocation, desc);
                }
                self.record(|| EventKind::Allocated {
                    memory_type: allocation.memory_type(),
                    size: desc.size,
                    offset: allocation.offset(),
                });
            }
            Err(_) => {
                AtomicDiagnostics::bump(&self.diagnostics.failures);
                self.record(|| EventKind::AllocationFailed { size: desc.size });
            }
        }
        result
    }

    /// Stores a tracked allocation's name, size and backtrace beside its range.
    fn attach_meta(&self, allocation: &Allocation, desc: &AllocationDesc<'_>) {
        let backtrace = self.config.capture_backtraces.then(std::backtrace::Backtrace::force_capture);
        let meta = Box::new(AllocationMeta { name: desc.name.into(), size: desc.size, backtrace });
        let raw = &allocation.raw;
        match raw.place {
            Place::Pooled { block, generation, handle } => {
                let mut pool = lock(self.pool(raw.memory_type, raw.class));
                if let Some(entry) = pool.block_mut(block, generation) {
                    let _ = entry.ranges.set_user_data(&Handle::from_raw(handle), meta);
                }
            }
            Place::Dedicated { slot, generation, .. } => {
                if let Some(entry) = lock(&self.dedicated).live_mut(slot, generation) {
                    entry.meta = Some(meta);
                }
            }
            Place::Virtual { handle } => {
                if let Some(heap) = lock(&self.heaps[raw.memory_type as usize]).as_mut() {
                    heap.set_meta(&Handle::from_raw(handle), meta);
                }
            }
            // Custom pools keep no per-allocation data; leak reports count their allocations per pool.
            Place::Custom { .. } => {}
        }
    }

    /// A custom pool epoch never given before (see `CustomPool::epoch`).
    fn new_pool_epoch(&self) -> Result<u32> {
        self.next_pool_epoch
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |epoch| epoch.checked_add(1))
            .map_err(|_| Error::InvalidConfig {
                reason: "every custom pool epoch has been used (2^32 resets)",
            })
    }

    /// Creates a custom pool (see [`PoolDesc`]); its `min_blocks` blocks are created at once.
    pub fn create_pool(&self, desc: &PoolDesc<'_>) -> Result<PoolId> {
        let max_size = self.properties.limits.max_allocation_size;
        if desc.memory_type as usize >= self.properties.types.len() {
            return Err(Error::InvalidConfig { reason: "pool memory type out of range" });
        }
        if desc.block_size == 0 || desc.block_size > max_size {
            return Err(Error::InvalidConfig {
                reason: "pool block size is zero or above the device's limit",
            });
        }
        let single = desc.strategy != PoolStrategy::Tlsf;
        let max_blocks = if single { 1 } else { desc.max_blocks.max(1) };
        let min_blocks = if single { 1 } else { desc.min_blocks.min(max_blocks) };
        let epoch = self.new_pool_epoch()?;
        let mut blocks = Vec::new();
        for _ in 0..min_blocks {
            match self.new_custom_block(desc.memory_type, desc.block_size, desc.strategy) {
                Ok(block) => blocks.push(block),
                Err(error) => {
                    for entry in blocks {
                        self.destroy_block(entry.block, entry.mapping, desc.memory_type, entry.size);
                    }
                    return Err(error);
                }
            }
        }
        for (index, slot) in self.custom_pools.iter().enumerate() {
            let mut slot = lock(slot);
            if slot.is_none() {
                let generation = lock(&self.custom_generations)[index];
                *slot = Some(CustomPool {
                    name: desc.name.to_string(),
                    memory_type: desc.memory_type,
                    class: desc.class,
                    block_size: desc.block_size,
                    max_blocks,
                    strategy: desc.strategy,
                    generation,
                    epoch,
                    blocks,
                    live_count: 0,
                    live_bytes: 0,
                });
                return Ok(PoolId { index: index as u32, generation });
            }
        }
        for entry in blocks {
            self.destroy_block(entry.block, entry.mapping, desc.memory_type, entry.size);
        }
        Err(Error::TooManyPools { limit: MAX_CUSTOM_POOLS })
    }

    fn new_custom_block(
        &self,
        memory_type: u32,
        size: u64,
        strategy: PoolStrategy,
    ) -> Result<CustomBlock<D::Block>> {
        let block = self.create_block(BlockDesc::new(memory_type, size), self.heap_of(memory_type))?;
        match Ranges::new(strategy, size, self.properties.limits.buffer_image_granularity) {
            Ok(ranges) => Ok(CustomBlock { block, size, mapping: None, ranges }),
            Err(_) => {
                self.destroy_block(block, None, memory_type, size);
                Err(Error::InvalidConfig { reason: "pool block size not usable by the core" })
            }
        }
    }

    /// Allocates from a custom pool: `desc`'s size, alignment, name and user data; the memory type and class
    /// are the pool's. A TLSF pool adds a block (up to its maximum) when none has room.
    pub fn allocate_in_pool(&self, pool: PoolId, desc: &AllocationDesc<'_>) -> Result<Allocation> {
        let result = self.allocate_in_pool_inner(pool, desc);
        match &result {
            Ok(allocation) => self.type_counters[allocation.memory_type() as usize].add_live(desc.size),
            Err(_) => AtomicDiagnostics::bump(&self.diagnostics.failures),
        }
        result
    }

    fn allocate_in_pool_inner(&self, id: PoolId, desc: &AllocationDesc<'_>) -> Result<Allocation> {
        if desc.size == 0 {
            return Err(Error::ZeroSize);
        }
        if !desc.alignment.is_power_of_two() {
            return Err(Error::InvalidAlignment { alignment: desc.alignment });
        }
        let slot = self.custom_pools.get(id.index as usize).ok_or(Error::InvalidPool)?;
        let mut guard = lock(slot);
        let pool = guard.as_mut().filter(|p| p.generation == id.generation).ok_or(Error::InvalidPool)?;
        if desc.size > pool.block_size {
            return Err(Error::SizeTooLarge { size: desc.size, limit: pool.block_size });
        }
        if desc.alignment > pool.block_size {
            // No block of the pool's size can hold it: refused before a block is made for it.
            return Err(Error::InvalidAlignment { alignment: desc.alignment });
        }
        let (memory_type, class, epoch) = (pool.memory_type, pool.class, pool.epoch);
        let mut placed = None;
        for (index, entry) in pool.blocks.iter_mut().enumerate() {
            if let Ok(range) = entry.ranges.allocate(desc.size, desc.alignment, class) {
                placed = Some((index, range));
                break;
            }
        }
        if placed.is_none() && (pool.blocks.len() as u32) < pool.max_blocks {
            // Custom pools create blocks under their own lock: only this pool waits for the driver.
            let entry = self.new_custom_block(memory_type, pool.block_size, pool.strategy)?;
            pool.blocks.push(entry);
            let index = pool.blocks.len() - 1;
            if let Some(entry) = pool.blocks.last_mut()
                && let Ok(range) = entry.ranges.allocate(desc.size, desc.alignment, class)
            {
                placed = Some((index, range));
            }
        }
        let (block, range) = placed.ok_or(Error::OutOfMemory { size: desc.size })?;
        pool.live_count += 1;
        pool.live_bytes += desc.size;
        Ok(Allocation {
            raw: RawAllocation {
                allocator: self.id,
                memory_type,
                class,
                offset: range.offset,
                size: desc.size,
                user_data: desc.user_data,
                place: Place::Custom {
                    pool: id.index,
                    epoch,
                    block: block as u32,
                    handle: range.handle.to_raw(),
                },
                front_margin: 0,
            },
        })
    }

    /// Frees every allocation of a custom pool at once (a stack's or ring's `free_all`); each of them becomes
    /// stale (freeing one later is an [`Error::DoubleFree`]). Blocks stay. While a [`MappedAllocation`] guard
    /// holds one of its allocations it is refused with [`Error::StillMapped`] and changes nothing: the guard's
    /// bytes would be handed out again.
    pub fn reset_pool(&self, id: PoolId) -> Result<()> {
        let slot = self.custom_pools.get(id.index as usize).ok_or(Error::InvalidPool)?;
        let mut guard = lock(slot);
        let pool = guard.as_mut().filter(|p| p.generation == id.generation).ok_or(Error::InvalidPool)?;
        refuse_while_mapped(pool)?;
        // A new epoch first (it may be refused, leaving everything as it was): the range handles of the reset
        // allocations may come round again (a TLSF's generations have 24 bits), their epoch never does.
        pool.epoch = self.new_pool_epoch()?;
        for entry in &mut pool.blocks {
            entry.ranges.reset();
        }
        let counters = &self.type_counters[pool.memory_type as usize];
        counters.live_allocations.fetch_sub(pool.live_count, Ordering::Relaxed);
        counters.live_bytes.fetch_sub(pool.live_bytes, Ordering::Relaxed);
        pool.live_count = 0;
        pool.live_bytes = 0;
        Ok(())
    }

    /// Destroys a custom pool and its blocks. A pool that still holds allocations is an error and stays. A pool
    /// whose blocks still count mapping guards is refused too ([`Error::StillMapped`]): a live guard means a
    /// live allocation, so only guards leaked with `mem::forget` get there, and such a pool is never reset or
    /// destroyed (its memory stays until the allocator is dropped).
    pub fn destroy_pool(&self, id: PoolId) -> Result<()> {
        let slot = self.custom_pools.get(id.index as usize).ok_or(Error::InvalidPool)?;
        let pool = {
            let mut guard = lock(slot);
            let pool = guard.as_ref().filter(|p| p.generation == id.generation).ok_or(Error::InvalidPool)?;
            let allocations = pool.allocation_count();
            if allocations > 0 {
                return Err(Error::PoolNotEmpty { allocations });
            }
            refuse_while_mapped(pool)?;
            lock(&self.custom_generations)[id.index as usize] = id.generation.wrapping_add(1);
            guard.take()
        };
        if let Some(pool) = pool {
            for entry in pool.blocks {
                self.destroy_block(entry.block, entry.mapping, pool.memory_type, entry.size);
            }
        }
        Ok(())
    }

    /// Every block with its used and free ranges, for reports.
    pub fn block_reports(&self) -> Vec<BlockReport> {
        let mut reports = Vec::new();
        for pool in &self.pools {
            let pool = lock(pool);
            for (index, entry) in pool.blocks() {
                let mut names =
                    entry.ranges.iter().map(|info| (info.offset, info.user_data.map(|m| m.name.to_string())));
                let ranges = entry
                    .ranges
                    .ranges()
                    .map(|(offset, size, used)| {
                        let name =
                            if used { names.find(|(o, _)| *o == offset).and_then(|(_, n)| n) } else { None };
                        RangeReport { offset, size, used, name }
                    })
                    .collect();
                reports.push(BlockReport {
                    memory_type: pool.memory_type,
                    class: pool.class,
                    kind: BlockKind::Pooled,
                    index,
                    size: entry.size,
                    map_refs: entry.mapping.map_or(0, |m| m.users.saturating_add(u32::from(m.persistent))),
                    ranges,
                });
            }
        }
        for (index, entry) in lock(&self.dedicated).slots.iter().enumerate() {
            if let Some(entry) = entry {
                let name = entry.meta.as_ref().map(|m| m.name.to_string());
                let mut ranges = Vec::new();
                if entry.used > 0 {
                    ranges.push(RangeReport { offset: 0, size: entry.used, used: true, name });
                }
                if entry.used < entry.size {
                    ranges.push(RangeReport {
                        offset: entry.used,
                        size: entry.size - entry.used,
                        used: false,
                        name: None,
                    });
                }
                reports.push(BlockReport {
                    memory_type: entry.memory_type,
                    class: entry.class,
                    kind: BlockKind::Dedicated,
                    index: index as u32,
                    size: entry.size,
                    map_refs: entry.mapping.map_or(0, |m| m.users.saturating_add(u32::from(m.persistent))),
                    ranges,
                });
            }
        }
        for (memory_type, heap) in self.heaps.iter().enumerate() {
            if let Some(heap) = lock(heap).as_ref() {
                reports.push(BlockReport {
                    memory_type: memory_type as u32,
                    class: ResourceClass::Unknown,
                    kind: BlockKind::VirtualHeap,
                    index: 0,
                    size: heap.stats().committed_bytes,
                    map_refs: 0,
                    ranges: Vec::new(),
                });
            }
        }
        reports
    }

    /// Every allocation still live, with names and backtraces when tracked.
    pub fn leak_report(&self) -> LeakReport {
        let mut leaks = Vec::new();
        for pool in &self.pools {
            let pool = lock(pool);
            for (_, entry) in pool.blocks() {
                leaks.extend(entry.ranges.iter().map(|info| {
                    Leak::from_meta(info.user_data.map(|m| &**m), info.size, pool.memory_type, pool.class)
                }));
            }
        }
        for entry in lock(&self.dedicated).slots.iter().flatten().filter(|entry| entry.used > 0) {
            leaks.push(Leak::from_meta(entry.meta.as_deref(), entry.used, entry.memory_type, entry.class));
        }
        for (memory_type, heap) in self.heaps.iter().enumerate() {
            if let Some(heap) = lock(heap).as_ref() {
                heap.leaks(memory_type as u32, &mut leaks);
            }
        }
        for slot in &self.custom_pools {
            if let Some(pool) = lock(slot).as_ref()
                && pool.live_count > 0
            {
                leaks.push(Leak {
                    name: format!("{} ({} allocations in custom pool)", pool.name, pool.live_count),
                    size: pool.live_bytes,
                    memory_type: pool.memory_type,
                    class: pool.class,
                    backtrace: None,
                });
            }
        }
        LeakReport { leaks }
    }

    /// Adds an event to the ring, if the ring is on (a capacity of 0 costs one comparison).
    fn record(&self, event: impl FnOnce() -> EventKind) {
        if self.config.event_capacity > 0 {
            lock(&self.events).push(event());
        }
    }

    /// [`best_memory_type`] for `desc`, from the table when `desc` is the common request.
    fn best_type(&self, desc: &AllocationDesc<'_>) -> Option<u32> {
        let options = &desc.options;
        if desc.memory_type_bits == u32::MAX
            && options.required_flags.is_empty()
            && options.preferred_flags.is_empty()
            && options.avoided_flags.is_empty()
        {
            let index = match options.usage {
                Usage::GpuOnly => 0,
                Usage::Upload => 1,
                Usage::Readback => 2,
                Usage::Automatic => 3,
            };
            return self.best_by_usage[index];
        }
        best_memory_type(&self.properties, desc)
    }

    fn allocate_inner(&self, desc: &AllocationDesc<'_>) -> Result<Allocation> {
        if desc.size == 0 {
            return Err(Error::ZeroSize);
        }
        if !desc.alignment.is_power_of_two() {
            return Err(Error::InvalidAlignment { alignment: desc.alignment });
        }
        // Fast path: memory already committed in the best type's pool needs no budget (and no device query).
        if self.config.virtual_heap.is_none()
            && desc.dedicated == Dedicated::No
            && desc.size < self.config.dedicated_threshold
            && let Some(best_type) = self.best_type(desc)
        {
            let mut pool = lock(self.pool(best_type, desc.class));
            let span = self.span(best_type, desc);
            if let Some(placement) = pool.place(span, desc.alignment) {
                AtomicDiagnostics::bump(&self.type_counters[best_type as usize].block_reuses);
                return Ok(self.pooled(desc, best_type, &mut pool, placement));
            }
        }
        // Virtual-heap fast path: the best type's heap, without a budget query; budgets are consulted (through
        // the ranking below) once it runs out, and always under `RequireWithin` (a commit is new memory).
        if let (Some(heap_config), Some(vm)) = (&self.config.virtual_heap, self.device.virtual_memory())
            && let Some(best_type) = self.best_type(desc)
            && desc.dedicated == Dedicated::No
            && desc.options.budget != BudgetPolicy::RequireWithin
            && desc.size <= self.type_limit(best_type)
            && let Some(granularity) = vm.granularity(best_type)
            && let Ok(allocation) = self.allocate_virtual(desc, best_type, vm, granularity, heap_config, true)
        {
            return Ok(allocation);
        }
        self.give_back_kept_over_budget(desc.size);
        let ranked = self.rank_memory_types(desc)?;
        let mut largest_limit = 0;
        let mut tried = 0;
        for choice in ranked.iter() {
            let limit = self.type_limit(choice.memory_type);
            largest_limit = largest_limit.max(limit);
            if desc.size > limit {
                continue;
            }
            if tried > 0 {
                AtomicDiagnostics::bump(&self.diagnostics.fallbacks);
            }
            tried += 1;
            match self.allocate_in_type(desc, choice) {
                Ok(allocation) => return Ok(allocation),
                Err(Error::OutOfMemory { .. } | Error::TooManyBlocks { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
        if tried == 0 {
            return Err(Error::SizeTooLarge { size: desc.size, limit: largest_limit });
        }
        if self.live_blocks.load(Ordering::Relaxed) >= self.block_limit {
            return Err(Error::TooManyBlocks { limit: self.block_limit });
        }
        Err(Error::OutOfMemory { size: desc.size })
    }

    /// The largest request a memory type could hold: its heap size, capped by the device's block size limit.
    fn type_limit(&self, memory_type: u32) -> u64 {
        let heap = self.properties.types[memory_type as usize].heap_index as usize;
        let heap_size = self.properties.heaps.get(heap).map_or(0, |h| h.size);
        // A virtual heap commits pages, not one block per request: the device's block-size limit does not apply.
        let virtual_heap = self.config.virtual_heap.is_some()
            && self.device.virtual_memory().is_some_and(|vm| vm.granularity(memory_type).is_some());
        if virtual_heap { heap_size } else { heap_size.min(self.properties.limits.max_allocation_size) }
    }

    fn allocate_in_type(&self, desc: &AllocationDesc<'_>, choice: &MemoryTypeChoice) -> Result<Allocation> {
        let memory_type = choice.memory_type;
        let may_create = choice.within_budget || desc.options.budget != BudgetPolicy::RequireWithin;
        // In virtual-heap mode large requests stay in the heap (its pages are the unit of commitment anyway);
        // only requests that ask for a block of their own get one.
        let wants_dedicated = desc.dedicated == Dedicated::Required
            || desc.dedicated == Dedicated::Preferred
            || (self.config.virtual_heap.is_none() && desc.size >= self.config.dedicated_threshold);
        if wants_dedicated && may_create {
            match self.allocate_dedicated(desc, memory_type) {
                Ok(allocation) => return Ok(allocation),
                // Preferred (or large) requests may still share a block when the block limit is hit.
                Err(Error::TooManyBlocks { .. }) if desc.dedicated != Dedicated::Required => {}
                Err(error) => return Err(error),
            }
        } else if desc.dedicated == Dedicated::Required {
            return Err(Error::OutOfMemory { size: desc.size });
        }
        if let (Some(heap_config), Some(vm)) = (&self.config.virtual_heap, self.device.virtual_memory())
            && let Some(granularity) = vm.granularity(memory_type)
        {
            // Without room in the budget, only pages already committed may be used.
            return self.allocate_virtual(desc, memory_type, vm, granularity, heap_config, may_create);
        }

        // Existing blocks first.
        let span = self.span(memory_type, desc);
        let (block_size, class_granularity) = {
            let mut pool = lock(self.pool(memory_type, desc.class));
            if let Some(placement) = pool.place(span, desc.alignment) {
                AtomicDiagnostics::bump(&self.type_counters[memory_type as usize].block_reuses);
                return Ok(self.pooled(desc, memory_type, &mut pool, placement));
            }
            // A block big enough for the request and its worst-case alignment padding (saturating: a request
            // too large for any block is refused below, before a block is made).
            let needed = span
                .saturating_add(desc.alignment.saturating_sub(1))
                .checked_next_multiple_of(MIB)
                .unwrap_or(!(MIB - 1));
            (pool.next_block_size.max(needed), self.properties.limits.buffer_image_granularity)
        };
        if !may_create {
            return Err(Error::OutOfMemory { size: desc.size });
        }
        let block_size = self.reachable_block_size(memory_type, block_size);
        // A block that cannot hold the request (its span, or an alignment past its size, which its ranges
        // refuse) would only be made and cached for nothing.
        if desc.alignment > block_size {
            return Err(Error::InvalidAlignment { alignment: desc.alignment });
        }
        if span > block_size {
            return Err(Error::SizeTooLarge { size: desc.size, limit: block_size });
        }
        let block = self.create_block(BlockDesc::new(memory_type, block_size), self.heap_of(memory_type))?;
        let mapping = match self.persistent_mapping_for(memory_type, &block) {
            Ok(mapping) => mapping,
            Err(error) => {
                self.destroy_block(block, None, memory_type, block_size);
                return Err(error);
            }
        };

        let mut pool = lock(self.pool(memory_type, desc.class));
        let index = match pool.add_block(block, block_size, class_granularity, mapping) {
            Ok(index) => index,
            Err((block, mapping)) => {
                drop(pool);
                self.destroy_block(block, mapping, memory_type, block_size);
                return Err(Error::InvalidConfig { reason: "block size not usable by the core" });
            }
        };
        let grown = (pool.next_block_size.saturating_mul(2)).min(self.regular_max(memory_type));
        pool.next_block_size = pool.next_block_size.max(grown);
        match pool.place_in(index, span, desc.alignment) {
            Some(placement) => Ok(self.pooled(desc, memory_type, &mut pool, placement)),
            // Cannot happen (the block was sized for the request), but never panic: keep the block cached.
            None => Err(Error::OutOfMemory { size: desc.size }),
        }
    }

    fn allocate_virtual(
        &self,
        desc: &AllocationDesc<'_>,
        memory_type: u32,
        vm: &D::Virtual,
        granularity: u64,
        config: &VirtualHeapConfig,
        may_commit: bool,
    ) -> Result<Allocation> {
        let mut slot = lock(&self.heaps[memory_type as usize]);
        if slot.is_none() {
            self.create_heap(&mut slot, memory_type, vm, granularity, config)?;
        }
        let Some(heap) = slot.as_mut() else { return Err(Error::OutOfMemory { size: desc.size }) };
        heap.observe(self.config.event_capacity > 0);
        let before = heap.committed_bytes();
        let mut placed = heap.allocate(vm, desc.size, desc.alignment, may_commit);
        if matches!(placed, Err(DeviceError::OutOfDeviceMemory)) && heap.trim(vm) > 0 {
            AtomicDiagnostics::bump(&self.diagnostics.reclaims);
            placed = heap.allocate(vm, desc.size, desc.alignment, may_commit);
        }
        self.heap_changed(memory_type, heap, before);
        match placed.map_err(device_error)? {
            Some(placement) => Ok(Allocation {
                raw: RawAllocation {
                    allocator: self.id,
                    memory_type,
                    class: desc.class,
                    offset: placement.offset,
                    size: desc.size,
                    user_data: desc.user_data,
                    place: Place::Virtual { handle: placement.handle.to_raw() },
                    front_margin: 0,
                },
            }),
            None => Err(Error::OutOfMemory { size: desc.size }),
        }
    }

    /// Creates memory type `memory_type`'s virtual heap in `slot`, its pages the configured size or else the
    /// device's `granularity`. Apart from `allocate_virtual`, and never inlined into it: it runs once per memory
    /// type, and the space to build a heap in would otherwise be part of every allocation's stack frame.
    #[cold]
    #[inline(never)]
    fn create_heap(
        &self,
        slot: &mut Option<TieredHeap<D::Virtual>>,
        memory_type: u32,
        vm: &D::Virtual,
        granularity: u64,
        config: &VirtualHeapConfig,
    ) -> Result<()> {
        let page_size = config.page_size.unwrap_or(granularity);
        let heap_size = self.properties.heaps.get(self.heap_of(memory_type) as usize).map_or(0, |h| h.size);
        let size = config
            .reserve_size
            .unwrap_or(heap_size.saturating_mul(VirtualHeapConfig::ADDRESS_SPACE_PER_HEAP_BYTE));
        let heap =
            slot.insert(TieredHeap::new(vm, memory_type, size, page_size, config).map_err(device_error)?);
        heap.record_events(self.record_pages.load(Ordering::Relaxed));
        Ok(())
    }

    /// The host address of a virtual-heap allocation when the heap is host memory (the host backend in real
    /// mode); None otherwise. Using the pointer is up to the caller: it is valid for `allocation.size()` bytes
    /// until the allocation is freed.
    pub fn virtual_address(&self, allocation: &Allocation) -> Option<core::ptr::NonNull<u8>> {
        let raw = &allocation.raw;
        if raw.allocator != self.id || !matches!(raw.place, Place::Virtual { .. }) {
            return None;
        }
        let vm = self.device.virtual_memory()?;
        lock(self.heaps.get(raw.memory_type as usize)?).as_ref()?.host_address(vm, raw.offset)
    }

    /// Accounts for a virtual-heap operation: committed bytes (`before` it: [`TieredHeap::committed_bytes`])
    /// and page events.
    #[inline(always)]
    fn heap_changed(&self, memory_type: u32, heap: &mut TieredHeap<D::Virtual>, before: u64) {
        let after = heap.committed_bytes();
        self.diagnostics.change_committed(after.saturating_sub(before), before.saturating_sub(after));
        if self.config.event_capacity > 0 {
            let mut ring = lock(&self.events);
            for event in heap.drain_pending() {
                ring.push(match event {
                    PageEvent::Commit { offset, size } => EventKind::Committed { memory_type, offset, size },
                    PageEvent::Decommit { offset, size } => {
                        EventKind::Decommitted { memory_type, offset, size }
                    }
                    // Placement logs' alone: never pending.
                    PageEvent::Tier { .. } => continue,
                });
            }
        }
    }

    /// Counters of a memory type's virtual heap, if it has one yet.
    pub fn virtual_heap_stats(&self, memory_type: u32) -> Option<VirtualHeapStats> {
        let slot = lock(self.heaps.get(memory_type as usize)?);
        slot.as_ref().map(TieredHeap::stats)
    }

    /// Starts or stops recording commit and decommit events in every virtual heap, present and future (for
    /// placement logs).
    pub fn record_page_events(&self, on: bool) {
        self.record_pages.store(on, Ordering::Relaxed);
        for heap in self.heaps.iter() {
            if let Some(heap) = lock(heap).as_mut() {
                heap.record_events(on);
            }
        }
    }

    /// Map and unmap events of a memory type's virtual heap since the last call, with the physical pages of each
    /// mapping (recording must be on).
    pub fn take_page_events(&self, memory_type: u32) -> Vec<PageRecord> {
        self.heaps
            .get(memory_type as usize)
            .and_then(|heap| lock(heap).as_mut().map(TieredHeap::take_events))
            .unwrap_or_default()
    }

    /// `(front, back)` debug-margin bytes for a pooled request of `memory_type` at `alignment`: the front margin
    /// is rounded up to the alignment so the allocation itself stays aligned.
    fn margins(&self, memory_type: u32, alignment: u64) -> (u64, u64) {
        let margin = self.config.debug_margin;
        if margin == 0 || !self.is_host_visible(memory_type) {
            return (0, 0);
        }
        (margin.next_multiple_of(alignment.max(1)), margin)
    }

    /// Bytes a pooled request takes in its block: its size plus any debug margins.
    fn span(&self, memory_type: u32, desc: &AllocationDesc<'_>) -> u64 {
        let (front, back) = self.margins(memory_type, desc.alignment);
        desc.size.saturating_add(front).saturating_add(back)
    }

    /// Whether an allocation's debug margins still hold the pattern (true where memory cannot be mapped).
    fn margins_intact(&self, allocation: &Allocation) -> bool {
        let raw = &allocation.raw;
        let Ok(ptr) = self.acquire_raw_mapping(allocation) else { return true };
        let margin = self.config.debug_margin as usize;
        // SAFETY: as in `pooled`: both guard regions lie in this allocation's range of a mapped block.
        let intact = unsafe {
            let front = core::slice::from_raw_parts(ptr.0.as_ptr().sub(raw.front_margin as usize), margin);
            let back = core::slice::from_raw_parts(ptr.0.as_ptr().add(raw.size as usize), margin);
            front.iter().chain(back).all(|&byte| byte == MARGIN_PATTERN)
        };
        self.release_mapping(allocation);
        intact
    }

    /// Checks the debug margins of every live pooled allocation in host-visible memory; the first damaged one
    /// is reported. Ok when margins are off or memory cannot be mapped.
    pub fn check_corruption(&self) -> Result<()> {
        let margin = self.config.debug_margin;
        if margin == 0 {
            return Ok(());
        }
        for pool in &self.pools {
            let mut pool = lock(pool);
            let memory_type = pool.memory_type;
            if !self.is_host_visible(memory_type) {
                continue;
            }
            for (index, generation) in
                pool.blocks().map(|(index, entry)| (index, entry.generation)).collect::<Vec<_>>()
            {
                let Some(entry) = pool.block_mut(index, generation) else { continue };
                let Ok(base) = acquire_mapping(&self.device, &entry.block, &mut entry.mapping) else {
                    continue;
                };
                let mut damaged = None;
                for info in entry.ranges.iter() {
                    // SAFETY: every live range of a host-visible pool carries margins at both ends (`span`),
                    // inside the block, which is mapped (hold taken above).
                    let intact = unsafe {
                        let front = core::slice::from_raw_parts(
                            base.as_ptr().add(info.offset as usize),
                            margin as usize,
                        );
                        let back_start = base.as_ptr().add((info.offset + info.size - margin) as usize);
                        let back = core::slice::from_raw_parts(back_start, margin as usize);
                        front.iter().chain(back).all(|&byte| byte == MARGIN_PATTERN)
                    };
                    if !intact {
                        damaged = Some(info.offset);
                        break;
                    }
                }
                release_block_mapping(&self.device, &entry.block, &mut entry.mapping);
                if let Some(offset) = damaged {
                    return Err(Error::Corruption { memory_type, offset });
                }
            }
        }
        Ok(())
    }

    /// A new regular block's size: `size`, but once three quarters of the block limit are in use, at least the
    /// share of the heap's remaining budget each block slot left must hold (a power of two, but no more than the
    /// budget left), so that the limit never keeps block mode from the heap's size (256 blocks of 256 MiB, the
    /// defaults, are 64 GiB: less than half an H200's 140 GiB). At most the device's largest allocation. From
    /// half the limit on, lm_1b_train (52 GiB in about 200 blocks) committed 1.023 × instead of 1.008 ×;
    /// lm_2_7b_train (86 GiB) needs it (docs/BENCHMARKS.md, "Fourteenth session").
    fn reachable_block_size(&self, memory_type: u32, size: u64) -> u64 {
        let max = self.properties.limits.max_allocation_size;
        let live = self.live_blocks.load(Ordering::Relaxed);
        if u64::from(live) * 4 < u64::from(self.block_limit) * 3 {
            return size.min(max);
        }
        let heap = self.heap_of(memory_type) as usize;
        let Some(budget) = self.device.heap_budgets().get(heap).copied() else { return size.min(max) };
        let left = budget.budget.saturating_sub(budget.usage);
        let slots = u64::from(self.block_limit.saturating_sub(live).max(1));
        // Past 2^63 there is no next power of two: the share is then the budget left.
        let share =
            left.div_ceil(slots).checked_next_power_of_two().unwrap_or(u64::MAX).min(left & !(MIB - 1));
        size.max(share).min(max)
    }

    fn regular_max(&self, memory_type: u32) -> u64 {
        let flags = self.properties.types[memory_type as usize].flags;
        let max = if flags.contains(MemoryPropertyFlags::DEVICE_LOCAL) {
            self.config.sizes.device_max
        } else {
            self.config.sizes.host_max
        };
        max.min(self.properties.limits.max_allocation_size)
    }

    fn heap_of(&self, memory_type: u32) -> u32 {
        self.properties.types[memory_type as usize].heap_index
    }

    /// The allocation for a placement in `pool`, whose lock the caller holds; its debug margins are written
    /// before the lock goes, so that [`Allocator::check_corruption`] (which reads every live range's margins
    /// under the same lock) never meets a range whose margins are not written yet, nor one being written.
    fn pooled(
        &self,
        desc: &AllocationDesc<'_>,
        memory_type: u32,
        pool: &mut Pool<D::Block>,
        placement: Placement,
    ) -> Allocation {
        let (front_margin, back_margin) = self.margins(memory_type, desc.alignment);
        if front_margin > 0
            && let Some(entry) = pool.block_mut(placement.block_index, placement.block_generation)
            && let Ok(base) = acquire_mapping(&self.device, &entry.block, &mut entry.mapping)
        {
            // SAFETY: the placement's range in the block is [offset, offset + front + size + back) with front >=
            // back (see `margins`); the block is mapped (hold taken above) and no other allocation overlaps that
            // range, so both guard regions are ours to write; the pool's lock keeps every other reader out.
            unsafe {
                let start = base.as_ptr().add(placement.offset as usize);
                core::ptr::write_bytes(start, MARGIN_PATTERN, back_margin as usize);
                let back = start.add((front_margin + desc.size) as usize);
                core::ptr::write_bytes(back, MARGIN_PATTERN, back_margin as usize);
            }
            release_block_mapping(&self.device, &entry.block, &mut entry.mapping);
        }
        Allocation {
            raw: RawAllocation {
                allocator: self.id,
                memory_type,
                class: desc.class,
                offset: placement.offset + front_margin,
                front_margin,
                size: desc.size,
                user_data: desc.user_data,
                place: Place::Pooled {
                    block: placement.block_index,
                    generation: placement.block_generation,
                    handle: placement.handle.to_raw(),
                },
            },
        }
    }

    fn allocate_dedicated(&self, desc: &AllocationDesc<'_>, memory_type: u32) -> Result<Allocation> {
        // A request dedicated by its size alone gets a plain block (no resource named), which later requests of
        // about its size may reuse; one that asked for a block of its own gets one made for it.
        let reusable = desc.dedicated == Dedicated::No;
        let reused = if reusable { self.reuse_dedicated(desc, memory_type) } else { None };
        let (slot, generation, block) = match reused {
            Some(found) => found,
            None => {
                let block_desc = BlockDesc::new(memory_type, desc.size).with_dedicated(!reusable);
                let block = self.create_block(block_desc, self.heap_of(memory_type))?;
                let mut dedicated = lock(&self.dedicated);
                let slot = match dedicated.slots.iter().position(Option::is_none) {
                    Some(slot) => slot,
                    None => {
                        dedicated.slots.push(None);
                        dedicated.generations.push(0);
                        dedicated.block_generations.push(0);
                        dedicated.slots.len() - 1
                    }
                };
                let generation = dedicated.generations[slot];
                let block_generation = dedicated.block_generations[slot];
                dedicated.slots[slot] = Some(DedicatedBlock {
                    block,
                    mapping: None,
                    meta: None,
                    memory_type,
                    class: desc.class,
                    size: desc.size,
                    used: desc.size,
                    reusable,
                    emptied: 0,
                    generation,
                    block_generation,
                });
                (slot, generation, block_generation)
            }
        };
        Ok(Allocation {
            raw: RawAllocation {
                allocator: self.id,
                memory_type,
                class: desc.class,
                offset: 0,
                size: desc.size,
                user_data: desc.user_data,
                place: Place::Dedicated { slot: slot as u32, generation, block },
                front_margin: 0,
            },
        })
    }

    /// Takes a kept dedicated block of `memory_type` for `desc`: the smallest that holds it and is larger by at
    /// most a sixteenth. Returns its slot and new generation.
    fn reuse_dedicated(&self, desc: &AllocationDesc<'_>, memory_type: u32) -> Option<(usize, u32, u32)> {
        let mut dedicated = lock(&self.dedicated);
        let largest = desc.size.saturating_add(desc.size / DEDICATED_REUSE_SLACK);
        let slot = dedicated
            .slots
            .iter()
            .enumerate()
            .filter_map(|(slot, entry)| entry.as_ref().map(|entry| (slot, entry)))
            .filter(|(_, entry)| {
                entry.used == 0
                    && entry.reusable
                    && entry.memory_type == memory_type
                    && entry.class == desc.class
                    && (desc.size..=largest).contains(&entry.size)
            })
            .min_by_key(|(_, entry)| entry.size)?
            .0;
        let generation = dedicated.generations[slot];
        let entry = dedicated.slots[slot].as_mut()?;
        entry.used = desc.size;
        entry.generation = generation;
        let block = entry.block_generation;
        drop(dedicated);
        AtomicDiagnostics::bump(&self.type_counters[memory_type as usize].block_reuses);
        Some((slot, generation, block))
    }

    /// Before a block of `size` bytes is created: destroys kept empty blocks, longest-empty dedicated ones first,
    /// then pools' empty blocks, until the new block fits under the most committed so far (or none is left), so
    /// that keeping blocks never raises the peak.
    fn make_room(&self, size: u64) {
        if !self.config.keep_blocks_within_peak {
            return;
        }
        loop {
            let committed = self.diagnostics.committed_bytes.load(Ordering::Relaxed);
            let peak = self.diagnostics.peak_committed_bytes.load(Ordering::Relaxed);
            if committed.saturating_add(size) <= peak || !self.destroy_one_kept_block() {
                return;
            }
        }
    }

    /// Gives back the kept blocks of every heap that has no budget room for `size` more bytes: kept blocks must
    /// not make a heap look full, or requests would fall back to another memory type (device-local memory
    /// spilling to host memory) while the blocks that crowd it out hold nothing.
    fn give_back_kept_over_budget(&self, size: u64) {
        if !self.config.keep_blocks_within_peak {
            return;
        }
        for (heap, budget) in self.device.heap_budgets().iter().enumerate() {
            if budget.usage.saturating_add(size) > budget.budget {
                self.reclaim_empty_blocks(Some(heap as u32));
            }
        }
    }

    /// Destroys one kept empty block (see [`Allocator::make_room`]); false when there is none.
    fn destroy_one_kept_block(&self) -> bool {
        let taken = {
            let mut dedicated = lock(&self.dedicated);
            let oldest = dedicated
                .slots
                .iter()
                .enumerate()
                .filter_map(|(slot, entry)| entry.as_ref().filter(|e| e.used == 0).map(|e| (slot, e.emptied)))
                .min_by_key(|&(_, emptied)| emptied)
                .map(|(slot, _)| slot);
            oldest.and_then(|slot| dedicated.take(slot))
        };
        if let Some(entry) = taken {
            self.destroy_block(entry.block, entry.mapping, entry.memory_type, entry.size);
            return true;
        }
        for pool in &self.pools {
            let (memory_type, blocks) = {
                let mut pool = lock(pool);
                if pool.empty_blocks == 0 {
                    continue;
                }
                let keep = pool.empty_blocks - 1;
                (pool.memory_type, pool.take_empty_blocks(keep))
            };
            let destroyed = !blocks.is_empty();
            for (block, mapping, size) in blocks {
                self.destroy_block(block, mapping, memory_type, size);
            }
            if destroyed {
                return true;
            }
        }
        false
    }

    /// Creates a device block, within the block limit. On out-of-memory it reclaims the cached empty blocks of
    /// the same heap and tries once more.
    fn create_block(&self, desc: BlockDesc, heap: u32) -> Result<D::Block> {
        self.make_room(desc.size);
        let reserved = self.live_blocks.fetch_update(Ordering::AcqRel, Ordering::Acquire, |live| {
            (live < self.block_limit).then_some(live + 1)
        });
        if reserved.is_err() && (self.reclaim_empty_blocks(Some(heap)) == 0 || !self.reserve_block_slot()) {
            return Err(Error::TooManyBlocks { limit: self.block_limit });
        }
        // SAFETY: (1) `desc.memory_type` comes from ranking over this device's own memory types, and the size is
        // non-zero (requests of 0 are refused first) and capped at `limits.max_allocation_size` by the callers.
        let mut result = unsafe { self.device.create_block(&desc) };
        if matches!(result, Err(DeviceError::OutOfDeviceMemory)) && self.reclaim_empty_blocks(Some(heap)) > 0
        {
            // SAFETY: as above; `desc` is unchanged.
            result = unsafe { self.device.create_block(&desc) };
        }
        match result {
            Ok(block) => {
                AtomicDiagnostics::bump(&self.diagnostics.block_creations);
                self.diagnostics.change_committed(desc.size, 0);
                self.notify(|callbacks| callbacks.block_created(desc.memory_type, desc.size));
                self.record(|| EventKind::BlockCreated { memory_type: desc.memory_type, size: desc.size });
                Ok(block)
            }
            Err(error) => {
                self.live_blocks.fetch_sub(1, Ordering::AcqRel);
                match error {
                    DeviceError::TooManyObjects => Err(Error::TooManyBlocks { limit: self.block_limit }),
                    other => Err(device_error(other)),
                }
            }
        }
    }

    fn reserve_block_slot(&self) -> bool {
        self.live_blocks
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |live| {
                (live < self.block_limit).then_some(live + 1)
            })
            .is_ok()
    }

    /// Maps a new block for good when persistent mapping is on and its type is host-visible.
    fn persistent_mapping_for(&self, memory_type: u32, block: &D::Block) -> Result<Option<Mapping>> {
        if !self.config.persistent_mapping || !self.is_host_visible(memory_type) {
            return Ok(None);
        }
        // SAFETY: (1) `block` was just created by this device from a host-visible type and nobody has mapped it.
        let ptr = unsafe { self.device.map(block)? };
        Ok(Some(Mapping { ptr: MappedPtr(ptr), users: 0, persistent: true }))
    }

    fn is_host_visible(&self, memory_type: u32) -> bool {
        self.properties.types[memory_type as usize].flags.contains(MemoryPropertyFlags::HOST_VISIBLE)
    }

    fn destroy_block(&self, block: D::Block, mapping: Option<Mapping>, memory_type: u32, size: u64) {
        if mapping.is_some() {
            // SAFETY: (1) the block is mapped (it has a mapping) and is about to be destroyed: no guard holds an
            // allocation in it. A guard borrows its allocation mutably, so the allocation cannot be freed under it
            // (and `Allocation::from_raw`'s contract rules out a second copy to free); a custom pool refuses
            // `reset_pool` and `destroy_pool` while guards hold its blocks; and the allocator is dropped only when
            // no guard borrows it.
            unsafe { self.device.unmap(&block) };
        }
        // SAFETY: (1) every block handed here was created by `self.device` and was just removed from the one
        // pool or dedicated slot that owned it, so it is destroyed once. (2) Pools give up only empty blocks and
        // a dedicated block goes when its one allocation is freed. Whether the device still uses that memory is
        // the caller's side: the resource helpers of a backend (Vulkan's `create_buffer_with_options`, say) make
        // it a condition of their `unsafe` contract that an allocation bound to a resource the device may use is
        // neither freed nor dropped with the allocator, and memory the caller binds itself needs `unsafe` device
        // calls whose contracts say the same. Its host mapping, if any, was undone above.
        unsafe { self.device.destroy_block(block) };
        self.live_blocks.fetch_sub(1, Ordering::AcqRel);
        AtomicDiagnostics::bump(&self.diagnostics.block_destructions);
        self.diagnostics.change_committed(0, size);
        self.notify(|callbacks| callbacks.block_destroyed(memory_type, size));
        self.record(|| EventKind::BlockDestroyed { memory_type, size });
    }

    /// Runs `call` on the installed device-memory callbacks, if any, inside a [`CallbackScope`] (see
    /// [`callback_depth`]): every callback goes through here.
    fn notify(&self, call: impl FnOnce(&dyn DeviceMemoryCallbacks)) {
        if let Some(callbacks) = &self.config.callbacks {
            let _inside = CallbackScope::enter();
            call(callbacks.as_ref());
        }
    }

    /// Destroys cached empty blocks of pools, and kept dedicated blocks, in `heap` (every heap with None);
    /// returns how many.
    fn reclaim_empty_blocks(&self, heap: Option<u32>) -> usize {
        let kept: Vec<DedicatedBlock<D::Block>> = {
            let mut dedicated = lock(&self.dedicated);
            let kept: Vec<usize> = (0..dedicated.slots.len())
                .filter(|&slot| {
                    dedicated.slots[slot]
                        .as_ref()
                        .is_some_and(|e| e.used == 0 && heap.is_none_or(|h| self.heap_of(e.memory_type) == h))
                })
                .collect();
            kept.into_iter().filter_map(|slot| dedicated.take(slot)).collect()
        };
        let mut destroyed = kept.len();
        for entry in kept {
            self.destroy_block(entry.block, entry.mapping, entry.memory_type, entry.size);
        }
        for pool in &self.pools {
            let (memory_type, blocks) = {
                let mut pool = lock(pool);
                if heap.is_some_and(|h| self.heap_of(pool.memory_type) != h) || pool.empty_blocks == 0 {
                    continue;
                }
                (pool.memory_type, pool.take_empty_blocks(0))
            };
            destroyed += blocks.len();
            for (block, mapping, size) in blocks {
                self.destroy_block(block, mapping, memory_type, size);
            }
        }
        if destroyed > 0 && heap.is_some() {
            AtomicDiagnostics::bump(&self.diagnostics.reclaims);
        }
        destroyed
    }

    /// Destroys every cached empty block and decommits every empty virtual-heap page; returns how many blocks
    /// were destroyed.
    pub fn trim_empty_blocks(&self) -> usize {
        if let Some(vm) = self.device.virtual_memory() {
            for (memory_type, heap) in self.heaps.iter().enumerate() {
                if let Some(heap) = lock(heap).as_mut() {
                    heap.observe(self.config.event_capacity > 0);
                    let before = heap.committed_bytes();
                    heap.trim(vm);
                    self.heap_changed(memory_type as u32, heap, before);
                }
            }
        }
        let destroyed = self.reclaim_empty_blocks(None);
        self.record(|| EventKind::Trimmed { blocks: destroyed as u64 });
        destroyed
    }

    /// Frees an allocation. Another allocator's allocation, or one already freed, is an error and changes
    /// nothing.
    pub fn free(&self, allocation: Allocation) -> Result<()> {
        let raw = allocation.raw;
        let intact = raw.front_margin == 0 || raw.allocator != self.id || self.margins_intact(&allocation);
        self.free_inner(raw)?;
        // A virtual heap counts its own, under its lock.
        if !matches!(raw.place, Place::Virtual { .. }) {
            self.type_counters[raw.memory_type as usize].remove_live(raw.size);
        }
        if !intact {
            // The allocation is freed all the same (keeping it would leak it); the damage is reported.
            return Err(Error::Corruption {
                memory_type: raw.memory_type,
                offset: raw.offset - raw.front_margin,
            });
        }
        self.record(|| EventKind::Freed { memory_type: raw.memory_type, size: raw.size, offset: raw.offset });
        Ok(())
    }

    fn free_inner(&self, raw: RawAllocation) -> Result<()> {
        if raw.allocator != self.id {
            return Err(Error::ForeignAllocation);
        }
        if raw.memory_type as usize >= self.properties.types.len() {
            return Err(Error::ForeignAllocation);
        }
        match raw.place {
            Place::Pooled { block, generation, handle } => {
                let to_destroy = {
                    let mut pool = lock(self.pool(raw.memory_type, raw.class));
                    let emptied = pool.free(block, generation, Handle::from_raw(handle)).map_err(
                        |error| match error {
                            memcarve_core::Error::ForeignHandle => Error::ForeignAllocation,
                            _ => Error::DoubleFree,
                        },
                    )?;
                    if emptied
                        && !self.config.keep_blocks_within_peak
                        && pool.empty_blocks > self.config.max_empty_blocks_per_pool
                    {
                        pool.take_empty_blocks(self.config.max_empty_blocks_per_pool)
                    } else {
                        Vec::new()
                    }
                };
                for (block, mapping, size) in to_destroy {
                    self.destroy_block(block, mapping, raw.memory_type, size);
                }
                Ok(())
            }
            Place::Custom { pool, epoch, block, handle } => {
                let mut slot = lock(self.custom_pools.get(pool as usize).ok_or(Error::ForeignAllocation)?);
                let custom = slot.as_mut().filter(|p| p.epoch == epoch).ok_or(Error::DoubleFree)?;
                let entry = custom.block_mut(block).ok_or(Error::DoubleFree)?;
                entry.ranges.free(Handle::from_raw(handle)).map_err(|error| match error {
                    memcarve_core::Error::OutOfOrderFree => Error::OutOfOrderFree,
                    memcarve_core::Error::ForeignHandle => Error::ForeignAllocation,
                    _ => Error::DoubleFree,
                })?;
                custom.live_count -= 1;
                custom.live_bytes -= raw.size;
                Ok(())
            }
            Place::Virtual { handle } => {
                let vm = self.device.virtual_memory().ok_or(Error::ForeignAllocation)?;
                let mut slot = lock(&self.heaps[raw.memory_type as usize]);
                let heap = slot.as_mut().ok_or(Error::ForeignAllocation)?;
                heap.observe(self.config.event_capacity > 0);
                let before = heap.committed_bytes();
                let result = heap.free(vm, Handle::from_raw(handle), raw.size).map_err(|error| match error {
                    memcarve_core::Error::ForeignHandle => Error::ForeignAllocation,
                    _ => Error::DoubleFree,
                });
                self.heap_changed(raw.memory_type, heap, before);
                result
            }
            Place::Dedicated { slot, generation, .. } => {
                let entry = {
                    let mut dedicated = lock(&self.dedicated);
                    let owned = dedicated
                        .live_mut(slot, generation)
                        .is_some_and(|entry| entry.memory_type == raw.memory_type);
                    if !owned {
                        return Err(Error::DoubleFree);
                    }
                    dedicated.generations[slot as usize] = generation.wrapping_add(1);
                    dedicated.emptied += 1;
                    let emptied = dedicated.emptied;
                    match dedicated.slots[slot as usize].as_mut() {
                        // Kept for a later request of about its size (see `keep_blocks_within_peak`).
                        Some(entry) if entry.reusable && self.config.keep_blocks_within_peak => {
                            entry.used = 0;
                            entry.meta = None;
                            entry.emptied = emptied;
                            None
                        }
                        _ => dedicated.take(slot as usize),
                    }
                };
                if let Some(entry) = entry {
                    self.destroy_block(entry.block, entry.mapping, entry.memory_type, entry.size);
                }
                Ok(())
            }
        }
    }

    /// Runs `f` on the device block that holds `allocation` (to bind it, export it, or map it).
    pub fn with_block<R>(&self, allocation: &Allocation, f: impl FnOnce(&D::Block) -> R) -> Result<R> {
        let raw = &allocation.raw;
        self.check_owner(raw)?;
        self.with_block_entry(raw, |block, _, _| f(block))
    }

    /// Runs `f` on the block holding `raw` (device block, mapping state, block size) under that block's lock.
    fn with_block_entry<R>(
        &self,
        raw: &RawAllocation,
        f: impl FnOnce(&D::Block, &mut Option<Mapping>, u64) -> R,
    ) -> Result<R> {
        self.with_block_entry_where(raw, false, f)
    }

    /// [`Allocator::with_block_entry`], where `live` also requires the allocation's range to be live in its
    /// block (under the same lock): an allocation of a custom pool that was reset is stale, but its block is not.
    fn with_block_entry_where<R>(
        &self,
        raw: &RawAllocation,
        live: bool,
        f: impl FnOnce(&D::Block, &mut Option<Mapping>, u64) -> R,
    ) -> Result<R> {
        match raw.place {
            Place::Pooled { block, generation, handle } => {
                let mut pool = lock(self.pool(raw.memory_type, raw.class));
                let entry = pool.block_mut(block, generation).ok_or(Error::DoubleFree)?;
                if live && entry.ranges.get(&Handle::from_raw(handle)).is_err() {
                    return Err(Error::DoubleFree);
                }
                Ok(f(&entry.block, &mut entry.mapping, entry.size))
            }
            Place::Dedicated { slot, generation, .. } => {
                let mut dedicated = lock(&self.dedicated);
                let entry = dedicated.live_mut(slot, generation).ok_or(Error::DoubleFree)?;
                Ok(f(&entry.block, &mut entry.mapping, entry.size))
            }
            Place::Custom { pool, epoch, block, handle } => {
                let mut slot = lock(self.custom_pools.get(pool as usize).ok_or(Error::ForeignAllocation)?);
                let entry = slot
                    .as_mut()
                    .filter(|p| p.epoch == epoch)
                    .and_then(|p| p.block_mut(block))
                    .ok_or(Error::DoubleFree)?;
                if live && !entry.ranges.is_live(&Handle::from_raw(handle)) {
                    return Err(Error::DoubleFree);
                }
                Ok(f(&entry.block, &mut entry.mapping, entry.size))
            }
            Place::Virtual { .. } => {
                Err(Error::InvalidConfig { reason: "virtual-heap allocations have no block" })
            }
        }
    }

    /// Maps an allocation for host access. The block's mapping is shared by every mapped allocation in it and
    /// released when the last guard drops (unless persistent). Device-only memory is an
    /// [`Error::NotHostVisible`]; simulated host memory an [`Error::Device`].
    ///
    /// The guard borrows the allocation mutably: while it lives the allocation cannot be freed, and it is the
    /// one guard of that allocation, so its writes never race another guard's. A stale allocation (of a custom
    /// pool reset since) is an [`Error::DoubleFree`]; [`Error::TooManyMappings`] once a block counts `u32::MAX`
    /// guards (only leaked ones get there).
    pub fn map<'a>(&'a self, allocation: &'a mut Allocation) -> Result<MappedAllocation<'a, D>> {
        let ptr = self.acquire_raw_mapping(allocation)?;
        Ok(MappedAllocation { allocator: self, allocation, ptr })
    }

    /// Takes a hold on the mapping of an allocation's block (mapping it if needed) and returns the allocation's
    /// host address; [`Allocator::release_mapping`] gives the hold back.
    pub(crate) fn acquire_raw_mapping(&self, allocation: &Allocation) -> Result<MappedPtr> {
        let raw = &allocation.raw;
        self.check_owner(raw)?;
        if !self.is_host_visible(raw.memory_type) {
            return Err(Error::NotHostVisible { memory_type: raw.memory_type });
        }
        if matches!(raw.place, Place::Virtual { .. }) {
            let ptr = self.virtual_address(allocation).ok_or(Error::Device(DeviceError::Unsupported(
                "this virtual heap has no host address (simulated or device memory)",
            )))?;
            return Ok(MappedPtr(ptr));
        }
        // Mapping is a quick driver call (no allocation), made under the block's lock so that two threads never
        // map one block twice. A stale allocation (one of a custom pool reset since) is refused, and so is one
        // that does not lie inside the block found for it, before anything is mapped.
        let base = self.with_block_entry_where(raw, true, |block, mapping, block_size| {
            let end = raw.offset.checked_add(raw.size).ok_or(Error::DoubleFree)?;
            if end > block_size {
                return Err(Error::DoubleFree);
            }
            acquire_mapping(&self.device, block, mapping)
        })??;
        // The allocation lies inside its block (checked above), so the sum stays inside the mapping.
        let ptr = NonNull::new(base.as_ptr().wrapping_add(raw.offset as usize)).ok_or(Error::DoubleFree)?;
        Ok(MappedPtr(ptr))
    }

    /// Drops one guard's hold on its block's mapping.
    pub(crate) fn release_mapping(&self, allocation: &Allocation) {
        let raw = &allocation.raw;
        if !matches!(raw.place, Place::Virtual { .. }) {
            // A guard exists only for a live allocation, so its block is there; nothing to report otherwise.
            let _ = self.with_block_entry(raw, |block, mapping, _| {
                release_block_mapping(&self.device, block, mapping)
            });
        }
    }

    /// Flush (`true`) or invalidate (`false`) for a mapped allocation; see [`MappedAllocation::flush`].
    pub(crate) fn flush_or_invalidate(
        &self,
        allocation: &Allocation,
        offset: u64,
        size: u64,
        flush: bool,
    ) -> Result<()> {
        let raw = &allocation.raw;
        check_range(offset, size, raw.size)?;
        let flags = self.properties.types[raw.memory_type as usize].flags;
        if flags.contains(MemoryPropertyFlags::HOST_COHERENT) || size == 0 {
            return Ok(());
        }
        let atom = self.properties.limits.non_coherent_atom_size;
        let call = |block: &D::Block, block_size: u64| {
            let (start, end) = atom_range(raw.offset, offset, size, atom, block_size);
            // SAFETY: (1) the block is mapped (the caller holds a guard on this allocation); the range is rounded
            // to the atom size, or reaches the end of the block, and lies inside it (clipped to `block_size`).
            unsafe {
                if flush {
                    self.device.flush(block, start, end - start)
                } else {
                    self.device.invalidate(block, start, end - start)
                }
            }
        };
        if matches!(raw.place, Place::Virtual { .. }) {
            // Virtual heaps on non-coherent memory are not supported yet; host memory is coherent.
            return Ok(());
        }
        Ok(self.with_block_entry(raw, |block, _, block_size| call(block, block_size))??)
    }

    fn check_owner(&self, raw: &RawAllocation) -> Result<()> {
        if raw.allocator != self.id || raw.memory_type as usize >= self.properties.types.len() {
            return Err(Error::ForeignAllocation);
        }
        Ok(())
    }

    /// Cumulative counters and high-water marks since creation or the last [`Allocator::reset_diagnostics`]
    /// (taking each virtual heap's lock in turn for the counts it keeps).
    pub fn diagnostics(&self) -> Diagnostics {
        let d = &self.diagnostics;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let heaps = self.heaps.iter().filter_map(|heap| lock(heap).as_ref().map(TieredHeap::diagnostics));
        let (reuses, peak_allocations, peak_bytes) = heaps.fold((0, 0, 0), |sum, heap| {
            (sum.0 + heap.reuses, sum.1 + heap.peak_allocations, sum.2 + heap.peak_live_bytes)
        });
        Diagnostics {
            block_creations: load(&d.block_creations),
            block_destructions: load(&d.block_destructions),
            block_reuses: reuses + self.type_counters.iter().map(|t| load(&t.block_reuses)).sum::<u64>(),
            fallbacks: load(&d.fallbacks),
            reclaims: load(&d.reclaims),
            failures: load(&d.failures),
            peak_live_allocations: peak_allocations
                + self.type_counters.iter().map(|t| load(&t.peak_live_allocations)).sum::<u64>(),
            peak_live_bytes: peak_bytes
                + self.type_counters.iter().map(|t| load(&t.peak_live_bytes)).sum::<u64>(),
            peak_committed_bytes: load(&d.peak_committed_bytes),
        }
    }

    /// Starts a new diagnostics window: counters to zero, high-water marks to the current values.
    pub fn reset_diagnostics(&self) {
        let d = &self.diagnostics;
        let counters = [&d.block_creations, &d.block_destructions, &d.fallbacks, &d.reclaims];
        for counter in counters.into_iter().chain([&d.failures]) {
            counter.store(0, Ordering::Relaxed);
        }
        for t in &self.type_counters {
            t.block_reuses.store(0, Ordering::Relaxed);
            t.peak_live_allocations.store(t.live_allocations.load(Ordering::Relaxed), Ordering::Relaxed);
            t.peak_live_bytes.store(t.live_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for heap in self.heaps.iter() {
            if let Some(heap) = lock(heap).as_mut() {
                heap.reset_diagnostics();
            }
        }
        d.peak_committed_bytes.store(d.committed_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The events in the ring, oldest first, and how many were dropped because the ring was full.
    pub fn events(&self) -> (Vec<Event>, u64) {
        lock(&self.events).snapshot()
    }

    /// A snapshot of committed, used and free memory, overall, per memory type, per class and per both.
    /// Virtual heaps report committed and live bytes (not free ranges: their free space is address space).
    pub fn stats(&self) -> AllocatorStats {
        let mut stats = AllocatorStats::new(self.properties.types.len());
        for pool in &self.pools {
            let pool = lock(pool);
            for (_, entry) in pool.blocks() {
                let ranges = entry.ranges.stats();
                let block = MemoryStats {
                    committed_bytes: entry.size,
                    used_bytes: ranges.used_bytes,
                    free_bytes: ranges.free_bytes,
                    allocation_count: ranges.allocation_count as u64,
                    block_count: 1,
                    free_range_count: ranges.free_range_count as u64,
                    largest_free_range: ranges.largest_free_range,
                    empty_block_count: u64::from(ranges.allocation_count == 0),
                };
                stats.add(pool.memory_type, pool.class, &block);
            }
        }
        for entry in lock(&self.dedicated).slots.iter().flatten() {
            let used = entry.used > 0;
            let free = entry.size - entry.used;
            let block = MemoryStats {
                committed_bytes: entry.size,
                used_bytes: entry.used,
                free_bytes: free,
                allocation_count: u64::from(used),
                block_count: 1,
                free_range_count: u64::from(free > 0),
                largest_free_range: free,
                empty_block_count: u64::from(!used),
            };
            stats.add(entry.memory_type, entry.class, &block);
        }
        for slot in &self.custom_pools {
            if let Some(pool) = lock(slot).as_ref() {
                for entry in &pool.blocks {
                    let ranges = entry.ranges.stats();
                    let block = MemoryStats {
                        committed_bytes: entry.size,
                        used_bytes: ranges.used_bytes,
                        free_bytes: ranges.free_bytes,
                        allocation_count: ranges.allocation_count as u64,
                        block_count: 1,
                        free_range_count: ranges.free_range_count as u64,
                        largest_free_range: ranges.largest_free_range,
                        empty_block_count: u64::from(ranges.allocation_count == 0),
                    };
                    stats.add(pool.memory_type, pool.class, &block);
                }
            }
        }
        for (memory_type, heap) in self.heaps.iter().enumerate() {
            if let Some(heap) = lock(heap).as_ref() {
                let heap_stats = heap.stats();
                let block = MemoryStats {
                    committed_bytes: heap_stats.committed_bytes,
                    used_bytes: heap_stats.live_bytes,
                    free_bytes: heap_stats.committed_bytes.saturating_sub(heap_stats.live_bytes),
                    allocation_count: heap_stats.allocations,
                    block_count: 1,
                    ..MemoryStats::default()
                };
                stats.add(memory_type as u32, ResourceClass::Unknown, &block);
            }
        }
        stats
    }

    /// Live device blocks, pooled and dedicated.
    pub fn block_count(&self) -> u32 {
        self.live_blocks.load(Ordering::Acquire)
    }

    /// Bytes of device memory held in blocks (pooled and dedicated).
    pub fn committed_bytes(&self) -> u64 {
        let pooled: u64 = self.pools.iter().map(|pool| lock(pool).committed_bytes).sum();
        let dedicated: u64 = lock(&self.dedicated).slots.iter().flatten().map(|entry| entry.size).sum();
        pooled + dedicated + self.virtual_sum(|stats| stats.committed_bytes)
    }

    fn virtual_sum(&self, field: impl Fn(&VirtualHeapStats) -> u64) -> u64 {
        self.heaps.iter().filter_map(|heap| lock(heap).as_ref().map(|heap| field(&heap.stats()))).sum()
    }

    /// Bytes of live allocations (as requested).
    pub fn used_bytes(&self) -> u64 {
        let outside_heaps: u64 =
            self.type_counters.iter().map(|t| t.live_bytes.load(Ordering::Relaxed)).sum();
        outside_heaps + self.virtual_sum(|stats| stats.live_bytes)
    }

    /// Checks every pool's sub-allocators and the block accounting (O(n)); for tests.
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> core::result::Result<(), memcarve_core::Violation> {
        let mut blocks = 0u32;
        for pool in &self.pools {
            let pool = lock(pool);
            let mut empty = 0;
            let mut committed = 0;
            for (_, entry) in pool.blocks() {
                entry.ranges.check()?;
                if entry.ranges.capacity() != entry.size {
                    return Err(memcarve_core::Violation {
                        what: "block size differs from its ranges",
                        offset: 0,
                    });
                }
                empty += usize::from(entry.ranges.is_empty());
                committed += entry.size;
                blocks += 1;
            }
            if empty != pool.empty_blocks || committed != pool.committed_bytes || !pool.order_is_complete() {
                return Err(memcarve_core::Violation {
                    what: "pool counters disagree with its blocks",
                    offset: 0,
                });
            }
        }
        for heap in &self.heaps {
            if let Some(heap) = lock(heap).as_ref() {
                heap.check()?;
            }
        }
        blocks += lock(&self.dedicated).slots.iter().flatten().count() as u32;
        for slot in &self.custom_pools {
            if let Some(pool) = lock(slot).as_ref() {
                for entry in &pool.blocks {
                    match &entry.ranges {
                        Ranges::Tlsf(ranges) => ranges.check()?,
                        Ranges::Stack(stack) => stack.check()?,
                        Ranges::Ring(ring) => ring.check()?,
                    }
                }
                blocks += pool.blocks.len() as u32;
            }
        }
        if blocks != self.block_count() {
            return Err(memcarve_core::Violation {
                what: "live block count disagrees with the pools",
                offset: 0,
            });
        }
        Ok(())
    }
}

impl<D: Device> Drop for Allocator<D> {
    fn drop(&mut self) {
        if self.config.report_leaks_on_drop {
            let report = self.leak_report();
            if !report.is_empty() {
                eprintln!("{report}");
            }
        }
        // Teardown holds `&mut self`, so it reads every slot without locking it: a lock and an unlock for each of
        // the custom pools' 64 slots, the pools and the heaps were most of a drop's time (perf).
        let mut blocks: Vec<(D::Block, Option<Mapping>, u32, u64)> = Vec::new();
        for pool in &mut self.pools {
            let pool = unlocked(pool);
            let memory_type = pool.memory_type;
            blocks.extend(pool.take_all_blocks().into_iter().map(|(b, m, size)| (b, m, memory_type, size)));
        }
        let dedicated = unlocked(&mut self.dedicated).slots.drain(..).flatten();
        blocks.extend(dedicated.map(|e| (e.block, e.mapping, e.memory_type, e.size)));
        for slot in &mut self.custom_pools {
            if let Some(pool) = unlocked(slot).take() {
                let memory_type = pool.memory_type;
                blocks.extend(pool.blocks.into_iter().map(|e| (e.block, e.mapping, memory_type, e.size)));
            }
        }
        for (block, mapping, memory_type, size) in blocks {
            self.destroy_block(block, mapping, memory_type, size);
        }
        if let Some(vm) = self.device.virtual_memory() {
            for heap in &mut self.heaps {
                if let Some(mut heap) = unlocked(heap).take() {
                    heap.destroy(vm);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::{Allocator, AllocatorConfig, callback_depth};
    use crate::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
    use crate::diagnostics::DeviceMemoryCallbacks;
    use crate::policy::{AllocationDesc, MemoryLocation};

    /// Records how deep in callbacks the thread is at each call.
    #[derive(Debug, Default)]
    struct Depths(Mutex<Vec<(&'static str, u32)>>);

    impl DeviceMemoryCallbacks for Depths {
        fn block_created(&self, _memory_type: u32, _size: u64) {
            self.0.lock().unwrap().push(("created", callback_depth()));
        }
        fn block_destroyed(&self, _memory_type: u32, _size: u64) {
            self.0.lock().unwrap().push(("destroyed", callback_depth()));
        }
    }

    #[test]
    fn callbacks_run_one_level_deeper_and_the_depth_comes_back() {
        let depths = Arc::new(Depths::default());
        let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated));
        let config =
            AllocatorConfig::default().with_callbacks(Arc::clone(&depths) as Arc<dyn DeviceMemoryCallbacks>);
        let allocator = Allocator::new(device, config).unwrap();
        let allocation =
            allocator.allocate(&AllocationDesc::new("a", 4096, MemoryLocation::GpuOnly)).unwrap();
        allocator.free(allocation).unwrap();
        allocator.trim_empty_blocks();
        assert_eq!(*depths.0.lock().unwrap(), [("created", 1), ("destroyed", 1)]);
        assert_eq!(callback_depth(), 0);
    }
}
