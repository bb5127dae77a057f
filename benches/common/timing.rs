//! The GPU benches' timing rules, written once (included by every GPU
//! bench with `#[path = "common/timing.rs"] mod timing;`):
//!
//! 1. **Warm-up first**: [`WARMUP`] launches and a synchronisation before
//!    anything is timed (module load, JIT, first-touch of the buffers).
//! 2. **Per-launch time = N queued launches between two clock reads**: the
//!    stream is synchronised, the clock read, [`QUEUED`] launches queued
//!    back to back, the stream synchronised again and the clock read; the
//!    per-launch time is that interval over N, and the figure reported is
//!    the median of [`REPS`] such intervals. This is how
//!    `scripts/torch_baselines.py` times PyTorch (ten queued launches
//!    between two CUDA events), so launch and synchronisation latency
//!    weigh on both sides alike.
//! 3. **Single launch plus synchronisation beside it**: the median of
//!    [`REPS`] intervals of one launch and one synchronisation, the
//!    latency a caller who waits for each result sees.
//! 4. The clock is the host's monotonic clock (`std::time::Instant`): the
//!    interval also holds the last synchronisation's return, a few
//!    microseconds that N launches amortise (`cudaEventElapsedTime` would
//!    not count it). `Stream::timed` measures with CUDA events (the tuner
//!    uses it); these helpers take closures, not a stream, and have not
//!    moved to it yet.
//! 5. Criterion's own GPU measurements use the same queued form
//!    ([`iter_queued`]: `iters` launches, then one synchronisation).
//! 6. Operations that download their result (the routed top-s end to end
//!    in `benches/score_kernels.rs` and `benches/resident.rs`) wait inside
//!    each call: queued and single figures are then the same thing, a
//!    call's latency, and are reported as such.
//!
//! Without a GPU none of this runs: the benches skip their GPU part (and
//! `cargo test --benches` runs only their host checks).

#![allow(dead_code)] // each bench uses part of it

use std::time::{Duration, Instant};

/// Untimed launches before timing.
pub const WARMUP: usize = 3;
/// Launches queued per timed interval.
pub const QUEUED: usize = 10;
/// Timed intervals; the median is reported.
pub const REPS: usize = 10;

/// A kernel's (or an operation's) time by the rules above.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    /// Seconds per launch, [`QUEUED`] launches queued between two clock
    /// reads (median of [`REPS`]).
    pub per_launch_s: f64,
    /// Seconds of one launch plus a synchronisation (median of [`REPS`]).
    pub single_s: f64,
}

impl Timed {
    /// `per-launch X µs (N queued); one launch + sync Y µs`.
    pub fn describe(&self) -> String {
        format!(
            "{:.1} µs per launch ({QUEUED} queued, host clock); one launch + sync {:.1} µs",
            self.per_launch_s * 1e6,
            self.single_s * 1e6
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Time `launch` (which queues the work without waiting) with `sync`
/// (which waits for the stream) by the rules of the [module docs](self).
pub fn time(mut launch: impl FnMut(), sync: impl Fn()) -> Timed {
    for _ in 0..WARMUP {
        launch();
    }
    sync();
    let per_launch_s = median(
        (0..REPS)
            .map(|_| {
                sync();
                let t = Instant::now();
                for _ in 0..QUEUED {
                    launch();
                }
                sync();
                t.elapsed().as_secs_f64() / QUEUED as f64
            })
            .collect(),
    );
    let single_s = median(
        (0..REPS)
            .map(|_| {
                let t = Instant::now();
                launch();
                sync();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    Timed {
        per_launch_s,
        single_s,
    }
}

/// Criterion's `iter_custom` body for queued launches: `iters` launches,
/// one synchronisation, the elapsed time.
pub fn iter_queued(iters: u64, mut launch: impl FnMut(), sync: impl Fn()) -> Duration {
    sync();
    let t = Instant::now();
    for _ in 0..iters {
        launch();
    }
    sync();
    t.elapsed()
}
