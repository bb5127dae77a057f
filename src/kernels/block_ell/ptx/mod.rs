//! The kernels of [`super`], one module per block size `B` (the block is
//! a compile-time constant, so the inner loops unroll with constant shared
//! offsets). Every kernel walks its tiles in a grid-stride loop over CTAs;
//! no kernel uses atomics: each output element has exactly one writer.
//!
//! | kernel | CTA tile | does |
//! |---|---|---|
//! | `block_ell_forward_b{B}` | block row `r` × [`rows_per_tile`] rows of `x` | `y` (+ bias), the contract's `(k, j)` chain per output |
//! | `block_ell_grad_input_b{B}` | column block `c` × [`rows_per_tile`] rows of `gy` | `gx`, the `(slot, i)` chain over the transposed index |
//! | `block_ell_grad_values_b{B}` | one slot × one N-chunk | the chunk's partial of `gv` (its sequential chain) |
//! | `block_ell_grad_bias` | one thread per (chunk, output) | the chunk's partial of `gb` |
//! | `block_ell_fold` | one thread per element | `out = p₀ (+ out)`, then `+ p₁ + p₂ …` in ascending chunk order |
//!
//! **Forward and grad-input** are the same register-tiled gather GEMM.
//! Each of the [`THREADS`] threads owns a `4 × 4` micro-tile: 4 rows
//! (`tn + m·n_threads`) × 4 outputs of the block (`to + a·(B/4)`). For each
//! slot of its block row (forward: `k` ascending, empty slots skipped as
//! a CTA-uniform branch; grad-input: the transposed index's slots of its
//! column block, ascending) the CTA stages the activation tile (rows ×
//! `B`) and the `B × B` weight block in shared memory, the weights as
//! `[output][reduction]` (grad-input transposes them while staging), rows
//! padded to `B + 4` floats (16-byte aligned, 8 consecutive rows cover
//! all banks). Then every thread runs the reduction index (`j`, resp.
//! `i`) ascending with one `fma.rn` per accumulator, reading four steps of
//! each weight and activation row per `ld.shared.v4`. So each output is
//! exactly the contract's chain, whatever the tile.
//!
//! **Grad-values** runs the N-chunk tree in two kernels: the first writes
//! each (slot, chunk) partial as the chunk's sequential chain over its
//! rows (staged in batches of [`GV_ROWS`] rows of `gy` and `x`), the fold
//! adds the partials in ascending chunk order. With a single chunk the
//! first kernel writes `gv` itself. Grad-bias uses the same fold.
//!
//! Indexing: activations (`x`, `y`, `gy`, `gx`) are addressed with 64-bit
//! offsets (`N·C·B` may pass 2³²); the launch code checks that the 32-bit
//! quantities (`N`, `R·B`, `C·B`, `R·K·B·B`, tile counts) fit.

pub mod stats;

use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, Reg, S32, U32};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, PtxModule, Rounding, SharedArray, SharedPtr};
use crate::error::{Error, Result};
use crate::kernel_params;
use crate::target::Sm;

use super::host::{BLOCK_SIZES, N_CHUNK};

/// Threads per CTA of every kernel.
pub const THREADS: u32 = 256;

/// Outputs of a block per thread (gather kernels).
const TILE_O: u32 = 4;
/// Activation rows per thread (gather kernels).
const TILE_N: u32 = 4;
/// Rows of `gy` and `x` staged per batch by the grad-values kernel.
pub const GV_ROWS: u32 = 32;
/// Rows per unrolled step of the grad-values kernel's full batches.
const GV_UNROLL: u32 = 4;

/// Rows of activations one CTA of the forward / grad-input kernel covers:
/// `4 · 256 / (B/4)` = `4096 / B`.
pub const fn rows_per_tile(b: u32) -> u32 {
    TILE_N * THREADS / (b / TILE_O)
}

