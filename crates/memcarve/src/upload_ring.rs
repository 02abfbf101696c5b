//! The upload ring: one persistently mapped, host-visible allocation handed out as FIFO slices, for per-frame
//! staging data. Slices are retired in the order they were pushed (after the device has consumed them); the ring
//! wraps around at its end. Its ranges are managed by the core's [`RingAllocator`], so an out-of-order retire is
//! an error, never corruption.

use memcarve_core::{Handle, RingAllocator};

use crate::allocator::{Allocation, Allocator};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::mapping::{MappedPtr, check_range};
use crate::policy::{AllocationDesc, Dedicated, MemoryLocation};

/// One slice of an [`UploadRing`]. Move-only: [`UploadRing::retire`] consumes it. Its fields are read-only, so
/// that a write through it always lands where the ring placed it.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a slice that is never retired blocks the ring"]
pub struct UploadSlice {
    handle: Handle,
    offset: u64,
    size: u64,
}

impl UploadSlice {
    /// Offset of the slice within the ring's allocation (the offset to copy from, when a buffer is bound to
    /// the whole allocation).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// A refused [`UploadRing::retire`]: why, and the slice, still live.
#[derive(Debug, PartialEq, Eq)]
pub struct RetireError {
    /// Why it was refused.
    pub error: Error,
    /// The slice, unchanged.
    pub slice: UploadSlice,
}

impl core::fmt::Display for RetireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RetireError {}

/// A persistently mapped ring of host-visible memory; see the module documentation.
pub struct UploadRing<'a, D: Device> {
    allocator: &'a Allocator<D>,
    allocation: Option<Allocation>,
    base: MappedPtr,
    ranges: RingAllocator,
}

impl<D: Device> core::fmt::Debug for UploadRing<'_, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UploadRing")
            .field("allocation", &self.allocation)
            .field("ranges", &self.ranges)
            .finish()
    }
}

impl<'a, D: Device> UploadRing<'a, D> {
    /// A ring of `size` bytes of upload memory (host-visible, chosen by [`MemoryLocation::CpuToGpu`] policy),
    /// in a block of its own, mapped for as long as the ring lives.
    pub fn new(allocator: &'a Allocator<D>, size: u64) -> Result<UploadRing<'a, D>> {
        let desc = AllocationDesc::new("upload ring", size, MemoryLocation::CpuToGpu)
            .with_alignment(256)
            .with_dedicated(Dedicated::Required);
        let allocation = allocator.allocate(&desc)?;
        let base = match allocator.acquire_raw_mapping(&allocation) {
            Ok(base) => base,
            Err(error) => {
                allocator.free(allocation)?;
                return Err(error);
            }
        };
        let ranges =
            RingAllocator::new(size).map_err(|_| Error::InvalidConfig { reason: "ring size is zero" })?;
        Ok(UploadRing { allocator, allocation: Some(allocation), base, ranges })
    }

    /// The ring's allocation (bind a buffer to it to copy from the slices).
    pub fn allocation(&self) -> Option<&Allocation> {
        self.allocation.as_ref()
    }

    /// Takes the next `size` bytes at `alignment`, wrapping to the start when the end has no room. Full until
    /// older slices are retired: [`Error::OutOfMemory`].
    pub fn push(&mut self, size: u64, alignment: u64) -> Result<UploadSlice> {
        match self.ranges.allocate(size, alignment) {
            Ok(range) => Ok(UploadSlice { handle: range.handle, offset: range.offset, size }),
            Err(memcarve_core::Error::ZeroSize) => Err(Error::ZeroSize),
            Err(memcarve_core::Error::InvalidAlignment { alignment }) => {
                Err(Error::InvalidAlignment { alignment })
            }
            Err(_) => Err(Error::OutOfMemory { size }),
        }
    }

    /// Pushes a slice and copies `data` into it.
    pub fn push_bytes(&mut self, data: &[u8], alignment: u64) -> Result<UploadSlice> {
        let slice = self.push(data.len() as u64, alignment)?;
        self.write(&slice, 0, data)?;
        Ok(slice)
    }

    /// Copies `data` into `slice` at `offset` (bounds-checked), and flushes it if the memory is not coherent. A
    /// slice of another ring is an [`Error::ForeignAllocation`] and writes nothing (rings are told apart by a
    /// 16-bit tag, so among tens of thousands of rings one may pass for another; even then nothing is written
    /// outside this ring's memory).
    pub fn write(&mut self, slice: &UploadSlice, offset: u64, data: &[u8]) -> Result<()> {
        let inside = slice.offset.checked_add(slice.size).is_some_and(|end| end <= self.ranges.capacity());
        if !self.ranges.is_live(&slice.handle) || !inside {
            return Err(Error::ForeignAllocation);
        }
        check_range(offset, data.len() as u64, slice.size)?;
        // SAFETY: the slice is live in this ring and lies inside its capacity, which is the size of the ring's
        // allocation (checked above), which stays mapped while the ring lives; the destination range lies inside
        // the slice (checked above); live slices never overlap (the ring allocator's invariant); `&mut self`
        // keeps every other write through the ring out meanwhile, and `data` is a separate Rust slice.
        unsafe {
            let destination = self.base.0.as_ptr().add((slice.offset + offset) as usize);
            core::ptr::copy_nonoverlapping(data.as_ptr(), destination, data.len());
        }
        if let Some(allocation) = &self.allocation {
            self.allocator.flush_or_invalidate(allocation, slice.offset + offset, data.len() as u64, true)?;
        }
        Ok(())
    }

    /// The host address of a slice's first byte (valid for `slice.size` bytes until it is retired).
    pub fn as_ptr(&self, slice: &UploadSlice) -> *mut u8 {
        self.base.0.as_ptr().wrapping_add(slice.offset as usize)
    }

    /// Retires the oldest live slice (the device is done with it). Retiring any other slice is refused with
    /// [`Error::OutOfOrderRetire`], changes nothing, and hands the slice back.
    pub fn retire(&mut self, slice: UploadSlice) -> core::result::Result<(), RetireError> {
        let raw = slice.handle.to_raw();
        match self.ranges.free(slice.handle) {
            Ok(()) => Ok(()),
            Err(error) => {
                let error = match error {
                    memcarve_core::Error::OutOfOrderFree => Error::OutOfOrderRetire,
                    _ => Error::ForeignAllocation,
                };
                let slice =
                    UploadSlice { handle: Handle::from_raw(raw), offset: slice.offset, size: slice.size };
                Err(RetireError { error, slice })
            }
        }
    }

    /// Bytes in live slices (padding and skipped end space included).
    pub fn used_bytes(&self) -> u64 {
        self.ranges.stats().used_bytes
    }
}

impl<D: Device> Drop for UploadRing<'_, D> {
    fn drop(&mut self) {
        if let Some(allocation) = self.allocation.take() {
            self.allocator.release_mapping(&allocation);
            // Freeing our own live allocation cannot fail; there is nothing to report it to in a drop.
            let _ = self.allocator.free(allocation);
        }
    }
}
