//! `hmm_transitions`' tiling on the simulator, bit for bit against the host
//! model: a CTA task of `n` threads (128 or 256) is 32 states `j` against
//! `n` states `i` (rows past `S16` and columns past `S` idle), each thread
//! an 8 × 4 register tile; the steps in blocks of 32 through shared tiles
//! of `Q` and `x`, a whole flag-free block unrolled, a short or flagged
//! one looped; and one CTA looping over several tasks (the tiles reused
//! across them).

use ptxsmith::Sm;
use ptxsmith::kernels::hmm::{host, ptx};

mod hmm_common;
use hmm_common::by_hand::run_by_hand;
use hmm_common::{Model, Rng, host_run, issue_model, nan_bits, same_on, switching_model};

/// Row-block groups with idle warps and short blocks, step counts of one
/// and two whole blocks, a partial odd block and none (lengths `t`, `t/2`,
/// `1`, `t − 1` by sequence).
#[test]
fn sim_equals_host_over_the_tiles() {
    // S 100: S16 112, 4 row blocks, the last one short; 4 state blocks j,
    // the last with 28 lanes past S. T 66: 65 steps (two blocks and an
    // odd one), 33 → 32 steps (one block), 1 → none, 65 → 64 (two).
    same_on(
        &issue_model(4, 66, 100, 5, true),
        &[Sm::Sm80],
        "S 100, T 66",
    );
    // S 200: S16 208, 7 row blocks (a group of 4 and one of 3 with an idle
    // warp, the last block short). T 36: 35 steps, 18 → 17, 1, 35 → 34.
    same_on(
        &issue_model(4, 36, 200, 6, true),
        &[Sm::Sm90],
        "S 200, T 36",
    );
    // S 16: 16 rows of 128, 16 columns past S.
    same_on(&issue_model(3, 40, 16, 7, true), &[Sm::Sm80], "S 16, T 40");
    // CTAs of 256 threads (the library takes them at large batches): S
    // 300 (S16 304: a row block of 256 and one of 48, the last column
    // block 12 wide), lengths 66, 33, 1, 65.
    let m = issue_model(4, 66, 300, 8, true);
    let want = host_run(&m);
    let groups = ptx::transition_groups(m.s, 304, ptx::XI_THREADS);
    let got = run_by_hand(&m, Sm::Sm90, ptx::XI_THREADS, (m.batch * groups) as u32);
    assert_eq!(nan_bits(&got.xi), nan_bits(&want.xi), "256 threads");
}

/// The fallback: in the ring every step is flagged (the flagged blocks'
/// loop throughout, full and short row blocks); in the dense model with
/// transitions of `gap` and a few `−inf` emissions only some steps are,
/// so blocks mix flagged steps with plain ones (the ballot's bits).
#[test]
fn sim_equals_host_with_flagged_steps() {
    for (s, dwell, gap) in [(40, 45, -200f32), (48, 20, -1e30)] {
        let m = switching_model(2, 100, s, gap, dwell, 11);
        let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
        assert!(fb.backward > 0, "S {s}: no fallback");
        same_on(&m, &[Sm::Sm80], &format!("ring S {s}, dwell {dwell}"));
    }
    for (s, dwell, gap) in [(8, 13, -200f32), (40, 7, -1e30)] {
        let m = sparse_switches(s, dwell, gap);
        let (_, fb) = host::forward_backward_counted(m.shape(), &m.inputs()).unwrap();
        assert!(fb.backward > 0, "S {s}: no fallback");
        same_on(
            &m,
            &[Sm::Sm80],
            &format!("sparse switches S {s}, dwell {dwell}"),
        );
    }
}

/// The ring of [`switching_model`] whose emissions allow every state but
/// around the switches: the last step of each dwell allows only the
/// current state and the next step only the next one, so the path must
/// take the `gap` transition there (a fallback state with an `O(1)`
/// posterior) while the steps between have no fallback state (every `Q`
/// positive, every state able to stay): flagged steps every `dwell`
/// steps, at varying bits of the blocks.
fn sparse_switches(s: usize, dwell: usize, gap: f32) -> Model {
    let (batch, t) = (2, 100);
    let mut m = switching_model(batch, t, s, gap, dwell, 14);
    let mut r = Rng(15);
    for seq in 0..batch {
        for tt in 0..t {
            let c = (tt / dwell) % s;
            let row = &mut m.b[(seq * t + tt) * s..][..s];
            let pinned = tt % dwell == dwell - 1 || (tt > 0 && tt % dwell == 0);
            for (j, x) in row.iter_mut().enumerate() {
                *x = if !pinned || j == c {
                    r.normal() as f32
                } else {
                    f32::NEG_INFINITY
                };
            }
        }
    }
    m
}

/// One CTA (then two) runs every task of a batch, so each CTA reuses the
/// `Q` tile across tasks and sequences of other lengths: the kernels
/// launched by hand with the transition counts' grid cut down.
#[test]
fn transitions_with_fewer_ctas_than_tasks() {
    let m = issue_model(3, 40, 72, 21, true);
    let want = host_run(&m);
    for threads in [128u32, 256] {
        for grid in [1u32, 2] {
            let xi = run_cut(&m, threads, grid);
            assert_eq!(
                nan_bits(&xi),
                nan_bits(&want.xi),
                "{threads} threads, grid {grid}"
            );
        }
    }
}

/// Every kernel of the pass on the simulator (sm_80 PTX), the transition
/// counts in CTAs of `threads` on `grid` CTAs; returns `xi`.
fn run_cut(m: &Model, threads: u32, grid: u32) -> Vec<f32> {
    let groups = ptx::transition_groups(m.s, m.s.div_ceil(16) * 16, threads);
    assert!(m.batch * groups > 2 * grid as usize);
    run_by_hand(m, Sm::Sm80, threads, grid).xi
}
