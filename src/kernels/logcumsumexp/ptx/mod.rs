//! The kernels of [`super`]: CTAs of [`THREADS`] = `NSEG` threads, thread
//! `σ` owning segment `σ` of the tile in shared memory (segment `σ`'s
//! element `k` at word `36σ + k`: a thread reading its segment 16 bytes at a
//! time and a warp writing 32 consecutive elements both hit 32 distinct
//! banks). The tile tree's Kogge–Stone level is `shfl.sync` (`up` for the
//! forward order, `down` for the backward's reverse tree), the warp chain
//! runs on thread 0 through shared memory.
//!
//! | kernel | grid | does |
//! |---|---|---|
//! | `lcse_fwd` | a CTA per [`FWD_CHAINS`] rows (row path) | the forward of its rows' tiles, a segment of each row per thread, carries on chip |
//! | `lcse_fwd_split` | a CTA per tile, by ticket | the split path's forward in one launch: the tile, its total published, its carry by a look-back over published totals (see `lookback`) |
//! | `lcse_bwd` | a CTA per row or per tile | the backward of its tiles (row path: pass 1 writes the pair carries to `fcarry`, pass 2 walks the tiles from the last) |
//! | `lcse_bwd_tot` | a CTA per tile `τ < n_τ − 1` | the pair tile totals (split path) |
//! | `lcse_bwd_carry` | a CTA per row | the pair carries `C_τ` by the carry tree (split path) |
//! | `lcse_bwd_aff` | a CTA per tile `τ ≥ 1` | the tile's affine map `(a_τ, b_τ)` (split path) |
//! | `lcse_bwd_zcarry` | a CTA per row | the reverse carries `Zc_τ` by the carry tree (split path) |
//!
//! `flags` bit 0 (`VEC`): `T` is a multiple of 4 and every pointer is
//! 16-byte aligned, so tiles move with 16-byte loads and stores; bit 1
//! (`SPLIT`, the backward's tile kernels): one CTA per tile; bit 2
//! ([`DEEP`], `lcse_fwd_split`, tests only): the deepest look-back. None
//! changes a bit of the results.

mod lookback;
mod runs;
mod tile;

pub use lookback::{DEEP, SplitArgs, generate_fwd_split, scratch_words};

use super::host::{KS_STEPS, NSEG, TILE};
use crate::Feature;
use crate::dsl::math;
use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, SharedArray, SharedPtr, ShflMode};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;
use runs::*;
use tile::*;

/// Threads per CTA of the tile kernels (one per segment).
pub const THREADS: u32 = NSEG as u32;
/// Threads per CTA of the carry-tree kernels (one per run of a row).
pub const CHAIN_THREADS: u32 = 128;
/// `flags` bit: 16-byte tile loads and stores.
pub const VEC: u32 = 1;
/// `flags` bit: one CTA per tile (the split path).
pub const SPLIT: u32 = 2;

