//! The per-launch instruction budget (issue 12): a kernel that never exits
//! ends with [`SimError::InstructionLimit`] naming the kernel, the block,
//! the thread and the PTX line, with the default options and through
//! `ptx_run`; `None` / `--max-instructions 0` lift the budget.
//!
//! The tests that use the default budget simulate
//! [`DEFAULT_INSTRUCTION_BUDGET`] instructions, a few seconds in a release
//! build (`cargo test --release`); a debug build is several times slower.

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{
    DEFAULT_INSTRUCTION_BUDGET, DEFAULT_INSTRUCTIONS_PER_THREAD, Program, Sim, SimError,
    SimOptions, cli,
};

/// Block (1,0,0), thread (5,2,0) spins forever on the one-instruction loop
/// at line 18; every other thread exits.
const SPIN: &str = "\
.version 7.0
.target sm_80
.address_size 64
.visible .entry spin()
{
.reg .b32 %r<4>;
.reg .pred %p<4>;
mov.u32 %r0, %ctaid.x;
mov.u32 %r1, %tid.x;
mov.u32 %r2, %tid.y;
setp.eq.u32 %p0, %r0, 1;
setp.eq.u32 %p1, %r1, 5;
setp.eq.u32 %p2, %r2, 2;
and.pred %p0, %p0, %p1;
and.pred %p0, %p0, %p2;
@!%p0 bra $DONE;
$SPIN:
bra $SPIN;
$DONE:
ret;
}
";
const SPIN_LINE: u32 = 18;
const SPIN_CFG: LaunchConfig = LaunchConfig {
    grid: (3, 1, 1),
    block: (6, 3, 1),
    dynamic_smem_bytes: 0,
};

/// Every thread loops `n` times, then exits: 4 + 3·n + 1 instructions per
/// thread (the predicated-off `bra` counts), the `ret` at line 17.
const COUNT: &str = "\
.version 7.0
.target sm_80
.address_size 64
.visible .entry count(.param .u32 n)
{
.reg .b32 %r<4>;
.reg .pred %p<2>;
ld.param.u32 %r0, [n];
mov.u32 %r1, 0;
setp.eq.u32 %p0, %r0, 0;
@%p0 bra $DONE;
$LOOP:
add.u32 %r1, %r1, 1;
setp.lt.u32 %p0, %r1, %r0;
@%p0 bra $LOOP;
$DONE:
ret;
}
";

/// Spin on a flag in global memory that no thread ever sets.
const FLAG: &str = "\
.version 7.0
.target sm_80
.address_size 64
.visible .entry wait_flag(.param .u64 flag)
{
.reg .b32 %r<2>;
.reg .b64 %rd<2>;
.reg .pred %p<2>;
ld.param.u64 %rd0, [flag];
$WAIT:
ld.volatile.global.u32 %r0, [%rd0];
setp.eq.u32 %p0, %r0, 0;
@%p0 bra $WAIT;
ret;
}
";

fn with_budget(max: Option<u64>) -> Sim {
    let mut sim = Sim::new(Sm::Sm80);
    sim.set_options(SimOptions {
        max_instructions: max,
        ..Default::default()
    });
    sim
}

/// Assert `e` is the budget finding at the spinning thread of [`SPIN`].
fn assert_spin_finding(e: &SimError, limit: u64) {
    match e {
        SimError::InstructionLimit { site, limit: l } => {
            assert_eq!(*l, limit);
            assert_eq!(site.kernel, "spin");
            assert_eq!(site.ctaid, (1, 0, 0));
            assert_eq!(site.tid, (5, 2, 0));
            assert_eq!(site.line, SPIN_LINE);
            assert!(site.instr.starts_with("bra $SPIN"), "{}", site.instr);
        }
        e => panic!("expected the instruction-budget finding, got {e}"),
    }
    let msg = e.to_string();
    for part in [
        "instruction budget of",
        "kernel `spin`",
        "block (1,0,0) thread (5,2,0)",
        &format!("line {SPIN_LINE}"),
        "max_instructions",
    ] {
        assert!(msg.contains(part), "`{part}` missing from: {msg}");
    }
}

