//! `.func` device functions and `call` in the simulator, on PTX shaped as
//! NVRTC 12.9 emits it (callseq blocks, `.param` frames, `func_retval0`).

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimError, SimOptions};

const HEAD: &str = ".version 8.7\n.target sm_80\n.address_size 64\n";

/// `int add(int a, int b) { return a + b; }` as NVRTC writes it.
const ADD: &str = r#"
.func  (.param .b32 func_retval0) _Z3addii(
	.param .b32 _Z3addii_param_0,
	.param .b32 _Z3addii_param_1
)
{
	.reg .b32 	%r<4>;
	ld.param.u32 	%r1, [_Z3addii_param_0];
	ld.param.u32 	%r2, [_Z3addii_param_1];
	add.s32 	%r3, %r2, %r1;
	st.param.b32 	[func_retval0+0], %r3;
	ret;
}
"#;

/// Run entry `k(out, n)` of `ptx` on `threads` threads (one block) with
/// the lockstep schedule on and off; both must agree. Returns `out` as
/// `n` u32 words.
fn run(ptx: &str, threads: u32, n: usize) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(ptx)?;
    let on = launch(&prog, threads, n, true);
    let off = launch(&prog, threads, n, false);
    match (&on, &off) {
        (Ok(x), Ok(y)) => assert_eq!(x, y, "lockstep vs thread order"),
        (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
        _ => panic!("lockstep {on:?}, thread order {off:?}"),
    }
    on
}

fn launch(prog: &Program, threads: u32, n: usize, lockstep: bool) -> Result<Vec<u32>, SimError> {
    let mut sim = Sim::new(Sm::Sm80);
    sim.set_options(SimOptions {
        lockstep,
        ..Default::default()
    });
    let out = sim.alloc(4 * n).unwrap();
    sim.write(out, &vec![0u8; 4 * n]).unwrap();
    sim.launch_program(
        prog,
        "k",
        LaunchConfig::linear(1, threads),
        &[ArgValue::Ptr(out), ArgValue::U32(n as u32)],
    )?;
    let mut o = vec![0u8; 4 * n];
    sim.read(out, &mut o).unwrap();
    Ok(o.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// An entry `k(out, n)` whose body computes `%r5 = tid`, `%r6 = tid*3` and
/// `%rd3` = &out[tid], followed by `body`.
fn entry(body: &str) -> String {
    format!(
        ".visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd2, %rd1;\n\
         mov.u32 %r5, %tid.x;\nmul.lo.s32 %r6, %r5, 3;\nmul.wide.u32 %rd4, %r5, 4;\nadd.s64 %rd3, %rd2, %rd4;\n\
         {body}\nret;\n}}\n"
    )
}

#[test]
fn a_call_returns_its_value() {
    let body = "{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0+0], %r5;
	.param .b32 param1;
	st.param.b32 	[param1+0], %r6;
	.param .b32 retval0;
	call.uni (retval0),
	_Z3addii,
	(
	param0,
	param1
	);
	ld.param.b32 	%r7, [retval0+0];
	} // callseq 0
	st.global.u32 [%rd3], %r7;";
    let ptx = format!("{HEAD}{ADD}{}", entry(body));
    let got = run(&ptx, 64, 64).unwrap();
    let want: Vec<u32> = (0..64).map(|t| t * 4).collect();
    assert_eq!(got, want);
}

/// `struct P { int a; float b; long c; }` by value in and out:
/// `P twist(P p, int k) { return P{p.a * k, p.b, p.c + p.a}; }`, with a
/// `.local` scratch array of its own and an early `ret` when `k == 0`.
const TWIST: &str = r#"
.func  (.param .align 8 .b8 func_retval0[16]) twist(
	.param .align 8 .b8 twist_param_0[16],
	.param .b32 twist_param_1
)
{
	.local .align 4 .b8 	__local_depot1[8];
	.reg .b64 	%SP;
	.reg .b64 	%SPL;
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	mov.u64 	%SPL, __local_depot1;
	ld.param.u32 	%r1, [twist_param_0];
	ld.param.u32 	%r2, [twist_param_0+4];
	ld.param.u64 	%rd1, [twist_param_0+8];
	ld.param.u32 	%r3, [twist_param_1];
	setp.ne.s32 	%p1, %r3, 0;
	@%p1 bra 	$L__BB1_2;
	st.param.b32 	[func_retval0+0], %r1;
	st.param.b32 	[func_retval0+4], %r2;
	st.param.b64 	[func_retval0+8], %rd1;
	ret;
$L__BB1_2:
	mul.lo.s32 	%r4, %r1, %r3;
	st.local.u32 	[%SPL+4], %r4;
	ld.local.u32 	%r5, [%SPL+4];
	cvt.s64.s32 	%rd2, %r1;
	add.s64 	%rd3, %rd1, %rd2;
	st.param.b32 	[func_retval0+0], %r5;
	st.param.b32 	[func_retval0+4], %r2;
	st.param.b64 	[func_retval0+8], %rd3;
	ret;
}
"#;

#[test]
fn struct_parameters_and_returns_travel_by_pieces() {
    // out[t] = twist({t, bits 0x3f800000, 1000}, t % 3).a + .c (low word),
    // the float passed through untouched
    let body = "{
	.param .align 8 .b8 param0[16];
	st.param.b32 	[param0+0], %r5;
	mov.b32 %r8, 0x3f800000;
	st.param.b32 	[param0+4], %r8;
	mov.u64 %rd5, 1000;
	st.param.b64 	[param0+8], %rd5;
	.param .b32 param1;
	rem.u32 %r9, %r5, 3;
	st.param.b32 	[param1+0], %r9;
	.param .align 8 .b8 retval0[16];
	call.uni (retval0), twist, (param0, param1);
	ld.param.b32 	%r10, [retval0+0];
	ld.param.b32 	%r11, [retval0+4];
	ld.param.b64 	%rd6, [retval0+8];
	}
	cvt.u32.u64 %r12, %rd6;
	add.s32 %r13, %r10, %r12;
	sub.s32 %r13, %r13, %r11;
	st.global.u32 [%rd3], %r13;";
    let ptx = format!("{HEAD}{TWIST}{}", entry(body));
    let got = run(&ptx, 40, 40).unwrap();
    let want: Vec<u32> = (0..40u32)
        .map(|t| {
            let k = t % 3;
            let (a, c) = if k == 0 { (t, 1000) } else { (t * k, 1000 + t) };
            a.wrapping_add(c).wrapping_sub(0x3f80_0000)
        })
        .collect();
    assert_eq!(got, want);
}

