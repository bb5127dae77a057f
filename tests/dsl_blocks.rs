//! The public building blocks of `ptxsmith::dsl::blocks` on the simulator
//! against their host mirrors (`ptxsmith::dsl::blocks::host`), bit for
//! bit, on sm_70, sm_80 and sm_90: random inputs with NaNs (several
//! payloads), infinities, signed zeros, subnormals and cancelling
//! magnitudes. A small kernel per block; each thread loads a `u32` bit
//! pattern, applies the block and stores the result's bits.

use ptxsmith::dsl::blocks::{self, ReduceElem, ReduceOp, host};
use ptxsmith::dsl::params::{KernelParams, Ptr};
use ptxsmith::dsl::types::{F32, Reg, S32, U32, U64};
use ptxsmith::dsl::{Cmp, KernelBuilder, PtxModule};
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::{Sm, kernel_params};

kernel_params! {
    struct Args => ArgRegs {
        x: Ptr<U32>,
        y: Ptr<U32>,
        out: Ptr<U32>,
        n: U64,
    }
}

const SMS: [Sm; 3] = [Sm::Sm70, Sm::Sm80, Sm::Sm90];
const BLOCK: u32 = 128;
const GRID: u32 = 3;
const THREADS: usize = (BLOCK * GRID) as usize;
const OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min];

/// A reduction element with its bit conversions (test-side).
trait Bits: ReduceElem {
    fn from_u32(b: &mut KernelBuilder, r: Reg<U32>) -> Reg<Self>;
    fn to_u32(b: &mut KernelBuilder, r: Reg<Self>) -> Reg<U32>;
    fn host(bits: u32) -> Self::Host;
    fn host_bits(v: Self::Host) -> u32;
}

impl Bits for F32 {
    fn from_u32(b: &mut KernelBuilder, r: Reg<U32>) -> Reg<F32> {
        b.f32_from_bits(r)
    }
    fn to_u32(b: &mut KernelBuilder, r: Reg<F32>) -> Reg<U32> {
        b.f32_bits(r)
    }
    fn host(bits: u32) -> f32 {
        f32::from_bits(bits)
    }
    fn host_bits(v: f32) -> u32 {
        v.to_bits()
    }
}

impl Bits for U32 {
    fn from_u32(_: &mut KernelBuilder, r: Reg<U32>) -> Reg<U32> {
        r
    }
    fn to_u32(_: &mut KernelBuilder, r: Reg<U32>) -> Reg<U32> {
        r
    }
    fn host(bits: u32) -> u32 {
        bits
    }
    fn host_bits(v: u32) -> u32 {
        v
    }
}

impl Bits for S32 {
    fn from_u32(b: &mut KernelBuilder, r: Reg<U32>) -> Reg<S32> {
        b.u32_as_s32(r)
    }
    fn to_u32(b: &mut KernelBuilder, r: Reg<S32>) -> Reg<U32> {
        b.s32_as_u32(r)
    }
    fn host(bits: u32) -> i32 {
        bits as i32
    }
    fn host_bits(v: i32) -> u32 {
        v as u32
    }
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }
}

/// `n` f32 bit patterns: specials (several NaN payloads, ±inf, ±0,
/// subnormals, ±MAX), large values that cancel, random bits and random
/// moderate values. `nan_rate`: one in how many is a NaN (0: none).
fn f32_inputs(n: usize, seed: u64, nan_rate: u32) -> Vec<u32> {
    let specials = [
        0u32,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x0000_0001,
        0x8000_0001,
        0x007f_ffff,
        0x7f7f_ffff,
        0xff7f_ffff,
        1.0e8f32.to_bits(),
        (-1.0e8f32).to_bits(),
        1.0f32.to_bits(),
    ];
    let nans = [0x7fc0_0000u32, 0xffc0_0001, 0x7f80_0001, 0x7fff_ffff];
    let mut r = Lcg(seed);
    (0..n)
        .map(|_| {
            let k = r.next();
            if nan_rate != 0 && k.is_multiple_of(nan_rate) {
                return nans[(k >> 8) as usize % nans.len()];
            }
            match k % 5 {
                0 => specials[(k >> 8) as usize % specials.len()],
                1 => r.next(),
                _ => {
                    let m = (r.next() >> 9) as f32 / (1u32 << 23) as f32;
                    let e = ((r.next() % 40) as i32 - 20) as f32;
                    let s = if r.next() & 1 == 0 { 1.0 } else { -1.0 };
                    (s * m * e.exp2()).to_bits()
                }
            }
        })
        .collect()
}

