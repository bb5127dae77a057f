//! Instruction semantics with hand-derived expected bits, each run through
//! a one-thread PTX kernel in the simulator, with the lockstep schedule on
//! and off (its group operations and the one-thread interpreter give the
//! same bits: `run` compares them).

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimError, SimOptions};

const HEAD: &str = ".version 8.7\n.target sm_120\n.address_size 64\n";

/// Run `body` with %rd1..3 / %r1..3 / %f1..3 holding a, b, c; the body
/// leaves its result in %rd7, which is returned.
fn run(body: &str, a: u64, b: u64, c: u64) -> Result<u64, SimError> {
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 out, .param .u64 a, .param .u64 b, .param .u64 c)\n{{\n\
         .reg .b64 %rd<8>;\n.reg .b32 %r<8>;\n.reg .f32 %f<8>;\n.reg .pred %p<4>;\n.reg .b16 %h<4>;\n.reg .b8 %q<4>;\n.reg .f64 %fd<4>;\n\
         ld.param.u64 %rd0, [out];\nld.param.u64 %rd1, [a];\nld.param.u64 %rd2, [b];\nld.param.u64 %rd3, [c];\n\
         cvt.u32.u64 %r1, %rd1;\ncvt.u32.u64 %r2, %rd2;\ncvt.u32.u64 %r3, %rd3;\n\
         mov.b32 %f1, %r1;\nmov.b32 %f2, %r2;\nmov.b32 %f3, %r3;\nmov.b64 %fd1, %rd1;\nmov.b64 %fd2, %rd2;\nmov.b64 %fd3, %rd3;\n\
         {body}\nst.global.u64 [%rd0], %rd7;\nret;\n}}\n"
    );
    let prog = Program::parse(&ptx)?;
    let on = launch(&prog, a, b, c, true);
    let off = launch(&prog, a, b, c, false);
    match (&on, &off) {
        (Ok(x), Ok(y)) => assert_eq!(x, y, "{body}: lockstep vs thread order"),
        (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string(), "{body}"),
        _ => panic!("{body}: lockstep {on:?}, thread order {off:?}"),
    }
    on
}

/// One launch of `prog` with the lockstep schedule on or off.
fn launch(prog: &Program, a: u64, b: u64, c: u64, lockstep: bool) -> Result<u64, SimError> {
    let mut sim = Sim::new(Sm::Sm120);
    sim.set_options(SimOptions {
        lockstep,
        ..Default::default()
    });
    let out = sim.alloc(8).unwrap();
    sim.launch_program(
        prog,
        "k",
        LaunchConfig::linear(1, 1),
        &[
            ArgValue::Ptr(out),
            ArgValue::U64(a),
            ArgValue::U64(b),
            ArgValue::U64(c),
        ],
    )?;
    let mut o = [0u8; 8];
    sim.read(out, &mut o).unwrap();
    Ok(u64::from_le_bytes(o))
}

/// 32-bit float op `op %f4, %f1, %f2[, %f3]`.
fn f3(op: &str, a: u32, b: u32, c: u32) -> u32 {
    run(
        &format!("{op} %f4, %f1, %f2, %f3;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;"),
        a as u64,
        b as u64,
        c as u64,
    )
    .unwrap() as u32
}
fn f2(op: &str, a: u32, b: u32) -> u32 {
    run(
        &format!("{op} %f4, %f1, %f2;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;"),
        a as u64,
        b as u64,
        0,
    )
    .unwrap() as u32
}
fn f1(op: &str, a: u32) -> u32 {
    run(
        &format!("{op} %f4, %f1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;"),
        a as u64,
        0,
        0,
    )
    .unwrap() as u32
}
fn i2(op: &str, a: u32, b: u32) -> u32 {
    run(
        &format!("{op} %r4, %r1, %r2;\ncvt.u64.u32 %rd7, %r4;"),
        a as u64,
        b as u64,
        0,
    )
    .unwrap() as u32
}
fn i3(op: &str, a: u32, b: u32, c: u32) -> u32 {
    run(
        &format!("{op} %r4, %r1, %r2, %r3;\ncvt.u64.u32 %rd7, %r4;"),
        a as u64,
        b as u64,
        c as u64,
    )
    .unwrap() as u32
}
fn i1(op: &str, a: u32) -> u32 {
    run(
        &format!("{op} %r4, %r1;\ncvt.u64.u32 %rd7, %r4;"),
        a as u64,
        0,
        0,
    )
    .unwrap() as u32
}
fn l2(op: &str, a: u64, b: u64) -> u64 {
    run(&format!("{op} %rd7, %rd1, %rd2;"), a, b, 0).unwrap()
}
fn setp(op: &str, a: u32, b: u32) -> (bool, bool) {
    let v = run(&format!("{op} %p1|%p2, %r1, %r2;\nselp.u64 %rd5, 1, 0, %p1;\nselp.u64 %rd6, 2, 0, %p2;\nor.b64 %rd7, %rd5, %rd6;"), a as u64, b as u64, 0).unwrap();
    (v & 1 != 0, v & 2 != 0)
}
fn setpf(op: &str, a: f32, b: f32) -> (bool, bool) {
    let v = run(&format!("{op} %p1|%p2, %f1, %f2;\nselp.u64 %rd5, 1, 0, %p1;\nselp.u64 %rd6, 2, 0, %p2;\nor.b64 %rd7, %rd5, %rd6;"), a.to_bits() as u64, b.to_bits() as u64, 0).unwrap();
    (v & 1 != 0, v & 2 != 0)
}
fn cvt_f2i(op: &str, x: f32) -> u64 {
    run(&format!("{op} %rd7, %f1;"), x.to_bits() as u64, 0, 0).unwrap()
}
fn cvt_f2i32(op: &str, x: f32) -> u32 {
    run(
        &format!("{op} %r4, %f1;\ncvt.u64.u32 %rd7, %r4;"),
        x.to_bits() as u64,
        0,
        0,
    )
    .unwrap() as u32
}

const ONE: u32 = 0x3F80_0000;
const MONE: u32 = 0xBF80_0000;
const NAN: u32 = 0x7FFF_FFFF;
const INF: u32 = 0x7F80_0000;
const MAX: u32 = 0x7F7F_FFFF;

