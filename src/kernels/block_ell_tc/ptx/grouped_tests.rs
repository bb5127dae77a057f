//! The forward pass's windowed schedule with windows forced small (a
//! knob only these tests have): rows of many windows, a block that two
//! rows of a group hold at ranks on either side of a window edge, empty
//! slots, unsorted rows, ragged `N` and `R`; the simulator equals the host
//! model bit for bit.

use super::*;
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::{Bf16x2, F16x2, Tf32};
use crate::exec::LaunchConfig;
use crate::kernels::block_ell::{DeviceTopology, Dims};
use crate::kernels::block_ell_tc::{TcElem, host, to_bf16, to_f16};
use crate::runtime::Context;
use crate::tensor_map::TensorMap;

/// A small xorshift generator: values in ±[1, 2)·2^[−6, 6].
fn vals(seed: &mut u64, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let m = 1.0 + (*seed >> 44) as f32 / (1u64 << 20) as f32;
            let e = ((*seed >> 8) % 13) as i32 - 6;
            let s = if *seed & 1 == 1 { -1.0 } else { 1.0 };
            s * m * 2f32.powi(e)
        })
        .collect()
}

/// Run the forward kernel with a window of `w` entries on the simulator
/// of `sm` and compare with the host model.
#[allow(clippy::too_many_arguments)]
fn run<T: TcElem, M: MmaInput>(
    sm: Sm,
    prec: TcPrecision,
    bs: usize,
    (r, c, k): (usize, usize, usize),
    col: &[i32],
    n: usize,
    w: u32,
    enc: fn(&[f32]) -> Vec<T>,
) {
    let dims = Dims::new(r, c, k, bs).unwrap();
    let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (bs * r * k) as u64;
    let mut vf = vals(&mut seed, dims.values_len());
    for s in (0..r * k).filter(|&s| col[s] < 0) {
        // empty slots are never read into a result
        vf[s * bs * bs..(s + 1) * bs * bs].fill(f32::NAN);
    }
    let x = enc(&vals(&mut seed, n * dims.in_features()));
    let v = enc(&vf);
    let bias = vals(&mut seed, dims.out_features());
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, col).unwrap();
    let (dx, dv, db) = (
        st.upload(&x).unwrap(),
        st.upload(&v).unwrap(),
        st.upload(&bias).unwrap(),
    );
    let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
    let gt = group_tile(prec, bs as u32, sm);
    let tiles = r.div_ceil(gt.g as usize) * n.div_ceil(gt.tokens as usize);
    let mut cfg = LaunchConfig::linear(tiles as u32, THREADS);
    cfg.dynamic_smem_bytes = smem_bytes_in(prec, bs as u32, sm, Some((k as u32, w))) as u32;
    let args = ForwardArgs {
        x: DevPtr::new(st.arg("x", &dx).unwrap().addr),
        values: DevPtr::new(st.arg("values", &dv).unwrap().addr),
        col: st.arg("col", topo.col()).unwrap(),
        bias: st.arg("bias", &db).unwrap(),
        y: DevPtr::new(st.arg_mut("y", &mut y).unwrap().addr),
        n: n as u32,
        r: r as u32,
        c: c as u32,
        k: k as u32,
        has_bias: 1,
        out_bf16: 0,
    };
    let m = forward_windowed::<M>(sm, prec, bs as u32, w).unwrap();
    st.launch(&m, cfg, &args.args()).unwrap();
    let want = host::forward(sm, prec, &dims, n, &x, &v, col, Some(&bias)).unwrap();
    let got = st.to_vec(&y).unwrap();
    assert_eq!(got.len(), want.len());
    let live = want.iter().filter(|v| v.is_finite() && **v != 0.0).count();
    assert!(4 * live >= 3 * want.len(), "{prec} B={bs}: {live} live");
    for (e, (g, h)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            h.to_bits(),
            "{prec} B={bs} on {sm}, window {w}: y[{e}] {g} != {h}"
        );
    }
}

/// Rows of `k` slots over `c` blocks: row `i` holds the blocks
/// `(i + 7·j) mod c` for `j` below its length `k − i mod 3`, in slots
/// permuted by a stride prime to `k`, the rest empty. Rows 0 and 1 hold the same
/// blocks shifted by one rank, so a block sits at a window's end in one
/// list and at the next window's start in the other.
fn topology(r: usize, c: usize, k: usize) -> Vec<i32> {
    let mut col = vec![-1i32; r * k];
    for i in 0..r {
        let len = k - i % 3;
        for j in 0..len {
            let slot = (j * 3 + i) % k;
            let block = if i < 2 { j + i } else { (i + 7 * j) % c };
            col[i * k + slot] = block as i32;
        }
    }
    col
}

