//! Module-scope `.global` variables and parameters of every size in the
//! simulator: initialised tables read by a kernel (as NVRTC's `sin()`
//! table), `.common` variables (as Numba's environment pointer), values
//! that persist across launches of one loaded module, fresh storage per
//! load, the checks seeing the variables, and `.u8`/`.u16`/`.f16`/struct
//! parameters through `Sim::launch_program_bytes`.

use std::sync::Arc;

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimError, Space};

const HEAD: &str = ".version 8.7\n.target sm_89\n.address_size 64\n";

fn one() -> LaunchConfig {
    LaunchConfig::linear(1, 1)
}

fn read_u32s(sim: &mut Sim, addr: u64, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; 4 * n];
    sim.read(addr, &mut b).unwrap();
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The first 24 bytes of NVRTC 12.9's `__cudart_i2opi_f` (2/pi bits).
const I2OPI: &str = ".global .align 4 .b8 __cudart_i2opi_f[24] = {65, 144, 67, 60, 153, 149, 98, 219, \
                     192, 221, 52, 245, 209, 87, 39, 252, 41, 21, 68, 78, 110, 131, 249, 162};";

#[test]
fn a_kernel_reads_an_initialised_table_by_name_and_by_generic_address() {
    let ptx = format!(
        "{HEAD}{I2OPI}\n.global .f32 fs[2] = {{0f3FC00000, -2.0}};\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<6>;\n.reg .b32 %r<6>;\n.reg .f32 %f<3>;\n\
         ld.param.u64 %rd1, [out];\n\
         ld.global.u32 %r1, [__cudart_i2opi_f];\n\
         ld.global.u32 %r2, [__cudart_i2opi_f+20];\n\
         mov.u64 %rd2, __cudart_i2opi_f;\ncvta.global.u64 %rd3, %rd2;\nld.u32 %r3, [%rd3+8];\n\
         ld.global.f32 %f1, [fs+4];\nmov.b32 %r4, %f1;\n\
         st.global.u32 [%rd1], %r1;\nst.global.u32 [%rd1+4], %r2;\n\
         st.global.u32 [%rd1+8], %r3;\nst.global.u32 [%rd1+12], %r4;\nret;\n}}\n"
    );
    let mut sim = Sim::new(Sm::Sm89);
    let prog = sim.program(&ptx).unwrap();
    let out = sim.alloc(16).unwrap();
    sim.launch_program(&prog, "k", one(), &[ArgValue::Ptr(out)])
        .unwrap();
    assert_eq!(
        read_u32s(&mut sim, out, 4),
        [
            u32::from_le_bytes([65, 144, 67, 60]),
            u32::from_le_bytes([110, 131, 249, 162]),
            u32::from_le_bytes([192, 221, 52, 245]),
            (-2.0f32).to_bits()
        ]
    );
    // the host sees the variable where the program says it is
    let (addr, size) = prog.global("__cudart_i2opi_f").unwrap();
    assert_eq!(size, 24);
    let mut b = [0u8; 4];
    sim.read(addr + 4, &mut b).unwrap();
    assert_eq!(b, [153, 149, 98, 219]);
}

/// Writes `%r1 + 1` to the variable `v` and to `out` (the value it read).
fn counter(decl: &str) -> String {
    format!(
        "{HEAD}{decl}\n.visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<3>;\n.reg .b32 %r<3>;\n\
         ld.param.u64 %rd1, [out];\nld.global.u32 %r1, [v];\nst.global.u32 [%rd1], %r1;\n\
         add.u32 %r2, %r1, 1;\nst.global.u32 [v], %r2;\nret;\n}}\n"
    )
}

fn bump(sim: &mut Sim, prog: &Program) -> u32 {
    let out = sim.alloc(4).unwrap();
    sim.launch_program(prog, "k", one(), &[ArgValue::Ptr(out)])
        .unwrap();
    read_u32s(sim, out, 1)[0]
}

#[test]
fn a_written_variable_persists_to_the_next_launch() {
    let mut sim = Sim::new(Sm::Sm89);
    let prog = sim
        .program(&counter(".visible .global .u32 v = 40;"))
        .unwrap();
    assert_eq!(bump(&mut sim, &prog), 40);
    assert_eq!(bump(&mut sim, &prog), 41);
    // the cached program is the same loaded module
    let again = sim
        .program(&counter(".visible .global .u32 v = 40;"))
        .unwrap();
    assert_eq!(bump(&mut sim, &again), 42);
}

#[test]
fn a_common_variable_is_zero_initialised_memory() {
    let mut sim = Sim::new(Sm::Sm89);
    let prog = sim
        .program(&counter(".common .global .align 8 .u32 v;"))
        .unwrap();
    // read before any write: zero, and initialised (checks are on)
    assert_eq!(bump(&mut sim, &prog), 0);
    assert_eq!(bump(&mut sim, &prog), 1);
}

