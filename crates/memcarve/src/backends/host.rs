//! The host backend: a [`Device`] over this process's memory, real (zeroed, mappable) or simulated (books
//! only), with GPU-like profiles, modelled virtual memory and fault injection. Invariant: heap usage = live
//! blocks + committed pages <= heap size; a contract violation never changes it.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::alloc::Layout;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::device::{
    BlockDesc, Device, DeviceError, DeviceLimits, HeapBudget, MemoryHeap, MemoryHeapFlags, MemoryProperties,
    MemoryPropertyFlags, MemoryType, VirtualMemory,
};
use crate::virtual_heap::grow_books;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Alignment of real blocks: one host page, which also satisfies the 64 bytes [`Device::map`] promises.
const REAL_BLOCK_ALIGN: usize = 4096;

/// Heap sizes of the NVIDIA H200 (driver 580, Vulkan 1.4), see `shared/device/h200-vulkan-memory.txt`.
const H200_DEVICE_HEAP: u64 = 150_754_820_096;
const H200_HOST_HEAP: u64 = 101_361_423_360;
/// The H200's `maxMemoryAllocationSize`.
const H200_MAX_ALLOCATION_SIZE: u64 = 0xffe0_0000;

/// Whether the host backend hands out real memory or only keeps the books.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostMode {
    /// Blocks are zeroed host memory that host-visible types can map; virtual memory is `mmap`ed.
    Real,
    /// No memory at all: blocks and commits are bookkeeping only, nothing can be mapped. For replaying traces
    /// larger than the machine and for limit tests with huge sizes.
    Simulated,
}

/// The memory a host device pretends to have: heaps, types and limits of a real GPU, plus the fraction of
/// each heap reported as budget and the commit granularity of virtual memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryProfile {
    /// Short name, as accepted by [`MemoryProfile::by_name`].
    pub name: &'static str,
    /// Heaps, types and limits reported by [`Device::memory_properties`].
    pub properties: MemoryProperties,
    /// Budget of each heap as a fraction of its size, in `[0, 1]`.
    pub budget_fraction: f64,
    /// Commit granularity of virtual memory in bytes; a power of two, else the device has no virtual memory.
    pub virtual_granularity: u64,
}

impl MemoryProfile {
    const BUDGET_FRACTION: f64 = 0.8;
    const VIRTUAL_GRANULARITY: u64 = 2 * MIB;

    fn with_properties(name: &'static str, properties: MemoryProperties) -> MemoryProfile {
        MemoryProfile {
            name,
            properties,
            budget_fraction: Self::BUDGET_FRACTION,
            virtual_granularity: Self::VIRTUAL_GRANULARITY,
        }
    }

    fn h200_heaps() -> Vec<MemoryHeap> {
        vec![
            MemoryHeap { size: H200_DEVICE_HEAP, flags: MemoryHeapFlags::DEVICE_LOCAL },
            MemoryHeap { size: H200_HOST_HEAP, flags: MemoryHeapFlags::empty() },
        ]
    }

    /// A discrete GPU, modelled on an NVIDIA H200: a 140 GiB device-local heap and a 94 GiB host heap, five
    /// memory types including device-local host-visible memory (resizable BAR).
    pub fn discrete() -> MemoryProfile {
        type F = MemoryPropertyFlags;
        let types = vec![
            MemoryType { heap_index: 1, flags: F::empty() },
            MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL },
            MemoryType { heap_index: 1, flags: F::HOST_VISIBLE | F::HOST_COHERENT },
            MemoryType { heap_index: 1, flags: F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED },
            MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT },
        ];
        let limits = DeviceLimits::new(1024, 64, u32::MAX, H200_MAX_ALLOCATION_SIZE);
        Self::with_properties("discrete", MemoryProperties { heaps: Self::h200_heaps(), types, limits })
    }

    /// An integrated GPU with unified memory: one 16 GiB device-local heap, every type host-visible.
    pub fn integrated() -> MemoryProfile {
        type F = MemoryPropertyFlags;
        let heaps = vec![MemoryHeap { size: 16 * GIB, flags: MemoryHeapFlags::DEVICE_LOCAL }];
        let types = vec![
            MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT },
            MemoryType {
                heap_index: 0,
                flags: F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED,
            },
        ];
        let limits = DeviceLimits::new(1, 64, 4096, 4 * GIB);
        Self::with_properties("integrated", MemoryProperties { heaps, types, limits })
    }

    /// Mesa's lavapipe (the CPU Vulkan driver): one 4 GiB heap and a single type with every host flag.
    pub fn lavapipe() -> MemoryProfile {
        type F = MemoryPropertyFlags;
        let heaps = vec![MemoryHeap { size: 4 * GIB, flags: MemoryHeapFlags::DEVICE_LOCAL }];
        let types = vec![MemoryType {
            heap_index: 0,
            flags: F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED,
        }];
        let limits = DeviceLimits::new(64, 64, 4096, 2 * GIB);
        Self::with_properties("lavapipe", MemoryProperties { heaps, types, limits })
    }

    /// The discrete heaps with no coherent memory type at all and a 256-byte atom, so that every host access
    /// needs a flush or an invalidate: exercises the allocator's flush rounding.
    pub fn non_coherent() -> MemoryProfile {
        type F = MemoryPropertyFlags;
        let types = vec![
            MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL },
            MemoryType { heap_index: 1, flags: F::HOST_VISIBLE },
            MemoryType { heap_index: 1, flags: F::HOST_VISIBLE | F::HOST_CACHED },
            MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL | F::HOST_VISIBLE },
        ];
        let limits = DeviceLimits::new(1024, 256, u32::MAX, H200_MAX_ALLOCATION_SIZE);
        Self::with_properties("non_coherent", MemoryProperties { heaps: Self::h200_heaps(), types, limits })
    }

    /// The profile named `name`: `discrete`, `integrated`, `lavapipe` or `non_coherent` (or `non-coherent`).
    pub fn by_name(name: &str) -> Option<MemoryProfile> {
        match name {
            "discrete" => Some(Self::discrete()),
            "integrated" => Some(Self::integrated()),
            "lavapipe" => Some(Self::lavapipe()),
            "non_coherent" | "non-coherent" => Some(Self::non_coherent()),
            _ => None,
        }
    }

    /// Every built-in profile, in the order discrete, integrated, lavapipe, non_coherent.
    pub fn all() -> Vec<MemoryProfile> {
        vec![Self::discrete(), Self::integrated(), Self::lavapipe(), Self::non_coherent()]
    }
}

/// Failures to inject into block creations and commits. Every injected failure is
/// [`DeviceError::OutOfDeviceMemory`], as a driver out of memory would report it.
///
/// Attempts are counted per kind (creations, commits) from the device's creation on; an attempt is a call
/// whose arguments pass validation, whatever its outcome. All settings apply at once: an attempt fails if any
/// of them says so. Injection is decided before the real limits (heap size, block count) are checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultInjection {
    /// Fail the n-th block creation attempt (1-based).
    pub fail_block_creation_at: Option<u64>,
    /// Fail the n-th commit attempt (1-based).
    pub fail_commit_at: Option<u64>,
    /// Fail each creation or commit attempt with a probability, from a seeded deterministic generator.
    pub random_failure: Option<RandomFailure>,
    /// Fail any creation or commit that would take the bytes committed over all heaps above this many.
    pub byte_limit: Option<u64>,
}

/// Random failures: each attempt fails with `probability`; the same seed and the same sequence of attempts
/// give the same failures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomFailure {
    /// Chance that one attempt fails, in `[0, 1]` (values outside are clamped; NaN never fails).
    pub probability: f64,
    /// Seed of the generator.
    pub seed: u64,
}

impl RandomFailure {
    /// Failures with the given probability and seed.
    pub const fn new(probability: f64, seed: u64) -> RandomFailure {
        RandomFailure { probability, seed }
    }
}

/// How to build a [`HostDevice`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HostConfig {
    /// The memory the device reports.
    pub profile: MemoryProfile,
    /// Real or simulated memory.
    pub mode: HostMode,
    /// Failures to inject (none by default).
    pub faults: FaultInjection,
}

impl HostConfig {
    /// A device with `profile` in `mode`, without fault injection.
    pub fn new(profile: MemoryProfile, mode: HostMode) -> HostConfig {
        HostConfig { profile, mode, faults: FaultInjection::default() }
    }

    /// Sets [`HostConfig::faults`].
    pub fn with_faults(mut self, faults: FaultInjection) -> HostConfig {
        self.faults = faults;
        self
    }
}

/// What a [`HostDevice`] has done so far. Event counts only grow; `live_blocks` and `committed_bytes` are
/// current values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HostCounters {
    /// Blocks created successfully.
    pub blocks_created: u64,
    /// Blocks destroyed.
    pub blocks_destroyed: u64,
    /// Blocks alive now.
    pub live_blocks: u64,
    /// Successful maps.
    pub maps: u64,
    /// Unmaps.
    pub unmaps: u64,
    /// Successful flushes.
    pub flushes: u64,
    /// Successful invalidates.
    pub invalidates: u64,
    /// Address ranges reserved.
    pub reservations: u64,
    /// Reservations released.
    pub releases: u64,
    /// Successful `map_pages` calls (each one driver operation, whatever its size).
    pub commits: u64,
    /// `unmap_pages` calls.
    pub decommits: u64,
    /// Address pages mapped by successful `map_pages` calls (a physical page mapped at several addresses counts at
    /// each): what a driver that maps page by page, as CUDA does with a handle per page, is asked to map.
    pub pages_mapped: u64,
    /// Physical pages that `map_pages` brought to life (mapped nowhere before): handles created, on CUDA.
    pub pages_created: u64,
    /// Address pages unmapped by `unmap_pages`.
    pub pages_unmapped: u64,
    /// Physical pages `unmap_pages` left mapped nowhere, freed: handles released, on CUDA.
    pub pages_released: u64,
    /// Block creations and commits failed by [`FaultInjection`].
    pub injected_failures: u64,
    /// Block creation attempts (calls with valid arguments), the count `fail_block_creation_at` refers to.
    pub block_creation_attempts: u64,
    /// `map_pages` attempts (calls with valid arguments), the count `fail_commit_at` refers to.
    pub commit_attempts: u64,
    /// Bytes committed now over all heaps: live blocks plus alive physical pages of reservations.
    pub committed_bytes: u64,
}