#[test]
fn f32_add_sub_mul_rounding() {
    assert_eq!(f2("add.rn.f32", ONE, 1), ONE);
    assert_eq!(f2("add.rz.f32", ONE, 1), ONE);
    assert_eq!(f2("add.rm.f32", ONE, 1), ONE);
    assert_eq!(f2("add.rp.f32", ONE, 1), 0x3F80_0001);
    assert_eq!(f2("add.rz.f32", MONE, 1), 0xBF7F_FFFF);
    assert_eq!(f2("add.rm.f32", MONE, 1), MONE);
    assert_eq!(f2("sub.rm.f32", ONE, ONE), 0x8000_0000); // x - x = -0 under rm
    assert_eq!(f2("sub.rn.f32", ONE, ONE), 0);
    assert_eq!(f2("add.rn.f32", 0x8000_0000, 0x8000_0000), 0x8000_0000);
    assert_eq!(f2("add.rn.f32", 0x8000_0000, 0), 0);
    // overflow
    assert_eq!(f2("mul.rn.f32", MAX, 0x4000_0000), INF);
    assert_eq!(f2("mul.rz.f32", MAX, 0x4000_0000), MAX);
    assert_eq!(f2("mul.rm.f32", MAX, 0x4000_0000), MAX);
    assert_eq!(
        f2("mul.rp.f32", MAX | 0x8000_0000, 0x4000_0000),
        MAX | 0x8000_0000
    );
    assert_eq!(
        f2("mul.rm.f32", MAX | 0x8000_0000, 0x4000_0000),
        INF | 0x8000_0000
    );
    // (1+2^-23)^2 = 1 + 2^-22 + 2^-46
    assert_eq!(f2("mul.rn.f32", 0x3F80_0001, 0x3F80_0001), 0x3F80_0002);
    assert_eq!(f2("mul.rz.f32", 0x3F80_0001, 0x3F80_0001), 0x3F80_0002);
    assert_eq!(f2("mul.rp.f32", 0x3F80_0001, 0x3F80_0001), 0x3F80_0003);
    // subnormals kept: 2^-126 * 2^-10 = 2^-136 = 0x2000 ulp... (2^-136 = 2^13 * 2^-149)
    assert_eq!(f2("mul.rn.f32", 0x0080_0000, 0x3A80_0000), 0x0000_2000);
    assert_eq!(f2("mul.rn.ftz.f32", 0x0080_0000, 0x3A80_0000), 0);
    // smallest subnormal * 0.5: tie -> even 0; rp -> min subnormal
    assert_eq!(f2("mul.rn.f32", 1, 0x3F00_0000), 0);
    assert_eq!(f2("mul.rp.f32", 1, 0x3F00_0000), 1);
    assert_eq!(f2("mul.rm.f32", 0x8000_0001, 0x3F00_0000), 0x8000_0001);
    assert_eq!(f2("mul.rz.f32", 0x8000_0001, 0x3F00_0000), 0x8000_0000);
    // NaN results canonical, quiet or signalling inputs
    assert_eq!(f2("add.rn.f32", 0x7FC0_1234, ONE), NAN);
    assert_eq!(f2("add.rz.f32", 0x7F80_0001, ONE), NAN);
    assert_eq!(f2("add.rn.f32", INF, INF | 0x8000_0000), NAN);
    assert_eq!(f2("mul.rn.f32", INF, 0), NAN);
    // .sat
    assert_eq!(f2("add.rn.sat.f32", ONE, ONE), ONE);
    assert_eq!(f2("add.rn.sat.f32", MONE, 0), 0);
    assert_eq!(f2("mul.rn.sat.f32", INF, 0), 0);
}

#[test]
fn f32_fma_div_sqrt_rcp() {
    // fma keeps a single rounding: a*a - (1+2^-22) = 2^-46 exactly
    assert_eq!(
        f3("fma.rn.f32", 0x3F80_0001, 0x3F80_0001, 0xBF80_0002),
        0x2880_0000
    );
    assert_eq!(
        f3("fma.rz.f32", 0x3F80_0001, 0x3F80_0001, 0xBF80_0002),
        0x2880_0000
    );
    // 1 * 1 + 2^-149: rp steps, rn/rz/rm stay
    assert_eq!(f3("fma.rp.f32", ONE, ONE, 1), 0x3F80_0001);
    assert_eq!(f3("fma.rm.f32", ONE, ONE, 1), ONE);
    assert_eq!(f3("fma.rz.f32", MONE, ONE, 1), 0xBF7F_FFFF);
    assert_eq!(f3("mad.rn.f32", 0x4000_0000, 0x4040_0000, ONE), 0x40E0_0000); // 2*3+1 = 7
    let three = 0x4040_0000;
    assert_eq!(f2("div.rn.f32", ONE, three), 0x3EAA_AAAB);
    assert_eq!(f2("div.rz.f32", ONE, three), 0x3EAA_AAAA);
    assert_eq!(f2("div.rm.f32", ONE, three), 0x3EAA_AAAA);
    assert_eq!(f2("div.rp.f32", ONE, three), 0x3EAA_AAAB);
    assert_eq!(f2("div.rn.f32", ONE, 0), INF);
    assert_eq!(f2("div.rn.f32", MONE, 0), INF | 0x8000_0000);
    assert_eq!(f2("div.rn.f32", 0, 0), NAN);
    assert_eq!(f1("rcp.rn.f32", three), 0x3EAA_AAAB);
    assert_eq!(f1("rcp.rz.f32", three), 0x3EAA_AAAA);
    assert_eq!(f1("rcp.rn.f32", 0x8000_0000), INF | 0x8000_0000);
    assert_eq!(f1("sqrt.rn.f32", 0x4080_0000), 0x4000_0000);
    assert_eq!(f1("sqrt.rn.f32", 0x8000_0000), 0x8000_0000);
    assert_eq!(f1("sqrt.rn.f32", MONE), NAN);
    assert_eq!(f1("sqrt.rn.f32", 0x4000_0000), 0x3FB5_04F3);
    assert_eq!(f1("sqrt.rz.f32", 0x4000_0000), 0x3FB5_04F3);
    assert_eq!(f1("sqrt.rp.f32", 0x4000_0000), 0x3FB5_04F4);
}

