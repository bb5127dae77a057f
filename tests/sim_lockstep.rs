//! The lockstep schedule ([`SimOptions::lockstep`]) changes speed, never
//! results: a block whose results could depend on the order of its threads
//! runs again one thread after another (thread order, the simulator's
//! defined order). Each case runs with lockstep on and off and compares
//! results, memory and findings; [`Sim::lockstep_blocks`] shows whether
//! the lockstep run was kept (order-free kernels) or given up
//! (order-dependent ones). `tests/sim_threads.rs` compares every library
//! family and the thread counts the same way.

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{LaunchReport, Program, Sim, SimError, SimOptions};

const HEAD: &str = "\
.version 7.0
.target sm_80
.address_size 64
";

/// A kernel `k(out, res)` of 64-thread blocks: `body` with `%r1` = tid,
/// `%rd1` = &out[tid], `%rd2` = &out[the next lane of tid's warp] (lane 31:
/// lane 0), `%rd4` = &out[(tid + 1) % 64], `%rd3` = &res[tid]. (Two warps
/// accessing one global word with no barrier between them are a race
/// finding: `tests/sim_races.rs`.)
fn kernel(body: &str) -> String {
    format!(
        "{HEAD}
.visible .entry k(.param .u64 p_out, .param .u64 p_res)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 4 .b32 s[64];
    ld.param.u64 %rd10, [p_out];
    ld.param.u64 %rd11, [p_res];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd12, %r1, 4;
    add.s64 %rd1, %rd10, %rd12;
    add.u32 %r2, %r1, 1;
    and.b32 %r2, %r2, 63;
    mul.wide.u32 %rd13, %r2, 4;
    add.s64 %rd4, %rd10, %rd13;
    add.u32 %r13, %r1, 1;
    and.b32 %r13, %r13, 31;
    and.b32 %r14, %r1, -32;
    or.b32 %r13, %r13, %r14;
    mul.wide.u32 %rd13, %r13, 4;
    add.s64 %rd2, %rd10, %rd13;
    add.s64 %rd3, %rd11, %rd12;
{body}
    ret;
}}
"
    )
}

struct Run {
    result: Result<LaunchReport, SimError>,
    out: Vec<u32>,
    res: Vec<u32>,
    lockstep_blocks: u64,
}

/// `k` on one 64-thread block, `out` starting as 7s and `res` as 0s.
fn run(ptx: &str, lockstep: bool, threads: usize) -> Run {
    let prog = Program::parse(ptx).unwrap();
    let mut s = Sim::new(Sm::Sm80);
    s.set_options(SimOptions {
        lockstep,
        threads,
        ..Default::default()
    });
    let words = |v: u32| (0..64).flat_map(|_| v.to_le_bytes()).collect::<Vec<u8>>();
    let out = s.alloc(256).unwrap();
    let res = s.alloc(256).unwrap();
    s.write(out, &words(7)).unwrap();
    s.write(res, &words(0)).unwrap();
    let result = s.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(out), ArgValue::Ptr(res)],
    );
    let read = |s: &mut Sim, p| {
        let mut b = vec![0u8; 256];
        s.read(p, &mut b).unwrap();
        b.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    Run {
        out: read(&mut s, out),
        res: read(&mut s, res),
        result,
        lockstep_blocks: s.lockstep_blocks(),
    }
}

/// Lockstep on and off give the same report or finding and memory (on 1
/// and 3 worker threads); the thread-order run.
fn same_both_ways(ptx: &str) -> (Run, u64) {
    let off = run(ptx, false, 1);
    assert_eq!(off.lockstep_blocks, 0);
    let mut kept = 0;
    for threads in [1, 3] {
        let on = run(ptx, true, threads);
        match (&off.result, &on.result) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("thread order {a:?}, lockstep {b:?}"),
        }
        assert_eq!((&off.out, &off.res), (&on.out, &on.res));
        kept = on.lockstep_blocks;
    }
    (off, kept)
}

