//! The per-word shadow against the per-byte rule: a reference that keeps
//! two tags per byte (the check as it was before the per-word
//! representation, written out independently of [`super::step`]) and the
//! shadow run the same random access sequences — mixed sizes, atomics,
//! several warps, barriers, warp syncs, CTAs one after the other and the
//! epoch-overflow clear — and must give the same findings and the same
//! tags for every byte after every access.

use super::*;

/// The per-byte rule: tags per byte, one byte at a time.
struct Reference {
    w: Vec<u64>,
    r: Vec<u64>,
}

impl Reference {
    fn check(&mut self, a: &Access) -> Result<(), Box<Fault>> {
        for i in a.off..a.off + a.len {
            self.byte(a, i)?;
        }
        Ok(())
    }

    fn byte(&mut self, a: &Access, i: usize) -> Result<(), Box<Fault>> {
        let (t, ep, write, atomic) = (a.t, a.epoch, a.write, a.atomic);
        let w = t / 32;
        let my = tag(ep, a.wepoch, t as u64, atomic);
        let wt = self.w[i];
        if (!write || atomic) && ((wt >> 32) as u32) < a.epoch0 {
            return Err(Box::new(Fault::UninitShared(a.off as u64, a.len as u32)));
        }
        let wepoch = a.wepoch;
        let conflict = |tg: u64| -> bool {
            if (tg >> 32) as u32 != ep {
                return false;
            }
            let ot = tg & 0x7FF;
            if ot == t as u64 {
                return false;
            }
            !(tag_warp(ot) == Some(w) && ((tg >> 12) & 0xF_FFFF) as u32 != wepoch & 0xF_FFFF)
        };
        let this = Kind::of(write, atomic);
        if conflict(wt) && !(atomic && wt & ATOMIC_BIT != 0) {
            let other = if wt & ATOMIC_BIT != 0 {
                Kind::Atomic
            } else {
                Kind::Write
            };
            return Err(Box::new(Fault::Race {
                offset: i as u64,
                this,
                other,
                other_tid: (wt & 0x7FF) as u32,
            }));
        }
        let rt = self.r[i];
        if write {
            if conflict(rt) {
                let ot = (rt & 0x7FF) as u32;
                return Err(Box::new(Fault::Race {
                    offset: i as u64,
                    this,
                    other: Kind::Read,
                    other_tid: if ot as u64 >= MULTI_WARP {
                        u32::MAX
                    } else {
                        ot
                    },
                }));
            }
            self.w[i] = my;
        } else {
            let ot = rt & 0x7FF;
            self.r[i] = if (rt >> 32) as u32 == ep && ot != t as u64 {
                if tag_warp(ot) == Some(w) {
                    tag(ep, wepoch, MULTI_WARP + w as u64, false)
                } else {
                    tag(ep, 0, MULTI, false)
                }
            } else {
                my
            };
        }
        Ok(())
    }
}

/// A finding, comparable.
fn key(f: &Fault) -> String {
    match f {
        Fault::Race {
            offset,
            this,
            other,
            other_tid,
        } => format!("race {offset} {this} {other} {other_tid}"),
        Fault::UninitShared(o, l) => format!("uninit {o} {l}"),
        _ => "other".to_string(),
    }
}

/// xorshift64*: a fixed sequence per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The epoch counters of one worker, as `CtaState` keeps them.
struct Epochs {
    epoch: u32,
    epoch0: u32,
    wepoch: Vec<u32>,
}