#[test]
fn f32_min_max_abs_neg() {
    let qnan = 0x7FC0_0000;
    let snan = 0x7F80_0001;
    assert_eq!(f2("min.f32", qnan, ONE), ONE);
    assert_eq!(f2("max.f32", ONE, snan), ONE);
    assert_eq!(f2("min.f32", qnan, snan), NAN);
    assert_eq!(f2("min.NaN.f32", qnan, ONE), NAN);
    assert_eq!(f2("max.NaN.f32", ONE, ONE | 0x8000_0000), ONE);
    assert_eq!(f2("min.f32", 0, 0x8000_0000), 0x8000_0000);
    assert_eq!(f2("max.f32", 0x8000_0000, 0), 0);
    assert_eq!(f2("max.f32", MONE, 1), 1);
    assert_eq!(f1("abs.f32", 0x8000_0000), 0);
    assert_eq!(f1("abs.f32", MONE), ONE);
    assert_eq!(f1("neg.f32", 0), 0x8000_0000);
    assert_eq!(f1("neg.f32", 0xFFC0_0000), NAN);
    assert_eq!(f1("abs.ftz.f32", 0x8000_0001), 0);
}

#[test]
fn f64_ops_and_conversions() {
    let one = 1f64.to_bits();
    let r = run(
        "add.rn.f64 %fd0, %fd1, %fd2;\nmov.b64 %rd7, %fd0;",
        one,
        (2f64.powi(-53)).to_bits(),
        0,
    )
    .unwrap();
    assert_eq!(r, one);
    let r = run(
        "fma.rn.f64 %fd0, %fd1, %fd2, %fd3;\nmov.b64 %rd7, %fd0;",
        3f64.to_bits(),
        0.1f64.to_bits(),
        (-0.3f64).to_bits(),
    )
    .unwrap();
    assert_eq!(r, 3f64.mul_add(0.1, -0.3).to_bits());
    let r = run(
        "cvt.f64.f32 %fd0, %f1;\nmov.b64 %rd7, %fd0;",
        0x3DCC_CCCD,
        0,
        0,
    )
    .unwrap();
    assert_eq!(r, (f32::from_bits(0x3DCC_CCCD) as f64).to_bits());
    let r = run(
        "cvt.rn.f32.f64 %f4, %fd1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;",
        0.1f64.to_bits(),
        0,
        0,
    )
    .unwrap();
    assert_eq!(r, 0.1f32.to_bits() as u64);
    let r = run(
        "cvt.rz.f32.f64 %f4, %fd1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;",
        0.1f64.to_bits(),
        0,
        0,
    )
    .unwrap();
    assert_eq!(r, 0x3DCC_CCCC); // 0.1 rounds up in rn (…CD), down in rz
}

#[test]
fn integer_arithmetic() {
    assert_eq!(i2("add.u32", u32::MAX, 2), 1);
    assert_eq!(i2("sub.s32", 0, 1), u32::MAX);
    assert_eq!(i2("mul.lo.s32", 0x10000, 0x10001), 0x10000);
    assert_eq!(i2("mul.hi.u32", u32::MAX, u32::MAX), 0xFFFF_FFFE);
    assert_eq!(i2("mul.hi.s32", u32::MAX, 1), u32::MAX); // -1 * 1: high word all ones
    assert_eq!(i2("mul.hi.s32", 0x8000_0000, 0x8000_0000), 0x4000_0000);
    assert_eq!(
        run("mul.wide.s32 %rd7, %r1, %r2;", (-2i32) as u32 as u64, 3, 0).unwrap(),
        (-6i64) as u64
    );
    assert_eq!(
        run(
            "mul.wide.u32 %rd7, %r1, %r2;",
            u32::MAX as u64,
            u32::MAX as u64,
            0
        )
        .unwrap(),
        0xFFFF_FFFE_0000_0001
    );
    assert_eq!(
        run("mad.wide.u32 %rd7, %r1, %r2, %rd3;", 0xFFFF_FFFF, 2, 5).unwrap(),
        0x1_FFFF_FFFE + 5
    );
    assert_eq!(
        run(
            "mad.wide.s32 %rd7, %r1, %r2, %rd3;",
            (-1i32) as u32 as u64,
            2,
            1
        )
        .unwrap(),
        (-1i64) as u64
    );
    assert_eq!(i3("mad.lo.u32", 3, 4, 5), 17);
    assert_eq!(i3("mad.hi.u32", 0x8000_0000, 4, 1), 3);
    assert_eq!(l2("mul.lo.u64", u64::MAX, 3), u64::MAX.wrapping_mul(3));
    assert_eq!(l2("add.s64", u64::MAX, 1), 0);
    assert_eq!(i2("div.s32", (-7i32) as u32, 2), (-3i32) as u32);
    assert_eq!(i2("rem.s32", (-7i32) as u32, 2), (-1i32) as u32);
    assert_eq!(i2("div.u32", 7, 2), 3);
    assert_eq!(i2("div.s32", 0x8000_0000, u32::MAX), 0x8000_0000); // INT_MIN / -1 wraps
    assert_eq!(l2("rem.u64", 100, 7), 2);
    assert!(matches!(
        run("div.u32 %r4, %r1, %r2;\nmov.u64 %rd7, 0;", 1, 0, 0),
        Err(SimError::Trap { .. })
    ));
    assert!(matches!(
        run("rem.s32 %r4, %r1, %r2;\nmov.u64 %rd7, 0;", 1, 0, 0),
        Err(SimError::Trap { .. })
    ));
    assert_eq!(i2("min.s32", u32::MAX, 1), u32::MAX);
    assert_eq!(i2("min.u32", u32::MAX, 1), 1);
    assert_eq!(i2("max.s32", u32::MAX, 1), 1);
    assert_eq!(l2("max.u64", u64::MAX, 1), u64::MAX);
    assert_eq!(i1("neg.s32", 1), u32::MAX);
    assert_eq!(i1("abs.s32", (-5i32) as u32), 5);
    assert_eq!(i1("abs.s32", 0x8000_0000), 0x8000_0000);
}