/// Each thread writes its word, then reads its next lane's: in thread
/// order the next lane has not written yet (7), except for lane 31, whose
/// next lane is lane 0 (100 + the warp's first thread). In lockstep every
/// write would come first; the read of a later thread's write gives it up.
#[test]
fn reading_a_later_threads_write_gives_lockstep_up() {
    let (r, kept) = same_both_ways(&kernel(
        "    add.u32 %r3, %r1, 100;
    st.global.u32 [%rd1], %r3;
    ld.global.u32 %r4, [%rd2];
    st.global.u32 [%rd3], %r4;",
    ));
    r.result.unwrap();
    let mut want = vec![7; 64];
    want[31] = 100;
    want[63] = 132;
    assert_eq!(r.res, want);
    assert_eq!(kept, 0, "the lockstep run was given up");
}

/// Each thread reads the word of the lane before it, then writes its
/// own: in thread order lane l - 1 has written (100 + t - 1), except for
/// lane 0, whose lane before is lane 31 of its warp (7). In lockstep every
/// read of a warp would come first; lane 0's write of a word lane 1 read
/// gives it up.
#[test]
fn writing_a_word_a_later_thread_read_gives_lockstep_up() {
    let (r, kept) = same_both_ways(&kernel(
        "    add.u32 %r5, %r1, 31;
    and.b32 %r5, %r5, 31;
    or.b32 %r5, %r5, %r14;
    mul.wide.u32 %rd14, %r5, 4;
    add.s64 %rd15, %rd10, %rd14;
    ld.global.u32 %r4, [%rd15];
    add.u32 %r3, %r1, 100;
    st.global.u32 [%rd1], %r3;
    st.global.u32 [%rd3], %r4;",
    ));
    r.result.unwrap();
    let want: Vec<u32> = (0..64)
        .map(|t| if t % 32 == 0 { 7 } else { 99 + t })
        .collect();
    assert_eq!(r.res, want);
    assert_eq!(kept, 0);
}

/// Each thread reads its neighbour's word (`(tid + 1) % 64`), then writes
/// its own: the last thread of warp 0 reads the first of warp 1 before
/// warp 1 writes it, with no barrier between them — a race between the
/// warps, the same finding in thread order and in lockstep (which gives
/// the attempt up at the finding); warp 0's writes landed.
#[test]
fn reading_another_warps_word_it_then_writes_is_a_race_either_way() {
    let (r, kept) = same_both_ways(&kernel(
        "    ld.global.u32 %r4, [%rd4];
    add.u32 %r3, %r1, 100;
    st.global.u32 [%rd1], %r3;
    st.global.u32 [%rd3], %r4;",
    ));
    match r.result {
        Err(SimError::WarpGlobalRace {
            site,
            other_site: Some(o),
            ..
        }) => {
            assert_eq!((site.tid, o.tid), ((32, 0, 0), (31, 0, 0)));
            assert!(site.instr.starts_with("st.global"), "{site}");
            assert!(o.instr.starts_with("ld.global"), "{o}");
        }
        r => panic!("expected a race between warps, got {r:?}"),
    }
    let want: Vec<u32> = (0..64).map(|t| if t < 32 { 100 + t } else { 7 }).collect();
    assert_eq!(r.out, want);
    assert_eq!(kept, 0);
}

/// Two threads writing one word: thread order leaves the later thread's
/// value; lockstep gives up.
#[test]
fn two_threads_writing_one_word_give_lockstep_up() {
    let (r, kept) = same_both_ways(&kernel(
        "    shr.u32 %r5, %r1, 1;
    mul.wide.u32 %rd14, %r5, 4;
    add.s64 %rd15, %rd10, %rd14;
    st.global.u32 [%rd15], %r1;",
    ));
    r.result.unwrap();
    let want: Vec<u32> = (0..64)
        .map(|i| if i < 32 { 2 * i + 1 } else { 7 })
        .collect();
    assert_eq!(r.out, want);
    assert_eq!(kept, 0);
}

/// Read-modify-write of its own word, a barrier, then the neighbour's word:
/// order-free, so the lockstep run is kept.
#[test]
fn own_words_and_a_barrier_keep_lockstep() {
    let (r, kept) = same_both_ways(&kernel(
        "    ld.global.u32 %r4, [%rd1];
    add.u32 %r4, %r4, %r1;
    st.global.u32 [%rd1], %r4;
    bar.sync 0;
    ld.global.u32 %r5, [%rd4];
    st.global.u32 [%rd3], %r5;",
    ));
    r.result.unwrap();
    let want: Vec<u32> = (0..64).map(|i| 7 + (i + 1) % 64).collect();
    assert_eq!(r.res, want);
    assert_eq!(kept, 1, "the lockstep run was kept");
}