#[test]
fn default_options_have_the_documented_budget() {
    assert_eq!(
        SimOptions::default().max_instructions,
        Some(DEFAULT_INSTRUCTION_BUDGET)
    );
    assert_eq!(
        Sim::new(Sm::Sm80).options().max_instructions,
        Some(DEFAULT_INSTRUCTION_BUDGET)
    );
    // generous for real work, small enough that a runaway launch ends in
    // seconds (see the constant's documentation)
    const { assert!(DEFAULT_INSTRUCTION_BUDGET >= 500_000_000) };
    const { assert!(DEFAULT_INSTRUCTION_BUDGET <= 4_000_000_000) };
    assert!(cli::USAGE.contains(&DEFAULT_INSTRUCTION_BUDGET.to_string()));
    assert!(cli::USAGE.contains(&DEFAULT_INSTRUCTIONS_PER_THREAD.to_string()));
}

/// The default budget scales with the launch's threads (issue 34): the
/// floor up to 59 threads, 2²⁴ a thread above; an explicit budget is
/// exact whatever the launch; `None` is no limit.
#[test]
fn the_default_budget_scales_with_the_threads_and_an_explicit_one_does_not() {
    let o = SimOptions::default();
    assert_eq!(o.launch_budget(1), Some(DEFAULT_INSTRUCTION_BUDGET));
    assert_eq!(o.launch_budget(59), Some(DEFAULT_INSTRUCTION_BUDGET));
    assert_eq!(o.launch_budget(60), Some(60 << 24));
    // a 1024-thread block may run a 10⁶-iteration loop of 16 instructions
    // (NVRTC's `tmp += data[i % len]` loop of cudarc's `slow_worker` is 12)
    assert!(o.launch_budget(1024).unwrap() >= 1024 * 16_000_000);
    assert_eq!(o.launch_budget(1 << 50), Some(u64::MAX));
    for n in [1, 1024, 1 << 20] {
        let exact = SimOptions {
            max_instructions: Some(12_345),
            ..o
        };
        assert_eq!(exact.launch_budget(n), Some(12_345));
        let none = SimOptions {
            max_instructions: None,
            ..o
        };
        assert_eq!(none.launch_budget(n), None);
    }
}

/// A legal launch of more than 10⁹ instructions (the former fixed
/// budget), 1024 threads looping 350 000 times each (1.075·10⁹
/// instructions, a few seconds in a release build), completes with the
/// default options; an explicit budget stays exact.
#[test]
fn a_long_legal_launch_completes_under_the_default_budget() {
    let prog = Program::parse(COUNT).unwrap();
    let cfg = LaunchConfig::linear(8, 128);
    let n = 350_000u64;
    let args = [ArgValue::U32(n as u32)];
    let need = 1024 * (4 + 3 * n + 1);
    assert!(need > DEFAULT_INSTRUCTION_BUDGET);
    let rep = Sim::new(Sm::Sm80)
        .launch_program(&prog, "count", cfg, &args)
        .unwrap();
    assert_eq!(rep.instructions, need);
    // (small: the exact budget stops the first block at once)
    let cfg = LaunchConfig::linear(1, 128);
    match with_budget(Some(DEFAULT_INSTRUCTION_BUDGET / 1000))
        .launch_program(&prog, "count", cfg, &args)
        .unwrap_err()
    {
        SimError::InstructionLimit { limit, .. } => {
            assert_eq!(limit, DEFAULT_INSTRUCTION_BUDGET / 1000)
        }
        e => panic!("expected the instruction-budget finding, got {e}"),
    }
}

#[test]
fn small_budget_stops_a_spinning_kernel_at_its_thread_and_line() {
    let prog = Program::parse(SPIN).unwrap();
    let mut sim = with_budget(Some(10_000));
    let e = sim
        .launch_program(&prog, "spin", SPIN_CFG, &[])
        .unwrap_err();
    assert_spin_finding(&e, 10_000);
    // the simulator stays usable: a terminating launch afterwards is fine
    let prog = Program::parse(COUNT).unwrap();
    sim.launch_program(
        &prog,
        "count",
        LaunchConfig::linear(1, 32),
        &[ArgValue::U32(3)],
    )
    .unwrap();
}

