//! The shared-memory race and initialisation check on its tricky cases:
//! mixed access sizes over one word (a byte store into a word written as a
//! unit, then a word read), vector accesses over words with different
//! histories, atomics against plain accesses, `bar.warp.sync` ordering,
//! several readers, uninitialised bytes inside a written word, and CTAs
//! that run one after the other on one worker. Each case pins the exact
//! finding (kind, byte offset, the two accesses, the other thread, the
//! reporting thread), so that a change of the check's representation
//! cannot change what it reports.
//!
//! The simulator runs the threads of a CTA one after the other between
//! synchronisation points (thread 0 to its next barrier, then thread 1,
//! ...), so within one barrier interval a lower thread's accesses come
//! first.

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimError, SimOptions};

const HEAD: &str = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// `inst` executed by thread `tid` only.
fn at(tid: u32, inst: &str) -> String {
    format!("setp.eq.u32 %p1, %r0, {tid};\n@%p1 {inst}\n")
}

/// Thread 0 writes the 64 bytes of `s` (four 16-byte stores); a barrier.
fn init() -> String {
    let mut s = String::new();
    for o in [0, 16, 32, 48] {
        s += &at(
            0,
            &format!("st.shared.v4.u32 [s+{o}], {{%r0, %r0, %r0, %r0}};"),
        );
    }
    s + "bar.sync 0;\n"
}

/// A kernel `k(.param .u64 out)` over 64 bytes of shared memory `s`,
/// each thread storing `%r1` to `out[ctaid * ntid + tid]` at the end.
fn kernel(body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<8>;\n.reg .b32 %r<16>;\n.reg .pred %p<4>;\n\
         .shared .align 16 .b8 s[64];\nld.param.u64 %rd0, [out];\nmov.u32 %r0, %tid.x;\nmov.u32 %r1, 0;\n\
         mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r2, %r2, %r3, %r0;\n\
         mul.wide.u32 %rd1, %r2, 4;\nadd.s64 %rd1, %rd0, %rd1;\n{body}st.global.u32 [%rd1], %r1;\nret;\n}}\n"
    )
}

fn launch(body: &str, blocks: u32, threads: u32) -> Result<(), SimError> {
    let prog = Program::parse(&kernel(body))?;
    let mut sim = Sim::new(Sm::Sm80);
    // one worker: the CTAs run one after the other on one shadow state
    sim.set_options(SimOptions {
        threads: 1,
        ..SimOptions::default()
    });
    let out = sim.alloc_zeroed(blocks as usize * threads as usize * 4)?;
    sim.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(blocks, threads),
        &[ArgValue::Ptr(out)],
    )?;
    Ok(())
}

/// A race finding: (offset, this, other, other thread, reporting thread).
fn race(body: &str, threads: u32) -> (u64, &'static str, &'static str, u32, u32) {
    match launch(body, 1, threads).unwrap_err() {
        SimError::SharedRace {
            site,
            offset,
            this,
            other,
            other_tid,
            ..
        } => {
            let rest = if other_tid.0 == MANY { MANY } else { 0 };
            assert_eq!((other_tid.1, other_tid.2), (rest, rest));
            (offset, this.name(), other.name(), other_tid.0, site.tid.0)
        }
        e => panic!("expected a shared race, got {e}"),
    }
}

/// An uninitialised-read finding: (offset, size, reporting thread, ctaid).
fn uninit(body: &str, blocks: u32, threads: u32) -> (u64, u32, u32, u32) {
    match launch(body, blocks, threads).unwrap_err() {
        SimError::UninitializedShared { site, offset, size } => {
            (offset, size, site.tid.0, site.ctaid.0)
        }
        e => panic!("expected an uninitialised shared read, got {e}"),
    }
}

const MANY: u32 = u32::MAX;

#[test]
fn byte_write_then_word_read() {
    let b = init() + &at(0, "st.shared.u8 [s+1], %r0;") + &at(1, "ld.shared.u32 %r1, [s];");
    assert_eq!(race(&b, 2), (1, "read", "write", 0, 1));
    // the byte store of the same thread, or an earlier interval, is ordered
    let b = init() + &at(1, "st.shared.u8 [s+1], %r0;") + &at(1, "ld.shared.u32 %r1, [s];");
    launch(&b, 1, 2).unwrap();
    let b = init()
        + &at(0, "st.shared.u8 [s+1], %r0;")
        + "bar.sync 0;\n"
        + &at(1, "ld.shared.u32 %r1, [s];");
    launch(&b, 1, 2).unwrap();
    // two byte stores of two threads into one word, then a word store
    let b = init()
        + &at(0, "st.shared.u8 [s+2], %r0;")
        + &at(1, "st.shared.u8 [s+3], %r0;")
        + &at(2, "st.shared.u32 [s], %r0;");
    // (thread 2 stores 2: its byte 2 is the 0 thread 0 stored there, a
    // same-value write and no race; byte 3, thread 1's 1, differs)
    assert_eq!(race(&b, 3), (3, "write", "write", 1, 2));
}