#[test]
fn logic_shift_bitfield() {
    assert_eq!(i2("and.b32", 0xF0F0, 0xFF00), 0xF000);
    assert_eq!(i2("or.b32", 0xF0F0, 0xFF00), 0xFFF0);
    assert_eq!(i2("xor.b32", 0xF0F0, 0xFF00), 0x0FF0);
    assert_eq!(i1("not.b32", 0), u32::MAX);
    assert_eq!(i1("cnot.b32", 0), 1);
    assert_eq!(i1("cnot.b32", 7), 0);
    // shift amounts >= width clamp
    assert_eq!(i2("shl.b32", 1, 31), 0x8000_0000);
    assert_eq!(i2("shl.b32", 1, 32), 0);
    assert_eq!(i2("shl.b32", 1, 0xFFFF_FFFF), 0);
    assert_eq!(i2("shr.u32", 0x8000_0000, 32), 0);
    assert_eq!(i2("shr.b32", 0x8000_0000, 33), 0);
    assert_eq!(i2("shr.s32", 0x8000_0000, 32), u32::MAX);
    assert_eq!(i2("shr.s32", 0x8000_0000, 100), u32::MAX);
    assert_eq!(i2("shr.s32", 0x4000_0000, 100), 0);
    assert_eq!(i2("shr.s32", 0x8000_0000, 4), 0xF800_0000);
    assert_eq!(run("shl.b64 %rd7, %rd1, %r2;", 1, 64, 0).unwrap(), 0);
    assert_eq!(run("shl.b64 %rd7, %rd1, %r2;", 1, 63, 0).unwrap(), 1 << 63);
    assert_eq!(
        run("shr.s64 %rd7, %rd1, %r2;", 1 << 63, 64, 0).unwrap(),
        u64::MAX
    );
    assert_eq!(run("shr.u64 %rd7, %rd1, %r2;", 1 << 63, 64, 0).unwrap(), 0);
    // bfe: len 0 -> 0; field past the msb padded with the sign bit
    assert_eq!(i3("bfe.u32", 0xF0, 4, 0), 0);
    assert_eq!(i3("bfe.s32", 0xF0, 4, 0), 0);
    assert_eq!(i3("bfe.u32", 0xF0, 4, 4), 0xF);
    assert_eq!(i3("bfe.s32", 0xF0, 4, 4), u32::MAX);
    assert_eq!(i3("bfe.u32", 0x8000_0000, 28, 8), 0x8);
    assert_eq!(i3("bfe.s32", 0x8000_0000, 28, 8), 0xFFFF_FFF8);
    assert_eq!(i3("bfe.s32", 0x8000_0000, 40, 3), u32::MAX); // pos > msb: all sign bits
    assert_eq!(i3("bfe.u32", 0x8000_0000, 40, 3), 0);
    assert_eq!(i3("bfe.u32", 0xABCD, 0x104, 0x208), 0xBC); // only the low 8 bits of b, c count
    assert_eq!(
        run("bfe.s64 %rd7, %rd1, %r2, %r3;", 1 << 63, 60, 10).unwrap(),
        0xFFFF_FFFF_FFFF_FFF8
    );
    // bfi
    let bfi = |a: u32, b: u32, pos: u32, len: u32| {
        run(
            "bfi.b32 %r4, %r1, %r2, %r5, %r6;\ncvt.u64.u32 %rd7, %r4;",
            a as u64,
            b as u64,
            0,
        )
        .map(|_| ())
        .ok();
        let body = format!(
            "mov.u32 %r5, {pos};\nmov.u32 %r6, {len};\nbfi.b32 %r4, %r1, %r2, %r5, %r6;\ncvt.u64.u32 %rd7, %r4;"
        );
        run(&body, a as u64, b as u64, 0).unwrap() as u32
    };
    assert_eq!(bfi(0xF, 0, 30, 4), 0xC000_0000);
    assert_eq!(bfi(0xF, 0xFFFF_FFFF, 4, 0), 0xFFFF_FFFF);
    assert_eq!(bfi(0x0, 0xFFFF_FFFF, 4, 8), 0xFFFF_F00F);
    // prmt
    assert_eq!(
        i3("prmt.b32", 0x3322_1100, 0x7766_5544, 0x5140),
        0x5511_4400
    );
    assert_eq!(i3("prmt.b32", 0x0000_8000, 0, 0x0009), 0x0000_00FF); // sign replicate of byte 1
    assert_eq!(i3("prmt.b32.f4e", 0x3322_1100, 0x7766_5544, 1), 0x4433_2211);
    assert_eq!(i3("prmt.b32.rc8", 0x3322_1100, 0x7766_5544, 2), 0x2222_2222);
    // clz / popc / brev
    assert_eq!(i1("clz.b32", 0), 32);
    assert_eq!(i1("clz.b32", 1), 31);
    assert_eq!(
        run("clz.b64 %r4, %rd1;\ncvt.u64.u32 %rd7, %r4;", 1, 0, 0).unwrap(),
        63
    );
    assert_eq!(
        run("clz.b64 %r4, %rd1;\ncvt.u64.u32 %rd7, %r4;", 0, 0, 0).unwrap(),
        64
    );
    assert_eq!(i1("popc.b32", u32::MAX), 32);
    assert_eq!(
        run(
            "popc.b64 %r4, %rd1;\ncvt.u64.u32 %rd7, %r4;",
            u64::MAX,
            0,
            0
        )
        .unwrap(),
        64
    );
    assert_eq!(i1("brev.b32", 1), 0x8000_0000);
    assert_eq!(run("brev.b64 %rd7, %rd1;", 1, 0, 0).unwrap(), 1 << 63);
}