kernel_params! {
    /// Arguments of `lcse_fwd` (`x` and `y` may be the same buffer; `items`:
    /// the rows).
    pub struct FwdArgs => FwdRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        items: U32,
        t: U32,
        ntiles: U32,
        flags: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_bwd_tot` (`tot` holds one
    /// value, resp. one pair, per tile).
    pub struct TotArgs => TotRegs {
        x: Ptr<F32>,
        tot: Ptr<F32>,
        items: U32,
        t: U32,
        ntiles: U32,
        flags: U32,
    }
}

kernel_params! {
    /// Arguments of the chain kernels `lcse_bwd_carry`,
    /// `lcse_bwd_zcarry` (`tot` read, `carry` written, per tile).
    pub struct ChainArgs => ChainRegs {
        tot: Ptr<F32>,
        carry: Ptr<F32>,
        rows: U32,
        ntiles: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_bwd` (`fcarry`: pair carries, written by pass 1
    /// on the row path; `zcarry`: reverse carries, split path only).
    pub struct BwdArgs => BwdRegs {
        x: Ptr<F32>,
        g: Ptr<F32>,
        gx: Ptr<F32>,
        fcarry: Ptr<F32>,
        zcarry: Ptr<F32>,
        items: U32,
        t: U32,
        ntiles: U32,
        flags: U32,
    }
}

kernel_params! {
    /// Arguments of `lcse_bwd_aff` (`aff` written: a pair per tile).
    pub struct AffArgs => AffRegs {
        x: Ptr<F32>,
        g: Ptr<F32>,
        fcarry: Ptr<F32>,
        aff: Ptr<F32>,
        items: U32,
        t: U32,
        ntiles: U32,
        flags: U32,
    }
}

/// The forward, row path ([`FWD_CHAINS`] rows a CTA).
pub const FWD: &str = "lcse_fwd";
/// The split path's forward in one launch (a CTA per tile, the carries by
/// a look-back over the published tile totals).
pub const FWD_SPLIT: &str = "lcse_fwd_split";
/// The backward, row path and the split path's tile pass.
pub const BWD: &str = "lcse_bwd";
/// The split path's backward: each tile's (max, scaled sum) pair.
pub const BWD_TOT: &str = "lcse_bwd_tot";
/// The split path's backward: the forward pairs' carries along each row.
pub const BWD_CARRY: &str = "lcse_bwd_carry";
/// The split path's backward: each tile's reverse affine map.
pub const BWD_AFF: &str = "lcse_bwd_aff";
/// The split path's backward: the reverse carries of the affine maps.
pub const BWD_ZCARRY: &str = "lcse_bwd_zcarry";

// ---------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------

/// Independent segment chains each thread of `lcse_fwd` walks at once: a
/// CTA takes this many rows and thread `σ` walks segment `σ` of each,
/// interleaved, so that the `log_add_exp` chains overlap (instruction-level
/// parallelism). Which elements combine in which order is the contract's,
/// whoever runs it, so the bits are the same for any count.
pub const FWD_CHAINS: u32 = 2;
const NC: usize = FWD_CHAINS as usize;

/// `lae` on each of `N` independent values.
fn lae_op<const N: usize>(b: &mut KernelBuilder, e: Val<N>, l: Val<N>) -> Val<N> {
    std::array::from_fn(|i| math::log_add_exp(b, e[i], l[i]))
}

/// The tile tree's Kogge–Stone level over the forward's `N` interleaved
/// chains ([`kogge_stone`] with `lae`). With two chains the last step
/// (`d = 16`: lanes 16..32 combine, lanes 0..16 idle) is shared out: lane
/// `ℓ ≥ 16` combines chain 0's `I_{ℓ−16} ⊗ I_ℓ`, lane `ℓ − 16` chain 1's
/// (both fetched by shuffles, the result shuffled back up): one `lae` a
/// thread instead of two, each on the same operands in the same order, so
/// the same bits.
fn fwd_kogge_stone<const N: usize>(b: &mut KernelBuilder, c: Cta, v: Val<N>) -> Val<N> {
    let Some((&last, first)) = KS_STEPS.split_last() else {
        return v;
    };
    if N != 2 || last != 16 {
        return kogge_stone(b, c, v, false, &lae_op::<N>);
    }
    let mut v = kogge_stone_steps(b, c, v, false, &lae_op::<N>, first);
    let d = last as u32;
    let hi = b.setp(Cmp::Ge, c.lane, d);
    // Lanes ≥ 16: chain 0 of lane ℓ − 16; lanes < 16: chain 1 of ℓ + 16.
    let e0 = b.shfl(ShflMode::Up, v[0], d, 0, FULL);
    let l1 = b.shfl(ShflMode::Down, v[1], d, 0x1f, FULL);
    let e = b.selp(hi, e0, v[1]);
    let l = b.selp(hi, v[0], l1);
    let r = math::log_add_exp(b, e, l);
    let r1 = b.shfl(ShflMode::Up, r, d, 0, FULL);
    v[0] = b.selp(hi, r, v[0]);
    v[1] = b.selp(hi, r1, v[1]);
    v
}

/// The forward's segment aggregates (see the contract) of `N` segments,
/// their loops interleaved.
///
/// Where `max.NaN` exists (sm_80 on), the maximum is taken with it: `mn`
/// is the contract's `m` unless the segment holds a NaN (then `mn` is NaN,
/// `m' = +0`, and `A` is NaN as the contract's: the NaN's term makes `s`
/// NaN whatever the others are). Then every `x − m'` is `≤ 0` or NaN but
/// when `mn = +∞`, whose `A` is `+∞` (every term non-negative, one `+∞`)
/// and is set so after the sum: the terms take [`math::exp_bounded`], one
/// instruction an element fewer than [`math::exp`], the same bits.
fn fwd_aggregate<const N: usize>(b: &mut KernelBuilder, segs: [SharedPtr<F32>; N]) -> Val<N> {
    let nan_max = b.sm().supports(Feature::MinMaxNaN);
    let mx: Val<N> = std::array::from_fn(|n| {
        let mut m = b.mov(f32::NEG_INFINITY);
        for k in 0..GROUPS {
            let v = b.ld_shared_v4(segs[n], 4 * k as i32);
            for x in v {
                m = if nan_max {
                    b.fmax_nan(m, x)
                } else {
                    b.fmax(m, x)
                };
            }
        }
        m
    });
    let mp: Val<N> = std::array::from_fn(|n| {
        let am = b.fabs(mx[n]);
        let fin = b.setp(Cmp::Lt, am, f32::INFINITY);
        b.selp(fin, mx[n], 0f32)
    });
    let s: Val<N> = std::array::from_fn(|_| b.mov(0f32));
    b.for_range(0u32, GROUPS, 1u32, |b, k| {
        let off = b.shl(k, 2u32);
        let v: [[Reg<F32>; 4]; N] = std::array::from_fn(|n| {
            let p = b.shared_offset(segs[n], off);
            b.ld_shared_v4(p, 0)
        });
        for j in 0..4 {
            for ((vn, &m), &sn) in v.iter().zip(&mp).zip(&s) {
                let d = b.fsub(RN, vn[j], m);
                let e = if nan_max {
                    math::exp_bounded(b, d)
                } else {
                    math::exp(b, d)
                };
                let ns = b.fadd(RN, sn, e);
                b.assign(sn, ns);
            }
        }
    });
    std::array::from_fn(|n| {
        let l = math::log(b, s[n]);
        let a = b.fadd(RN, mp[n], l);
        if nan_max {
            let inf = b.setp(Cmp::Eq, mx[n], f32::INFINITY);
            b.selp(inf, f32::INFINITY, a)
        } else {
            a
        }
    })
}

/// The forward's outputs along `N` segments, in place, the chains
/// interleaved (`k`: the segments' carries, `none`: a segment has none).
fn fwd_outputs<const N: usize>(
    b: &mut KernelBuilder,
    segs: [SharedPtr<F32>; N],
    k: Val<N>,
    none: [Reg<Pred>; N],
) {
    let v: [[Reg<F32>; 4]; N] = std::array::from_fn(|n| b.ld_shared_v4(segs[n], 0));
    let mut out = v;
    for n in 0..N {
        let y0 = math::log_add_exp(b, k[n], v[n][0]);
        out[n][0] = b.selp(none[n], v[n][0], y0);
    }
    for j in 1..4 {
        for n in 0..N {
            out[n][j] = math::log_add_exp(b, out[n][j - 1], v[n][j]);
        }
    }
    for n in 0..N {
        b.st_shared_v4(segs[n], 0, out[n]);
    }
    let y: Val<N> = std::array::from_fn(|n| b.mov(out[n][3]));
    b.for_range(1u32, GROUPS, 1u32, |b, k| {
        let off = b.shl(k, 2u32);
        let (p, v): ([SharedPtr<F32>; N], [[Reg<F32>; 4]; N]) = {
            let p: [SharedPtr<F32>; N] = std::array::from_fn(|n| b.shared_offset(segs[n], off));
            let v = std::array::from_fn(|n| b.ld_shared_v4(p[n], 0));
            (p, v)
        };
        let mut out = v;
        let mut acc = y;
        for j in 0..4 {
            for n in 0..N {
                acc[n] = math::log_add_exp(b, acc[n], v[n][j]);
                out[n][j] = acc[n];
            }
        }
        for n in 0..N {
            b.st_shared_v4(p[n], 0, out[n]);
            b.assign(y[n], acc[n]);
        }
    });
}

/// One slot of a `lcse_fwd` CTA: its row's first element and the length
/// its copies see (0 for an empty slot).
type Slot = (Reg<U64>, Reg<U32>);

/// `lcse_fwd`: the forward of the rows' tiles, [`FWD_CHAINS`] rows a CTA
/// at a time (rows `FWD_CHAINS·g + i`; past the last row a slot repeats
/// row `FWD_CHAINS·g` with `T = 0`: all padding, nothing stored).
pub fn generate_fwd(sm: Sm) -> Result<PtxModule> {
    let mut b = tile_builder(FWD, sm);
    let p = b.params::<FwdArgs>();
    let xs: [SharedArray<F32>; NC] =
        std::array::from_fn(|i| b.shared_array::<F32>(&format!("xs{i}"), BUF, 16));
    let wt = b.shared_array::<F32>("wt", W * FWD_CHAINS, 4);
    let qs = b.shared_array::<F32>("qs", (W + 1) * FWD_CHAINS, 4);
    let cs = b.shared_array::<F32>("cs", FWD_CHAINS, 4);
    let c = cta(&mut b, p.flags);
    let segs: [SharedPtr<F32>; NC] = std::array::from_fn(|i| segment(&mut b, c, &xs[i]));
    let ctaid = b.ctaid_x();
    let nct = b.nctaid_x();
    let gs = b.add(p.items, FWD_CHAINS - 1);
    let groups = b.div(gs, FWD_CHAINS);
    b.for_range(ctaid, groups, nct, |b, g| {
        let g0 = b.mul_lo(g, FWD_CHAINS);
        let slots: [Slot; NC] = std::array::from_fn(|i| {
            let raw = b.add(g0, i as u32);
            let valid = b.setp(Cmp::Lt, raw, p.items);
            let row = b.selp(valid, raw, g0);
            let base = b.mul_wide_u32(row, p.t);
            let t = b.selp(valid, p.t, 0u32);
            (base, t)
        });
        let carry: Val<NC> = std::array::from_fn(|_| b.mov(f32::NEG_INFINITY));
        // Every slot walks all of its row's tiles, tile `kk` at trip `kk`
        // (the start and the first-tile test per slot, as ever).
        let l = run_len(b, p.ntiles);
        b.for_range(0u32, p.ntiles, 1u32, |b, kk| {
            let start: [Reg<U32>; NC] = std::array::from_fn(|_| b.mul_lo(kk, TILE as u32));
            for i in 0..NC {
                let (base, t) = slots[i];
                stage(
                    b,
                    c,
                    p.x,
                    &xs[i],
                    base,
                    start[i],
                    t,
                    f32::NEG_INFINITY,
                    FWD_BATCH,
                    true,
                );
            }
            b.bar_sync();
            // The carry tree: a run's first tile takes its run prefix as its
            // carry.
            let run = RunPos::new(b, kk, l);
            b.if_(run.start, |b| {
                let load = |b: &mut KernelBuilder, i: usize| b.ld_shared(segs[i], RUN_AGG);
                let e = run.prefix(b, c, load, &wt, &qs, &lae_op::<NC>);
                let mine = b.setp(Cmp::Eq, c.tid, run.j);
                b.if_(mine, |b| {
                    for (i, r) in e.iter().enumerate() {
                        b.st_shared_at(&cs, i as u32, *r);
                    }
                });
                b.bar_sync();
                for (i, r) in carry.iter().enumerate() {
                    let v = b.ld_shared_at(&cs, i as u32);
                    b.assign(*r, v);
                }
            });
            let a = fwd_aggregate(b, segs);
            let inc = fwd_kogge_stone(b, c, a);
            let has: [Reg<Pred>; NC] = std::array::from_fn(|_| b.setp(Cmp::Ne, kk, 0u32));
            warp_chain(
                b,
                c,
                inc,
                false,
                &wt,
                Some(&qs),
                &lae_op::<NC>,
                |b, total| {
                    for i in 0..NC {
                        let nc = math::log_add_exp(b, carry[i], total[i]);
                        let nc = b.selp(has[i], nc, total[i]);
                        b.st_shared_at(&cs, i as u32, nc);
                    }
                    let gp: [SharedPtr<F32>; NC] =
                        std::array::from_fn(|i| run_agg_slot(b, &xs[i], run.j, RUN_AGG));
                    run.accumulate(b, gp, total, &lae_op::<NC>);
                },
            );
            let e = exclusive(b, c, inc, false, &qs, &lae_op::<NC>);
            let k: Val<NC> = std::array::from_fn(|i| {
                with_carry(b, c, [carry[i]], [e[i]], has[i], &lae_op::<1>)[0]
            });
            let none: [Reg<Pred>; NC] = std::array::from_fn(|i| {
                let first = b.pnot(has[i]);
                b.pand(first, c.t0)
            });
            fwd_outputs(b, segs, k, none);
            b.bar_sync();
            for i in 0..NC {
                let (base, t) = slots[i];
                store(b, c, p.y, &xs[i], base, start[i], t, FWD_BATCH, true);
            }
            for (i, r) in carry.iter().enumerate() {
                let nc = b.ld_shared_at(&cs, i as u32);
                b.assign(*r, nc);
            }
            b.bar_sync();
        });
    });
    b.finish()
}

fn chain_builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(CHAIN_THREADS, 1, 1);
    b
}

