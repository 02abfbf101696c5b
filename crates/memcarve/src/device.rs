//! The device boundary: what a backend (host, Vulkan, CUDA, and one day Metal or D3D12) must provide, and
//! nothing more. The allocator above it only ever asks for whole memory blocks, maps them, flushes ranges
//! and reads budgets; sub-allocation happens above this line. All `unsafe` of memcarve lives behind it.
//!
//! An implementation reports its memory as heaps (pools of physical memory, each with a size) and memory
//! types (ways to allocate from a heap, each with property flags), as Vulkan does; the numbers of a CUDA
//! device, a Metal heap or a D3D12 heap type map onto the same shape.

use core::fmt;
use core::ptr::NonNull;

bitflags::bitflags! {
    /// Properties of a memory type. Bit values match Vulkan's `VkMemoryPropertyFlagBits`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct MemoryPropertyFlags: u32 {
        /// Fastest for the device; on discrete GPUs, video memory.
        const DEVICE_LOCAL = 0x1;
        /// Can be mapped for host access.
        const HOST_VISIBLE = 0x2;
        /// Host writes and device writes are visible to each other without flush or invalidate.
        const HOST_COHERENT = 0x4;
        /// Host reads are cached (fast readback); usually not coherent on its own.
        const HOST_CACHED = 0x8;
        /// Backed lazily by the device (transient attachments on tilers).
        const LAZILY_ALLOCATED = 0x10;
        /// Only protected queues may access it.
        const PROTECTED = 0x20;
    }
}

bitflags::bitflags! {
    /// Properties of a memory heap. Bit values match Vulkan's `VkMemoryHeapFlagBits`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct MemoryHeapFlags: u32 {
        /// The heap is device-local memory.
        const DEVICE_LOCAL = 0x1;
        /// Replicated across the physical devices of a device group.
        const MULTI_INSTANCE = 0x2;
    }
}

/// One heap: a pool of physical memory that memory types draw from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryHeap {
    /// Bytes in the heap.
    pub size: u64,
    /// What kind of heap it is.
    pub flags: MemoryHeapFlags,
}

/// One memory type: a way of allocating from a heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryType {
    /// The heap it allocates from.
    pub heap_index: u32,
    /// Its properties.
    pub flags: MemoryPropertyFlags,
}

/// Device limits the allocator must honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceLimits {
    /// Vulkan's `bufferImageGranularity`: linear and non-linear resources must not share a page this large.
    pub buffer_image_granularity: u64,
    /// Flush and invalidate ranges on non-coherent memory are multiples of this.
    pub non_coherent_atom_size: u64,
    /// Live memory blocks the device allows at once.
    pub max_allocation_count: u32,
    /// Largest single block the device can create.
    pub max_allocation_size: u64,
}

impl DeviceLimits {
    /// Limits with the given values.
    pub const fn new(
        buffer_image_granularity: u64,
        non_coherent_atom_size: u64,
        max_allocation_count: u32,
        max_allocation_size: u64,
    ) -> DeviceLimits {
        DeviceLimits {
            buffer_image_granularity,
            non_coherent_atom_size,
            max_allocation_count,
            max_allocation_size,
        }
    }
}

/// Everything a device reports about its memory. Fixed for the device's lifetime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryProperties {
    /// Heaps, indexed by [`MemoryType::heap_index`].
    pub heaps: Vec<MemoryHeap>,
    /// Memory types, indexed by the memory-type index used everywhere else (at most 32).
    pub types: Vec<MemoryType>,
    /// Limits.
    pub limits: DeviceLimits,
}

/// Current usage and budget of one heap, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeapBudget {
    /// Bytes this process has allocated from the heap.
    pub usage: u64,
    /// Bytes this process may use without risking eviction or failure (at most the heap size).
    pub budget: u64,
}

/// Ways of exporting a block to another API or process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportKind {
    /// A POSIX file descriptor (Vulkan `OPAQUE_FD`, importable by CUDA).
    OpaqueFd,
}

