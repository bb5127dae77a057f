//! Launch code of [`super`]: device entry points ([`forward_dev`],
//! [`grad_input_dev`], [`grad_values_dev`]) on a
//! [`DeviceTopology`] and device buffers, queued on a [`Stream`] (GPU or
//! simulator). The device's SM picks both the kernels' target and, on the
//! simulator, the tensor-core model; the host model to compare with is
//! [`super::host`] with the same SM.
//!
//! Every check runs before anything is queued, so nothing is written on
//! error: the request ([`host::request`]: `B`, element type, SM from
//! sm_80; [`host::request_output`]: the output buffer's type), every length, and the kernels' 32-bit limits (`N`, `R·B`, `C·B`
//! below 2³¹, `R·K·B·B ≤ u32::MAX`).

use super::host::{self, TcElem, TcOutElem, TcOutput, TcPrecision};
use super::ptx::{
    ForwardArgs, ForwardTmaArgs, GradInputArgs, GradInputTmaArgs, GradValuesArgs,
    GradValuesTmaArgs, THREADS, forward_input_map, forward_values_map, generate_forward,
    generate_grad_input, generate_grad_values, group_tile, grouped, values_cluster, values_tile,
    values_tiles,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::U32;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::exec::LaunchConfig;
use crate::kernels::block_ell::launch as block_ell_launch;
use crate::kernels::block_ell::{DeviceTopology, Dims};
use crate::kernels::{check, grid, memo};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::Stream;
use crate::tensor_map::TensorMap;

/// The name errors of these kernels carry.
const FAMILY: &str = "block_ell_tc";

/// The request and the kernels' 32-bit limits (those of the FP32 path).
fn check_call<T: TcElem>(st: &Stream, prec: TcPrecision, d: &Dims, n: usize) -> Result<()> {
    host::request::<T>(st.context().sm(), prec, d)?;
    block_ell_launch::check_limits_in(FAMILY, d, n)
}

fn rows(d: &Dims, what: &str, got: usize, n: usize, width: usize, shape: &str) -> Result<()> {
    block_ell_launch::rows_in(FAMILY, d, what, got, n, width, shape)
}

fn values_len(d: &Dims, got: usize) -> Result<()> {
    check::len(FAMILY, "values", got, d.values_len(), "R × K × B × B")
}

/// The input's address as the kernels' untyped operand pointer.
fn operand_ptr<T: TcElem>(st: &Stream, what: &str, v: &impl AsDevice<T>) -> Result<DevPtr<U32>> {
    Ok(DevPtr::new(st.arg(what, v)?.addr))
}

/// CTAs for `tiles` CTA tiles of the staged kernels: one a tile, at most 8
/// per SM (the kernels' grid-stride loops cover the rest).
fn cta_config(st: &Stream, tiles: usize) -> LaunchConfig {
    let mp = st.context().multiprocessor_count();
    LaunchConfig::linear(grid::ctas(tiles as u64, 1, mp, 8), THREADS)
}

/// The launch of a grouped kernel ([`grouped`]): `tiles` CTA tiles (runs
/// of `cluster` of them in a cluster), at most 2 CTAs per SM, [`grouped::THREADS`] threads and `smem` bytes of
/// dynamic shared memory ([`grouped::smem_bytes`], which fits what every
/// SM lets a block opt in to: the forward pass's schedule is windowed).
fn group_config(st: &Stream, tiles: usize, smem: u64, cluster: u32) -> LaunchConfig {
    debug_assert!(smem <= u64::from(st.context().sm().info().max_smem_per_block_optin));
    let mp = st.context().multiprocessor_count();
    // clusters of `cluster` CTAs, each taking `tiles` units: a multiple of
    // the compiled cluster shape, at most 2 CTAs per SM
    let cap = (u64::from(mp.max(1)) * 2 / u64::from(cluster)).max(1);
    let clusters = grid::ctas_within(tiles as u64, 1, cap);
    let ctas = clusters.saturating_mul(cluster);
    let mut cfg = LaunchConfig::linear(ctas, grouped::THREADS);
    cfg.dynamic_smem_bytes = smem as u32;
    cfg
}

fn tiles(what: &str, factors: &[usize]) -> Result<usize> {
    let t = factors.iter().fold(1usize, |a, &f| a.saturating_mul(f));
    block_ell_launch::limit_in(FAMILY, what, t, u32::MAX as usize)?;
    Ok(t)
}

/// The two tensor maps of the forward and grad-input cluster kernels: the
/// values (`R·K` blocks) and the input tile (`x`, resp. `gy`: `rows` ×
/// `width` elements at `ptr`, boxes of `tokens` rows). An encoding error
/// (a view not 16-byte aligned) is returned before anything is queued.
fn cluster_maps(
    stream: &Stream,
    prec: TcPrecision,
    d: &Dims,
    tokens: u32,
    values: DevPtr<U32>,
    (input, width, rows): (DevPtr<U32>, usize, usize),
) -> Result<(TensorMap, TensorMap)> {
    let slots = (d.r() * d.k()) as u64;
    let desc = forward_values_map(prec, bsize(d), values.addr, slots);
    let vmap = TensorMap::encode_tiled(stream.context(), &desc)?;
    let desc = forward_input_map(
        prec,
        bsize(d),
        tokens,
        input.addr,
        rows as u64,
        width as u64,
    );
    Ok((vmap, TensorMap::encode_tiled(stream.context(), &desc)?))
}

fn bsize(d: &Dims) -> u32 {
    d.b() as u32
}

/// `y = x·Wᵀ (+ bias)` for `n` rows on the tensor cores in precision
/// `prec`, queued on `stream` (see the [contract](super)): `x` `[N, C·B]`
/// and `values` `[R, K, B, B]` as `T` (`u16` bits for bf16/f16, `f32` for
/// tf32), `bias` `[R·B]` f32, and `y` `[N, R·B]` of output type `out` as
/// `O` (`f32` for [`TcOutput::F32`]; `u16` bf16 bits for
/// [`TcOutput::Bf16`], each f32 result rounded once to nearest even).
///
/// ```
/// use ptxsmith::kernels::block_ell_tc::{self as tc, DeviceTopology, Dims, TcOutput, TcPrecision};
/// use ptxsmith::runtime::Context;
///
/// // One 16 × 16 block, W = 0.5·I, on a simulated sm_90 (the H100 model).
/// let dims = Dims::new(1, 1, 1, 16)?;
/// let st = Context::sim(ptxsmith::Sm::Sm90).default_stream();
/// let topo = DeviceTopology::upload(&st, &dims, &[0])?;
/// let w: Vec<f32> = (0..256).map(|e| if e % 17 == 0 { 0.5 } else { 0.0 }).collect();
/// let (x, v) = (st.upload(&tc::to_bf16(&[2.0; 16]))?, st.upload(&tc::to_bf16(&w))?);
/// let mut y = st.context().alloc::<f32>(16)?;
/// tc::forward_dev(&st, TcPrecision::Bf16, TcOutput::F32, &topo, 1, &x, &v, None, &mut y)?;
/// assert_eq!(st.to_vec(&y)?, [1.0; 16]);
/// // the same with bf16 output: 1.0 is 0x3F80
/// let mut y16 = st.context().alloc::<u16>(16)?;
/// tc::forward_dev(&st, TcPrecision::Bf16, TcOutput::Bf16, &topo, 1, &x, &v, None, &mut y16)?;
/// assert_eq!(st.to_vec(&y16)?, [0x3F80; 16]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`host::request`] (a `B` outside {16, 32, 64}, a `T` that is not
/// `prec`'s storage, [`Error::UnsupportedFeature`] below sm_80); as
/// [`host::request_output`] (an `O` that is not `out`'s storage);
/// [`Error::InvalidArgument`] naming the values for a length that does not
/// match its shape or sizes past the kernels' limits;
/// [`Error::TensorMap`] where the forward runs in clusters
/// ([`grouped::forward_cluster`] > 1: bf16/f16 `B` 32 and 64 and tf32
/// `B` 32 on sm_90,
/// sm_100, sm_100a), which reads `values` and `x` through tensor maps,
/// for a `values` or `x` view that does not start 16-byte aligned
/// ([`TensorMapError::Address`](crate::tensor_map::TensorMapError::Address));
/// [`Error::WrongContext`]; JIT and launch errors. Nothing is queued on
/// error.
#[allow(clippy::too_many_arguments)]
pub fn forward_dev<T: TcElem, O: TcOutElem>(
    stream: &Stream,
    prec: TcPrecision,
    out: TcOutput,
    topo: &DeviceTopology,
    n: usize,
    x: &impl AsDevice<T>,
    values: &impl AsDevice<T>,
    bias: Option<&dyn AsDevice<f32>>,
    y: &mut impl AsDeviceMut<O>,
) -> Result<()> {
    let d = *topo.dims();
    check_call::<T>(stream, prec, &d, n)?;
    host::request_output::<O>(out)?;
    rows(&d, "x", x.as_device().len(), n, d.in_features(), "N × C·B")?;
    rows(&d, "y", y.as_device().len(), n, d.out_features(), "N × R·B")?;
    values_len(&d, values.as_device().len())?;
    let bias = bias.map(|b| b.as_device());
    if let Some(b) = &bias {
        check::len(FAMILY, "bias", b.len(), d.out_features(), "R·B")?;
    }
    let bias = bias.map(|b| stream.arg("bias", &b)).transpose()?;
    let sm = stream.context().sm();
    let gt = group_tile(prec, bsize(&d), sm);
    // a cluster of `cl` CTAs takes `tok` adjacent token tiles of `grps`
    // consecutive groups
    let cl = grouped::forward_cluster(sm, prec, bsize(&d)) as usize;
    let (tok, grps) = grouped::forward_cluster_shape(sm, prec, bsize(&d));
    let count = tiles(
        "R / G × token tiles",
        &[
            d.r().div_ceil(gt.g as usize).div_ceil(grps as usize),
            n.div_ceil(gt.tokens as usize).div_ceil(tok as usize),
        ],
    )?;
    let smem = grouped::smem_bytes(prec, bsize(&d), sm, Some(d.k() as u32));
    let cfg = group_config(stream, count, smem, cl as u32);
    let xp = operand_ptr(stream, "x", x)?;
    let vp = operand_ptr(stream, "values", values)?;
    let yp = stream.arg_mut("y", y)?.addr;
    if count == 0 {
        return Ok(());
    }
    let args = ForwardArgs {
        x: xp,
        values: vp,
        col: stream.arg("col", topo.col())?,
        // never read without a bias
        bias: bias.unwrap_or(DevPtr::new(yp)),
        y: DevPtr::new(yp),
        n: n as u32,
        r: d.r() as u32,
        c: d.c() as u32,
        k: d.k() as u32,
        has_bias: u32::from(bias.is_some()),
        out_bf16: u32::from(out == TcOutput::Bf16),
    };
    let m = memo!(generate_forward, sm, prec, bsize(&d))?;
    if cl == 1 {
        return stream.launch(m, cfg, &args.args());
    }
    // the cluster kernel reads the values and `x` through tensor maps (an
    // encoding error, e.g. a view not 16-byte aligned, is returned before
    // the launch)
    let (vmap, xmap) = cluster_maps(stream, prec, &d, gt.tokens, vp, (xp, d.in_features(), n))?;
    let args = ForwardTmaArgs {
        x: args.x,
        col: args.col,
        bias: args.bias,
        y: args.y,
        n: args.n,
        r: args.r,
        c: args.c,
        k: args.k,
        has_bias: args.has_bias,
        out_bf16: args.out_bf16,
        vmap,
        xmap,
    };
    stream.launch(m, cfg, &args.args())
}

/// `gx` (`[N, C·B]` of output type `out` as `O`, as [`forward_dev`]'s
/// `y`), the gradient with respect to `x` given `gy` (`[N, R·B]` as `T`),
/// on the tensor cores over the topology's transposed index, queued on
/// `stream` (see the [contract](super)).
///
/// # Errors
/// As [`forward_dev`].
#[allow(clippy::too_many_arguments)]
pub fn grad_input_dev<T: TcElem, O: TcOutElem>(
    stream: &Stream,
    prec: TcPrecision,
    out: TcOutput,
    topo: &DeviceTopology,
    n: usize,
    gy: &impl AsDevice<T>,
    values: &impl AsDevice<T>,
    gx: &mut impl AsDeviceMut<O>,
) -> Result<()> {
    let d = *topo.dims();
    check_call::<T>(stream, prec, &d, n)?;
    host::request_output::<O>(out)?;
    rows(
        &d,
        "gy",
        gy.as_device().len(),
        n,
        d.out_features(),
        "N × R·B",
    )?;
    rows(
        &d,
        "gx",
        gx.as_device().len(),
        n,
        d.in_features(),
        "N × C·B",
    )?;
    values_len(&d, values.as_device().len())?;
    let sm = stream.context().sm();
    let gt = group_tile(prec, bsize(&d), sm);
    // a cluster of `cl` CTAs takes `cl` adjacent token tiles of a group
    let cl = grouped::grad_input_cluster(sm, prec, bsize(&d)) as usize;
    let count = tiles(
        "C / G × token tiles",
        &[
            d.c().div_ceil(gt.g as usize),
            n.div_ceil(gt.tokens as usize).div_ceil(cl),
        ],
    )?;
    let smem = grouped::smem_bytes(prec, bsize(&d), sm, None);
    let cfg = (count > 0).then(|| group_config(stream, count, smem, cl as u32));
    let gyp = operand_ptr(stream, "gy", gy)?;
    let vp = operand_ptr(stream, "values", values)?;
    let gxp = DevPtr::new(stream.arg_mut("gx", gx)?.addr);
    let Some(cfg) = cfg else {
        return Ok(());
    };
    let (offsets, slots) = topo.index();
    let args = GradInputArgs {
        gy: gyp,
        values: vp,
        offsets: stream.arg("index offsets", offsets)?,
        slots: stream.arg("index slots", slots)?,
        gx: gxp,
        n: n as u32,
        r: d.r() as u32,
        c: d.c() as u32,
        k: d.k() as u32,
        out_bf16: u32::from(out == TcOutput::Bf16),
    };
    let m = memo!(generate_grad_input, sm, prec, bsize(&d))?;
    if cl == 1 {
        return stream.launch(m, cfg, &args.args());
    }
    // the cluster kernel reads the values through the forward's tensor
    // map and `gy` through a second one, as the forward's `x` (an
    // encoding error, e.g. a view not 16-byte aligned, is returned
    // before the launch)
    let (vmap, gymap) = cluster_maps(stream, prec, &d, gt.tokens, vp, (gyp, d.out_features(), n))?;
    let args = GradInputTmaArgs {
        gy: args.gy,
        offsets: args.offsets,
        slots: args.slots,
        gx: args.gx,
        n: args.n,
        r: args.r,
        c: args.c,
        k: args.k,
        out_bf16: args.out_bf16,
        vmap,
        gymap,
    };
    stream.launch(m, cfg, &args.args())
}

/// `gv` (`[R, K, B, B]` f32), the gradient with respect to `values` given
/// `x` (`[N, C·B]`) and `gy` (`[N, R·B]`) as `T`, on the tensor cores by
/// the N-chunk tree (in registers: no scratch), queued on `stream` (see
/// the [contract](super)). Empty slots get `+0.0`.
///
/// # Errors
/// As [`forward_dev`].
pub fn grad_values_dev<T: TcElem>(
    stream: &Stream,
    prec: TcPrecision,
    topo: &DeviceTopology,
    n: usize,
    x: &impl AsDevice<T>,
    gy: &impl AsDevice<T>,
    gv: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let d = *topo.dims();
    check_call::<T>(stream, prec, &d, n)?;
    rows(&d, "x", x.as_device().len(), n, d.in_features(), "N × C·B")?;
    rows(
        &d,
        "gy",
        gy.as_device().len(),
        n,
        d.out_features(),
        "N × R·B",
    )?;
    check::len(
        FAMILY,
        "gv",
        gv.as_device().len(),
        d.values_len(),
        "R × K × B × B",
    )?;
    let sm = stream.context().sm();
    let cluster = values_cluster::enabled(sm, prec, bsize(&d));
    let cfg = match values_tiles(prec, bsize(&d), sm) {
        // bf16/f16 `B` 32 and 64, tf32 `B` 32 on sm_90/sm_100: clusters
        // of 4 CTAs a part of a cluster tile of 16 rows × 8 column blocks
        _ if cluster => {
            let vt = values_cluster::cluster_tiles(prec, bsize(&d));
            let cl = values_cluster::CLUSTER as usize;
            let count = tiles(
                "R / (4·rows) × C / cols × parts",
                &[
                    d.r().div_ceil(cl * vt.rows as usize),
                    d.c().div_ceil(vt.cols as usize),
                    vt.parts() as usize,
                ],
            )?;
            let mp = stream.context().multiprocessor_count();
            // at most 8 CTAs an SM, a whole number of clusters
            let clusters = grid::ctas(count as u64, 1, mp, 8 / cl as u32);
            let mut cfg = LaunchConfig::linear(
                clusters.saturating_mul(cl as u32),
                super::ptx::values_tiles::THREADS,
            );
            cfg.dynamic_smem_bytes = values_cluster::smem_bytes(prec, bsize(&d)) as u32;
            (count > 0).then_some(cfg)
        }
        // `B` ≤ 32: one CTA a part of a tile of rows × column blocks
        Some(vt) => {
            let count = tiles(
                "R / rows × C / cols × parts",
                &[
                    d.r().div_ceil(vt.rows as usize),
                    d.c().div_ceil(vt.cols as usize),
                    vt.parts() as usize,
                ],
            )?;
            let smem = super::ptx::values_tiles::smem_bytes(prec, bsize(&d), sm).unwrap_or(0);
            let max = sm.info().max_smem_per_block_optin;
            if smem > u64::from(max) {
                return Err(crate::error::Error::invalid(format!(
                    "{FAMILY}: the grad-values tile kernel's staging needs {smem} bytes of \
                     shared memory per block, {sm} allows {max}"
                )));
            }
            let mp = stream.context().multiprocessor_count();
            let mut cfg = LaunchConfig::linear(
                grid::ctas(count as u64, 1, mp, 8),
                super::ptx::values_tiles::THREADS,
            );
            cfg.dynamic_smem_bytes = smem as u32;
            (count > 0).then_some(cfg)
        }
        // `B` = 64: one CTA a group of a row's consecutive slots (empty
        // ones store +0.0)
        None => {
            let group = values_tile(prec, bsize(&d)).slots as usize;
            let count = tiles("R × slot groups", &[d.r(), d.k().div_ceil(group)])?;
            (count > 0).then(|| cta_config(stream, count))
        }
    };
    let xp = operand_ptr(stream, "x", x)?;
    let gyp = operand_ptr(stream, "gy", gy)?;
    let gvp = stream.arg_mut("gv", gv)?;
    let Some(cfg) = cfg else {
        return Ok(());
    };
    let args = GradValuesArgs {
        x: xp,
        gy: gyp,
        col: stream.arg("col", topo.col())?,
        gv: gvp,
        n: n as u32,
        r: d.r() as u32,
        c: d.c() as u32,
        k: d.k() as u32,
    };
    let m = memo!(generate_grad_values, sm, prec, bsize(&d))?;
    if !cluster {
        return stream.launch(m, cfg, &args.args());
    }
    // the cluster kernel reads `x` through a tensor map (an encoding
    // error, e.g. `x` not 16-byte aligned, is returned before the launch)
    let desc = values_cluster::x_map(prec, bsize(&d), xp.addr, n as u64, d.in_features() as u64);
    let xmap = TensorMap::encode_tiled(stream.context(), &desc)?;
    let args = GradValuesTmaArgs {
        x: args.x,
        gy: args.gy,
        col: args.col,
        gv: args.gv,
        n: args.n,
        r: args.r,
        c: args.c,
        k: args.k,
        xmap,
    };
    stream.launch(m, cfg, &args.args())
}