#[test]
fn word_write_then_sub_word_read() {
    let b = init() + &at(0, "st.shared.u32 [s+4], %r0;") + &at(1, "ld.shared.u8 %r1, [s+6];");
    assert_eq!(race(&b, 2), (6, "read", "write", 0, 1));
    let b = init() + &at(0, "st.shared.u32 [s+4], %r0;") + &at(1, "ld.shared.u16 %r1, [s+6];");
    assert_eq!(race(&b, 2), (6, "read", "write", 0, 1));
    // a byte read, then a word store by another thread
    let b = init() + &at(0, "ld.shared.u8 %r1, [s+2];") + &at(1, "st.shared.u32 [s], %r0;");
    assert_eq!(race(&b, 2), (2, "write", "read", 0, 1));
    // 8-byte store over a word whose second half another thread read
    let b = init()
        + &at(0, "ld.shared.u16 %r1, [s+14];")
        + &at(1, "st.shared.v2.u32 [s+8], {%r0, %r0};");
    assert_eq!(race(&b, 2), (14, "write", "read", 0, 1));
}

#[test]
fn vector_access_over_words_with_different_histories() {
    let hist = init()
        + &at(0, "ld.shared.u32 %r1, [s+4];")
        + &at(1, "st.shared.u8 [s+13], %r0;")
        + &at(2, "st.shared.u32 [s+8], %r0;");
    let ld = "ld.shared.v4.u32 {%r1, %r2, %r3, %r4}, [s];";
    let st = "st.shared.v4.u32 [s], {%r0, %r0, %r0, %r0};";
    assert_eq!(
        race(&(hist.clone() + &at(3, ld)), 4),
        (8, "read", "write", 2, 3)
    );
    assert_eq!(race(&(hist + &at(3, st)), 4), (4, "write", "read", 0, 3));
    // the first conflicting byte is inside a split word
    let b = init() + &at(0, "st.shared.u8 [s+13], %r0;") + &at(3, ld);
    assert_eq!(race(&b, 4), (13, "read", "write", 0, 3));
    let b = init()
        + &at(0, "ld.shared.u16 %r1, [s+2];")
        + &at(1, "ld.shared.u8 %r1, [s+9];")
        + &at(2, st);
    assert_eq!(race(&b, 3), (2, "write", "read", 0, 2));
    // reads of the pieces do not conflict with a vector read
    let b = init()
        + &at(0, "ld.shared.u8 %r1, [s+1];")
        + &at(1, "ld.shared.u16 %r1, [s+6];")
        + &at(2, "ld.shared.u32 %r1, [s+12];")
        + &at(3, ld)
        + "bar.sync 0;\n"
        + &at(1, st);
    launch(&b, 1, 4).unwrap();
    // 8-byte vector over a split word and a whole word
    let b = init()
        + &at(0, "st.shared.u8 [s+16], %r0;")
        + &at(1, "st.shared.u16 [s+22], %r0;")
        + &at(2, "ld.shared.v2.u32 {%r1, %r2}, [s+16];");
    assert_eq!(race(&b, 3), (16, "read", "write", 0, 2));
}

