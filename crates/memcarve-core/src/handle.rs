//! Move-only allocation handles with a generation and an owner tag, and their `u64` form.
//!
//! Raw layout (low to high bits): 24 bits of slot, 24 bits of generation, 16 bits of owner tag. An allocator
//! accepts a handle only if the tag is its own and the slot is in use with that generation, so a double free, a
//! stale handle and a handle from another allocator are errors. The check is exact up to wraparound: a stale
//! handle could alias a live allocation only if its slot is in use again and exactly a multiple of 2^24
//! allocations happened in between; a foreign one only if 2^16 allocators were created in between.

use core::fmt;
use core::num::NonZeroU64;
use core::sync::atomic::{AtomicU16, Ordering};

pub(crate) const SLOT_BITS: u32 = 24;
pub(crate) const GENERATION_BITS: u32 = 24;
pub(crate) const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
pub(crate) const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;

static NEXT_OWNER_TAG: AtomicU16 = AtomicU16::new(1);

/// A fresh owner tag for a new allocator (wraps after 65,535 allocators). Never 0: a raw value with owner tag
/// 0 belongs to no allocator, and every handle's raw form is non-zero (so `Option<Handle>` is 8 bytes).
pub(crate) fn next_owner_tag() -> u16 {
    loop {
        let tag = NEXT_OWNER_TAG.fetch_add(1, Ordering::Relaxed);
        if tag != 0 {
            return tag;
        }
    }
}

/// What `Handle::from_raw(0)` holds: owner tag 0, so every allocator refuses it as foreign.
const UNOWNED: NonZeroU64 = NonZeroU64::MIN;

/// Identifies one live allocation of one allocator. Not `Copy` or `Clone`: freeing consumes it, so a double
/// free needs a deliberate [`Handle::from_raw`], and even then it is reported as [`crate::Error::StaleHandle`].
#[must_use = "dropping a handle leaks its range until the allocator is cleared"]
#[derive(PartialEq, Eq, Hash)]
pub struct Handle {
    raw: NonZeroU64,
}

impl Handle {
    pub(crate) fn new(owner: u16, slot: u32, generation: u32) -> Handle {
        debug_assert!(slot <= SLOT_MASK && generation <= GENERATION_MASK);
        let raw = u64::from(slot & SLOT_MASK)
            | (u64::from(generation & GENERATION_MASK) << SLOT_BITS)
            | (u64::from(owner) << (SLOT_BITS + GENERATION_BITS));
        Handle::from_raw(raw)
    }

    /// The `u64` form, for FFI, traces and tests. Never 0.
    pub fn to_raw(&self) -> u64 {
        self.raw.get()
    }

    /// Rebuilds a handle from [`Handle::to_raw`]'s value. Any `u64` is accepted here; the allocator validates it
    /// when the handle is used. 0, which no allocator hands out, becomes a handle that every allocator refuses.
    pub fn from_raw(raw: u64) -> Handle {
        Handle { raw: NonZeroU64::new(raw).unwrap_or(UNOWNED) }
    }

    fn bits(&self) -> u64 {
        self.raw.get()
    }

    pub(crate) fn owner(&self) -> u16 {
        (self.bits() >> (SLOT_BITS + GENERATION_BITS)) as u16
    }

    pub(crate) fn slot(&self) -> u32 {
        (self.bits() as u32) & SLOT_MASK
    }

    pub(crate) fn generation(&self) -> u32 {
        ((self.bits() >> SLOT_BITS) as u32) & GENERATION_MASK
    }

    /// Slot and generation together: the 48-bit sequence number used by the linear allocators.
    pub(crate) fn sequence(&self) -> u64 {
        self.bits() & ((1 << (SLOT_BITS + GENERATION_BITS)) - 1)
    }

    pub(crate) fn from_sequence(owner: u16, sequence: u64) -> Handle {
        Handle::new(owner, (sequence as u32) & SLOT_MASK, ((sequence >> SLOT_BITS) as u32) & GENERATION_MASK)
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("owner", &self.owner())
            .field("slot", &self.slot())
            .field("generation", &self.generation())
            .finish()
    }
}

/// What an allocation request returns: the handle that frees it, and where the range lies.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "dropping an allocation leaks its range until the allocator is cleared"]
pub struct Allocation {
    /// Frees the range; see [`Handle`].
    pub handle: Handle,
    /// Start of the range, a multiple of the requested alignment.
    pub offset: u64,
    /// The size that was requested (the allocator may round its own bookkeeping up to its granularity).
    pub size: u64,
}

impl From<Allocation> for Handle {
    fn from(allocation: Allocation) -> Handle {
        allocation.handle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_form_round_trips_every_field() {
        let h = Handle::new(0xBEEF, SLOT_MASK, GENERATION_MASK - 1);
        let back = Handle::from_raw(h.to_raw());
        assert_eq!(back.owner(), 0xBEEF);
        assert_eq!(back.slot(), SLOT_MASK);
        assert_eq!(back.generation(), GENERATION_MASK - 1);
        assert_eq!(back, h);
    }

    #[test]
    fn sequence_round_trips() {
        let seq = (5u64 << SLOT_BITS) | 7;
        let h = Handle::from_sequence(3, seq);
        assert_eq!(h.sequence(), seq);
        assert_eq!(h.owner(), 3);
    }

    #[test]
    fn owner_tags_differ_between_calls() {
        assert_ne!(next_owner_tag(), next_owner_tag());
    }

    #[test]
    fn raw_zero_is_owned_by_nobody_and_option_is_free() {
        assert_eq!(Handle::from_raw(0).owner(), 0);
        assert_eq!(core::mem::size_of::<Option<Handle>>(), 8);
    }
}
