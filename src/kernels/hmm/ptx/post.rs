//! The posteriors and transition-count kernels of [`super`] (see
//! [`super`] for the table of all kernels).
//!
//! Both loop over CTA tasks with a 64-bit counter (`task = ctaid, ctaid +
//! nctaid, …` below `tasks`), so any batch fits one launch.

use super::super::host::XI_BLOCK;
use super::pair::{self as pp, DP, FULL, padd, pexp, pmax2, pshift, psub};
use super::{PREP_ROWMAX, WARPS, builder, ld_pair, ld_prep};
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedPtr, ShflMode};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

/// States `i` per thread of the transition counts (a warp's task is
/// `XI_ROWS` states `i` × 32 states `j`). The padded count `S16` is a
/// multiple of 16 only, so a sequence's last row block may hold 16 states
/// `i` (that task runs a 16-row copy of the loop, which reads no `Ã` quad
/// or weight past the padded buffers).
pub const XI_ROWS: u32 = 32;

/// Threads per CTA of the transition counts: 4 warps, so that at small
/// batches (8 sequences × 64 warp tasks at S 256) the CTAs spread over
/// more SMs; at ~204 registers a thread two such CTAs fit an SM, the same
/// 8 warps as one CTA of 256.
pub const XI_THREADS: u32 = 128;

/// Warps per CTA of the transition counts (a group of warp tasks).
const XI_WARPS: u32 = XI_THREADS / 32;

/// CTA tasks a sequence of the transition counts for `s` states (`sp` =
/// `S16`): `⌈s / 32⌉` state blocks `j` × `⌈⌈sp / 32⌉ / 4⌉` groups of row
/// blocks. Where 4 divides the row blocks (e.g. S 256) this is the
/// `⌈row blocks · ⌈s / 32⌉ / 4⌉` of the warp-task layout before.
pub fn transition_groups(s: usize, sp: usize) -> usize {
    let nib = sp.div_ceil(XI_ROWS as usize);
    s.div_ceil(32) * nib.div_ceil(XI_WARPS as usize)
}

/// States `i` of the short last row block where `S16 % XI_ROWS = 16`.
const XI_HALF: u32 = XI_ROWS / 2;

kernel_params! {
    /// Arguments of `hmm_posteriors`: `tasks = batch · chunks` CTA tasks,
    /// each a sequence's positions `t ≡ chunk·8 + warp (mod chunks·8)`.
    pub struct PosteriorArgs => PosteriorRegs {
        lengths: Ptr<U32>,
        alpha: Ptr<F32>,
        gamma: Ptr<F32>,
        beta: Ptr<F32>,
        beta_lo: Ptr<F32>,
        cnorm: Ptr<F32>,
        dnorm: Ptr<F32>,
        w: Ptr<F32>,
        tasks: U64,
        chunks: U32,
        t: U32,
        s: U32,
        sp: U32,
    }
}

