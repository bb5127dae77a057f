//! The one driver of the block-ELL tensor-core cluster tests
//! (`tests/block_ell_tc_mcast.rs`: the forward, `tests/block_ell_tc_gi_mcast.rs`:
//! grad-input), over a [`Pass`]: the simulator with its checks on against
//! the host model bit for bit (inputs `±[1, 2)·2^[−6, 6]` with ±∞/NaN,
//! tf32's with 20 fraction bits), the odd-tile and tf32 case lists they
//! share, a misaligned view as a typed error, and the SASS checks.
//! Included beside `mod common;` and
//! `#[path = "common/block_ell_tc.rs"] mod tc_common;` with
//! `#[path = "common/block_ell_tc_mcast.rs"] mod mcast;`.
#![allow(dead_code)]

use crate::common::Rng;
use crate::tc_common::{Encode, Inputs, assert_bits, forward_case, specials, values};
use ptxsmith::kernels::block_ell_tc::{
    self as tc, DeviceTopology, Dims, TcElem, TcOutElem, TcOutput, TcPrecision, host, ptx,
};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context, Stream};
use ptxsmith::tensor_map::TensorMapError;
use ptxsmith::{Error, Sm};

/// Which pass of the grouped kernel runs in clusters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// `y = x·Wᵀ (+ bias)`: `R` row blocks of `C` = 7 column blocks,
    /// `K` = 4 slots a row, row block 2 empty.
    Forward,
    /// `gx = gy·W`: `C` column blocks under `R` = 9 row blocks, `K` = 3
    /// slots a row, column block 2 never used.
    GradInput,
}

/// The token tiles, and what is subtracted from them for a ragged `N`,
/// of [`multicast_case`]'s targets in turn: 3 (the first), 5, 1.
const ODD_TILES: [(usize, usize); 3] = [(3, 5), (5, 37), (1, 3)];

/// The token tiles and `N`'s shortfall of [`tf32_case`]'s three targets:
/// 5, 2 and 1.
const TF32_TILES: [(usize, usize); 3] = [(5, 37), (2, 5), (1, 3)];

impl Pass {
    /// The pass's cluster size ([`ptx::grouped::forward_cluster`] or
    /// [`ptx::grouped::grad_input_cluster`]).
    pub fn cluster(self, sm: Sm, prec: TcPrecision, b: u32) -> u32 {
        match self {
            Pass::Forward => ptx::grouped::forward_cluster(sm, prec, b),
            Pass::GradInput => ptx::grouped::grad_input_cluster(sm, prec, b),
        }
    }

    /// The targets where the pass multicasts across a cluster at `B` =
    /// `b` (bf16 or f16), over [`Sm::ALL`], so that a new target that
    /// enables the cluster is tested.
    pub fn multicast_sms(self, b: u32) -> Vec<Sm> {
        let on = |sm, prec| self.cluster(sm, prec, b) > 1;
        Sm::ALL
            .into_iter()
            .filter(|&sm| on(sm, TcPrecision::Bf16) || on(sm, TcPrecision::F16))
            .collect()
    }

    /// The pass on the device: `act` is `x` (forward) or `gy`
    /// (grad-input); grad-input takes no bias.
    #[allow(clippy::too_many_arguments)]
    pub fn run<T: TcElem, O: TcOutElem>(
        self,
        st: &Stream,
        prec: TcPrecision,
        out: TcOutput,
        topo: &DeviceTopology,
        n: usize,
        act: &impl AsDevice<T>,
        v: &impl AsDevice<T>,
        y: &mut impl AsDeviceMut<O>,
    ) -> Result<(), Error> {
        match self {
            Pass::Forward => tc::forward_dev(st, prec, out, topo, n, act, v, None, y),
            Pass::GradInput => tc::grad_input_dev(st, prec, out, topo, n, act, v, y),
        }
    }

    /// The length of the pass's input activation (`x` or `gy`) for `n` rows.
    fn act_len(self, dims: &Dims, n: usize) -> usize {
        n * match self {
            Pass::Forward => dims.in_features(),
            Pass::GradInput => dims.out_features(),
        }
    }

    /// The length of the pass's output for `n` rows.
    fn out_len(self, dims: &Dims, n: usize) -> usize {
        n * match self {
            Pass::Forward => dims.out_features(),
            Pass::GradInput => dims.in_features(),
        }
    }
}