/// `sq(x) = x*x` called twice by `sumsq(a, b)`, which the entry calls
/// only on odd threads (`@%p call`, no `.uni`); even threads keep 7.
const NESTED: &str = r#"
.func  (.param .b32 func_retval0) sq(.param .b32 sq_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [sq_param_0];
	mul.lo.s32 	%r2, %r1, %r1;
	st.param.b32 	[func_retval0+0], %r2;
	ret;
}
.func  (.param .b32 func_retval0) sumsq(.param .b32 sumsq_param_0, .param .b32 sumsq_param_1)
{
	.reg .b32 	%r<6>;
	ld.param.u32 	%r1, [sumsq_param_0];
	ld.param.u32 	%r2, [sumsq_param_1];
	{ // callseq 1, 0
	.param .b32 param0;
	st.param.b32 	[param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), sq, (param0);
	ld.param.b32 	%r3, [retval0+0];
	} // callseq 1
	{ // callseq 2, 0
	.param .b32 param0;
	st.param.b32 	[param0+0], %r2;
	.param .b32 retval0;
	call.uni (retval0), sq, (param0);
	ld.param.b32 	%r4, [retval0+0];
	} // callseq 2
	add.s32 	%r5, %r3, %r4;
	st.param.b32 	[func_retval0+0], %r5;
	ret;
}
"#;

const NESTED_CALL: &str = "mov.u32 %r7, 7;
	and.b32 %r8, %r5, 1;
	setp.eq.s32 %p1, %r8, 1;
	{
	.param .b32 param0;
	st.param.b32 	[param0+0], %r5;
	.param .b32 param1;
	st.param.b32 	[param1+0], %r6;
	.param .b32 retval0;
	@%p1 call (retval0), sumsq, (param0, param1);
	@%p1 ld.param.b32 	%r7, [retval0+0];
	}
	st.global.u32 [%rd3], %r7;";

