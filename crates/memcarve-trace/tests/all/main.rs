//! Integration tests of memcarve-trace, built as one binary.
#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap freely")]

mod bad_input;
mod importer;
mod round_trip;
mod support;