/// The pass of `prec` at `B` = `b` on `sm` for `n` rows against the host
/// model; `rc` is `R` (forward) or `C` (grad-input). The forward: f32
/// output with a bias (row block 2: +0.0 plus its bias) and bf16 output
/// without; grad-input: f32 (column block 2: +0.0) and bf16 output.
pub fn case(pass: Pass, sm: Sm, prec: TcPrecision, b: usize, rc: usize, n: usize, seed: u64) {
    if prec == TcPrecision::Tf32 {
        case_of::<f32>(pass, sm, prec, b, rc, n, seed);
    } else {
        case_of::<u16>(pass, sm, prec, b, rc, n, seed);
    }
}

/// Row `row`'s slot `slot` over `c` column blocks: blocks by a stride,
/// slot 1 of every third row empty, and `empty` (row 2 in the forward,
/// column block 2 in grad-input) without entries.
fn topology(pass: Pass, r: usize, c: usize, k: usize) -> Vec<i32> {
    (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            let cb = (row * 5 + slot * 3) % c;
            let empty = match pass {
                Pass::Forward => row == 2,
                Pass::GradInput => cb == 2,
            };
            if empty || (slot == 1 && row % 3 == 0) {
                -1
            } else {
                cb as i32
            }
        })
        .collect()
}

/// [`case`] with the inputs stored as `T` (tf32: f32 whose low 13 bits,
/// which `cvt.rna` rounds away, are not all zero).
fn case_of<T: Encode>(
    pass: Pass,
    sm: Sm,
    prec: TcPrecision,
    b: usize,
    rc: usize,
    n: usize,
    seed: u64,
) {
    let (r, c, k) = match pass {
        Pass::Forward => (rc, 7, 4),
        Pass::GradInput => (9, rc, 3),
    };
    let frac = if prec == TcPrecision::Tf32 { 20 } else { 10 };
    let dims = Dims::new(r, c, k, b).unwrap();
    let col = topology(pass, r, c, k);
    let mut rng = Rng(seed);
    let mut v = values(&mut rng, dims.values_len(), 6, frac);
    specials(&mut v, None);
    let mut act = values(&mut rng, pass.act_len(&dims, n), 6, frac);
    // (a single row with a NaN input would be NaN throughout)
    if n > 8 {
        specials(&mut act, None);
    }
    match pass {
        Pass::Forward => {
            let bias = Some(values(&mut rng, dims.out_features(), 6, 10));
            let inputs = Inputs {
                values: v,
                x: act,
                bias,
            };
            forward::<T>(sm, prec, dims, col, n, inputs);
        }
        Pass::GradInput => grad_input::<T>(sm, prec, dims, col, n, v, act),
    }
}

fn forward<T: Encode>(sm: Sm, prec: TcPrecision, dims: Dims, col: Vec<i32>, n: usize, i: Inputs) {
    let f = forward_case::<T>(&Context::sim(sm), prec, dims, col, n, i);
    let (b, r) = (dims.b(), dims.out_features() / dims.b());
    let what = format!("{prec:?} B={b} R={r} N={n} on {sm}");
    let got = f.check_f32(true, &format!("f32 {what}"));
    // row block 2 has no entry: +0.0 plus its bias
    let (out, bias) = (dims.out_features(), f.bias.as_ref().unwrap());
    for row in 0..n {
        for f in 2 * b..3 * b {
            let want = (0.0f32 + bias[f]).to_bits();
            assert_eq!(got[row * out + f].to_bits(), want, "{what}");
        }
    }
    f.check_bf16(false, &format!("bf16 out {what}"));
}