#[test]
fn nested_and_divergent_calls() {
    let ptx = format!("{HEAD}{NESTED}{}", entry(NESTED_CALL));
    let got = run(&ptx, 64, 64).unwrap();
    let want: Vec<u32> = (0..64u32)
        .map(|t| if t % 2 == 1 { t * t + 9 * t * t } else { 7 })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_finding_inside_a_callee_names_the_callee_line() {
    // sq reads %r2 before writing it
    let bad = NESTED.replace("mul.lo.s32 \t%r2, %r1, %r1;", "mul.lo.s32 \t%r2, %r1, %r2;");
    assert_ne!(bad, NESTED);
    let ptx = format!("{HEAD}{bad}{}", entry(NESTED_CALL));
    let line = ptx.lines().position(|l| l.contains("%r1, %r2;")).unwrap() as u32 + 1;
    match run(&ptx, 64, 64).unwrap_err() {
        SimError::UninitializedRegister { site, reg } => {
            assert_eq!(site.line, line, "{site}");
            assert_eq!(site.tid, (1, 0, 0));
            assert!(reg.starts_with("%r2@sq#"), "{reg}");
        }
        e => panic!("{e}"),
    }
}

/// `unsigned fact(unsigned n) { return n < 2 ? 1 : n * fact(n - 1); }`
/// in NVRTC's form.
const FACT: &str = r#"
.func  (.param .b32 func_retval0) fact(
	.param .b32 fact_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	ld.param.u32 	%r1, [fact_param_0];
	setp.lt.u32 	%p1, %r1, 2;
	@%p1 bra 	$L__base;
	add.s32 	%r2, %r1, -1;
	{ // callseq 0, 0
	.param .b32 param0;
	st.param.b32 	[param0+0], %r2;
	.param .b32 retval0;
	call.uni (retval0), fact, (param0);
	ld.param.b32 	%r3, [retval0+0];
	} // callseq 0
	mul.lo.s32 	%r4, %r3, %r1;
	st.param.b32 	[func_retval0+0], %r4;
	ret;
$L__base:
	mov.u32 	%r5, 1;
	st.param.b32 	[func_retval0+0], %r5;
	ret;
}
"#;

/// `out[tid] = fact(tid % m)` for the entry of [`entry`].
fn fact_of_tid(m: u32) -> String {
    entry(&format!(
        "rem.u32 %r7, %r5, {m};
{{
.param .b32 param0;
st.param.b32 [param0+0], %r7;
         .param .b32 retval0;
call.uni (retval0), fact, (param0);
ld.param.b32 %r8, [retval0+0];
}}
         st.global.u32 [%rd3], %r8;"
    ))
}

#[test]
fn recursion_runs_to_the_depth_limit_then_traps() {
    // Divergent recursion depths across the warp, bit-exact.
    let ptx = format!("{HEAD}{FACT}{}", fact_of_tid(13));
    let want: Vec<u32> = (0..64u32)
        .map(|t| (1..=t % 13).fold(1u32, |a, k| a.wrapping_mul(k)))
        .collect();
    assert_eq!(run(&ptx, 64, 64).unwrap(), want);
    // 32 activations of `fact` are the limit: fact(32) needs 32 nested
    // calls (it runs), fact(33) one more (a trap at the call's line).
    let ptx = format!("{HEAD}{FACT}{}", fact_of_tid(34));
    let want: Vec<u32> = (0..33u32)
        .map(|t| (1..=t).fold(1u32, |a, k| a.wrapping_mul(k)))
        .collect();
    assert_eq!(run(&ptx, 33, 33).unwrap(), want);
    match run(&ptx, 34, 34).unwrap_err() {
        SimError::Trap { site, message } => {
            assert!(message.contains("recursion depth"), "{message}");
            assert_eq!(site.tid.0, 33);
            assert!(site.instr.contains("call"), "{site}");
        }
        e => panic!("{e}"),
    }
}

const VPRINTF_DECL: &str = "
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
";

const ASSERT_DECL: &str = "
.extern .func __assertfail
(
	.param .b64 __assertfail_param_0,
	.param .b64 __assertfail_param_1,
	.param .b32 __assertfail_param_2,
	.param .b64 __assertfail_param_3,
	.param .b64 __assertfail_param_4
)
.noreturn;
";

/// `k(strings, out)`: each thread prints `fmt0` with (tid, tid/4 as a
/// double, strings+48 as `%s`), then after a `bar.sync` the odd threads
/// print `fmt1` with (ctaid, -tid as a long); the format strings are in
/// the `strings` buffer (at 0 and 32), as a real module has them in a
/// `.global` array. `out[gtid]` gets the first printf's return value.
const PRINTF_KERNEL: &str = r#"
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
	.local .align 8 .b8 	__local_depot0[24];
	.reg .b64 	%SP;
	.reg .b64 	%SPL;
	.reg .pred 	%p<2>;
	.reg .b32 	%r<12>;
	.reg .f64 	%fd<2>;
	.reg .b64 	%rd<16>;
	mov.u64 	%SPL, __local_depot0;
	cvta.local.u64 	%SP, %SPL;
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd9, [k_param_1];
	cvta.to.global.u64 	%rd10, %rd9;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r9, %ntid.x;
	mad.lo.s32 	%r10, %r2, %r9, %r1;
	cvt.rn.f64.u32 	%fd1, %r1;
	mul.rn.f64 	%fd1, %fd1, 0d3FD0000000000000;
	add.s64 	%rd4, %rd1, 48;
	add.u64 	%rd2, %SP, 0;
	add.u64 	%rd3, %SPL, 0;
	st.local.u32 	[%rd3], %r1;
	st.local.f64 	[%rd3+8], %fd1;
	st.local.u64 	[%rd3+16], %rd4;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd1;
	.param .b64 param1;
	st.param.b64 	[param1+0], %rd2;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	ld.param.b32 	%r3, [retval0+0];
	} // callseq 0
	mul.wide.u32 	%rd11, %r10, 4;
	add.s64 	%rd12, %rd10, %rd11;
	st.global.u32 	[%rd12], %r3;
	bar.sync 	0;
	and.b32 	%r4, %r1, 1;
	setp.eq.s32 	%p1, %r4, 0;
	@%p1 bra 	$L__BB0_2;
	neg.s32 	%r5, %r1;
	cvt.s64.s32 	%rd5, %r5;
	st.local.u32 	[%rd3], %r2;
	st.local.u64 	[%rd3+8], %rd5;
	add.s64 	%rd6, %rd1, 32;
	{ // callseq 1, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd6;
	.param .b64 param1;
	st.param.b64 	[param1+0], %rd2;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	} // callseq 1