/// A request for one memory block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockDesc {
    /// Memory type index.
    pub memory_type: u32,
    /// Bytes.
    pub size: u64,
    /// The block will back exactly one resource (a hint some drivers use for placement).
    pub dedicated: bool,
    /// Make the block exportable this way.
    pub export: Option<ExportKind>,
}

impl BlockDesc {
    /// A plain, non-dedicated, non-exported block.
    pub const fn new(memory_type: u32, size: u64) -> BlockDesc {
        BlockDesc { memory_type, size, dedicated: false, export: None }
    }

    /// Sets [`BlockDesc::dedicated`].
    pub const fn with_dedicated(mut self, dedicated: bool) -> BlockDesc {
        self.dedicated = dedicated;
        self
    }

    /// Sets [`BlockDesc::export`].
    pub const fn with_export(mut self, export: Option<ExportKind>) -> BlockDesc {
        self.export = export;
        self
    }
}

/// Why a device refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// Device memory is exhausted (or a simulated limit was reached).
    #[error("out of device memory")]
    OutOfDeviceMemory,
    /// Host memory is exhausted.
    #[error("out of host memory")]
    OutOfHostMemory,
    /// The device allows no more live blocks.
    #[error("too many memory blocks")]
    TooManyObjects,
    /// The operation is not supported by this device or memory type (mapping device-only or simulated memory,
    /// virtual memory on a device without it, an export kind it lacks).
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// Any other backend error, with the backend's own description.
    #[error("device error: {0}")]
    Other(String),
}

/// A device that can hand out memory blocks.
///
/// # Safety
///
/// Implementors promise, for the whole lifetime of the device value:
/// 1. [`Device::memory_properties`] never changes, and every block created for memory type `t` lives in heap
///    `types[t].heap_index`.
/// 2. A block returned by [`Device::create_block`] is at least `desc.size` bytes of memory that no other live
///    block overlaps, and stays valid until it is passed to [`Device::destroy_block`].
/// 3. [`Device::map`] returns a pointer valid for reads and writes of the block's whole size, aligned to at
///    least 64 bytes, until the matching [`Device::unmap`] or the block's destruction.
/// 4. Every method may be called from any thread (`Send + Sync`); a block may be used from a thread other than
///    the one that created it.
pub unsafe trait Device: Send + Sync {
    /// The backend's handle for one block (`VkDeviceMemory`, a CUDA allocation, a host allocation).
    type Block: Send + Sync;
    /// The device's virtual-memory capability, or [`NoVirtualMemory`].
    type Virtual: VirtualMemory;

    /// Heaps, memory types and limits.
    fn memory_properties(&self) -> &MemoryProperties;

    /// Usage and budget of every heap, in heap order. Devices without a budget query report their own usage
    /// against an estimate.
    fn heap_budgets(&self) -> Vec<HeapBudget>;

    /// Creates a block.
    ///
    /// # Safety
    ///
    /// 1. `desc.memory_type` is a valid index into the memory types and `desc.size` is non-zero and at most
    ///    `limits.max_allocation_size`.
    unsafe fn create_block(&self, desc: &BlockDesc) -> Result<Self::Block, DeviceError>;

    /// Destroys a block and returns its memory to the device.
    ///
    /// # Safety
    ///
    /// 1. `block` was created by this device and is destroyed once.
    /// 2. It is not mapped, and nothing (host or device) uses its memory any more.
    unsafe fn destroy_block(&self, block: Self::Block);

    /// Maps a whole block for host access.
    ///
    /// # Safety
    ///
    /// 1. `block` was created by this device from a `HOST_VISIBLE` memory type and is not mapped already.
    unsafe fn map(&self, block: &Self::Block) -> Result<NonNull<u8>, DeviceError>;

    /// Unmaps a block mapped by [`Device::map`]; its pointer becomes invalid.
    ///
    /// # Safety
    ///
    /// 1. `block` is mapped, and no reference into the mapping outlives this call.
    unsafe fn unmap(&self, block: &Self::Block);

