//! A cudarc program using ptxsmith's kernels on its own memory and
//! stream, without copies: a cudarc allocation goes through two ptxsmith
//! kernels (FP8 quantize, then dequantize with the scale read on the
//! device) and comes back to cudarc, compared bit for bit with the host
//! model.
//!
//! ```text
//! cargo run --release --features cudarc --example cudarc_interop
//! bash cuda-emu/with-emu.sh cargo run --release --features cudarc --example cudarc_interop
//! ```
//! Without a CUDA driver it prints why and exits successfully (cudarc
//! loads the driver at run time and is not touched then).

use std::process::ExitCode;

use cudarc::driver::CudaContext;
use ptxsmith::kernels::fp8::{self, Encoding, Format};
use ptxsmith::runtime::{Context, Stream, cuda_unavailable_reason};
use ptxsmith::testing;

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    // cudarc's side: a context, a stream, an upload.
    let cu = CudaContext::new(0)?;
    let cs = cu.new_stream()?;
    let xs: Vec<f32> = (0..1 << 16)
        .map(|i| ((i * 37) % 1001) as f32 * 0.3 - 150.0)
        .collect();
    let x = cs.clone_htod(&xs)?;
    let mut codes = cs.alloc_zeros::<u8>(xs.len())?;
    let mut stats = cs.alloc_zeros::<f32>(3)?;
    let mut y = cs.alloc_zeros::<f32>(xs.len())?;

    // ptxsmith's side, on cudarc's context and stream.
    let ctx = Context::from_cudarc(&cu)?;
    let st = Stream::from_cudarc(&ctx, &cs)?;
    let enc = Encoding::for_sm(Format::E4M3, ctx.sm());
    {
        let vx = st.cudarc_view(&x)?;
        let (mut vc, mut vs) = (
            st.cudarc_view_mut(&mut codes)?,
            st.cudarc_view_mut(&mut stats)?,
        );
        fp8::quantize_dev(&st, enc, &vx, &mut vc, &mut vs)?;
    }
    {
        let (vc, vs) = (st.cudarc_view(&codes)?, st.cudarc_view(&stats)?);
        let mut vy = st.cudarc_view_mut(&mut y)?;
        fp8::dequantize_stats_dev(&st, enc, &vc, &vs, &mut vy)?;
    }

    // Back to cudarc.
    let got = cs.clone_dtoh(&y)?;
    let got_codes = cs.clone_dtoh(&codes)?;
    let q = fp8::host::quantize(&xs);
    let want = fp8::host::dequantize(&q.codes, q.scale_inv);
    let same = got_codes == q.codes
        && got.len() == want.len()
        && got
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits());
    println!(
        "cudarc: {} floats through fp8 quantize and dequantize on {} ({}), {} launches, {} bytes through ptxsmith's host copies",
        xs.len(),
        ctx.info().map_or("?", |i| i.name.as_str()),
        ctx.sm(),
        st.traffic().launches,
        st.traffic().bytes_uploaded + st.traffic().bytes_downloaded
    );
    Ok(same)
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    if let Some(reason) = cuda_unavailable_reason() {
        if testing::gpu_required() {
            eprintln!("PTXSMITH_REQUIRE_GPU is set but there is no usable CUDA device: {reason}");
            return ExitCode::FAILURE;
        }
        println!(
            "SKIP: no CUDA device ({reason}); cudarc needs a driver (or cuda-emu/with-emu.sh)"
        );
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(true) => {
            println!("bit-identical to the host model");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("MISMATCH");
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
