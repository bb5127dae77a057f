//! cudarc (driver API, dynamically loaded, no NVRTC) on the emulator:
//! cudarc's context, stream and memory, and ptxsmith's PTX (the row dot
//! product for sm_90) loaded and launched through cudarc's driver calls
//! (`result::module::load_data`, `result::launch_kernel`: loading PTX text
//! through cudarc's safe `load_module` needs its NVRTC feature), bit for bit
//! against ptxsmith's host model. The test re-runs itself with the emulator
//! as `libcuda.so` / `libcuda.so.1` (see `common::in_emulator_process`).

use std::ffi::{CString, c_void};

use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut, result};
use ptxsmith::Sm;
use ptxsmith::kernels::dot;

mod common;

#[test]
fn cudarc_launches_ptxsmith_ptx_on_the_emulator() {
    if !common::in_emulator_process("cudarc_launches_ptxsmith_ptx_on_the_emulator") {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    assert!(
        ctx.name()
            .unwrap()
            .starts_with(ptxsmith::runtime::EMULATOR_NAME_PREFIX)
    );
    let stream = ctx.new_stream().unwrap();
    let (rows, n) = (29usize, 200usize);
    let x: Vec<f32> = (0..rows * n)
        .map(|i| ((i * 31) % 97) as f32 * 0.01 - 0.4)
        .collect();
    let y: Vec<f32> = (0..n).map(|i| (i as f32 * 0.3).cos()).collect();
    let dx = stream.clone_htod(&x).unwrap();
    let dy = stream.clone_htod(&y).unwrap();
    let mut out = stream.alloc_zeros::<f32>(rows).unwrap();

    let m = dot::ptx::generate(Sm::Sm90).unwrap();
    let text = CString::new(m.ptx).unwrap();
    // SAFETY: a NUL-terminated PTX text, loaded in cudarc's context (bound
    // to this thread by `new_stream`).
    let module = unsafe { result::module::load_data(text.as_ptr().cast()) }.unwrap();
    // SAFETY: a live module and an entry name.
    let f =
        unsafe { result::module::get_function(module, CString::new(m.kernel).unwrap()) }.unwrap();
    {
        let (px, _rx) = dx.device_ptr(&stream);
        let (py, _ry) = dy.device_ptr(&stream);
        let (po, _ro) = out.device_ptr_mut(&stream);
        let (mut a, mut b, mut c) = (px, py, po);
        let (mut r, mut k) = (rows as u32, n as u32);
        let mut params: [*mut c_void; 5] = [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut r).cast(),
            (&raw mut k).cast(),
        ];
        // SAFETY: the entry's five parameters (three device pointers of
        // rows·n, n and rows floats, two u32s), each pointer valid for the
        // call; the stream is cudarc's, of the same context.
        unsafe {
            result::launch_kernel(
                f,
                (2, 1, 1),
                (dot::ptx::BLOCK, 1, 1),
                0,
                stream.cu_stream(),
                &mut params,
            )
        }
        .unwrap();
    }
    let got = stream.clone_dtoh(&out).unwrap();
    stream.synchronize().unwrap();
    let want = dot::host::dot_rows(&x, &y, rows, n);
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // SAFETY: the module is no longer used.
    unsafe { result::module::unload(module) }.unwrap();
}

