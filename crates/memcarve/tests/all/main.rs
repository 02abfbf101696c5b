//! memcarve's allocator tests on the host backend, built as one binary.

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]

mod basics;
mod custom_pools;
mod faults;
mod mapping;
mod observability;
mod patterns;
mod randomized;
// The same seeded generator as memcarve-core's tests: one copy.
#[path = "../../../memcarve-core/tests/all/rng.rs"]
mod rng;
mod threads;
mod upload_ring;
mod virtual_heap;