/// Per-thread body: `out[t] = f(x[t], y[t])` for the global thread `t`.
fn per_thread(
    sm: Sm,
    name: &str,
    f: impl FnOnce(&mut KernelBuilder, Reg<U32>, Reg<U32>) -> Reg<U32>,
) -> PtxModule {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<Args>();
    let t = b.global_id_x();
    let xp = b.offset(p.x, t);
    let x = b.ld_global(xp, 0);
    let yp = b.offset(p.y, t);
    let y = b.ld_global(yp, 0);
    let r = f(&mut b, x, y);
    let op = b.offset(p.out, t);
    b.st_global(op, 0, r);
    b.finish().unwrap()
}

/// Run `m` over `x`, `y` (`grid` blocks of [`BLOCK`]), `out` of `out_len`
/// words initialised to `0xDEADBEEF`.
fn run(sm: Sm, m: &PtxModule, x: &[u32], y: &[u32], out_len: usize, grid: u32) -> Vec<u32> {
    let ctx = Context::sim(sm);
    let st = ctx.default_stream();
    let xb = st.upload(x).unwrap();
    let yb = st.upload(y).unwrap();
    let mut ob = st.upload(&vec![0xDEAD_BEEFu32; out_len]).unwrap();
    let args = Args {
        x: st.arg("x", &xb).unwrap(),
        y: st.arg("y", &yb).unwrap(),
        out: st.arg_mut("out", &mut ob).unwrap(),
        n: x.len() as u64,
    };
    st.launch(m, LaunchConfig::linear(grid, BLOCK), &args.args())
        .unwrap();
    st.to_vec(&ob).unwrap()
}

fn lanes<H: Copy>(v: &[H]) -> &[H; 32] {
    v.try_into().unwrap()
}

fn check_reductions<T: Bits>(sm: Sm, x: &[u32], what: &str) {
    for op in OPS {
        // warp reduce: every lane ends with its warp's value
        let m = per_thread(sm, "warp_reduce", |b, x, _| {
            let v = T::from_u32(b, x);
            let r = blocks::warp_reduce(b, op, v);
            T::to_u32(b, r)
        });
        let got = run(sm, &m, x, x, THREADS, GRID);
        let hx: Vec<T::Host> = x.iter().map(|&u| T::host(u)).collect();
        for (w, chunk) in hx.chunks(32).enumerate() {
            let want = T::host_bits(host::warp_reduce(op, lanes(chunk)));
            for l in 0..32 {
                assert_eq!(
                    got[w * 32 + l],
                    want,
                    "{sm} warp_reduce {op:?} {what}: warp {w} lane {l}: {:#010x} vs host {want:#010x}",
                    got[w * 32 + l]
                );
            }
        }
        // block reduce, broadcast: every thread of a block ends with the
        // block's value
        let m = {
            let mut b = KernelBuilder::new("block_reduce_all", sm);
            b.maxntid(BLOCK, 1, 1);
            let p = b.params::<Args>();
            let scratch = b.shared_array::<T>("red", BLOCK / 32, 4);
            let t = b.global_id_x();
            let xp = b.offset(p.x, t);
            let xv = b.ld_global(xp, 0);
            let v = T::from_u32(&mut b, xv);
            let r = blocks::block_reduce_all(&mut b, op, v, &scratch);
            let r = T::to_u32(&mut b, r);
            let o = b.offset(p.out, t);
            b.st_global(o, 0, r);
            b.finish().unwrap()
        };
        let got = run(sm, &m, x, x, THREADS, GRID);
        for (k, chunk) in hx.chunks(BLOCK as usize).enumerate() {
            let fill = <T::Host as host::HostElem>::identity(op);
            let want = T::host_bits(host::block_reduce(op, chunk, fill));
            for (t, g) in got[k * BLOCK as usize..][..BLOCK as usize]
                .iter()
                .enumerate()
            {
                assert_eq!(
                    *g, want,
                    "{sm} block_reduce_all {op:?} {what}: block {k} thread {t}: {g:#010x} vs host {want:#010x}"
                );
            }
        }
    }
}

#[test]
fn reductions_match_their_host_mirrors() {
    for (k, sm) in SMS.into_iter().enumerate() {
        let seed = 17 + k as u64;
        // f32 with many NaNs, with few, and without
        for (rate, what) in [(7, "f32 (NaN-rich)"), (97, "f32"), (0, "f32 (no NaN)")] {
            check_reductions::<F32>(sm, &f32_inputs(THREADS, seed + rate as u64, rate), what);
        }
        let mut r = Lcg(seed);
        let ints: Vec<u32> = (0..THREADS).map(|_| r.next()).collect();
        check_reductions::<U32>(sm, &ints, "u32");
        check_reductions::<S32>(sm, &ints, "s32");
    }
}

