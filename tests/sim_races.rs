//! Race findings name both accesses (issue 29), and global-memory races
//! between the warps of one CTA are findings (issue 34):
//!
//! * a shared-memory race names the earlier access's thread, PTX line and
//!   instruction, also when the earlier access was reads by several
//!   threads (one of them);
//! * two warps of a CTA writing one global word, or one writing and the
//!   other reading it, with no `bar.sync` between them, are a
//!   `WarpGlobalRace` naming both accesses; with a `bar.sync` between
//!   them they are not; atomics of two warps do not race, an atomic and a
//!   plain read do; lanes of one warp are not compared;
//! * a race between blocks names the earlier block's access;
//! * every finding is the same, text included, on 1, 2 and 7 simulator
//!   threads, with the lockstep schedule on and off.

#[path = "common/sim_launch.rs"]
mod sim_launch;

use ptxsmith::sim::{AccessKind, SimError, Site};
use sim_launch::run;

/// A kernel `k(out)` with `%r0` = `%tid.x`, `%r5` = `%ctaid.x`, `%rd0` =
/// `out`, a 64-word shared array `s`, and `body`.
fn kernel(body: &str) -> String {
    sim_launch::kernel("mov.u32 %r5, %ctaid.x;", body)
}

/// The 1-based line of the first line of `ptx` containing `text`.
fn line_of(ptx: &str, text: &str) -> u32 {
    1 + ptx
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("`{text}` not in the kernel")) as u32
}

/// Assert `s` is thread `tid` (x) of block `ctaid` (x) at the line of
/// `ptx` holding `text`.
fn at(s: &Site, ptx: &str, ctaid: u32, tid: u32, text: &str) {
    assert_eq!(s.ctaid, (ctaid, 0, 0), "{s}");
    assert_eq!(s.tid, (tid, 0, 0), "{s}");
    assert_eq!(s.line, line_of(ptx, text), "{s}");
    assert!(s.instr.contains(text), "{s}");
}

/// The parts of a finding's text that name both accesses.
fn names_both(e: &SimError, this: &str, other: &str, ptx: &str, texts: [&str; 2]) {
    let msg = e.to_string();
    for part in [
        format!("{this} by thread"),
        format!("line {}", line_of(ptx, texts[0])),
        texts[0].to_string(),
        format!("{other} by thread"),
        format!("line {}", line_of(ptx, texts[1])),
        texts[1].to_string(),
    ] {
        assert!(msg.contains(&part), "`{part}` missing from: {msg}");
    }
}

const W0: &str = "@%p0 st.global.u32 [%rd0], %r0;";
const W1: &str = "@%p1 st.global.u32 [%rd0+0], %r0;";
const R1: &str = "@%p1 ld.global.u32 %r1, [%rd0];";

/// Lane 0 of warp 0 does `first`, then (after `between`) lane 0 of warp 1
/// does `second`.
fn two_warps(first: &str, between: &str, second: &str) -> String {
    kernel(&format!(
        "setp.eq.u32 %p0, %r0, 0;\n{first}\n{between}\nsetp.eq.u32 %p1, %r0, 32;\n{second}"
    ))
}

#[test]
fn two_warps_writing_one_global_word_race() {
    let ptx = two_warps(W0, "", W1);
    let (r, out) = run(&ptx, 1, 64);
    let e = r.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site,
            addr,
            this,
            other,
            other_warp,
            other_site,
        } => {
            at(site, &ptx, 0, 32, W1);
            assert_eq!(addr % 4096, 0);
            assert_eq!(
                (*this, *other, *other_warp),
                (AccessKind::Write, AccessKind::Write, 0)
            );
            at(
                other_site.as_deref().expect("the earlier access"),
                &ptx,
                0,
                0,
                W0,
            );
        }
        e => panic!("expected a race between warps, got {e}"),
    }
    names_both(&e, "write", "write", &ptx, [W1, W0]);
    assert!(
        e.to_string()
            .contains("between warps of kernel `k` block (0,0,0)"),
        "{e}"
    );
    // warp 0's write landed, warp 1 stopped at its store
    assert_eq!(out[0], 0);
}

