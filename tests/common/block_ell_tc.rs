//! The tensor-core block-ELL tests' shared setup (`tests/block_ell_tc.rs`,
//! `tests/block_ell_tc_grouped.rs`, `tests/block_ell_tc_mcast.rs`; `Encode` also
//! in `tests/block_ell_tc_values{,_tiles}.rs`): random
//! inputs, a forward case on a context (topology, encoded inputs, their
//! uploads) and its comparison with the host model, bit for bit. Included
//! beside `mod common;` with
//! `#[path = "common/block_ell_tc.rs"] mod tc_common;`.
#![allow(dead_code)]

use crate::common::Rng;
use ptxsmith::Sm;
use ptxsmith::kernels::block_ell_tc::{
    self as tc, DeviceTopology, Dims, TcElem, TcOutput, TcPrecision, host, to_bf16, to_f16,
};
use ptxsmith::runtime::{AsDevice, Context, DeviceBuffer, Stream};

/// Values `±[1, 2)·2^[−span, span]` with `frac` random fraction bits.
pub fn values(rng: &mut Rng, len: usize, span: usize, frac: u32) -> Vec<f32> {
    (0..len)
        .map(|_| {
            let e = rng.below(2 * span + 1) as i32 - span as i32;
            let sign = if rng.chance(50) { -1.0 } else { 1.0 };
            sign * (1.0 + rng.below(1 << frac) as f32 / (1u32 << frac) as f32) * 2f32.powi(e)
        })
        .collect()
}

/// Specials in `v` when it is longer than 40: +∞, −∞ and NaN at elements
/// 3, `len/2` and `len/3`; with `extremes` = `(max, tiny)` also `max`,
/// `−max`, `tiny` and `−tiny` at `len/5`, `len/7`, `len/4` and `len − 9`.
pub fn specials(v: &mut [f32], extremes: Option<(f32, f32)>) {
    let len = v.len();
    if len <= 40 {
        return;
    }
    v[3] = f32::INFINITY;
    v[len / 2] = f32::NEG_INFINITY;
    v[len / 3] = f32::NAN;
    if let Some((max, tiny)) = extremes {
        v[len / 5] = max;
        v[len / 7] = -max;
        v[len / 4] = tiny;
        v[len - 9] = -tiny;
    }
}

/// The bits of `got` equal those of `want`, most of which (a quarter at
/// least) are finite and non-zero, so that the comparison means something.
#[track_caller]
pub fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let live = want.iter().filter(|w| w.is_finite() && **w != 0.0).count();
    assert!(
        4 * live >= want.len(),
        "{what}: only {live} of {} live",
        want.len()
    );
    for (e, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.to_bits(), w.to_bits());
        assert_eq!(g, w, "{what}: element {e}: {g:#010x} != {w:#010x}");
    }
}

/// The inputs of `prec` as `T`.
pub trait Encode: TcElem + Sized {
    fn encode(prec: TcPrecision, v: &[f32]) -> Vec<Self>;
}
impl Encode for u16 {
    fn encode(prec: TcPrecision, v: &[f32]) -> Vec<u16> {
        if prec == TcPrecision::F16 {
            to_f16(v)
        } else {
            to_bf16(v)
        }
    }
}
impl Encode for f32 {
    fn encode(_: TcPrecision, v: &[f32]) -> Vec<f32> {
        v.to_vec()
    }
}

/// A forward case's inputs in f32, before encoding.
pub struct Inputs {
    /// `R·K·B·B` values; [`forward_case`] sets those of empty slots to NaN
    /// (never read into a result).
    pub values: Vec<f32>,
    /// `N·C·B` inputs.
    pub x: Vec<f32>,
    /// `R·B`, if the case adds a bias.
    pub bias: Option<Vec<f32>>,
}