#[test]
fn forced_windows_match_the_host_model() {
    // bf16, B 16, G 16: 19 rows (a ragged second group), 10 slots a row,
    // windows of 3 (up to 4 a row), N = 131 (a ragged token tile)
    let (r, c, k) = (19, 12, 10);
    let col = topology(r, c, k);
    run::<u16, Bf16x2>(
        Sm::Sm80,
        TcPrecision::Bf16,
        16,
        (r, c, k),
        &col,
        131,
        3,
        to_bf16,
    );
}

/// tf32, B 32 on sm_89 (G 4): 5 rows (a ragged second group), windows
/// of 2.
#[test]
fn forced_windows_tf32() {
    let (r, c, k) = (5, 9, 7);
    let col = topology(r, c, k);
    run::<f32, Tf32>(
        Sm::Sm89,
        TcPrecision::Tf32,
        32,
        (r, c, k),
        &col,
        70,
        2,
        |v| v.to_vec(),
    );
}

#[test]
fn windows_fit_the_opt_in_shared_memory() {
    for sm in Sm::ALL
        .into_iter()
        .filter(|s| s.supports(crate::Feature::MmaSync))
    {
        for prec in TcPrecision::ALL {
            for bs in [16, 32, 64] {
                let w = window(prec, bs, sm);
                let max = u64::from(sm.info().max_smem_per_block_optin);
                assert!(w >= 32, "{prec} B {bs} on {sm}: window {w}");
                assert!(smem_bytes(prec, bs, sm, Some(1 << 20)) <= max);
                assert!(smem_bytes(prec, bs, sm, Some(w + 1)) == smem_bytes(prec, bs, sm, Some(w)));
            }
        }
    }
    // sm_86, bf16, B 64: 288 entries (the row length refused before)
    assert_eq!(window(TcPrecision::Bf16, 64, Sm::Sm86), 288);
}

/// The grouped kernels stage padded input tiles and values blocks except
/// where they run in clusters: there both land their values blocks and
/// input tiles unpadded (two unpadded input tiles, the swizzle's
/// alignment and two sets of unpadded blocks).
#[test]
fn staging_is_unpadded_only_in_clusters() {
    for sm in Sm::ALL
        .into_iter()
        .filter(|s| s.supports(crate::Feature::MmaSync))
    {
        for prec in TcPrecision::ALL {
            for bs in [16, 32, 64] {
                let e = if prec == TcPrecision::Tf32 { 4 } else { 2 };
                let pitch = u64::from(bs * e + 16);
                let t = group_tile(prec, bs, sm);
                let padded = 2 * u64::from(t.tokens) * pitch + 2 * u64::from(t.g * bs) * pitch;
                let slack = u64::from(mcast::swizzle(bs * e).pattern_bytes());
                let vals = 2 * u64::from(t.g * bs * bs * e);
                let fwd_tma = 2 * u64::from(t.tokens * bs * e) + slack + vals;
                let gi_tma = fwd_tma;
                assert!(fwd_tma < padded, "{prec} B {bs} {sm}");
                let gi = smem_bytes(prec, bs, sm, None);
                let want = if grad_input_cluster(sm, prec, bs) > 1 {
                    gi_tma
                } else {
                    padded
                };
                assert_eq!(gi, want, "{prec} B {bs} {sm}");
                let fwd = smem_bytes_in(prec, bs, sm, Some((0, 0)));
                let want = if forward_cluster(sm, prec, bs) > 1 {
                    fwd_tma
                } else {
                    padded
                };
                assert_eq!(fwd, want, "{prec} B {bs} {sm}");
            }
        }
    }
}

