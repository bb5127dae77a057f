//! Pieces shared by the families that work on a batch of sequences with
//! their own lengths (`viterbi`, `hmm`): the host-side length checks and
//! the kernels' per-sequence preamble (one CTA per sequence).

use crate::dsl::types::{F32, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, Rounding, SharedArray};
use crate::error::{ArgError, Result};
use crate::kernels::check;

/// One length per sequence, each at most `t`.
pub(crate) fn validate_lengths(
    family: &str,
    lengths: &[u32],
    batch: usize,
    t: usize,
) -> Result<()> {
    check::len(family, "lengths", lengths.len(), batch, "batch")?;
    if let Some((b, &l)) = lengths.iter().enumerate().find(|(_, l)| **l as usize > t) {
        return Err(ArgError::new(
            format!("lengths[{b}]"),
            format!("at most T = {t}"),
            l.to_string(),
        )
        .with_message(format!("{family}: lengths[{b}] = {l} exceeds T = {t}"))
        .into());
    }
    Ok(())
}

/// The registers every per-sequence kernel starts from.
#[derive(Clone, Copy)]
pub(crate) struct SeqCta {
    /// The sequence (`ctaid.x`).
    pub seq: Reg<U32>,
    pub tid: Reg<U32>,
    pub nt: Reg<U32>,
    /// `lengths[seq]`.
    pub len: Reg<U32>,
    /// `T · S`: the elements of one sequence (no kernel reads it today;
    /// ptxas drops the multiply then).
    #[allow(dead_code)]
    pub ts: Reg<U32>,
    /// `seq · T · S`: the sequence's first element in `[batch, T, S]`.
    pub base: Reg<U64>,
    /// `tid == 0`.
    pub first_thread: Reg<Pred>,
}

/// Read the sequence, thread and length registers of a kernel launched
/// with one CTA per sequence over `[batch, T, S]` data.
pub(crate) fn seq_cta(
    b: &mut KernelBuilder,
    lengths: GlobalPtr<U32>,
    t: Reg<U32>,
    s: Reg<U32>,
) -> SeqCta {
    let seq = b.ctaid_x();
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let lp = b.offset(lengths, seq);
    let len = b.ld_global(lp, 0);
    let ts = b.mul_lo(t, s);
    let base = b.mul_wide_u32(seq, ts);
    let first_thread = b.setp(Cmp::Eq, tid, 0u32);
    SeqCta {
        seq,
        tid,
        nt,
        len,
        ts,
        base,
        first_thread,
    }
}

/// Thread 0 of an empty sequence writes `+0.0` to `per_seq[seq]` (its
/// score or log-likelihood); returns the "length > 0" predicate.
pub(crate) fn zero_if_empty(
    b: &mut KernelBuilder,
    c: &SeqCta,
    per_seq: GlobalPtr<F32>,
) -> Reg<Pred> {
    let empty = b.setp(Cmp::Eq, c.len, 0u32);
    let write_zero = b.pand(empty, c.first_thread);
    b.if_(write_zero, |b| {
        let p = b.offset(per_seq, c.seq);
        b.st_global(p, 0, 0f32);
    });
    b.pnot(empty)
}

/// Row 0 of the recursion, `log_pi[j] + log_b[seq, 0, j]` (`add.rn`), into
/// the first half of `buf` and, when given, the sequence's global row 0.
pub(crate) fn first_row(
    b: &mut KernelBuilder,
    c: &SeqCta,
    s: Reg<U32>,
    log_pi: GlobalPtr<F32>,
    seq_b: GlobalPtr<F32>,
    buf: &SharedArray<F32>,
    global: Option<GlobalPtr<F32>>,
) {
    b.for_range(c.tid, s, c.nt, |b, j| {
        let pp = b.offset(log_pi, j);
        let pi = b.ld_global(pp, 0);
        let ep = b.offset(seq_b, j);
        let e = b.ld_global(ep, 0);
        let v = b.fadd(Rounding::Rn, pi, e);
        let sp = b.shared_elem(buf, j);
        b.st_shared(sp, 0, v);
        if let Some(g) = global {
            let gp = b.offset(g, j);
            b.st_global(gp, 0, v);
        }
    });
    b.bar_sync();
}