// ---------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------

/// `(m₁, S₁) ⊕ (m₂, S₂)` with its `e` and "new maximum" (see the contract).
fn pair_step(
    b: &mut KernelBuilder,
    p: Val<2>,
    m2: Reg<F32>,
    s2: impl Into<crate::dsl::types::Src<F32>> + Copy,
) -> (Val<2>, Reg<F32>, Reg<Pred>) {
    let [m1, s1] = p;
    let eq = b.setp(Cmp::Eq, m2, m1);
    let diff = b.fsub(RN, m2, m1);
    let d = b.selp(eq, 0f32, diff);
    let ad = b.fabs(d);
    let nd = b.fneg(ad);
    let e = math::exp(b, nd);
    let n = b.setp(Cmp::Gt, m2, m1);
    let m = b.selp(n, m2, m1);
    let fa = b.selp(n, s1, s2);
    let fc = b.selp(n, s2, s1);
    let s = b.ffma(RN, fa, e, fc);
    ([m, s], e, n)
}

fn pair_op(b: &mut KernelBuilder, e: Val<2>, l: Val<2>) -> Val<2> {
    pair_step(b, e, l[0], l[1]).0
}

fn affine_op(b: &mut KernelBuilder, e: Val<2>, l: Val<2>) -> Val<2> {
    let a = b.ffma(RN, l[1], e[0], l[0]);
    let m = b.fmul(RN, l[1], e[1]);
    [a, m]
}

