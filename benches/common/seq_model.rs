//! The sequence benches' model, written once (included by `benches/hmm.rs`
//! and `benches/viterbi.rs` with `#[path = "common/seq_model.rs"] mod
//! seq_model;`): `log_pi [S]`, `log_a [S, S]`, `log_b [batch, T, S]` drawn in
//! that order from one LCG as `ln(0.1 + 0.9u)`, and full lengths.

/// `(log_pi, log_a, log_b, lengths)` for `batch` sequences of `t` steps over
/// `s` states; every length is `t`.
pub fn model(batch: usize, t: usize, s: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<u32>) {
    let mut st = 1u32;
    let mut r = move || {
        st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        ((st >> 8) as f32 / (1u32 << 24) as f32 * 0.9 + 0.1).ln()
    };
    (
        (0..s).map(|_| r()).collect(),
        (0..s * s).map(|_| r()).collect(),
        (0..batch * t * s).map(|_| r()).collect(),
        vec![t as u32; batch],
    )
}
