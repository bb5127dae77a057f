//! The Viterbi tests' model (`tests/viterbi.rs`, `tests/viterbi_cluster.rs`):
//! log-probability-like inputs from a fixed LCG, lengths cycling through
//! full, half, one (or zero) and full − 1 steps, and the host and
//! simulator runs of it.

use ptxsmith::Sm;
use ptxsmith::kernels::viterbi::{self, host, launch};
use ptxsmith::runtime::Context;

use crate::common::bits;

/// Values in `(−8, 0]` from an LCG seeded with `seed`.
pub fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        -((s >> 8) as f32 / (1u32 << 24) as f32) * 8.0
    }
}

/// One Viterbi problem: `pi[S]`, `a[S·S]`, `b[batch·T·S]`, `lengths[batch]`.
pub struct Model {
    pub pi: Vec<f32>,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub lengths: Vec<u32>,
    pub batch: usize,
    pub t: usize,
    pub s: usize,
}

impl Model {
    /// Random inputs from `seed`; sequence `i` has length `T`, `T/2`,
    /// `min(T, 1)`, `T − 1` by `i % 4`.
    pub fn new(batch: usize, t: usize, s: usize, seed: u32) -> Model {
        let mut r = lcg(seed);
        Model {
            pi: (0..s).map(|_| r()).collect(),
            a: (0..s * s).map(|_| r()).collect(),
            b: (0..batch * t * s).map(|_| r()).collect(),
            lengths: (0..batch)
                .map(|i| [t, t / 2, t.min(1), t.saturating_sub(1)][i % 4] as u32)
                .collect(),
            batch,
            t,
            s,
        }
    }
    pub fn shape(&self) -> viterbi::Shape {
        viterbi::Shape {
            batch: self.batch,
            t: self.t,
            s: self.s,
        }
    }
    /// The host model's result.
    pub fn host(&self) -> viterbi::Viterbi {
        host::viterbi(
            &self.pi,
            &self.a,
            &self.b,
            &self.lengths,
            self.batch,
            self.t,
            self.s,
        )
        .unwrap()
    }
    /// The kernels' result on the simulator of `sm`.
    pub fn sim(&self, sm: Sm) -> viterbi::Viterbi {
        let ctx = Context::sim(sm);
        launch::viterbi_on(
            &ctx.default_stream(),
            self.shape(),
            &self.lengths,
            &self.pi,
            &self.a,
            &self.b,
        )
        .unwrap()
    }
}

/// Paths equal and scores equal bit for bit.
pub fn assert_same(got: &viterbi::Viterbi, want: &viterbi::Viterbi, what: &str) {
    assert_eq!(got.paths, want.paths, "{what}: paths");
    assert_eq!(bits(&got.scores), bits(&want.scores), "{what}: scores");
}