#[test]
fn setp_selp_mov() {
    assert_eq!(setp("setp.lt.s32", u32::MAX, 1), (true, false));
    assert_eq!(setp("setp.lo.u32", u32::MAX, 1), (false, true));
    assert_eq!(setp("setp.hs.u32", u32::MAX, 1), (true, false));
    assert_eq!(setp("setp.ls.u32", 1, 1), (true, false));
    assert_eq!(setp("setp.hi.u32", 1, 1), (false, true));
    assert_eq!(setp("setp.eq.b32", 5, 5), (true, false));
    assert_eq!(setp("setp.ge.s32", 0x8000_0000, 0), (false, true));
    let nan = f32::NAN;
    assert_eq!(setpf("setp.eq.f32", nan, nan), (false, true));
    assert_eq!(setpf("setp.ne.f32", nan, 1.0), (false, true));
    assert_eq!(setpf("setp.neu.f32", nan, 1.0), (true, false));
    assert_eq!(setpf("setp.equ.f32", nan, 1.0), (true, false));
    assert_eq!(setpf("setp.ltu.f32", 2.0, 1.0), (false, true));
    assert_eq!(setpf("setp.num.f32", nan, 1.0), (false, true));
    assert_eq!(setpf("setp.nan.f32", 1.0, nan), (true, false));
    assert_eq!(setpf("setp.eq.f32", 0.0, -0.0), (true, false));
    assert_eq!(setpf("setp.lt.f32", -0.0, 0.0), (false, true));
    // bool combine: p = (a<b) AND !c ; q = (a>=b) AND !c
    let v = run(
        "setp.eq.u32 %p3, %r3, 1;\nsetp.lt.and.u32 %p1|%p2, %r1, %r2, !%p3;\nselp.u64 %rd5, 1, 0, %p1;\nselp.u64 %rd6, 2, 0, %p2;\nor.b64 %rd7, %rd5, %rd6;",
        1, 2, 0,
    )
    .unwrap();
    assert_eq!(v, 1);
    let v = run("setp.eq.u32 %p3, %r3, 1;\nsetp.lt.or.u32 %p1|%p2, %r1, %r2, %p3;\nselp.u64 %rd5, 1, 0, %p1;\nselp.u64 %rd6, 2, 0, %p2;\nor.b64 %rd7, %rd5, %rd6;", 1, 2, 1).unwrap();
    assert_eq!(v, 3);
    // selp passes bits through
    let v = run("setp.ne.u32 %p1, %r3, 0;\nselp.f32 %f4, %f1, %f2, %p1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;", 0x7FC0_0001, 2, 1).unwrap();
    assert_eq!(v, 0x7FC0_0001);
    // packing / unpacking
    let v = run(
        "mov.b32 {%h1, %h2}, %r1;\nmov.b32 %r4, {%h2, %h1};\ncvt.u64.u32 %rd7, %r4;",
        0x1234_5678,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x5678_1234);
    let v = run(
        "mov.b64 {%r4, %r5}, %rd1;\nmov.b64 %rd7, {%r5, %r4};",
        0x1111_2222_3333_4444,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x3333_4444_1111_2222);
    let v = run(
        "mov.f32 %f4, 0f3F800000;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;",
        0,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x3F80_0000);
    let v = run(
        "mov.u32 %r4, 0xFF;\nmov.u32 %r5, -1;\nadd.u32 %r4, %r4, %r5;\ncvt.u64.u32 %rd7, %r4;",
        0,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0xFE);
}

#[test]
fn cvt_float_to_int() {
    assert_eq!(cvt_f2i32("cvt.rzi.s32.f32", f32::NAN), 0);
    assert_eq!(cvt_f2i32("cvt.rzi.s32.f32", 3e9), 0x7FFF_FFFF);
    assert_eq!(cvt_f2i32("cvt.rzi.s32.f32", -3e9), 0x8000_0000);
    assert_eq!(cvt_f2i32("cvt.rzi.s32.f32", f32::INFINITY), 0x7FFF_FFFF);
    assert_eq!(cvt_f2i32("cvt.rzi.s32.f32", f32::NEG_INFINITY), 0x8000_0000);
    assert_eq!(cvt_f2i32("cvt.rzi.s32.f32", -1.9), (-1i32) as u32);
    assert_eq!(cvt_f2i32("cvt.rni.s32.f32", 2.5), 2);
    assert_eq!(cvt_f2i32("cvt.rni.s32.f32", 3.5), 4);
    assert_eq!(cvt_f2i32("cvt.rni.s32.f32", -2.5), (-2i32) as u32);
    assert_eq!(cvt_f2i32("cvt.rmi.s32.f32", -0.5), (-1i32) as u32);
    assert_eq!(cvt_f2i32("cvt.rpi.s32.f32", 0.1), 1);
    assert_eq!(cvt_f2i32("cvt.rpi.s32.f32", f32::from_bits(1)), 1);
    assert_eq!(cvt_f2i32("cvt.rpi.ftz.s32.f32", f32::from_bits(1)), 0);
    assert_eq!(cvt_f2i32("cvt.rzi.u32.f32", f32::NAN), 0);
    assert_eq!(cvt_f2i32("cvt.rzi.u32.f32", -1.5), 0);
    assert_eq!(cvt_f2i32("cvt.rzi.u32.f32", f32::INFINITY), u32::MAX);
    assert_eq!(cvt_f2i32("cvt.rzi.u32.f32", 5e9), u32::MAX);
    assert_eq!(cvt_f2i("cvt.rzi.s64.f32", f32::NAN), 0x8000_0000_0000_0000);
    assert_eq!(cvt_f2i("cvt.rzi.u64.f32", f32::NAN), 0x8000_0000_0000_0000);
    assert_eq!(cvt_f2i("cvt.rzi.s64.f32", 1e30), i64::MAX as u64);
    assert_eq!(cvt_f2i("cvt.rzi.s64.f32", -1e30), i64::MIN as u64);
    assert_eq!(cvt_f2i("cvt.rni.u64.f32", 1e30), u64::MAX);
    let v = run(
        "cvt.rzi.s32.f64 %r4, %fd1;\ncvt.u64.u32 %rd7, %r4;",
        f64::NAN.to_bits(),
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x8000_0000);
    // float -> float integer rounding
    assert_eq!(f1("cvt.rni.f32.f32", 2.5f32.to_bits()), 2.0f32.to_bits());
    assert_eq!(
        f1("cvt.rzi.f32.f32", (-2.7f32).to_bits()),
        (-2.0f32).to_bits()
    );
    assert_eq!(
        f1("cvt.rmi.f32.f32", (-0.2f32).to_bits()),
        (-1.0f32).to_bits()
    );
    assert_eq!(f1("cvt.rpi.f32.f32", (-0.2f32).to_bits()), 0x8000_0000);
    assert_eq!(f1("cvt.rni.f32.f32", 0x7FC0_0001), NAN);
}