#[test]
fn a_write_and_a_read_of_two_warps_race_either_way() {
    let ptx = two_warps(W0, "", R1);
    let e = run(&ptx, 1, 64).0.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site,
            this,
            other,
            other_site,
            ..
        } => {
            at(site, &ptx, 0, 32, R1);
            assert_eq!((*this, *other), (AccessKind::Read, AccessKind::Write));
            at(other_site.as_deref().unwrap(), &ptx, 0, 0, W0);
        }
        e => panic!("expected a race between warps, got {e}"),
    }
    names_both(&e, "read", "write", &ptx, [R1, W0]);
    // read first, then the other warp writes
    let r0 = "@%p0 ld.global.u32 %r1, [%rd0];";
    let ptx = two_warps(r0, "", W1);
    let e = run(&ptx, 1, 64).0.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site,
            this,
            other,
            other_site,
            ..
        } => {
            at(site, &ptx, 0, 32, W1);
            assert_eq!((*this, *other), (AccessKind::Write, AccessKind::Read));
            at(other_site.as_deref().unwrap(), &ptx, 0, 0, r0);
        }
        e => panic!("expected a race between warps, got {e}"),
    }
}

#[test]
fn a_bar_sync_between_the_warps_orders_them() {
    let (r, out) = run(&two_warps(W0, "bar.sync 0;", W1), 1, 64);
    r.unwrap();
    assert_eq!(out[0], 32);
    let (r, _) = run(&two_warps(W0, "bar.sync 0;", R1), 1, 64);
    r.unwrap();
    // other bytes of the line, and other words, are no race
    let w1 = "@%p1 st.global.u32 [%rd0+4], %r0;";
    let (r, out) = run(&two_warps(W0, "", w1), 1, 64);
    r.unwrap();
    assert_eq!(&out[..3], &[0, 32, 7]);
}

#[test]
fn lanes_of_one_warp_are_not_compared() {
    let w = "@%p1 st.global.u32 [%rd0+0], %r0;";
    let ptx = kernel(&format!(
        "setp.eq.u32 %p0, %r0, 0;\n{W0}\nsetp.eq.u32 %p1, %r0, 5;\n{w}"
    ));
    let (r, out) = run(&ptx, 1, 64);
    r.unwrap();
    assert_eq!(out[0], 5);
}

#[test]
fn atomics_of_two_warps_do_not_race_an_atomic_and_a_read_do() {
    let a0 = "@%p0 atom.global.add.u32 %r1, [%rd0], 1;";
    let a1 = "@%p1 atom.global.add.u32 %r2, [%rd0], 1;";
    let (r, out) = run(&two_warps(a0, "", a1), 1, 64);
    r.unwrap();
    assert_eq!(out[0], 9);
    let ptx = two_warps(a0, "", R1);
    let e = run(&ptx, 1, 64).0.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site,
            this,
            other,
            other_warp,
            other_site,
            ..
        } => {
            at(site, &ptx, 0, 32, R1);
            assert_eq!(
                (*this, *other, *other_warp),
                (AccessKind::Read, AccessKind::Atomic, 0)
            );
            // entries with global atomics run their blocks on live
            // memory, where a block cannot run again: no line
            assert_eq!(*other_site, None);
        }
        e => panic!("expected a race between warps, got {e}"),
    }
    assert!(e.to_string().contains("atomic by warp 0"), "{e}");
}

#[test]
fn reads_by_several_warps_then_a_write_name_the_last_reader() {
    let r = "@%p0 ld.global.u32 %r1, [%rd0];";
    let w2 = "@%p2 st.global.u32 [%rd0], %r0;";
    let ptx = kernel(&format!(
        "setp.eq.u32 %p0, %r0, 0;\nsetp.eq.u32 %p1, %r0, 32;\nor.pred %p0, %p0, %p1;\n{r}\n\
         setp.eq.u32 %p2, %r0, 64;\n{w2}"
    ));
    let e = run(&ptx, 1, 96).0.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site,
            other,
            other_warp,
            other_site,
            ..
        } => {
            at(site, &ptx, 0, 64, w2);
            assert_eq!((*other, *other_warp), (AccessKind::Read, u32::MAX));
            at(other_site.as_deref().unwrap(), &ptx, 0, 32, r);
        }
        e => panic!("expected a race between warps, got {e}"),
    }
    assert!(
        e.to_string()
            .contains("reads by several warps (the last: read by thread (32,0,0)"),
        "{e}"
    );
}

