//! Launch code for [`super`]: public entry points that take a [`Backend`],
//! and `*_on` cores written once against [`Executor`] so the GPU and the
//! simulator run the same sequence of uploads, launches and downloads.
//!
//! Current scaling ([`quantize`]) runs three kernels back to back on the
//! device: the absmax partials (a grid of blocks), the one-block finalize
//! that writes `[amax, scale, scale_inv]` into a 12-byte device buffer, and
//! the quantize kernel that reads its scale from that buffer. Nothing
//! returns to the host between the passes; the host downloads the codes
//! and the 12 bytes of stats at the end.
//!
//! Every entry point runs the SM's default codec ([`Codec::for_sm`]);
//! `Backend::Sim` simulates [`crate::kernels::dispatch::default_sim_sm`]
//! (the device's SM, else sm_80). Call the `*_on` functions with
//! `&mut Sim::new(sm)` and an explicit [`Codec`] for any other variant.

use super::host::{self, Format, Quantized};
use super::ptx::{
    self, AbsmaxFinalizeArgs, AbsmaxPartialsArgs, BLOCK, Codec, DequantizeArgs, QuantizeArgs,
    QuantizeScaledArgs, STATS_LEN,
};
use crate::dsl::PtxModule;
use crate::dsl::params::{ArgValue, KernelParams};
use crate::error::{Error, Result};
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::exec::{BufferId, Executor, LaunchConfig, download_vec, upload_new};

/// What the two absmax passes did, for tests and diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct AbsmaxTrace {
    /// Launch shape of the partials pass.
    pub partials_launch: LaunchConfig,
    /// Launch shape of the finalize pass (always one block).
    pub finalize_launch: LaunchConfig,
    /// The per-block partial maxima, one per block of the first pass.
    pub partials: Vec<f32>,
    /// `[amax, scale, scale_inv]` as the finalize kernel wrote them.
    pub stats: [f32; STATS_LEN],
}

/// Check a delayed-scaling scale: finite and `> 0` (the host model's rule).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the value otherwise.
pub fn validate_scale(scale: f32) -> Result<()> {
    if scale.is_finite() && scale > 0.0 {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "fp8 quantize_with_scale: scale must be finite and > 0, got {scale:?} (bits {:#010x})",
        scale.to_bits()
    )))
}

/// The vectorised kernels read four floats as one 16-byte access and four
/// codes as one 4-byte access; executors allocate at least that aligned,
/// and this checks it rather than launching a misaligned access.
fn check_aligned(kernel: &str, buf: BufferId, align: u64) -> Result<()> {
    if buf.addr.is_multiple_of(align) {
        return Ok(());
    }
    Err(Error::Launch {
        kernel: kernel.to_string(),
        message: format!(
            "buffer at {:#x} is not {align}-byte aligned (the executor's allocator must be)",
            buf.addr
        ),
    })
}

/// Free every buffer, then return `result` (or the first free error).
fn finish<T>(ex: &mut dyn Executor, bufs: &[BufferId], result: Result<T>) -> Result<T> {
    let mut freed = Ok(());
    for &b in bufs {
        let r = ex.free(b);
        if freed.is_ok() {
            freed = r;
        }
    }
    let v = result?;
    freed.map(|()| v)
}

fn launch(
    ex: &mut dyn Executor,
    m: &PtxModule,
    blocks: u32,
    args: &[ArgValue],
) -> Result<LaunchConfig> {
    let cfg = LaunchConfig::linear(blocks, BLOCK);
    ex.launch(m, cfg, args)?;
    Ok(cfg)
}

fn len_u64(n: usize) -> u64 {
    // usize is at most 64 bits on every supported host.
    n as u64
}

