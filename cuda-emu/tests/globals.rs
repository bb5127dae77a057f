//! Module-scope `.global` variables through the C ABI
//! (`cuModuleGetGlobal_v2`, `cuLibraryGetGlobal`: address and size, a host
//! copy into a `__device__` variable seen by the next launch, a kernel's
//! write seen by the host, `CUDA_ERROR_NOT_FOUND` for other names), and
//! `cuLaunchKernel` with `.u8`/`.u16`/struct parameters (`kernelParams`
//! read at each parameter's declared size, and the `extra` buffer).

use std::ffi::{CStr, c_void};
use std::ptr::null_mut;

use ptxsmith_cuda_emu::exports as cu;

mod common;
use common::*;

const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// `scale` (a `__device__` variable the host sets), a 3-word initialised
/// table, a `.common` counter, a `__constant__` word `k_const` = 5, and
/// three kernels: `apply` writes `table[i] * scale` to `out[i]` for i < 3
/// and bumps `hits`; `peek` copies `hits` to `out[0]`; `konst` copies
/// `k_const` to `out[0]`.
fn module_ptx() -> String {
    format!(
        "{HEAD}.visible .global .align 4 .u32 scale = 1;\n\
         .global .align 8 .u32 table[3] = {{10, 20, 30}};\n\
         .common .global .align 8 .u64 hits;\n\
         .const .align 4 .u32 k_const = 5;\n\
         .visible .entry apply(.param .u64 out)\n{{\n.reg .b64 %rd<8>;\n.reg .b32 %r<8>;\n\
         ld.param.u64 %rd1, [out];\nld.global.u32 %r1, [scale];\n\
         ld.global.v2.u32 {{%r2, %r3}}, [table];\nld.global.u32 %r4, [table+8];\n\
         mul.lo.u32 %r2, %r2, %r1;\nmul.lo.u32 %r3, %r3, %r1;\nmul.lo.u32 %r4, %r4, %r1;\n\
         st.global.u32 [%rd1], %r2;\nst.global.u32 [%rd1+4], %r3;\nst.global.u32 [%rd1+8], %r4;\n\
         ld.global.u64 %rd2, [hits];\nadd.u64 %rd2, %rd2, 1;\nst.global.u64 [hits], %rd2;\nret;\n}}\n\
         .visible .entry peek(.param .u64 out)\n{{\n.reg .b64 %rd<4>;\n\
         ld.param.u64 %rd1, [out];\nmov.u64 %rd2, hits;\ncvta.global.u64 %rd3, %rd2;\n\
         ld.u64 %rd2, [%rd3];\nst.global.u64 [%rd1], %rd2;\nret;\n}}\n\
         .visible .entry konst(.param .u64 out)\n{{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n\
         ld.param.u64 %rd1, [out];\nld.const.u32 %r1, [k_const];\n\
         st.global.u32 [%rd1], %r1;\nret;\n}}\n"
    )
}

fn get_global(m: CUmodule, name: &CStr) -> Result<(CUdeviceptr, usize), CUresult> {
    let (mut p, mut n) = (0u64, 0usize);
    // SAFETY: valid out-pointers, NUL-terminated name.
    let rc = unsafe { cu::cuModuleGetGlobal_v2(&mut p, &mut n, m, name.as_ptr()) };
    if rc == CUDA_SUCCESS {
        Ok((p, n))
    } else {
        Err(rc)
    }
}

#[test]
fn module_get_global_then_htod_is_seen_by_the_kernel() {
    let _c = TestCtx::new();
    let m = load(&module_ptx());
    let (scale, n) = get_global(m, c"scale").unwrap();
    assert_eq!(n, 4);
    let (table, n) = get_global(m, c"table").unwrap();
    assert_eq!(n, 12);
    assert_eq!(read_u32(table, 3), [10, 20, 30]);
    let (hits, n) = get_global(m, c"hits").unwrap();
    assert_eq!(n, 8);
    // the device address is one the driver's copies accept
    ok(htod(scale, &[7u32]));
    let out = alloc(16);
    let apply = function(m, "apply").unwrap();
    ok(launch(
        apply,
        1,
        1,
        0,
        CUstream::default(),
        &[Arg::U64(out)],
    ));
    assert_eq!(read_u32(out, 3), [70, 140, 210]);
    ok(launch(
        apply,
        1,
        1,
        0,
        CUstream::default(),
        &[Arg::U64(out)],
    ));
    // the kernel's writes persist: the host reads them, and so does the
    // other kernel of the module
    let mut h = [0u64];
    ok(dtoh(&mut h, hits));
    assert_eq!(h, [2]);
    let peek = function(m, "peek").unwrap();
    ok(launch(peek, 1, 1, 0, CUstream::default(), &[Arg::U64(out)]));
    let mut h = [0u64];
    ok(dtoh(&mut h, out));
    assert_eq!(h, [2]);
    // either out-pointer may be null
    let mut p = 0u64;
    // SAFETY: valid out-pointer, null size.
    ok(unsafe { cu::cuModuleGetGlobal_v2(&mut p, null_mut(), m, c"scale".as_ptr()) });
    assert_eq!(p, scale);
    // a copy past the variable's module image is refused before it runs
    is(htod(table, &[0u32; 64]), CUDA_ERROR_INVALID_VALUE);
}

