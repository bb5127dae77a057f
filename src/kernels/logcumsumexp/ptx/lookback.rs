//! `lcse_fwd_split`: the split path's forward in one launch, a CTA per
//! tile, each tile's carry `C_τ` from the totals other CTAs publish (a
//! decoupled look-back that follows the carry tree of [`super::super`]
//! exactly, so the bits are those of the row path).
//!
//! * **Tickets.** A CTA takes its tiles by a ticket (`atom.add` on a
//!   counter the launch code zeroes; tile = ticket, row-major over
//!   `(row, τ)`), so every tile it waits for belongs to a CTA that took its
//!   ticket earlier and waits only for tiles before that: the waits end on
//!   any GPU whatever the residency (in the simulator the CTAs run one
//!   after another in block order, so every wait succeeds at once).
//! * **Publishing.** Every value another CTA reads travels in one 8-byte
//!   atomic word, the value's bits in the low half and a flag (1) in the
//!   high half (`atom.exch.b64` to publish, `atom.add.u64` of 0 to read):
//!   the flag and the value are one access, so relaxed atomics need no
//!   fence, and the simulator's race check treats them as atomic. Per tile
//!   `τ` the scratch holds `T_τ` (`tot`) and the inclusive carry
//!   `C_{τ+1}` (`inc`, `C_1 = T_0`); per run `j` wholly before the row's
//!   last tile its aggregate `G_j` (`grun`).
//! * **The carry tree**, in the contract's order: the last tile of run `j`
//!   folds `G_j = T_{jL} ⊗ … ⊗ T_{jL+L−1}` left to right; the first tile of
//!   run `j ≥ 1` computes `P_j` by the tile tree over `G_0 … G_{j−1}`
//!   (threads `i < j` read `G_i`; `E_j` reads nothing else) and
//!   `C_{jL} = P_j`; any other tile `τ ≥ 1` looks back from `τ − 1` (not
//!   below its run's first tile) for the nearest published inclusive carry
//!   `C_{k+1}` and folds `C_τ = C_{k+1} ⊗ T_{k+1} ⊗ … ⊗ T_{τ−1}` left to
//!   right: the contract's chain `C_{τ+1} = C_τ ⊗ T_τ` from a state of it,
//!   so the same bits whichever `k` it finds.
//! * **Waiting.** Thread 0 polls (the look-back, the run aggregate's fold)
//!   while its warp's other lanes wait at the next barrier or shuffle, and
//!   threads `i < j` poll for `G_i` before the run prefix's shuffles: sound
//!   under independent thread scheduling (every target is sm_70+). Polls
//!   are back to back (the DSL has no `nanosleep` yet).
//! * The tile itself is `lcse_fwd`'s (staged once: 8 B per element).

use super::super::host::{RUNS, TILE};
use super::runs::{RunPos, run_len};
use super::tile::*;
use super::{FWD_SPLIT, fwd_aggregate, fwd_outputs, lae_op};
use crate::dsl::math;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Pred, Reg, U32, U64};
use crate::dsl::{AtomOp, Cmp, GlobalPtr, KernelBuilder, PtxModule, SharedPtr};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

kernel_params! {
    /// Arguments of `lcse_fwd_split` (`x` and `y` may be the same buffer;
    /// `scratch`: [`scratch_words`] zeroed 8-byte words).
    pub struct SplitArgs => SplitRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        scratch: Ptr<U64>,
        rows: U32,
        t: U32,
        ntiles: U32,
        flags: U32,
    }
}

/// The 8-byte words of `lcse_fwd_split`'s scratch for `rows` rows of
/// `ntiles` tiles: `tot` and `inc` (a word per tile each), `grun`
/// ([`RUNS`] words per row) and the ticket counter (one word).
pub fn scratch_words(rows: usize, ntiles: usize) -> usize {
    2 * rows * ntiles + rows * RUNS + 1
}

/// `flags` bit of `lcse_fwd_split` (tests only): only the first tile of a
/// row or run publishes its inclusive carry, so every other tile looks back
/// to its run's first tile and folds the totals in between (the deepest
/// look-back a GPU can meet; in the simulator, where the CTAs run in
/// order, a tile otherwise always finds its predecessor's carry). The
/// same bits.
pub const DEEP: u32 = 4;

/// The flag of a published word (its high half).
const READY: u64 = 1 << 32;

