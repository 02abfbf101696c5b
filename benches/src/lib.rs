//! Shared helpers for memcarve's peer-comparison binaries: a small seeded random number generator, log-uniform
//! size sampling, a shuffle, a median, a heap-in-use reading for metadata measurements, and
//! numbers with thousands separators.
//!
//! Everything random here is deterministic for a given seed, so every allocator in a comparison can be run on
//! exactly the same pre-generated operation sequence.

/// A small, fast, seeded pseudo-random generator (xorshift64* seeded through SplitMix64).
///
/// Not cryptographic and not meant to be; its only jobs are to be reproducible and cheap, and to spread bits
/// well enough for sizes, shuffles and victim choices in benchmarks.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose whole output is fixed by `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        // One SplitMix64 step turns any seed, zero included, into a well-mixed non-zero state.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng { state: if z == 0 { 0x2545_F491_4F6C_DD1D } else { z } }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A value in `[0, n)` (`n > 0`), by the multiply-shift reduction; the bias is below 2^-32 for the `n`
    /// a benchmark uses, which is irrelevant here.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `[lo, hi]` (inclusive), for `lo <= hi`.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "Rng::range_inclusive({lo}, {hi})");
        lo + self.below(hi - lo + 1)
    }
}

/// A size drawn log-uniformly from `[lo, hi]` (`1 <= lo <= hi`): every factor of two in the range is equally
/// likely, so small and large requests both appear in useful numbers.
pub fn log_uniform(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    assert!(1 <= lo && lo <= hi, "log_uniform({lo}, {hi})");
    let (ln_lo, ln_hi) = ((lo as f64).ln(), (hi as f64).ln());
    let x = (ln_lo + rng.next_f64() * (ln_hi - ln_lo)).exp();
    (x.round() as u64).clamp(lo, hi)
}

/// Shuffles `items` in place (Fisher–Yates), every permutation equally likely up to the generator's quality.
pub fn shuffle<T>(rng: &mut Rng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// The median of `samples` (the mean of the two middle values for an even count); sorts `samples`.
/// Panics on an empty slice or a NaN.
pub fn median(samples: &mut [f64]) -> f64 {
    assert!(!samples.is_empty(), "median of no samples");
    samples.sort_by(|a, b| a.partial_cmp(b).expect("median: NaN sample"));
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 { samples[mid] } else { (samples[mid - 1] + samples[mid]) / 2.0 }
}

/// Bytes of heap in use right now, from glibc's `mallinfo2()`: `uordblks` (in-use bytes of the `brk` and
/// `mmap`-backed arenas) plus `hblkhd` (bytes in chunks allocated directly with `mmap`).
///
/// It sees every `malloc`, Rust's global allocator (the system one by default) and C++'s `operator new` alike,
/// so the difference between two readings is what code running in between kept on the heap, chunk headers
/// included. `None` where glibc is not the C library.
pub fn heap_in_use() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallinfo2` takes no arguments and only reads the allocator's own statistics under its locks;
        // glibc (2.33 and later, which provides the symbol this links against) is the one upholding its
        // thread safety, and there is nothing the caller has to guarantee.
        let info = unsafe { libc::mallinfo2() };
        Some(info.uordblks + info.hblkhd)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_reproducible_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = Rng::new(0);
        for _ in 0..10_000 {
            assert!(r.below(10) < 10);
            assert!((0.0..1.0).contains(&r.next_f64()));
            let v = r.range_inclusive(3, 5);
            assert!((3..=5).contains(&v));
        }
    }

    #[test]
    fn log_uniform_stays_in_bounds_and_covers_both_ends() {
        let mut r = Rng::new(1);
        let sizes: Vec<u64> = (0..100_000).map(|_| log_uniform(&mut r, 16, 16 * 1024)).collect();
        assert!(sizes.iter().all(|&s| (16..=16 * 1024).contains(&s)));
        // Each of the 10 octaves should get roughly a tenth.
        let small = sizes.iter().filter(|&&s| s < 32).count();
        let large = sizes.iter().filter(|&&s| s >= 8 * 1024).count();
        assert!((8_000..12_000).contains(&small), "{small}");
        assert!((8_000..12_000).contains(&large), "{large}");
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..1000).collect();
        shuffle(&mut Rng::new(3), &mut v);
        assert_ne!(v, (0..1000).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn thousands_groups_digits_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn heap_in_use_sees_a_large_allocation() {
        if let Some(before) = heap_in_use() {
            // Seen by the optimizer as used, or a release build may leave the allocation out.
            let v: Vec<u8> = std::hint::black_box(Vec::with_capacity(1 << 20));
            let after = heap_in_use().unwrap();
            assert!(after >= before + (1 << 20), "{before} -> {after}");
            drop(v);
        }
    }
}

/// Median and range of a set of timing samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median.
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples` (at least one; no NaN).
    pub fn of(mut samples: Vec<f64>) -> Summary {
        let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Summary { median: median(&mut samples), min, max }
    }

    /// `median [min-max]` with one decimal, as the tables print it.
    pub fn cell(&self) -> String {
        format!("{:.1} [{:.1}-{:.1}]", self.median, self.min, self.max)
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