#[test]
fn default_budget_stops_a_spinning_kernel() {
    let prog = Program::parse(SPIN).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let e = sim
        .launch_program(&prog, "spin", SPIN_CFG, &[])
        .unwrap_err();
    assert_spin_finding(&e, DEFAULT_INSTRUCTION_BUDGET);
}

#[test]
fn spin_on_an_unset_flag_is_named_at_the_loop() {
    let prog = Program::parse(FLAG).unwrap();
    let mut sim = with_budget(Some(1_000_000));
    let flag = sim.alloc_zeroed(4).unwrap();
    let e = sim
        .launch_program(
            &prog,
            "wait_flag",
            LaunchConfig::linear(2, 64),
            &[ArgValue::Ptr(flag)],
        )
        .unwrap_err();
    match e {
        SimError::InstructionLimit { site, limit } => {
            assert_eq!(limit, 1_000_000);
            assert_eq!(site.kernel, "wait_flag");
            // blocks and threads run in order: the first thread spins
            assert_eq!((site.ctaid, site.tid), ((0, 0, 0), (0, 0, 0)));
            assert!((11..=13).contains(&site.line), "line {}", site.line);
        }
        e => panic!("expected the instruction-budget finding, got {e}"),
    }
}

#[test]
fn the_budget_is_per_launch_and_exact() {
    let prog = Program::parse(COUNT).unwrap();
    let cfg = LaunchConfig {
        grid: (2, 1, 1),
        block: (32, 2, 1),
        dynamic_smem_bytes: 0,
    };
    let args = [ArgValue::U32(100)];
    let need = 2 * 64 * (4 + 3 * 100 + 1);
    let rep = with_budget(None)
        .launch_program(&prog, "count", cfg, &args)
        .unwrap();
    assert_eq!(rep.instructions, need);
    // exactly the launch's instruction count is enough, every launch anew
    let mut sim = with_budget(Some(need));
    for _ in 0..3 {
        sim.launch_program(&prog, "count", cfg, &args).unwrap();
    }
    assert_eq!(sim.total_instructions(), 3 * need);
    // one fewer stops the last thread (block (1,0,0), thread (31,1,0)) at
    // its final `ret`, line 17
    match with_budget(Some(need - 1))
        .launch_program(&prog, "count", cfg, &args)
        .unwrap_err()
    {
        SimError::InstructionLimit { site, limit } => {
            assert_eq!(limit, need - 1);
            assert_eq!(site.kernel, "count");
            assert_eq!((site.ctaid, site.tid), ((1, 0, 0), (31, 1, 0)));
            assert_eq!(site.line, 17);
            assert_eq!(site.instr, "ret;");
        }
        e => panic!("expected the instruction-budget finding, got {e}"),
    }
}