/// A segment's pair aggregate from `𝟙`.
fn bwd_aggregate(b: &mut KernelBuilder, seg: SharedPtr<F32>) -> Val<2> {
    let m = b.mov(-f32::MAX);
    let s = b.mov(0f32);
    b.for_range(0u32, GROUPS, 1u32, |b, k| {
        let off = b.shl(k, 2u32);
        let p = b.shared_offset(seg, off);
        let v = b.ld_shared_v4(p, 0);
        let mut acc = [m, s];
        for x in v {
            acc = pair_step(b, acc, x, 1f32).0;
        }
        assign(b, [m, s], acc);
    });
    [m, s]
}

/// The per-element walk from the segment carry `k`: `(e, n)` encoded into
/// `seg_x` and `r` into `seg_g` (when `write`); returns the segment's
/// affine aggregate.
fn value_walk(
    b: &mut KernelBuilder,
    seg_x: SharedPtr<F32>,
    seg_g: SharedPtr<F32>,
    k: Val<2>,
    write: bool,
) -> Val<2> {
    let p = mov(b, k);
    let a = b.mov(0f32);
    let bb = b.mov(1f32);
    // Two elements a trip (8-byte loads): fewer live registers, see below.
    b.for_range(0u32, 2 * GROUPS, 1u32, |b, kk| {
        let off = b.shl(kk, 1u32);
        let px = b.shared_offset(seg_x, off);
        let pg = b.shared_offset(seg_g, off);
        let xv = b.ld_shared_v2(px, 0);
        let gv = b.ld_shared_v2(pg, 0);
        let mut acc = p;
        let (mut ca, mut cb) = (a, bb);
        for i in 0..2 {
            let (np, e, n) = pair_step(b, acc, xv[i], 1f32);
            acc = np;
            let zero = b.setp(Cmp::Eq, np[1], 0f32);
            let q = b.fdiv(RN, gv[i], np[1]);
            let r = b.selp(zero, 0f32, q);
            let ne = b.fneg(e);
            let enc = b.selp(n, ne, e);
            // Stored as soon as made (not as one 16-byte store a group):
            // eight fewer live registers, so that six CTAs fit an SM
            // without spills (`BWD_MIN_CTAS`).
            if write {
                b.st_shared(px, i as i32, enc);
                b.st_shared(pg, i as i32, r);
            }
            let be = b.fmul(RN, cb, e);
            cb = b.selp(n, be, cb);
            ca = b.ffma(RN, cb, r, ca);
        }
        assign(b, p, acc);
        b.assign(a, ca);
        b.assign(bb, cb);
    });
    [a, bb]
}