#[test]
fn block_reduce_with_fill_is_valid_in_warp_0() {
    for sm in SMS {
        // finite values of mixed magnitudes (no inf or NaN, which would
        // make every order agree)
        let mut r = Lcg(5);
        let x: Vec<u32> = (0..THREADS)
            .map(|_| {
                let m = (r.next() >> 9) as f32 / (1u32 << 23) as f32;
                let e = ((r.next() % 40) as i32 - 20) as f32;
                (if r.next() & 1 == 0 { m } else { -m } * e.exp2()).to_bits()
            })
            .collect();
        let mut b = KernelBuilder::new("block_reduce_fill", sm);
        b.maxntid(BLOCK, 1, 1);
        let p = b.params::<Args>();
        let scratch = b.shared_array::<F32>("red", BLOCK / 32, 4);
        let t = b.global_id_x();
        let xp = b.offset(p.x, t);
        let xv = b.ld_global(xp, 0);
        let v = b.f32_from_bits(xv);
        let r = blocks::block_reduce_with_fill(&mut b, ReduceOp::Sum, v, &scratch, 0.0f32);
        let r = b.f32_bits(r);
        let o = b.offset(p.out, t);
        b.st_global(o, 0, r);
        let m = b.finish().unwrap();
        let got = run(sm, &m, &x, &x, THREADS, GRID);
        let hx: Vec<f32> = x.iter().map(|&u| f32::from_bits(u)).collect();
        for (k, chunk) in hx.chunks(BLOCK as usize).enumerate() {
            let want = host::block_reduce(ReduceOp::Sum, chunk, 0.0).to_bits();
            for l in 0..32 {
                assert_eq!(got[k * BLOCK as usize + l], want, "{sm} block {k} lane {l}");
            }
        }
    }
}

#[test]
fn argmax_matches_its_host_mirror() {
    for sm in SMS {
        for (seed, rate) in [(1u64, 5u32), (2, 50), (3, 0)] {
            let mut x = f32_inputs(THREADS, seed, rate);
            // many exact ties and signed zeros
            for (k, v) in x.iter_mut().enumerate() {
                if k % 3 == 0 {
                    *v = [0u32, 0x8000_0000, 0x7f80_0000, 2.0f32.to_bits()][k % 4];
                }
            }
            let mut r = Lcg(seed);
            let idx: Vec<u32> = (0..THREADS).map(|_| r.next() % 64).collect();
            let m = {
                let mut b = KernelBuilder::new("argmax", sm);
                b.maxntid(BLOCK, 1, 1);
                let p = b.params::<Args>();
                let t = b.global_id_x();
                let xp = b.offset(p.x, t);
                let xv = b.ld_global(xp, 0);
                let v = b.f32_from_bits(xv);
                let yp = b.offset(p.y, t);
                let i = b.ld_global(yp, 0);
                let (mv, mi) = blocks::warp_argmax_f32(&mut b, v, i);
                let mv = b.f32_bits(mv);
                let t2 = b.shl(t, 1u32);
                let o = b.offset(p.out, t2);
                b.st_global(o, 0, mv);
                b.st_global(o, 1, mi);
                b.finish().unwrap()
            };
            let got = run(sm, &m, &x, &idx, 2 * THREADS, GRID);
            for w in 0..THREADS / 32 {
                let pairs: Vec<(f32, u32)> = (0..32)
                    .map(|l| (f32::from_bits(x[w * 32 + l]), idx[w * 32 + l]))
                    .collect();
                let (hv, hi) = host::warp_argmax_f32(lanes(&pairs));
                for l in 0..32 {
                    let t = w * 32 + l;
                    assert_eq!(
                        (got[2 * t], got[2 * t + 1]),
                        (hv.to_bits(), hi),
                        "{sm} argmax warp {w} lane {l}"
                    );
                }
            }
        }
    }
}

