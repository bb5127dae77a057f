//! The `.func`/`call` forms (`super::func`): each parses, and runs to the
//! value it should on one thread.

use super::super::error::SimError;
use super::Program;
use crate::Sm;
use crate::abi::ArgValue;
use crate::exec::LaunchConfig;
use crate::sim::Sim;

const HEAD: &str = ".version 8.7\n.target sm_80\n.address_size 64\n";

/// `funcs`, then an entry `k(out)` running `body` on `threads` threads,
/// which leaves its result in `%r9`, stored to `out[tid]`.
fn module(funcs: &str, body: &str) -> String {
    format!(
        "{HEAD}{funcs}\n.visible .entry k(.param .u64 out)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n\
         mov.u32 %r1, %tid.x;\n\
         {body}\n\
         ld.param.u64 %rd1, [out];\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd1, %rd1, %rd2;\n\
         st.global.u32 [%rd1], %r9;\nret;\n}}\n"
    )
}

fn run(ptx: &str, threads: u32) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(ptx)?;
    let mut sim = Sim::new(Sm::Sm80);
    let out = sim.alloc(4 * threads as usize).unwrap();
    sim.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(1, threads),
        &[ArgValue::Ptr(out)],
    )?;
    let mut o = vec![0u8; 4 * threads as usize];
    sim.read(out, &mut o).unwrap();
    Ok(o.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// `inc(x) = x + 1`, `.weak`, defined after a forward declaration that
/// the entry's module puts first.
const INC: &str = ".weak .func (.param .b32 r) inc(.param .b32 x)\n\
    {\n.reg .b32 %t<2>;\nld.param.b32 %t0, [x];\nadd.s32 %t1, %t0, 1;\n\
    st.param.b32 [r+0], %t1;\nret;\n}\n";

const CALL_INC: &str = "{\n.param .b32 a;\nst.param.b32 [a], %r1;\n.param .b32 v;\n\
    call.uni (v), inc, (a);\nld.param.b32 %r9, [v];\n}";

#[test]
fn visible_weak_and_forward_declared_functions() {
    let fwd = ".weak .func (.param .b32 r) inc(.param .b32 x);\n";
    // declared before the entry, defined after it
    let ptx = module(fwd, CALL_INC) + INC;
    assert_eq!(run(&ptx, 3).unwrap(), [1, 2, 3]);
    let vis = INC.replace(".weak", ".visible");
    assert_eq!(run(&module(&vis, CALL_INC), 2).unwrap(), [1, 2]);
    // a second definition is an error
    let twice = module(&format!("{INC}{INC}"), CALL_INC);
    assert!(matches!(
        Program::parse(&twice),
        Err(SimError::Parse { .. })
    ));
}

#[test]
fn functions_without_parameters_or_results() {
    // `seven` has no parameters and no result: `call seven;` and
    // `call.uni seven, ();` both inline it, and its `%r1` is its own (the
    // entry's `%r1`, the thread index, is untouched).
    let seven = ".func seven()\n.noreturn\n{\n.reg .b32 %r<2>;\nmov.u32 %r1, 7;\nret;\n}\n";
    let body = "mov.u32 %r9, 5;\ncall seven;\ncall.uni seven, ();\nadd.s32 %r9, %r9, %r1;";
    assert_eq!(run(&module(seven, body), 2).unwrap(), [5, 6]);
}

#[test]
fn ret_in_the_middle_and_predicated_calls() {
    // clamp(x) = x > 2 ? 2 : x, with an early ret
    // (its constant in a nested block of its own)
    let clamp = ".func (.param .b32 r) clamp(.param .b32 x)\n{\n.reg .pred %q;\n.reg .b32 %v;\n\
        ld.param.b32 %v, [x];\nsetp.gt.u32 %q, %v, 2;\n\
        {\n.reg .b32 %two;\nmov.u32 %two, 2;\nst.param.b32 [r], %two;\n}\n\
        @%q ret;\nst.param.b32 [r], %v;\nret;\n}\n";
    let body = "mov.u32 %r9, 100;\nsetp.ne.u32 %p1, %r1, 1;\n{\n.param .b32 a;\nst.param.b32 [a], %r1;\n\
        .param .b32 v;\n@%p1 call (v), clamp, (a);\n@%p1 ld.param.b32 %r9, [v];\n}";
    assert_eq!(run(&module(clamp, body), 5).unwrap(), [0, 100, 2, 2, 2]);
    // `@!%p call`
    let neg = body
        .replace("@%p1 call", "@!%p1 call")
        .replace("@%p1 ld", "@!%p1 ld");
    assert_eq!(run(&module(clamp, &neg), 3).unwrap(), [100, 1, 100]);
}

#[test]
fn nested_blocks_scope_their_declarations() {
    // the inner %r9 shadows the outer one until its `}`
    let body = "mov.u32 %r9, 1;\n{\n.reg .b32 %r9;\nmov.u32 %r9, 50;\n{\n.reg .b32 %r9;\n\
        mov.u32 %r9, 60;\n}\nadd.s32 %r2, %r9, 0;\n}\nadd.s32 %r9, %r9, %r2;";
    assert_eq!(run(&module("", body), 1).unwrap(), [51]);
    // `.pragma` inside a body is accepted
    let body = format!(".pragma \"nounroll\";\n{CALL_INC}");
    assert_eq!(run(&module(INC, &body), 1).unwrap(), [1]);
}

#[test]
fn each_inlined_instance_has_its_own_local_frame() {
    // buf[4] in .local, written and read back; called twice
    let f = ".func (.param .b32 r) twice(.param .b32 x)\n{\n.local .align 4 .b8 buf[16];\n\
        .reg .b32 %v<3>;\n.reg .b64 %a;\nld.param.b32 %v0, [x];\nmov.u64 %a, buf;\n\
        add.s32 %v1, %v0, %v0;\nst.local.u32 [%a+12], %v1;\nld.local.u32 %v2, [%a+12];\n\
        st.param.b32 [r], %v2;\nret;\n}\n";
    let call = |dst: &str, src: &str| {
        format!(
            "{{\n.param .b32 a;\nst.param.b32 [a], {src};\n.param .b32 v;\n\
             call.uni (v), twice, (a);\nld.param.b32 {dst}, [v];\n}}\n"
        )
    };
    let body = call("%r2", "%r1") + &call("%r9", "%r2");
    let ptx = module(f, &body);
    assert_eq!(run(&ptx, 3).unwrap(), [0, 4, 8]);
    // two frames of 16 plus four 4-byte call parameters
    let e = Program::parse(&ptx).unwrap();
    assert_eq!(e.entry("k").unwrap().local_bytes, 2 * 16 + 4 * 4);
}

#[test]
fn unending_mutual_recursion_traps_at_the_depth_limit() {
    let f = |name: &str, other: &str| {
        format!(".func {name}()\n{{\n{{\ncall.uni {other}, ();\n}}\nret;\n}}\n")
    };
    let decl = ".func b();\n";
    let ptx = module(
        &format!("{decl}{}{}", f("a", "b"), f("b", "a")),
        "call.uni a, ();\nmov.u32 %r9, 0;",
    );
    // Inlined to the depth limit, then a trap where the chain would go on:
    // the unending mutual recursion parses and traps when it runs.
    let p = Program::parse(&ptx).unwrap();
    let n = p.instruction_count("k").unwrap();
    assert!(n > 2 * super::func::MAX_RECURSION, "{n}");
    match run(&ptx, 1).unwrap_err() {
        SimError::Trap { message, .. } => assert!(message.contains("recursion depth"), "{message}"),
        e => panic!("{e}"),
    }
}

#[test]
fn malformed_calls_are_refused_at_their_line() {
    let cases = [
        // arity
        (
            "{\n.param .b32 v;\ncall.uni (v), inc, ();\n}",
            "takes 1 return",
        ),
        // an undeclared function
        ("call.uni nowhere, ();", "undeclared function `nowhere`"),
        // a modifier that does not exist
        (
            "{\n.param .b32 v;\ncall.unii (v), inc, ();\n}",
            "only `call` and `call.uni` exist",
        ),
        // a register as an argument
        (
            "{\n.param .b32 v;\ncall.uni (v), inc, (%r1);\n}",
            "not a .param variable",
        ),
        // the address of a call parameter
        (
            "{\n.param .b32 a;\nmov.u64 %rd1, a;\n}",
            "used other than by ld.param/st.param",
        ),
    ];
    for (body, want) in cases {
        let ptx = module(INC, &format!("{body}\nmov.u32 %r9, 0;"));
        let e = Program::parse(&ptx).unwrap_err();
        let (line, msg) = match &e {
            SimError::Parse { line, message, .. } => (*line, message.clone()),
            SimError::Unsupported { line, reason, .. } => (*line, reason.clone()),
            e => panic!("{body}: {e}"),
        };
        assert!(msg.contains(want), "{body}: {e}");
        let text = ptx.lines().nth(line as usize - 1).unwrap();
        assert!(
            text.starts_with("call") || text.starts_with("mov.u64"),
            "{body}: {text}"
        );
    }
}

#[test]
fn loc_lines_end_with_their_line() {
    // `.loc` has no `;`: the instruction on the next line is not part of it
    let body = ".loc 1 2 3\nmov.u32 %r9, 42;\n.loc 1 3 0, function_name $L__info_string0, inlined_at 1 9 5\nadd.u32 %r9, %r9, 1;";
    let ptx =
        module("", body).replace(".address_size 64\n", ".address_size 64\n.file 1 \"a.cu\"\n");
    assert_eq!(run(&ptx, 1).unwrap(), [43]);
}
