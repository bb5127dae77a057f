//! Calling ptxsmith kernels on memory and streams of another CUDA stack,
//! through the safe foreign views.
//!
//! On a GPU: plain driver allocations (`cuMemAlloc` through
//! `oxicuda-memory`, standing in for PyTorch, CuPy or any other stack) in
//! the device's primary context, which is the context ptxsmith uses too,
//! and the legacy default stream. `ForeignSlice::from_raw_parts` and
//! `Stream::from_raw` wrap them (`unsafe`: the caller vouches for the
//! memory; ptxsmith still checks with the driver that each range lies in
//! one allocation of the context, and every length against the request),
//! and the views go to the ordinary `*_dev` entry points. Without a GPU the
//! same calls run on the simulator, on allocations made on the `Sim`
//! directly that no ptxsmith buffer owns. For cudarc, see the
//! `cudarc_interop` example (feature `cudarc`), which needs no `unsafe`.
//!
//! ```text
//! cargo run --release --example interop
//! ```

use std::process::ExitCode;

use ptxsmith::kernels::{dot, fp8};
use ptxsmith::runtime::{Context, ForeignSlice, ForeignSliceMut, RawStream, Stream};
use ptxsmith::{Result, Sm};

fn data() -> (Vec<f32>, Vec<f32>, dot::Shape) {
    let shape = dot::Shape { rows: 256, n: 300 };
    let x = (0..shape.rows * shape.n)
        .map(|i| ((i * 37) % 101) as f32 * 0.01 - 0.5)
        .collect();
    let y = (0..shape.n)
        .map(|i| ((i * 13) % 17) as f32 * 0.1 - 0.8)
        .collect();
    (x, y, shape)
}

/// The row dot product and an fp8 quantize → dequantize chain on foreign
/// memory at the given addresses, on `stream`.
///
/// # Safety
/// `px`, `py`, `po` hold `rows·n`, `n`, `rows` f32s, `qx` and `qy` `n_q`
/// f32s, `qc` `n_q` bytes and `qs` 3 f32s of `stream`'s context, live and
/// disjoint until the work has run.
unsafe fn run(
    stream: &Stream,
    shape: dot::Shape,
    (px, py, po): (u64, u64, u64),
    n_q: usize,
    (qx, qc, qs, qy): (u64, u64, u64, u64),
) -> Result<()> {
    let ctx = stream.context();
    // SAFETY: the caller's contract.
    unsafe {
        let x = ForeignSlice::<f32>::from_raw_parts(ctx, px, shape.rows * shape.n)?;
        let y = ForeignSlice::<f32>::from_raw_parts(ctx, py, shape.n)?;
        let mut out = ForeignSliceMut::<f32>::from_raw_parts(ctx, po, shape.rows)?;
        dot::dot_rows_dev(stream, shape, &x, &y, &mut out)?;
        let xs = ForeignSlice::<f32>::from_raw_parts(ctx, qx, n_q)?;
        let mut codes = ForeignSliceMut::<u8>::from_raw_parts(ctx, qc, n_q)?;
        let mut stats = ForeignSliceMut::<f32>::from_raw_parts(ctx, qs, 3)?;
        let mut ys = ForeignSliceMut::<f32>::from_raw_parts(ctx, qy, n_q)?;
        let enc = fp8::Encoding::for_sm(fp8::Format::E4M3, ctx.sm());
        fp8::quantize_dev(stream, enc, &xs, &mut codes, &mut stats)?;
        fp8::dequantize_stats_dev(stream, enc, &codes, &stats, &mut ys)?;
    }
    Ok(())
}

fn check(x: &[f32], y: &[f32], shape: dot::Shape, got: &[f32], xs: &[f32], ys: &[f32]) -> bool {
    let q = fp8::host::quantize(xs);
    same(got, &dot::host::dot_rows(x, y, shape.rows, shape.n))
        && same(ys, &fp8::host::dequantize(&q.codes, q.scale_inv))
}

/// On a GPU: memory from the driver, not from ptxsmith.
fn on_gpu(ctx: &Context) -> Result<bool> {
    use oxicuda_memory::DeviceBuffer;
    let (x, y, shape) = data();
    let xs: Vec<f32> = x.iter().map(|v| v * 300.0).collect();
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
    let dout = DeviceBuffer::<f32>::alloc(shape.rows).map_err(driver)?;
    let qx = DeviceBuffer::from_host(&xs).map_err(driver)?;
    let qc = DeviceBuffer::<u8>::alloc(xs.len()).map_err(driver)?;
    let qs = DeviceBuffer::<f32>::alloc(3).map_err(driver)?;
    let qy = DeviceBuffer::<f32>::alloc(xs.len()).map_err(driver)?;
    // SAFETY: the legacy default stream is a stream of every context.
    let legacy = unsafe { Stream::from_raw(ctx, RawStream::NULL)? };
    // SAFETY: live, disjoint driver allocations of the primary context of
    // the sizes `run` needs, alive until after the synchronisation below.
    unsafe {
        run(
            &legacy,
            shape,
            (dx.as_device_ptr(), dy.as_device_ptr(), dout.as_device_ptr()),
            xs.len(),
            (
                qx.as_device_ptr(),
                qc.as_device_ptr(),
                qs.as_device_ptr(),
                qy.as_device_ptr(),
            ),
        )?;
    }
    legacy.synchronize()?;
    ctx.make_current()?;
    let mut got = vec![0f32; shape.rows];
    dout.copy_to_host(&mut got).map_err(driver)?;
    let mut ys = vec![0f32; xs.len()];
    qy.copy_to_host(&mut ys).map_err(driver)?;
    Ok(check(&x, &y, shape, &got, &xs, &ys))
}

/// On the simulator: memory allocated on the `Sim` itself.
fn on_sim(ctx: &Context) -> Result<bool> {
    let (x, y, shape) = data();
    let xs: Vec<f32> = x.iter().map(|v| v * 300.0).collect();
    let put = |v: &[f32]| {
        ctx.with_sim(|sim| -> Result<u64> {
            let a = sim.alloc(v.len() * 4)?;
            sim.write(a, bytemuck::cast_slice(v))?;
            Ok(a)
        })
        .expect("a simulator context")
    };
    let alloc = |b| ctx.with_sim(|sim| sim.alloc(b)).expect("sim");
    let (px, py, po) = (put(&x)?, put(&y)?, alloc(shape.rows * 4)?);
    let (qx, qc, qs, qy) = (
        put(&xs)?,
        alloc(xs.len())?,
        alloc(12)?,
        alloc(4 * xs.len())?,
    );
    let stream = ctx.default_stream();
    // SAFETY: simulated allocations of the right sizes, disjoint, alive.
    // (The simulator bounds-checks every access anyway.)
    unsafe { run(&stream, shape, (px, py, po), xs.len(), (qx, qc, qs, qy))? };
    let read = |a: u64, n: usize| {
        let mut v = vec![0f32; n];
        ctx.with_sim(|sim| sim.read(a, bytemuck::cast_slice_mut(&mut v)))
            .expect("sim")
            .map(|()| v)
    };
    Ok(check(
        &x,
        &y,
        shape,
        &read(po, shape.rows)?,
        &xs,
        &read(qy, xs.len())?,
    ))
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let result = match Context::cuda(0) {
        Ok(ctx) => {
            println!("GPU: foreign views of plain driver allocations on the legacy stream");
            on_gpu(&ctx)
        }
        Err(e) if ptxsmith::testing::gpu_required() => {
            eprintln!("PTXSMITH_REQUIRE_GPU is set but there is no usable CUDA device: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            println!("no GPU ({e}); foreign views of simulator allocations");
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