/// A `__constant__` variable (`.const`): `cuModuleGetGlobal` gives its
/// device copy, the host reads its initialiser there, and a host write is
/// what the next launch's `ld.const` reads (as with the driver, where
/// `cudaMemcpyToSymbol` on a `__constant__` does exactly this).
#[test]
fn const_variable_written_by_the_host_is_seen_by_the_next_launch() {
    let _c = TestCtx::new();
    let m = load(&module_ptx());
    let (k, n) = get_global(m, c"k_const").unwrap();
    assert_eq!(n, 4);
    assert_eq!(read_u32(k, 1), [5]);
    let konst = function(m, "konst").unwrap();
    let mut bank = 0i32;
    // SAFETY: valid out-pointer, a function handle.
    ok(unsafe { cu::cuFuncGetAttribute(&mut bank, 2, konst) }); // CONST_SIZE_BYTES
    assert_eq!(bank, 4);
    let out = alloc(4);
    ok(launch(
        konst,
        1,
        1,
        0,
        CUstream::default(),
        &[Arg::U64(out)],
    ));
    assert_eq!(read_u32(out, 1), [5]);
    ok(htod(k, &[41u32]));
    ok(launch(
        konst,
        1,
        1,
        0,
        CUstream::default(),
        &[Arg::U64(out)],
    ));
    assert_eq!(read_u32(out, 1), [41]);
    // the copy is the module's own: a second load starts from 5 again
    let m2 = load(&module_ptx());
    let (k2, _) = get_global(m2, c"k_const").unwrap();
    assert_ne!(k2, k);
    assert_eq!(read_u32(k2, 1), [5]);
    // a copy past the bank is refused like any other
    is(htod(k, &[0u32; 2]), CUDA_ERROR_INVALID_VALUE);
}

#[test]
fn unknown_names_are_not_found_and_the_variables_cannot_be_freed() {
    let _c = TestCtx::new();
    let m = load(&module_ptx());
    is(get_global(m, c"nope").unwrap_err(), CUDA_ERROR_NOT_FOUND);
    // an entry is not a variable
    is(get_global(m, c"apply").unwrap_err(), CUDA_ERROR_NOT_FOUND);
    // SAFETY: null name.
    is(
        unsafe { cu::cuModuleGetGlobal_v2(null_mut(), null_mut(), m, std::ptr::null()) },
        CUDA_ERROR_INVALID_VALUE,
    );
    // a module without variables has none
    let plain = load(EMU_PTX);
    is(
        get_global(plain, c"scale").unwrap_err(),
        CUDA_ERROR_NOT_FOUND,
    );
    // the variables belong to the module: cuMemFree refuses them, and
    // unloading the module releases them
    let (scale, _) = get_global(m, c"scale").unwrap();
    // SAFETY: a device address.
    is(unsafe { cu::cuMemFree_v2(scale) }, CUDA_ERROR_INVALID_VALUE);
    ok(htod(scale, &[3u32]));
    // SAFETY: a module handle.
    ok(unsafe { cu::cuModuleUnload(m) });
    is(htod(scale, &[3u32]), CUDA_ERROR_INVALID_VALUE);
}

#[test]
fn each_module_load_has_its_own_variables() {
    let _c = TestCtx::new();
    let a = load(&module_ptx());
    let b = load(&module_ptx());
    let (sa, _) = get_global(a, c"scale").unwrap();
    let (sb, _) = get_global(b, c"scale").unwrap();
    assert_ne!(sa, sb);
    ok(htod(sa, &[2u32]));
    assert_eq!(read_u32(sb, 1), [1]);
}

