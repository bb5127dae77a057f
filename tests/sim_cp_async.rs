//! Issue 31: `cp.async` with commit and wait groups in the DSL and the
//! simulator: the printed forms, assembly by the pinned ptxas from sm_80
//! and the typed refusal below; a double-buffered pipeline (each stage
//! read by the neighbouring thread after `wait_group 1` and a barrier)
//! copying a buffer exactly; the same pipeline waiting one group too few,
//! and a planted read before the wait, reported as
//! `SimError::AsyncCopyPending` naming the `cp.async` and the read; the
//! zero fill below `src_size`; the global source's bounds.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::U32;
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::nvtools::NvTools;
use ptxsmith::sim::{AccessKind, Program, Sim, SimError, SimOptions, Space};
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct CopyArgs => CopyRegs {
        src: Ptr<U32>,
        dst: Ptr<U32>,
    }
}

/// Threads of the pipeline's block and its stages.
const THREADS: u32 = 64;
const STAGES: u32 = 4;
/// Words of one stage: 16 bytes a thread.
const STAGE: u32 = THREADS * 4;

/// Copy `STAGES` stages of `src` to `dst` through two shared buffers:
/// stage `c + 1` is in flight (`cp.async.cg`, one group per stage) while
/// stage `c` is read, each thread storing its right neighbour's 16 bytes
/// (so the data must be visible to the other threads: `wait_group wait`,
/// then `bar.sync`; and a second `bar.sync` before the buffer is refilled,
/// if `trailing`). `wait = 1` with `trailing` is the correct pipeline.
fn pipeline_with(sm: Sm, wait: u32, trailing: bool) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("pipeline", sm);
    let p = b.params::<CopyArgs>();
    let buf = b.shared_array::<U32>("buf", 2 * STAGE, 16);
    let t = b.tid_x();
    let t4 = b.shl(t, 2u32);
    let nb = b.add(t, 1u32);
    let nb = b.and(nb, THREADS - 1);
    let nb4 = b.shl(nb, 2u32);
    let issue = |b: &mut KernelBuilder, c: u32| {
        let w = b.add(t4, c * STAGE);
        let g = b.offset(p.src, w);
        let s = b.add(t4, (c % 2) * STAGE);
        let s = b.shared_elem(&buf, s);
        b.cp_async_cg(s, g, None);
    };
    issue(&mut b, 0);
    b.cp_async_commit_group();
    for c in 0..STAGES {
        if c + 1 < STAGES {
            issue(&mut b, c + 1);
        }
        // an empty group at the end keeps the count uniform
        b.cp_async_commit_group();
        b.cp_async_wait_group(wait);
        b.bar_sync();
        let s = b.add(nb4, (c % 2) * STAGE);
        let s = b.shared_elem(&buf, s);
        let w = b.add(nb4, c * STAGE);
        let d = b.offset(p.dst, w);
        for j in 0..4 {
            let v = b.ld_shared(s, j);
            b.st_global(d, j, v);
        }
        if trailing {
            b.bar_sync();
        }
    }
    b.finish()
}

fn pipeline(sm: Sm, wait: u32) -> ptxsmith::Result<PtxModule> {
    pipeline_with(sm, wait, true)
}

/// Thread `t` copies `src[4t..4t+4]` (16 bytes, `cp.async.cg`) with
/// `src_size = 4·(t % 4)` bytes, waits for it, then stores what landed.
fn zero_fill(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("zero_fill", sm);
    let p = b.params::<CopyArgs>();
    let buf = b.shared_array::<U32>("buf", 128, 16);
    let t = b.tid_x();
    let t4 = b.shl(t, 2u32);
    let g = b.offset(p.src, t4);
    let s = b.shared_elem(&buf, t4);
    let n = b.and(t, 3u32);
    let n = b.shl(n, 2u32);
    b.cp_async_cg(s, g, Some(n.into()));
    b.cp_async_wait_all();
    let d = b.offset(p.dst, t4);
    for j in 0..4 {
        let v = b.ld_shared(s, j);
        b.st_global(d, j, v);
    }
    b.finish()
}