#[test]
fn scans_match_their_host_mirrors() {
    for sm in SMS {
        let x = f32_inputs(THREADS, 9, 41);
        let m = per_thread(sm, "scan_f32", |b, x, _| {
            let v = b.f32_from_bits(x);
            let s = blocks::warp_scan_inclusive_sum(b, v);
            b.f32_bits(s)
        });
        let got = run(sm, &m, &x, &x, THREADS, GRID);
        for w in 0..THREADS / 32 {
            let hx: Vec<f32> = x[w * 32..][..32]
                .iter()
                .map(|&u| f32::from_bits(u))
                .collect();
            let want = host::warp_scan_inclusive_sum_f32(lanes(&hx));
            for l in 0..32 {
                assert_eq!(
                    got[w * 32 + l],
                    want[l].to_bits(),
                    "{sm} scan f32 warp {w} lane {l}"
                );
            }
        }
        let mut r = Lcg(3);
        let xi: Vec<u32> = (0..THREADS).map(|_| r.next()).collect();
        let m = per_thread(sm, "scan_u32", |b, x, _| {
            blocks::warp_scan_inclusive_sum(b, x)
        });
        let got = run(sm, &m, &xi, &xi, THREADS, GRID);
        for w in 0..THREADS / 32 {
            let want = host::warp_scan_inclusive_sum_u32(lanes(&xi[w * 32..][..32]));
            assert_eq!(&got[w * 32..][..32], &want[..], "{sm} scan u32 warp {w}");
        }
    }
}

/// `grid_stride_vec4`: every element is visited exactly once, groups by
/// the vector body (`+1`), the tail by the scalar body (`+2`), over several
/// grid strides.
#[test]
fn grid_stride_vec4_visits_each_element_once() {
    for sm in SMS {
        for n in [0usize, 3, 4, 5, 1027, 3 * THREADS * 4 + 7] {
            let mut b = KernelBuilder::new("gsv4", sm);
            b.maxntid(BLOCK, 1, 1);
            let p = b.params::<Args>();
            blocks::grid_stride_vec4(
                &mut b,
                p.n,
                |b, g| {
                    let e = b.shl(g, 2u32);
                    let xp = b.offset64(p.x, e);
                    let op = b.offset64(p.out, e);
                    for k in 0..4 {
                        let v = b.ld_global(xp, k);
                        let o = b.ld_global(op, k);
                        let v = b.add(v, o);
                        let v = b.add(v, 0x2152_4111u32); // 0xDEADBEEF + 1 wraps to 0
                        b.st_global(op, k, v);
                    }
                },
                |b, e| {
                    let xp = b.offset64(p.x, e);
                    let op = b.offset64(p.out, e);
                    let v = b.ld_global(xp, 0);
                    let o = b.ld_global(op, 0);
                    let v = b.add(v, o);
                    let v = b.add(v, 0x2152_4112u32);
                    b.st_global(op, 0, v);
                },
            );
            let m = b.finish().unwrap();
            let x: Vec<u32> = (0..n as u32).map(|i| i * 10).collect();
            let got = run(sm, &m, &x, &x, n, GRID);
            let tail = n - n % 4;
            for (i, g) in got.iter().enumerate() {
                let want = x[i] + if i < tail { 0 } else { 1 };
                assert_eq!(*g, want, "{sm} n = {n}: element {i}");
            }
        }
    }
}

#[test]
fn if_thread0_runs_once_per_block() {
    let sm = Sm::Sm80;
    let mut b = KernelBuilder::new("t0", sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<Args>();
    blocks::if_thread0(&mut b, |b| {
        let c = b.ctaid_x();
        let o = b.offset(p.out, c);
        let tid = b.tid_x();
        let is0 = b.setp(Cmp::Eq, tid, 0u32);
        let v = b.selp(is0, 7u32, 9u32);
        b.st_global(o, 0, v);
    });
    let m = b.finish().unwrap();
    let got = run(sm, &m, &[0], &[0], GRID as usize + 1, GRID);
    assert_eq!(got, [7, 7, 7, 0xDEAD_BEEF]);
}

/// The host mirror of the f32 sum is the butterfly's, not a left-to-right
/// sum: they differ on cancelling inputs, and the simulator agrees with
/// the mirror.
#[test]
fn the_f32_sum_order_is_the_trees() {
    let mut v = [0.0f32; 32];
    v[0] = 1.0e8;
    v[16] = -1.0e8;
    v[1] = 1.0;
    let tree = host::warp_sum_f32(&v);
    let naive = v.iter().fold(0.0f32, |s, x| s + x);
    assert_eq!((tree, naive), (1.0, 0.0));
    let bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
    let m = per_thread(Sm::Sm80, "warp_sum", |b, x, _| {
        let x = b.f32_from_bits(x);
        let s = blocks::warp_reduce(b, ReduceOp::Sum, x);
        b.f32_bits(s)
    });
    let ctx_out = {
        let mut x = bits.clone();
        x.resize(THREADS, 0);
        run(Sm::Sm80, &m, &x, &x, THREADS, GRID)
    };
    assert_eq!(f32::from_bits(ctx_out[0]), 1.0);
}