$L__BB0_2:
	ret;
}
"#;

/// A buffer of 64-byte-aligned NUL-terminated strings at 0, 32, 48, …
fn strings(parts: &[(usize, &str)]) -> Vec<u8> {
    let mut b = vec![0u8; 128];
    for (at, s) in parts {
        b[*at..*at + s.len()].copy_from_slice(s.as_bytes());
    }
    b
}

#[test]
fn printf_output_is_captured_in_block_then_thread_order() {
    let ptx = format!("{HEAD}{VPRINTF_DECL}{PRINTF_KERNEL}");
    let prog = Program::parse(&ptx).unwrap();
    let text = strings(&[(0, "t%d x=%.2f %s\n"), (32, "b%u %ld\n"), (48, "ok")]);
    let (blocks, threads) = (2u32, 4u32);
    let mut want = String::new();
    for b in 0..blocks {
        for t in 0..threads {
            want += &format!("t{t} x={:.2} ok\n", t as f64 / 4.0);
            if t % 2 == 1 {
                want += &format!("b{b} -{t}\n");
            }
        }
    }
    for lockstep in [true, false] {
        for nthreads in [1, 3] {
            let mut sim = Sim::new(Sm::Sm80);
            sim.set_options(SimOptions {
                lockstep,
                threads: nthreads,
                ..Default::default()
            });
            let s = sim.alloc(text.len()).unwrap();
            sim.write(s, &text).unwrap();
            let n = (blocks * threads) as usize;
            let out = sim.alloc(4 * n).unwrap();
            let r = sim
                .launch_program(
                    &prog,
                    "k",
                    LaunchConfig::linear(blocks, threads),
                    &[ArgValue::Ptr(s), ArgValue::Ptr(out)],
                )
                .unwrap();
            assert_eq!(r.printf, want);
            let mut o = vec![0u8; 4 * n];
            sim.read(out, &mut o).unwrap();
            assert!(o.chunks(4).all(|c| c == 3u32.to_le_bytes()), "{o:?}");
        }
    }
}