/// Publish `v` at word `i` of `p`.
fn publish(b: &mut KernelBuilder, p: GlobalPtr<U64>, i: Reg<U32>, v: Reg<F32>) {
    let bits = b.f32_bits(v);
    let w = b.u32_to_u64(bits);
    let w = b.or(w, READY);
    let q = b.offset(p, i);
    b.atom_global(AtomOp::Exch, q, w, None);
}

/// Word `i` of `p`, read atomically.
fn read(b: &mut KernelBuilder, p: GlobalPtr<U64>, i: Reg<U32>) -> Reg<U64> {
    let q = b.offset(p, i);
    b.atom_global(AtomOp::Add, q, 0u64, None)
}

fn is_ready(b: &mut KernelBuilder, w: Reg<U64>) -> Reg<Pred> {
    let hi = b.shr(w, 32u32);
    let hi = b.u64_to_u32(hi);
    b.setp(Cmp::Ne, hi, 0u32)
}

fn value(b: &mut KernelBuilder, w: Reg<U64>) -> Reg<F32> {
    let lo = b.u64_to_u32(w);
    b.f32_from_bits(lo)
}

/// `acc ← acc ⊕ T_k` for the published totals `k` in `from..to` of the
/// row whose first total is at `rowt`, left to right (waiting for each).
fn fold_totals(
    b: &mut KernelBuilder,
    tot: GlobalPtr<U64>,
    rowt: Reg<U32>,
    acc: Reg<F32>,
    from: Reg<U32>,
    to: Reg<U32>,
) {
    b.for_range(from, to, 1u32, |b, k| {
        let i = b.add(rowt, k);
        let v = wait(b, tot, i);
        let n = math::log_add_exp(b, acc, v);
        b.assign(acc, n);
    });
}

/// The value at word `i` of `p` once published (spins until then).
fn wait(b: &mut KernelBuilder, p: GlobalPtr<U64>, i: Reg<U32>) -> Reg<F32> {
    let w = b.mov(0u64);
    b.while_(
        |b| {
            let r = is_ready(b, w);
            b.pnot(r)
        },
        |b| {
            let r = read(b, p, i);
            b.assign(w, r);
        },
    );
    value(b, w)
}