#[test]
fn each_load_has_its_own_variables_and_unload_frees_them() {
    let mut sim = Sim::new(Sm::Sm89);
    let parsed = Arc::new(Program::parse(&counter(".global .u32 v = 7;")).unwrap());
    let a = sim.load_module(&parsed).unwrap();
    let b = sim.load_module(&parsed).unwrap();
    assert_ne!(a.global("v"), b.global("v"));
    assert_eq!(bump(&mut sim, &a), 7);
    assert_eq!(bump(&mut sim, &a), 8);
    assert_eq!(bump(&mut sim, &b), 7);
    let live = sim.live_allocations();
    sim.unload_module(&a).unwrap();
    assert_eq!(sim.live_allocations(), live - 1);
    // a program without variables is not copied and allocates nothing
    let plain =
        Arc::new(Program::parse(&format!("{HEAD}.visible .entry k()\n{{\nret;\n}}\n")).unwrap());
    assert!(Arc::ptr_eq(&sim.load_module(&plain).unwrap(), &plain));
    assert_eq!(sim.live_allocations(), live - 1);
}

#[test]
fn a_program_with_variables_that_was_not_loaded_is_refused() {
    let mut sim = Sim::new(Sm::Sm89);
    let parsed = Program::parse(&counter(".global .u32 v;")).unwrap();
    let out = sim.alloc(4).unwrap();
    let e = sim
        .launch_program(&parsed, "k", one(), &[ArgValue::Ptr(out)])
        .unwrap_err();
    assert!(
        matches!(&e, SimError::InvalidLaunch(m) if m.contains("load_module") && m.contains('v')),
        "{e}"
    );
}

#[test]
fn an_access_past_a_variable_is_out_of_bounds() {
    let ptx = format!(
        "{HEAD}.global .align 4 .u32 t[2] = {{1, 2}};\n.visible .entry k()\n{{\n.reg .b32 %r<2>;\n\
         ld.global.u32 %r1, [t+8];\nret;\n}}\n"
    );
    let mut sim = Sim::new(Sm::Sm89);
    let prog = sim.program(&ptx).unwrap();
    let e = sim.launch_program(&prog, "k", one(), &[]).unwrap_err();
    let (base, _) = prog.global("t").unwrap();
    assert!(
        matches!(&e, SimError::OutOfBounds { space: Space::Global, addr, .. } if *addr == base + 8),
        "{e}"
    );
}

/// A kernel with `.u8`, `.s8`, `.u16`, `.f16` and a 24-byte struct by
/// value (`.align 8 .b8 s[24]`, read as `.v2.u32`, `.u64` and `.u8`),
/// writing what it read as eight u32 words.
const SMALL_PARAMS: &str = ".visible .entry k(.param .u64 out, .param .u8 a, .param .s8 b, \
     .param .u16 c, .param .f16 h, .param .align 8 .b8 s[24])\n{\n.reg .b64 %rd<4>;\n\
     .reg .b32 %r<12>;\n.reg .b16 %h<2>;\n\
     ld.param.u64 %rd1, [out];\nld.param.u8 %r1, [a];\nld.param.s8 %r2, [b];\n\
     ld.param.u16 %r3, [c];\nld.param.b16 %h1, [h];\ncvt.u32.u16 %r4, %h1;\n\
     ld.param.v2.u32 {%r5, %r6}, [s];\nld.param.u64 %rd2, [s+8];\ncvt.u32.u64 %r7, %rd2;\n\
     ld.param.u8 %r8, [s+23];\n\
     st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};\n\
     st.global.v4.u32 [%rd1+16], {%r5, %r6, %r7, %r8};\nret;\n}\n";