/// The cluster kernel (values by tensor-map multicast, `x` by a tensor
/// map) at bf16/f16 `B`
/// 16 (built, [`mcast::buildable`], but not enabled) and 32 (enabled; tf32
/// too), with
/// small schedule windows, on the simulator of `sm` (checks on), launched
/// as the forward's launch code
/// launches it (clusters of 4 CTAs, or 8 of a GRID walking the union
/// schedule, the values' and the input's tensor maps; one cluster here):
/// equal to the host model bit for bit, with windows of 3 (refills: warp
/// 0 alone merges and hands the cursors to the CTA), a token-tile count
/// not a multiple of 4, ragged `N` and `R`, empty slots, more cluster
/// tiles than clusters, and ±∞/NaN inputs; `empty_last`: the last group's
/// rows have no entry at all (its first merge finds no key: no step).
fn run_cluster<T: TcElem, M: MmaInput>(
    sm: Sm,
    prec: TcPrecision,
    bs: usize,
    (r, n): (usize, usize),
    empty_last: bool,
    enc: fn(&[f32]) -> Vec<T>,
) {
    assert!(mcast::buildable(sm, prec, bs as u32));
    assert_eq!(mcast::enabled(sm, prec, bs as u32), bs >= 32);
    let (c, k, w) = (12, 7, 3);
    let mut col = topology(r, c, k);
    // the rows past the first group use no block below 3: at the union
    // steps of blocks 0–2 only the first group takes (in a GRID cluster
    // the other groups' CTAs skip their MMAs there)
    let g = group_tile(prec, bs as u32, sm).g as usize;
    for c in &mut col[g * k..] {
        if (0..3).contains(c) {
            *c = -1;
        }
    }
    if empty_last {
        let g = group_tile(prec, bs as u32, sm).g as usize;
        col[(r - 1) / g * g * k..].fill(-1);
    }
    let dims = Dims::new(r, c, k, bs).unwrap();
    let mut seed = 0x2545_F491_4F6C_DD1D ^ (bs * r) as u64;
    let mut vf = vals(&mut seed, dims.values_len());
    for s in (0..r * k).filter(|&s| col[s] < 0) {
        vf[s * bs * bs..(s + 1) * bs * bs].fill(f32::NAN);
    }
    // an infinite weight (slot 0 of row 1 is filled)
    vf[k * bs * bs + 5] = f32::INFINITY;
    let mut xf = vals(&mut seed, n * dims.in_features());
    xf[7] = f32::NAN;
    xf[3 * dims.in_features() + 1] = f32::NEG_INFINITY;
    // tf32: low 13 bits at the rounding tie (away from zero) and just
    // below it (down), which `cvt.rna` in shared memory must round as the
    // host model does
    xf[2] = f32::from_bits((xf[2].to_bits() & !0x1fff) | 0x1000);
    xf[dims.in_features() + 3] = f32::from_bits((xf[3].to_bits() & !0x1fff) | 0x0fff);
    vf[k * bs * bs + 9] = f32::from_bits((vf[k * bs * bs + 9].to_bits() & !0x1fff) | 0x1000);
    let (x, v) = (enc(&xf), enc(&vf));
    let bias = vals(&mut seed, dims.out_features());
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dx, dv, db) = (
        st.upload(&x).unwrap(),
        st.upload(&v).unwrap(),
        st.upload(&bias).unwrap(),
    );
    let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
    // one cluster (4 CTAs, or 8 of a GRID) for more runs of tiles
    // (grid-stride)
    let ctas = mcast::forward_layout(prec, bs as u32).ctas();
    let mut cfg = LaunchConfig::linear(ctas, THREADS);
    cfg.dynamic_smem_bytes = smem_bytes_in(prec, bs as u32, sm, Some((k as u32, w))) as u32;
    let vaddr = st.arg("values", &dv).unwrap().addr;
    let desc = mcast::values_map(prec, bs as u32, vaddr, (r * k) as u64);
    let xaddr = st.arg("x", &dx).unwrap().addr;
    let tokens = group_tile(prec, bs as u32, sm).tokens;
    let inw = dims.in_features() as u64;
    let xdesc = mcast::input_map(prec, bs as u32, tokens, xaddr, n as u64, inw);
    let args = ForwardTmaArgs {
        x: DevPtr::new(st.arg("x", &dx).unwrap().addr),
        col: st.arg("col", topo.col()).unwrap(),
        bias: st.arg("bias", &db).unwrap(),
        y: DevPtr::new(st.arg_mut("y", &mut y).unwrap().addr),
        n: n as u32,
        r: r as u32,
        c: c as u32,
        k: k as u32,
        has_bias: 1,
        out_bf16: 0,
        vmap: TensorMap::encode_tiled(st.context(), &desc).unwrap(),
        xmap: TensorMap::encode_tiled(st.context(), &xdesc).unwrap(),
    };
    let m = forward_built::<M>(sm, prec, bs as u32, w, true).unwrap();
    st.launch(&m, cfg, &args.args()).unwrap();
    let want = host::forward(sm, prec, &dims, n, &x, &v, &col, Some(&bias)).unwrap();
    let got = st.to_vec(&y).unwrap();
    assert_eq!(got.len(), want.len());
    let live = want.iter().filter(|v| v.is_finite() && **v != 0.0).count();
    assert!(4 * live >= 3 * want.len(), "{prec} B={bs}: {live} live");
    assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| v.is_infinite()));
    for (e, (g, h)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            h.to_bits(),
            "{prec} B={bs} on {sm}, cluster: y[{e}] {g} != {h}"
        );
    }
}