#[test]
fn printf_reads_are_checked() {
    // the %s pointer runs past the strings' allocation: no NUL in it
    let ptx = format!("{HEAD}{VPRINTF_DECL}{PRINTF_KERNEL}");
    let prog = Program::parse(&ptx).unwrap();
    let mut text = strings(&[(0, "t%d x=%.2f %s\n"), (32, "b%u %ld\n")]);
    text[48..].fill(b'z');
    let mut sim = Sim::new(Sm::Sm80);
    let s = sim.alloc(text.len()).unwrap();
    sim.write(s, &text).unwrap();
    let out = sim.alloc(16).unwrap();
    let e = sim
        .launch_program(
            &prog,
            "k",
            LaunchConfig::linear(1, 4),
            &[ArgValue::Ptr(s), ArgValue::Ptr(out)],
        )
        .unwrap_err();
    match e {
        SimError::OutOfBounds { site, addr, .. } => {
            assert_eq!(addr, s + 128);
            assert!(site.instr.contains("vprintf"), "{site}");
        }
        e => panic!("{e}"),
    }
}

/// `k(strings)`: thread 5 (`4·tid.y + tid.x`) of each block fails `assert(x < 5)`; the
/// strings are at 0 (message), 32 (file), 48 (function).
const ASSERT_KERNEL: &str = r#"
.visible .entry k(.param .u64 k_param_0)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %tid.y;
	mad.lo.s32 	%r1, %r2, 4, %r1;
	setp.lt.u32 	%p1, %r1, 5;
	@%p1 bra 	$L__BB0_2;
	add.s64 	%rd5, %rd1, 32;
	mov.u32 	%r3, 12;
	add.s64 	%rd6, %rd1, 48;
	mov.u64 	%rd7, 1;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd1;
	.param .b64 param1;
	st.param.b64 	[param1+0], %rd5;
	.param .b32 param2;
	st.param.b32 	[param2+0], %r3;
	.param .b64 param3;
	st.param.b64 	[param3+0], %rd6;
	.param .b64 param4;
	st.param.b64 	[param4+0], %rd7;
	call.uni
	__assertfail,
	(
	param0,
	param1,
	param2,
	param3,
	param4
	);
	} // callseq 0
$L__BB0_2:
	ret;
}
"#;

#[test]
fn a_failed_assert_is_a_typed_error_with_the_devices_message() {
    let ptx = format!("{HEAD}{ASSERT_DECL}{ASSERT_KERNEL}");
    let prog = Program::parse(&ptx).unwrap();
    let text = strings(&[(0, "x < 5"), (32, "t.cu"), (48, "void k(int *)")]);
    let mut sim = Sim::new(Sm::Sm80);
    let s = sim.alloc(text.len()).unwrap();
    sim.write(s, &text).unwrap();
    let cfg = LaunchConfig {
        grid: (2, 1, 1),
        block: (4, 2, 1),
        dynamic_smem_bytes: 0,
    };
    let e = sim
        .launch_program(&prog, "k", cfg, &[ArgValue::Ptr(s)])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.cu:12: void k(int *): block: [0,0,0], thread: [1,1,0] Assertion `x < 5` failed."
    );
    match e {
        SimError::Assert {
            site,
            message,
            file,
            line,
            function,
        } => {
            assert_eq!(
                (message.as_str(), file.as_str(), line),
                ("x < 5", "t.cu", 12)
            );
            assert_eq!(function, "void k(int *)");
            assert_eq!(site.kernel, "k");
            assert!(site.instr.starts_with("call.uni"), "{}", site.instr);
        }
        e => panic!("{e}"),
    }
    // with 5 threads nobody asserts
    sim.launch_program(&prog, "k", LaunchConfig::linear(2, 5), &[ArgValue::Ptr(s)])
        .unwrap();
}