#[test]
fn library_get_global_gives_the_variable_in_the_current_context() {
    let _c = TestCtx::new();
    let text = std::ffi::CString::new(module_ptx()).unwrap();
    let mut lib = null_mut();
    // SAFETY: a NUL-terminated image; no options.
    ok(unsafe {
        cu::cuLibraryLoadData(
            &mut lib,
            text.as_ptr().cast(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0,
        )
    });
    let (mut p, mut n) = (0u64, 0usize);
    // SAFETY: valid out-pointers.
    ok(unsafe { cu::cuLibraryGetGlobal(&mut p, &mut n, lib, c"table".as_ptr()) });
    assert_eq!(n, 12);
    assert_eq!(read_u32(p, 3), [10, 20, 30]);
    // SAFETY: as above.
    is(
        unsafe { cu::cuLibraryGetGlobal(&mut p, &mut n, lib, c"nope".as_ptr()) },
        CUDA_ERROR_NOT_FOUND,
    );
    // SAFETY: a handle value.
    ok(unsafe { cu::cuLibraryUnload(lib) });
}

/// `.u8`, `.s8`, `.u16`, a 12-byte struct (`.align 8 .b8 s[12]`, read with
/// `.v2.u32`, so misaligned unless the layout honours `.align 8`) and a
/// `.u64` after it; writes what it read as 8 u32 words.
const SMALL_PARAMS: &str = ".visible .entry small(.param .u64 out, .param .u8 a, .param .s8 b, \
     .param .u16 c, .param .align 8 .b8 s[12], .param .u64 d)\n{\n.reg .b64 %rd<4>;\n.reg .b32 %r<12>;\n\
     ld.param.u64 %rd1, [out];\nld.param.u8 %r1, [a];\nld.param.s8 %r2, [b];\nld.param.u16 %r3, [c];\n\
     ld.param.v2.u32 {%r4, %r5}, [s];\nld.param.u16 %r6, [s+8];\nld.param.u64 %rd2, [d];\n\
     cvt.u32.u64 %r7, %rd2;\nshr.u64 %rd2, %rd2, 32;\ncvt.u32.u64 %r8, %rd2;\n\
     st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};\nst.global.v4.u32 [%rd1+16], {%r5, %r6, %r7, %r8};\n\
     ret;\n}\n";

#[test]
fn u8_u16_and_struct_parameters_through_cu_launch_kernel() {
    let _c = TestCtx::new();
    let m = load(&format!("{HEAD}{SMALL_PARAMS}"));
    let f = function(m, "small").unwrap();
    // the layout, as cuFuncGetParamInfo reports it
    let mut layout = Vec::new();
    for i in 0..6 {
        let (mut o, mut n) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        ok(unsafe { cu::cuFuncGetParamInfo(f, i, &mut o, &mut n) });
        layout.push((o, n));
    }
    assert_eq!(layout, [(0, 8), (8, 1), (9, 1), (10, 2), (16, 12), (32, 8)]);
    // SAFETY: null out-pointers are allowed.
    is(
        unsafe { cu::cuFuncGetParamInfo(f, 6, null_mut(), null_mut()) },
        CUDA_ERROR_INVALID_VALUE,
    );
    let out = alloc(32);
    let want = [
        250,
        (-7i32) as u32,
        60000,
        0x1111_1111,
        0x2222_2222,
        0x3333,
        0x4444_4444,
        0x5555_5555,
    ];
    // kernelParams: one pointer per parameter, each to exactly its size
    // (nothing readable beyond: the driver reads the declared size)
    let mut p_out = out;
    let mut a = 250u8;
    let mut b = -7i8;
    let mut c = 60000u16;
    let mut s = [0u8; 12];
    s[..4].copy_from_slice(&0x1111_1111u32.to_le_bytes());
    s[4..8].copy_from_slice(&0x2222_2222u32.to_le_bytes());
    s[8..10].copy_from_slice(&0x3333u16.to_le_bytes());
    let mut d = 0x5555_5555_4444_4444u64;
    let mut params: [*mut c_void; 6] = [
        (&raw mut p_out).cast(),
        (&raw mut a).cast(),
        (&raw mut b).cast(),
        (&raw mut c).cast(),
        s.as_mut_ptr().cast(),
        (&raw mut d).cast(),
    ];
    // SAFETY: one pointer per parameter, each readable for its size.
    ok(unsafe {
        cu::cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            CUstream::default(),
            params.as_mut_ptr(),
            null_mut(),
        )
    });
    assert_eq!(read_u32(out, 8), want);
    // `extra`: the laid-out buffer (out 0..8, a 8, b 9, c 10..12, s 16..28,
    // d 32..40)
    ok(htod(out, &[0u32; 8]));
    let mut buf = [0u8; 40];
    buf[..8].copy_from_slice(&out.to_le_bytes());
    buf[8] = 250;
    buf[9] = (-7i8) as u8;
    buf[10..12].copy_from_slice(&60000u16.to_le_bytes());
    buf[16..28].copy_from_slice(&s);
    buf[32..40].copy_from_slice(&d.to_le_bytes());
    let mut size = buf.len();
    let mut extra: [*mut c_void; 5] = [
        std::ptr::without_provenance_mut(1),
        buf.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(2),
        (&raw mut size).cast(),
        null_mut(),
    ];
    // SAFETY: a terminated extra list; the buffer holds `size` bytes.
    ok(unsafe {
        cu::cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            CUstream::default(),
            null_mut(),
            extra.as_mut_ptr(),
        )
    });
    assert_eq!(read_u32(out, 8), want);
}