#[test]
fn parameters_of_every_size_and_alignment() {
    let ptx = format!("{HEAD}{SMALL_PARAMS}");
    let mut sim = Sim::new(Sm::Sm89);
    let prog = sim.program(&ptx).unwrap();
    let e = prog.entry("k").unwrap();
    let layout: Vec<(u32, u32)> = e.params.iter().map(|p| (p.offset, p.size)).collect();
    assert_eq!(layout, [(0, 8), (8, 1), (9, 1), (10, 2), (12, 2), (16, 24)]);
    assert_eq!(e.param_bytes, 40);
    let out = sim.alloc(32).unwrap();
    let mut buf = vec![0u8; 40];
    buf[..8].copy_from_slice(&out.to_le_bytes());
    buf[8] = 200;
    buf[9] = (-3i8) as u8;
    buf[10..12].copy_from_slice(&54321u16.to_le_bytes());
    buf[12..14].copy_from_slice(&0x3C00u16.to_le_bytes());
    buf[16..20].copy_from_slice(&11u32.to_le_bytes());
    buf[20..24].copy_from_slice(&22u32.to_le_bytes());
    buf[24..32].copy_from_slice(&0x1_0000_0021u64.to_le_bytes());
    buf[39] = 0x99;
    sim.launch_program_bytes(&prog, "k", one(), &buf).unwrap();
    assert_eq!(
        read_u32s(&mut sim, out, 8),
        [200, (-3i32) as u32, 54321, 0x3C00, 11, 22, 0x21, 0x99]
    );
    // a buffer of another size is refused, naming both sizes
    let e = sim
        .launch_program_bytes(&prog, "k", one(), &buf[..39])
        .unwrap_err();
    assert!(
        matches!(&e, SimError::InvalidLaunch(m) if m.contains("40") && m.contains("39")),
        "{e}"
    );
    // 4- and 8-byte ArgValues cannot fill a 1-byte parameter
    let e = sim
        .launch_program(
            &prog,
            "k",
            one(),
            &[
                ArgValue::Ptr(out),
                ArgValue::U32(1),
                ArgValue::U32(1),
                ArgValue::U32(1),
                ArgValue::U32(1),
                ArgValue::U64(1),
            ],
        )
        .unwrap_err();
    assert!(
        matches!(&e, SimError::InvalidLaunch(m) if m.contains("`a`") && m.contains("launch_program_bytes")),
        "{e}"
    );
}

#[test]
fn a_pointer_table_initialised_with_addresses_is_followed() {
    // what `const char *names[] = {"Hi!", ...}` compiles to
    let ptx = format!(
        "{HEAD}.global .align 1 .b8 $str[4] = {{72, 105, 33, 0}};\n\
         .global .align 8 .u64 names[2] = {{generic($str), generic($str)+2}};\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<6>;\n.reg .b32 %r<4>;\n\
         ld.param.u64 %rd1, [out];\nld.global.u64 %rd2, [names];\nld.global.u64 %rd3, [names+8];\n\
         ld.u8 %r1, [%rd2+1];\nld.u8 %r2, [%rd3];\n\
         st.global.u32 [%rd1], %r1;\nst.global.u32 [%rd1+4], %r2;\nret;\n}}\n"
    );
    let mut sim = Sim::new(Sm::Sm89);
    let prog = sim.program(&ptx).unwrap();
    let out = sim.alloc(8).unwrap();
    sim.launch_program(&prog, "k", one(), &[ArgValue::Ptr(out)])
        .unwrap();
    assert_eq!(read_u32s(&mut sim, out, 2), [105, 33]);
    let (s, _) = prog.global("$str").unwrap();
    let mut b = [0u8; 8];
    sim.read(prog.global("names").unwrap().0 + 8, &mut b)
        .unwrap();
    assert_eq!(u64::from_le_bytes(b), s + 2);
}

/// The runtime on the simulator: a module with a variable launched through
/// `Context`/`Stream::launch`; the host reaches the variable through
/// `Context::with_sim` and `Sim::program(..).global(name)` (the same
/// loaded module the launches use), writes it, and the next launch sees it.
#[test]
fn the_runtime_context_reaches_a_module_variable() {
    use ptxsmith::dsl::PtxModule;
    use ptxsmith::dsl::params::{ParamDesc, ParamKind, ScalarType};
    use ptxsmith::runtime::Context;

    let module = PtxModule {
        kernel: "k".into(),
        tuning: String::new(),
        sm: Sm::Sm89,
        version: ptxsmith::PtxVersion::new(8, 7),
        params: vec![ParamDesc {
            name: "out".into(),
            kind: ParamKind::GlobalPtr {
                elem: ScalarType::U32,
                align: 4,
            },
        }],
        ptx: counter(".visible .global .u32 v = 5;"),
    };
    let ctx = Context::sim(Sm::Sm89);
    let st = ctx.default_stream();
    let out = st.upload(&[0u32]).unwrap();
    let args = [ArgValue::Ptr(out.device_ptr())];
    st.launch(&module, one(), &args).unwrap();
    assert_eq!(out.to_vec().unwrap(), [5]);
    let (addr, size) = ctx
        .with_sim(|sim| sim.program(&module.ptx).unwrap().global("v"))
        .flatten()
        .unwrap();
    assert_eq!(size, 4);
    ctx.with_sim(|sim| sim.write(addr, &100u32.to_le_bytes()).unwrap())
        .unwrap();
    st.launch(&module, one(), &args).unwrap();
    assert_eq!(out.to_vec().unwrap(), [100]);
}
