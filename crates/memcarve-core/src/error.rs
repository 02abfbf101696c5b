//! The core's error type: every way a request can be refused. Each refusal leaves the allocator unchanged.

use core::fmt;

/// Why a range allocator refused a request. The allocator is unchanged after any of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A request for zero bytes.
    ZeroSize,
    /// The alignment is not a power of two (zero included).
    InvalidAlignment {
        /// The alignment asked for.
        alignment: u64,
    },
    /// The alignment is larger than the whole capacity, so no offset but 0 could satisfy it in general.
    AlignmentTooLarge {
        /// The alignment asked for.
        alignment: u64,
        /// The allocator's capacity.
        capacity: u64,
    },
    /// The request is larger than the allocator's capacity.
    SizeTooLarge {
        /// The size asked for.
        size: u64,
        /// The allocator's capacity.
        capacity: u64,
    },
    /// No free range can hold the request right now (it may succeed after frees).
    OutOfMemory {
        /// The size asked for.
        size: u64,
        /// The alignment asked for.
        alignment: u64,
    },
    /// The handle names an allocation that was already freed (a double free) or a slot since reused.
    StaleHandle,
    /// The handle was made by another allocator, or is not a handle at all.
    ForeignHandle,
    /// A linear or ring allocator was asked to free something other than the allocation that must go next.
    OutOfOrderFree,
    /// The allocator's bookkeeping is full: it cannot track more ranges (about 16 million per block).
    TooManyAllocations,
    /// A configuration value is invalid (a zero capacity, a granularity that is not a power of two, a shrinking
    /// `grow`).
    InvalidConfig {
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::ZeroSize => f.write_str("allocation size is zero"),
            Error::InvalidAlignment { alignment } => {
                write!(f, "alignment {alignment} is not a power of two")
            }
            Error::AlignmentTooLarge { alignment, capacity } => {
                write!(f, "alignment {alignment} exceeds the capacity {capacity}")
            }
            Error::SizeTooLarge { size, capacity } => {
                write!(f, "size {size} exceeds the capacity {capacity}")
            }
            Error::OutOfMemory { size, alignment } => {
                write!(f, "no free range holds {size} bytes at alignment {alignment}")
            }
            Error::StaleHandle => f.write_str("handle refers to an allocation that no longer exists"),
            Error::ForeignHandle => f.write_str("handle does not belong to this allocator"),
            Error::OutOfOrderFree => f.write_str("free out of the order this allocator requires"),
            Error::TooManyAllocations => f.write_str("too many ranges tracked by one allocator"),
            Error::InvalidConfig { reason } => write!(f, "invalid configuration: {reason}"),
        }
    }
}

impl core::error::Error for Error {}

/// Checks the arguments every allocator shares: a non-zero size within `capacity` and a power-of-two alignment
/// no larger than `capacity`.
#[inline]
pub(crate) fn validate_request(size: u64, alignment: u64, capacity: u64) -> Result<(), Error> {
    // Valid requests pass three comparisons (`x - 1 < capacity` is `1 <= x <= capacity`); only an invalid one
    // is looked at again to say what is wrong with it.
    let alignment_ok = alignment & alignment.wrapping_sub(1) == 0 && alignment.wrapping_sub(1) < capacity;
    if size.wrapping_sub(1) < capacity && alignment_ok {
        return Ok(());
    }
    Err(request_error(size, alignment, capacity))
}

/// What is wrong with a request that `validate_request` refused.
#[cold]
#[inline(never)]
fn request_error(size: u64, alignment: u64, capacity: u64) -> Error {
    if size == 0 {
        Error::ZeroSize
    } else if !alignment.is_power_of_two() {
        Error::InvalidAlignment { alignment }
    } else if size > capacity {
        Error::SizeTooLarge { size, capacity }
    } else {
        Error::AlignmentTooLarge { alignment, capacity }
    }
}