/// Run one random sequence of `steps` events; returns how many accesses
/// it checked and how many of them were findings.
fn run(seed: u64, smem: usize, threads: usize, steps: usize) -> (usize, usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut sh = SharedShadow::new(smem);
    let mut rf = Reference {
        w: vec![0; smem],
        r: vec![0; smem],
    };
    let nw = threads.div_ceil(32);
    // some sequences start near the end of the epoch counter or of the
    // 20-bit warp-sync field
    let start = if rng.below(4) == 0 {
        u32::MAX - 1026 - rng.below(4) as u32
    } else {
        0
    };
    let mut e = Epochs {
        epoch: start + 1,
        epoch0: start + 1,
        wepoch: vec![0; nw],
    };
    if rng.below(4) == 0 {
        e.wepoch.fill(0xF_FFFE);
    }
    // a few threads make collisions likely
    let active: Vec<usize> = (0..4).map(|_| rng.below(threads as u64) as usize).collect();
    let (mut checked, mut findings) = (0, 0);
    // most sequences start with shared memory written by one thread, in
    // pieces of random sizes, then a barrier
    if rng.below(4) != 0 {
        let mut off = 0;
        while off < smem {
            let len = [1, 2, 4, 8, 16][rng.below(5) as usize];
            if off % len != 0 || off + len > smem {
                continue;
            }
            let a = Access {
                t: active[0],
                off,
                len,
                write: true,
                atomic: false,
                epoch: e.epoch,
                epoch0: e.epoch0,
                wepoch: e.wepoch[active[0] / 32],
                same: 0,
            };
            assert!(sh.access(&a).is_ok() && rf.check(&a).is_ok());
            off += len;
        }
        e.epoch += 1;
    }
    for _ in 0..steps {
        match rng.below(40) {
            0..=2 => e.epoch += 1, // bar.sync
            3..=4 => {
                let w = active[rng.below(4) as usize] / 32;
                e.wepoch[w] = e.wepoch[w].wrapping_add(1);
            }
            5 => {
                // the next CTA on this worker (CtaState::reset)
                if e.epoch > crate::sim::cta::EPOCH_RESTART {
                    sh.clear();
                    rf.w.fill(0);
                    rf.r.fill(0);
                    e.epoch = 0;
                }
                e.epoch += 1;
                e.epoch0 = e.epoch;
                e.wepoch.fill(0);
            }
            _ => {
                let len = [1, 2, 4, 4, 4, 8, 16][rng.below(7) as usize];
                if len > smem {
                    continue;
                }
                let off = rng.below((smem - len) as u64 / len as u64 + 1) as usize * len;
                let write = rng.below(3) == 0;
                let atomic = write && (len == 4 || len == 8) && rng.below(3) == 0;
                let t = active[rng.below(4) as usize];
                let a = Access {
                    t,
                    off,
                    len,
                    write,
                    atomic,
                    epoch: e.epoch,
                    epoch0: e.epoch0,
                    wepoch: e.wepoch[t / 32],
                    same: 0,
                };
                // the general path alone on odd seeds
                let got = if seed.is_multiple_of(2) {
                    sh.access(&a)
                } else {
                    sh.check(&a)
                };
                let got = got.map_err(|f| key(&f));
                let want = rf.check(&a).map_err(|f| key(&f));
                assert_eq!(got, want, "seed {seed}, access {checked}");
                checked += 1;
                // a finding ends a launch; the tags still agree (both
                // stop at the same byte), so the sequence goes on
                findings += want.is_err() as usize;
                for i in 0..smem {
                    assert_eq!(
                        sh.byte_tags(i),
                        [rf.w[i], rf.r[i]],
                        "seed {seed}, access {checked}, byte {i}"
                    );
                }
            }
        }
    }
    (checked, findings)
}

#[test]
fn per_word_tags_follow_the_per_byte_rule() {
    let (mut accesses, mut findings) = (0, 0);
    for seed in 0..4000 {
        let smem = [4, 7, 16, 34][seed as usize % 4];
        let threads = [2, 40, 96][seed as usize % 3];
        let (n, f) = run(seed, smem, threads, 300);
        accesses += n;
        findings += f;
    }
    // the sequences exercise both findings and clean accesses
    assert!(findings > 100_000, "{findings} findings of {accesses}");
    assert!(
        accesses - findings > 100_000,
        "{findings} findings of {accesses}"
    );
}