#[test]
fn cvt_int_int_and_int_float() {
    let c = |op: &str, a: u64| run(&format!("{op};"), a, 0, 0).unwrap();
    assert_eq!(
        c("cvt.s32.s8 %r4, %r1;\ncvt.u64.u32 %rd7, %r4", 0x80),
        0xFFFF_FF80
    );
    assert_eq!(
        c("cvt.u32.u8 %r4, %r1;\ncvt.u64.u32 %rd7, %r4", 0x180),
        0x80
    );
    assert_eq!(
        c("cvt.s32.s16 %r4, %r1;\ncvt.u64.u32 %rd7, %r4", 0x8000),
        0xFFFF_8000
    );
    assert_eq!(
        c("cvt.u16.u32 %h1, %r1;\ncvt.u64.u16 %rd7, %h1", 0x12345),
        0x2345
    );
    assert_eq!(c("cvt.s64.s32 %rd7, %r1", 0xFFFF_FFFF), u64::MAX);
    assert_eq!(c("cvt.u64.u32 %rd7, %r1", 0xFFFF_FFFF), 0xFFFF_FFFF);
    assert_eq!(
        c(
            "cvt.u32.u64 %r4, %rd1;\ncvt.u64.u32 %rd7, %r4",
            0x1_0000_0005
        ),
        5
    );
    assert_eq!(
        c("cvt.s8.s32 %r4, %r1;\ncvt.u64.u32 %rd7, %r4", 0x1FF),
        0xFFFF_FFFF
    );
    assert_eq!(
        c("cvt.u8.s32 %r4, %r1;\ncvt.u64.u32 %rd7, %r4", 0x1FF),
        0xFF
    );
    assert_eq!(
        c("cvt.sat.u8.s32 %r4, %r1;\ncvt.u64.u32 %rd7, %r4", 0x1FF),
        0xFF
    );
    assert_eq!(
        c(
            "cvt.sat.u8.s32 %r4, %r1;\ncvt.u64.u32 %rd7, %r4",
            0xFFFF_FFFF
        ),
        0
    );
    let f = |op: &str, a: u64| {
        run(
            &format!("{op} %f4, %rd1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;"),
            a,
            0,
            0,
        )
        .unwrap() as u32
    };
    let g = |op: &str, a: u64| {
        run(
            &format!("{op} %f4, %r1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;"),
            a,
            0,
            0,
        )
        .unwrap() as u32
    };
    assert_eq!(g("cvt.rn.f32.u32", 0xFFFF_FFFF), 0x4F80_0000);
    assert_eq!(g("cvt.rz.f32.u32", 0xFFFF_FFFF), 0x4F7F_FFFF);
    assert_eq!(g("cvt.rm.f32.u32", 0xFFFF_FFFF), 0x4F7F_FFFF);
    assert_eq!(g("cvt.rp.f32.u32", 0x0100_0001), 0x4B80_0001);
    assert_eq!(g("cvt.rn.f32.u32", 0x0100_0001), 0x4B80_0000); // tie to even
    assert_eq!(g("cvt.rn.f32.u32", 0x0100_0003), 0x4B80_0002);
    assert_eq!(g("cvt.rn.f32.s32", 0xFFFF_FFFF), MONE);
    assert_eq!(g("cvt.rz.f32.s32", 0x8000_0001), 0xCEFF_FFFF);
    assert_eq!(f("cvt.rn.f32.u64", u64::MAX), 0x5F80_0000);
    // double rounding trap: 2^53 + 2^29 + 1 is just above an f32 midpoint,
    // but its f64 rounding lands exactly on it
    assert_eq!(f("cvt.rn.f32.u64", (1 << 53) + (1 << 29) + 1), 0x5A00_0001);
    assert_eq!(f("cvt.rn.f32.u64", (1 << 53) + (1 << 29)), 0x5A00_0000);
    assert_eq!(f("cvt.rn.f32.u64", (1 << 53) + (1 << 29) * 3), 0x5A00_0002);
    assert_eq!(f("cvt.rz.f32.u64", u64::MAX), 0x5F7F_FFFF);
    assert_eq!(f("cvt.rm.f32.s64", (-(1i64 << 40) - 1) as u64), 0xD380_0001);
    assert_eq!(f("cvt.rp.f32.s64", (-(1i64 << 40) - 1) as u64), 0xD380_0000);
}