/// Both absmax passes over the `n` floats of `x`, leaving
/// `[amax, scale, scale_inv]` for format `f` in the returned stats buffer.
/// Returns `(stats, partials, partials launch, finalize launch)`; the
/// caller frees both buffers.
fn absmax_passes(
    ex: &mut dyn Executor,
    x: BufferId,
    n: u64,
    f: Format,
) -> Result<(BufferId, BufferId, LaunchConfig, LaunchConfig)> {
    let sm = ex.sm();
    let blocks = ptx::grid_blocks(n, ex.multiprocessor_count());
    let partials = ex.alloc(blocks as usize * 4)?;
    let stats = match ex.alloc(STATS_LEN * 4) {
        Ok(s) => s,
        Err(e) => return finish(ex, &[partials], Err(e)),
    };
    let run = |ex: &mut dyn Executor| -> Result<(LaunchConfig, LaunchConfig)> {
        let m1 = ptx::generate_absmax_partials(sm)?;
        check_aligned(&m1.kernel, x, 16)?;
        let a1 = AbsmaxPartialsArgs {
            x: x.into(),
            n,
            partials: partials.into(),
        };
        let c1 = launch(ex, &m1, blocks, &a1.args())?;
        let m2 = ptx::generate_absmax_finalize(sm, f)?;
        let a2 = AbsmaxFinalizeArgs {
            partials: partials.into(),
            count: blocks,
            stats: stats.into(),
        };
        let c2 = launch(ex, &m2, 1, &a2.args())?;
        Ok((c1, c2))
    };
    match run(ex) {
        Ok((c1, c2)) => Ok((stats, partials, c1, c2)),
        Err(e) => finish(ex, &[partials, stats], Err(e)),
    }
}

fn stats_of(v: &[f32]) -> [f32; STATS_LEN] {
    [v[0], v[1], v[2]]
}

/// Run both absmax passes on `ex` and download the partials and stats.
pub fn absmax_on(ex: &mut dyn Executor, xs: &[f32], f: Format) -> Result<AbsmaxTrace> {
    let x = upload_new(ex, xs)?;
    let (stats, partials, c1, c2) = match absmax_passes(ex, x, len_u64(xs.len()), f) {
        Ok(v) => v,
        Err(e) => return finish(ex, &[x], Err(e)),
    };
    let result = (|| {
        let p = download_vec::<f32>(ex, partials, c1.grid.0 as usize)?;
        let s = download_vec::<f32>(ex, stats, STATS_LEN)?;
        Ok(AbsmaxTrace {
            partials_launch: c1,
            finalize_launch: c2,
            partials: p,
            stats: stats_of(&s),
        })
    })();
    finish(ex, &[x, partials, stats], result)
}

/// Current scaling on `ex`: absmax, scale and codes, all on the device.
pub fn quantize_on(
    ex: &mut dyn Executor,
    xs: &[f32],
    f: Format,
    codec: Codec,
) -> Result<Quantized> {
    let n = len_u64(xs.len());
    let x = upload_new(ex, xs)?;
    let (stats, partials, _, _) = match absmax_passes(ex, x, n, f) {
        Ok(v) => v,
        Err(e) => return finish(ex, &[x], Err(e)),
    };
    let codes = match ex.alloc(xs.len().max(1)) {
        Ok(c) => c,
        Err(e) => return finish(ex, &[x, partials, stats], Err(e)),
    };
    let result = (|| {
        let m = ptx::generate_quantize(ex.sm(), f, codec)?;
        check_aligned(&m.kernel, codes, 4)?;
        let args = QuantizeArgs {
            x: x.into(),
            n,
            stats: stats.into(),
            codes: codes.into(),
        };
        let blocks = ptx::grid_blocks(n, ex.multiprocessor_count());
        launch(ex, &m, blocks, &args.args())?;
        let s = download_vec::<f32>(ex, stats, STATS_LEN)?;
        let c = download_vec::<u8>(ex, codes, xs.len())?;
        Ok(Quantized {
            codes: c,
            scale: s[1],
            scale_inv: s[2],
            amax: s[0],
        })
    })();
    finish(ex, &[x, partials, stats, codes], result)
}

/// Delayed scaling on `ex`: `codes[i] = encode(x[i] · scale)`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a scale that is not finite and `> 0`.
pub fn quantize_with_scale_on(
    ex: &mut dyn Executor,
    xs: &[f32],
    scale: f32,
    f: Format,
    codec: Codec,
) -> Result<Vec<u8>> {
    validate_scale(scale)?;
    let n = len_u64(xs.len());
    let x = upload_new(ex, xs)?;
    let codes = match ex.alloc(xs.len().max(1)) {
        Ok(c) => c,
        Err(e) => return finish(ex, &[x], Err(e)),
    };
    let result = (|| {
        let m = ptx::generate_quantize_scaled(ex.sm(), f, codec)?;
        check_aligned(&m.kernel, x, 16)?;
        check_aligned(&m.kernel, codes, 4)?;
        let args = QuantizeScaledArgs {
            x: x.into(),
            n,
            scale,
            codes: codes.into(),
        };
        let blocks = ptx::grid_blocks(n, ex.multiprocessor_count());
        launch(ex, &m, blocks, &args.args())?;
        download_vec::<u8>(ex, codes, xs.len())
    })();
    finish(ex, &[x, codes], result)
}