/// A forward case uploaded to a context: the encoded inputs and their
/// device copies.
pub struct Forward<T: TcElem> {
    pub sm: Sm,
    pub prec: TcPrecision,
    pub dims: Dims,
    pub col: Vec<i32>,
    pub n: usize,
    pub x: Vec<T>,
    pub v: Vec<T>,
    pub bias: Option<Vec<f32>>,
    pub st: Stream,
    pub topo: DeviceTopology,
    pub dx: DeviceBuffer<T>,
    pub dv: DeviceBuffer<T>,
    pub dbias: Option<DeviceBuffer<f32>>,
}

/// The forward case of `prec` on `ctx` (its SM picks the host model) for
/// `n` rows of `dims` with the slots `col`: the values of empty slots set
/// to NaN, the inputs encoded as `T` and uploaded with the topology.
pub fn forward_case<T: Encode>(
    ctx: &Context,
    prec: TcPrecision,
    dims: Dims,
    col: Vec<i32>,
    n: usize,
    inputs: Inputs,
) -> Forward<T> {
    let b = dims.b();
    let mut vf = inputs.values;
    for s in (0..col.len()).filter(|&s| col[s] < 0) {
        vf[s * b * b..(s + 1) * b * b].fill(f32::NAN);
    }
    let (x, v) = (T::encode(prec, &inputs.x), T::encode(prec, &vf));
    let st = ctx.default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let (dx, dv) = (st.upload(&x).unwrap(), st.upload(&v).unwrap());
    let dbias = inputs.bias.as_ref().map(|b| st.upload(b).unwrap());
    Forward {
        sm: ctx.sm(),
        prec,
        dims,
        col,
        n,
        x,
        v,
        bias: inputs.bias,
        st,
        topo,
        dx,
        dv,
        dbias,
    }
}

impl<T: TcElem> Forward<T> {
    /// The bias on the device (`with`: the case has one) and on the host.
    fn bias(&self, with: bool) -> (Option<&dyn AsDevice<f32>>, Option<&[f32]>) {
        if !with {
            return (None, None);
        }
        let d = self.dbias.as_ref().expect("the case has a bias");
        (Some(d), self.bias.as_deref())
    }

    /// The host model's f32 results, with the bias if `bias`.
    pub fn want(&self, bias: bool) -> Vec<f32> {
        let (s, p) = (self.sm, self.prec);
        let hb = self.bias(bias).1;
        host::forward(s, p, &self.dims, self.n, &self.x, &self.v, &self.col, hb).unwrap()
    }

    /// The forward pass with f32 output (into a buffer of 7.0s, so that an
    /// unwritten element shows), with the bias if `bias`, equals the host
    /// model bit for bit; its output.
    #[track_caller]
    pub fn check_f32(&self, bias: bool, what: &str) -> Vec<f32> {
        let fout = self.n * self.dims.out_features();
        let mut y = self.st.upload(&vec![7.0f32; fout]).unwrap();
        self.run(TcOutput::F32, bias, &mut y);
        let got = self.st.to_vec(&y).unwrap();
        assert_bits(what, &got, &self.want(bias));
        got
    }

    /// The forward pass with bf16 output (into a buffer of `0x7777`s),
    /// with the bias if `bias`, equals the host model's f32 results each
    /// rounded once ([`host::output`]), bit for bit.
    #[track_caller]
    pub fn check_bf16(&self, bias: bool, what: &str) {
        let fout = self.n * self.dims.out_features();
        let mut y = self.st.upload(&vec![0x7777u16; fout]).unwrap();
        self.run(TcOutput::Bf16, bias, &mut y);
        let wide = |h: &[u16]| -> Vec<f32> {
            h.iter()
                .map(|&h| f32::from_bits(u32::from(h) << 16))
                .collect()
        };
        let want = host::output::<u16>(TcOutput::Bf16, &self.want(bias)).unwrap();
        assert_bits(what, &wide(&self.st.to_vec(&y).unwrap()), &wide(&want));
    }

    fn run<O: tc::TcOutElem>(&self, out: TcOutput, bias: bool, y: &mut DeviceBuffer<O>) {
        let (s, p) = (&self.st, self.prec);
        let db = self.bias(bias).0;
        tc::forward_dev(s, p, out, &self.topo, self.n, &self.dx, &self.dv, db, y).unwrap();
    }
}