/// The outputs, right to left from `z0`: `gx` replaces `r` in `seg_g`.
fn output_walk(b: &mut KernelBuilder, seg_x: SharedPtr<F32>, seg_g: SharedPtr<F32>, z0: Reg<F32>) {
    let z = b.mov(z0);
    b.for_range(0u32, GROUPS, 1u32, |b, kk| {
        let k = b.sub(GROUPS - 1, kk);
        let off = b.shl(k, 2u32);
        let px = b.shared_offset(seg_x, off);
        let pg = b.shared_offset(seg_g, off);
        let ev = b.ld_shared_v4(px, 0);
        let rv = b.ld_shared_v4(pg, 0);
        let mut gx = rv;
        let mut cz = z;
        for i in (0..4).rev() {
            let u = b.fadd(RN, rv[i], cz);
            let bits = b.f32_bits(ev[i]);
            let sb = b.u32_as_s32(bits);
            let n = b.setp(Cmp::Lt, sb, 0i32);
            let mag = b.and(bits, 0x7fff_ffffu32);
            let e = b.f32_from_bits(mag);
            let pe = b.fmul(RN, e, u);
            gx[i] = b.selp(n, u, pe);
            cz = b.selp(n, pe, u);
        }
        b.st_shared_v4(pg, 0, gx);
        b.assign(z, cz);
    });
}

/// The shared arrays of the backward kernels.
struct BwdSmem {
    xs: SharedArray<F32>,
    gs: SharedArray<F32>,
    wtf: SharedArray<F32>,
    qsf: SharedArray<F32>,
    wtr: SharedArray<F32>,
    qsr: SharedArray<F32>,
    zs: SharedArray<F32>,
}

