//! memcarve-core's integration tests, built as one binary: randomized workloads under the invariant checker,
//! and property tests against a reference model.

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]

mod model;
mod randomized;
mod rng;
