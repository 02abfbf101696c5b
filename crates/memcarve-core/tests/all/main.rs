//! memcarve-core's integration tests, built as one binary: randomized workloads under the invariant checker,
//! and property tests against a reference model.

mod model;
mod randomized;
mod rng;
