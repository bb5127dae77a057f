//! The one-block staged kernel (issue 31, speed step), now the tf32
//! grad-input kernel only (the forward kernels and bf16/f16 grad-input
//! are [`super::grouped`]), and the fragment helpers the other kernels
//! share: one CTA computes a tile of [`Tile::tokens`] rows of `N` × the
//! `B` output features of one output block (column block `c`), over that
//! block's entries in the contract's order.
//!
//! # Data movement
//! Per entry (a slot of row `r`, or an entry of column `c` in the
//! transposed index) the CTA stages two tiles into shared memory with
//! `cp.async.cg` (16 bytes a copy, one commit group per entry), double
//! buffered: while the tensor cores work on entry `i`, the copies of entry
//! `i + 1` are in flight (`cp.async.wait_group 1`, then `bar.sync`):
//! * the **input tile**: `tokens` rows of the entry's `B` input features
//!   (`x[n][c·B ..]` forward, `gy[n][r·B ..]` grad-input). Rows `n ≥ N`
//!   are copied with `src_size` 0, i.e. zero-filled (their source address
//!   clamped to row `N − 1`); they feed only output rows that are never
//!   stored;
//! * the **values block** `values[s]`, `B × B`, as stored (tf32
//!   grad-input: single-buffered, see below).
//!
//! Every staged row is padded by 16 bytes, so the 8 row addresses of an
//! `ldmatrix` phase (same column, consecutive rows) fall in 8 distinct
//! 16-byte bank groups (the row pitch is an odd number of 16-byte units
//! modulo 8 for every `B` and element size).
//!
//! # MMA orientation
//! The MMA's `M` is the tokens and its `N` the output features: `A` =
//! the input tile (row-major: `ldmatrix.x4`), `B[k][f]` = `values[s, f,
//! k]` forward (rows of `k`: `ldmatrix.x4` without `.trans`) or
//! `values[s, k, f]` grad-input (row-major `B`: `ldmatrix.x4.trans` for
//! bf16/f16; tf32 cannot transpose 32-bit elements with `ldmatrix`, so
//! its grad-input transposes the block at staging, below, and loads `B`
//! as the forward pass does). tf32 operands are
//! loaded as raw f32 bits (an 8×8 `.b16` matrix is an 8 × 4 `f32` matrix,
//! exactly the tf32 fragment layout) and converted with
//! `cvt.rna.tf32.f32`: the input tile's per fragment (each element feeds
//! one warp), the values block's once, in shared memory, by the thread
//! that staged it, after its `cp.async.wait_group` and before the
//! `bar.sync` (each element feeds every warp along the tokens). tf32
//! grad-input stages the raw block into buffer 0 and writes it rounded
//! and transposed (`[f][k]`, four `st.shared.b32` a 16-byte unit) into
//! buffer 1; the next entry's copies are issued after that `bar.sync`
//! (`cp.async.wait_group 0` before it), so one raw buffer suffices. The products of the block FMA are exact and the
//! pairs keep their `k` order, so which operand is `A` changes no bit:
//! each output element is the contract's chain (entries ascending, `k`
//! chunks ascending, one `mma.sync` each) from `+0.0`.
//!
//! # Warps
//! [`WARPS`] warps split the tile into warp tiles of
//! `tokens / warps_tok` × `B / (WARPS / warps_tok)`: each lane keeps
//! `(M/16) × (N/8)` accumulator fragments, every `A` fragment feeds `N/8`
//! `HMMA`s and every `B` fragment `M/16`. The epilogue stores each lane's
//! two adjacent features with one `st.global.v2.f32` (predicated on `n <
//! N`), or, when the
//! `out_bf16` argument is 1 (a CTA-uniform branch, so one module serves
//! both output types), rounds the pair with one `cvt.rn.bf16x2.f32` (each
//! half `cvt.rn.bf16.f32` of its f32 result) and stores it with one
//! `st.global.b32`.

use crate::dsl::types::{B32, F32, MmaInput, Reg, U32, U64};
use crate::dsl::{Cmp, FragA, FragB, FragC, GlobalPtr, KernelBuilder, PtxModule, SharedPtr};
use crate::error::Result;
use crate::tensor_core::InputFormat;

use super::super::host::TcPrecision;
use super::shape::Shape;
use super::{GradInputArgs, THREADS, WARPS, builder, mma_into, name};