fn bwd_smem(b: &mut KernelBuilder) -> BwdSmem {
    BwdSmem {
        xs: b.shared_array::<F32>("xs", BUF, 16),
        gs: b.shared_array::<F32>("gs", BUF, 16),
        wtf: b.shared_array::<F32>("wtf", 2 * W, 8),
        qsf: b.shared_array::<F32>("qsf", 2 * (W + 1), 8),
        wtr: b.shared_array::<F32>("wtr", 2 * W, 8),
        qsr: b.shared_array::<F32>("qsr", 2 * W, 8),
        zs: b.shared_array::<F32>("zs", 1, 4),
    }
}

impl BwdSmem {
    /// Stage the tile at `start` of the row at `base`: `x` into `xs`
    /// (padding `−∞`) and, when given, `g` into `gs` (padding `+0`).
    #[allow(clippy::too_many_arguments)]
    fn stage(
        &self,
        b: &mut KernelBuilder,
        c: Cta,
        x: GlobalPtr<F32>,
        g: Option<GlobalPtr<F32>>,
        base: Reg<U64>,
        start: Reg<U32>,
        t: Reg<U32>,
    ) {
        stage(
            b,
            c,
            x,
            &self.xs,
            base,
            start,
            t,
            f32::NEG_INFINITY,
            BWD_BATCH,
            false,
        );
        if let Some(g) = g {
            stage(b, c, g, &self.gs, base, start, t, 0.0, BWD_BATCH, false);
        }
    }
}

/// The forward half of a backward tile (x and g staged): the segment
/// carry from the pair tree and the carry `cp` (`has`: there is one), then
/// the per-element walk; returns the segment's affine aggregate.
#[allow(clippy::too_many_arguments)]
fn bwd_forward_half(
    b: &mut KernelBuilder,
    c: Cta,
    sm: &BwdSmem,
    seg_x: SharedPtr<F32>,
    seg_g: SharedPtr<F32>,
    cp: Val<2>,
    has: Reg<Pred>,
    write: bool,
) -> Val<2> {
    let agg = bwd_aggregate(b, seg_x);
    let inc = kogge_stone(b, c, agg, false, &pair_op);
    warp_chain(
        b,
        c,
        inc,
        false,
        &sm.wtf,
        Some(&sm.qsf),
        &pair_op,
        |_, _| {},
    );
    let e = exclusive(b, c, inc, false, &sm.qsf, &pair_op);
    let k = with_carry(b, c, cp, e, has, &pair_op);
    let first = b.pnot(has);
    let none = b.pand(first, c.t0);
    let id = [b.mov(-f32::MAX), b.mov(0f32)];
    let k = sel(b, none, id, k);
    value_walk(b, seg_x, seg_g, k, write)
}

/// The most CTAs per SM `lcse_bwd` asks ptxas to fit (`.minnctapersm`):
/// six, what its 37 KB of shared memory allow on sm_90 (228 KB an SM), so
/// that its registers (80 a thread) are not the limit (five CTAs at 93).
/// Where the SM's shared memory holds fewer, it asks for those
/// ([`bwd_min_ctas`]): asking for more than can be resident only squeezes
/// the registers (on sm_70, two resident, six asked for spilled 8 bytes).
pub const BWD_MIN_CTAS: u32 = 6;

/// Shared bytes of `lcse_bwd`, at least (the arrays of `bwd_smem` and
/// 64 bytes for their alignment; ptxas reports 37 004).
const BWD_SMEM_BYTES: u32 = 4 * (2 * BUF + 8 * W + 3) + 64;

/// The CTAs per SM `lcse_bwd` asks for on `sm`: as many as its shared
/// memory holds, at most [`BWD_MIN_CTAS`], at least 1.
pub fn bwd_min_ctas(sm: Sm) -> u32 {
    let i = sm.info();
    (i.smem_per_sm / (BWD_SMEM_BYTES + i.reserved_smem_per_cta)).clamp(1, BWD_MIN_CTAS)
}