kernel_params! {
    /// Arguments of `block_ell_forward_b{B}` (`bias` is read only when
    /// `has_bias` is 1; pass any live `f32` buffer otherwise).
    pub struct ForwardArgs => ForwardRegs {
        x: Ptr<F32>,
        values: Ptr<F32>,
        col: Ptr<S32>,
        bias: Ptr<F32>,
        y: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        has_bias: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_grad_input_b{B}` (`offsets [C+1]`, `slots
    /// [nnz]`: the transposed index).
    pub struct GradInputArgs => GradInputRegs {
        gy: Ptr<F32>,
        values: Ptr<F32>,
        offsets: Ptr<U32>,
        slots: Ptr<U32>,
        gx: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_grad_values_b{B}`: partials of chunks
    /// `q0 .. q0 + groups` into `part [groups, R·K·B·B]`.
    pub struct GradValuesArgs => GradValuesRegs {
        x: Ptr<F32>,
        gy: Ptr<F32>,
        col: Ptr<S32>,
        part: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        q0: U32,
        groups: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_grad_bias`: partials of chunks `q0 .. q0 +
    /// groups` into `part [groups, width]` (`width` = `R·B`).
    pub struct GradBiasArgs => GradBiasRegs {
        gy: Ptr<F32>,
        part: Ptr<F32>,
        n: U32,
        width: U32,
        q0: U32,
        groups: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_fold`: over `groups` partials `p` of `len`,
    /// `out = (first ? p₀ : out + p₀) + p₁ + …` element by element.
    pub struct FoldArgs => FoldRegs {
        part: Ptr<F32>,
        out: Ptr<F32>,
        len: U32,
        groups: U32,
        first: U32,
    }
}

fn check_block(b: u32) -> Result<()> {
    if BLOCK_SIZES.contains(&(b as usize)) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "block_ell: block size B = {b} is not supported; supported are {BLOCK_SIZES:?}"
        )))
    }
}

fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    b.min_ctas_per_sm(1);
    b
}

/// `for tile in ctaid .. total step nctaid`.
fn cta_stride(
    b: &mut KernelBuilder,
    total: Reg<U32>,
    body: impl FnOnce(&mut KernelBuilder, Reg<U32>),
) {
    let cta = b.ctaid_x();
    let step = b.nctaid_x();
    b.for_range(cta, total, step, body);
}

/// `log2(v)` of a power of two.
fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

/// Which product the gather kernel computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gather {
    /// Output block = block row `r`, slots `k` of row `r`, activation block
    /// `col[r,k]`, weights `w[o][e]`.
    Forward,
    /// Output block = column block `c`, slots of the transposed index,
    /// activation block `s / K`, weights `w[e][o]`.
    GradInput,
}

/// The shared tiles and per-thread coordinates of a gather CTA.
struct GatherTile {
    bsize: u32,
    act: SharedArray<F32>,
    wgt: SharedArray<F32>,
    tid: Reg<U32>,
    to: Reg<U32>,
    tn: Reg<U32>,
}

impl GatherTile {
    /// Row stride of both tiles in floats: `B + 4` keeps rows 16-byte
    /// aligned for vector loads and spreads 8 consecutive rows over all
    /// 32 banks.
    fn stride(&self) -> u32 {
        self.bsize + 4
    }
    fn o_threads(&self) -> u32 {
        self.bsize / TILE_O
    }
    fn n_threads(&self) -> u32 {
        THREADS / self.o_threads()
    }

    /// Stage rows `n0 ..` of activation column block `ab` (row width
    /// `width`, zeros past `n`) and weight block `s` into shared memory.
    #[allow(clippy::too_many_arguments)]
    fn stage(
        &self,
        b: &mut KernelBuilder,
        mode: Gather,
        act: GlobalPtr<F32>,
        width: Reg<U32>,
        n0: Reg<U32>,
        n: Reg<U32>,
        ab: Reg<U32>,
        values: GlobalPtr<F32>,
        s: Reg<U32>,
    ) {
        let bs = self.bsize;
        let stride = self.stride();
        let rows_per_pass = THREADS / bs;
        let passes = rows_per_tile(bs) / rows_per_pass;
        b.bar_sync();
        // Activations: thread (r0, j) loads rows r0 + p·rows_per_pass.
        let r0 = b.shr(self.tid, log2(bs));
        let j = b.and(self.tid, bs - 1);
        let row = b.add(n0, r0);
        let col0 = b.mul_lo(ab, bs);
        let col = b.add(col0, j);
        let first = b.mad_wide_u32(row, width, 0u64);
        let colw = b.u32_to_u64(col);
        let elem = b.add(first, colw);
        let src = b.offset64(act, elem);
        let step_rows = b.mul_wide_u32(width, rows_per_pass * 4);
        let dst_i = b.mad_lo(r0, stride, j);
        let dst = b.shared_elem(&self.act, dst_i);
        for p in 0..passes {
            let v = b.mov(0.0f32);
            let here = b.add(row, p * rows_per_pass);
            let inside = b.setp(Cmp::Lt, here, n);
            b.guarded(inside, |b| {
                let l = b.ld_global_nc(src, 0);
                b.assign(v, l);
            });
            b.st_shared(dst, (p * rows_per_pass * stride) as i32, v);
            if p + 1 < passes {
                let a = src.addr();
                let next = b.add(a, step_rows);
                b.assign(a, next);
            }
        }
        // Weights: the B·B floats of slot s, row-major, into rows of B + 1.
        let blk = b.mul_wide_u32(s, bs * bs);
        let wsrc0 = b.offset64(values, blk);
        let wsrc = b.offset(wsrc0, self.tid);
        // Stored as wgt[o][e] (o: output, e: reduction index), so that
        // both products read a thread's weights along rows: forward keeps
        // w[i][j], grad-input transposes it.
        let wdst_i = match mode {
            Gather::Forward => dst_i,
            Gather::GradInput => b.mad_lo(j, stride, r0),
        };
        let wdst = b.shared_elem(&self.wgt, wdst_i);
        let wstep = match mode {
            Gather::Forward => rows_per_pass * stride,
            Gather::GradInput => rows_per_pass,
        };
        let wpasses = (bs * bs).div_ceil(THREADS);
        for p in 0..wpasses {
            let load = |b: &mut KernelBuilder| {
                let v = b.ld_global_nc(wsrc, (p * THREADS) as i32);
                b.st_shared(wdst, (p * wstep) as i32, v);
            };
            if bs * bs < THREADS {
                let inside = b.setp(Cmp::Lt, self.tid, bs * bs);
                b.guarded(inside, load);
            } else {
                load(b);
            }
        }
        b.bar_sync();
    }

    /// One pass of the reduction index `e = 0..B` over the staged tiles,
    /// four steps per vector load of each weight row and activation row.
    fn accumulate(&self, b: &mut KernelBuilder, acc: &[[Reg<F32>; 4]; 4]) {
        let stride = self.stride();
        let (ot, nt) = (self.o_threads(), self.n_threads());
        let a_i = b.mul_lo(self.tn, stride);
        let a_base = b.shared_elem(&self.act, a_i);
        let w_i = b.mul_lo(self.to, stride);
        let w_base = b.shared_elem(&self.wgt, w_i);
        for e in (0..self.bsize).step_by(4) {
            let w: Vec<_> = (0..TILE_O)
                .map(|a| b.ld_shared_v4(w_base, (a * ot * stride + e) as i32))
                .collect();
            let x: Vec<_> = (0..TILE_N)
                .map(|m| b.ld_shared_v4(a_base, (m * nt * stride + e) as i32))
                .collect();
            for step in 0..4 {
                for (m, xm) in x.iter().enumerate() {
                    for (a, wa) in w.iter().enumerate() {
                        let next = b.ffma(Rounding::Rn, wa[step], xm[step], acc[m][a]);
                        b.assign(acc[m][a], next);
                    }
                }
            }
        }
    }
}

fn gather_name(mode: Gather, bsize: u32) -> String {
    match mode {
        Gather::Forward => format!("block_ell_forward_b{bsize}"),
        Gather::GradInput => format!("block_ell_grad_input_b{bsize}"),
    }
}

/// The forward kernel for block size `bsize`.
pub fn generate_forward(sm: Sm, bsize: u32) -> Result<PtxModule> {
    generate_gather(sm, bsize, Gather::Forward)
}

/// The grad-input kernel for block size `bsize`.
pub fn generate_grad_input(sm: Sm, bsize: u32) -> Result<PtxModule> {
    generate_gather(sm, bsize, Gather::GradInput)
}

fn generate_gather(sm: Sm, bsize: u32, mode: Gather) -> Result<PtxModule> {
    check_block(bsize)?;
    let mut b = builder(&gather_name(mode, bsize), sm);
    let nt_rows = rows_per_tile(bsize);
    let stride = bsize + 4;
    let act = b.shared_array::<F32>("act", nt_rows * stride, 16);
    let wgt = b.shared_array::<F32>("wgt", bsize * stride, 16);
    let tid = b.tid_x();
    let ot = bsize / TILE_O;
    let to = b.and(tid, ot - 1);
    let tn = b.shr(tid, log2(ot));
    let tile = GatherTile {
        bsize,
        act,
        wgt,
        tid,
        to,
        tn,
    };
    let n_threads = tile.n_threads();
    // Both argument structs share the fields the tiling needs.
    let (fwd, gi) = match mode {
        Gather::Forward => (Some(b.params::<ForwardArgs>()), None),
        Gather::GradInput => (None, Some(b.params::<GradInputArgs>())),
    };
    let (n, r, c, k) = match (&fwd, &gi) {
        (Some(p), _) => (p.n, p.r, p.c, p.k),
        (_, Some(p)) => (p.n, p.r, p.c, p.k),
        _ => unreachable!(),
    };
    let (in_w, out_w, nob) = {
        let fin = b.mul_lo(c, bsize);
        let fout = b.mul_lo(r, bsize);
        match mode {
            Gather::Forward => (fin, fout, r),
            Gather::GradInput => (fout, fin, c),
        }
    };
    let ntiles0 = b.add(n, nt_rows - 1);
    let ntiles = b.shr(ntiles0, log2(nt_rows));
    let total = b.mul_lo(nob, ntiles);
    cta_stride(&mut b, total, |b, t| {
        let ob = b.div(t, ntiles);
        let nti = b.rem(t, ntiles);
        let n0 = b.mul_lo(nti, nt_rows);
        let acc: [[Reg<F32>; 4]; 4] =
            std::array::from_fn(|_| std::array::from_fn(|_| b.mov(0.0f32)));
        match (&fwd, &gi) {
            (Some(p), _) => {
                let row0 = b.mul_lo(ob, k);
                b.for_range(0u32, k, 1u32, |b, kk| {
                    let s = b.add(row0, kk);
                    let cp = b.offset(p.col, s);
                    let cb = b.ld_global_nc(cp, 0);
                    let used = b.setp(Cmp::Ge, cb, 0i32);
                    b.if_(used, |b| {
                        let cu = b.s32_as_u32(cb);
                        tile.stage(b, mode, p.x, in_w, n0, n, cu, p.values, s);
                        tile.accumulate(b, &acc);
                    });
                });
            }
            (_, Some(p)) => {
                let op = b.offset(p.offsets, ob);
                let start = b.ld_global_nc(op, 0);
                let end = b.ld_global_nc(op, 1);
                b.for_range(start, end, 1u32, |b, e| {
                    let sp = b.offset(p.slots, e);
                    let s = b.ld_global_nc(sp, 0);
                    let rb = b.div(s, k);
                    tile.stage(b, mode, p.gy, in_w, n0, n, rb, p.values, s);
                    tile.accumulate(b, &acc);
                });
            }
            _ => unreachable!(),
        }
        // Epilogue: (bias,) then store the rows below n.
        let o_base = b.mul_lo(ob, bsize);
        let o0 = b.add(o_base, to);
        if let Some(p) = &fwd {
            let with_bias = b.setp(Cmp::Ne, p.has_bias, 0u32);
            b.if_(with_bias, |b| {
                let bp = b.offset(p.bias, o0);
                for a in 0..TILE_O {
                    let bv = b.ld_global_nc(bp, (a * ot) as i32);
                    for row in &acc {
                        let v = b.fadd(Rounding::Rn, row[a as usize], bv);
                        b.assign(row[a as usize], v);
                    }
                }
            });
        }
        let out = match (&fwd, &gi) {
            (Some(p), _) => p.y,
            (_, Some(p)) => p.gx,
            _ => unreachable!(),
        };
        let row = b.add(n0, tn);
        for (m, accs) in acc.iter().enumerate() {
            let here = b.add(row, m as u32 * n_threads);
            let inside = b.setp(Cmp::Lt, here, n);
            b.if_(inside, |b| {
                let o0w = b.u32_to_u64(o0);
                let first = b.mad_wide_u32(here, out_w, o0w);
                let dst = b.offset64(out, first);
                for (a, v) in accs.iter().enumerate() {
                    b.st_global(dst, (a as u32 * ot) as i32, *v);
                }
            });
        }
    });
    b.finish()
}

/// The micro-tile edge of the grad-values kernel: `B·B / 256` outputs per
/// thread as a square (`4×4` for B = 64, `2×2` for 32, `1×1` for 16 and
/// 8; with B = 8 only 64 threads compute).
fn gv_tile(bsize: u32) -> u32 {
    match bsize {
        64 => 4,
        32 => 2,
        _ => 1,
    }
}

/// The grad-values partial kernel for block size `bsize`.
pub fn generate_grad_values(sm: Sm, bsize: u32) -> Result<PtxModule> {
    check_block(bsize)?;
    let mut b = builder(&format!("block_ell_grad_values_b{bsize}"), sm);
    // Two CTAs per SM (at most 128 registers) where that costs no spills:
    // left alone, ptxas spends every register on software pipelining. With
    // B = 32 (sm_120) and 64 it spills under that cap, so one CTA of 8
    // warps it is.
    if bsize <= 16 {
        b.min_ctas_per_sm(2);
    }
    let stride = bsize + 4; // 16-byte rows for the vector loads
    let gys = b.shared_array::<F32>("gys", GV_ROWS * stride, 16);
    let xs = b.shared_array::<F32>("xs", GV_ROWS * stride, 16);
    let p = b.params::<GradValuesArgs>();
    let mt = gv_tile(bsize);
    let lanes = bsize / mt; // threads along i and along j
    let active = lanes * lanes;
    let tid = b.tid_x();
    let tj = b.and(tid, lanes - 1);
    let ti0 = b.shr(tid, log2(lanes));
    let ti = b.min(ti0, lanes - 1); // idle threads (B = 8) read in bounds, never store
    let computes = b.setp(Cmp::Lt, tid, active);
    let fin = b.mul_lo(p.c, bsize);
    let fout = b.mul_lo(p.r, bsize);
    let slots = b.mul_lo(p.r, p.k);
    let total = b.mul_lo(slots, p.groups);
    let len = b.mul_lo(slots, bsize * bsize);
    // Staging coordinates: thread (r0, j) loads rows r0 + p·(256/B).
    let rows_per_pass = THREADS / bsize;
    let passes = GV_ROWS.div_ceil(rows_per_pass);
    let r0 = b.shr(tid, log2(bsize));
    let sj = b.and(tid, bsize - 1);
    let sdst_i = b.mad_lo(r0, stride, sj);
    let g_dst = b.shared_elem(&gys, sdst_i);
    let x_dst = b.shared_elem(&xs, sdst_i);
    // Thread (ti, tj) owns i = ti·mt + a, j = tj·mt + c (a, c < mt).
    let g_rd_i = b.mul_lo(ti, mt);
    let g_rd = b.shared_elem(&gys, g_rd_i);
    let x_rd_i = b.mul_lo(tj, mt);
    let x_rd = b.shared_elem(&xs, x_rd_i);
    cta_stride(&mut b, total, |b, t| {
        let s = b.rem(t, slots);
        let g = b.div(t, slots);
        let q = b.add(p.q0, g);
        let start = b.mul_lo(q, N_CHUNK as u32);
        let lim = b.add(start, N_CHUNK as u32);
        let end = b.min(lim, p.n);
        let cp = b.offset(p.col, s);
        let cb = b.ld_global_nc(cp, 0);
        let rb = b.div(s, p.k);
        let acc: Vec<Vec<Reg<F32>>> = (0..mt)
            .map(|_| (0..mt).map(|_| b.mov(0.0f32)).collect())
            .collect();
        let used = b.setp(Cmp::Ge, cb, 0i32);
        b.if_(used, |b| {
            let cu = b.s32_as_u32(cb);
            let xcol0 = b.mul_lo(cu, bsize);
            let xcol = b.add(xcol0, sj);
            let gcol0 = b.mul_lo(rb, bsize);
            let gcol = b.add(gcol0, sj);
            b.for_range(start, end, GV_ROWS, |b, n0| {
                let rows0 = b.sub(end, n0);
                let rows = b.min(rows0, GV_ROWS);
                b.bar_sync();
                let row = b.add(n0, r0);
                for pass in 0..passes {
                    let here = b.add(row, pass * rows_per_pass);
                    let inside0 = b.setp(Cmp::Lt, here, end);
                    let in_batch = b.setp(Cmp::Lt, r0, GV_ROWS - pass * rows_per_pass);
                    let inside = b.pand(inside0, in_batch);
                    let off = (pass * rows_per_pass * stride) as i32;
                    b.guarded(inside, |b| {
                        let xe = b.mad_wide_u32(here, fin, 0u64);
                        let xcw = b.u32_to_u64(xcol);
                        let xe = b.add(xe, xcw);
                        let xp = b.offset64(p.x, xe);
                        let xv = b.ld_global_nc(xp, 0);
                        b.st_shared(x_dst, off, xv);
                        let ge = b.mad_wide_u32(here, fout, 0u64);
                        let gcw = b.u32_to_u64(gcol);
                        let ge = b.add(ge, gcw);
                        let gp = b.offset64(p.gy, ge);
                        let gv = b.ld_global_nc(gp, 0);
                        b.st_shared(g_dst, off, gv);
                    });
                }
                b.bar_sync();
                let step = |b: &mut KernelBuilder,
                            gptr: SharedPtr<F32>,
                            xptr: SharedPtr<F32>,
                            off: i32| {
                    let gv = ld_shared_run(b, gptr, off, mt);
                    let xv = ld_shared_run(b, xptr, off, mt);
                    for (a, ga) in gv.iter().enumerate() {
                        for (c, xc) in xv.iter().enumerate() {
                            let next = b.ffma(Rounding::Rn, *ga, *xc, acc[a][c]);
                            b.assign(acc[a][c], next);
                        }
                    }
                };
                // Rows in steps of GV_UNROLL, then one by one; the
                // bounds are run-time values so that ptxas does not
                // unroll a whole batch and hoist its loads into registers.
                let whole = b.and(rows, !(GV_UNROLL - 1));
                b.for_range(0u32, whole, GV_UNROLL, |b, rr| {
                    let o = b.mul_lo(rr, stride);
                    let gptr = b.shared_offset(g_rd, o);
                    let xptr = b.shared_offset(x_rd, o);
                    for u in 0..GV_UNROLL {
                        step(b, gptr, xptr, (u * stride) as i32);
                    }
                });
                b.for_range(whole, rows, 1u32, |b, rr| {
                    let o = b.mul_lo(rr, stride);
                    let gptr = b.shared_offset(g_rd, o);
                    let xptr = b.shared_offset(x_rd, o);
                    step(b, gptr, xptr, 0);
                });
            });
        });
        // part[g·len + s·B·B + i·B + j] for i = ti·mt + a, j = tj·mt + c.
        b.if_(computes, |b| {
            let blk = b.mul_lo(s, bsize * bsize);
            let in_blk0 = b.mul_lo(ti, mt * bsize);
            let in_blk = b.mad_lo(tj, mt, in_blk0);
            let e = b.add(blk, in_blk);
            let ew = b.u32_to_u64(e);
            let first = b.mad_wide_u32(g, len, ew);
            let dst = b.offset64(p.part, first);
            for (a, row) in acc.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    let off = (a as u32 * bsize + c as u32) as i32;
                    b.st_global(dst, off, *v);
                }
            }
        });
    });
    b.finish()
}

/// `mt` consecutive floats from `p + off` (one vector load for 2 and 4).
fn ld_shared_run(b: &mut KernelBuilder, p: SharedPtr<F32>, off: i32, mt: u32) -> Vec<Reg<F32>> {
    match mt {
        4 => b.ld_shared_v4(p, off).to_vec(),
        2 => b.ld_shared_v2(p, off).to_vec(),
        _ => vec![b.ld_shared(p, off)],
    }
}

/// The grad-bias partial kernel (one for every block size).
pub fn generate_grad_bias(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("block_ell_grad_bias", sm);
    let p = b.params::<GradBiasArgs>();
    let total = b.mul_lo(p.width, p.groups);
    b.grid_stride(total, |b, e| {
        let o = b.rem(e, p.width);
        let g = b.div(e, p.width);
        let q = b.add(p.q0, g);
        let start = b.mul_lo(q, N_CHUNK as u32);
        let lim = b.add(start, N_CHUNK as u32);
        let end = b.min(lim, p.n);
        let acc = b.mov(0.0f32);
        let ow = b.u32_to_u64(o);
        b.for_range(start, end, 1u32, |b, row| {
            let idx = b.mad_wide_u32(row, p.width, ow);
            let gp = b.offset64(p.gy, idx);
            let v = b.ld_global_nc(gp, 0);
            let next = b.fadd(Rounding::Rn, acc, v);
            b.assign(acc, next);
        });
        let dp = b.offset(p.part, e);
        b.st_global(dp, 0, acc);
    });
    b.finish()
}

/// The fold of chunk partials (grad-values and grad-bias).
pub fn generate_fold(sm: Sm) -> Result<PtxModule> {
    let mut b = builder("block_ell_fold", sm);
    let p = b.params::<FoldArgs>();
    let first = b.setp(Cmp::Ne, p.first, 0u32);
    b.grid_stride(p.len, |b, e| {
        let dst = b.offset(p.out, e);
        let src = b.offset(p.part, e);
        let p0 = b.ld_global(src, 0);
        let acc = b.mov(p0);
        let not_first = b.pnot(first);
        b.guarded(not_first, |b| {
            let old = b.ld_global(dst, 0);
            let sum = b.fadd(Rounding::Rn, old, p0);
            b.assign(acc, sum);
        });
        let ew = b.u32_to_u64(e);
        b.for_range(1u32, p.groups, 1u32, |b, g| {
            let idx = b.mad_wide_u32(g, p.len, ew);
            let sp = b.offset64(p.part, idx);
            let v = b.ld_global(sp, 0);
            let sum = b.fadd(Rounding::Rn, acc, v);
            b.assign(acc, sum);
        });
        b.st_global(dst, 0, acc);
    });
    b.finish()
}

/// Every kernel of the family for `sm`.
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let mut all = Vec::new();
    for &bs in &BLOCK_SIZES {
        let bs = bs as u32;
        all.push(generate_forward(sm, bs)?);
        all.push(generate_grad_input(sm, bs)?);
        all.push(generate_grad_values(sm, bs)?);
    }
    all.push(generate_grad_bias(sm)?);
    all.push(generate_fold(sm)?);
    all.extend(stats::kernels(sm)?);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_builds_on_every_target() {
        for sm in Sm::ALL {
            let all = variants(sm).unwrap();
            assert_eq!(all.len(), 18, "14 layer kernels and 4 statistics kernels");
            for m in &all {
                // No atomics or reductions to memory, float or not.
                for line in m.ptx.lines() {
                    let t = line.trim_start();
                    let op = match t.strip_prefix('@') {
                        Some(rest) => rest.split_once(' ').map_or("", |(_, op)| op.trim_start()),
                        None => t,
                    };
                    assert!(
                        !op.starts_with("atom") && !op.starts_with("red"),
                        "{}: {line}",
                        m.kernel
                    );
                }
            }
        }
    }

    #[test]
    fn unsupported_block_is_refused() {
        let e = generate_forward(Sm::Sm80, 12).unwrap_err().to_string();
        assert!(e.contains("B = 12"), "{e}");
    }
}