/// The CTA tile of the staged forward and grad-input kernels of one
/// precision and block size (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// Rows of `N` per CTA tile.
    pub tokens: u32,
    /// Warps along the tokens; the other factor of [`WARPS`] splits the
    /// `B` features.
    pub warps_tok: u32,
}

/// The tile of the one-block kernel (tf32 grad-input; also the grad-values
/// kernels' reference) of precision `prec` at block size `bs` (16, 32 or 64): as many
/// tokens as the double-buffered staging fits in 48 KiB of static shared
/// memory.
pub fn tile(prec: TcPrecision, bs: u32) -> Tile {
    let (tokens, warps_tok) = match (prec, bs) {
        (TcPrecision::Tf32, 64) => (16, 1),
        (TcPrecision::Tf32, 32) => (128, 4),
        (TcPrecision::Tf32, _) => (256, 4),
        (_, 64) => (64, 2),
        _ => (256, 4),
    };
    Tile { tokens, warps_tok }
}

/// The shape of a forward or grad-input kernel: the tile's tokens are the
/// MMA's rows, split over `warps_tok` warps; the features its columns.
fn shape<T: MmaInput>(prec: TcPrecision, bs: u32, trans: bool) -> Shape {
    let t = tile(prec, bs);
    let warp = (t.tokens / t.warps_tok, bs / (WARPS / t.warps_tok));
    // tf32 cannot transpose 32-bit elements with `ldmatrix`: its
    // grad-input transposes the values block at staging instead
    let stage_t = trans && T::FORMAT == InputFormat::Tf32;
    let mut sh = Shape::new::<T>(prec, bs, 16, t.tokens, warp, trans && !stage_t);
    sh.stage_t = stage_t;
    sh
}

/// The kernel's operands, whichever pass it is.
struct Io {
    input: Reg<U64>,
    values: Reg<U64>,
    out: Reg<U64>,
    n: Reg<U32>,
    in_width: Reg<U32>,
    out_width: Reg<U32>,
    /// output blocks (`R` forward, `C` grad-input)
    blocks: Reg<U32>,
    /// 1: store bf16 bits (`cvt.rn.bf16x2.f32`), 0: f32
    out_bf16: Reg<U32>,
}

/// One entry of an output block's reduction: its slot and the input block
/// it multiplies.
struct Entry {
    slot: Reg<U32>,
    block: Reg<U32>,
}

/// Which entries an output block runs over.
trait Entries {
    /// `[lo, hi)` of output block `o`.
    fn range(&self, b: &mut KernelBuilder, o: Reg<U32>) -> (Reg<U32>, Reg<U32>);
    /// Entry `i` of output block `o`.
    fn entry(&self, b: &mut KernelBuilder, o: Reg<U32>, i: Reg<U32>) -> Entry;
}

/// Grad-input: the transposed index's entries of column block `o`.
struct Index {
    offsets: GlobalPtr<U32>,
    slots: GlobalPtr<U32>,
    k: Reg<U32>,
}

impl Entries for Index {
    fn range(&self, b: &mut KernelBuilder, o: Reg<U32>) -> (Reg<U32>, Reg<U32>) {
        let op = b.offset(self.offsets, o);
        (b.ld_global(op, 0), b.ld_global(op, 1))
    }
    fn entry(&self, b: &mut KernelBuilder, _o: Reg<U32>, i: Reg<U32>) -> Entry {
        let sp = b.offset(self.slots, i);
        let slot = b.ld_global(sp, 0);
        let block = b.div(slot, self.k);
        Entry { slot, block }
    }
}

pub(super) fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

pub(super) fn gptr(r: Reg<U64>) -> GlobalPtr<U32> {
    GlobalPtr::from_reg(r)
}

pub(super) fn sptr<E>(r: Reg<U32>) -> SharedPtr<E> {
    SharedPtr::from_reg(r)
}

/// A raw f32 register (as loaded) as a tf32 operand of type `T`.
pub(super) fn tf32_operand<T: MmaInput>(b: &mut KernelBuilder, bits: Reg<U32>) -> Reg<T> {
    let f = b.f32_from_bits(bits);
    let t = b.cvt_to_tf32(f);
    let w = b.packed_bits(t);
    b.u32_as_packed::<T>(w)
}

/// `ldmatrix.x4` (no `.trans` unless `trans`) into four operand registers
/// of `T` (tf32: raw bits converted with `cvt.rna.tf32.f32`).
pub(super) fn ldsm4<T: MmaInput>(b: &mut KernelBuilder, p: Reg<U32>, trans: bool) -> [Reg<T>; 4] {
    ldsm4_as::<T>(b, p, trans, true)
}