/// `lcse_bwd`: the backward of the work items' tiles.
pub fn generate_bwd(sm: Sm) -> Result<PtxModule> {
    let mut b = tile_builder(BWD, sm);
    b.min_ctas_per_sm(bwd_min_ctas(sm));
    let p = b.params::<BwdArgs>();
    let s = bwd_smem(&mut b);
    let c = cta(&mut b, p.flags);
    let seg_x = segment(&mut b, c, &s.xs);
    let seg_g = segment(&mut b, c, &s.gs);
    let last = b.setp(Cmp::Eq, c.tid, THREADS - 1);
    let sp = b.and(p.flags, SPLIT);
    let split = b.setp(Cmp::Ne, sp, 0u32);
    let ctaid = b.ctaid_x();
    let nct = b.nctaid_x();
    b.for_range(ctaid, p.items, nct, |b, item| {
        let it = item_of(b, item, p.flags, p.ntiles, p.ntiles, 0);
        let base = b.mul_wide_u32(it.row, p.t);
        let rowt = b.mul_lo(it.row, p.ntiles);
        // Pass 1 (row path): the pair carries of tiles 1..n into fcarry,
        // by the carry tree (step τ: a run's first tile τ ≥ 1 takes its run
        // prefix, then tile τ < n − 1 chains its total into C_{τ+1}).
        let l = run_len(b, p.ntiles);
        let many = b.setp(Cmp::Gt, p.ntiles, 1u32);
        let row_path = b.pnot(split);
        let pass1 = b.pand(many, row_path);
        b.if_(pass1, |b| {
            let cp = [b.mov(-f32::MAX), b.mov(0f32)];
            let n1 = b.sub(p.ntiles, 1u32);
            b.for_range(0u32, p.ntiles, 1u32, |b, tau| {
                let run = RunPos::new(b, tau, l);
                b.if_(run.start, |b| {
                    let load =
                        |b: &mut KernelBuilder, i: usize| b.ld_shared(seg_x, RUN_AGG + i as i32);
                    let e = run.prefix(b, c, load, &s.wtf, &s.qsf, &pair_op);
                    let i = b.add(rowt, tau);
                    let mine = b.setp(Cmp::Eq, c.tid, run.j);
                    b.if_(mine, |b| st_val_global(b, p.fcarry, i, e));
                    b.bar_sync();
                    b.if_(c.t0, |b| {
                        let v = ld_val_global::<2>(b, p.fcarry, i);
                        assign(b, cp, v);
                    });
                });
                let tile = b.setp(Cmp::Lt, tau, n1);
                b.if_(tile, |b| {
                    let start = b.mul_lo(tau, TILE as u32);
                    s.stage(b, c, p.x, None, base, start, p.t);
                    b.bar_sync();
                    let agg = bwd_aggregate(b, seg_x);
                    let inc = kogge_stone(b, c, agg, false, &pair_op);
                    let has = b.setp(Cmp::Ne, tau, 0u32);
                    warp_chain(b, c, inc, false, &s.wtf, None, &pair_op, |b, total| {
                        let nc = pair_op(b, cp, total);
                        let nc = sel(b, has, nc, total);
                        assign(b, cp, nc);
                        let i = b.add(rowt, tau);
                        let i = b.add(i, 1u32);
                        st_val_global(b, p.fcarry, i, nc);
                        let gp = run_agg_slot(b, &s.xs, run.j, RUN_AGG);
                        run.accumulate(b, [gp], total, &pair_op);
                    });
                    // Before the next tile's staging overwrites the tile.
                    b.bar_sync();
                });
            });
        });
        // Pass 2: the tiles from the last.
        let zc = b.mov(0f32);
        b.if_(split, |b| {
            let i = b.add(rowt, it.first);
            let zp = b.offset(p.zcarry, i);
            let v = b.ld_global(zp, 0);
            b.assign(zc, v);
        });
        let count = b.sub(it.end, it.first);
        b.for_range(0u32, count, 1u32, |b, kk| {
            let tau = b.sub(it.end, 1u32);
            let tau = b.sub(tau, kk);
            let has = b.setp(Cmp::Ne, tau, 0u32);
            let start = b.mul_lo(tau, TILE as u32);
            s.stage(b, c, p.x, Some(p.g), base, start, p.t);
            // After the barrier: on the row path thread 0 wrote the carry
            // in pass 1, and the other warps must not read it before.
            b.bar_sync();
            // The reverse carry tree (row path; kk = ρ, the tiles in reverse
            // order): a run's first tile starts from its run prefix.
            let run = RunPos::new(b, kk, l);
            b.if_(run.start, |b| {
                let load =
                    |b: &mut KernelBuilder, i: usize| b.ld_shared(seg_x, RUN_AGG_REV + i as i32);
                let e = run.prefix(b, c, load, &s.wtf, &s.qsf, &affine_op);
                let mine = b.setp(Cmp::Eq, c.tid, run.j);
                b.if_(mine, |b| {
                    let zero = b.mov(0f32);
                    let z = b.ffma(RN, e[1], zero, e[0]);
                    b.st_shared_at(&s.zs, 0, z);
                });
                b.bar_sync();
                let v = b.ld_shared_at(&s.zs, 0);
                b.assign(zc, v);
            });
            let cp = [b.mov(-f32::MAX), b.mov(0f32)];
            b.if_(has, |b| {
                let i = b.add(rowt, tau);
                let v = ld_val_global::<2>(b, p.fcarry, i);
                assign(b, cp, v);
            });
            let aff = bwd_forward_half(b, c, &s, seg_x, seg_g, cp, has, true);
            let inc = kogge_stone(b, c, aff, true, &affine_op);
            warp_chain(
                b,
                c,
                inc,
                true,
                &s.wtr,
                Some(&s.qsr),
                &affine_op,
                |b, total| {
                    let nz = b.ffma(RN, total[1], zc, total[0]);
                    b.st_shared_at(&s.zs, 0, nz);
                    let gp = run_agg_slot(b, &s.xs, run.j, RUN_AGG_REV);
                    run.accumulate(b, [gp], total, &affine_op);
                },
            );
            let e = exclusive(b, c, inc, true, &s.qsr, &affine_op);
            let ez = b.ffma(RN, e[1], zc, e[0]);
            let zin = b.selp(last, zc, ez);
            output_walk(b, seg_x, seg_g, zin);
            b.bar_sync();
            store(b, c, p.gx, &s.gs, base, start, p.t, BWD_BATCH, false);
            let nz = b.ld_shared_at(&s.zs, 0);
            b.assign(zc, nz);
            b.bar_sync();
        });
    });
    b.finish()
}

