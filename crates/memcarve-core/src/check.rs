//! The invariant checker's report. Each allocator's `check()` walks its whole structure (O(n)) and returns the
//! first broken invariant; tests call it after every operation. Compiled for this crate's tests and behind the
//! `check` feature.

use core::fmt;

/// A broken invariant: which one, and the offset (or index) where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Violation {
    /// The invariant that does not hold.
    pub what: &'static str,
    /// Where: an offset in the managed range, or an index where no offset applies.
    pub offset: u64,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant violated: {} (at {})", self.what, self.offset)
    }
}

impl core::error::Error for Violation {}