/// [`ldsm4`]; tf32 bits already converted at staging (`convert` false)
/// are taken as they are.
fn ldsm4_as<T: MmaInput>(
    b: &mut KernelBuilder,
    p: Reg<U32>,
    trans: bool,
    convert: bool,
) -> [Reg<T>; 4] {
    if T::FORMAT == InputFormat::Tf32 {
        let raw = b.ldmatrix_x4::<B32, U32>(sptr(p), trans);
        raw.map(|r| {
            let u = b.b32_as_u32(r);
            if convert {
                tf32_operand::<T>(b, u)
            } else {
                b.u32_as_packed::<T>(u)
            }
        })
    } else {
        b.ldmatrix_x4::<T, U32>(sptr(p), trans)
    }
}

/// tf32: round the thread's own staged units of the values block in
/// buffer `buf` to tf32 in place (`cvt.rna.tf32.f32`, the conversion the
/// fragments would do), after its copies completed: every warp's `B`
/// fragments then load them as they are.
///
/// With [`Shape::stage_t`] (grad-input) the units come from buffer 0 and
/// go transposed into buffer 1: the unit of row `k`, features `4u ..
/// 4u + 3`, to rows `4u + e`, element `k`.
fn convert_values(b: &mut KernelBuilder, sh: &Shape, st: &Stage, tid: Reg<U32>, buf: Reg<U32>) {
    let vd = if sh.stage_t {
        st.vdst
    } else {
        let voff = b.mul_lo(buf, sh.vbuf());
        b.add(st.vdst, voff)
    };
    let count = sh.bs * sh.cpr;
    let rstep = THREADS / sh.cpr;
    let conv = |b: &mut KernelBuilder| {
        for j in 0..count.div_ceil(THREADS) {
            let p = sptr::<U32>(vd);
            let k = (j * rstep * sh.pitch / 4) as i32;
            let raw = b.ld_shared_v4(p, k);
            let out = raw.map(|u| {
                let f = b.f32_from_bits(u);
                let t = b.cvt_to_tf32(f);
                b.packed_bits(t)
            });
            if let Some(td) = st.tdst {
                // stage_t: transposed into buffer 1
                let q = sptr::<U32>(td);
                for (e, w) in out.into_iter().enumerate() {
                    b.st_shared(q, (j * rstep + e as u32 * sh.pitch / 4) as i32, w);
                }
            } else {
                b.st_shared_v4(p, k, out);
            }
        }
    };
    if count < THREADS {
        let some = b.setp(Cmp::Lt, tid, count);
        b.if_(some, conv);
    } else {
        conv(b);
    }
}

/// Per-thread constants of the `cp.async` staging.
struct Stage {
    /// input tile: per copy, the source row's address (plus the thread's
    /// chunk) and its `src_size` (16, or 0 past `N`)
    src: Vec<Reg<U64>>,
    size: Vec<Reg<U32>>,
    /// the thread's first input-tile destination (buffer 0)
    xdst: Reg<U32>,
    /// the thread's byte offset into a values block, and its first
    /// destination (buffer 0)
    vsrc: Reg<U64>,
    vdst: Reg<U32>,
    /// [`Shape::stage_t`]: the thread's first transposed destination
    /// (buffer 1)
    tdst: Option<Reg<U32>>,
}

/// Issue the copies of `entry` into buffer `buf` (0 or 1).
fn issue(
    b: &mut KernelBuilder,
    sh: &Shape,
    io: &Io,
    st: &Stage,
    tid: Reg<U32>,
    en: &Entry,
    buf: Reg<U32>,
) {
    let body = |b: &mut KernelBuilder| {
        // the input tile: column block `en.block`
        let cb = b.mul_wide_u32(en.block, sh.rowb);
        let xoff = b.mul_lo(buf, sh.buf());
        let xd = b.add(st.xdst, xoff);
        let rstep = 128 / sh.cpr; // rows between a thread's copies
        for (j, (&src, &size)) in st.src.iter().zip(&st.size).enumerate() {
            let s = b.add(src, cb);
            let d = b.add(xd, j as u32 * rstep * sh.pitch);
            b.cp_async_cg(sptr::<U32>(d), gptr(s), Some(size.into()));
        }
        // the values block `values[slot]`
        let vb = b.mul_wide_u32(en.slot, sh.bs * sh.rowb);
        let vb = b.add(vb, io.values);
        let vs = b.add(vb, st.vsrc);
        // stage_t: always buffer 0 (the raw block is transposed into
        // buffer 1 before the next copies are issued)
        let vd = if sh.stage_t {
            st.vdst
        } else {
            let voff = b.mul_lo(buf, sh.vbuf());
            b.add(st.vdst, voff)
        };
        let count = sh.bs * sh.cpr;
        let copy = |b: &mut KernelBuilder| {
            for j in 0..count.div_ceil(THREADS) {
                let s = b.add(vs, u64::from(j * THREADS * 16));
                let d = b.add(vd, j * rstep * sh.pitch);
                b.cp_async_cg(sptr::<U32>(d), gptr(s), None);
            }
        };
        if count < THREADS {
            let some = b.setp(Cmp::Lt, tid, count);
            b.if_(some, copy);
        } else {
            copy(b);
        }
    };
    body(b);
}