#[test]
fn the_race_of_the_lowest_block_is_reported_on_every_thread_count() {
    // only blocks 2 and 3 race; more blocks than threads
    let ptx = kernel(&format!(
        "setp.ge.u32 %p3, %r5, 2;\nsetp.eq.u32 %p0, %r0, 0;\nand.pred %p0, %p0, %p3;\n\
         mul.wide.u32 %rd1, %r5, 4;\nadd.s64 %rd0, %rd0, %rd1;\n{W0}\n\
         setp.eq.u32 %p1, %r0, 32;\nand.pred %p1, %p1, %p3;\n{R1}"
    ));
    let e = run(&ptx, 9, 64).0.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site, other_site, ..
        } => {
            at(site, &ptx, 2, 32, R1);
            at(other_site.as_deref().unwrap(), &ptx, 2, 0, W0);
        }
        e => panic!("expected a race between warps, got {e}"),
    }
}

#[test]
fn a_shared_race_names_both_accesses() {
    let w = "@%p0 st.shared.u32 [s], %r0;";
    let r = "@%p1 ld.shared.u32 %r1, [s];";
    let ptx = kernel(&format!(
        "setp.eq.u32 %p0, %r0, 0;\n{w}\nsetp.eq.u32 %p1, %r0, 33;\n{r}"
    ));
    let e = run(&ptx, 3, 64).0.unwrap_err();
    match &e {
        SimError::SharedRace {
            site,
            this,
            other,
            other_tid,
            other_site,
            ..
        } => {
            at(site, &ptx, 0, 33, r);
            assert_eq!(
                (*this, *other, *other_tid),
                (AccessKind::Read, AccessKind::Write, (0, 0, 0))
            );
            at(other_site.as_deref().unwrap(), &ptx, 0, 0, w);
        }
        e => panic!("expected a shared race, got {e}"),
    }
    names_both(&e, "read", "write", &ptx, [r, w]);
    // reads by several threads, then a write: the last reader is named
    // (thread 0 writes the word first, so the reads are initialised)
    let r = "@%p0 ld.shared.u32 %r1, [s+64];";
    let w = "@%p2 st.shared.u32 [s+64], %r0;";
    let ptx = kernel(&format!(
        "setp.eq.u32 %p3, %r0, 0;\n@%p3 st.shared.u32 [s+64], %r0;\nbar.sync 0;\n\
         setp.eq.u32 %p0, %r0, 0;\nsetp.eq.u32 %p1, %r0, 40;\nor.pred %p0, %p0, %p1;\n{r}\n\
         setp.eq.u32 %p2, %r0, 50;\n{w}"
    ));
    let e = run(&ptx, 1, 64).0.unwrap_err();
    match &e {
        SimError::SharedRace {
            site,
            other_tid,
            other_site,
            ..
        } => {
            at(site, &ptx, 0, 50, w);
            assert_eq!(*other_tid, (u32::MAX, u32::MAX, u32::MAX));
            // (of the readers, another warp's first)
            at(other_site.as_deref().unwrap(), &ptx, 0, 0, r);
        }
        e => panic!("expected a shared race, got {e}"),
    }
    assert!(
        e.to_string()
            .contains("reads by several threads (among them the read by thread (0,0,0) at line"),
        "{e}"
    );
}

#[test]
fn a_race_between_blocks_names_the_earlier_blocks_access() {
    // lane 0 of each block writes out[0]; block 1 is the later
    let ptx = kernel(&format!("setp.eq.u32 %p0, %r0, 0;\n{W0}"));
    let e = run(&ptx, 4, 64).0.unwrap_err();
    match &e {
        SimError::GlobalRace {
            site,
            other_ctaid,
            other_site,
            ..
        } => {
            at(site, &ptx, 1, 0, W0);
            assert_eq!(*other_ctaid, (0, 0, 0));
            at(other_site.as_deref().unwrap(), &ptx, 0, 0, W0);
        }
        e => panic!("expected a race between blocks, got {e}"),
    }
    assert!(
        e.to_string()
            .contains("races with the write by thread (0,0,0) of block (0,0,0) at line"),
        "{e}"
    );
}
