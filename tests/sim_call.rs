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

#[test]
fn recursion_is_refused_naming_the_cycle() {
    let ptx = format!(
        "{HEAD}{}",
        NESTED.replace(
            "call.uni (retval0), sq, (param0);\n\tld.param.b32 \t%r4",
            "call.uni (retval0), sumsq, (param0, param0);\n\tld.param.b32 \t%r4"
        )
    );
    let ptx = format!("{ptx}{}", entry(NESTED_CALL));
    match Program::parse(&ptx).unwrap_err() {
        SimError::RecursiveCall { cycle, line } => {
            assert_eq!(cycle, ["sumsq", "sumsq"]);
            assert!(
                ptx.lines()
                    .nth(line as usize - 1)
                    .unwrap()
                    .contains("sumsq")
            );
        }
        e => panic!("{e}"),
    }
}
