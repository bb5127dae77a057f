//! The transition-count kernel `hmm_transitions` of [`super`] (see
//! [`super`] for the table of all kernels): a register-tiled outer product
//! of the weights `x_t[i]` and the column terms `Q_t[j]` per step.

use super::super::host::XI_BLOCK;
use super::pair::{self as pp, DP, FULL, padd, pexp, pmax2, pshift, psub};
use super::post::cta_tasks;
use super::{PREP_ROWMAX, builder, ld_pair, ld_prep};
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedPtr};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

/// The most threads a CTA of the transition counts has; a CTA of `n`
/// threads ([`transition_threads`]: 256, or 128 when a batch gives few
/// tasks) takes `n` states `i` × [`XI_COLS`] states `j`.
pub const XI_THREADS: u32 = 256;

/// States `j` per CTA task of the transition counts.
pub const XI_COLS: u32 = 32;

/// States `i` × states `j` per thread: the register tile.
const TI: u32 = 8;
const TJ: u32 = 4;

/// Threads across a task's states `j`.
const JLANES: u32 = XI_COLS / TJ;

/// The shared tiles: `Q` ([`XI_BLOCK`] steps × [`XI_COLS`]) and `x`
/// ([`XI_BLOCK`] steps × [`XI_THREADS`] states, a row's stride fixed so
/// that the unrolled steps address it by immediate offsets).
const QT_LEN: u32 = XI_BLOCK as u32 * XI_COLS;
const XT_ROW: u32 = XI_THREADS;
const XT_LEN: u32 = XI_BLOCK as u32 * XT_ROW;

/// Threads per CTA of the transition counts for `batch` sequences of `s`
/// states (`sp` = `S16`): [`XI_THREADS`] where that gives at least two
/// CTA tasks an SM of a large card (264), else 128, so that small batches
/// (batch 8 at S 256: 128 tasks) spread over more SMs.
pub fn transition_threads(batch: usize, s: usize, sp: usize) -> u32 {
    let big = batch * transition_groups(s, sp, XI_THREADS);
    if big >= 264 {
        XI_THREADS
    } else {
        XI_THREADS / 2
    }
}

/// CTA tasks a sequence of the transition counts for `s` states (`sp` =
/// `S16`) with CTAs of `threads` threads: `⌈S / 32⌉` state blocks `j` ×
/// `⌈S16 / threads⌉` row blocks of `threads` states `i`.
pub fn transition_groups(s: usize, sp: usize, threads: u32) -> usize {
    s.div_ceil(XI_COLS as usize) * sp.div_ceil(threads as usize)
}

kernel_params! {
    /// Arguments of `hmm_transitions`: `tasks = batch · groups` CTA tasks,
    /// `groups` = [`transition_groups`] for the launch's CTA size (one of
    /// 128 or 256 threads; a CTA of `n` threads takes `n` states `i`).
    pub struct TransitionArgs => TransitionRegs {
        log_a: Ptr<F32>,
        prep: Ptr<F32>,
        a_til: Ptr<F32>,
        lengths: Ptr<U32>,
        gamma: Ptr<F32>,
        w: Ptr<F32>,
        rh: Ptr<F32>,
        rl: Ptr<F32>,
        flags: Ptr<U32>,
        xi: Ptr<F32>,
        tasks: U64,
        groups: U32,
        t: U32,
        s: U32,
        sp: U32,
    }
}