/// A [`Device`] over host memory: the default backend and the test double of everything above the device
/// trait. It is also its own [`VirtualMemory`].
///
/// ```
/// use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
/// use memcarve::device::{BlockDesc, Device, DeviceError};
///
/// let device = HostDevice::new(HostConfig::new(MemoryProfile::integrated(), HostMode::Real));
/// // SAFETY: memory type 0 exists, and 4096 bytes is within its limits.
/// let block = unsafe { device.create_block(&BlockDesc::new(0, 4096)) }?;
/// // SAFETY: memory type 0 is host-visible, and the block is not mapped yet.
/// let ptr = unsafe { device.map(&block) }?;
/// // SAFETY: the mapping is valid for writes of the block's 4096 bytes.
/// unsafe { ptr.as_ptr().write_bytes(0xff, 4096) };
/// // SAFETY: the block is mapped and nothing refers into it any more; it is destroyed once.
/// unsafe {
///     device.unmap(&block);
///     device.destroy_block(block);
/// }
/// assert_eq!(device.counters().live_blocks, 0);
/// # Ok::<(), DeviceError>(())
/// ```
#[derive(Debug)]
pub struct HostDevice {
    /// Tells this device's blocks and reservations from another's.
    id: u64,
    profile: MemoryProfile,
    mode: HostMode,
    /// The host's page size in real mode (1 in simulated mode): virtual-memory ranges must honour it.
    os_page_size: u64,
    ledger: Mutex<Ledger>,
}

/// Source of [`HostDevice::id`].
static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

impl HostDevice {
    /// A device as `config` describes it. Never fails: real memory is only requested per block.
    pub fn new(config: HostConfig) -> HostDevice {
        let HostConfig { profile, mode, faults } = config;
        let os_page_size = match mode {
            HostMode::Real => os::page_size(),
            HostMode::Simulated => 1,
        };
        let ledger = Ledger {
            rng: faults.random_failure.map(|random| SplitMix64(random.seed)),
            faults,
            heap_usage: vec![0; profile.properties.heaps.len()],
            counters: HostCounters::default(),
        };
        HostDevice {
            id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
            profile,
            mode,
            os_page_size,
            ledger: Mutex::new(ledger),
        }
    }

    /// What the device has done so far.
    pub fn counters(&self) -> HostCounters {
        self.ledger().counters
    }

    /// The fault-injection settings in force.
    pub fn faults(&self) -> FaultInjection {
        self.ledger().faults.clone()
    }

    /// Replaces the fault-injection settings. Attempt counts keep counting from the device's creation (so
    /// `fail_block_creation_at` refers to the total count, see [`HostCounters::block_creation_attempts`]);
    /// the random generator restarts from the new seed.
    pub fn set_faults(&self, faults: FaultInjection) {
        let mut ledger = self.ledger();
        ledger.rng = faults.random_failure.map(|random| SplitMix64(random.seed));
        ledger.faults = faults;
    }

    /// Real or simulated.
    pub fn mode(&self) -> HostMode {
        self.mode
    }

    /// The memory profile the device reports.
    pub fn profile(&self) -> &MemoryProfile {
        &self.profile
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        lock(&self.ledger)
    }

    /// The memory type `memory_type`, with its heap's index and size, if both exist.
    fn memory_type(&self, memory_type: u32) -> Result<(MemoryType, usize, u64), DeviceError> {
        let properties = &self.profile.properties;
        let ty = *properties
            .types
            .get(memory_type as usize)
            .ok_or(DeviceError::Unsupported("memory type index out of range"))?;
        let heap_index = ty.heap_index as usize;
        let heap = properties
            .heaps
            .get(heap_index)
            .ok_or(DeviceError::Unsupported("memory type refers to a heap that does not exist"))?;
        Ok((ty, heap_index, heap.size))
    }

    /// Checks that `[offset, offset + size)` is a non-empty range inside `reservation`, aligned to its page size.
    fn check_virtual_range(
        &self,
        reservation: &HostReservation,
        offset: u64,
        size: u64,
    ) -> Result<u64, DeviceError> {
        if reservation.device_id != self.id {
            return Err(DeviceError::Other("reservation belongs to another device".into()));
        }
        let page_size = reservation.page_size;
        let end = offset.checked_add(size).filter(|&end| end <= reservation.size);
        match end {
            Some(end) if size > 0 && offset.is_multiple_of(page_size) && size.is_multiple_of(page_size) => {
                Ok(end)
            }
            _ => Err(DeviceError::Other(format!(
                "range {offset:#x}+{size:#x} is empty, not aligned to {page_size:#x} or outside the \
                 reservation of {:#x} bytes",
                reservation.size
            ))),
        }
    }

    /// Checks a flush or invalidate range.
    fn check_cache_range(&self, block: &HostBlock, offset: u64, size: u64) -> Result<(), DeviceError> {
        if block.device_id != self.id {
            return Err(DeviceError::Other("block belongs to another device".into()));
        }
        if !block.mapped.load(Ordering::Acquire) {
            return Err(DeviceError::Other("block is not mapped".into()));
        }
        let Some(end) = offset.checked_add(size).filter(|&end| end <= block.size) else {
            return Err(DeviceError::Other(format!(
                "range {offset:#x}+{size:#x} lies outside the block of {:#x} bytes",
                block.size
            )));
        };
        let coherent = self
            .profile
            .properties
            .types
            .get(block.memory_type as usize)
            .is_some_and(|ty| ty.flags.contains(MemoryPropertyFlags::HOST_COHERENT));
        let atom = self.profile.properties.limits.non_coherent_atom_size.max(1);
        if !coherent && (!offset.is_multiple_of(atom) || (!size.is_multiple_of(atom) && end != block.size)) {
            return Err(DeviceError::Other(format!(
                "range {offset:#x}+{size:#x} of non-coherent memory is not aligned to the atom size {atom:#x}"
            )));
        }
        Ok(())
    }
}

// SAFETY: the promises of `Device`, upheld by this implementation alone:
// 1. `memory_properties` returns the profile's properties, which nothing mutates after `HostDevice::new` (the
//    field is private and only lent out shared); a block of type `t` is charged to `types[t].heap_index`.
// 2. A real block owns a fresh `alloc_zeroed` allocation of `desc.size` bytes, disjoint from every other live
//    allocation by the global allocator's contract, freed only in `destroy_block`, which consumes the block.
//    A simulated block has no memory, but nothing can reach it either: `map` refuses simulated blocks.
// 3. `map` returns that allocation's start: valid for the block's size, aligned to 4096 >= 64 bytes, until
//    `destroy_block`.
// 4. All mutable state sits behind a `Mutex` or in atomics, so every method may run on any thread.
unsafe impl Device for HostDevice {
    type Block = HostBlock;
    type Virtual = HostDevice;

    fn memory_properties(&self) -> &MemoryProperties {
        &self.profile.properties
    }

    fn heap_budgets(&self) -> Vec<HeapBudget> {
        let fraction = self.profile.budget_fraction;
        let fraction = if fraction.is_nan() { 0.0 } else { fraction.clamp(0.0, 1.0) };
        let ledger = self.ledger();
        self.profile
            .properties
            .heaps
            .iter()
            .zip(&ledger.heap_usage)
            .map(|(heap, &usage)| HeapBudget {
                usage,
                // Exact for heaps below 2^53 bytes; `as` saturates, and `min` keeps the promise of at most
                // the heap's size.
                budget: ((heap.size as f64 * fraction).floor() as u64).min(heap.size),
            })
            .collect()
    }

    unsafe fn create_block(&self, desc: &BlockDesc) -> Result<HostBlock, DeviceError> {
        let (_, heap_index, heap_size) = self.memory_type(desc.memory_type)?;
        if desc.size == 0 {
            return Err(DeviceError::Unsupported("block size is zero"));
        }
        if desc.size > self.profile.properties.limits.max_allocation_size {
            return Err(DeviceError::Unsupported("block size exceeds max_allocation_size"));
        }
        if desc.export.is_some() {
            return Err(DeviceError::Unsupported("host memory cannot be exported"));
        }
        let layout = match self.mode {
            HostMode::Real => Some(
                usize::try_from(desc.size)
                    .ok()
                    .and_then(|size| Layout::from_size_align(size, REAL_BLOCK_ALIGN).ok())
                    .ok_or(DeviceError::OutOfHostMemory)?,
            ),
            HostMode::Simulated => None,
        };
        let max_count = self.profile.properties.limits.max_allocation_count;
        self.ledger().admit(Operation::BlockCreation { max_count }, heap_index, heap_size, desc.size)?;
        // Allocate outside the lock: zeroing a large block takes a while.
        let memory = match layout {
            None => None,
            Some(layout) => {
                // SAFETY: `alloc_zeroed` needs a non-zero size; `desc.size > 0` was checked above.
                let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                match NonNull::new(ptr) {
                    Some(ptr) => Some(RealMemory { ptr, layout }),
                    None => {
                        self.ledger().revert(Operation::BlockCreation { max_count }, heap_index, desc.size);
                        return Err(DeviceError::OutOfHostMemory);
                    }
                }
            }
        };
        Ok(HostBlock {
            device_id: self.id,
            memory_type: desc.memory_type,
            heap_index,
            size: desc.size,
            memory,
            mapped: AtomicBool::new(false),
        })
    }

    unsafe fn destroy_block(&self, block: HostBlock) {
        let foreign = block.device_id != self.id;
        let mapped = block.mapped.load(Ordering::Acquire);
        if let Some(memory) = block.memory {
            // SAFETY: `memory` came from `alloc_zeroed` with exactly this layout (in `create_block` of this
            // or another host device; both use the global allocator) and is freed once, since `HostBlock` is
            // not `Clone` and is consumed here. Nothing uses the memory any more: the caller's condition 2.
            unsafe { std::alloc::dealloc(memory.ptr.as_ptr(), memory.layout) };
        }
        if !foreign {
            let mut ledger = self.ledger();
            ledger.discharge(block.heap_index, block.size);
            ledger.counters.live_blocks = ledger.counters.live_blocks.saturating_sub(1);
            ledger.counters.blocks_destroyed += 1;
        }
        // Checked after the books are right, so that a caught violation leaves the device consistent.
        debug_assert!(!foreign, "destroy_block: the block belongs to another device");
        debug_assert!(!mapped, "destroy_block: the block is still mapped");
    }

    unsafe fn map(&self, block: &HostBlock) -> Result<NonNull<u8>, DeviceError> {
        if block.device_id != self.id {
            return Err(DeviceError::Other("block belongs to another device".into()));
        }
        let (ty, _, _) = self.memory_type(block.memory_type)?;
        if !ty.flags.contains(MemoryPropertyFlags::HOST_VISIBLE) {
            return Err(DeviceError::Unsupported("memory type is not host-visible"));
        }
        let Some(memory) = &block.memory else {
            return Err(DeviceError::Unsupported("simulated memory cannot be mapped"));
        };
        if block.mapped.swap(true, Ordering::AcqRel) {
            return Err(DeviceError::Other("block is already mapped".into()));
        }
        self.ledger().counters.maps += 1;
        Ok(memory.ptr)
    }