fn grad_input<T: Encode>(
    sm: Sm,
    prec: TcPrecision,
    dims: Dims,
    col: Vec<i32>,
    n: usize,
    mut vf: Vec<f32>,
    gyf: Vec<f32>,
) {
    let b = dims.b();
    // the values of empty slots NaN (never read)
    for s in (0..col.len()).filter(|&s| col[s] < 0) {
        vf[s * b * b..(s + 1) * b * b].fill(f32::NAN);
    }
    let (gy, v) = (T::encode(prec, &gyf), T::encode(prec, &vf));
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dgy, dv) = (st.upload(&gy).unwrap(), st.upload(&v).unwrap());
    let c = dims.in_features() / b;
    let what = format!("{prec:?} B={b} C={c} N={n} on {sm}");
    let want = host::grad_input(sm, prec, &dims, n, &gy, &v, &col).unwrap();
    let fin = dims.in_features();
    // 7.0s: an unwritten element shows
    let mut gx = st.upload(&vec![7.0f32; n * fin]).unwrap();
    let gi = Pass::GradInput;
    gi.run(&st, prec, TcOutput::F32, &topo, n, &dgy, &dv, &mut gx)
        .unwrap();
    let got = st.to_vec(&gx).unwrap();
    assert_bits(&format!("f32 {what}"), &got, &want);
    // column block 2 has no entry: +0.0
    for row in 0..n {
        for f in 2 * b..3 * b {
            assert_eq!(got[row * fin + f].to_bits(), 0, "{what}");
        }
    }
    let mut gx16 = st.upload(&vec![0x7777u16; n * fin]).unwrap();
    gi.run(&st, prec, TcOutput::Bf16, &topo, n, &dgy, &dv, &mut gx16)
        .unwrap();
    let h = host::output::<u16>(TcOutput::Bf16, &want).unwrap();
    assert_eq!(st.to_vec(&gx16).unwrap(), h, "bf16 out {what}");
}

/// bf16 and f16 at `B` = `b` on every target of [`Pass::multicast_sms`]
/// (the precision alternating): an odd number of token tiles (the last
/// run of four: one to three tiles past `N`), `N` ragged; `R` (forward) or
/// `C` (grad-input) = 2.5 groups (a ragged last group), so with 1-2 runs
/// of four tiles a group some clusters take a second run (the
/// simulator's grid holds 2 clusters of 4).
pub fn multicast_case(pass: Pass, b: usize, seed: u64) {
    let sms = pass.multicast_sms(b as u32);
    assert!(!sms.is_empty(), "{pass:?} B {b}");
    for (i, sm) in sms.into_iter().enumerate() {
        let prec = if i % 2 == 0 {
            TcPrecision::Bf16
        } else {
            TcPrecision::F16
        };
        let gt = ptx::group_tile(prec, b as u32, sm);
        let rc = 5 * gt.g as usize / 2;
        let (tiles, short) = ODD_TILES[i % 3];
        let n = tiles * gt.tokens as usize - short;
        case(pass, sm, prec, b, rc, n, seed + 10 * i as u64);
    }
}

/// tf32 at `B` 32 (G 8) on every target where the pass runs in clusters
/// (sm_90, sm_100, sm_100a; the f32 tiles land unrounded by tensor map
/// and are rounded in shared memory): 5, 2 and 1 token tiles, `N`
/// ragged, `R` or `C` = 1.5 groups (a ragged last group); seeds `seed`,
/// `seed + 1`, `seed + 2`.
pub fn tf32_case(pass: Pass, seed: u64) {
    let prec = TcPrecision::Tf32;
    let sms: Vec<Sm> = Sm::ALL
        .into_iter()
        .filter(|&sm| pass.cluster(sm, prec, 32) > 1)
        .collect();
    assert_eq!(sms, [Sm::Sm90, Sm::Sm100, Sm::Sm100a], "{pass:?}");
    for (i, sm) in sms.into_iter().enumerate() {
        let gt = ptx::group_tile(prec, 32, sm);
        let (tiles, short) = TF32_TILES[i];
        let n = tiles * gt.tokens as usize - short;
        case(
            pass,
            sm,
            prec,
            32,
            3 * gt.g as usize / 2,
            n,
            seed + i as u64,
        );
    }
}

/// Which array a misaligned view stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// The values.
    Values,
    /// `x` (forward) or `gy` (grad-input).
    Input,
}

