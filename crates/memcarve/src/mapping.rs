//! Host mapping of allocations: one device mapping per block, shared by every mapped allocation in it with a
//! reference count, and a guard ([`MappedAllocation`]) that gives bounds-checked access to one allocation and
//! unmaps when dropped. The guard borrows the allocation mutably, so the allocation cannot be freed while
//! mapped and has one guard at a time; writing takes the guard mutably, so no two threads write (or read and
//! write) its bytes at once through memcarve. Allocations never overlap, so guards of different allocations
//! touch different bytes. (The device may still use the memory meanwhile: ordering host and device access is
//! the caller's, as in every GPU API.)
//!
//! Flush and invalidate take ranges relative to the allocation, round them out to the device's
//! `non_coherent_atom_size`, clip them to the block, and are checked no-ops on coherent memory.

use core::ptr::NonNull;

use crate::allocator::{Allocation, Allocator};
use crate::device::Device;
use crate::error::{Error, Result};

/// A block's host address. Only an address: whoever reads or writes through it synchronises that access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MappedPtr(pub NonNull<u8>);

// SAFETY: `MappedPtr` is a plain address. memcarve writes through it only where access is exclusive: a
// `MappedAllocation` writes through `&mut self` (and is the one guard of its allocation), an `UploadRing` writes
// through `&mut self`, and a new allocation's debug margins are written under its pool's lock, which
// `check_corruption` holds while it reads them (a free reads its own allocation's margins, which nothing writes
// once placed). Moving the address between threads is harmless.
unsafe impl Send for MappedPtr {}
// SAFETY: as above; shared references to the address only copy it or read through it.
unsafe impl Sync for MappedPtr {}

/// A block's mapping: its address and how many guards (plus one, if persistent) hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub ptr: MappedPtr,
    pub users: u32,
    pub persistent: bool,
}

/// Whether a range lies in `[0, len)`; the typed error if not.
pub(crate) fn check_range(offset: u64, size: u64, len: u64) -> Result<()> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(Error::OutOfBounds { offset, size, len }),
    }
}

/// `[start, end)` of a flush or invalidate of `[offset, offset + size)` of an allocation at `base` in a block of
/// `block_size`, rounded out to `atom` and clipped to the block.
pub(crate) fn atom_range(base: u64, offset: u64, size: u64, atom: u64, block_size: u64) -> (u64, u64) {
    let atom = atom.max(1);
    let start = (base + offset) / atom * atom;
    let end = (base + offset + size).div_ceil(atom).saturating_mul(atom).min(block_size);
    (start, end)
}

/// One allocation, mapped for host access. Dropping it unmaps (the block stays mapped while other guards, or a
/// persistent mapping, hold it).
///
/// ```
/// # use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
/// # use memcarve::{AllocationDesc, Allocator, AllocatorConfig, MemoryLocation};
/// # let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Real));
/// # let allocator = Allocator::new(device, AllocatorConfig::default()).unwrap();
/// let mut allocation = allocator.allocate(&AllocationDesc::new("a", 64, MemoryLocation::CpuToGpu)).unwrap();
/// let mut mapped = allocator.map(&mut allocation).unwrap();
/// mapped.write(0, b"hello").unwrap();
/// let mut read = [0; 5];
/// mapped.read(0, &mut read).unwrap();
/// assert_eq!(&read, b"hello");
/// drop(mapped);
/// allocator.free(allocation).unwrap();
/// ```
///
/// The allocation cannot be freed, nor mapped a second time, while its guard lives:
///
/// ```compile_fail,E0505
/// # use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
/// # use memcarve::{AllocationDesc, Allocator, AllocatorConfig, MemoryLocation};
/// # let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Real));
/// # let allocator = Allocator::new(device, AllocatorConfig::default()).unwrap();
/// let mut allocation = allocator.allocate(&AllocationDesc::new("a", 64, MemoryLocation::CpuToGpu)).unwrap();
/// let mapped = allocator.map(&mut allocation).unwrap();
/// allocator.free(allocation).unwrap(); // refused by the compiler: `allocation` is borrowed by `mapped`
/// drop(mapped);
/// ```
///
/// ```compile_fail,E0499
/// # use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
/// # use memcarve::{AllocationDesc, Allocator, AllocatorConfig, MemoryLocation};
/// # let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Real));
/// # let allocator = Allocator::new(device, AllocatorConfig::default()).unwrap();
/// let mut allocation = allocator.allocate(&AllocationDesc::new("a", 64, MemoryLocation::CpuToGpu)).unwrap();
/// let first = allocator.map(&mut allocation).unwrap();
/// let second = allocator.map(&mut allocation).unwrap(); // refused: one guard per allocation at a time
/// drop((first, second));
/// ```
pub struct MappedAllocation<'a, D: Device> {
    pub(crate) allocator: &'a Allocator<D>,
    pub(crate) allocation: &'a Allocation,
    pub(crate) ptr: MappedPtr,
}