/// Two groups (`src[t]` → `buf[t]`, then `src[32 + t]` → `buf[32 + t]`,
/// 4 bytes each by `cp.async.ca`), `wait_group 1`, then reads of `buf[t]`
/// (complete) and, if `early`, of `buf[32 + t]` (still pending).
fn two_groups(sm: Sm, early: bool) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("two_groups", sm);
    let p = b.params::<CopyArgs>();
    let buf = b.shared_array::<U32>("buf", 64, 16);
    let t = b.tid_x();
    for k in [0u32, 32] {
        let i = b.add(t, k);
        let g = b.offset(p.src, i);
        let s = b.shared_elem(&buf, i);
        b.cp_async_ca(s, g, CpAsyncSize::B4, None);
        b.cp_async_commit_group();
    }
    b.cp_async_wait_group(1);
    let d = b.offset(p.dst, t);
    let s = b.shared_elem(&buf, t);
    let v = b.ld_shared(s, 0);
    b.st_global(d, 0, v);
    if early {
        let v = b.ld_shared(s, 32);
        b.st_global(d, 32, v);
    }
    b.cp_async_wait_all();
    b.finish()
}

/// Thread `t` stores `0xDEAD` to `buf[t]`, copies `src[t]` over it, and
/// stores `buf[t]` read before (`dst[t]`) and after (`dst[32 + t]`) the
/// wait.
fn before_and_after(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("before_and_after", sm);
    let p = b.params::<CopyArgs>();
    let buf = b.shared_array::<U32>("buf", 32, 16);
    let t = b.tid_x();
    let s = b.shared_elem(&buf, t);
    b.st_shared(s, 0, 0xDEADu32);
    let g = b.offset(p.src, t);
    b.cp_async_ca(s, g, CpAsyncSize::B4, None);
    let before = b.ld_shared(s, 0);
    b.cp_async_wait_all();
    let after = b.ld_shared(s, 0);
    let d = b.offset(p.dst, t);
    b.st_global(d, 0, before);
    b.st_global(d, 32, after);
    b.finish()
}

fn bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Run `m` with `threads` threads on a simulated sm_80 (`src`, a `dst` of
/// `dst_words`); `dst` back.
fn run(m: &PtxModule, threads: u32, src: &[u32], dst_words: usize) -> Result<Vec<u32>, SimError> {
    run_with(m, threads, src, dst_words, true)
}

fn run_with(
    m: &PtxModule,
    threads: u32,
    src: &[u32],
    dst_words: usize,
    checks: bool,
) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm80);
    sim.set_options(SimOptions {
        checks,
        ..SimOptions::default()
    });
    let s = sim.alloc(src.len() * 4).unwrap();
    sim.write(s, &bytes(src)).unwrap();
    let d = sim.alloc(dst_words * 4).unwrap();
    sim.write(d, &vec![0; dst_words * 4]).unwrap();
    sim.launch_program(
        &prog,
        &m.kernel,
        LaunchConfig::linear(1, threads),
        &[ArgValue::Ptr(s), ArgValue::Ptr(d)],
    )?;
    let mut raw = vec![0u8; dst_words * 4];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect())
}

/// 1-based line of the first PTX line starting with `prefix`.
fn line_of(ptx: &str, prefix: &str, nth: usize) -> u32 {
    let i = ptx
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(prefix))
        .nth(nth)
        .unwrap_or_else(|| panic!("no {prefix} in\n{ptx}"))
        .0;
    i as u32 + 1
}