    unsafe fn unmap(&self, block: &HostBlock) {
        let was_mapped = block.mapped.swap(false, Ordering::AcqRel);
        debug_assert!(was_mapped, "unmap: the block is not mapped");
        if was_mapped {
            self.ledger().counters.unmaps += 1;
        }
    }

    unsafe fn flush(&self, block: &HostBlock, offset: u64, size: u64) -> Result<(), DeviceError> {
        // Host memory has no caches to maintain; only the contract is checked.
        self.check_cache_range(block, offset, size)?;
        self.ledger().counters.flushes += 1;
        Ok(())
    }

    unsafe fn invalidate(&self, block: &HostBlock, offset: u64, size: u64) -> Result<(), DeviceError> {
        self.check_cache_range(block, offset, size)?;
        self.ledger().counters.invalidates += 1;
        Ok(())
    }

    fn virtual_memory(&self) -> Option<&HostDevice> {
        Some(self)
    }
}

// SAFETY: mapped pages are real: in real mode each mapped range is a shared mapping of the reservation's own
// memory file, at the bytes of the physical pages it was mapped onto, until `unmap_pages` or `release`, which only
// the caller triggers; distinct physical pages are distinct bytes of that file. Simulated reservations have no
// host address, so nothing can touch their (absent) pages. Reservations are distinct `mmap`s (the kernel never
// hands out overlapping mappings) or, simulated, have no addresses at all.
unsafe impl VirtualMemory for HostDevice {
    type Reservation = HostReservation;

    fn granularity(&self, memory_type: u32) -> Option<u64> {
        let granularity = self.profile.virtual_granularity;
        if memory_type as usize >= self.profile.properties.types.len() || !granularity.is_power_of_two() {
            return None;
        }
        // Real pages can only be mapped whole.
        Some(granularity.max(self.os_page_size))
    }

    unsafe fn reserve(
        &self,
        memory_type: u32,
        size: u64,
        page_size: u64,
    ) -> Result<HostReservation, DeviceError> {
        let (_, heap_index, _) = self.memory_type(memory_type)?;
        let Some(granularity) = self.granularity(memory_type) else {
            return Err(DeviceError::Unsupported("this profile has no virtual memory"));
        };
        if !page_size.is_power_of_two() || page_size < granularity {
            return Err(DeviceError::Other(format!(
                "page size {page_size:#x} is not a power of two of at least the granularity {granularity:#x}"
            )));
        }
        if size == 0 || !size.is_multiple_of(page_size) {
            return Err(DeviceError::Other(format!(
                "reservation size {size:#x} is not a non-zero multiple of {page_size:#x}"
            )));
        }
        let pages = usize::try_from(size / page_size)
            .ok()
            .filter(|&pages| u32::try_from(pages).is_ok())
            .ok_or(DeviceError::Unsupported("reservation has too many pages"))?;
        let mapping = match self.mode {
            HostMode::Real => Some(os::reserve(size)?),
            HostMode::Simulated => None,
        };
        self.ledger().counters.reservations += 1;
        Ok(HostReservation {
            device_id: self.id,
            memory_type,
            heap_index,
            size,
            page_size,
            mapping,
            pages: Mutex::new(PageTable::new(pages)),
        })
    }

    unsafe fn release(&self, reservation: HostReservation) {
        let foreign = reservation.device_id != self.id;
        let leftover = lock(&reservation.pages).alive * reservation.page_size;
        if let Some(mapping) = &reservation.mapping {
            // SAFETY: `mapping` is the reservation's own `mmap` and file, released once: `HostReservation` is
            // not `Clone` and is consumed here. That nothing uses its pages is the caller's condition 1.
            unsafe { os::release(mapping) };
        }
        if !foreign {
            let mut ledger = self.ledger();
            // Releasing freed any pages still mapped; keep the usage figures true.
            ledger.discharge(reservation.heap_index, leftover);
            ledger.counters.releases += 1;
        }
        debug_assert!(!foreign, "release: the reservation belongs to another device");
        debug_assert!(leftover == 0, "release: {leftover:#x} bytes are still mapped");
    }

    unsafe fn map_pages(
        &self,
        reservation: &HostReservation,
        offset: u64,
        pages: &[u32],
    ) -> Result<(), DeviceError> {
        let page_size = reservation.page_size;
        let size = (pages.len() as u64).saturating_mul(page_size);
        let end = self.check_virtual_range(reservation, offset, size)?;
        let (_, _, heap_size) = self.memory_type(reservation.memory_type)?;
        let (first, last) = ((offset / page_size) as usize, (end / page_size) as usize);
        // Held throughout, so that no other map or unmap of this reservation interleaves.
        let mut table = lock(&reservation.pages);
        table.cover(last);
        // By value: the maximum of `u32`s is found a vector at a time, that of references one by one.
        if let Some(highest) = pages.iter().copied().max() {
            if highest as usize >= table.pages {
                return Err(DeviceError::Other(format!("physical page {highest} is out of range")));
            }
            table.cover_ids(highest as usize + 1);
        }
        // The books first, in one pass (which also finds an address page already mapped and an id named twice);
        // undone if anything after fails.
        let born = table.link(first, pages).map_err(|refused| {
            DeviceError::Other(match refused {
                Refused::Mapped(page) => format!("page {page} is already mapped"),
                Refused::Twice(id) => format!("physical page {id} is named twice"),
            })
        })?;
        let new = born * page_size;
        if let Err(error) = self.ledger().admit(Operation::Commit, reservation.heap_index, heap_size, new) {
            table.unlink(first, pages);
            return Err(error);
        }
        if let Some(mapping) = &reservation.mapping {
            // One shared mapping per run of consecutive ids.
            let mut start = 0;
            while start < pages.len() {
                let mut end = start + 1;
                while end < pages.len() && pages[end] == pages[end - 1].wrapping_add(1) {
                    end += 1;
                }
                let run_offset = offset + start as u64 * page_size;
                let run_size = (end - start) as u64 * page_size;
                // SAFETY: the run lies inside the reservation's mapping, is aligned to the page size (a
                // multiple of the host page size), and was unmapped (checked above, under the lock); the file
                // bytes are those of its physical pages, inside the file (ids below the page count).
                let mapped =
                    unsafe { os::map(mapping, run_offset, run_size, u64::from(pages[start]) * page_size) };
                if let Err(error) = mapped {
                    // Undo the books and the runs mapped so far; pages created by them were never used.
                    table.unlink(first, pages);
                    // SAFETY: `[offset, run_offset)` was mapped just above and nothing has used it yet.
                    let _ = unsafe { os::unmap(mapping, offset, run_offset - offset) };
                    for &id in &pages[..start] {
                        if table.mappings[id as usize] == 0 {
                            // SAFETY: the page was created by this call and is mapped nowhere now.
                            let _ = unsafe { os::free(mapping, u64::from(id) * page_size, page_size) };
                        }
                    }
                    self.ledger().revert(Operation::Commit, reservation.heap_index, new);
                    return Err(error);
                }
                start = end;
            }
        }
        let counters = &mut self.ledger().counters;
        counters.pages_mapped += pages.len() as u64;
        counters.pages_created += born;
        Ok(())
    }

    unsafe fn unmap_pages(&self, reservation: &HostReservation, offset: u64, size: u64) {
        let end = match self.check_virtual_range(reservation, offset, size) {
            Ok(end) => end,
            Err(error) => {
                debug_assert!(false, "unmap_pages: {error}");
                return;
            }
        };
        let page_size = reservation.page_size;
        let (first, last) = ((offset / page_size) as usize, (end / page_size) as usize);
        let mut table = lock(&reservation.pages);
        table.cover(last);
        if table.mapped[first..last].contains(&0) {
            drop(table);
            debug_assert!(false, "unmap_pages: range {offset:#x}+{size:#x} is not wholly mapped");
            return;
        }
        if let Some(mapping) = &reservation.mapping {
            // SAFETY: the range lies inside the reservation's mapping, is aligned to the page size (a multiple of
            // the host page size) and mapped; that nothing uses it is the caller's condition 1.
            let result = unsafe { os::unmap(mapping, offset, size) };
            // The pages are inaccessible either way; the books follow the caller's intent.
            debug_assert!(result.is_ok(), "unmap_pages: {result:?}");
        }
        let mut freed = 0;
        for page in first..last {
            let id = table.mapped[page] - 1;
            table.mapped[page] = 0;
            table.mappings[id as usize] -= 1;
            if table.mappings[id as usize] == 0 {
                freed += 1;
                if let Some(mapping) = &reservation.mapping {
                    // SAFETY: the physical page's last mapping is gone: no address maps its bytes.
                    let result = unsafe { os::free(mapping, u64::from(id) * page_size, page_size) };
                    debug_assert!(result.is_ok(), "unmap_pages: {result:?}");
                }
            }
        }
        table.alive -= freed;
        drop(table);
        let mut ledger = self.ledger();
        ledger.discharge(reservation.heap_index, freed * page_size);
        ledger.counters.decommits += 1;
        ledger.counters.pages_unmapped += (last - first) as u64;
        ledger.counters.pages_released += freed;
    }

    fn host_address(&self, reservation: &HostReservation) -> Option<NonNull<u8>> {
        reservation.mapping.as_ref().map(|mapping| mapping.base)
    }
}

/// One block of a [`HostDevice`]: real zeroed host memory or, simulated, a size without memory.
///
/// Return it with [`Device::destroy_block`]; a block merely dropped leaks its memory and its share of the
/// heap.
#[derive(Debug)]
pub struct HostBlock {
    device_id: u64,
    memory_type: u32,
    heap_index: usize,
    size: u64,
    memory: Option<RealMemory>,
    mapped: AtomicBool,
}

impl HostBlock {
    /// Bytes in the block.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The memory type it was created from.
    pub fn memory_type(&self) -> u32 {
        self.memory_type
    }

    /// Whether it is simulated (has no memory).
    pub fn is_simulated(&self) -> bool {
        self.memory.is_none()
    }
}