/// Loops of a different trip count per thread (tid % 7), through shared
/// memory and a barrier: the threads diverge and meet again; order-free.
#[test]
fn divergent_loops_keep_lockstep() {
    let (r, kept) = same_both_ways(&kernel(
        "    rem.u32 %r6, %r1, 7;
    mov.u32 %r7, 0;
    mov.u32 %r8, 0;
$L_loop:
    setp.ge.u32 %p1, %r7, %r6;
    @%p1 bra $L_done;
    mad.lo.u32 %r8, %r8, 3, %r7;
    add.u32 %r7, %r7, 1;
    bra.uni $L_loop;
$L_done:
    mov.u32 %r9, s;
    shl.b32 %r10, %r1, 2;
    add.u32 %r10, %r9, %r10;
    st.shared.u32 [%r10], %r8;
    bar.sync 0;
    shl.b32 %r11, %r2, 2;
    add.u32 %r11, %r9, %r11;
    ld.shared.u32 %r12, [%r11];
    st.global.u32 [%rd3], %r12;",
    ));
    r.result.unwrap();
    let f = |t: u32| (0..t % 7).fold(0u32, |acc, k| acc * 3 + k);
    let want: Vec<u32> = (0..64).map(|i| f((i + 1) % 64)).collect();
    assert_eq!(r.res, want);
    assert_eq!(kept, 1);
}

/// Thread 40 reads uninitialised shared memory at once (its branch goes
/// back to a lower address, which lockstep runs first), thread 3 after a
/// few instructions: thread order reports thread 3, and so does lockstep.
#[test]
fn the_first_finding_is_thread_orders() {
    let (r, kept) = same_both_ways(&kernel(
        "    bra.uni $L_start;
$L_early:
    ld.shared.u32 %r4, [s];
    bra.uni $L_done;
$L_start:
    setp.eq.u32 %p1, %r1, 40;
    @%p1 bra $L_early;
    add.u32 %r4, %r1, 1;
    add.u32 %r4, %r4, 1;
    setp.ne.u32 %p2, %r1, 3;
    @%p2 bra $L_done;
    ld.shared.u32 %r4, [s+4];
$L_done:
    st.global.u32 [%rd3], %r4;",
    ));
    match r.result {
        Err(SimError::UninitializedShared { site, offset, .. }) => {
            assert_eq!((site.tid, offset), ((3, 0, 0), 4));
        }
        e => panic!("expected an uninitialised shared read, got {e:?}"),
    }
    assert_eq!(kept, 0);
}

/// The hand-written reduction of `tests/ptx/reduce.ptx` keeps lockstep in
/// every block.
#[test]
fn a_block_reduction_runs_every_block_in_lockstep() {
    let prog = Program::parse(include_str!("ptx/reduce.ptx")).unwrap();
    let mut reports = Vec::new();
    for lockstep in [false, true] {
        let mut s = Sim::new(Sm::Sm80);
        s.set_options(SimOptions {
            lockstep,
            ..Default::default()
        });
        let x = s.alloc(4 * 1024).unwrap();
        let v: Vec<u8> = (0..1024u32).flat_map(|i| (i * 7).to_le_bytes()).collect();
        s.write(x, &v).unwrap();
        let o = s.alloc(4 * 8).unwrap();
        let rep = s
            .launch_program(
                &prog,
                "block_sum",
                LaunchConfig::linear(8, 128),
                &[ArgValue::Ptr(x), ArgValue::Ptr(o)],
            )
            .unwrap();
        let mut out = vec![0u8; 32];
        s.read(o, &mut out).unwrap();
        let want: Vec<u8> = (0..8u32)
            .flat_map(|b| {
                (0..128)
                    .map(|i| (b * 128 + i) * 7)
                    .sum::<u32>()
                    .to_le_bytes()
            })
            .collect();
        assert_eq!(out, want);
        assert_eq!(s.lockstep_blocks(), if lockstep { 8 } else { 0 });
        reports.push(rep);
    }
    assert_eq!(reports[0], reports[1]);
}