/// Every budget short of a launch stops at the instruction after the
/// budget, also inside a `setp` + `@p bra` pair (which the interpreter runs
/// as one dispatch outside its instruction-by-instruction mode).
#[test]
fn each_budget_stops_at_its_instruction() {
    let prog = Program::parse(COUNT).unwrap();
    let cfg = LaunchConfig::linear(1, 1);
    let n = 5;
    let args = [ArgValue::U32(n)];
    // the lines one thread issues: the prologue, `n` loop turns, `ret`
    let mut trace = vec![8, 9, 10, 11];
    for _ in 0..n {
        trace.extend([13, 14, 15]);
    }
    trace.push(17);
    let rep = with_budget(None)
        .launch_program(&prog, "count", cfg, &args)
        .unwrap();
    assert_eq!(rep.instructions, trace.len() as u64);
    for budget in 1..trace.len() as u64 {
        match with_budget(Some(budget))
            .launch_program(&prog, "count", cfg, &args)
            .unwrap_err()
        {
            SimError::InstructionLimit { site, limit } => {
                assert_eq!(limit, budget);
                assert_eq!(site.line, trace[budget as usize], "budget {budget}");
            }
            e => panic!("budget {budget}: expected the budget finding, got {e}"),
        }
    }
}

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("ptxsmith-sim-budget-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_string_lossy().into_owned()
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn ptx_run_reports_the_budget_finding_without_a_flag() {
    let path = tmp("spin.ptx");
    std::fs::write(&path, SPIN).unwrap();
    let err = cli::run(&args(&[&path, "--grid", "3", "--block", "6,3"])).unwrap_err();
    for part in [
        "finding: instruction budget of",
        &DEFAULT_INSTRUCTION_BUDGET.to_string(),
        "kernel `spin` block (1,0,0) thread (5,2,0)",
        &format!("line {SPIN_LINE}"),
        "--max-instructions 0",
    ] {
        assert!(err.contains(part), "`{part}` missing from: {err}");
    }
}

#[test]
fn ptx_run_budget_flag_sets_and_lifts_the_budget() {
    let path = tmp("count.ptx");
    std::fs::write(&path, COUNT).unwrap();
    let run = |budget: &str| {
        cli::run(&args(&[
            &path,
            "--grid",
            "2",
            "--block",
            "64",
            "--arg",
            "u32:1000",
            "--max-instructions",
            budget,
        ]))
    };
    let need = 2 * 64 * (4 + 3 * 1000 + 1);
    // a budget below the kernel's need is a finding
    let err = run("1000").unwrap_err();
    assert!(err.contains("instruction budget of 1000"), "{err}");
    assert!(err.contains("kernel `count`"), "{err}");
    // `0` lifts the budget; the terminating kernel runs to completion
    let out = run("0").unwrap();
    assert!(out.contains("no findings"), "{out}");
    assert!(out.contains(&format!("{need} instructions")), "{out}");
    let out = run(&need.to_string()).unwrap();
    assert!(out.contains("no findings"), "{out}");
    // the spinning kernel with a small budget through ptx_run
    let spin = tmp("spin2.ptx");
    std::fs::write(&spin, SPIN).unwrap();
    let err = cli::run(&args(&[
        &spin,
        "--grid",
        "3",
        "--block",
        "6,3",
        "--max-instructions",
        "5000",
    ]))
    .unwrap_err();
    assert!(
        err.contains("budget of 5000") && err.contains(&format!("thread (5,2,0) line {SPIN_LINE}")),
        "{err}"
    );
}

/// A lockstep attempt may issue a sixteenth of the block's cap (at least
/// 2²⁰ instructions): past it the block runs in thread order (what a
/// spinning block needs anyway for its exact stop), with the same result;
/// without a budget, lockstep has no such limit.
#[test]
fn a_block_past_the_lockstep_cap_runs_in_thread_order() {
    let prog = Program::parse(COUNT).unwrap();
    let cfg = LaunchConfig::linear(1, 32);
    let budget = 1u64 << 24; // lockstep cap: max(2²⁴ / 16, 2²⁰) = 2²⁰
    let per_thread = |n: u64| 4 + 3 * n + 1;
    for (n, lockstep) in [(10_000u64, 1u64), (12_000, 0)] {
        let need = 32 * per_thread(n);
        assert_eq!(need < 1 << 20, lockstep == 1, "n = {n}: {need}");
        let args = [ArgValue::U32(n as u32)];
        let mut sim = with_budget(Some(budget));
        let rep = sim.launch_program(&prog, "count", cfg, &args).unwrap();
        assert_eq!(rep.instructions, need);
        assert_eq!(sim.lockstep_blocks(), lockstep, "n = {n}");
        let mut sim = with_budget(None);
        let rep = sim.launch_program(&prog, "count", cfg, &args).unwrap();
        assert_eq!(rep.instructions, need);
        assert_eq!(sim.lockstep_blocks(), 1, "n = {n}, no budget");
    }
}