/// Expected transition counts. A CTA task of `n` threads is [`XI_COLS`]
/// states `j` against `n` states `i` (`⌈S / 32⌉ · ⌈S16 / n⌉` tasks a
/// sequence, [`transition_groups`]); thread `k` holds the 8 × 4 register
/// tile of states `i0 + 8⌊k/8⌋ + (0..8)` × `j0 + 4(k mod 8) + (0..4)`:
/// its `Ã[i][j]`, the block's linear chains `L` and the Kahan sums.
///
/// The steps run in the contract's blocks of [`XI_BLOCK`]: the CTA
/// stages the block's `Q_t[j] = pexp(R_t[j])` (each once a CTA) and its
/// weights `x_t[i]` (16-byte loads) in shared tiles and takes the block's
/// fallback flags as one ballot a warp; then each thread runs the block's
/// steps: one 16-byte load of its 4 `Q` and two of its 8 `x` (broadcast
/// over the warp's lanes of the same rows or columns) and 32 `fma` a
/// step. A whole block without a fallback step runs unrolled (immediate
/// offsets, the first `fma` from `+0`); a short or flagged block runs a
/// loop that tests each step's flag. At the block end `Ã·L` is
/// Kahan-added; a fallback state's term is Kahan-added at its step.
pub fn generate_transitions(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_transitions", sm);
    b.maxntid(XI_THREADS, 1, 1);
    let p = b.params::<TransitionArgs>();
    let qt = b.shared_array::<F32>("qt", QT_LEN, 16);
    let xt = b.shared_array::<F32>("xt", XT_LEN, 16);
    let tid = b.tid_x();
    let nt = b.ntid_x();
    let lane = b.and(tid, 31u32);
    let tj = b.and(tid, JLANES - 1);
    let ti = b.shr(tid, JLANES.trailing_zeros());
    let qcol = b.shl(tj, TJ.trailing_zeros());
    let qbase = b.shared_elem(&qt, qcol);
    let xrow = b.shl(ti, TI.trailing_zeros());
    let xbase = b.shared_elem(&xt, xrow);
    // Row blocks of nt states a sequence; the x staging: thread k takes
    // quad g = k mod (nt/4) of the steps r0 + 4m (r0 = k div (nt/4)).
    let nt1 = b.sub(nt, 1u32);
    let nib = b.add(p.sp, nt1);
    let nib = b.div(nib, nt);
    let quads = b.shr(nt, 2u32);
    let g = b.rem(tid, quads);
    let r0 = b.div(tid, quads);
    let g4 = b.shl(g, 2u32);
    let xst = b.mad_lo(r0, XT_ROW, g4);
    let xst = b.shared_elem(&xt, xst);
    // The Q staging: rows of nt/32 steps a pass, strides in R (bytes)
    // and in the tile (bytes); the x staging's strides (4 steps).
    let qcell = b.shared_elem(&qt, tid);
    let qr = b.shr(tid, 5u32);
    let qrows = b.shr(nt, 5u32);
    let rs = b.mul_lo(qrows, p.s);
    let rs = b.shl(rs, 2u32);
    let rstep = b.u32_to_u64(rs);
    let qstep = b.shl(qrows, (XI_COLS * 4).trailing_zeros());
    let wstep = b.shl(p.sp, 4u32);
    let wstep = b.u32_to_u64(wstep);
    cta_tasks(&mut b, p.tasks, p.groups, |b, seq, group| {
        let jb = b.div(group, nib);
        let ib = b.rem(group, nib);
        let j0 = b.mul_lo(jb, XI_COLS);
        let i0 = b.mul_lo(ib, nt);
        let task = XiTask::new(b, &p, seq, i0, j0, xrow, qcol, lane);
        b.for_range(0u32, task.steps, XI_BLOCK as u32, |b, t0| {
            let te = b.add(t0, XI_BLOCK as u32);
            let tend = b.min(te, task.steps);
            let n = b.sub(tend, t0);
            // The previous block's readers are done with the tiles.
            b.bar_sync();
            // Q: thread k takes column c = k mod 32 (state j0 + c; a state
            // past S takes state S − 1's, never read) of the steps
            // ⌊k/32⌋ + m·(nt/32), by running pointers; its tile entry
            // starts at k.
            let tr = b.add(t0, qr);
            let k0 = b.mad_lo(tr, p.s, task.jq);
            let ph = b.offset(task.rh, k0);
            let ph = b.ptr_copy(ph);
            let pl = b.offset(task.rl, k0);
            let pl = b.ptr_copy(pl);
            let qa = b.mov(qcell.reg);
            b.for_range(qr, n, qrows, |b, _| {
                let r = DP {
                    h: b.ld_global(ph, 0),
                    l: b.ld_global(pl, 0),
                };
                let q = pexp(b, r);
                b.st_shared(SharedPtr::<F32>::from_reg(qa), 0, q);
                for ptr in [ph, pl] {
                    let nx = b.add(ptr.reg, rstep);
                    b.assign(ptr.reg, nx);
                }
                let nq = b.add(qa, qstep);
                b.assign(qa, nq);
            });
            // x: quad g of the steps r0 + 4m by running pointers; rows
            // past S16 take zeros.
            let i = b.add(i0, g4);
            let iin = b.setp(Cmp::Lt, i, p.sp);
            b.if_else(
                iin,
                |b| {
                    let trow = b.add(t0, r0);
                    let wk = b.mad_lo(trow, p.sp, i);
                    let wp = b.offset(task.wseq, wk);
                    let wp = b.ptr_copy(wp);
                    let xa = b.mov(xst.reg);
                    b.for_range(r0, n, 4u32, |b, _| {
                        let v = b.ld_global_nc_v4(wp, 0);
                        b.st_shared_v4(SharedPtr::<F32>::from_reg(xa), 0, v);
                        let nx = b.add(wp.reg, wstep);
                        b.assign(wp.reg, nx);
                        let na = b.add(xa, 4 * XT_ROW * 4);
                        b.assign(xa, na);
                    });
                },
                |b| {
                    let z = b.mov(0f32);
                    for m in 0..XI_BLOCK as u32 / 4 {
                        b.st_shared_v4(xst, (4 * m * XT_ROW) as i32, [z; 4]);
                    }
                },
            );
            // Lane l takes step t0 + l's fallback flag.
            let tl = b.add(t0, lane);
            let fin = b.setp(Cmp::Lt, tl, tend);
            let f = b.mov(0u32);
            b.if_(fin, |b| {
                let fp = b.offset(task.flags, tl);
                let v = b.ld_global(fp, 0);
                b.assign(f, v);
            });
            let flagged = b.setp(Cmp::Ne, f, 0u32);
            let mask = b.vote_ballot(flagged, FULL);
            b.bar_sync();
            let clean = b.setp(Cmp::Eq, mask, 0u32);
            let whole = b.setp(Cmp::Eq, n, XI_BLOCK as u32);
            let fast = b.pand(clean, whole);
            b.if_else(
                fast,
                |b| task.unrolled(b, qbase, xbase),
                |b| task.looped(b, &p, qbase, xbase, t0, n, mask),
            );
            task.fold(b);
        });
        task.store(b, &p);
    });
    b.finish()
}