#[test]
fn other_external_functions_are_refused_only_when_called() {
    let decl = "\n.extern .func  (.param .b32 func_retval0) cudaGetDevice(.param .b64 p0);\n";
    let ok = format!(
        "{HEAD}{decl}{ASSERT_DECL}{VPRINTF_DECL}{}",
        entry("st.global.u32 [%rd3], %r5;")
    );
    assert_eq!(run(&ok, 4, 4).unwrap(), [0, 1, 2, 3]);
    let body = "{
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd1;
	.param .b32 retval0;
	call.uni (retval0), cudaGetDevice, (param0);
	}";
    let bad = format!("{HEAD}{decl}{}", entry(body));
    match Program::parse(&bad).unwrap_err() {
        SimError::Unsupported { reason, instr, .. } => {
            assert!(reason.contains("`cudaGetDevice`"), "{reason}");
            assert!(instr.starts_with("call.uni"), "{instr}");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn indirect_calls_are_refused() {
    let body = "{
	.param .b32 param0;
	st.param.b32 	[param0+0], %r5;
	.param .b32 retval0;
	prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
	call (retval0), %rd1, (param0), prototype_0;
	}";
    let ptx = format!("{HEAD}{}", entry(body));
    match Program::parse(&ptx).unwrap_err() {
        SimError::Unsupported { reason, .. } => assert!(reason.contains("indirect"), "{reason}"),
        e => panic!("{e}"),
    }
}

/// `tests/data/ptx/nvrtc_calls.cu` as NVRTC 12.9 compiles it, optimised
/// and with `-G` (every function kept, `.loc` lines, debug sections).
const NVRTC: [(&str, &str); 2] = [
    ("O3", include_str!("data/ptx/nvrtc_calls_O3.ptx")),
    ("G", include_str!("data/ptx/nvrtc_calls_G.ptx")),
];

/// Run NVRTC's `k(out, out2, text, limit)` on 64 threads.
fn run_nvrtc(ptx: &str, limit: u32) -> Result<(Vec<u32>, Vec<u64>, String), SimError> {
    let prog = Program::parse(ptx)?;
    let mut text = vec![0u8; 128];
    for (at, s) in [
        (0, "t%d r=%d b=%.1f c=%lld\n"),
        (64, "t < limit"),
        (96, "t.cu"),
        (112, "k"),
    ] {
        text[at..at + s.len()].copy_from_slice(s.as_bytes());
    }
    let mut sim = Sim::new(Sm::Sm80);
    let t = sim.alloc(text.len()).unwrap();
    sim.write(t, &text).unwrap();
    let out = sim.alloc(4 * 64).unwrap();
    let out2 = sim.alloc(8 * 64).unwrap();
    let r = sim.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(1, 64),
        &[
            ArgValue::Ptr(out),
            ArgValue::Ptr(out2),
            ArgValue::Ptr(t),
            ArgValue::U32(limit),
        ],
    )?;
    let mut o = vec![0u8; 4 * 64];
    sim.read(out, &mut o).unwrap();
    let mut o2 = vec![0u8; 8 * 64];
    sim.read(out2, &mut o2).unwrap();
    Ok((
        o.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        o2.chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        r.printf,
    ))
}

#[test]
fn nvrtc_generated_calls_printf_and_assert_run() {
    // the host model of nvrtc_calls.cu
    let (mut want, mut want2, mut text) = (Vec::new(), Vec::new(), String::new());
    for t in 0..64u32 {
        let mut r = t + 3 * t;
        if t & 1 == 1 {
            r += t * t + 4;
        }
        let k = t % 3;
        let (a, c) = if k == 0 {
            (t, 1000)
        } else {
            (t * k, 1000 + t as u64)
        };
        want.push(r + a);
        want2.push(c);
        text += &format!("t{t} r={r} b=1.5 c={c}\n");
    }
    for (name, ptx) in NVRTC {
        let (got, got2, printed) = run_nvrtc(ptx, 64).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
        assert_eq!(got2, want2, "{name}");
        assert_eq!(printed, text, "{name}");
        let e = run_nvrtc(ptx, 40).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.cu:7: k: block: [0,0,0], thread: [40,0,0] Assertion `t < limit` failed.",
            "{name}"
        );
    }
}