/// All-ones inputs of `prec` (as `T`) for `n` rows of `dims` with the
/// slots `col`, each array one element longer than it needs: for each of
/// `shifted`, a view of that array one element in (the other aligned) is
/// refused as the tensor map's error ([`TensorMapError::Address`]) before
/// anything is queued (the f32 output keeps its 7.0s); then the aligned
/// views run, every output `B` (one block of ones a row block).
pub fn misaligned<T: Encode>(
    pass: Pass,
    sm: Sm,
    prec: TcPrecision,
    dims: Dims,
    col: &[i32],
    n: usize,
    shifted: &[Operand],
) {
    let b = dims.b();
    let what = format!("{pass:?} {prec:?} B {b}");
    let st = Context::sim(sm).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, col).unwrap();
    let (alen, vlen) = (pass.act_len(&dims, n), dims.values_len());
    let act = st.upload(&T::encode(prec, &vec![1.0; alen + 1])).unwrap();
    let v = st.upload(&T::encode(prec, &vec![1.0; vlen + 1])).unwrap();
    let mut y = st.upload(&vec![7.0f32; pass.out_len(&dims, n)]).unwrap();
    let (act0, v0) = (act.slice(..alen).unwrap(), v.slice(..vlen).unwrap());
    let (act1, v1) = (act.slice(1..).unwrap(), v.slice(1..).unwrap());
    let f32o = TcOutput::F32;
    assert!(!shifted.is_empty(), "{what}");
    for &o in shifted {
        let e = match o {
            Operand::Values => pass.run(&st, prec, f32o, &topo, n, &act0, &v1, &mut y),
            Operand::Input => pass.run(&st, prec, f32o, &topo, n, &act1, &v0, &mut y),
        }
        .unwrap_err();
        assert!(
            matches!(e, Error::TensorMap(TensorMapError::Address { .. })),
            "{what} {o:?}: {e:?}"
        );
        assert!(
            st.to_vec(&y).unwrap().iter().all(|&v| v == 7.0),
            "{what} {o:?}"
        );
    }
    // the aligned arrays run
    pass.run(&st, prec, f32o, &topo, n, &act0, &v0, &mut y)
        .unwrap();
    let want = b as f32;
    assert!(
        st.to_vec(&y).unwrap().iter().all(|&v| v == want),
        "{what} aligned"
    );
}

/// The pinned ptxas assembles the pass's cluster kernel, on every target
/// of [`Pass::multicast_sms`] at `B` 32 and 64 and every precision the
/// pass runs in clusters there (tf32: `B` 32), into tensor-map copies
/// (`UTMALDG.2D.MULTICAST` for the values, and a plain `UTMALDG.2D` for the
/// input tile: in the forward's GRID cluster (several groups) a second
/// multicast instead, and its MMAs into `HMMA`), with no bulk copy
/// (`UBLKCP`: the per-row copies the tensor map replaced), no `cp.async`
/// (`LDGSTS`: the input tile's per-thread copies before) and no loop over
/// the active lanes around the copies (`BRA.U.ANY`: they are issued under
/// `elect.sync`). SKIP without the tools.
pub fn sass_checks(pass: Pass) {
    let Some(tools) = ptxsmith::nvtools::NvTools::for_tests() else {
        return;
    };
    for b in [32u32, 64] {
        for sm in pass.multicast_sms(b) {
            for prec in [TcPrecision::Bf16, TcPrecision::F16, TcPrecision::Tf32]
                .into_iter()
                .filter(|&p| pass.cluster(sm, p, b) > 1)
            {
                let m = match pass {
                    Pass::Forward => ptx::generate_forward(sm, prec, b),
                    Pass::GradInput => ptx::generate_grad_input(sm, prec, b),
                }
                .unwrap();
                let asm = tools
                    .assemble(&m.ptx, sm)
                    .unwrap_or_else(|e| panic!("{pass:?} {sm} {prec:?} B {b}: ptxas: {e}"));
                let sass = tools.disassemble(&asm).unwrap();
                let what = format!(
                    "{pass:?} {sm} {prec:?} B {b}: {:?}",
                    sass.opcode_histogram()
                );
                assert!(sass.count("UTMALDG.2D.MULTICAST") >= 1, "{what}");
                match pass {
                    Pass::Forward => {
                        // (`x` multicast in a GRID, the values' and its:
                        // two copies at least; by a plain copy in a
                        // cluster of one group)
                        let grid = ptx::grouped::forward_cluster_shape(sm, prec, b).1 > 1;
                        let want = 1 + usize::from(grid);
                        assert!(sass.count("UTMALDG.2D.MULTICAST") >= want, "{what}");
                        assert_eq!(sass.count("UTMALDG.2D") >= 1, !grid, "{what}");
                        assert!(sass.count("HMMA") >= 1, "{what}");
                    }
                    Pass::GradInput => {
                        assert!(sass.count("UTMALDG.2D") >= 1, "{what}");
                    }
                }
                assert_eq!(sass.count("UBLKCP"), 0, "{what}");
                assert_eq!(sass.count("LDGSTS"), 0, "{what}");
                assert_eq!(sass.count("BRA.U.ANY"), 0, "{what}");
            }
        }
    }
}
