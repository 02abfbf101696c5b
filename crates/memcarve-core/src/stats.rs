//! Statistics every range allocator reports in the same shape.

/// A snapshot of one allocator's ranges. `used_bytes + free_bytes == capacity` always holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Bytes managed.
    pub capacity: u64,
    /// Bytes not available to new requests: live allocations after rounding to the allocator's granularity,
    /// plus any padding the allocator could not return to its free space.
    pub used_bytes: u64,
    /// Bytes available in free ranges.
    pub free_bytes: u64,
    /// Live allocations.
    pub allocation_count: usize,
    /// Separate free ranges.
    pub free_range_count: usize,
    /// Size of the largest free range: the largest request that could still succeed at alignment 1.
    pub largest_free_range: u64,
}

impl Stats {
    /// 1 − largest free range / total free: 0 when all free space is one range, towards 1 when it is scattered.
    pub fn fragmentation(&self) -> f64 {
        if self.free_bytes == 0 { 0.0 } else { 1.0 - self.largest_free_range as f64 / self.free_bytes as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::Stats;

    #[test]
    fn fragmentation_is_zero_for_one_free_range_and_grows_with_scatter() {
        let one = Stats { capacity: 100, free_bytes: 60, largest_free_range: 60, ..Stats::default() };
        assert_eq!(one.fragmentation(), 0.0);
        let scattered = Stats { capacity: 100, free_bytes: 60, largest_free_range: 15, ..Stats::default() };
        assert!((scattered.fragmentation() - 0.75).abs() < 1e-12);
        assert_eq!(Stats::default().fragmentation(), 0.0);
    }
}