#[test]
fn cvt_f16_fp8_fp4() {
    let h = |x: f32, op: &str| {
        run(
            &format!("{op} %h1, %f1;\ncvt.u64.u16 %rd7, %h1;"),
            x.to_bits() as u64,
            0,
            0,
        )
        .unwrap()
    };
    assert_eq!(h(1.0, "cvt.rn.f16.f32"), 0x3C00);
    assert_eq!(h(65520.0, "cvt.rn.f16.f32"), 0x7C00);
    assert_eq!(h(65520.0, "cvt.rz.f16.f32"), 0x7BFF);
    assert_eq!(h(f32::NAN, "cvt.rn.f16.f32"), 0x7FFF);
    assert_eq!(h(-0.0, "cvt.rn.f16.f32"), 0x8000);
    assert_eq!(h(1e-8, "cvt.rn.f16.f32"), 0x0000);
    assert_eq!(h(6e-8, "cvt.rn.f16.f32"), 0x0001);
    let v = run(
        "cvt.u16.u32 %h1, %r1;\ncvt.f32.f16 %f4, %h1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;",
        0x0001,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x3380_0000); // 2^-24
    let v = run(
        "cvt.u16.u32 %h1, %r1;\ncvt.f32.f16 %f4, %h1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;",
        0xFC00,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0xFF80_0000);
    // FP8 pair: d[15:8] = cvt(a), d[7:0] = cvt(b)
    let p = |op: &str, a: f32, b: f32| {
        run(
            &format!("{op} %h1, %f1, %f2;\ncvt.u64.u16 %rd7, %h1;"),
            a.to_bits() as u64,
            b.to_bits() as u64,
            0,
        )
        .unwrap()
    };
    assert_eq!(p("cvt.rn.satfinite.e4m3x2.f32", 448.0, -0.0), 0x7E80);
    assert_eq!(p("cvt.rn.satfinite.e4m3x2.f32", 464.0, 480.0), 0x7E7E);
    assert_eq!(
        p(
            "cvt.rn.satfinite.e4m3x2.f32",
            f32::INFINITY,
            f32::NEG_INFINITY
        ),
        0x7EFE
    );
    assert_eq!(p("cvt.rn.satfinite.e4m3x2.f32", f32::NAN, f32::MAX), 0x7F7E);
    assert_eq!(
        p("cvt.rn.satfinite.e4m3x2.f32", 2f32.powi(-6), 2f32.powi(-10)),
        0x0800
    );
    assert_eq!(p("cvt.rn.satfinite.e4m3x2.f32", 1.0, 1.0625), 0x3838); // 1.0625 tie -> even 1.0
    assert_eq!(
        p("cvt.rn.satfinite.e4m3x2.f32", 1.1875, 2f32.powi(-9)),
        0x3A01
    ); // 1.1875 tie between 1.125 (odd) and 1.25
    assert_eq!(p("cvt.rn.satfinite.relu.e4m3x2.f32", -3.0, 3.0), 0x0044);
    assert_eq!(
        p("cvt.rn.satfinite.e5m2x2.f32", 57344.0, f32::INFINITY),
        0x7B7B
    );
    assert_eq!(p("cvt.rn.satfinite.e5m2x2.f32", 1.0, -1.0), 0x3CBC);
    // decode: d[31:16] = f16(a[15:8])
    let d = |op: &str, a: u64| {
        run(
            &format!("cvt.u16.u32 %h1, %r1;\n{op} %r4, %h1;\ncvt.u64.u32 %rd7, %r4;"),
            a,
            0,
            0,
        )
        .unwrap()
    };
    assert_eq!(d("cvt.rn.f16x2.e4m3x2", 0x7E80), 0x5F00_8000);
    assert_eq!(d("cvt.rn.f16x2.e4m3x2", 0x7F01), 0x7FFF_1800); // NaN; 2^-9
    assert_eq!(d("cvt.rn.f16x2.e5m2x2", 0x7C3C), 0x7C00_3C00);
    // FP4 (e2m1x2) and UE8M0: tests/sim_block_scale.rs (sm_100a/sm_120a only)
}