/// `lcse_fwd_split`: the forward of every tile of `rows` rows of
/// `ntiles ≥ 2` tiles, a tile a ticket.
pub fn generate_fwd_split(sm: Sm) -> Result<PtxModule> {
    let mut b = tile_builder(FWD_SPLIT, sm);
    let p = b.params::<SplitArgs>();
    let xs = b.shared_array::<F32>("xs", BUF, 16);
    let wt = b.shared_array::<F32>("wt", W, 4);
    let qs = b.shared_array::<F32>("qs", W + 1, 4);
    // The run prefix's own tree (the tile's `qs` is still to be read).
    let wr = b.shared_array::<F32>("wr", W, 4);
    let qr = b.shared_array::<F32>("qr", W + 1, 4);
    // The tile's carry and total (thread 0 or thread j writes them).
    let cs = b.shared_array::<F32>("cs", 2, 4);
    let tk = b.shared_array::<U32>("tk", 1, 4);
    let c = cta(&mut b, p.flags);
    let seg: SharedPtr<F32> = segment(&mut b, c, &xs);
    let items = b.mul_lo(p.rows, p.ntiles);
    let tot = b.ptr_copy(p.scratch);
    let inc = b.offset(p.scratch, items);
    let runs0 = b.mul_lo(items, 2u32);
    let grun = b.offset(p.scratch, runs0);
    let runs = b.mul_lo(p.rows, RUNS as u32);
    let tw = b.add(runs0, runs);
    let ticket = b.offset(p.scratch, tw).cast::<U32>();
    let l = run_len(&mut b, p.ntiles);
    let n1 = b.sub(p.ntiles, 1u32);
    let deep = b.and(p.flags, DEEP);
    let shallow = b.setp(Cmp::Eq, deep, 0u32);
    let item = b.mov(0u32);
    let fetch = |b: &mut KernelBuilder| {
        b.if_(c.t0, |b| {
            let v = b.atom_global(AtomOp::Add, ticket, 1u32, None);
            b.st_shared_at(&tk, 0, v);
        });
        b.bar_sync();
        let v = b.ld_shared_at(&tk, 0);
        b.assign(item, v);
    };
    fetch(&mut b);
    b.while_(
        |b| b.setp(Cmp::Lt, item, items),
        |b| {
            let row = b.div(item, p.ntiles);
            let tau = b.rem(item, p.ntiles);
            let base = b.mul_wide_u32(row, p.t);
            let rowt = b.mul_lo(row, p.ntiles);
            let start = b.mul_lo(tau, TILE as u32);
            stage(
                b,
                c,
                p.x,
                &xs,
                base,
                start,
                p.t,
                f32::NEG_INFINITY,
                FWD_BATCH,
                true,
            );
            b.bar_sync();
            let run = RunPos::new(b, tau, l);
            let r0 = b.mul_lo(run.j, l);
            let has = b.setp(Cmp::Ne, tau, 0u32);
            let a = fwd_aggregate(b, [seg]);
            let inc_v = kogge_stone(b, c, a, false, &lae_op::<1>);
            warp_chain(
                b,
                c,
                inc_v,
                false,
                &wt,
                Some(&qs),
                &lae_op::<1>,
                |b, total| {
                    let total = total[0];
                    let me = b.add(rowt, tau);
                    publish(b, tot, me, total);
                    b.st_shared_at(&cs, 1, total);
                    // G_j at the last tile of a run wholly before the
                    // row's last tile.
                    let pos = b.sub(tau, r0);
                    let l1 = b.sub(l, 1u32);
                    let end = b.setp(Cmp::Eq, pos, l1);
                    let before = b.setp(Cmp::Lt, tau, n1);
                    let last = b.pand(end, before);
                    b.if_(last, |b| {
                        let i0 = b.add(rowt, r0);
                        let g = wait(b, tot, i0);
                        let from = b.add(r0, 1u32);
                        fold_totals(b, tot, rowt, g, from, tau);
                        let ng = math::log_add_exp(b, g, total);
                        let gi = b.mul_lo(row, RUNS as u32);
                        let gi = b.add(gi, run.j);
                        publish(b, grun, gi, ng);
                    });
                    // The carry, unless the tile is the row's first or a
                    // run's first after the first (below).
                    let first = b.pnot(has);
                    b.if_(first, |b| publish(b, inc, me, total));
                    let chain = b.pnot(run.start);
                    let chain = b.pand(chain, has);
                    b.if_(chain, |b| {
                        // Look back for the nearest published C_{k+1},
                        // k in r0..τ, from τ − 1 (round again from τ − 1
                        // when none is yet).
                        let top = b.sub(tau, 1u32);
                        let k = b.mov(top);
                        let i = b.add(rowt, k);
                        let w = read(b, inc, i);
                        b.while_(
                            |b| {
                                let r = is_ready(b, w);
                                b.pnot(r)
                            },
                            |b| {
                                let bottom = b.setp(Cmp::Eq, k, r0);
                                let down = b.sub(k, 1u32);
                                let nk = b.selp(bottom, top, down);
                                b.assign(k, nk);
                                let i = b.add(rowt, k);
                                let r = read(b, inc, i);
                                b.assign(w, r);
                            },
                        );
                        let cv = value(b, w);
                        let from = b.add(k, 1u32);
                        fold_totals(b, tot, rowt, cv, from, tau);
                        b.st_shared_at(&cs, 0, cv);
                        b.if_(shallow, |b| {
                            let nc = math::log_add_exp(b, cv, total);
                            publish(b, inc, me, nc);
                        });
                    });
                },
            );
            // A run's first tile after the first: C = P_j by the tile tree
            // over the published G_0 … G_{j−1}.
            b.if_(run.start, |b| {
                let g0 = b.mul_lo(row, RUNS as u32);
                let load = |b: &mut KernelBuilder, _: usize| {
                    let i = b.add(g0, c.tid);
                    wait(b, grun, i)
                };
                let e = run.prefix(b, c, load, &wr, &qr, &lae_op::<1>);
                let mine = b.setp(Cmp::Eq, c.tid, run.j);
                b.if_(mine, |b| {
                    b.st_shared_at(&cs, 0, e[0]);
                    let total = b.ld_shared_at(&cs, 1);
                    let nc = math::log_add_exp(b, e[0], total);
                    let me = b.add(rowt, tau);
                    publish(b, inc, me, nc);
                });
            });
            let e = exclusive(b, c, inc_v, false, &qs, &lae_op::<1>);
            let carry = b.mov(f32::NEG_INFINITY);
            b.if_(has, |b| {
                let v = b.ld_shared_at(&cs, 0);
                b.assign(carry, v);
            });
            let k = with_carry(b, c, [carry], e, has, &lae_op::<1>);
            let first = b.pnot(has);
            let none = b.pand(first, c.t0);
            fwd_outputs(b, [seg], k, [none]);
            b.bar_sync();
            store(b, c, p.y, &xs, base, start, p.t, FWD_BATCH, true);
            fetch(b);
        },
    );
    b.finish()
}