/// A real block's allocation.
#[derive(Debug)]
struct RealMemory {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: `RealMemory` uniquely owns a global-allocator allocation, which any thread may free; it has no
// thread-affine state. Access to the memory through the pointer goes through `Device::map`, whose callers
// are bound by the device contract (promise 4 allows use from any thread).
unsafe impl Send for RealMemory {}
// SAFETY: shared references only copy the pointer out (`map`); see `Send`.
unsafe impl Sync for RealMemory {}

/// An address range reserved by a [`HostDevice`], with the record of its committed pages.
///
/// Return it with [`VirtualMemory::release`]; one merely dropped leaks its address space and committed bytes.
#[derive(Debug)]
pub struct HostReservation {
    device_id: u64,
    memory_type: u32,
    heap_index: usize,
    size: u64,
    /// Page size (a power-of-two multiple of the device's granularity).
    page_size: u64,
    /// The `mmap` and memory file behind it in real mode.
    mapping: Option<os::Mapping>,
    pages: Mutex<PageTable>,
}

impl HostReservation {
    /// Bytes of address space reserved.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The memory type it was reserved for.
    pub fn memory_type(&self) -> u32 {
        self.memory_type
    }

    /// Bytes committed in it now.
    pub fn committed_bytes(&self) -> u64 {
        lock(&self.pages).alive * self.page_size
    }
}

/// Why [`PageTable::link`] refused a mapping.
#[derive(Debug, Clone, Copy)]
enum Refused {
    /// This address page is mapped already.
    Mapped(usize),
    /// This physical page is named twice.
    Twice(u32),
}

/// The pages of one reservation: which physical page each address page shows, and at how many addresses each
/// physical page is mapped (a physical page is alive while that is above zero).
#[derive(Debug)]
struct PageTable {
    /// Address pages in the reservation (and the bound on physical page ids).
    pages: usize,
    /// Per address page: the physical page mapped there, plus one (0: unmapped); grown on demand.
    mapped: Vec<u32>,
    /// Per physical page: how many address pages it is mapped at; grown on demand.
    mappings: Vec<u32>,
    /// Physical pages alive.
    alive: u64,
    /// Per physical page: the stamp of the last `map_pages` call that named it, to find ids named twice.
    seen: Vec<u32>,
    stamp: u32,
}

impl PageTable {
    /// Pages the table's vectors cover at least once they are used (1 KiB each): a small heap's first
    /// mappings do not grow them one after another.
    const FIRST_PAGES: usize = 256;

    fn new(pages: usize) -> PageTable {
        PageTable { pages, mapped: Vec::new(), mappings: Vec::new(), alive: 0, seen: Vec::new(), stamp: 0 }
    }

    /// Grows `mapped` to cover address pages below `end` (at most the reservation's).
    fn cover(&mut self, end: usize) {
        if end > self.mapped.len() {
            grow_books(&mut self.mapped, end.max(Self::FIRST_PAGES).min(self.pages), 0);
        }
    }

    /// Grows `mappings` (and `seen`) to cover ids below `end`.
    fn cover_ids(&mut self, end: usize) {
        if end > self.mappings.len() {
            let len = end.max(Self::FIRST_PAGES).min(self.pages);
            grow_books(&mut self.mappings, len, 0);
            grow_books(&mut self.seen, len, 0);
        }
    }

    /// Maps address pages from `first` on to `pages` in the books (both covered): each address page shows its
    /// physical page, each physical page counts a mapping more, and `alive` the pages mapped nowhere before,
    /// whose count it returns. One pass, which also finds an address page already mapped and (with a fresh stamp)
    /// an id named twice: then nothing is changed, and the first found is the error. Checking the address pages
    /// here rather than in a pass of their own made a short replay 4 to 5 % faster (docs/BENCHMARKS.md).
    fn link(&mut self, first: usize, pages: &[u32]) -> Result<u64, Refused> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.fill(0);
            self.stamp = 1;
        }
        // The count is kept in a local: a store to the table's per page chained the pages.
        let mut born = 0;
        for (index, (slot, &id)) in self.mapped[first..].iter_mut().zip(pages).enumerate() {
            let refused = if *slot != 0 {
                Some(Refused::Mapped(first + index))
            } else {
                let seen = core::mem::replace(&mut self.seen[id as usize], self.stamp);
                (seen == self.stamp).then_some(Refused::Twice(id))
            };
            if let Some(refused) = refused {
                self.alive += born;
                self.unlink(first, &pages[..index]);
                return Err(refused);
            }
            *slot = id + 1;
            let mappings = &mut self.mappings[id as usize];
            born += u64::from(*mappings == 0);
            *mappings += 1;
        }
        self.alive += born;
        Ok(born)
    }

    /// Undoes [`PageTable::link`] of `pages` from `first` on.
    fn unlink(&mut self, first: usize, pages: &[u32]) {
        for (slot, &id) in self.mapped[first..].iter_mut().zip(pages) {
            *slot = 0;
            let mappings = &mut self.mappings[id as usize];
            *mappings -= 1;
            self.alive -= u64::from(*mappings == 0);
        }
    }
}

/// The mutable state of a device: fault settings, heap usage and counters.
#[derive(Debug)]
struct Ledger {
    faults: FaultInjection,
    /// Present exactly when `faults.random_failure` is.
    rng: Option<SplitMix64>,
    heap_usage: Vec<u64>,
    counters: HostCounters,
}

/// Operations that commit memory and are subject to fault injection.
#[derive(Debug, Clone, Copy)]
enum Operation {
    BlockCreation { max_count: u32 },
    Commit,
}

impl Ledger {
    /// Counts one attempt, applies fault injection and the device's limits, and on success charges `size`
    /// bytes to `heap_index` and counts the operation.
    fn admit(
        &mut self,
        operation: Operation,
        heap_index: usize,
        heap_size: u64,
        size: u64,
    ) -> Result<(), DeviceError> {
        let counters = &mut self.counters;
        let (attempt, fail_at) = match operation {
            Operation::BlockCreation { .. } => {
                counters.block_creation_attempts += 1;
                (counters.block_creation_attempts, self.faults.fail_block_creation_at)
            }
            Operation::Commit => {
                counters.commit_attempts += 1;
                (counters.commit_attempts, self.faults.fail_commit_at)
            }
        };
        let mut injected = fail_at == Some(attempt);
        // Drawn on every attempt, so that the sequence depends only on the number of attempts.
        if let (Some(rng), Some(random)) = (&mut self.rng, self.faults.random_failure) {
            injected |= rng.next_unit() < random.probability;
        }
        if let Some(limit) = self.faults.byte_limit {
            injected |= counters.committed_bytes.checked_add(size).is_none_or(|total| total > limit);
        }
        if injected {
            counters.injected_failures += 1;
            return Err(DeviceError::OutOfDeviceMemory);
        }
        if let Operation::BlockCreation { max_count } = operation
            && counters.live_blocks >= u64::from(max_count)
        {
            return Err(DeviceError::TooManyObjects);
        }
        let Some(usage) = self.heap_usage.get_mut(heap_index) else {
            return Err(DeviceError::Unsupported("memory type refers to a heap that does not exist"));
        };
        let Some(new_usage) = usage.checked_add(size).filter(|&new_usage| new_usage <= heap_size) else {
            return Err(DeviceError::OutOfDeviceMemory);
        };
        *usage = new_usage;
        counters.committed_bytes += size;
        match operation {
            Operation::BlockCreation { .. } => {
                counters.live_blocks += 1;
                counters.blocks_created += 1;
            }
            Operation::Commit => counters.commits += 1,
        }
        Ok(())
    }

    /// Undoes a successful [`Ledger::admit`] whose operation then failed (the attempt stays counted).
    fn revert(&mut self, operation: Operation, heap_index: usize, size: u64) {
        self.discharge(heap_index, size);
        let counters = &mut self.counters;
        match operation {
            Operation::BlockCreation { .. } => {
                counters.live_blocks = counters.live_blocks.saturating_sub(1);
                counters.blocks_created = counters.blocks_created.saturating_sub(1);
            }
            Operation::Commit => counters.commits = counters.commits.saturating_sub(1),
        }
    }

    /// Returns `size` bytes to `heap_index`.
    fn discharge(&mut self, heap_index: usize, size: u64) {
        if let Some(usage) = self.heap_usage.get_mut(heap_index) {
            *usage = usage.saturating_sub(size);
        }
        self.counters.committed_bytes = self.counters.committed_bytes.saturating_sub(size);
    }
}

/// SplitMix64: a tiny, good-enough deterministic generator for fault injection (and the crate's randomized unit
/// tests).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Locks `mutex`, ignoring poison: no code panics between two updates that belong together while holding
/// one of these locks (violations are asserted after the books are right), so the data stays consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The operating system's side of real virtual memory.
#[cfg(unix)]
mod os {
    use core::ptr::NonNull;

    use crate::device::DeviceError;

    /// An anonymous `PROT_NONE` mapping owned by one reservation, and the memory file its physical pages live
    /// in: physical page `id` is the file's bytes at `id × page size`, mapped shared wherever it is mapped.
    #[derive(Debug)]
    pub(super) struct Mapping {
        pub(super) base: NonNull<u8>,
        len: usize,
        file: libc::c_int,
    }

    // SAFETY: a `Mapping` is an address range and a file owned by one reservation, which any thread may map,
    // unmap or release; the pages behind it are used only by callers bound by the `VirtualMemory` contract.
    unsafe impl Send for Mapping {}
    // SAFETY: shared references only read `base`, `len` and `file`; see `Send`.
    unsafe impl Sync for Mapping {}

    #[cfg(any(target_os = "linux", target_os = "android"))]
    const MAP_NORESERVE: libc::c_int = libc::MAP_NORESERVE;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const MAP_NORESERVE: libc::c_int = 0;

    /// The host's page size.
    pub(super) fn page_size() -> u64 {
        // SAFETY: `sysconf` has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(size).ok().filter(|size| size.is_power_of_two()).unwrap_or(4096)
    }