/// bf16 `B` 32 on sm_90 (G 8, a GRID cluster: 32 lists): `R` 12 (a
/// ragged second group, the third and fourth past `R`), 3 token tiles (2
/// runs of 2: the fourth past `N`; one cluster takes both runs).
#[test]
fn cluster_kernel_b32_matches_the_host_model() {
    run_cluster::<_, Bf16x2>(
        Sm::Sm90,
        TcPrecision::Bf16,
        32,
        (12, 3 * 128 - 5),
        false,
        to_bf16,
    );
}

/// f16 `B` 64 on sm_100a (G 4, a GRID of 2 token tiles × 4 groups: 16
/// lists, one a lane of warp 0's first half): `R` 11 (groups 0–2, the
/// third ragged, the fourth past `R`), 1 token tile (the second CTA of
/// each group past `N`), windows of 3.
#[test]
fn cluster_kernel_b64_matches_the_host_model() {
    run_cluster::<_, F16x2>(Sm::Sm100a, TcPrecision::F16, 64, (11, 100), false, to_f16);
}

/// tf32 `B` 32 on sm_90 (G 8; the f32 tiles land unrounded by tensor
/// map, rounded in shared memory): `R` 12 (a ragged second group), 3 token
/// tiles (the cluster's fourth past `N`; `tests/block_ell_tc_mcast.rs`
/// takes 5, 2 and 1), values at the rounding tie.
#[test]
fn cluster_kernel_tf32_b32_matches_the_host_model() {
    let f32s: fn(&[f32]) -> Vec<f32> = <[f32]>::to_vec;
    run_cluster::<f32, Tf32>(
        Sm::Sm90,
        TcPrecision::Tf32,
        32,
        (12, 3 * 128 - 37),
        false,
        f32s,
    );
}

/// f16 `B` 16 on sm_100 (G 16): `R` 20, 2 token tiles (two of the
/// cluster's past `N`), `N` ragged, the second group (rows 16–19)
/// without entries (its outputs are the bias).
#[test]
fn cluster_kernel_b16_matches_the_host_model() {
    let (r, n) = (20, 2 * 128 - 37);
    run_cluster::<_, F16x2>(Sm::Sm100, TcPrecision::F16, 16, (r, n), true, to_f16);
}