/// A thread's registers for one task: its rows `i = ir + (0..8)` and
/// columns `j = jr + (0..4)`, `Ã[i][j]`, the linear chains `L`, the Kahan
/// sums `(sum, comp)` (all row-major, `a·4 + c`), and the sequence's
/// pointers.
struct XiTask {
    seq: Reg<U32>,
    ir: Reg<U32>,
    jr: Reg<U32>,
    /// `min(j0 + lane, S − 1)`: the thread's column of `R` for the tile.
    jq: Reg<U32>,
    steps: Reg<U32>,
    at: Vec<Reg<F32>>,
    lin: Vec<Reg<F32>>,
    sum: Vec<Reg<F32>>,
    comp: Vec<Reg<F32>>,
    rh: GlobalPtr<F32>,
    rl: GlobalPtr<F32>,
    wseq: GlobalPtr<F32>,
    flags: GlobalPtr<U32>,
}

/// Registers of the tile.
const N: usize = (TI * TJ) as usize;

impl XiTask {
    /// The task's constants: `Ã` of the tile in the packed-quad layout
    /// (quad `⌊i/4⌋` at row `j`: `(⌊i/4⌋·S16 + j)·4`; zeros for rows past
    /// `S16`, a column past `S` reading column `S − 1`), sums at `+0`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        seq: Reg<U32>,
        i0: Reg<U32>,
        j0: Reg<U32>,
        xrow: Reg<U32>,
        qcol: Reg<U32>,
        lane: Reg<U32>,
    ) -> XiTask {
        let lp = b.offset(p.lengths, seq);
        let len = b.ld_global(lp, 0);
        let steps = b.max(len, 1u32);
        let steps = b.sub(steps, 1u32);
        let ir = b.add(i0, xrow);
        let jr = b.add(j0, qcol);
        let at: Vec<Reg<F32>> = (0..N).map(|_| b.mov(0f32)).collect();
        let rows_in = b.setp(Cmp::Lt, ir, p.sp);
        let s1 = b.sub(p.s, 1u32);
        b.if_(rows_in, |b| {
            let q0 = b.shr(ir, 2u32);
            for c in 0..TJ as usize {
                let j = b.add(jr, c as u32);
                let j = b.min(j, s1);
                for h in 0..2usize {
                    let qq = b.add(q0, h as u32);
                    let e = b.mad_lo(qq, p.sp, j);
                    let e = b.shl(e, 2u32);
                    let ap = b.offset(p.a_til, e);
                    let v = b.ld_global_nc_v4(ap, 0);
                    for (k, x) in v.into_iter().enumerate() {
                        b.assign(at[(4 * h + k) * TJ as usize + c], x);
                    }
                }
            }
        });
        let lin = (0..N).map(|_| b.mov(0f32)).collect();
        let sum = (0..N).map(|_| b.mov(0f32)).collect();
        let comp = (0..N).map(|_| b.mov(0f32)).collect();
        let ts = b.mul_lo(p.t, p.s);
        let base = b.mul_wide_u32(seq, ts);
        let rh = b.offset64(p.rh, base);
        let rl = b.offset64(p.rl, base);
        let tsp = b.mul_lo(p.t, p.sp);
        let wbase = b.mul_wide_u32(seq, tsp);
        let wseq = b.offset64(p.w, wbase);
        let sbase = b.mul_wide_u32(seq, p.t);
        let flags = b.offset64(p.flags, sbase);
        let jq = b.add(j0, lane);
        let jq = b.min(jq, s1);
        XiTask {
            seq,
            ir,
            jr,
            jq,
            steps,
            at,
            lin,
            sum,
            comp,
            rh,
            rl,
            wseq,
            flags,
        }
    }

    /// A step's 4 `Q` and 8 `x` from the tiles, `k` steps on (`k` a
    /// constant, addressed by immediate offsets).
    fn loads(
        b: &mut KernelBuilder,
        qa: SharedPtr<F32>,
        xa: SharedPtr<F32>,
        k: u32,
    ) -> ([Reg<F32>; 4], [Reg<F32>; 8]) {
        let q = b.ld_shared_v4(qa, (k * XI_COLS) as i32);
        let x0 = b.ld_shared_v4(xa, (k * XT_ROW) as i32);
        let x1 = b.ld_shared_v4(xa, (k * XT_ROW + 4) as i32);
        let x = [x0[0], x0[1], x0[2], x0[3], x1[0], x1[1], x1[2], x1[3]];
        (q, x)
    }

    /// `L[a][c] = fma(x[a], q[c], L[a][c])` (from `+0` where `first`).
    fn fma_row(
        &self,
        b: &mut KernelBuilder,
        q: &[Reg<F32>; 4],
        xa: Reg<F32>,
        a: usize,
        first: bool,
    ) {
        for (c, &qc) in q.iter().enumerate() {
            let l = self.lin[a * TJ as usize + c];
            let v = if first {
                b.ffma(Rounding::Rn, xa, qc, 0f32)
            } else {
                b.ffma(Rounding::Rn, xa, qc, l)
            };
            b.assign(l, v);
        }
    }

    /// A whole block without a fallback step, unrolled.
    fn unrolled(&self, b: &mut KernelBuilder, qa: SharedPtr<F32>, xa: SharedPtr<F32>) {
        for k in 0..XI_BLOCK as u32 {
            let (q, x) = Self::loads(b, qa, xa, k);
            for (a, &xv) in x.iter().enumerate() {
                self.fma_row(b, &q, xv, a, k == 0);
            }
        }
    }

    /// The `n` steps of a short or flagged block from `t0`; `mask` bit
    /// `k` flags step `t0 + k`. Without a flag: two steps an iteration
    /// (the loop control and the pointers' updates halved), then an odd
    /// last step.
    #[allow(clippy::too_many_arguments)]
    fn looped(
        &self,
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        qa: SharedPtr<F32>,
        xa: SharedPtr<F32>,
        t0: Reg<U32>,
        n: Reg<U32>,
        mask: Reg<U32>,
    ) {
        for &l in &self.lin {
            b.assign(l, 0f32);
        }
        let clean = b.setp(Cmp::Eq, mask, 0u32);
        b.if_else(
            clean,
            |b| {
                let pairs = b.and(n, !1u32);
                let qbytes = b.shl(pairs, (XI_COLS * 4).trailing_zeros());
                let qend = b.add(qa.reg, qbytes);
                let xk = b.mov(xa.reg);
                b.for_range(qa.reg, qend, 2 * XI_COLS * 4, |b, qk| {
                    let qk = SharedPtr::<F32>::from_reg(qk);
                    let xp = SharedPtr::<F32>::from_reg(xk);
                    for k in 0..2 {
                        let (q, x) = Self::loads(b, qk, xp, k);
                        for (a, &xv) in x.iter().enumerate() {
                            self.fma_row(b, &q, xv, a, false);
                        }
                    }
                    let nx = b.add(xk, 2 * XT_ROW * 4);
                    b.assign(xk, nx);
                });
                let odd = b.setp(Cmp::Lt, pairs, n);
                b.if_(odd, |b| {
                    let qk = SharedPtr::<F32>::from_reg(qend);
                    let xp = SharedPtr::<F32>::from_reg(xk);
                    let (q, x) = Self::loads(b, qk, xp, 0);
                    for (a, &xv) in x.iter().enumerate() {
                        self.fma_row(b, &q, xv, a, false);
                    }
                });
            },
            |b| self.flagged(b, p, qa, xa, t0, n, mask),
        );
    }

    /// The `n` steps of a flagged block, each step's flag tested.
    #[allow(clippy::too_many_arguments)]
    fn flagged(
        &self,
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        qa: SharedPtr<F32>,
        xa: SharedPtr<F32>,
        t0: Reg<U32>,
        n: Reg<U32>,
        mask: Reg<U32>,
    ) {
        b.for_range(0u32, n, 1u32, |b, k| {
            let qk = b.mul_lo(k, XI_COLS);
            let qk = b.shared_offset(qa, qk);
            let xk = b.mul_lo(k, XT_ROW);
            let xk = b.shared_offset(xa, xk);
            let (q, x) = Self::loads(b, qk, xk, 0);
            let bit = b.shr(mask, k);
            let bit = b.and(bit, 1u32);
            let plain = b.setp(Cmp::Eq, bit, 0u32);
            b.if_else(
                plain,
                |b| {
                    for (a, &xv) in x.iter().enumerate() {
                        self.fma_row(b, &q, xv, a, false);
                    }
                },
                |b| {
                    let tt = b.add(t0, k);
                    let row = b.mul_lo(tt, p.s);
                    for (a, &xv) in x.iter().enumerate() {
                        self.flagged_row(b, p, &q, xv, a, row);
                    }
                },
            );
        });
    }

    /// Row `a` at a step with a fallback flag: a negative `x` marks a
    /// fallback state (`x = gamma / (−σ)`), whose term `(−x)·y` with `y =
    /// pexp(v_j ⊖ pmax_k v_k)` is Kahan-added at once (none where `x =
    /// 0`); a linear state's `x` goes into `L`. `row = t·S`.
    fn flagged_row(
        &self,
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        q: &[Reg<F32>; 4],
        xa: Reg<F32>,
        a: usize,
        row: Reg<U32>,
    ) {
        let bits = b.f32_bits(xa);
        let neg = b.setp(Cmp::Ge, bits, 0x8000_0000u32);
        b.if_else(
            neg,
            |b| {
                let xv = b.fneg(xa);
                let nz = b.setp(Cmp::Neu, xv, 0f32);
                let i = b.add(self.ir, a as u32);
                let iin = b.setp(Cmp::Lt, i, p.s);
                let go = b.pand(nz, iin);
                b.if_(go, |b| {
                    let fb = Fallback::new(b, p, i, row, self.rh, self.rl);
                    for c in 0..TJ as usize {
                        let j = b.add(self.jr, c as u32);
                        let jin = b.setp(Cmp::Lt, j, p.s);
                        b.if_(jin, |b| {
                            let y = fb.term(b, p, j);
                            let v = b.fmul(Rounding::Rn, xv, y);
                            self.kahan(b, a * TJ as usize + c, v);
                        });
                    }
                });
            },
            |b| self.fma_row(b, q, xa, a, false),
        );
    }

    /// Block end: Kahan-add `Ã·L`.
    fn fold(&self, b: &mut KernelBuilder) {
        for k in 0..N {
            let v = b.fmul(Rounding::Rn, self.at[k], self.lin[k]);
            self.kahan(b, k, v);
        }
    }

    /// Kahan-add `v` to entry `k`'s sum.
    fn kahan(&self, b: &mut KernelBuilder, k: usize, v: Reg<F32>) {
        let y = b.fsub(Rounding::Rn, v, self.comp[k]);
        let t = b.fadd(Rounding::Rn, self.sum[k], y);
        let d = b.fsub(Rounding::Rn, t, self.sum[k]);
        let c = b.fsub(Rounding::Rn, d, y);
        b.assign(self.comp[k], c);
        b.assign(self.sum[k], t);
    }

    /// `xi[i][j] = σ` for the tile's entries inside `S × S`.
    fn store(&self, b: &mut KernelBuilder, p: &TransitionRegs) {
        let ss = b.mul_lo(p.s, p.s);
        let obase = b.mul_wide_u32(self.seq, ss);
        let out = b.offset64(p.xi, obase);
        for a in 0..TI {
            let i = b.add(self.ir, a);
            let iin = b.setp(Cmp::Lt, i, p.s);
            b.if_(iin, |b| {
                for c in 0..TJ {
                    let j = b.add(self.jr, c);
                    let jin = b.setp(Cmp::Lt, j, p.s);
                    b.if_(jin, |b| {
                        let idx = b.mad_lo(i, p.s, j);
                        let q = b.offset(out, idx);
                        b.st_global(q, 0, self.sum[(a * TJ + c) as usize]);
                    });
                }
            });
        }
    }
}