    /// Makes host writes to `[offset, offset + size)` of a mapped, non-coherent block visible to the device.
    ///
    /// # Safety
    ///
    /// 1. `block` is mapped; `offset` and `size` are multiples of `non_coherent_atom_size` (or `size` reaches
    ///    the end of the block) and the range lies inside the block.
    unsafe fn flush(&self, block: &Self::Block, offset: u64, size: u64) -> Result<(), DeviceError>;

    /// Makes device writes to `[offset, offset + size)` of a mapped, non-coherent block visible to the host.
    ///
    /// # Safety
    ///
    /// As for [`Device::flush`].
    unsafe fn invalidate(&self, block: &Self::Block, offset: u64, size: u64) -> Result<(), DeviceError>;

    /// The virtual-memory capability, if this device has one.
    fn virtual_memory(&self) -> Option<&Self::Virtual> {
        None
    }
}

/// Devices that can reserve an address range once and map physical pages into it, one physical page at several
/// addresses if asked (CUDA's `cuMemAddressReserve` / `cuMemCreate` + `cuMemMap` + `cuMemSetAccess` /
/// `cuMemUnmap` + `cuMemRelease`, with one physical allocation per page; the host backend models it). Physical
/// pages are named by the caller: ids below the reservation's page count. A physical page lives while it is
/// mapped somewhere: the first map creates it, the unmap of its last mapping frees it. Each map or unmap call
/// covers one contiguous range of addresses and counts as one driver operation. On CUDA the work still goes by
/// page: `cuMemMap` maps an allocation only whole, from its start, so a page shown alone at another address or
/// freed alone must be an allocation of its own, and each page a call maps costs its own mapping and access
/// setting (about 30 µs on an H200, docs/BENCHMARKS.md, "Twenty-ninth session").
///
/// # Safety
///
/// Implementors promise that a mapped page of a reservation is valid device memory of the reservation's memory
/// type until it is unmapped or the reservation is released; that the pages mapped to one physical page show
/// the same memory and those mapped to distinct physical pages never share any; and that distinct reservations
/// do not overlap.
pub unsafe trait VirtualMemory: Send + Sync {
    /// The backend's handle for one reserved address range.
    type Reservation: Send + Sync;

    /// The smallest page size for `memory_type`, a power of two; None if the type has no virtual memory.
    fn granularity(&self, memory_type: u32) -> Option<u64>;

    /// Reserves `size` bytes of address space for `memory_type`, to be mapped in pages of `page_size` bytes (a
    /// power of two, at least the granularity; `size` a multiple of it): each physical page is then `page_size`
    /// bytes of memory. Maps nothing. A page size the device cannot use is an error.
    ///
    /// # Safety
    ///
    /// 1. `memory_type` is valid and [`VirtualMemory::granularity`] returned `Some` for it.
    unsafe fn reserve(
        &self,
        memory_type: u32,
        size: u64,
        page_size: u64,
    ) -> Result<Self::Reservation, DeviceError>;

    /// Releases a reservation.
    ///
    /// # Safety
    ///
    /// 1. `reservation` came from this device and is released once, with nothing mapped in it.
    unsafe fn release(&self, reservation: Self::Reservation);

    /// Maps the `pages.len()` pages from `offset` on: page `i` onto physical page `pages[i]`. A physical page
    /// that is not alive is created for it (new memory, counted against the heap); one that is alive is shared,
    /// and its memory then shows at each of its pages. One driver operation. On error nothing is mapped or
    /// created.
    ///
    /// # Safety
    ///
    /// 1. `offset` is aligned to the reservation's page size, the pages lie inside the reservation and none of
    ///    them is mapped.
    /// 2. Every id is below the reservation's page count, and none appears twice in `pages`.
    unsafe fn map_pages(
        &self,
        reservation: &Self::Reservation,
        offset: u64,
        pages: &[u32],
    ) -> Result<(), DeviceError>;