/// `sin_kernel` as NVRTC 12.9 compiles cudarc's `SIN_CU` test kernel
/// (`out[i] = sin(inp[i])`, `--gpu-architecture=compute_80`): its
/// Payne-Hanek reduction for large arguments reads the module's
/// `.global __cudart_i2opi_f` table.
const NVRTC_SIN_PTX: &str = include_str!("ptx/nvrtc_sin.ptx");

#[test]
fn nvrtc_sin_with_its_global_table_runs() {
    let _c = TestCtx::new();
    let m = load(NVRTC_SIN_PTX);
    let (_, n) = get_global(m, c"__cudart_i2opi_f").unwrap();
    assert_eq!(n, 24);
    let f = function(m, "sin_kernel").unwrap();
    // small arguments, and large ones (beyond 105615: the table's path)
    let x: Vec<f32> = vec![
        0.0, 0.5, -1.25, 3.0, 100.0, -1.0e4, 2.5e5, -1.0e6, 3.1e9, 7.7e20, -1.0e30, 3.0e38,
    ];
    let inp = alloc(4 * x.len());
    let out = alloc(4 * x.len());
    ok(htod(inp, &x));
    ok(launch(
        f,
        1,
        32,
        0,
        CUstream::default(),
        &[Arg::U64(out), Arg::U64(inp), Arg::U64(x.len() as u64)],
    ));
    let mut got = vec![0f32; x.len()];
    ok(dtoh(&mut got, out));
    for (&a, &g) in x.iter().zip(&got) {
        let want = (a as f64).sin();
        assert!(
            (g as f64 - want).abs() <= 1e-6,
            "sin({a:e}) = {g:e} on the emulator, {want:e} exactly"
        );
    }
}

/// NVRTC 12.9's PTX for the parameter kinds of cudarc's `int_8bit`,
/// `int_16bit` tests (there checked with `assert`, here written out) and a
/// struct by value (`.param .align 8 .b8 p[32]`).
const NVRTC_PARAMS_PTX: &str = include_str!("ptx/nvrtc_params.ptx");

/// `cuLaunchKernel` of one thread with `kernelParams` = `params`.
fn launch_one(f: CUfunction, params: &mut [*mut c_void]) -> CUresult {
    // SAFETY: one pointer per parameter, each readable for its size.
    unsafe {
        cu::cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            CUstream::default(),
            params.as_mut_ptr(),
            null_mut(),
        )
    }
}

#[test]
fn nvrtc_small_and_struct_parameters_arrive() {
    let _c = TestCtx::new();
    let m = load(NVRTC_PARAMS_PTX);
    let out = alloc(16);
    let mut o = out;
    let (mut a, mut b, mut c, mut d) = (i8::MIN, i8::MAX, u8::MIN, u8::MAX);
    let f = function(m, "int_8bit").unwrap();
    ok(launch_one(
        f,
        &mut [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut d).cast(),
            (&raw mut o).cast(),
        ],
    ));
    assert_eq!(read_u32(out, 4), [-128i32 as u32, 127, 0, 255]);
    let (mut a, mut b, mut c, mut d) = (i16::MIN, i16::MAX, u16::MIN, u16::MAX);
    let f = function(m, "int_16bit").unwrap();
    ok(launch_one(
        f,
        &mut [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut d).cast(),
            (&raw mut o).cast(),
        ],
    ));
    assert_eq!(read_u32(out, 4), [-32768i32 as u32, 32767, 0, 65535]);
    // struct Meta { u64 shape[3]; float f; } by value, then a double
    let mut meta = [0u8; 32];
    for (i, s) in [4u64, 5, 6].iter().enumerate() {
        meta[8 * i..8 * i + 8].copy_from_slice(&s.to_le_bytes());
    }
    meta[24..28].copy_from_slice(&1.5f32.to_le_bytes());
    let mut dbl = -10.25f64;
    let f = function(m, "by_value").unwrap();
    ok(launch_one(
        f,
        &mut [
            meta.as_mut_ptr().cast(),
            (&raw mut dbl).cast(),
            (&raw mut o).cast(),
        ],
    ));
    assert_eq!(
        read_u32(out, 3),
        [6.0f32.to_bits(), 1.5f32.to_bits(), (-10.25f32).to_bits()]
    );
}