#[test]
fn forms_print_assemble_from_sm_80_and_are_refused_below() {
    let m = two_groups(Sm::Sm80, false).unwrap();
    assert_eq!(m.version.to_string(), "7.0");
    for s in [
        "cp.async.ca.shared.global [%r",
        "], 4;",
        "cp.async.commit_group;",
        "cp.async.wait_group 1;",
        "cp.async.wait_all;",
    ] {
        assert!(m.ptx.contains(s), "{s}\n{}", m.ptx);
    }
    let z = zero_fill(Sm::Sm80).unwrap();
    assert!(z.ptx.contains("cp.async.cg.shared.global [%r"), "{}", z.ptx);
    assert!(z.ptx.contains("], 16, %r"), "{}", z.ptx);
    for sm in [Sm::Sm70, Sm::Sm75] {
        match pipeline(sm, 1) {
            Err(Error::UnsupportedFeature {
                feature,
                sm: at,
                needs,
            }) => {
                assert_eq!((feature, at), (Feature::CpAsync, sm));
                assert!(needs.contains("sm_80") && needs.contains("7.0"), "{needs}");
            }
            other => panic!("{sm}: {other:?}"),
        }
    }
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::CpAsync)) {
        for m in [pipeline(sm, 1), zero_fill(sm), two_groups(sm, true)] {
            let m = m.unwrap();
            if let Err(e) = tools.assemble(&m.ptx, sm) {
                panic!("{} on {sm} rejected by ptxas: {e}\n{}", m.kernel, m.ptx);
            }
        }
    }
    // 7.0 is minimal: ptxas refuses cp.async at 6.5 on sm_80
    let lower = m.ptx.replace(".version 7.0\n", ".version 6.5\n");
    assert!(tools.assemble(&lower, Sm::Sm80).is_err());
}

#[test]
fn double_buffered_pipeline_copies_the_buffer() {
    let src: Vec<u32> = (0..STAGES * STAGE)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5555)
        .collect();
    let m = pipeline(Sm::Sm80, 1).unwrap();
    let got = run(&m, THREADS, &src, src.len()).unwrap();
    assert_eq!(got, src);
}