/// `lcse_bwd_tot`: the pair tile totals of tiles `τ < n_τ − 1`.
pub fn generate_bwd_tot(sm: Sm) -> Result<PtxModule> {
    let mut b = tile_builder(BWD_TOT, sm);
    let p = b.params::<TotArgs>();
    let s = bwd_smem(&mut b);
    let c = cta(&mut b, p.flags);
    let seg_x = segment(&mut b, c, &s.xs);
    let ctaid = b.ctaid_x();
    let nct = b.nctaid_x();
    let per_row = b.sub(p.ntiles, 1u32);
    b.for_range(ctaid, p.items, nct, |b, item| {
        let it = item_of(b, item, p.flags, p.ntiles, per_row, 0);
        let base = b.mul_wide_u32(it.row, p.t);
        let rowt = b.mul_lo(it.row, p.ntiles);
        let start = b.mul_lo(it.first, TILE as u32);
        s.stage(b, c, p.x, None, base, start, p.t);
        b.bar_sync();
        let agg = bwd_aggregate(b, seg_x);
        let inc = kogge_stone(b, c, agg, false, &pair_op);
        warp_chain(b, c, inc, false, &s.wtf, None, &pair_op, |b, total| {
            let i = b.add(rowt, it.first);
            st_val_global(b, p.tot, i, total);
        });
    });
    b.finish()
}

/// `lcse_bwd_carry`: the pair carries `C_τ` per row.
pub fn generate_bwd_carry(sm: Sm) -> Result<PtxModule> {
    generate_carry::<2>(BWD_CARRY, sm, &pair_op, false)
}

/// `lcse_bwd_aff`: the affine maps `(a_τ, b_τ)` of tiles `τ ≥ 1`.
pub fn generate_bwd_aff(sm: Sm) -> Result<PtxModule> {
    let mut b = tile_builder(BWD_AFF, sm);
    let p = b.params::<AffArgs>();
    let s = bwd_smem(&mut b);
    let c = cta(&mut b, p.flags);
    let seg_x = segment(&mut b, c, &s.xs);
    let seg_g = segment(&mut b, c, &s.gs);
    let ctaid = b.ctaid_x();
    let nct = b.nctaid_x();
    let per_row = b.sub(p.ntiles, 1u32);
    b.for_range(ctaid, p.items, nct, |b, item| {
        let it = item_of(b, item, p.flags, p.ntiles, per_row, 1);
        let base = b.mul_wide_u32(it.row, p.t);
        let rowt = b.mul_lo(it.row, p.ntiles);
        let i = b.add(rowt, it.first);
        let cp = ld_val_global::<2>(b, p.fcarry, i);
        let start = b.mul_lo(it.first, TILE as u32);
        s.stage(b, c, p.x, Some(p.g), base, start, p.t);
        b.bar_sync();
        let has = b.setp(Cmp::Ne, it.first, 0u32);
        let aff = bwd_forward_half(b, c, &s, seg_x, seg_g, cp, has, false);
        let inc = kogge_stone(b, c, aff, true, &affine_op);
        warp_chain(b, c, inc, true, &s.wtr, None, &affine_op, |b, total| {
            st_val_global(b, p.aff, i, total);
        });
    });
    b.finish()
}

/// `lcse_bwd_zcarry`: the reverse carries `Zc_τ` per row by the carry
/// tree over the tile maps in reverse order.
pub fn generate_bwd_zcarry(sm: Sm) -> Result<PtxModule> {
    generate_carry::<2>(BWD_ZCARRY, sm, &affine_op, true)
}

/// Every kernel of the family for `sm`.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    Ok(vec![
        generate_fwd(sm)?,
        generate_fwd_split(sm)?,
        generate_bwd(sm)?,
        generate_bwd_tot(sm)?,
        generate_bwd_carry(sm)?,
        generate_bwd_aff(sm)?,
        generate_bwd_zcarry(sm)?,
    ])
}