    /// Unmaps `[offset, offset + size)`: one driver operation. Physical pages left mapped nowhere are freed.
    ///
    /// # Safety
    ///
    /// 1. The range is aligned to the reservation's page size, inside it, wholly mapped, and nothing uses the memory
    ///    of a physical page this frees.
    unsafe fn unmap_pages(&self, reservation: &Self::Reservation, offset: u64, size: u64);

    /// The host address of a reservation's start, where host access is possible (host memory); None otherwise.
    fn host_address(&self, reservation: &Self::Reservation) -> Option<NonNull<u8>>;
}

/// The [`Device::Virtual`] of devices without virtual memory. It has no values.
#[derive(Debug)]
pub enum NoVirtualMemory {}

// SAFETY: `NoVirtualMemory` has no values, so none of these methods can ever be called; the promises hold
// vacuously.
unsafe impl VirtualMemory for NoVirtualMemory {
    type Reservation = core::convert::Infallible;

    fn granularity(&self, _memory_type: u32) -> Option<u64> {
        match *self {}
    }

    unsafe fn reserve(
        &self,
        _memory_type: u32,
        _size: u64,
        _page_size: u64,
    ) -> Result<Self::Reservation, DeviceError> {
        match *self {}
    }

    unsafe fn release(&self, reservation: Self::Reservation) {
        match reservation {}
    }

    unsafe fn map_pages(
        &self,
        reservation: &Self::Reservation,
        _offset: u64,
        _pages: &[u32],
    ) -> Result<(), DeviceError> {
        match *reservation {}
    }

    unsafe fn unmap_pages(&self, reservation: &Self::Reservation, _offset: u64, _size: u64) {
        match *reservation {}
    }

    fn host_address(&self, reservation: &Self::Reservation) -> Option<NonNull<u8>> {
        match *reservation {}
    }
}

impl fmt::Display for MemoryPropertyFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        bitflags::parser::to_writer(self, f)
    }
}

/// A shared device: `Arc<D>` is a device too, so tests and applications can keep a handle to the device an
/// allocator owns (to read its counters, or to create resources on it).
// SAFETY: every method forwards to `D`, which upholds the trait's promises; sharing through `Arc` adds no
// state of its own.
unsafe impl<D: Device> Device for std::sync::Arc<D> {
    type Block = D::Block;
    type Virtual = D::Virtual;

    fn memory_properties(&self) -> &MemoryProperties {
        (**self).memory_properties()
    }

    fn heap_budgets(&self) -> Vec<HeapBudget> {
        (**self).heap_budgets()
    }

    unsafe fn create_block(&self, desc: &BlockDesc) -> Result<Self::Block, DeviceError> {
        // SAFETY: the caller upholds `create_block`'s conditions, which are `D`'s.
        unsafe { (**self).create_block(desc) }
    }

    unsafe fn destroy_block(&self, block: Self::Block) {
        // SAFETY: the caller upholds `destroy_block`'s conditions, which are `D`'s.
        unsafe { (**self).destroy_block(block) }
    }

    unsafe fn map(&self, block: &Self::Block) -> Result<NonNull<u8>, DeviceError> {
        // SAFETY: the caller upholds `map`'s conditions, which are `D`'s.
        unsafe { (**self).map(block) }
    }

    unsafe fn unmap(&self, block: &Self::Block) {
        // SAFETY: the caller upholds `unmap`'s conditions, which are `D`'s.
        unsafe { (**self).unmap(block) }
    }

    unsafe fn flush(&self, block: &Self::Block, offset: u64, size: u64) -> Result<(), DeviceError> {
        // SAFETY: the caller upholds `flush`'s conditions, which are `D`'s.
        unsafe { (**self).flush(block, offset, size) }
    }

    unsafe fn invalidate(&self, block: &Self::Block, offset: u64, size: u64) -> Result<(), DeviceError> {
        // SAFETY: the caller upholds `invalidate`'s conditions, which are `D`'s.
        unsafe { (**self).invalidate(block, offset, size) }
    }

    fn virtual_memory(&self) -> Option<&Self::Virtual> {
        (**self).virtual_memory()
    }
}