#[test]
fn atomics_against_plain_accesses() {
    let atom = "atom.shared.add.u32 %r1, [s], 1;";
    let b = init() + &at(0, atom) + &at(1, "ld.shared.u32 %r1, [s];");
    assert_eq!(race(&b, 2), (0, "read", "atomic", 0, 1));
    let b = init() + &at(0, "st.shared.u32 [s], %r0;") + &at(1, atom);
    assert_eq!(race(&b, 2), (0, "atomic", "write", 0, 1));
    let b = init() + &at(0, "ld.shared.u32 %r1, [s];") + &at(1, atom);
    assert_eq!(race(&b, 2), (0, "atomic", "read", 0, 1));
    let b = init() + &at(0, atom) + &at(1, "st.shared.u8 [s+2], %r0;");
    assert_eq!(race(&b, 2), (2, "write", "atomic", 0, 1));
    let b = init() + &at(0, "st.shared.u8 [s+3], %r0;") + &at(1, atom);
    assert_eq!(race(&b, 2), (3, "atomic", "write", 0, 1));
    // atomics of every thread, one 64-bit atomic over two words, then reads
    let b = init()
        + "atom.shared.add.u32 %r1, [s], 1;\natom.shared.add.u64 %rd2, [s+8], 1;\nbar.sync 0;\n"
        + "ld.shared.u32 %r1, [s];\nld.shared.u8 %r2, [s+12];\n";
    launch(&b, 1, 64).unwrap();
    // an atomic on a word with an unwritten byte
    let b = at(0, "st.shared.u8 [s], %r0;")
        + &at(0, "st.shared.u16 [s+2], %r0;")
        + "bar.sync 0;\n"
        + &at(1, "atom.shared.add.u32 %r1, [s], 1;");
    assert_eq!(uninit(&b, 1, 2), (0, 4, 1, 0));
}

#[test]
fn warp_sync_ordering_with_mixed_sizes() {
    let b = init()
        + &at(0, "st.shared.u8 [s+3], %r0;")
        + "bar.warp.sync 0xffffffff;\n"
        + &at(1, "ld.shared.u32 %r1, [s];");
    launch(&b, 1, 32).unwrap();
    // the warp sync orders nothing across warps
    let b = init()
        + &at(0, "st.shared.u8 [s+3], %r0;")
        + "bar.warp.sync 0xffffffff;\n"
        + &at(32, "ld.shared.u32 %r1, [s];");
    assert_eq!(race(&b, 64), (3, "read", "write", 0, 32));
    // two readers of one warp, then a byte store by a third lane
    let rd = at(0, "ld.shared.u32 %r1, [s];") + &at(1, "ld.shared.u32 %r1, [s];");
    let b = init() + &rd + "bar.warp.sync 0xffffffff;\n" + &at(2, "st.shared.u8 [s+1], %r0;");
    launch(&b, 1, 32).unwrap();
    let b = init() + &rd + &at(2, "st.shared.u8 [s+1], %r0;");
    assert_eq!(race(&b, 32), (1, "write", "read", MANY, 2));
    // one reader, one sync, a second reader: the tag keeps the later sync
    let b = init()
        + &at(0, "ld.shared.u16 %r1, [s+2];")
        + "bar.warp.sync 0xffffffff;\n"
        + &at(1, "ld.shared.u32 %r1, [s];")
        + &at(2, "st.shared.u8 [s+3], %r0;");
    assert_eq!(race(&b, 32), (3, "write", "read", MANY, 2));
    let b = init()
        + &at(0, "ld.shared.u16 %r1, [s+2];")
        + "bar.warp.sync 0xffffffff;\n"
        + &at(1, "ld.shared.u32 %r1, [s];")
        + "bar.warp.sync 0xffffffff;\n"
        + &at(2, "st.shared.u8 [s+3], %r0;");
    launch(&b, 1, 32).unwrap();
    // a write of a lane before the sync, a byte read of the same word after
    let b = init()
        + &at(5, "st.shared.u16 [s+6], %r0;")
        + "bar.warp.sync 0xffffffff;\n"
        + &at(4, "ld.shared.v2.u32 {%r1, %r2}, [s];");
    launch(&b, 1, 32).unwrap();
}

#[test]
fn readers_of_different_warps_then_a_write() {
    let rd = at(0, "ld.shared.u32 %r1, [s+8];") + &at(32, "ld.shared.u32 %r1, [s+8];");
    let b = init() + &rd + &at(33, "st.shared.u8 [s+9], %r0;");
    assert_eq!(race(&b, 64), (9, "write", "read", MANY, 33));
    // the warp sync does not order readers of several warps
    let b = init() + &rd + "bar.warp.sync 0xffffffff;\n" + &at(1, "st.shared.u8 [s+9], %r0;");
    assert_eq!(race(&b, 64), (9, "write", "read", MANY, 1));
    // a reader of the same thread as the writer, in a word other threads
    // read only partly
    let b = init()
        + &at(0, "ld.shared.u8 %r1, [s+8];")
        + &at(32, "ld.shared.u8 %r1, [s+11];")
        + &at(40, "st.shared.u8 [s+9], %r0;")
        + &at(40, "st.shared.u16 [s+10], %r0;");
    assert_eq!(race(&b, 64), (11, "write", "read", 32, 40));
    // several readers in an earlier interval do not conflict
    let b = init() + &rd + "bar.sync 0;\n" + &at(33, "st.shared.u32 [s+8], %r0;");
    launch(&b, 1, 64).unwrap();
}