impl<D: Device> core::fmt::Debug for MappedAllocation<'_, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MappedAllocation")
            .field("allocation", self.allocation)
            .field("ptr", &self.ptr.0)
            .finish()
    }
}

impl<'a, D: Device> MappedAllocation<'a, D> {
    /// The allocation's first byte. Valid for [`MappedAllocation::len`] bytes while the guard lives; reading
    /// or writing through it is up to the caller (the device may be using the memory too).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.0.as_ptr()
    }

    /// Bytes mapped: the allocation's size.
    pub fn len(&self) -> u64 {
        self.allocation.size()
    }

    /// Whether the allocation is empty (never: allocations have a size).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `data` into the allocation at `offset`; a range past the allocation is an error.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        check_range(offset, data.len() as u64, self.len())?;
        // SAFETY: the destination `[offset, offset + data.len())` lies inside the allocation (checked above),
        // which the guard keeps mapped and alive; `data` is a separate Rust slice, so the ranges do not overlap;
        // `&mut self` on the allocation's one guard keeps every other access through memcarve out meanwhile.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.as_ptr().add(offset as usize), data.len())
        };
        Ok(())
    }

    /// Copies from the allocation at `offset` into `out`; a range past the allocation is an error.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        check_range(offset, out.len() as u64, self.len())?;
        // SAFETY: the source lies inside the mapped, live allocation (checked above); `out` is a separate Rust
        // slice, so the ranges do not overlap; writes through memcarve need the guard mutably, so none runs now.
        unsafe {
            core::ptr::copy_nonoverlapping(self.as_ptr().add(offset as usize), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` to the start of the allocation (which must be at least as long).
    pub fn copy_from_slice(&mut self, data: &[u8]) -> Result<()> {
        self.write(0, data)
    }

    /// Makes host writes to `[offset, offset + size)` of the allocation visible to the device. A checked no-op
    /// on coherent memory; a range past the allocation is an error.
    pub fn flush(&self, offset: u64, size: u64) -> Result<()> {
        self.allocator.flush_or_invalidate(self.allocation, offset, size, true)
    }

    /// Makes device writes to `[offset, offset + size)` of the allocation visible to the host. A checked no-op
    /// on coherent memory; a range past the allocation is an error.
    pub fn invalidate(&self, offset: u64, size: u64) -> Result<()> {
        self.allocator.flush_or_invalidate(self.allocation, offset, size, false)
    }
}

impl<D: Device> Drop for MappedAllocation<'_, D> {
    fn drop(&mut self) {
        self.allocator.release_mapping(self.allocation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atom_ranges_round_out_and_clip() {
        assert_eq!(atom_range(0, 0, 1, 64, 4096), (0, 64));
        assert_eq!(atom_range(100, 10, 20, 64, 4096), (64, 192));
        assert_eq!(atom_range(4000, 50, 46, 256, 4096), (3840, 4096), "clipped to the block");
        assert_eq!(atom_range(512, 0, 512, 256, 4096), (512, 1024), "aligned ranges stay as they are");
    }

    #[test]
    fn ranges_are_checked() {
        assert!(check_range(0, 10, 10).is_ok());
        assert_eq!(check_range(5, 6, 10), Err(Error::OutOfBounds { offset: 5, size: 6, len: 10 }));
        assert!(check_range(u64::MAX, 2, 10).is_err(), "overflow is out of bounds, not a panic");
    }
}