/// Lane addresses (buffer 0) of the fragments.
struct Lanes {
    a: Reg<U32>,
    b: Reg<U32>,
}

/// The MMAs of one staged entry from buffer `buf`.
fn compute<T: MmaInput>(
    b: &mut KernelBuilder,
    sh: &Shape,
    ln: &Lanes,
    acc: &[Vec<FragC>],
    buf: Reg<U32>,
) {
    let xoff = b.mul_lo(buf, sh.buf());
    let abase = b.add(ln.a, xoff);
    let bbase = if sh.stage_t {
        b.add(ln.b, sh.vbuf())
    } else {
        let voff = b.mul_lo(buf, sh.vbuf());
        b.add(ln.b, voff)
    };
    let tf32 = sh.fmt == InputFormat::Tf32;
    for kc in 0..sh.chunks() {
        let frag_a: Vec<FragA<T>> = (0..sh.mt)
            .map(|mi| {
                let p = b.add(abase, mi * 16 * sh.pitch + kc * 32);
                FragA {
                    regs: ldsm4::<T>(b, p, false),
                }
            })
            .collect();
        let mut frag_b: Vec<FragB<T>> = Vec::new();
        for np in 0..sh.nt / 2 {
            let off = if sh.trans {
                kc * 16 * sh.pitch + np * 16 * sh.e
            } else {
                np * 16 * sh.pitch + kc * 32
            };
            let p = b.add(bbase, off);
            // tf32 values were converted (and for grad-input transposed)
            // at staging
            let [r0, r1, r2, r3] = ldsm4_as::<T>(b, p, sh.trans, !tf32);
            frag_b.push(FragB { regs: [r0, r1] });
            frag_b.push(FragB { regs: [r2, r3] });
        }
        for (mi, a) in frag_a.iter().enumerate() {
            for (ni, bf) in frag_b.iter().enumerate() {
                mma_into(b, *a, *bf, acc[mi][ni]);
            }
        }
    }
}