#[test]
fn uninitialised_bytes_inside_written_words() {
    let w = at(0, "st.shared.u8 [s], %r0;")
        + &at(0, "st.shared.u8 [s+1], %r0;")
        + &at(0, "st.shared.u8 [s+3], %r0;")
        + "bar.sync 0;\n";
    assert_eq!(
        uninit(&(w.clone() + &at(1, "ld.shared.u32 %r1, [s];")), 1, 2),
        (0, 4, 1, 0)
    );
    assert_eq!(
        uninit(&(w.clone() + &at(1, "ld.shared.u8 %r1, [s+2];")), 1, 2),
        (2, 1, 1, 0)
    );
    assert_eq!(
        uninit(&(w.clone() + &at(1, "ld.shared.u16 %r1, [s+2];")), 1, 2),
        (2, 2, 1, 0)
    );
    launch(&(w.clone() + &at(1, "ld.shared.u8 %r1, [s+3];")), 1, 2).unwrap();
    launch(&(w.clone() + &at(1, "ld.shared.u16 %r1, [s];")), 1, 2).unwrap();
    // the uninitialised byte is found before a race on a later byte of the
    // access, a race on an earlier byte before it
    let b = w.clone() + &at(0, "st.shared.u8 [s+3], %r0;") + &at(1, "ld.shared.u32 %r1, [s];");
    assert_eq!(uninit(&b, 1, 2), (0, 4, 1, 0));
    let b = w.clone() + &at(0, "st.shared.u8 [s+1], %r0;") + &at(1, "ld.shared.u32 %r1, [s];");
    assert_eq!(race(&b, 2), (1, "read", "write", 0, 1));
    // a 16-byte read whose third word misses a byte
    let b = at(0, "st.shared.v2.u32 [s], {%r0, %r0};")
        + &at(0, "st.shared.u32 [s+8], %r0;")
        + &at(0, "st.shared.u8 [s+12], %r0;")
        + &at(0, "st.shared.u16 [s+14], %r0;")
        + "bar.sync 0;\n"
        + &at(1, "ld.shared.v4.u32 {%r1, %r2, %r3, %r4}, [s];");
    assert_eq!(uninit(&b, 1, 2), (0, 16, 1, 0));
    // the word store fills the hole
    let b =
        w + &at(0, "st.shared.u32 [s], %r0;") + "bar.sync 0;\n" + &at(1, "ld.shared.u32 %r1, [s];");
    launch(&b, 1, 2).unwrap();
}

#[test]
fn later_ctas_start_unwritten() {
    // every CTA writes and reads its own words: fine on one worker
    let b = init() + "ld.shared.v4.u32 {%r1, %r2, %r3, %r4}, [s+16];\nld.shared.u8 %r1, [s+5];\n";
    launch(&b, 3, 32).unwrap();
    // CTA 0 writes a word only; CTA 1 reads it without writing
    let b = "mov.u32 %r5, %ctaid.x;\nsetp.eq.u32 %p2, %r5, 0;\n".to_string()
        + "setp.eq.u32 %p1, %r0, 0;\nand.pred %p3, %p1, %p2;\n@%p3 st.shared.u32 [s+4], %r0;\n"
        + "bar.sync 0;\nld.shared.u8 %r1, [s+5];\n";
    assert_eq!(uninit(&b, 2, 32), (5, 1, 0, 1));
    // CTA 0 splits a word into bytes; CTA 1 writes part of it
    let b = "mov.u32 %r5, %ctaid.x;\nsetp.eq.u32 %p2, %r5, 0;\nsetp.eq.u32 %p1, %r0, 0;\n"
        .to_string()
        + "and.pred %p3, %p1, %p2;\nnot.pred %p2, %p2;\nand.pred %p2, %p1, %p2;\n"
        + "@%p3 st.shared.u32 [s+4], %r0;\n@%p3 st.shared.u8 [s+6], %r0;\n"
        + "@%p2 st.shared.u16 [s+4], %r0;\nbar.sync 0;\n@%p1 ld.shared.u32 %r1, [s+4];\n";
    assert_eq!(uninit(&b, 2, 32), (4, 4, 0, 1));
}
