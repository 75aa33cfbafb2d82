//! Sampled mode: the VM's sampling interval redrawn after every sample, so
//! that sample points fall evenly over a program's repeating allocations
//! (docs/alloc_sites.md, "Where the VM's sample points fall").
//!
//! HotSpot draws a thread's next sample point as an exponential gap of mean
//! N, but through a logarithm read from a 1 024-entry table: the gap takes
//! one of a fixed set of values, some 256-512 bytes apart at N = 512 KiB.
//! A loop that allocates the same few objects every round then has its
//! sample points land on some of them more often than their size says
//! (Churn's 24- and 80-byte pair: the small one 3 % over, the large one 1 %
//! under, with an agent that only counts the VM's events). Redrawing the
//! mean uniformly from `[N - N/8, N + N/8]` after each sample moves every
//! value of that set by up to tens of kilobytes, far more than any
//! allocation pattern's period, and leaves the mean gap at N: the weights
//! of the samples (`1/p`, `p = 1 - exp(-s/N)`) stay those of N.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::cell::RefCell;

/// The half-width of the range the interval is drawn from, as a fraction
/// of the mean: 1/8 moves a 512 KiB gap by up to 64 KiB.
const SPREAD: f64 = 0.125;

/// The interval for the next sample point: the mean `n` moved by `u`
/// (uniform in [0, 1)) across `[n - w, n + w)`, `w = n*SPREAD`, narrowed
/// near the VM's limit (a jint) so that the range stays centred on `n`
/// and the mean stays `n`. 0 (every allocation) stays 0.
pub fn interval_for(n: u64, u: f64) -> i32 {
    if n == 0 {
        return 0;
    }
    let max = i32::MAX as f64;
    let mean = (n as f64).min(max);
    let half = (mean * SPREAD).min(max - mean);
    let drawn = mean + half * (2.0 * u - 1.0);
    drawn.round().clamp(1.0, max) as i32
}

thread_local! {
    /// One generator per allocating thread: the callback takes no lock.
    /// (SmallRng: a few nanoseconds a draw, no allocation; its output only
    /// has to be independent of the program's allocation pattern.)
    static RNG: RefCell<Option<SmallRng>> = const { RefCell::new(None) };
}

/// A uniform draw in [0, 1) from this thread's generator, seeded on first
/// use from the address of the thread's generator and the clock.
pub fn uniform() -> f64 {
    RNG.with(|r| {
        let here = r as *const _ as u64;
        let mut r = r.borrow_mut();
        let rng = r.get_or_insert_with(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            SmallRng::seed_from_u64(here ^ now.rotate_left(32))
        });
        rng.random::<f64>()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_spans_an_eighth_either_side_of_the_mean() {
        let n = 524_288;
        assert_eq!(interval_for(n, 0.0), 458_752);
        assert_eq!(interval_for(n, 0.5), 524_288);
        assert!(interval_for(n, 0.999_999) <= 589_824);
        assert_eq!(interval_for(0, 0.3), 0);
        assert_eq!(interval_for(1, 0.0), 1);
        assert_eq!(interval_for(i32::MAX as u64, 0.99), i32::MAX);
        assert_eq!(interval_for(i32::MAX as u64, 0.01), i32::MAX);
        // Near the limit the range narrows and stays centred.
        let near = i32::MAX as u64 - 1000;
        assert_eq!(interval_for(near, 0.0), i32::MAX - 2000);
        assert_eq!(interval_for(near, 0.5), near as i32);
    }

    #[test]
    fn the_mean_interval_stays_the_configured_one() {
        let n = 524_288u64;
        let draws = 200_000;
        let sum: f64 = (0..draws).map(|_| interval_for(n, uniform()) as f64).sum();
        let mean = sum / draws as f64;
        // Uniform over +-65 536: standard deviation 37 837, of the mean of
        // 200 000 draws 85 bytes; 6 of them is 510.
        assert!((mean - n as f64).abs() < 510.0, "{mean}");
    }

    /// The mechanism itself: sample points drawn the way HotSpot draws them
    /// (a 48-bit linear congruential generator, the top 26 bits through a
    /// 1 024-entry log table) over a loop allocating a 3-word and a 10-word
    /// object, each sample starting the next gap at the end of the object it
    /// hit. With the fixed mean the small object gets about 3 % more samples
    /// than its size says; with the mean redrawn, its share is its size's.
    #[test]
    fn redrawn_intervals_sample_a_repeating_pattern_by_size() {
        let fixed = small_share(|| 524_288.0);
        let redrawn = small_share(|| interval_for(524_288, uniform()) as f64);
        let truth = 3.0 / 13.0;
        assert!((fixed / truth - 1.0) > 0.015, "fixed mean: {fixed}");
        // 400 000 samples: the share's standard deviation is 0.3 % of it.
        assert!((redrawn / truth - 1.0).abs() < 0.012, "redrawn: {redrawn}");
    }

    /// The share of samples that land on the 3-word object of a 13-word
    /// round, with the VM's gap drawing and `mean()` as the interval.
    fn small_share(mut mean: impl FnMut() -> f64) -> f64 {
        let table: Vec<f64> = (0..1024)
            .map(|i| (1.0 + (i as f64 + 0.5) / 1024.0).log2())
            .collect();
        let fast_log2 = |d: f64| {
            let hi = (d.to_bits() >> 32) as u32;
            let exponent = ((hi >> 20) & 0x7ff) as i32 - 1023;
            exponent as f64 + table[((hi >> 10) & 1023) as usize]
        };
        let mut lcg: u64 = 0x1234_5678;
        let (mut top, mut small, samples) = (0u64, 0u64, 400_000);
        for _ in 0..samples {
            lcg = (0x5_DEEC_E66D_u64.wrapping_mul(lcg).wrapping_add(0xB)) & ((1 << 48) - 1);
            let q = ((lcg >> 22) as u32) as f64 + 1.0;
            let log = (fast_log2(q) - 26.0).min(0.0);
            let gap = (log * -std::f64::consts::LN_2 * mean() + 1.0) as u64;
            let point = top + gap / 8;
            let phase = point % 13;
            let (start, words) = if phase < 3 {
                (point - phase, 3)
            } else {
                (point - phase + 3, 10)
            };
            small += u64::from(words == 3);
            top = start + words;
        }
        small as f64 / samples as f64
    }
}
