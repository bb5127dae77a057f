//! The GPU benches' timing rules, written once (included by every GPU
//! bench with `#[path = "common/timing.rs"] mod timing;`):
//!
//! 1. **Warm-up first**: [`WARMUP`] launches and a synchronisation before
//!    anything is timed (module load, JIT, first-touch of the buffers).
//! 2. **Per-launch time = N queued launches between two CUDA events**:
//!    the stream is synchronised, then [`Stream::timed`] records an event,
//!    [`QUEUED`] launches are queued back to back, a second event is
//!    recorded and the stream synchronised; the per-launch time is the
//!    device time between the two events (`cuEventElapsedTime`) over N,
//!    and the figure reported is the median of [`REPS`] such intervals.
//!    This is how `scripts/torch_baselines.py` times PyTorch (ten queued
//!    launches between two CUDA events), so launch latency weighs on both
//!    sides alike and the host's synchronisation return does not count.
//! 3. **Single launch plus synchronisation beside it** (host clock,
//!    `std::time::Instant`): the median of [`REPS`] intervals of one
//!    launch and one synchronisation, the latency a caller who waits for
//!    each result sees.
//! 4. Where the stream has no device clock (the simulator: `Stream::timed`
//!    gives `None`) the queued interval is read on the host clock instead,
//!    and [`Timed::clock`] says so.
//! 5. Criterion's own GPU measurements use the same queued form
//!    ([`iter_queued`]: `iters` launches between two events).
//! 6. Operations that download their result (the routed top-s end to end
//!    in `benches/score_kernels.rs` and `benches/resident.rs`) wait inside
//!    each call: queued and single figures are then the same thing, a
//!    call's latency, and are reported as such.
//!
//! Without a GPU none of this runs on a device: the benches skip their GPU
//! part (and `cargo test --benches` runs only their host checks).

#![allow(dead_code)] // each bench uses part of it

use std::time::{Duration, Instant};

use ptxsmith::runtime::Stream;

/// Untimed launches before timing.
pub const WARMUP: usize = 3;
/// Launches queued per timed interval.
pub const QUEUED: usize = 10;
/// Timed intervals; the median is reported.
pub const REPS: usize = 10;

/// Which clock measured the queued launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// CUDA events around the queued launches (device time).
    Events,
    /// The host's monotonic clock around the launches and a
    /// synchronisation (a stream without a device clock).
    Host,
}

impl Clock {
    fn name(self) -> &'static str {
        match self {
            Clock::Events => "CUDA events",
            Clock::Host => "host clock",
        }
    }
}

/// A kernel's (or an operation's) time by the rules above.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    /// Seconds per launch, [`QUEUED`] launches queued between two events
    /// (median of [`REPS`]).
    pub per_launch_s: f64,
    /// Seconds of one launch plus a synchronisation, host clock (median of
    /// [`REPS`]).
    pub single_s: f64,
    /// The clock of [`Timed::per_launch_s`].
    pub clock: Clock,
}

impl Timed {
    /// `X µs per launch (N queued, CUDA events); one launch + sync Y µs`.
    pub fn describe(&self) -> String {
        format!(
            "{:.1} µs per launch ({QUEUED} queued, {}); one launch + sync {:.1} µs",
            self.per_launch_s * 1e6,
            self.clock.name(),
            self.single_s * 1e6
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `n` calls of `launch` (which queues its work on `st` without waiting)
/// between two events of `st`: the device time, or the host clock's where
/// the stream has none.
fn queued(st: &Stream, n: u64, launch: &mut impl FnMut()) -> (Duration, Clock) {
    st.synchronize().unwrap();
    let t = Instant::now();
    let ((), device) = st
        .timed(|_| {
            for _ in 0..n {
                launch();
            }
            Ok(())
        })
        .unwrap();
    match device {
        Some(d) => (d, Clock::Events),
        None => (t.elapsed(), Clock::Host),
    }
}

/// Time `launch`, which queues its work on `st` without waiting, by the
/// rules of the [module docs](self).
pub fn time(st: &Stream, mut launch: impl FnMut()) -> Timed {
    for _ in 0..WARMUP {
        launch();
    }
    st.synchronize().unwrap();
    let mut clock = Clock::Events;
    let per_launch_s = median(
        (0..REPS)
            .map(|_| {
                let (d, c) = queued(st, QUEUED as u64, &mut launch);
                clock = c;
                d.as_secs_f64() / QUEUED as f64
            })
            .collect(),
    );
    let single_s = median(
        (0..REPS)
            .map(|_| {
                let t = Instant::now();
                launch();
                st.synchronize().unwrap();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    Timed {
        per_launch_s,
        single_s,
        clock,
    }
}

/// Criterion's `iter_custom` body for queued launches: `iters` calls of
/// `launch` between two events of `st`, the elapsed device time (host
/// clock where the stream has no device clock).
pub fn iter_queued(st: &Stream, iters: u64, mut launch: impl FnMut()) -> Duration {
    queued(st, iters, &mut launch).0
}