#[test]
fn a_pipeline_waiting_one_group_too_few_is_a_finding() {
    let src = vec![7u32; (STAGES * STAGE) as usize];
    let m = pipeline(Sm::Sm80, 2).unwrap();
    match run(&m, THREADS, &src, src.len()) {
        Err(SimError::AsyncCopyPending {
            site,
            this,
            copy_tid,
            copy_line,
            copy_text,
            ..
        }) => {
            assert_eq!(this, AccessKind::Read);
            assert!(site.instr.starts_with("ld.shared"), "{site}");
            // the read is of the right neighbour's bytes
            assert_eq!(copy_tid.0, (site.tid.0 + 1) % THREADS);
            assert!(copy_text.starts_with("cp.async.cg"), "{copy_text}");
            // stage 0's copy: with its group and stage 1's committed,
            // `wait_group 2` covers neither
            assert_eq!(copy_line, line_of(&m.ptx, "cp.async.cg", 0));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn read_before_wait_is_a_finding_naming_both_lines() {
    let src: Vec<u32> = (0..64).collect();
    let ok = two_groups(Sm::Sm80, false).unwrap();
    let got = run(&ok, 32, &src, 64).unwrap();
    assert_eq!(&got[..32], &src[..32]);
    let m = two_groups(Sm::Sm80, true).unwrap();
    match run(&m, 32, &src, 64) {
        Err(e @ SimError::AsyncCopyPending { .. }) => {
            let SimError::AsyncCopyPending {
                site,
                offset,
                this,
                copy_tid,
                copy_line,
                ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(*this, AccessKind::Read);
            assert_eq!((site.tid, *copy_tid), ((0, 0, 0), (0, 0, 0)));
            assert_eq!(*offset, 128);
            // the second cp.async, and the second ld.shared
            assert_eq!(*copy_line, line_of(&m.ptx, "cp.async.ca", 1));
            assert_eq!(site.line, line_of(&m.ptx, "ld.shared", 1));
            let text = e.to_string();
            assert!(text.contains("pending cp.async"), "{text}");
            assert!(text.contains(&format!("line {copy_line}")), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn src_size_reads_that_many_bytes_and_zero_fills_the_rest() {
    let src: Vec<u32> = (0..128).map(|i| 0x1000_0000 | i).collect();
    let m = zero_fill(Sm::Sm80).unwrap();
    let got = run(&m, 32, &src, 128).unwrap();
    for t in 0..32 {
        let n = t % 4; // words read
        for j in 0..4 {
            let want = if j < n { src[4 * t + j] } else { 0 };
            assert_eq!(got[4 * t + j], want, "thread {t} word {j}");
        }
    }
}

#[test]
fn the_global_source_is_bounds_checked() {
    // a source one word short: the last thread's last 16-byte copy
    // reaches past its end
    let src: Vec<u32> = (0..STAGES * STAGE - 1).collect();
    let m = pipeline(Sm::Sm80, 1).unwrap();
    match run(&m, THREADS, &src, src.len() + 1) {
        Err(SimError::OutOfBounds {
            space: Space::Global,
            size: 16,
            site,
            ..
        }) => {
            assert!(site.instr.starts_with("cp.async.cg"), "{site}");
            assert_eq!(site.tid, (THREADS - 1, 0, 0));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn copied_bytes_become_visible_at_the_wait_not_before() {
    let src: Vec<u32> = (100..132).collect();
    let m = before_and_after(Sm::Sm80).unwrap();
    // with checks, the early read is the finding
    assert!(matches!(
        run(&m, 32, &src, 64),
        Err(SimError::AsyncCopyPending { .. })
    ));
    // without, it sees the old bytes: the copy lands at the wait
    let got = run_with(&m, 32, &src, 64, false).unwrap();
    assert!(got[..32].iter().all(|&w| w == 0xDEAD), "{got:?}");
    assert_eq!(&got[32..], &src[..]);
}

#[test]
fn the_parser_refuses_malformed_forms_and_old_targets() {
    let z = zero_fill(Sm::Sm80).unwrap().ptx;
    let t = two_groups(Sm::Sm80, false).unwrap().ptx;
    let parse = |ptx: &str| Program::parse(ptx).err();
    // `.cg` copies 16 bytes only; sizes are 4, 8, 16
    let cg8 = z.replacen("], 16, %r", "], 8, %r", 1);
    assert!(matches!(parse(&cg8), Some(SimError::Parse { .. })), "{cg8}");
    let ca2 = t.replacen("], 4;", "], 2;", 1);
    assert!(matches!(parse(&ca2), Some(SimError::Parse { .. })), "{ca2}");
    // the wait count is a constant
    let wreg = t.replacen("cp.async.wait_group 1;", "cp.async.wait_group %r1;", 1);
    assert!(
        matches!(parse(&wreg), Some(SimError::Parse { .. })),
        "{wreg}"
    );
    // the copy goes from .global to .shared
    let back = t.replacen(".shared.global", ".global.shared", 1);
    assert!(
        matches!(parse(&back), Some(SimError::Unsupported { .. })),
        "{back}"
    );
    // sm_80 and PTX 7.0
    let old = t
        .replace(".target sm_80", ".target sm_75")
        .replace(".version 7.0", ".version 6.5");
    match parse(&old) {
        Some(SimError::Unsupported { reason, .. }) => assert!(reason.contains("sm_80"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(parse(&t).is_none());
}

#[test]
fn refilling_a_buffer_another_thread_still_reads_is_a_race_at_the_issue() {
    let src = vec![3u32; (STAGES * STAGE) as usize];
    let m = pipeline_with(Sm::Sm80, 1, false).unwrap();
    match run(&m, THREADS, &src, src.len()) {
        Err(SimError::SharedRace {
            site,
            this,
            other,
            other_tid,
            ..
        }) => {
            assert!(site.instr.starts_with("cp.async.cg"), "{site}");
            assert_eq!((this, other), (AccessKind::Write, AccessKind::Read));
            // the left neighbour read this thread's slot
            assert_eq!(other_tid.0 + 1, site.tid.0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn src_size_above_the_copy_size_is_a_trap() {
    let mut b = KernelBuilder::new("too_big", Sm::Sm80);
    let p = b.params::<CopyArgs>();
    let buf = b.shared_array::<U32>("buf", 128, 16);
    let t = b.tid_x();
    let t4 = b.shl(t, 2u32);
    let g = b.offset(p.src, t4);
    let s = b.shared_elem(&buf, t4);
    b.cp_async_cg(s, g, Some(20u32.into()));
    b.cp_async_wait_all();
    let m = b.finish().unwrap();
    match run(&m, 32, &[0; 128], 1) {
        Err(SimError::Trap { message, site }) => {
            assert!(message.contains("src_size"), "{message}");
            assert!(site.instr.starts_with("cp.async.cg"), "{site}");
        }
        other => panic!("{other:?}"),
    }
}