/// A fallback state `i`'s terms at a step (`R` row at `row` of `rh`/`rl`):
/// `y_j = pexp(v_j ⊖ pmax_k v_k)`, `v_k = lr[i][k] + R[k]`; the maximum
/// once a state, the terms a column.
struct Fallback {
    m: DP,
    rowmax: Reg<F32>,
    arow: Reg<U32>,
    row: Reg<U32>,
    rh: GlobalPtr<F32>,
    rl: GlobalPtr<F32>,
}

impl Fallback {
    fn new(
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        i: Reg<U32>,
        row: Reg<U32>,
        rh: GlobalPtr<F32>,
        rl: GlobalPtr<F32>,
    ) -> Fallback {
        let rowmax = ld_prep(b, p.prep, PREP_ROWMAX, p.sp, i);
        let arow = b.mul_lo(i, p.s);
        let mut f = Fallback {
            m: pp::constant(b, f32::NAN, 0.0),
            rowmax,
            arow,
            row,
            rh,
            rl,
        };
        let m = f.m;
        b.for_range(0u32, p.s, 1u32, |b, k| {
            let v = f.v(b, p, k);
            let nm = pmax2(b, m, v);
            pp::assign(b, m, nm);
        });
        f.m = pp::canon(b, m);
        f
    }

    /// `v_k = lr[i][k] + R[k]`.
    fn v(&self, b: &mut KernelBuilder, p: &TransitionRegs, k: Reg<U32>) -> DP {
        let ai = b.add(self.arow, k);
        let ap = b.offset(p.log_a, ai);
        let la = b.ld_global(ap, 0);
        let lr = pshift(b, la, self.rowmax);
        let kr = b.add(self.row, k);
        let r = ld_pair(b, self.rh, self.rl, kr);
        padd(b, lr, r)
    }

    /// `y_j`.
    fn term(&self, b: &mut KernelBuilder, p: &TransitionRegs, j: Reg<U32>) -> Reg<F32> {
        let v = self.v(b, p, j);
        let d = psub(b, v, self.m);
        pexp(b, d)
    }
}
