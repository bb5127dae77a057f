//! Calling ptxsmith kernels on memory and streams of another CUDA stack.
//!
//! On a GPU: plain driver allocations (`cuMemAlloc` through
//! `oxicuda-memory`, standing in for cudarc or any other stack) in the
//! device's primary context, which is the context ptxsmith uses too, and
//! the legacy default stream. ptxsmith's raw entry points take the device
//! addresses and the stream handle; the caller vouches for them
//! (`unsafe`). Without a GPU the same calls run on the simulator, on
//! allocations made on the `Sim` directly that no ptxsmith buffer owns.
//!
//! ```text
//! cargo run --release --example interop
//! ```

use std::process::ExitCode;

use ptxsmith::kernels::{dot, fp8};
use ptxsmith::runtime::{Context, RawStream};
use ptxsmith::{Result, Sm};

fn data() -> (Vec<f32>, Vec<f32>, usize, usize) {
    let (rows, n) = (256, 300);
    let x = (0..rows * n)
        .map(|i| ((i * 37) % 101) as f32 * 0.01 - 0.5)
        .collect();
    let y = (0..n).map(|i| ((i * 13) % 17) as f32 * 0.1 - 0.8).collect();
    (x, y, rows, n)
}

/// On a GPU: memory from the driver, not from ptxsmith.
fn on_gpu(ctx: &Context) -> Result<bool> {
    use oxicuda_memory::DeviceBuffer;
    let (x, y, rows, n) = data();
    // Allocations of "another stack" land in the current context: make it
    // the primary context ptxsmith uses.
    ctx.make_current()?;
    let driver = |e| ptxsmith::Error::Driver {
        call: "oxicuda-memory",
        code: ptxsmith::DriverCode::UNKNOWN,
        message: format!("{e}"),
    };
    let dx = DeviceBuffer::from_host(&x).map_err(driver)?;
    let dy = DeviceBuffer::from_host(&y).map_err(driver)?;
    let dout = DeviceBuffer::<f32>::alloc(rows).map_err(driver)?;
    // SAFETY: three live, disjoint driver allocations of the primary
    // context holding rows·n, n and rows floats, alive until after the
    // synchronisation below; the legacy default stream is valid there.
    unsafe {
        dot::dot_rows_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, RawStream::NULL)?,
            dot::Shape { rows, n },
            dx.as_device_ptr(),
            dy.as_device_ptr(),
            dout.as_device_ptr(),
        )?;
    }
    ctx.synchronize()?;
    ctx.make_current()?;
    let mut got = vec![0f32; rows];
    dout.copy_to_host(&mut got).map_err(driver)?;
    Ok(same(&got, &dot::host::dot_rows(&x, &y, rows, n)))
}

/// On the simulator: memory allocated on the `Sim` itself.
fn on_sim(ctx: &Context) -> Result<bool> {
    let (x, y, rows, n) = data();
    let put = |v: &[f32]| {
        ctx.with_sim(|sim| -> Result<u64> {
            let a = sim.alloc(v.len() * 4)?;
            sim.write(a, bytemuck::cast_slice(v))?;
            Ok(a)
        })
        .expect("a simulator context")
    };
    let (px, py) = (put(&x)?, put(&y)?);
    let po = ctx.with_sim(|sim| sim.alloc(rows * 4)).expect("sim")?;
    let stream = ctx.default_stream().raw();
    // SAFETY: simulated allocations of the right sizes, disjoint, alive;
    // the stream is the context's own. (The simulator bounds-checks every
    // access anyway.)
    unsafe {
        dot::dot_rows_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, stream)?,
            dot::Shape { rows, n },
            px,
            py,
            po,
        )?
    };
    // fp8 quantize → dequantize, chained on foreign memory too.
    let xs: Vec<f32> = x.iter().map(|v| v * 300.0).collect();
    let qx = put(&xs)?;
    let alloc = |b| ctx.with_sim(|sim| sim.alloc(b)).expect("sim");
    let (codes, stats, yq) = (alloc(xs.len())?, alloc(12)?, alloc(4 * xs.len())?);
    let (f, codec) = (fp8::Format::E4M3, fp8::ptx::Codec::Software);
    // SAFETY: as above.
    unsafe {
        fp8::launch::quantize_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, stream).unwrap(),
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            xs.len(),
            qx,
            codes,
            stats,
        )?;
        fp8::launch::dequantize_stats_raw(
            &ptxsmith::runtime::Stream::from_raw(ctx, stream).unwrap(),
            ptxsmith::kernels::fp8::Encoding { format: f, codec },
            xs.len(),
            codes,
            stats,
            yq,
        )?;
    }
    let read = |a: u64, n: usize| {
        let mut v = vec![0f32; n];
        ctx.with_sim(|sim| sim.read(a, bytemuck::cast_slice_mut(&mut v)))
            .expect("sim")
            .map(|()| v)
    };
    let q = fp8::host::quantize(&xs);
    Ok(
        same(&read(po, rows)?, &dot::host::dot_rows(&x, &y, rows, n))
            && same(
                &read(yq, xs.len())?,
                &fp8::host::dequantize(&q.codes, q.scale_inv),
            ),
    )
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Print ptxsmith's tracing events on stderr, filtered by `RUST_LOG`
/// (e.g. `RUST_LOG=ptxsmith=debug`: JIT compiles, cache hits and misses,
/// launches); nothing without it.
fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> ExitCode {
    init_tracing();
    let result = match Context::cuda(0) {
        Ok(ctx) => {
            println!("GPU: raw entry points on plain driver allocations");
            on_gpu(&ctx)
        }
        Err(e) if ptxsmith::runtime::device_tests_support::gpu_required() => {
            eprintln!("PTXSMITH_REQUIRE_GPU is set but there is no usable CUDA device: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            println!("no GPU ({e}); raw entry points on simulator allocations");
            on_sim(&Context::sim(Sm::Sm80))
        }
    };
    match result {
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
