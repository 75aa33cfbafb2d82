//! Local-time offset for the text format's `ctime()` dates.

/// Seconds east of UTC of local time at `unix_secs` (0 if unknown).
pub fn local_utc_offset(unix_secs: i64) -> i32 {
    let t: libc::time_t = unix_secs as libc::time_t;
    // SAFETY: all-zero is a valid `tm`; localtime_r only writes into it and
    // reads `t`; both live on this stack frame for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::localtime_r(&t, &mut tm) };
    if r.is_null() {
        0
    } else {
        tm.tm_gmtoff as i32
    }
}

/// A cheap monotonic tick counter for timing every method call (cpu=times).
/// On x86-64 with an invariant time-stamp counter (`constant_tsc` and
/// `nonstop_tsc`) it reads the TSC directly (a few ns, against ~25 ns for
/// `clock_gettime` through the vDSO); elsewhere it counts nanoseconds from
/// `Instant`. Ticks are converted to nanoseconds at report time from the
/// ticks and the `Instant` time elapsed since the clock was created.
pub struct TickClock {
    origin: std::time::Instant,
    tsc0: u64,
    tsc: bool,
}

impl TickClock {
    pub fn new() -> Self {
        let tsc = invariant_tsc();
        TickClock {
            origin: std::time::Instant::now(),
            tsc0: if tsc { read_tsc() } else { 0 },
            tsc,
        }
    }

    /// Whether ticks come from the time-stamp counter.
    pub fn uses_tsc(&self) -> bool {
        self.tsc
    }

    #[inline]
    pub fn ticks(&self) -> u64 {
        if self.tsc {
            read_tsc()
        } else {
            self.origin.elapsed().as_nanos() as u64
        }
    }

    /// Nanoseconds per tick, measured over the clock's life so far.
    pub fn ns_per_tick(&self) -> f64 {
        if !self.tsc {
            return 1.0;
        }
        let ns = self.origin.elapsed().as_nanos() as f64;
        let ticks = read_tsc().wrapping_sub(self.tsc0) as f64;
        if ticks <= 0.0 || ns <= 0.0 {
            1.0
        } else {
            ns / ticks
        }
    }
}

impl Default for TickClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU and only reads the counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tsc() -> u64 {
    0
}

/// The TSC ticks at a constant rate in all power states (Linux cpu flags).
fn invariant_tsc() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let Some(flags) = info.lines().find(|l| l.starts_with("flags")) else {
        return false;
    };
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    has("constant_tsc") && has("nonstop_tsc")
}

#[cfg(test)]
mod tick_tests {
    #[test]
    fn ticks_advance_and_convert_to_about_the_elapsed_time() {
        let c = super::TickClock::new();
        let t0 = c.ticks();
        let w = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let ns = (c.ticks() - t0) as f64 * c.ns_per_tick();
        let real = w.elapsed().as_nanos() as f64;
        assert!((ns - real).abs() < real * 0.2, "{ns} vs {real}");
    }
}