#[test]
fn split_words_join_again() {
    let a = |t, off, len, write, epoch| Access {
        t,
        off,
        len,
        write,
        atomic: false,
        epoch,
        epoch0: 1,
        wepoch: 0,
        same: 0,
    };
    let mut sh = SharedShadow::new(8);
    for i in 0..4 {
        sh.access(&a(i, i, 1, true, 1))
            .map_err(|f| key(&f))
            .unwrap();
    }
    assert_eq!(sh.words[0][0], SPLIT);
    // a word store in the next interval gives the bytes one write tag; the
    // read tags are all unread: the word is whole again
    sh.access(&a(5, 0, 4, true, 2))
        .map_err(|f| key(&f))
        .unwrap();
    assert_eq!(sh.words[0], [tag(2, 0, 5, false), 0]);
    assert!(sh.bytes.len() == 8);
    // a byte read splits it; a word read of a later interval joins it
    sh.access(&a(6, 1, 1, false, 3))
        .map_err(|f| key(&f))
        .unwrap();
    assert_eq!(sh.words[0][0], SPLIT);
    sh.access(&a(7, 0, 4, false, 4))
        .map_err(|f| key(&f))
        .unwrap();
    assert_eq!(sh.words[0], [tag(2, 0, 5, false), tag(4, 0, 7, false)]);
    // the second word was never split
    assert_eq!(sh.words[1], [0, 0]);
}

#[test]
fn an_ordering_beyond_the_epochs_clears_single_threads_only() {
    let a = |t, off, len, write| Access {
        t,
        off,
        len,
        write,
        atomic: false,
        epoch: 2,
        epoch0: 1,
        wepoch: 0,
        same: 0,
    };
    // `hb`: thread 3's accesses are ordered before the checked one
    let hb = |_: usize, ot: u64, _: bool| ot == 3;
    let mut sh = SharedShadow::new(16);
    sh.access(&a(3, 0, 4, true)).map_err(|f| key(&f)).unwrap();
    // thread 40 (another warp) reads thread 3's write: a race without hb
    let mut plain = SharedShadow::new(16);
    plain
        .access(&a(3, 0, 4, true))
        .map_err(|f| key(&f))
        .unwrap();
    assert!(plain.access(&a(40, 0, 4, false)).is_err());
    sh.check_hb(&a(40, 0, 4, false), &hb)
        .map_err(|f| key(&f))
        .unwrap();
    // thread 41 reads too (byte by byte, a split word): several readers
    for i in 0..4 {
        sh.check_hb(&a(41, i, 1, false), &hb)
            .map_err(|f| key(&f))
            .unwrap();
    }
    // thread 3 writes over the readers: they are several, which `hb`
    // (asked about single threads) does not clear
    let hb_all = |_: usize, _: u64, _: bool| true;
    match sh.check_hb(&a(3, 0, 4, true), &hb_all).map_err(|f| key(&f)) {
        Err(k) => assert!(k.starts_with("race"), "{k}"),
        Ok(()) => panic!("a write over several readers was cleared"),
    }
    // a single reader that `hb` orders: no finding, and the write tag is
    // the writer's
    let mut one = SharedShadow::new(16);
    one.access(&a(40, 8, 4, true)).map_err(|f| key(&f)).unwrap();
    let by_40 = |_: usize, ot: u64, w: bool| ot == 40 && w;
    let by_3 = |_: usize, ot: u64, w: bool| ot == 3 && !w;
    one.check_hb(&a(3, 8, 4, false), &by_40)
        .map_err(|f| key(&f))
        .unwrap();
    one.check_hb(&a(40, 8, 4, true), &by_3)
        .map_err(|f| key(&f))
        .unwrap();
    assert_eq!(one.byte_tags(8)[0], tag(2, 0, 40, false));
}