/// Dequantization on `ex`: `y[i] = decode(codes[i]) · scale_inv` (no
/// validation of `scale_inv`, as in the host model).
pub fn dequantize_on(
    ex: &mut dyn Executor,
    codes: &[u8],
    scale_inv: f32,
    f: Format,
    codec: Codec,
) -> Result<Vec<f32>> {
    let n = len_u64(codes.len());
    let c = upload_new(ex, codes)?;
    let y = match ex.alloc(codes.len().max(1) * 4) {
        Ok(y) => y,
        Err(e) => return finish(ex, &[c], Err(e)),
    };
    let result = (|| {
        let m = ptx::generate_dequantize(ex.sm(), f, codec)?;
        check_aligned(&m.kernel, c, 4)?;
        check_aligned(&m.kernel, y, 16)?;
        let args = DequantizeArgs {
            codes: c.into(),
            n,
            scale_inv,
            y: y.into(),
        };
        let blocks = ptx::grid_blocks(n, ex.multiprocessor_count());
        launch(ex, &m, blocks, &args.args())?;
        download_vec::<f32>(ex, y, codes.len())
    })();
    finish(ex, &[c, y], result)
}

/// Current scaling to E4M3 (see [`quantize_as`]).
pub fn quantize(backend: Backend, xs: &[f32]) -> Result<(Quantized, Ran)> {
    quantize_as(backend, xs, Format::E4M3)
}

/// Current scaling to `f`: `amax`, `scale`, `scale_inv` and the codes,
/// equal to [`host::quantize_as`] on every backend.
pub fn quantize_as(backend: Backend, xs: &[f32], f: Format) -> Result<(Quantized, Ran)> {
    dispatch(
        backend,
        || Ok(host::quantize_as(xs, f)),
        |ex| {
            let codec = Codec::for_sm(ex.sm());
            quantize_on(ex, xs, f, codec)
        },
    )
}

/// Delayed scaling to E4M3 (see [`quantize_with_scale_as`]).
pub fn quantize_with_scale(backend: Backend, xs: &[f32], scale: f32) -> Result<(Vec<u8>, Ran)> {
    quantize_with_scale_as(backend, xs, scale, Format::E4M3)
}

/// Delayed scaling to `f` with a caller-given scale.
///
/// # Errors
/// [`Error::InvalidArgument`] for a scale that is NaN, infinite, zero or
/// negative (checked before any backend is touched).
pub fn quantize_with_scale_as(
    backend: Backend,
    xs: &[f32],
    scale: f32,
    f: Format,
) -> Result<(Vec<u8>, Ran)> {
    validate_scale(scale)?;
    dispatch(
        backend,
        || host::quantize_with_scale_as(xs, scale, f),
        |ex| {
            let codec = Codec::for_sm(ex.sm());
            quantize_with_scale_on(ex, xs, scale, f, codec)
        },
    )
}

/// E4M3 dequantization (see [`dequantize_as`]).
pub fn dequantize(backend: Backend, codes: &[u8], scale_inv: f32) -> Result<(Vec<f32>, Ran)> {
    dequantize_as(backend, codes, scale_inv, Format::E4M3)
}

/// Dequantization from `f`: `y[i] = decode(codes[i]) · scale_inv`.
pub fn dequantize_as(
    backend: Backend,
    codes: &[u8],
    scale_inv: f32,
    f: Format,
) -> Result<(Vec<f32>, Ran)> {
    dispatch(
        backend,
        || Ok(host::dequantize_as(codes, scale_inv, f)),
        |ex| {
            let codec = Codec::for_sm(ex.sm());
            dequantize_on(ex, codes, scale_inv, f, codec)
        },
    )
}

/// `max |x|` with NaNs ignored (the two absmax passes on a device).
pub fn absmax(backend: Backend, xs: &[f32]) -> Result<(f32, Ran)> {
    dispatch(
        backend,
        || Ok(host::absmax(xs)),
        |ex| Ok(absmax_on(ex, xs, Format::E4M3)?.stats[0]),
    )
}