#[test]
fn barriers_and_shared_memory_checks_stay_on_in_callees() {
    // `sync_store(v)`: writes v to a module-scope shared word, then
    // `bar.sync`, then reads it back
    let f = "
.shared .align 4 .u32 cell;
.func  (.param .b32 func_retval0) sync_store(.param .b32 sync_store_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.u32 	%r1, [sync_store_param_0];
	st.shared.u32 	[cell], %r1;
	bar.sync 	0;
	ld.shared.u32 	%r2, [cell];
	st.param.b32 	[func_retval0+0], %r2;
	ret;
}
";
    let call = |guard: &str| {
        format!(
            "{{
	.param .b32 param0;
	st.param.b32 	[param0+0], %r5;
	.param .b32 retval0;
	{guard}call.uni (retval0), sync_store, (param0);
	mov.u32 %r7, 0;
	{guard}ld.param.b32 	%r7, [retval0+0];
	}}
	st.global.u32 [%rd3], %r7;"
        )
    };
    // every thread calls: all store the same cell before the barrier
    let all = format!("{HEAD}{f}{}", entry(&call("")));
    match run(&all, 64, 64).unwrap_err() {
        SimError::SharedRace { site, .. } => {
            assert!(site.instr.starts_with("st.shared.u32"), "{site}");
        }
        e => panic!("{e}"),
    }
    // only odd threads call (a callee without the shared cell): the
    // barrier in the callee diverges
    let f = f
        .replace("st.shared.u32 \t[cell], %r1;", "")
        .replace("ld.shared.u32 \t%r2, [cell];", "mov.u32 %r2, %r1;");
    let odd = format!(
        "{HEAD}{f}{}",
        entry(&format!(
            "and.b32 %r8, %r5, 1;\nsetp.eq.s32 %p1, %r8, 1;\n{}",
            call("@%p1 ")
        ))
    );
    let e = run(&odd, 64, 64).unwrap_err();
    assert!(matches!(e, SimError::BarrierDivergence { .. }), "{e}");
    // and without the guard everyone meets at the barrier
    let ok = odd.replace("@%p1 ", "");
    assert_eq!(run(&ok, 64, 64).unwrap(), (0..64).collect::<Vec<u32>>());
}

/// `tests/data/ptx/nvrtc_printf_assert.cu` as NVRTC 12.9 compiles it: the
/// printf format and the assert texts are module `.global` arrays (the
/// module is loaded, its strings placed in global memory, before the
/// launch). With `limit` 64 the launch of 64 threads prints
/// `t{t} b={t/2:.1}` per thread and `out[t] == 2t`; with `limit` 40 it
/// stops with `SimError::Assert` and the device's message.
#[test]
fn nvrtc_printf_and_assert_with_module_strings_run() {
    let ptx = include_str!("data/ptx/nvrtc_printf_assert.ptx");
    let launch = |limit: u32| -> (Result<String, SimError>, Vec<u32>) {
        let mut sim = Sim::new(Sm::Sm80);
        let prog = sim.program(ptx).unwrap();
        assert!(
            !prog.globals().is_empty(),
            "the fixture keeps its strings in module variables"
        );
        let out = sim.alloc(4 * 64).unwrap();
        let r = sim
            .launch_program(
                &prog,
                "k",
                LaunchConfig::linear(1, 64),
                &[ArgValue::Ptr(out), ArgValue::U32(limit)],
            )
            .map(|r| r.printf);
        let mut o = vec![0u8; 4 * 64];
        sim.read(out, &mut o).unwrap();
        let o = o
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        (r, o)
    };
    let (printed, out) = launch(64);
    let want: String = (0..64u32)
        .map(|t| format!("t{t} b={:.1}\n", t as f64 * 0.5))
        .collect();
    assert_eq!(printed.unwrap(), want);
    assert_eq!(out, (0..64u32).map(|t| 2 * t).collect::<Vec<_>>());
    let (failed, _) = launch(40);
    match failed.unwrap_err() {
        e @ SimError::Assert { .. } => assert_eq!(
            e.to_string(),
            "t.cu:10: void k(int *, int): block: [0,0,0], thread: [40,0,0] Assertion `t < limit` failed."
        ),
        e => panic!("{e}"),
    }
}
