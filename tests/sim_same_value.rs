//! Same-value write-write conflicts are warnings, not findings (issue 34):
//! following compute-sanitizer's racecheck, which grades hazards by
//! severity and keeps ERROR for the likely causes of data races, two
//! unordered plain stores of the same bytes to one location (threads of
//! two warps of a block on global memory, two threads of a block on
//! shared memory) are counted in [`LaunchReport::same_value_writes`] with
//! the first named, and the launch succeeds; different bytes, or a read
//! involved, stay a race finding; between blocks every conflict stays a
//! finding. The same on 1, 2 and 7 simulator threads, lockstep on and off.

#[path = "common/sim_launch.rs"]
mod sim_launch;

use ptxsmith::sim::{AccessKind, SimError};
use sim_launch::run;

/// A kernel `k(out)` with `%r0` = `%tid.x`, `%rd0` = `out`, a 64-word
/// shared array `s` (`%r6` its address), and `body`.
fn kernel(body: &str) -> String {
    sim_launch::kernel("mov.u32 %r6, s;", body)
}

/// Every thread stores `%r1` (set by `value`) to `out[0]`.
fn all_store(value: &str) -> String {
    kernel(&format!("{value}\nst.global.u32 [%rd0], %r1;"))
}

#[test]
fn warps_storing_the_same_word_to_global_memory_warn_and_the_launch_succeeds() {
    // 1024 threads, 32 warps, one value: every store after warp 0's meets
    // an earlier write of another warp
    let (r, out) = run(&all_store("mov.u32 %r1, 5;"), 1, 1024);
    let rep = r.expect("same-value stores are no finding");
    assert_eq!(out[0], 5);
    assert_eq!(rep.same_value_writes, 1024 - 32);
    let w = rep.first_same_value_write.expect("the first is named");
    for part in [
        "global-memory race at",
        "between warps of kernel `k` block (0,0,0)",
        "write by thread (32,0,0)",
        "st.global.u32 [%rd0], %r1;",
        "earlier write by warp 0",
        "both wrote the same bytes: a warning, not a finding",
    ] {
        assert!(w.contains(part), "`{part}` missing from: {w}");
    }
    // one warp alone: nothing to warn about
    let (r, _) = run(&all_store("mov.u32 %r1, 5;"), 1, 32);
    let rep = r.unwrap();
    assert_eq!(
        (rep.same_value_writes, rep.first_same_value_write),
        (0, None)
    );
}

#[test]
fn warps_storing_different_values_to_global_memory_still_race() {
    // thread 63 stores 6, everyone else 5: the finding is thread 63's
    let (r, _) = run(
        &all_store("setp.eq.u32 %p1, %r0, 63;\nselp.u32 %r1, 6, 5, %p1;"),
        1,
        64,
    );
    match r.unwrap_err() {
        SimError::WarpGlobalRace {
            site,
            this,
            other,
            other_warp,
            ..
        } => {
            assert_eq!(site.tid, (63, 0, 0));
            // warp 1's same-value stores made the word written by several
            // warps
            assert_eq!(
                (this, other, other_warp),
                (AccessKind::Write, AccessKind::Write, u32::MAX)
            );
        }
        e => panic!("expected a race between warps, got {e}"),
    }
    // every thread its own value: the first store of warp 1 races
    let e = run(&all_store("mov.u32 %r1, %r0;"), 1, 64).0.unwrap_err();
    assert!(
        matches!(&e, SimError::WarpGlobalRace { site, .. } if site.tid == (32, 0, 0)),
        "{e}"
    );
}

#[test]
fn a_read_involved_in_same_value_writes_still_races() {
    // warps 0 and 1 store 5, then warp 1 reads: its read races with warp
    // 0's write (only writes of equal bytes are tolerated)
    let ptx = kernel(
        "mov.u32 %r1, 5;\nst.global.u32 [%rd0], %r1;\nsetp.ge.u32 %p1, %r0, 32;\n\
         @%p1 ld.global.u32 %r2, [%rd0];\n@%p1 st.global.u32 [%rd0+4], %r2;",
    );
    let e = run(&ptx, 1, 64).0.unwrap_err();
    match &e {
        SimError::WarpGlobalRace {
            site,
            this,
            other,
            other_warp,
            ..
        } => {
            assert_eq!(site.tid, (32, 0, 0));
            assert_eq!(
                (*this, *other, *other_warp),
                (AccessKind::Read, AccessKind::Write, u32::MAX),
                "{e}"
            )
        }
        e => panic!("expected a race between warps, got {e}"),
    }
    // warp 0 stores 5 and reads it back, then warp 1 stores 5: a write
    // after another warp's read is a race whatever the value
    let ptx = kernel(
        "mov.u32 %r1, 5;\nst.global.u32 [%rd0], %r1;\nsetp.lt.u32 %p1, %r0, 32;\n\
         @%p1 ld.global.u32 %r2, [%rd0];\n@%p1 st.global.u32 [%rd0+4], %r2;",
    );
    let e = run(&ptx, 1, 64).0.unwrap_err();
    assert!(
        matches!(&e, SimError::WarpGlobalRace { site, this: AccessKind::Write, .. } if site.tid == (32, 0, 0)),
        "{e}"
    );
}

#[test]
fn same_value_stores_to_shared_memory_warn_and_different_ones_race() {
    // every thread stores 9 to s[0], then thread 0 copies it out after a
    // barrier
    let body = |value: &str| {
        format!(
            "{value}\nst.shared.u32 [%r6], %r1;\nbar.sync 0;\nsetp.eq.u32 %p2, %r0, 0;\n\
             ld.shared.u32 %r2, [%r6];\n@%p2 st.global.u32 [%rd0], %r2;"
        )
    };
    let (r, out) = run(&kernel(&body("mov.u32 %r1, 9;")), 1, 64);
    let rep = r.expect("same-value stores are no finding");
    assert_eq!(out[0], 9);
    // every thread after the first meets the previous thread's write
    assert_eq!(rep.same_value_writes, 63);
    let w = rep.first_same_value_write.unwrap();
    for part in [
        "shared-memory race at shared offset 0x0",
        "write by thread (1,0,0)",
        "both wrote the same bytes",
    ] {
        assert!(w.contains(part), "`{part}` missing from: {w}");
    }
    let e = run(&kernel(&body("mov.u32 %r1, %r0;")), 1, 64)
        .0
        .unwrap_err();
    match e {
        SimError::SharedRace {
            site, this, other, ..
        } => {
            assert_eq!(site.tid, (1, 0, 0));
            assert_eq!((this, other), (AccessKind::Write, AccessKind::Write));
        }
        e => panic!("expected a shared-memory race, got {e}"),
    }
}

#[test]
fn same_value_stores_of_two_blocks_still_race() {
    // blocks are unordered and their accesses are compared by byte masks:
    // every conflict between blocks is a finding, whatever the values
    let e = run(&all_store("mov.u32 %r1, 5;"), 2, 32).0.unwrap_err();
    assert!(matches!(e, SimError::GlobalRace { .. }), "{e}");
}
