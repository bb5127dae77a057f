//! A program that does not use ptxsmith's runtime: ptxsmith's PTX (the row
//! dot product for sm_90) loaded and launched with oxicuda-driver,
//! oxicuda-launch and oxicuda-memory calls alone, on the emulator loaded as
//! `libcuda.so.1` (the test re-runs itself with `LD_LIBRARY_PATH` set: see
//! `common::in_emulator_process`), bit for bit against ptxsmith's host
//! model.

use std::sync::Arc;

use oxicuda_driver::context::Context;
use oxicuda_driver::device::Device;
use oxicuda_driver::module::{JitOptions, Module};
use oxicuda_driver::stream::Stream;
use oxicuda_launch::{Kernel, LaunchParams};
use oxicuda_memory::DeviceBuffer;
use ptxsmith::Sm;
use ptxsmith::kernels::dot;

mod common;

#[test]
fn oxicuda_alone_launches_ptxsmith_ptx_on_the_emulator() {
    if !common::in_emulator_process("oxicuda_alone_launches_ptxsmith_ptx_on_the_emulator") {
        return;
    }
    let dev = Device::get(0).unwrap();
    assert!(
        dev.name()
            .unwrap()
            .starts_with(ptxsmith::runtime::EMULATOR_NAME_PREFIX)
    );
    let ctx = Arc::new(Context::new(&dev).unwrap());
    ctx.set_current().unwrap();
    let m = dot::ptx::generate(Sm::Sm90).unwrap();
    let (module, log) = Module::from_ptx_with_options(&m.ptx, &JitOptions::default()).unwrap();
    println!("JIT info log: {}", log.info);
    let kernel = Kernel::from_module(Arc::new(module), &m.kernel).unwrap();
    let (rows, n) = (37usize, 129usize);
    let x: Vec<f32> = (0..rows * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let y: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
    let (dx, dy) = (
        DeviceBuffer::from_host(&x).unwrap(),
        DeviceBuffer::from_host(&y).unwrap(),
    );
    let out = DeviceBuffer::<f32>::alloc(rows).unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let args = (
        dx.as_device_ptr(),
        dy.as_device_ptr(),
        out.as_device_ptr(),
        rows as u32,
        n as u32,
    );
    kernel
        .launch(&LaunchParams::new(2u32, dot::ptx::BLOCK), &stream, &args)
        .unwrap();
    stream.synchronize().unwrap();
    let mut got = vec![0f32; rows];
    out.copy_to_host(&mut got).unwrap();
    let want = dot::host::dot_rows(&x, &y, rows, n);
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}