    fn os_error(call: &str) -> DeviceError {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::ENOMEM) {
            DeviceError::OutOfHostMemory
        } else {
            DeviceError::Other(format!("{call} failed: {error}"))
        }
    }

    fn range(mapping: &Mapping, offset: u64, size: u64) -> Result<(*mut libc::c_void, usize), DeviceError> {
        let offset = usize::try_from(offset).ok().filter(|&offset| offset <= mapping.len);
        let size = usize::try_from(size).ok();
        match (offset, size) {
            (Some(offset), Some(size)) if size <= mapping.len - offset => {
                Ok((mapping.base.as_ptr().wrapping_add(offset).cast(), size))
            }
            _ => Err(DeviceError::Other("range outside the mapping".into())),
        }
    }

    /// A memory file of `size` bytes (sparse: no memory until pages are written).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn memory_file(size: u64) -> Result<libc::c_int, DeviceError> {
        let size = libc::off_t::try_from(size).map_err(|_| DeviceError::OutOfHostMemory)?;
        // SAFETY: the name is a NUL-terminated string; the call creates a new file descriptor or fails.
        let file = unsafe { libc::memfd_create(c"memcarve-pages".as_ptr(), libc::MFD_CLOEXEC) };
        if file < 0 {
            return Err(os_error("memfd_create"));
        }
        // SAFETY: `file` is the descriptor just created, owned here.
        if unsafe { libc::ftruncate(file, size) } != 0 {
            let error = os_error("ftruncate");
            // SAFETY: as above; closed once, on this error path.
            unsafe { libc::close(file) };
            return Err(error);
        }
        Ok(file)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn memory_file(_size: u64) -> Result<libc::c_int, DeviceError> {
        Err(DeviceError::Unsupported("real virtual memory needs memfd_create (Linux)"))
    }

    /// Reserves `size` bytes of address space, inaccessible, with a memory file of the same size for its
    /// physical pages.
    pub(super) fn reserve(size: u64) -> Result<Mapping, DeviceError> {
        let len = usize::try_from(size).map_err(|_| DeviceError::OutOfHostMemory)?;
        let file = memory_file(size)?;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | MAP_NORESERVE;
        // SAFETY: a new anonymous mapping at an address of the kernel's choosing (null hint, no MAP_FIXED)
        // cannot alias or disturb any existing memory.
        let address = unsafe { libc::mmap(core::ptr::null_mut(), len, libc::PROT_NONE, flags, -1, 0) };
        if address == libc::MAP_FAILED {
            let error = os_error("mmap");
            // SAFETY: `file` was created above and is closed once, on this error path.
            unsafe { libc::close(file) };
            return Err(error);
        }
        match NonNull::new(address.cast::<u8>()) {
            Some(base) => Ok(Mapping { base, len, file }),
            None => {
                // SAFETY: the kernel just mapped `len` bytes at address 0 for us alone, and created `file` for
                // us; nothing refers to either.
                unsafe {
                    libc::munmap(address, len);
                    libc::close(file);
                }
                Err(DeviceError::Other("mmap returned address 0".into()))
            }
        }
    }

    /// Maps `[offset, offset + size)` of `mapping` readable and writable onto the memory file's bytes from
    /// `file_offset` on, shared: every range mapped onto the same bytes shows the same memory.
    ///
    /// # Safety
    ///
    /// 1. The range and `file_offset` are page-aligned, and nothing uses the range's addresses (they are
    ///    unmapped in the heap's books).
    pub(super) unsafe fn map(
        mapping: &Mapping,
        offset: u64,
        size: u64,
        file_offset: u64,
    ) -> Result<(), DeviceError> {
        let (address, len) = range(mapping, offset, size)?;
        let file_offset = libc::off_t::try_from(file_offset).map_err(|_| DeviceError::OutOfHostMemory)?;
        let flags = libc::MAP_SHARED | libc::MAP_FIXED;
        // SAFETY: the range lies inside `mapping` (checked by `range`), which this reservation owns, so
        // MAP_FIXED replaces only its own inaccessible pages, which nothing uses (the caller's condition 1).
        let mapped = unsafe {
            libc::mmap(address, len, libc::PROT_READ | libc::PROT_WRITE, flags, mapping.file, file_offset)
        };
        if mapped == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        Ok(())
    }

    /// Makes `[offset, offset + size)` of `mapping` inaccessible and backed by nothing again.
    ///
    /// # Safety
    ///
    /// 1. The range is page-aligned and nothing uses its memory through these addresses any more.
    pub(super) unsafe fn unmap(mapping: &Mapping, offset: u64, size: u64) -> Result<(), DeviceError> {
        let (address, len) = range(mapping, offset, size)?;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | MAP_NORESERVE;
        // SAFETY: the range lies inside `mapping` (checked by `range`); replacing it with an inaccessible
        // anonymous mapping harms nobody, since nothing uses it (the caller's condition 1).
        let mapped = unsafe { libc::mmap(address, len, libc::PROT_NONE, flags, -1, 0) };
        if mapped == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        Ok(())
    }

    /// Gives the memory file's bytes `[file_offset, file_offset + size)` back to the system: they read as zero
    /// when next mapped.
    ///
    /// # Safety
    ///
    /// 1. No address maps these bytes any more.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) unsafe fn free(mapping: &Mapping, file_offset: u64, size: u64) -> Result<(), DeviceError> {
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(file_offset), libc::off_t::try_from(size)) else {
            return Err(DeviceError::Other("range outside the memory file".into()));
        };
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: `mapping.file` is the reservation's own memory file; punching a hole only drops bytes that no
        // address maps (the caller's condition 1).
        if unsafe { libc::fallocate(mapping.file, mode, offset, len) } != 0 {
            return Err(os_error("fallocate"));
        }
        Ok(())
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) unsafe fn free(_mapping: &Mapping, _file_offset: u64, _size: u64) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("real virtual memory needs Linux"))
    }

    /// Unmaps `mapping` and closes its memory file.
    ///
    /// # Safety
    ///
    /// 1. Nothing uses the mapping's memory any more, and it is not released again.
    pub(super) unsafe fn release(mapping: &Mapping) {
        // SAFETY: `mapping` is exactly a mapping `reserve` created, with its file; the caller's condition 1
        // covers its users and a second release.
        let result = unsafe { libc::munmap(mapping.base.as_ptr().cast(), mapping.len) };
        debug_assert!(result == 0, "munmap failed: {}", std::io::Error::last_os_error());
        // SAFETY: as above: the file is closed once, with its mapping.
        unsafe { libc::close(mapping.file) };
    }
}

/// Real virtual memory needs `mmap`; elsewhere only simulated mode has it.
#[cfg(not(unix))]
mod os {
    use core::ptr::NonNull;

    use crate::device::DeviceError;

    /// Never created: `reserve` always fails.
    #[derive(Debug)]
    pub(super) struct Mapping {
        pub(super) base: NonNull<u8>,
        _never: core::convert::Infallible,
    }

    // SAFETY: `Mapping` has no values.
    unsafe impl Send for Mapping {}
    // SAFETY: `Mapping` has no values.
    unsafe impl Sync for Mapping {}

    pub(super) fn page_size() -> u64 {
        4096
    }

    pub(super) fn reserve(_size: u64) -> Result<Mapping, DeviceError> {
        Err(DeviceError::Unsupported("real virtual memory needs a unix host"))
    }

    /// # Safety
    ///
    /// None: unreachable, `Mapping` has no values.
    pub(super) unsafe fn map(
        mapping: &Mapping,
        _offset: u64,
        _size: u64,
        _file: u64,
    ) -> Result<(), DeviceError> {
        match mapping._never {}
    }

    /// # Safety
    ///
    /// None: unreachable, `Mapping` has no values.
    pub(super) unsafe fn unmap(mapping: &Mapping, _offset: u64, _size: u64) -> Result<(), DeviceError> {
        match mapping._never {}
    }

    /// # Safety
    ///
    /// None: unreachable, `Mapping` has no values.
    pub(super) unsafe fn free(mapping: &Mapping, _file_offset: u64, _size: u64) -> Result<(), DeviceError> {
        match mapping._never {}
    }

    /// # Safety
    ///
    /// None: unreachable, `Mapping` has no values.
    pub(super) unsafe fn release(mapping: &Mapping) {
        match mapping._never {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::ExportKind;

    type F = MemoryPropertyFlags;

    /// A plain commit and decommit in terms of pages: each address page mapped onto the physical page of its
    /// own index.
    trait Commit {
        unsafe fn commit(
            &self,
            reservation: &HostReservation,
            offset: u64,
            size: u64,
        ) -> Result<(), DeviceError>;
        unsafe fn decommit(&self, reservation: &HostReservation, offset: u64, size: u64);
    }

    impl Commit for HostDevice {
        unsafe fn commit(
            &self,
            reservation: &HostReservation,
            offset: u64,
            size: u64,
        ) -> Result<(), DeviceError> {
            let first = offset / reservation.page_size;
            let ids: Vec<u32> = (0..size / reservation.page_size).map(|i| (first + i) as u32).collect();
            // SAFETY: the caller's; the host device validates every argument itself.
            unsafe { self.map_pages(reservation, offset, &ids) }
        }

        unsafe fn decommit(&self, reservation: &HostReservation, offset: u64, size: u64) {
            // SAFETY: the caller's.
            unsafe { self.unmap_pages(reservation, offset, size) }
        }
    }

    fn device(profile: MemoryProfile, mode: HostMode) -> HostDevice {
        HostDevice::new(HostConfig::new(profile, mode))
    }

    fn faulty(profile: MemoryProfile, mode: HostMode, faults: FaultInjection) -> HostDevice {
        HostDevice::new(HostConfig::new(profile, mode).with_faults(faults))
    }

    fn create(device: &HostDevice, memory_type: u32, size: u64) -> Result<HostBlock, DeviceError> {
        // SAFETY: not needed for soundness: the host device validates every argument itself.
        unsafe { device.create_block(&BlockDesc::new(memory_type, size)) }
    }

    fn destroy(device: &HostDevice, block: HostBlock) {
        // SAFETY: the tests pass blocks of `device`, unmapped, once.
        unsafe { device.destroy_block(block) }
    }

    fn usage(device: &HostDevice) -> Vec<u64> {
        device.heap_budgets().iter().map(|budget| budget.usage).collect()
    }

    const G2: u64 = 2 * MIB;

    #[test]
    fn discrete_profile_matches_the_h200() {
        let profile = MemoryProfile::discrete();
        let properties = &profile.properties;
        assert_eq!(profile.name, "discrete");
        assert_eq!(
            properties.heaps,
            vec![
                MemoryHeap { size: 150_754_820_096, flags: MemoryHeapFlags::DEVICE_LOCAL },
                MemoryHeap { size: 101_361_423_360, flags: MemoryHeapFlags::empty() },
            ]
        );
        let types: Vec<(u32, u32)> =
            properties.types.iter().map(|ty| (ty.heap_index, ty.flags.bits())).collect();
        assert_eq!(types, vec![(1, 0x0), (0, 0x1), (1, 0x6), (1, 0xe), (0, 0x7)]);
        assert_eq!(properties.limits, DeviceLimits::new(1024, 64, 4_294_967_295, 0xffe0_0000));
        assert_eq!(profile.budget_fraction, 0.8);
        assert_eq!(profile.virtual_granularity, G2);
    }

    #[test]
    fn integrated_profile_numbers() {
        let profile = MemoryProfile::integrated();
        let properties = &profile.properties;
        assert_eq!(
            properties.heaps,
            vec![MemoryHeap { size: 16 * GIB, flags: MemoryHeapFlags::DEVICE_LOCAL }]
        );
        let local = F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT;
        assert_eq!(
            properties.types,
            vec![
                MemoryType { heap_index: 0, flags: local },
                MemoryType { heap_index: 0, flags: local | F::HOST_CACHED },
            ]
        );
        assert_eq!(properties.limits, DeviceLimits::new(1, 64, 4096, 4 * GIB));
        assert_eq!((profile.budget_fraction, profile.virtual_granularity), (0.8, G2));
    }

    #[test]
    fn lavapipe_profile_numbers() {
        let profile = MemoryProfile::lavapipe();
        let properties = &profile.properties;
        assert_eq!(
            properties.heaps,
            vec![MemoryHeap { size: 4 * GIB, flags: MemoryHeapFlags::DEVICE_LOCAL }]
        );
        assert_eq!(
            properties.types,
            vec![MemoryType {
                heap_index: 0,
                flags: F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED
            }]
        );
        assert_eq!(properties.limits, DeviceLimits::new(64, 64, 4096, 2 * GIB));
        assert_eq!((profile.budget_fraction, profile.virtual_granularity), (0.8, G2));
    }

    #[test]
    fn non_coherent_profile_numbers() {
        let profile = MemoryProfile::non_coherent();
        let properties = &profile.properties;
        assert_eq!(properties.heaps, MemoryProfile::discrete().properties.heaps);
        assert_eq!(
            properties.types,
            vec![
                MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL },
                MemoryType { heap_index: 1, flags: F::HOST_VISIBLE },
                MemoryType { heap_index: 1, flags: F::HOST_VISIBLE | F::HOST_CACHED },
                MemoryType { heap_index: 0, flags: F::DEVICE_LOCAL | F::HOST_VISIBLE },
            ]
        );
        assert!(properties.types.iter().all(|ty| !ty.flags.contains(F::HOST_COHERENT)));
        assert_eq!(properties.limits, DeviceLimits::new(1024, 256, u32::MAX, 0xffe0_0000));
        assert_eq!((profile.budget_fraction, profile.virtual_granularity), (0.8, G2));
    }

    #[test]
    fn profiles_by_name_and_all() {
        let all = MemoryProfile::all();
        let names: Vec<&str> = all.iter().map(|profile| profile.name).collect();
        assert_eq!(names, ["discrete", "integrated", "lavapipe", "non_coherent"]);
        for profile in &all {
            assert_eq!(MemoryProfile::by_name(profile.name).as_ref(), Some(profile));
            assert!(profile.properties.types.len() <= 32);
            for ty in &profile.properties.types {
                assert!((ty.heap_index as usize) < profile.properties.heaps.len());
            }
        }
        assert_eq!(MemoryProfile::by_name("non-coherent"), Some(MemoryProfile::non_coherent()));
        assert_eq!(MemoryProfile::by_name("h100"), None);
    }

    #[test]
    fn budgets_are_a_fraction_of_each_heap() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        let budgets = device.heap_budgets();
        assert_eq!(
            budgets,
            vec![
                HeapBudget { usage: 0, budget: 120_603_856_076 },
                HeapBudget { usage: 0, budget: 81_089_138_688 },
            ]
        );
    }