fn kernel<T: MmaInput>(
    mut b: KernelBuilder,
    sh: &Shape,
    io: &Io,
    entries: &dyn Entries,
) -> Result<PtxModule> {
    let xs = b.shared_array::<U32>("xs", 2 * sh.buf() / 4, 16);
    let vs = b.shared_array::<U32>("vs", 2 * sh.vbuf() / 4, 16);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let w = b.shr(tid, 5u32);
    let warps_tok = sh.tokens / sh.wm;
    let wtok = b.rem(w, warps_tok);
    let wfeat = b.div(w, warps_tok);
    let wt0 = b.mul_lo(wtok, sh.wm);
    let wf0 = b.mul_lo(wfeat, sh.wn);
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let l16 = b.and(lane, 15u32);
    let l8 = b.and(lane, 7u32);
    let hi16 = b.shr(lane, 4u32); // lane / 16
    let mid = b.shr(lane, 3u32);
    let mid = b.and(mid, 1u32); // (lane / 8) % 2
    let xs0 = b.shared_elem(&xs, 0u32).reg;
    let vs0 = b.shared_elem(&vs, 0u32).reg;
    // A: row wt0 + lane % 16, 16-byte unit lane / 16
    let arow = b.add(wt0, l16);
    let a = b.mad_lo(arow, sh.pitch, xs0);
    let a = b.mad_lo(hi16, 16u32, a);
    let bl = if sh.trans {
        // row k = lane % 8 + 8·((lane / 8) % 2), feature wf0 + 8·(lane / 16)
        let k = b.mad_lo(mid, 8u32, l8);
        let p = b.mad_lo(k, sh.pitch, vs0);
        let f = b.mad_lo(hi16, 8u32, wf0);
        b.mad_lo(f, sh.e, p)
    } else {
        // row feature wf0 + lane % 8 + 8·(lane / 16), unit (lane / 8) % 2
        let f = b.mad_lo(hi16, 8u32, l8);
        let f = b.add(f, wf0);
        let p = b.mad_lo(f, sh.pitch, vs0);
        b.mad_lo(mid, 16u32, p)
    };
    let ln = Lanes { a, b: bl };
    // staging: the thread's chunk of a row and first row
    let ch = b.and(tid, sh.cpr - 1);
    let row0 = b.shr(tid, log2(sh.cpr));
    let xdst = b.mad_lo(row0, sh.pitch, xs0);
    let xdst = b.mad_lo(ch, 16u32, xdst);
    let vdst = b.mad_lo(row0, sh.pitch, vs0);
    let vdst = b.mad_lo(ch, 16u32, vdst);
    // transposed: row 4·ch (+ e), element row0 (+ j·rstep), buffer 1
    let tdst = sh.stage_t.then(|| {
        let c4 = b.shl(ch, 2u32);
        let tdst = b.mad_lo(c4, sh.pitch, vs0);
        let tdst = b.mad_lo(row0, 4u32, tdst);
        b.add(tdst, sh.vbuf())
    });
    let tid16 = b.shl(tid, 4u32);
    let vsrc = b.u32_to_u64(tid16);
    let ch16 = b.shl(ch, 4u32);
    let ch16 = b.u32_to_u64(ch16);
    let last = b.sub(io.n, 1u32);
    let copies = sh.tokens * sh.cpr / THREADS;
    let rstep = THREADS / sh.cpr;
    let ntiles = b.add(io.n, sh.tokens - 1);
    let ntiles = b.shr(ntiles, log2(sh.tokens));
    let total = b.mul_lo(ntiles, io.blocks);
    let first = b.ctaid_x();
    let step = b.nctaid_x();
    b.for_range(first, total, step, |b, tile| {
        let o = b.rem(tile, io.blocks);
        let ti = b.div(tile, io.blocks);
        let n0 = b.shl(ti, log2(sh.tokens));
        let mut src = Vec::new();
        let mut size = Vec::new();
        for j in 0..copies {
            let r = b.add(n0, row0);
            let r = b.add(r, j * rstep);
            let inside = b.setp(Cmp::Lt, r, io.n);
            size.push(b.selp(inside, 16u32, 0u32));
            let rc = b.min(r, last);
            let el = b.mul_wide_u32(rc, io.in_width);
            let by = b.shl(el, log2(sh.e));
            let by = b.add(by, ch16);
            src.push(b.add(by, io.input));
        }
        let st = Stage {
            src,
            size,
            xdst,
            vsrc,
            vdst,
            tdst,
        };
        let acc: Vec<Vec<FragC>> = (0..sh.mt)
            .map(|_| (0..sh.nt).map(|_| b.frag_c_zero()).collect())
            .collect();
        let (lo, hi) = entries.range(b, o);
        // prologue: entry `lo` into buffer 0
        let cur_live = b.var::<U32>(0u32);
        let any = b.setp(Cmp::Lt, lo, hi);
        b.if_(any, |b| {
            let en = entries.entry(b, o, lo);
            let zero = b.mov(0u32);
            issue(b, sh, io, &st, tid, &en, zero);
            let l = b.mov(1u32);
            b.set(&cur_live, l);
        });
        b.cp_async_commit_group();
        let buf = b.var::<U32>(0u32);
        b.for_range(lo, hi, 1u32, |b, i| {
            let cur = b.get(&buf);
            let nbuf = b.xor(cur, 1u32);
            let next = b.add(i, 1u32);
            let more = b.setp(Cmp::Lt, next, hi);
            let next_live = b.var::<U32>(0u32);
            let issue_next = |b: &mut KernelBuilder| {
                b.if_(more, |b| {
                    let en = entries.entry(b, o, next);
                    issue(b, sh, io, &st, tid, &en, nbuf);
                    let l = b.mov(1u32);
                    b.set(&next_live, l);
                });
                b.cp_async_commit_group();
            };
            let live = if sh.stage_t {
                // the raw values block is single-buffered: transpose it
                // (the thread's own units) before the next copies
                b.cp_async_wait_group(0);
                let live = b.get(&cur_live);
                let live = b.setp(Cmp::Ne, live, 0u32);
                b.if_(live, |b| convert_values(b, sh, &st, tid, cur));
                b.bar_sync();
                issue_next(b);
                live
            } else {
                issue_next(b);
                b.cp_async_wait_group(1);
                let tf32 = sh.fmt == InputFormat::Tf32;
                if !tf32 {
                    b.bar_sync();
                }
                let live = b.get(&cur_live);
                let live = b.setp(Cmp::Ne, live, 0u32);
                if tf32 {
                    // round the thread's own units, then let every warp read
                    b.if_(live, |b| convert_values(b, sh, &st, tid, cur));
                    b.bar_sync();
                }
                live
            };
            b.if_(live, |b| compute::<T>(b, sh, &ln, &acc, cur));
            b.bar_sync();
            b.set(&buf, nbuf);
            let nl = b.get(&next_live);
            b.set(&cur_live, nl);
        });
        // epilogue: lane (g, t) holds rows g and g + 8 of each 16-row tile,
        // features 2t and 2t + 1 of each 8-feature tile
        let obase = b.mul_lo(o, sh.bs);
        let f0 = b.add(obase, wf0);
        let t2 = b.shl(t, 1u32);
        let f0 = b.add(f0, t2);
        let rbase = b.add(n0, wt0);
        let rbase = b.add(rbase, g);
        // per output row of the lane: (inside N, element index of its
        // first feature, the values)
        let mut rows = Vec::new();
        for (mi, frags) in acc.iter().enumerate() {
            for h in 0..2u32 {
                let row = b.add(rbase, mi as u32 * 16 + 8 * h);
                let inside = b.setp(Cmp::Lt, row, io.n);
                let el = b.mul_wide_u32(row, io.out_width);
                let f = b.u32_to_u64(f0);
                let el = b.add(el, f);
                let vals: Vec<[Reg<F32>; 2]> = frags
                    .iter()
                    .map(|fc| [fc.regs[2 * h as usize], fc.regs[2 * h as usize + 1]])
                    .collect();
                rows.push((inside, el, vals));
            }
        }
        // the output type, CTA-uniform: one branch
        let bf16 = b.setp(Cmp::Ne, io.out_bf16, 0u32);
        b.if_else(
            bf16,
            |b| {
                // each pair rounded once (RNE); the lower feature in the
                // low half
                for (inside, el, vals) in &rows {
                    let by = b.shl(*el, 1u32);
                    let p = b.add(by, io.out);
                    let yp = GlobalPtr::<U32>::from_reg(p);
                    let packed: Vec<Reg<U32>> = vals
                        .iter()
                        .map(|v| {
                            let h2 = b.cvt_to_bf16x2(v[1], v[0]);
                            b.packed_bits(h2)
                        })
                        .collect();
                    b.guarded(*inside, |b| {
                        for (ni, w) in packed.iter().enumerate() {
                            b.st_global(yp, (ni * 4) as i32, *w);
                        }
                    });
                }
            },
            |b| {
                for (inside, el, vals) in &rows {
                    let by = b.shl(*el, 2u32);
                    let p = b.add(by, io.out);
                    let yp = GlobalPtr::<F32>::from_reg(p);
                    b.guarded(*inside, |b| {
                        for (ni, v) in vals.iter().enumerate() {
                            b.st_global_v2(yp, (ni * 8) as i32, *v);
                        }
                    });
                }
            },
        );
    });
    b.finish()
}

/// `block_ell_tc_grad_input_{p}_b{B}`, staged (see the [module docs](self)).
pub(super) fn grad_input<T: MmaInput>(
    sm: crate::target::Sm,
    prec: TcPrecision,
    bs: u32,
) -> Result<PtxModule> {
    let sh = shape::<T>(prec, bs, true);
    let mut b = builder(&name("grad_input", prec, bs), sm);
    let p = b.params::<GradInputArgs>();
    let in_width = b.shl(p.r, log2(bs));
    let out_width = b.shl(p.c, log2(bs));
    let io = Io {
        input: p.gy.addr(),
        values: p.values.addr(),
        out: p.gx.addr(),
        n: p.n,
        in_width,
        out_width,
        blocks: p.c,
        out_bf16: p.out_bf16,
    };
    let index = Index {
        offsets: p.offsets,
        slots: p.slots,
        k: p.k,
    };
    kernel::<T>(b, &sh, &io, &index)
}