#[test]
fn fp8_requires_sm89_and_redux_sm80() {
    let ptx = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b16 %h<2>;\n.reg .f32 %f<3>;\nmov.f32 %f1, 0f00000000;\ncvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f1;\nret;\n}\n";
    match Program::parse(ptx) {
        Err(SimError::Unsupported { line, .. }) => assert_eq!(line, 9),
        r => panic!("{r:?}"),
    }
    let ptx = ".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<3>;\nmov.u32 %r1, 1;\nredux.sync.add.u32 %r2, %r1, 0xffffffff;\nret;\n}\n";
    match Program::parse(ptx) {
        Err(SimError::Unsupported { line, instr, .. }) => {
            assert_eq!(line, 8);
            assert!(instr.contains("redux.sync"));
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn memory_vectors_narrow_and_generic() {
    // st.v4 then ld.v2 / narrow signed loads / generic access to shared
    let body = "mov.u32 %r4, 0x80;\nmov.u32 %r5, 0xFFFF;\nmov.u32 %r6, 3;\nmov.u32 %r7, 4;\n\
        st.shared.v4.u32 [buf], {%r4, %r5, %r6, %r7};\n\
        ld.shared.s8 %r1, [buf];\nld.shared.s16 %r2, [buf+4];\nld.shared.v2.u32 {%r3, %r6}, [buf+8];\n\
        mov.u64 %rd5, buf;\ncvta.shared.u64 %rd5, %rd5;\nld.u32 %r7, [%rd5+12];\n\
        add.u32 %r1, %r1, %r2;\nadd.u32 %r1, %r1, %r3;\nadd.u32 %r1, %r1, %r6;\nadd.u32 %r1, %r1, %r7;\ncvt.u64.u32 %rd7, %r1;";
    let ptx_body = format!(".shared .align 16 .b8 buf[64];\n{body}");
    // 0xFFFFFF80 + 0xFFFFFFFF + 3 + 4 + 4 = 0x80+... compute: -128 - 1 + 11 = -118
    assert_eq!(run(&ptx_body, 0, 0, 0).unwrap() as u32, (-118i32) as u32);
}

#[test]
fn vector_store_with_immediates() {
    let body = ".shared .align 16 .b8 buf[16];\nst.shared.v4.u32 [buf], {1, 2, 0xFFFFFFFF, %r1};\n\
                ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [buf];\nadd.u32 %r4, %r4, %r5;\nadd.u32 %r4, %r4, %r6;\nadd.u32 %r4, %r4, %r7;\ncvt.u64.u32 %rd7, %r4;";
    assert_eq!(run(body, 10, 0, 0).unwrap(), 12);
    // a `.shared::cluster` store to the CTA's own variable (sm_90+: the
    // CTA runs as its own cluster of one; `tests/sim_cluster.rs`)
    let body = ".shared .align 16 .b8 buf[16];\nst.shared::cluster.u32 [buf], %r1;\n\
                ld.shared.u32 %r4, [buf];\ncvt.u64.u32 %rd7, %r4;";
    assert_eq!(run(body, 7, 0, 0).unwrap(), 7);
}

#[test]
fn local_const_and_16bit_float_packs() {
    // .local frame per thread, ld/st.local, out-of-bounds local
    let body = ".local .align 8 .b8 frame[16];\nst.local.u32 [frame+4], %r1;\nst.local.u64 [frame+8], %rd2;\n\
                ld.local.u32 %r4, [frame+4];\nld.local.u64 %rd7, [frame+8];\ncvt.u64.u32 %rd6, %r4;\nadd.u64 %rd7, %rd7, %rd6;";
    assert_eq!(run(body, 5, 100, 0).unwrap(), 105);
    let body = ".local .align 8 .b8 frame[16];\nst.local.u32 [frame+16], %r1;\nmov.u64 %rd7, 0;";
    assert!(matches!(
        run(body, 5, 100, 0),
        Err(SimError::OutOfBounds { .. })
    ));
    // module-scope .const with an initialiser
    let ptx = format!(
        "{HEAD}.const .align 4 .u32 tbl[4] = {{10, 20, 30, 0xFFFFFFFF}};\n.visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n\
         ld.param.u64 %rd0, [out];\nld.const.u32 %r1, [tbl+8];\nld.const.u32 %r2, [tbl+12];\nadd.u32 %r1, %r1, %r2;\nst.global.u32 [%rd0], %r1;\nret;\n}}\n"
    );
    let prog = Program::parse(&ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm120);
    let out = sim.alloc(4).unwrap();
    sim.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(1, 1),
        &[ArgValue::Ptr(out)],
    )
    .unwrap();
    let mut o = [0u8; 4];
    sim.read(out, &mut o).unwrap();
    assert_eq!(u32::from_le_bytes(o), 29);
    // f16x2 / bf16
    let v = run(
        "cvt.rn.f16x2.f32 %r4, %f1, %f2;\ncvt.u64.u32 %rd7, %r4;",
        1.0f32.to_bits() as u64,
        (-2.0f32).to_bits() as u64,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x3C00_C000);
    let v = run(
        "cvt.rn.bf16.f32 %h1, %f1;\ncvt.u64.u16 %rd7, %h1;",
        0x3F80_8000,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0x3F80);
    let v = run(
        "cvt.u16.u32 %h1, %r1;\ncvt.f32.bf16 %f4, %h1;\nmov.b32 %r4, %f4;\ncvt.u64.u32 %rd7, %r4;",
        0xC040,
        0,
        0,
    )
    .unwrap();
    assert_eq!(v, 0xC040_0000);
}

#[test]
fn atomics_and_reductions() {
    // out[0] starts at 5; each op returns the old value into a running xor of olds
    let t = |op: &str, init: u32, b: u32| -> (u32, u32) {
        let ptx = format!(
            "{HEAD}.visible .entry k(.param .u64 out, .param .u32 b)\n{{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n\
             ld.param.u64 %rd0, [out];\nld.param.u32 %r1, [b];\n{op}\nst.global.u32 [%rd0+4], %r2;\nret;\n}}\n"
        );
        let prog = Program::parse(&ptx).unwrap();
        let mut sim = Sim::new(Sm::Sm120);
        let out = sim.alloc(8).unwrap();
        sim.write(out, &init.to_le_bytes()).unwrap();
        sim.launch_program(
            &prog,
            "k",
            LaunchConfig::linear(1, 1),
            &[ArgValue::Ptr(out), ArgValue::U32(b)],
        )
        .unwrap();
        let mut o = [0u8; 8];
        sim.read(out, &mut o).unwrap();
        (
            u32::from_le_bytes(o[..4].try_into().unwrap()),
            u32::from_le_bytes(o[4..].try_into().unwrap()),
        )
    };
    assert_eq!(t("atom.global.add.u32 %r2, [%rd0], %r1;", 5, 3), (8, 5));
    assert_eq!(t("atom.global.inc.u32 %r2, [%rd0], %r1;", 5, 5), (0, 5));
    assert_eq!(t("atom.global.inc.u32 %r2, [%rd0], %r1;", 4, 5), (5, 4));
    assert_eq!(t("atom.global.dec.u32 %r2, [%rd0], %r1;", 0, 7), (7, 0));
    assert_eq!(t("atom.global.dec.u32 %r2, [%rd0], %r1;", 9, 7), (7, 9));
    assert_eq!(t("atom.global.dec.u32 %r2, [%rd0], %r1;", 3, 7), (2, 3));
    assert_eq!(
        t("atom.global.min.s32 %r2, [%rd0], %r1;", 5, u32::MAX),
        (u32::MAX, 5)
    );
    assert_eq!(
        t("atom.global.min.u32 %r2, [%rd0], %r1;", 5, u32::MAX),
        (5, 5)
    );
    assert_eq!(t("atom.global.max.u32 %r2, [%rd0], %r1;", 5, 9), (9, 5));
    assert_eq!(t("atom.global.exch.b32 %r2, [%rd0], %r1;", 5, 9), (9, 5));
    assert_eq!(t("atom.global.cas.b32 %r2, [%rd0], 5, %r1;", 5, 9), (9, 5));
    assert_eq!(t("atom.global.cas.b32 %r2, [%rd0], 4, %r1;", 5, 9), (5, 5));
    assert_eq!(t("atom.global.and.b32 %r2, [%rd0], %r1;", 6, 3), (2, 6));
    assert_eq!(t("atom.global.or.b32 %r2, [%rd0], %r1;", 6, 3), (7, 6));
    assert_eq!(t("atom.global.xor.b32 %r2, [%rd0], %r1;", 6, 3), (5, 6));
    assert_eq!(
        t("red.global.add.u32 [%rd0], %r1;\nmov.u32 %r2, 0;", 6, 3),
        (9, 0)
    );
    // atom.add.f32 on .global flushes subnormals (no .noftz)
    assert_eq!(
        t(
            "mov.b32 %r3, 1;\nmov.b32 %r1, 1;\natom.global.add.f32 %r2, [%rd0], %r1;",
            1,
            1
        )
        .0,
        0
    );
    assert_eq!(
        t(
            "atom.global.add.f32 %r2, [%rd0], %r1;",
            0x3F80_0000,
            0x3F80_0000
        ),
        (0x4000_0000, 0x3F80_0000)
    );
}

#[test]
fn cvta_round_trip_shared() {
    let body = ".shared .align 4 .b8 buf[64];\nmov.u32 %r4, buf;\nadd.u32 %r4, %r4, 8;\nst.shared.u32 [%r4], %r1;\n\
                cvt.u64.u32 %rd4, %r4;\ncvta.shared.u64 %rd5, %rd4;\nld.u32 %r5, [%rd5];\ncvta.to.shared.u32 %r6, %rd5;\n\
                ld.shared.u32 %r7, [%r6];\nadd.u32 %r5, %r5, %r7;\ncvt.u64.u32 %rd7, %r5;";
    assert_eq!(run(body, 21, 0, 0).unwrap(), 42);
}