    #[test]
    fn real_blocks_are_zeroed_and_writable_through_map() {
        let device = device(MemoryProfile::discrete(), HostMode::Real);
        let size = 64 * 1024;
        let block = create(&device, 2, size).unwrap();
        assert!(!block.is_simulated());
        assert_eq!((block.size(), block.memory_type()), (size, 2));
        // SAFETY: type 2 is host-visible and the block is not mapped.
        let ptr = unsafe { device.map(&block) }.unwrap();
        assert_eq!(ptr.as_ptr() as usize % 64, 0);
        // SAFETY: `map` promises `size` readable and writable bytes until unmap.
        let bytes = unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), size as usize) };
        assert!(bytes.iter().all(|&byte| byte == 0));
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = index as u8;
        }
        assert!(bytes.iter().enumerate().all(|(index, &byte)| byte == index as u8));
        // SAFETY: the block is mapped and `bytes` is not used after this.
        unsafe { device.unmap(&block) };
        let counters = device.counters();
        assert_eq!((counters.maps, counters.unmaps), (1, 1));
        destroy(&device, block);
    }

    #[test]
    fn simulated_blocks_cannot_be_mapped() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        let block = create(&device, 2, 4096).unwrap();
        assert!(block.is_simulated());
        // SAFETY: the device refuses; nothing is mapped.
        let result = unsafe { device.map(&block) };
        assert_eq!(result, Err(DeviceError::Unsupported("simulated memory cannot be mapped")));
        assert_eq!(device.counters().maps, 0);
        destroy(&device, block);
    }

    #[test]
    fn device_only_memory_cannot_be_mapped() {
        let device = device(MemoryProfile::discrete(), HostMode::Real);
        let block = create(&device, 1, 4096).unwrap();
        // SAFETY: the device refuses; nothing is mapped.
        let result = unsafe { device.map(&block) };
        assert_eq!(result, Err(DeviceError::Unsupported("memory type is not host-visible")));
        destroy(&device, block);
    }

    #[test]
    fn mapping_twice_is_an_error() {
        let device = device(MemoryProfile::lavapipe(), HostMode::Real);
        let block = create(&device, 0, 4096).unwrap();
        // SAFETY: host-visible, not mapped.
        unsafe { device.map(&block) }.unwrap();
        // SAFETY: the device refuses the second map.
        assert!(matches!(unsafe { device.map(&block) }, Err(DeviceError::Other(_))));
        // SAFETY: mapped once, no references into it.
        unsafe { device.unmap(&block) };
        destroy(&device, block);
    }

    #[test]
    fn flush_and_invalidate_check_the_range() {
        let device = device(MemoryProfile::discrete(), HostMode::Real);
        let block = create(&device, 3, 4096).unwrap();
        // SAFETY: the device checks the ranges; nothing is written.
        unsafe {
            assert!(matches!(device.flush(&block, 0, 64), Err(DeviceError::Other(_))), "not mapped yet");
            device.map(&block).unwrap();
            device.flush(&block, 0, 4096).unwrap();
            device.flush(&block, 100, 3).unwrap(); // coherent memory: no atom rule
            device.invalidate(&block, 4032, 64).unwrap();
            assert!(device.flush(&block, 4032, 65).is_err());
            assert!(device.invalidate(&block, 4097, 0).is_err());
            assert!(device.flush(&block, u64::MAX, 2).is_err());
            device.unmap(&block);
        }
        let counters = device.counters();
        assert_eq!((counters.flushes, counters.invalidates), (2, 1));
        destroy(&device, block);
    }

    #[test]
    fn non_coherent_flushes_follow_the_atom_size() {
        let device = device(MemoryProfile::non_coherent(), HostMode::Real);
        let block = create(&device, 1, 1000).unwrap();
        // SAFETY: the device checks the ranges; nothing is written.
        unsafe {
            device.map(&block).unwrap();
            device.flush(&block, 256, 512).unwrap();
            device.flush(&block, 768, 232).unwrap(); // reaches the end of the block
            device.invalidate(&block, 0, 1000).unwrap();
            assert!(device.flush(&block, 64, 256).is_err());
            assert!(device.invalidate(&block, 0, 100).is_err());
            device.unmap(&block);
        }
        destroy(&device, block);
    }

    #[test]
    fn budgets_follow_block_creation_and_destruction() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        let a = create(&device, 1, GIB).unwrap();
        let b = create(&device, 4, 3 * GIB).unwrap();
        let c = create(&device, 0, 5 * MIB).unwrap();
        assert_eq!(usage(&device), vec![4 * GIB, 5 * MIB]);
        let counters = device.counters();
        assert_eq!((counters.blocks_created, counters.live_blocks), (3, 3));
        assert_eq!(counters.committed_bytes, 4 * GIB + 5 * MIB);
        destroy(&device, b);
        assert_eq!(usage(&device), vec![GIB, 5 * MIB]);
        destroy(&device, a);
        destroy(&device, c);
        assert_eq!(usage(&device), vec![0, 0]);
        let counters = device.counters();
        assert_eq!((counters.blocks_destroyed, counters.live_blocks, counters.committed_bytes), (3, 0, 0));
    }

    #[test]
    fn invalid_descriptions_are_unsupported() {
        let device = device(MemoryProfile::lavapipe(), HostMode::Real);
        for (memory_type, size) in [(1, 4096), (u32::MAX, 4096), (0, 0), (0, 2 * GIB + 1), (0, u64::MAX)] {
            assert!(matches!(create(&device, memory_type, size), Err(DeviceError::Unsupported(_))));
        }
        let counters = device.counters();
        assert_eq!(
            (counters.block_creation_attempts, counters.live_blocks, counters.committed_bytes),
            (0, 0, 0)
        );
    }

    #[test]
    fn export_is_refused() {
        let device = device(MemoryProfile::discrete(), HostMode::Real);
        let desc = BlockDesc::new(1, 4096).with_export(Some(ExportKind::OpaqueFd));
        // SAFETY: a valid description; the device refuses it.
        let result = unsafe { device.create_block(&desc) };
        assert_eq!(result.err(), Some(DeviceError::Unsupported("host memory cannot be exported")));
        assert_eq!(device.counters().live_blocks, 0);
    }

    #[test]
    fn max_allocation_count_is_enforced() {
        let device = device(MemoryProfile::integrated(), HostMode::Simulated);
        let mut blocks: Vec<HostBlock> = (0..4096).map(|_| create(&device, 0, 256).unwrap()).collect();
        assert_eq!(create(&device, 1, 256).err(), Some(DeviceError::TooManyObjects));
        assert_eq!(device.counters().live_blocks, 4096);
        destroy(&device, blocks.pop().unwrap());
        blocks.push(create(&device, 1, 256).unwrap());
        for block in blocks {
            destroy(&device, block);
        }
        assert_eq!(usage(&device), vec![0]);
    }

    #[test]
    fn heap_size_is_enforced() {
        let device = device(MemoryProfile::lavapipe(), HostMode::Simulated);
        let a = create(&device, 0, 2 * GIB).unwrap();
        let b = create(&device, 0, 2 * GIB - 4096).unwrap();
        assert_eq!(create(&device, 0, 8192).err(), Some(DeviceError::OutOfDeviceMemory));
        let c = create(&device, 0, 4096).unwrap();
        assert_eq!(usage(&device), vec![4 * GIB]);
        assert_eq!(device.counters().injected_failures, 0);
        for block in [a, b, c] {
            destroy(&device, block);
        }
    }

    #[test]
    fn fault_fails_the_nth_block_creation() {
        let faults = FaultInjection { fail_block_creation_at: Some(3), ..FaultInjection::default() };
        let device = faulty(MemoryProfile::discrete(), HostMode::Simulated, faults);
        let results: Vec<_> = (0..5).map(|_| create(&device, 1, MIB)).collect();
        let failed: Vec<bool> = results.iter().map(Result::is_err).collect();
        assert_eq!(failed, [false, false, true, false, false]);
        assert_eq!(results[2].as_ref().err(), Some(&DeviceError::OutOfDeviceMemory));
        let counters = device.counters();
        assert_eq!(
            (counters.injected_failures, counters.live_blocks, counters.block_creation_attempts),
            (1, 4, 5)
        );
        assert_eq!(usage(&device), vec![4 * MIB, 0]);
        for block in results.into_iter().flatten() {
            destroy(&device, block);
        }
    }

    #[test]
    fn fault_fails_the_nth_commit() {
        let faults = FaultInjection { fail_commit_at: Some(2), ..FaultInjection::default() };
        let device = faulty(MemoryProfile::discrete(), HostMode::Simulated, faults);
        // SAFETY: the host device validates every argument itself.
        unsafe {
            let reservation = device.reserve(1, 8 * G2, G2).unwrap();
            device.commit(&reservation, 0, G2).unwrap();
            assert_eq!(device.commit(&reservation, G2, G2), Err(DeviceError::OutOfDeviceMemory));
            device.commit(&reservation, G2, G2).unwrap();
            assert_eq!(reservation.committed_bytes(), 2 * G2);
            let counters = device.counters();
            assert_eq!((counters.commits, counters.commit_attempts, counters.injected_failures), (2, 3, 1));
            device.decommit(&reservation, 0, 2 * G2);
            device.release(reservation);
        }
        assert_eq!(usage(&device), vec![0, 0]);
    }

    /// Which of `attempts` block creations fail on a fresh device with `faults`.
    fn failure_pattern(faults: FaultInjection, attempts: usize) -> Vec<bool> {
        let device = faulty(MemoryProfile::discrete(), HostMode::Simulated, faults);
        let results: Vec<_> = (0..attempts).map(|_| create(&device, 1, 4096)).collect();
        let pattern = results.iter().map(Result::is_err).collect();
        for block in results.into_iter().flatten() {
            destroy(&device, block);
        }
        pattern
    }

    #[test]
    fn random_faults_are_deterministic_per_seed() {
        let faults = |seed| FaultInjection {
            random_failure: Some(RandomFailure::new(0.3, seed)),
            ..FaultInjection::default()
        };
        let first = failure_pattern(faults(7), 400);
        assert_eq!(first, failure_pattern(faults(7), 400));
        assert_ne!(first, failure_pattern(faults(8), 400));
        let failures = first.iter().filter(|&&failed| failed).count();
        assert!((80..=160).contains(&failures), "{failures} of 400 failed at p = 0.3");
        let never =
            FaultInjection { random_failure: Some(RandomFailure::new(0.0, 1)), ..FaultInjection::default() };
        assert!(failure_pattern(never, 100).iter().all(|&failed| !failed));
        let always =
            FaultInjection { random_failure: Some(RandomFailure::new(1.0, 1)), ..FaultInjection::default() };
        assert!(failure_pattern(always, 100).iter().all(|&failed| failed));
    }

    #[test]
    fn byte_limit_counts_blocks_and_commits_over_all_heaps() {
        let faults = FaultInjection { byte_limit: Some(10 * MIB), ..FaultInjection::default() };
        let device = faulty(MemoryProfile::discrete(), HostMode::Simulated, faults);
        let a = create(&device, 1, 4 * MIB).unwrap();
        let b = create(&device, 0, 4 * MIB).unwrap();
        assert_eq!(create(&device, 1, 4 * MIB).err(), Some(DeviceError::OutOfDeviceMemory));
        // SAFETY: the host device validates every argument itself.
        unsafe {
            let reservation = device.reserve(1, 4 * G2, G2).unwrap();
            device.commit(&reservation, 0, G2).unwrap();
            assert_eq!(device.commit(&reservation, G2, G2), Err(DeviceError::OutOfDeviceMemory));
            assert_eq!(device.counters().committed_bytes, 10 * MIB);
            device.decommit(&reservation, 0, G2);
            device.release(reservation);
        }
        assert_eq!(device.counters().injected_failures, 2);
        let c = create(&device, 1, 2 * MIB).unwrap();
        for block in [a, b, c] {
            destroy(&device, block);
        }
    }

    #[test]
    fn set_faults_applies_at_runtime() {
        let device = device(MemoryProfile::integrated(), HostMode::Simulated);
        let a = create(&device, 0, MIB).unwrap();
        device.set_faults(FaultInjection { byte_limit: Some(MIB), ..FaultInjection::default() });
        assert_eq!(create(&device, 0, 1).err(), Some(DeviceError::OutOfDeviceMemory));
        // Attempt counts keep counting: two attempts so far, so the fourth is the next-but-one.
        device.set_faults(FaultInjection { fail_block_creation_at: Some(4), ..FaultInjection::default() });
        assert_eq!(device.faults().fail_block_creation_at, Some(4));
        let b = create(&device, 0, MIB).unwrap();
        assert_eq!(create(&device, 0, MIB).err(), Some(DeviceError::OutOfDeviceMemory));
        device.set_faults(FaultInjection::default());
        let c = create(&device, 0, MIB).unwrap();
        let counters = device.counters();
        assert_eq!((counters.block_creation_attempts, counters.injected_failures), (5, 2));
        for block in [a, b, c] {
            destroy(&device, block);
        }
    }

    #[test]
    fn set_faults_restarts_the_random_sequence() {
        let random =
            FaultInjection { random_failure: Some(RandomFailure::new(0.5, 42)), ..FaultInjection::default() };
        let expected = failure_pattern(random.clone(), 64);
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        let warm_up = create(&device, 1, 4096).unwrap();
        device.set_faults(random);
        let results: Vec<_> = (0..64).map(|_| create(&device, 1, 4096)).collect();
        assert_eq!(results.iter().map(Result::is_err).collect::<Vec<_>>(), expected);
        for block in results.into_iter().flatten().chain([warm_up]) {
            destroy(&device, block);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot mmap with PROT_NONE")]
    fn a_reservation_maps_pages_of_its_own_size() {
        let device = device(MemoryProfile::discrete(), HostMode::Real);
        let vm = device.virtual_memory().unwrap();
        let page = 4 * G2;
        // SAFETY: the host device validates every argument itself; only mapped pages are touched.
        unsafe {
            for bad in [G2 / 2, 3 * G2, 0] {
                assert!(
                    matches!(vm.reserve(4, 4 * page, bad), Err(DeviceError::Other(_))),
                    "page size {bad}"
                );
            }
            assert!(matches!(vm.reserve(4, 4 * page + G2, page), Err(DeviceError::Other(_))));
            let reservation = vm.reserve(4, 4 * page, page).unwrap();
            // A range aligned to the granularity but not to the reservation's pages is refused.
            assert!(matches!(vm.map_pages(&reservation, G2, &[0]), Err(DeviceError::Other(_))));
            // Pages 0 and 2 show physical page 0, page 3 physical page 1: two pages of 8 MiB committed.
            vm.map_pages(&reservation, 0, &[0]).unwrap();
            vm.map_pages(&reservation, 2 * page, &[0, 1]).unwrap();
            assert_eq!((usage(&device), reservation.committed_bytes()), (vec![2 * page, 0], 2 * page));
            let base = vm.host_address(&reservation).unwrap().as_ptr();
            let len = page as usize;
            let first = core::slice::from_raw_parts_mut(base, len);
            let alias = core::slice::from_raw_parts(base.add(2 * len), len);
            let fourth = core::slice::from_raw_parts_mut(base.add(3 * len), len);
            first[len - 1] = 7;
            fourth[len - 1] = 9;
            assert_eq!((alias[len - 1], first[len - 1], fourth[len - 1]), (7, 7, 9));
            vm.unmap_pages(&reservation, 0, page);
            assert_eq!(usage(&device), vec![2 * page, 0], "physical page 0 still shows at page 2");
            vm.unmap_pages(&reservation, 2 * page, 2 * page);
            vm.release(reservation);
        }
        assert_eq!(usage(&device), vec![0, 0]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot mmap with PROT_NONE")]
    fn real_commit_makes_pages_writable() {
        let device = device(MemoryProfile::discrete(), HostMode::Real);
        let vm = device.virtual_memory().unwrap();
        let granularity = vm.granularity(4).unwrap();
        assert_eq!(granularity, G2);
        // SAFETY: ranges are aligned and inside the reservation; only committed pages are touched.
        unsafe {
            let reservation = vm.reserve(4, 4 * granularity, granularity).unwrap();
            let base = vm.host_address(&reservation).unwrap();
            vm.commit(&reservation, granularity, 2 * granularity).unwrap();
            let len = (2 * granularity) as usize;
            let pages = core::slice::from_raw_parts_mut(base.as_ptr().add(granularity as usize), len);
            assert!(pages.iter().all(|&byte| byte == 0));
            for (index, byte) in pages.iter_mut().enumerate() {
                *byte = (index % 251) as u8;
            }
            assert!(pages.iter().enumerate().all(|(index, &byte)| byte == (index % 251) as u8));
            assert_eq!(usage(&device), vec![2 * granularity, 0]);
            vm.decommit(&reservation, granularity, 2 * granularity);
            vm.release(reservation);
        }
        assert_eq!(usage(&device), vec![0, 0]);
        let counters = device.counters();
        assert_eq!(
            (counters.reservations, counters.releases, counters.commits, counters.decommits),
            (1, 1, 1, 1)
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot mmap with PROT_NONE")]
    fn real_decommit_and_recommit() {
        let device = device(MemoryProfile::integrated(), HostMode::Real);
        // SAFETY: ranges are aligned and inside the reservation; only committed pages are touched.
        unsafe {
            let reservation = device.reserve(0, 2 * G2, G2).unwrap();
            let base = device.host_address(&reservation).unwrap().as_ptr();
            device.commit(&reservation, 0, 2 * G2).unwrap();
            base.write_bytes(0xab, (2 * G2) as usize);
            // Decommit the first page only: the second keeps its contents.
            device.decommit(&reservation, 0, G2);
            assert_eq!(reservation.committed_bytes(), G2);
            assert_eq!(*base.add(G2 as usize + 17), 0xab);
            device.commit(&reservation, 0, G2).unwrap();
            #[cfg(target_os = "linux")]
            assert_eq!(*base.add(17), 0, "a physical page freed and created again reads as zero");
            *base.add(17) = 5;
            assert_eq!(*base.add(17), 5);
            assert_eq!(usage(&device), vec![2 * G2]);
            device.decommit(&reservation, 0, 2 * G2);
            device.release(reservation);
        }
        assert_eq!(usage(&device), vec![0]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot mmap with PROT_NONE")]
    fn committing_a_committed_page_is_an_error() {
        for mode in [HostMode::Real, HostMode::Simulated] {
            let device = device(MemoryProfile::lavapipe(), mode);
            // SAFETY: ranges are aligned and inside the reservation; nothing is touched.
            unsafe {
                let reservation = device.reserve(0, 8 * G2, G2).unwrap();
                device.commit(&reservation, 2 * G2, 2 * G2).unwrap();
                for (offset, size) in [(2 * G2, 2 * G2), (3 * G2, G2), (G2, 2 * G2), (0, 8 * G2)] {
                    assert!(matches!(device.commit(&reservation, offset, size), Err(DeviceError::Other(_))));
                }
                device.commit(&reservation, 0, 2 * G2).unwrap(); // adjacent below
                device.commit(&reservation, 4 * G2, G2).unwrap(); // adjacent above
                assert_eq!(reservation.committed_bytes(), 5 * G2);
                assert_eq!(usage(&device), vec![5 * G2]);
                assert_eq!(device.counters().commits, 3);
                device.decommit(&reservation, 0, 5 * G2);
                device.release(reservation);
            }
            assert_eq!(usage(&device), vec![0]);
        }
    }

    #[test]
    fn misaligned_or_outside_ranges_are_errors() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        // SAFETY: the host device validates every argument itself.
        unsafe {
            assert!(device.reserve(1, G2 + 1, G2).is_err());
            assert!(device.reserve(1, 0, G2).is_err());
            assert!(device.reserve(9, G2, G2).is_err());
            let reservation = device.reserve(1, 4 * G2, G2).unwrap();
            for (offset, size) in
                [(1, G2), (0, G2 - 1), (0, 0), (4 * G2, G2), (3 * G2, 2 * G2), (u64::MAX, G2)]
            {
                assert!(matches!(device.commit(&reservation, offset, size), Err(DeviceError::Other(_))));
            }
            device.release(reservation);
        }
        let counters = device.counters();
        assert_eq!((counters.commit_attempts, counters.committed_bytes), (0, 0));
    }

    #[test]
    #[cfg_attr(debug_assertions, should_panic(expected = "not wholly mapped"))]
    fn decommitting_an_uncommitted_page_is_caught() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        // SAFETY: the host device validates every argument itself.
        let reservation = unsafe { device.reserve(1, 4 * G2, G2) }.unwrap();
        // SAFETY: as above.
        unsafe { device.commit(&reservation, 0, G2) }.unwrap();
        // SAFETY: violates the contract on purpose: the device asserts in debug builds and ignores it
        // otherwise.
        unsafe { device.decommit(&reservation, 0, 2 * G2) };
        assert_eq!(usage(&device), vec![G2, 0]);
        assert_eq!(reservation.committed_bytes(), G2);
        assert_eq!(device.counters().decommits, 0);
    }

    #[test]
    fn virtual_usage_counts_with_blocks() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        let block = create(&device, 1, GIB).unwrap();
        // SAFETY: the host device validates every argument itself.
        unsafe {
            let local = device.reserve(1, 64 * G2, G2).unwrap();
            let host = device.reserve(2, 64 * G2, G2).unwrap();
            device.commit(&local, 0, 3 * G2).unwrap();
            device.commit(&host, 10 * G2, 5 * G2).unwrap();
            assert_eq!(usage(&device), vec![GIB + 3 * G2, 5 * G2]);
            assert_eq!(device.counters().committed_bytes, GIB + 8 * G2);
            device.decommit(&host, 11 * G2, 2 * G2); // splits the run in two
            device.decommit(&host, 10 * G2, G2);
            device.decommit(&host, 13 * G2, 2 * G2);
            assert_eq!(usage(&device), vec![GIB + 3 * G2, 0]);
            device.decommit(&local, 0, 3 * G2);
            device.release(local);
            device.release(host);
        }
        destroy(&device, block);
        assert_eq!(usage(&device), vec![0, 0]);
        assert_eq!(device.counters().committed_bytes, 0);
    }

    #[test]
    fn virtual_commits_respect_the_heap_size() {
        let device = device(MemoryProfile::lavapipe(), HostMode::Simulated);
        let block = create(&device, 0, 2 * GIB).unwrap();
        // SAFETY: the host device validates every argument itself.
        unsafe {
            let reservation = device.reserve(0, 4 * GIB, G2).unwrap();
            device.commit(&reservation, 0, 2 * GIB - G2).unwrap();
            assert_eq!(device.commit(&reservation, 2 * GIB, 2 * G2), Err(DeviceError::OutOfDeviceMemory));
            device.commit(&reservation, 2 * GIB, G2).unwrap();
            assert_eq!(usage(&device), vec![4 * GIB]);
            assert_eq!(device.counters().injected_failures, 0);
            device.decommit(&reservation, 0, 2 * GIB - G2);
            device.decommit(&reservation, 2 * GIB, G2);
            device.release(reservation);
        }
        destroy(&device, block);
    }

    #[test]
    fn simulated_virtual_memory_keeps_books_only() {
        let device = device(MemoryProfile::discrete(), HostMode::Simulated);
        let vm = device.virtual_memory().unwrap();
        assert_eq!(vm.granularity(0), Some(G2));
        assert_eq!(vm.granularity(5), None);
        // SAFETY: the host device validates every argument itself.
        unsafe {
            // Larger than any heap and than this machine: only address bookkeeping.
            let reservation = vm.reserve(1, 1 << 44, G2).unwrap();
            assert_eq!(vm.host_address(&reservation), None);
            assert_eq!(reservation.size(), 1 << 44);
            vm.commit(&reservation, 0, 100 * GIB).unwrap();
            assert_eq!(usage(&device), vec![100 * GIB, 0]);
            vm.decommit(&reservation, 0, 100 * GIB);
            vm.release(reservation);
        }
        let counters = device.counters();
        assert_eq!(
            (counters.reservations, counters.commits, counters.decommits, counters.releases),
            (1, 1, 1, 1)
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot mmap with PROT_NONE")]
    fn physical_pages_show_at_each_of_their_addresses_and_live_while_mapped() {
        for mode in [HostMode::Real, HostMode::Simulated] {
            let device = device(MemoryProfile::integrated(), mode);
            // SAFETY: ranges are aligned and inside the reservation; only mapped pages are touched.
            unsafe {
                let reservation = device.reserve(0, 8 * G2, G2).unwrap();
                device.map_pages(&reservation, 0, &[5, 6]).unwrap();
                device.map_pages(&reservation, 4 * G2, &[6]).unwrap(); // page 6 at a second address
                assert_eq!((reservation.committed_bytes(), usage(&device)), (2 * G2, vec![2 * G2]));
                if let Some(base) = device.host_address(&reservation) {
                    let base = base.as_ptr();
                    assert_eq!(*base.add(G2 as usize + 9), 0, "new pages read as zero");
                    *base.add(G2 as usize + 9) = 0x5a;
                    assert_eq!(*base.add(4 * G2 as usize + 9), 0x5a, "the same memory at both addresses");
                }
                // Unmapping one address keeps the page alive for the other.
                device.unmap_pages(&reservation, G2, G2);
                assert_eq!(reservation.committed_bytes(), 2 * G2);
                if let Some(base) = device.host_address(&reservation) {
                    assert_eq!(*base.as_ptr().add(4 * G2 as usize + 9), 0x5a);
                }
                // Its last mapping gone, it is freed, and comes back zeroed.
                device.unmap_pages(&reservation, 4 * G2, G2);
                assert_eq!((reservation.committed_bytes(), usage(&device)), (G2, vec![G2]));
                device.map_pages(&reservation, 2 * G2, &[6]).unwrap();
                if let Some(base) = device.host_address(&reservation) {
                    assert_eq!(*base.as_ptr().add(2 * G2 as usize + 9), 0);
                }
                // Ids out of range or named twice are errors and change nothing (a repeat found after other
                // pages were booked undoes them): the pages stay unmapped, and the ids free.
                for pages in [&[1, 1][..], &[2, 3, 2], &[8], &[u32::MAX]] {
                    assert!(matches!(
                        device.map_pages(&reservation, 6 * G2, pages),
                        Err(DeviceError::Other(_))
                    ));
                }
                assert_eq!(reservation.committed_bytes(), 2 * G2);
                // So is an address page already mapped (page 2): page 1, booked before it was found, is undone
                // and can be mapped after.
                let refused = device.map_pages(&reservation, G2, &[7, 4]);
                assert!(
                    matches!(&refused, Err(DeviceError::Other(message)) if message.contains("page 2 is already mapped")),
                    "{refused:?}"
                );
                assert_eq!(reservation.committed_bytes(), 2 * G2);
                device.map_pages(&reservation, G2, &[7]).unwrap();
                device.unmap_pages(&reservation, G2, G2);
                device.map_pages(&reservation, 6 * G2, &[2, 3]).unwrap();
                assert_eq!((reservation.committed_bytes(), usage(&device)), (4 * G2, vec![4 * G2]));
                device.unmap_pages(&reservation, 6 * G2, 2 * G2);
                device.unmap_pages(&reservation, 0, G2);
                device.unmap_pages(&reservation, 2 * G2, G2);
                device.release(reservation);
            }
            assert_eq!(usage(&device), vec![0]);
            let counters = device.counters();
            assert_eq!((counters.commits, counters.decommits, counters.committed_bytes), (5, 6, 0));
            // Pages mapped 2 + 1 + 1 + 1 + 2, created 2 + 0 + 1 (page 6 again, after it was freed) + 1 + 2;
            // unmapped 1 + 1 + 1 + 2 + 1 + 1, released 0 + 1 + 1 + 2 + 1 + 1; the refused maps count nothing.
            let pages = (
                counters.pages_mapped,
                counters.pages_created,
                counters.pages_unmapped,
                counters.pages_released,
            );
            assert_eq!(pages, (7, 6, 7, 6));
        }
    }

    #[test]
    fn device_and_handles_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<HostDevice>();
        assert_send_sync::<HostBlock>();
        assert_send_sync::<HostReservation>();
    }

    #[test]
    fn concurrent_creation_keeps_the_books() {
        let device = device(MemoryProfile::integrated(), HostMode::Real);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for round in 0..200 {
                        let block = create(&device, round % 2, 4096).unwrap();
                        destroy(&device, block);
                    }
                });
            }
        });
        let counters = device.counters();
        assert_eq!((counters.blocks_created, counters.blocks_destroyed, counters.live_blocks), (800, 800, 0));
        assert_eq!(usage(&device), vec![0]);
    }
}