/// ptxsmith's cudarc interop on two emulated devices: a cudarc slice or
/// stream of device 1 is refused on device 0's context (`WrongContext`),
/// and device 1's own context runs a kernel on it.
#[test]
fn cudarc_memory_of_another_device_is_refused() {
    use ptxsmith::runtime::{Context as PtxContext, Stream as PtxStream};
    if !common::in_emulator_process_with(
        "cudarc_memory_of_another_device_is_refused",
        &[("PTXSMITH_EMU_DEVICES", "sm_90,sm_80")],
    ) {
        return;
    }
    let (cu0, cu1) = (CudaContext::new(0).unwrap(), CudaContext::new(1).unwrap());
    let (s0, s1) = (cu0.new_stream().unwrap(), cu1.new_stream().unwrap());
    let on1 = s1.clone_htod(&[1.0f32, 2.0]).unwrap();
    let ctx0 = PtxContext::from_cudarc(&cu0).unwrap();
    let st0 = PtxStream::from_cudarc(&ctx0, &s0).unwrap();
    let e = st0.cudarc_view(&on1).unwrap_err();
    assert!(matches!(e, ptxsmith::Error::WrongContext { .. }), "{e}");
    let e = PtxStream::from_cudarc(&ctx0, &s1).unwrap_err();
    assert!(matches!(e, ptxsmith::Error::WrongContext { .. }), "{e}");
    // Device 1's context and stream run the kernel on it.
    let ctx1 = PtxContext::from_cudarc(&cu1).unwrap();
    assert_eq!(ctx1.sm(), Sm::Sm80);
    let st1 = PtxStream::from_cudarc(&ctx1, &s1).unwrap();
    let y = s1.clone_htod(&[3.0f32, 4.0]).unwrap();
    let mut out = s1.alloc_zeros::<f32>(1).unwrap();
    {
        let (vx, vy) = (st1.cudarc_view(&on1).unwrap(), st1.cudarc_view(&y).unwrap());
        let mut vo = st1.cudarc_view_mut(&mut out).unwrap();
        dot::dot_rows_dev(&st1, dot::Shape { rows: 1, n: 2 }, &vx, &vy, &mut vo).unwrap();
    }
    assert_eq!(s1.clone_dtoh(&out).unwrap(), [11.0]);
}

/// cudarc makes non-primary contexts with `cuCtxCreate_v4` (and panics
/// "Missing symbol" when the driver lacks it).
#[test]
fn cudarc_creates_a_context_with_cu_ctx_create_v4() {
    if !common::in_emulator_process("cudarc_creates_a_context_with_cu_ctx_create_v4") {
        return;
    }
    result::init().unwrap();
    let dev = result::device::get(0).unwrap();
    // SAFETY: a device from `device::get`, null parameters.
    let ctx = unsafe { result::ctx::create_v4(std::ptr::null_mut(), 0, dev) }.unwrap();
    assert!((ctx as usize as i64) > 0, "a handle positive as int64");
    // SAFETY: the context made above, current on this thread.
    unsafe {
        result::ctx::set_current(ctx).unwrap();
        let p = result::malloc_sync(64).unwrap();
        result::memset_d8_sync(p, 7, 64).unwrap();
        let mut back = [0u8; 64];
        result::memcpy_dtoh_sync(&mut back, p).unwrap();
        assert_eq!(back, [7; 64]);
        result::free_sync(p).unwrap();
        // cudarc has no wrapper for cuCtxDestroy: its raw binding.
        cudarc::driver::sys::cuCtxDestroy_v2(ctx).result().unwrap();
    }
}

/// cudarc's stream capture and graphs (`CudaStream::begin_capture`,
/// `end_capture`, `CudaGraph::launch`), as cudarc's own
/// `test_end_capture_flags` uses them: a captured fill replays at each
/// launch, over what the host wrote in between.
#[test]
fn cudarc_captures_and_replays_a_graph() {
    use cudarc::driver::sys;
    if !common::in_emulator_process("cudarc_captures_and_replays_a_graph") {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    // SAFETY: every access below uses one stream.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    let mut data = stream.clone_htod(&[1u32; 4]).unwrap();
    stream.synchronize().unwrap();
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    assert_eq!(
        stream.capture_status().unwrap(),
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE
    );
    stream.memset_zeros(&mut data).unwrap();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .unwrap();
    assert_eq!(
        stream.clone_dtoh(&data).unwrap(),
        [1; 4],
        "capture ran nothing"
    );
    graph.launch().unwrap();
    assert_eq!(stream.clone_dtoh(&data).unwrap(), [0; 4]);
    stream.memcpy_htod(&[2u32; 4], &mut data).unwrap();
    graph.launch().unwrap();
    assert_eq!(stream.clone_dtoh(&data).unwrap(), [0; 4]);
}