kernel_params! {
    /// Arguments of `hmm_transitions`: `tasks = batch · groups` CTA tasks
    /// of [`XI_THREADS`] threads, `groups` = [`transition_groups`], a
    /// group being 32 states `j` against 4 row blocks of 32 states `i`
    /// (16 in a last short row block), a warp each.
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

/// `for task in ctaid.. step nctaid while task < tasks`, with `(seq,
/// sub) = (task / per, task % per)`.
fn cta_tasks(
    b: &mut KernelBuilder,
    tasks: Reg<U64>,
    per: Reg<U32>,
    body: impl FnOnce(&mut KernelBuilder, Reg<U32>, Reg<U32>),
) {
    let cta = b.ctaid_x();
    let nc = b.nctaid_x();
    let task = b.u32_to_u64(cta);
    let step = b.u32_to_u64(nc);
    let per64 = b.u32_to_u64(per);
    b.while_(
        |b| b.setp(Cmp::Lt, task, tasks),
        |b| {
            let seq = b.div(task, per64);
            let sub = b.rem(task, per64);
            let seq = b.u64_to_u32(seq);
            let sub = b.u64_to_u32(sub);
            body(b, seq, sub);
            let next = b.add(task, step);
            b.assign(task, next);
        },
    );
}

/// `gamma`, the final `log_alpha` / `log_beta` in place, and `w` turned
/// into `x = gamma / w` (linear) or `gamma / (−σ)` (fallback, negative).
pub fn generate_posteriors(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_posteriors", sm);
    let p = b.params::<PosteriorArgs>();
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let stride = b.mul_lo(p.chunks, WARPS);
    cta_tasks(&mut b, p.tasks, p.chunks, |b, seq, chunk| {
        let lp = b.offset(p.lengths, seq);
        let len = b.ld_global(lp, 0);
        let start = b.mad_lo(chunk, WARPS, warp);
        let ts = b.mul_lo(p.t, p.s);
        let base = b.mul_wide_u32(seq, ts);
        let ah = b.offset64(p.alpha, base);
        let al = b.offset64(p.gamma, base);
        let bh = b.offset64(p.beta, base);
        let bl = b.offset64(p.beta_lo, base);
        let tsp = b.mul_lo(p.t, p.sp);
        let wbase = b.mul_wide_u32(seq, tsp);
        let wrow0 = b.offset64(p.w, wbase);
        let t2 = b.shl(p.t, 1u32);
        let nbase = b.mul_wide_u32(seq, t2);
        let cn = b.offset64(p.cnorm, nbase);
        let dn = b.offset64(p.dnorm, nbase);
        b.for_range(start, p.t, stride, |b, tt| {
            let row = b.mul_lo(tt, p.s);
            let inside = b.setp(Cmp::Lt, tt, len);
            let r = Row {
                lane,
                tt,
                len,
                row,
                ah,
                al,
                bh,
                bl,
                wrow0,
                cn,
                dn,
            };
            b.if_else(
                inside,
                |b| posterior_row(b, &p, &r),
                |b| {
                    b.for_range(lane, p.s, 32u32, |b, i| {
                        let k = b.add(row, i);
                        for (dst, v) in
                            [(ah, f32::NEG_INFINITY), (bh, f32::NEG_INFINITY), (al, 0.0)]
                        {
                            let q = b.offset(dst, k);
                            b.st_global(q, 0, v);
                        }
                    });
                },
            );
        });
    });
    b.finish()
}

/// The registers of one position of a sequence.
#[derive(Clone, Copy)]
struct Row {
    lane: Reg<U32>,
    tt: Reg<U32>,
    len: Reg<U32>,
    /// `tt · S`.
    row: Reg<U32>,
    ah: GlobalPtr<F32>,
    al: GlobalPtr<F32>,
    bh: GlobalPtr<F32>,
    bl: GlobalPtr<F32>,
    wrow0: GlobalPtr<F32>,
    cn: GlobalPtr<F32>,
    dn: GlobalPtr<F32>,
}

/// One position `tt < len` of a sequence, by one warp.
fn posterior_row(b: &mut KernelBuilder, p: &PosteriorRegs, r: &Row) {
    let Row {
        lane,
        tt,
        len,
        row,
        ah,
        al,
        bh,
        bl,
        wrow0,
        cn,
        dn,
    } = *r;
    let w_of = |b: &mut KernelBuilder, i: Reg<U32>| {
        let k = b.add(row, i);
        let a = ld_pair(b, ah, al, k);
        let be = ld_pair(b, bh, bl, k);
        padd(b, a, be)
    };
    // m = pmax over the row (lanes, then the warp).
    let m = pp::constant(b, f32::NAN, 0.0);
    b.for_range(lane, p.s, 32u32, |b, i| {
        let w = w_of(b, i);
        let nm = pmax2(b, m, w);
        pp::assign(b, m, nm);
    });
    let mut m = DP { h: m.h, l: m.l };
    for off in [16u32, 8, 4, 2, 1] {
        let h = b.shfl(ShflMode::Bfly, m.h, off, 0x1f, FULL);
        let l = b.shfl(ShflMode::Bfly, m.l, off, 0x1f, FULL);
        m = pmax2(b, m, DP { h, l });
    }
    let m = pp::canon(b, m);
    // Pass 2: g = pexp(w ⊖ m) into the gamma buffer (its low part of
    // â is read first), the final log_alpha / log_beta, and the lane sums
    // of g; then the halving tree (lane 0 holds z).
    let t2 = b.shl(tt, 1u32);
    let cp = b.offset(cn, t2);
    let c = DP {
        h: b.ld_global(cp, 0),
        l: b.ld_global(cp, 1),
    };
    let dp = b.offset(dn, t2);
    let d = DP {
        h: b.ld_global(dp, 0),
        l: b.ld_global(dp, 1),
    };
    let z = b.mov(0f32);
    b.for_range(lane, p.s, 32u32, |b, i| {
        let k = b.add(row, i);
        let a = ld_pair(b, ah, al, k);
        let be = ld_pair(b, bh, bl, k);
        let w = padd(b, a, be);
        let dd = psub(b, w, m);
        let g = pexp(b, dd);
        let q = b.offset(al, k);
        b.st_global(q, 0, g);
        for (src, shift, dst) in [(a, c, ah), (be, d, bh)] {
            let x = b.fadd(Rounding::Rn, src.h, shift.h);
            let y = b.fadd(Rounding::Rn, src.l, shift.l);
            let v = b.fadd(Rounding::Rn, x, y);
            let q = b.offset(dst, k);
            b.st_global(q, 0, v);
        }
        let nz = b.fadd(Rounding::Rn, z, g);
        b.assign(z, nz);
    });
    let mut z = z;
    for off in [16u32, 8, 4, 2, 1] {
        let o = b.shfl(ShflMode::Down, z, off, 0x1f, FULL);
        z = b.fadd(Rounding::Rn, z, o);
    }
    let z = b.shfl(ShflMode::Idx, z, 0u32, 0x1f, FULL);
    // Pass 3: gamma = g / z, and x = gamma / w for the transition counts.
    let t1 = b.add(tt, 1u32);
    let has_pair = b.setp(Cmp::Lt, t1, len);
    let wrow = b.mul_lo(tt, p.sp);
    b.for_range(lane, p.s, 32u32, |b, i| {
        let k = b.add(row, i);
        let q = b.offset(al, k);
        let g = b.ld_global(q, 0);
        let gamma = b.fdiv(Rounding::Rn, g, z);
        b.st_global(q, 0, gamma);
        b.if_(has_pair, |b| {
            let kw = b.add(wrow, i);
            let wp = b.offset(wrow0, kw);
            let wv = b.ld_global(wp, 0);
            let x = b.fdiv(Rounding::Rn, gamma, wv);
            b.st_global(wp, 0, x);
        });
    });
}

/// Expected transition counts. A CTA task is one block of 32 states `j`
/// (a lane each) against `XI_WARPS` row blocks of [`XI_ROWS`] states `i`
/// (a warp each; 16 states in the last row block when `S16 % 32 = 16`; a
/// warp past the last row block only helps with the tile), so a sequence
/// has `groups = ⌈S / 32⌉ · ⌈nib / XI_WARPS⌉` tasks, `nib = ⌈S16 / 32⌉`
/// row blocks ([`transition_groups`]).
///
/// The steps run in the contract's blocks of [`XI_BLOCK`]: the CTA first
/// writes the block's `Q_t[j] = pexp(R_t[j])` into a shared tile (each
/// `pexp` once for the CTA's 4 row blocks, not once a warp)
/// and takes the block's fallback flags as one ballot; then every warp
/// runs the block's steps with `Ã[i][j]`, the block sums and their Kahan
/// sums in registers (a step: one shared load of `Q`, the 16-byte loads of
/// the warp's 32 weights `x`, a multiply and an `fma` a state), and folds
/// the block sums once at the block's end. A block without a fallback
/// step runs a loop with no flag test. The per-(i, j) order is the
/// contract's: one `fma` chain a block, `t` ascending, then the fold.
pub fn generate_transitions(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("hmm_transitions", sm);
    b.maxntid(XI_THREADS, 1, 1);
    let p = b.params::<TransitionArgs>();
    let tile = b.shared_array::<F32>("qt", TILE, 16);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    // Row blocks: ⌈S16 / 32⌉ (S16 is a multiple of 16), in groups of
    // XI_WARPS.
    let sp16 = b.add(p.sp, XI_HALF);
    let nib = b.shr(sp16, XI_ROWS.trailing_zeros());
    let nig = b.add(nib, XI_WARPS - 1);
    let nig = b.shr(nig, XI_WARPS.trailing_zeros());
    // The lane's column of the tile (row 0), the warp's first row in it
    // (in floats) and the tile loop's stride in R's rows (in bytes).
    let qlane = b.shared_elem(&tile, lane);
    let wrow = b.shl(warp, 5u32);
    let rstep = b.mul_wide_u32(p.s, XI_WARPS * 4);
    cta_tasks(&mut b, p.tasks, p.groups, |b, seq, group| {
        let jw = b.div(group, nig);
        let ig = b.rem(group, nig);
        let ib = b.mad_lo(ig, XI_WARPS, warp);
        let rows_in = b.setp(Cmp::Lt, ib, nib);
        let j = b.mad_lo(jw, 32u32, lane);
        let jin = b.setp(Cmp::Lt, j, p.s);
        let active = b.pand(rows_in, jin);
        let i0 = b.mul_lo(ib, XI_ROWS);
        let iend = b.add(i0, XI_ROWS);
        let full = b.setp(Cmp::Le, iend, p.sp);
        let task = XiTask::new(b, &p, seq, i0, j, active, full);
        b.for_range(0u32, task.steps, XI_BLOCK as u32, |b, t0| {
            let te = b.add(t0, XI_BLOCK as u32);
            let tend = b.min(te, task.steps);
            // The previous block's readers are done with the tile.
            b.bar_sync();
            // Warp w fills the tile's rows w, w + XI_WARPS, … (steps t0 +
            // row), by running pointers. A lane past S takes state S − 1's
            // `Q` (no branch; it never reads its column).
            let tw = b.add(t0, warp);
            let k0 = b.mad_lo(tw, p.s, task.jc);
            let ph = b.offset(task.rh, k0);
            let ph = b.ptr_copy(ph);
            let pl = b.offset(task.rl, k0);
            let pl = b.ptr_copy(pl);
            let qa = b.shared_offset(qlane, wrow);
            let qa = b.mov(qa.reg);
            b.for_range(tw, tend, XI_WARPS, |b, _| {
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
                let nq = b.add(qa, XI_WARPS * 128);
                b.assign(qa, nq);
            });
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
            b.if_(active, |b| {
                let blk = Block {
                    t0,
                    tend,
                    mask,
                    qlane,
                };
                b.if_else(
                    full,
                    |b| task.block(b, &p, &blk, XI_ROWS as usize),
                    |b| task.block(b, &p, &blk, XI_HALF as usize),
                );
            });
        });
        b.if_(active, |b| task.store(b, &p));
    });
    b.finish()
}

/// The shared `Q` tile: [`XI_BLOCK`] steps × 32 states `j`.
const TILE: u32 = XI_BLOCK as u32 * 32;

/// One block of steps `t0..tend` of a CTA task: the ballot of its
/// fallback flags (bit `t − t0`) and the lane's tile column.
struct Block {
    t0: Reg<U32>,
    tend: Reg<U32>,
    mask: Reg<U32>,
    qlane: SharedPtr<F32>,
}

/// A warp's registers for one task: its rows `i0..i0 + 32`, the lane's
/// state `j`, `Ã[i][j]`, the block sums and their Kahan sums (`sum`,
/// `comp`), and the sequence's pointers.
struct XiTask {
    seq: Reg<U32>,
    i0: Reg<U32>,
    j: Reg<U32>,
    /// `min(j, S − 1)`: the lane's column of `R` for the tile.
    jc: Reg<U32>,
    steps: Reg<U32>,
    at: Vec<Reg<F32>>,
    blk: Vec<Reg<F32>>,
    sum: Vec<Reg<F32>>,
    comp: Vec<Reg<F32>>,
    rh: GlobalPtr<F32>,
    rl: GlobalPtr<F32>,
    wseq: GlobalPtr<F32>,
    flags: GlobalPtr<U32>,
}

impl XiTask {
    /// The task's constants; `Ã[i][j]` for the warp's rows loaded where
    /// `active` (the first 16 rows always, the next 16 where `full`),
    /// zeros elsewhere.
    fn new(
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        seq: Reg<U32>,
        i0: Reg<U32>,
        j: Reg<U32>,
        active: Reg<Pred>,
        full: Reg<Pred>,
    ) -> XiTask {
        let n = XI_ROWS as usize;
        let lp = b.offset(p.lengths, seq);
        let len = b.ld_global(lp, 0);
        let steps = b.max(len, 1u32);
        let steps = b.sub(steps, 1u32);
        let at: Vec<Reg<F32>> = (0..n).map(|_| b.mov(0f32)).collect();
        // Ã[i][j] in the packed-quad layout: quad ⌊i/4⌋ at row j,
        // `((⌊i/4⌋·sp + j)·4`.
        let ib4 = b.shr(i0, 2u32);
        let load_quads = |b: &mut KernelBuilder, quads: std::ops::Range<usize>| {
            for q in quads {
                let qq = b.add(ib4, q as u32);
                let e = b.mad_lo(qq, p.sp, j);
                let e = b.shl(e, 2u32);
                let ap = b.offset(p.a_til, e);
                let v = b.ld_global_nc_v4(ap, 0);
                for (k, x) in v.into_iter().enumerate() {
                    b.assign(at[4 * q + k], x);
                }
            }
        };
        b.if_(active, |b| {
            load_quads(b, 0..n / 8);
            b.if_(full, |b| load_quads(b, n / 8..n / 4));
        });
        let blk = (0..n).map(|_| b.mov(0f32)).collect();
        let sum = (0..n).map(|_| b.mov(0f32)).collect();
        let comp = (0..n).map(|_| b.mov(0f32)).collect();
        let ts = b.mul_lo(p.t, p.s);
        let base = b.mul_wide_u32(seq, ts);
        let rh = b.offset64(p.rh, base);
        let rl = b.offset64(p.rl, base);
        let tsp = b.mul_lo(p.t, p.sp);
        let wbase = b.mul_wide_u32(seq, tsp);
        let wseq = b.offset64(p.w, wbase);
        let sbase = b.mul_wide_u32(seq, p.t);
        let flags = b.offset64(p.flags, sbase);
        let s1 = b.sub(p.s, 1u32);
        let jc = b.min(j, s1);
        XiTask {
            seq,
            i0,
            j,
            jc,
            steps,
            at,
            blk,
            sum,
            comp,
            rh,
            rl,
            wseq,
            flags,
        }
    }

    /// The steps of `blk` for the first `rows` states of the warp, then
    /// the Kahan fold of their block sums.
    fn block(&self, b: &mut KernelBuilder, p: &TransitionRegs, blk: &Block, rows: usize) {
        // The tile's row address runs from the lane's column at row 0 in
        // steps of 32 floats; the weights' row pointer in steps of S16.
        let qa0 = blk.qlane.reg;
        let nsteps = b.sub(blk.tend, blk.t0);
        let qbytes = b.shl(nsteps, 7u32);
        let qend = b.add(qa0, qbytes);
        let w0 = b.mad_lo(blk.t0, p.sp, self.i0);
        let wp0 = b.offset(self.wseq, w0);
        let wp = b.ptr_copy(wp0);
        let sp4 = b.shl(p.sp, 2u32);
        let wstep = b.u32_to_u64(sp4);
        let fast = b.setp(Cmp::Eq, blk.mask, 0u32);
        b.if_else(
            fast,
            |b| {
                // Two steps an iteration (the loop control and the
                // pointers' updates halved), then an odd last step.
                let pairs = b.and(nsteps, !1u32);
                let pbytes = b.shl(pairs, 7u32);
                let qpend = b.add(qa0, pbytes);
                let wstep2 = b.shl(wstep, 1u32);
                b.for_range(qa0, qpend, 256u32, |b, qa| {
                    let (q0, x0) = self.step_loads(b, qa, 0, wp, rows);
                    let wp1 = GlobalPtr::from_reg(b.add(wp.reg, wstep));
                    let (q1, x1) = self.step_loads(b, qa, 32, wp1, rows);
                    self.fma_rows(b, q0, &x0, rows);
                    self.fma_rows(b, q1, &x1, rows);
                    let nx = b.add(wp.reg, wstep2);
                    b.assign(wp.reg, nx);
                });
                let odd = b.setp(Cmp::Lt, qpend, qend);
                b.if_(odd, |b| {
                    let (q, x) = self.step_loads(b, qpend, 0, wp, rows);
                    self.fma_rows(b, q, &x, rows);
                });
            },
            |b| {
                b.for_range(qa0, qend, 128u32, |b, qa| {
                    let (q, x) = self.step_loads(b, qa, 0, wp, rows);
                    let k = b.sub(qa, qa0);
                    let k = b.shr(k, 7u32);
                    let bit = b.shr(blk.mask, k);
                    let bit = b.and(bit, 1u32);
                    let plain = b.setp(Cmp::Eq, bit, 0u32);
                    b.if_else(
                        plain,
                        |b| self.fma_rows(b, q, &x, rows),
                        |b| {
                            let tt = b.add(blk.t0, k);
                            let row = b.mul_lo(tt, p.s);
                            for (r, &xr) in x.iter().enumerate() {
                                self.fallback_row(b, p, q, xr, r, row);
                            }
                        },
                    );
                    let nx = b.add(wp.reg, wstep);
                    b.assign(wp.reg, nx);
                });
            },
        );
        // Block end: Kahan-add the block sums.
        for k in 0..rows {
            let y = b.fsub(Rounding::Rn, self.blk[k], self.comp[k]);
            let t = b.fadd(Rounding::Rn, self.sum[k], y);
            let d = b.fsub(Rounding::Rn, t, self.sum[k]);
            let c = b.fsub(Rounding::Rn, d, y);
            b.assign(self.comp[k], c);
            b.assign(self.sum[k], t);
            b.assign(self.blk[k], 0f32);
        }
    }

    /// A step's `Q_t[j]` from the tile (at shared address `qa`, `off`
    /// floats on) and the warp's first `rows` weights `x_t[i]` from `wp`.
    fn step_loads(
        &self,
        b: &mut KernelBuilder,
        qa: Reg<U32>,
        off: i32,
        wp: GlobalPtr<F32>,
        rows: usize,
    ) -> (Reg<F32>, Vec<Reg<F32>>) {
        let q = b.ld_shared(SharedPtr::<F32>::from_reg(qa), off);
        let mut x = Vec::with_capacity(rows);
        for k in 0..rows / 4 {
            x.extend(b.ld_global_nc_v4(wp, (4 * k) as i32));
        }
        (q, x)
    }

    /// `blk[k] = fma(x[k], Ã[k]·q, blk[k])` for the first `rows` rows.
    fn fma_rows(&self, b: &mut KernelBuilder, q: Reg<F32>, x: &[Reg<F32>], rows: usize) {
        for (k, &xk) in x.iter().enumerate().take(rows) {
            self.fma_row(b, q, xk, k);
        }
    }

    /// `blk[k] = fma(xk, Ã[k]·q, blk[k])`.
    fn fma_row(&self, b: &mut KernelBuilder, q: Reg<F32>, xk: Reg<F32>, k: usize) {
        let y = b.fmul(Rounding::Rn, self.at[k], q);
        let v = b.ffma(Rounding::Rn, xk, y, self.blk[k]);
        b.assign(self.blk[k], v);
    }

    /// Row `k`'s term at a step with a fallback flag: a negative `x` marks
    /// a fallback state (`x = gamma / (−σ)`), whose `y` is the exact
    /// `pexp(v_j ⊖ pmax_k v_k)` (`0` where `x = 0`); `row = t·S`.
    fn fallback_row(
        &self,
        b: &mut KernelBuilder,
        p: &TransitionRegs,
        q: Reg<F32>,
        xk: Reg<F32>,
        k: usize,
        row: Reg<U32>,
    ) {
        let bits = b.f32_bits(xk);
        let neg = b.setp(Cmp::Ge, bits, 0x8000_0000u32);
        b.if_else(
            neg,
            |b| {
                let xv = b.fneg(xk);
                let y = b.mov(0f32);
                let nz = b.setp(Cmp::Ne, xv, 0f32);
                b.if_(nz, |b| {
                    let i = b.add(self.i0, k as u32);
                    let yv = fallback_y(b, p, i, self.j, row, self.rh, self.rl);
                    b.assign(y, yv);
                });
                let v = b.ffma(Rounding::Rn, xv, y, self.blk[k]);
                b.assign(self.blk[k], v);
            },
            |b| self.fma_row(b, q, xk, k),
        );
    }

    /// `xi[i][j] = σ` for the warp's rows below `S`.
    fn store(&self, b: &mut KernelBuilder, p: &TransitionRegs) {
        let ss = b.mul_lo(p.s, p.s);
        let obase = b.mul_wide_u32(self.seq, ss);
        let out = b.offset64(p.xi, obase);
        for (k, v) in self.sum.iter().enumerate() {
            let i = b.add(self.i0, k as u32);
            let inside = b.setp(Cmp::Lt, i, p.s);
            b.if_(inside, |b| {
                let idx = b.mad_lo(i, p.s, self.j);
                let q = b.offset(out, idx);
                b.st_global(q, 0, *v);
            });
        }
    }
}

/// The fallback state `i`'s term `y = pexp(v_j ⊖ pmax_k v_k)` with
/// `v_k = lr[i][k] + R[k]` (`R` row at `row` of `rh`/`rl`).
fn fallback_y(
    b: &mut KernelBuilder,
    p: &TransitionRegs,
    i: Reg<U32>,
    j: Reg<U32>,
    row: Reg<U32>,
    rh: GlobalPtr<F32>,
    rl: GlobalPtr<F32>,
) -> Reg<F32> {
    let rowmax = ld_prep(b, p.prep, PREP_ROWMAX, p.sp, i);
    let arow = b.mul_lo(i, p.s);
    let v_of = |b: &mut KernelBuilder, k: Reg<U32>| {
        let ai = b.add(arow, k);
        let ap = b.offset(p.log_a, ai);
        let la = b.ld_global(ap, 0);
        let lr = pshift(b, la, rowmax);
        let kr = b.add(row, k);
        let r = ld_pair(b, rh, rl, kr);
        padd(b, lr, r)
    };
    let m = pp::constant(b, f32::NAN, 0.0);
    b.for_range(0u32, p.s, 1u32, |b, k| {
        let v = v_of(b, k);
        let nm = pmax2(b, m, v);
        pp::assign(b, m, nm);
    });
    let m = pp::canon(b, m);
    let v = v_of(b, j);
    let d = psub(b, v, m);
    pexp(b, d)
}