/// The grad-input cluster kernel at f16 `B` 16 on sm_100 (G 16; built,
/// [`mcast::buildable`], but not enabled), launched as the launch code
/// launches an enabled one (clusters of 4 CTAs, the values' and `gy`'s
/// tensor maps; one cluster for four cluster tiles): equal to the host model bit for
/// bit, with `C` 20 (a ragged second group), 5 token tiles (the last
/// run's three past `N`), empty slots and ±∞/NaN inputs.
#[test]
fn grad_input_cluster_kernel_b16_matches_the_host_model() {
    let (sm, prec, bs) = (Sm::Sm100, TcPrecision::F16, 16usize);
    let (r, c, k, n) = (14, 20, 7, 5 * 128 - 37);
    assert!(mcast::buildable(sm, prec, bs as u32));
    assert!(!mcast::grad_input_enabled(sm, prec, bs as u32));
    let col = topology(r, c, k);
    let dims = Dims::new(r, c, k, bs).unwrap();
    let mut seed = 0x2545_F491_4F6C_DD1D ^ (bs * c) as u64;
    let mut vf = vals(&mut seed, dims.values_len());
    for s in (0..r * k).filter(|&s| col[s] < 0) {
        vf[s * bs * bs..(s + 1) * bs * bs].fill(f32::NAN);
    }
    vf[k * bs * bs + 5] = f32::INFINITY;
    let mut gyf = vals(&mut seed, n * dims.out_features());
    gyf[7] = f32::NAN;
    gyf[3 * dims.out_features() + 1] = f32::NEG_INFINITY;
    let (gy, v) = (to_f16(&gyf), to_f16(&vf));
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dgy, dv) = (st.upload(&gy).unwrap(), st.upload(&v).unwrap());
    let mut gx = st.upload(&vec![7.0f32; n * dims.in_features()]).unwrap();
    let mut cfg = LaunchConfig::linear(4, THREADS);
    cfg.dynamic_smem_bytes = stage_bytes(prec, bs as u32, sm, true) as u32;
    let vaddr = st.arg("values", &dv).unwrap().addr;
    let desc = mcast::values_map(prec, bs as u32, vaddr, (r * k) as u64);
    let gyaddr = st.arg("gy", &dgy).unwrap().addr;
    let tokens = group_tile(prec, bs as u32, sm).tokens;
    let outw = dims.out_features() as u64;
    let gydesc = mcast::input_map(prec, bs as u32, tokens, gyaddr, n as u64, outw);
    let (offsets, slots) = topo.index();
    let args = super::super::GradInputTmaArgs {
        gy: DevPtr::new(st.arg("gy", &dgy).unwrap().addr),
        offsets: st.arg("offsets", offsets).unwrap(),
        slots: st.arg("slots", slots).unwrap(),
        gx: DevPtr::new(st.arg_mut("gx", &mut gx).unwrap().addr),
        n: n as u32,
        r: r as u32,
        c: c as u32,
        k: k as u32,
        out_bf16: 0,
        vmap: TensorMap::encode_tiled(st.context(), &desc).unwrap(),
        gymap: TensorMap::encode_tiled(st.context(), &gydesc).unwrap(),
    };
    let m = gi::grad_input_built::<F16x2>(sm, prec, bs as u32, true).unwrap();
    assert!(m.ptx.contains(".reqnctapercluster 4, 1, 1"));
    st.launch(&m, cfg, &args.args()).unwrap();
    let want = host::grad_input(sm, prec, &dims, n, &gy, &v, &col).unwrap();
    let got = st.to_vec(&gx).unwrap();
    assert_eq!(got.len(), want.len());
    let live = want.iter().filter(|v| v.is_finite() && **v != 0.0).count();
    assert!(2 * live >= want.len(), "{live} live");
    assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| v.is_infinite()));
    for (e, (g, h)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            h.to_bits(),
            "grad-input cluster: gx[{e}] {g} != {h}"
        );
    }
}

crate::kernel_params! {
    struct DivArgs => DivRegs { s: crate::dsl::params::Ptr<U32>, q: crate::dsl::params::Ptr<U32>, k: U32 }
}

/// `div_by_k` (grad-input's keys in the cluster kernel) on the simulator
/// equals `s / K` for `s` at the ends of the range it promises (`s <
/// 2²⁴`), around multiples of `K`, for `K` from 1 to `2²⁴ − 1`.
#[test]
fn keys_by_a_multiply_are_exact() {
    use super::super::grouped_sched::div_by_k;
    let mut b = KernelBuilder::new("div_by_k", Sm::Sm90);
    let p = b.params::<DivArgs>();
    let tid = b.tid_x();
    let m = b.div(u32::MAX, p.k);
    let sp = b.offset(p.s, tid);
    let s = b.ld_global(sp, 0);
    let q = div_by_k(&mut b, s, p.k, m);
    let qp = b.offset(p.q, tid);
    b.st_global(qp, 0, q);
    let module = b.finish().unwrap();
    let st = Context::sim(Sm::Sm90).default_stream();
    let top = (1u32 << 24) - 1;
    for k in [
        1u32,
        2,
        3,
        7,
        31,
        32,
        1000,
        4097,
        65_535,
        65_537,
        1 << 23,
        top - 2,
        top,
    ] {
        let mut ss: Vec<u32> = vec![0, 1, 2, top, top - 1, top - k % 97];
        for mult in [1u32, 2, 3, 255, top / k, top / k - 1, (top / k) / 2] {
            let at = mult.saturating_mul(k);
            ss.extend(
                [at.wrapping_sub(1), at, at.wrapping_add(1)]
                    .iter()
                    .filter(|&&x| x <= top),
            );
        }
        ss.resize(64, top / 3);
        let ds = st.upload(&ss).unwrap();
        let mut dq = st.upload(&vec![0u32; ss.len()]).unwrap();
        let args = DivArgs {
            s: st.arg("s", &ds).unwrap(),
            q: st.arg_mut("q", &mut dq).unwrap(),
            k,
        };
        st.launch(
            &module,
            LaunchConfig::linear(1, ss.len() as u32),
            &args.args(),
        )
        .unwrap();
        let want: Vec<u32> = ss.iter().map(|s| s / k).collect();
        assert_eq!(st.to_vec(&dq).unwrap(), want, "K {k}");
    }
}
