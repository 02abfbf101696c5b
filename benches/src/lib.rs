//! Shared helpers for memcarve's peer-comparison binaries.
