//! The user tuner (issue 32): identical-bit candidates give a winner per
//! SM with the evidence; candidates whose bits differ are refused with a
//! typed error naming both and the first differing byte.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{F32, U32, U64};
use ptxsmith::dsl::{AtomOp, Kernel, Rounding::Rn};
use ptxsmith::runtime::LaunchConfig;
use ptxsmith::tune::{Ranking, TuneError, Tuner};
use ptxsmith::{Sm, kernel_params};

kernel_params! {
    /// `out[i] = x[i] · k + 1` for `i < n`.
    pub struct AxpArgs => AxpRegs { x: Ptr<F32>, out: Ptr<F32>, n: U32 }
}

const N: usize = 700;

fn input() -> Vec<f32> {
    (0..N).map(|i| (i as f32 - 300.0) * 0.731).collect()
}

fn generate(sm: Sm, k: f32) -> ptxsmith::Result<Kernel<AxpArgs>> {
    Kernel::<AxpArgs>::generate("user_axp", sm, |b, p| {
        b.grid_stride(p.n, |b, i| {
            let (xi, oi) = (b.offset(p.x, i), b.offset(p.out, i));
            let v = b.ld_global(xi, 0);
            let m = b.fmul(Rn, v, k);
            let y = b.fadd(Rn, m, 1.0f32);
            b.st_global(oi, 0, y);
        })
    })
}

/// A launch of `block` threads per CTA and `smem` bytes of dynamic shared
/// memory (unused by the kernel: it only lowers the occupancy).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shape {
    block: u32,
    smem: u32,
}

fn launch(
    t: &mut ptxsmith::tune::Trial<'_, AxpArgs>,
    grid: u32,
    s: Shape,
) -> ptxsmith::Result<Vec<f32>> {
    let st = t.stream().clone();
    let x = st.upload(&input())?;
    let mut out = st.context().alloc::<f32>(N)?;
    let args = AxpArgs {
        x: st.arg("x", &x)?,
        out: st.arg_mut("out", &mut out)?,
        n: N as u32,
    };
    let mut cfg = LaunchConfig::linear(grid, s.block);
    cfg.dynamic_smem_bytes = s.smem;
    t.launch(cfg, args)?;
    st.to_vec(&out)
}

#[test]
fn identical_bit_candidates_give_a_winner_per_sm_with_evidence() {
    // The same kernel at two block sizes; the first also asks for 40 KiB
    // of dynamic shared memory per CTA, so few of its one-warp CTAs fit on
    // an SM: low occupancy, a higher estimated cost.
    let cands = [
        Shape {
            block: 32,
            smem: 40 << 10,
        },
        Shape {
            block: 256,
            smem: 0,
        },
    ];
    let sms = [Sm::Sm80, Sm::Sm90];
    let tuned = Tuner::new(sms)
        .gpu(false)
        .tune(&cands, |sm, _| generate(sm, 2.5), |t, &s| launch(t, 3, s))
        .unwrap();
    assert_eq!(tuned.winners.len(), 2);
    for (r, sm) in tuned.winners.iter().zip(sms) {
        assert_eq!(r.sm, sm);
        assert_eq!(r.ranking, Ranking::Estimated);
        assert_eq!(r.evidence.len(), 2);
        for e in &r.evidence {
            let est = &e.estimate;
            assert!(e.timed.is_none());
            assert_eq!(est.launches.len(), 1);
            assert!(est.instructions > 0, "{est:?}");
            // One 4-byte load and one 4-byte store per element.
            assert_eq!(est.global_bytes, 8 * N as u64, "{est:?}");
            assert_eq!(est.traffic.launches, 1);
            assert_eq!(est.traffic.bytes_uploaded, 4 * N as u64);
            assert!(est.occupancy.is_some());
            // The pinned ptxas' register report, where it is installed.
            if ptxsmith::nvtools::NvTools::locate().is_some() {
                assert!(est.registers.is_some_and(|r| r > 0), "{est:?}");
            }
        }
        let (low, full) = (&r.evidence[0].estimate, &r.evidence[1].estimate);
        assert!(
            low.occupancy.unwrap().fraction() < full.occupancy.unwrap().fraction(),
            "{low:?} {full:?}"
        );
        assert!(low.cost > full.cost, "{low:?} {full:?}");
        assert_eq!(r.winner, 1);
        assert_eq!(*r.best(), cands[1]);
        assert_eq!(tuned.winner(sm), Some(&cands[1]));
    }
    assert_eq!(tuned.winner(Sm::Sm70), None);
}

#[test]
fn candidates_with_different_bits_are_refused_naming_both() {
    let ks = [2.5f32, f32::from_bits(2.5f32.to_bits() + 1)];
    let e = Tuner::new([Sm::Sm80])
        .gpu(false)
        .ptxas(false)
        .tune(
            &ks,
            |sm, &k| generate(sm, k),
            |t, _| {
                launch(
                    t,
                    3,
                    Shape {
                        block: 128,
                        smem: 0,
                    },
                )
            },
        )
        .unwrap_err();
    // The host's first differing byte.
    let host = |k: f32| -> Vec<u8> {
        input()
            .iter()
            .flat_map(|&v| (v * k + 1.0).to_bits().to_le_bytes())
            .collect()
    };
    let (a, b) = (host(ks[0]), host(ks[1]));
    let want = a.iter().zip(&b).position(|(x, y)| x != y).unwrap();
    match &e {
        TuneError::Differs {
            sm,
            first,
            second,
            byte,
            first_byte,
            second_byte,
            first_len,
            second_len,
        } => {
            assert_eq!(*sm, Sm::Sm80);
            assert_eq!(first, &format!("{:?}", ks[0]));
            assert_eq!(second, &format!("{:?}", ks[1]));
            assert_eq!(*byte, want);
            assert_eq!(first_byte.0, Some(a[want]));
            assert_eq!(second_byte.0, Some(b[want]));
            assert_eq!((*first_len, *second_len), (4 * N, 4 * N));
        }
        other => panic!("expected Differs, got {other}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("2.5 and 2.5000002") && msg.contains(&format!("byte {want}")),
        "{msg}"
    );
}

#[test]
fn a_failing_candidate_is_named() {
    let e = Tuner::new([Sm::Sm80])
        .gpu(false)
        .ptxas(false)
        .tune(
            &[
                Shape { block: 64, smem: 0 },
                Shape {
                    block: 4096, // more threads than a CTA may have
                    smem: 0,
                },
            ],
            |sm, _| generate(sm, 1.0),
            |t, &s| launch(t, 1, s),
        )
        .unwrap_err();
    assert!(
        matches!(&e, TuneError::Candidate { candidate, sm: Sm::Sm80, .. } if candidate.contains("4096")),
        "{e}"
    );
}

#[test]
fn nothing_to_tune_is_an_error() {
    let none: [Shape; 0] = [];
    let e = Tuner::new([Sm::Sm80])
        .tune(&none, |sm, _| generate(sm, 1.0), |t, &s| launch(t, 1, s))
        .unwrap_err();
    assert!(matches!(e, TuneError::Nothing(_)), "{e}");
}

kernel_params! {
    /// Each thread copies 4 f32 with a v4 load and store, loads one u64
    /// and adds 1 to a u32 counter with an atomic.
    pub struct WidthArgs => WidthRegs { x: Ptr<F32>, out: Ptr<F32>, w: Ptr<U64>, count: Ptr<U32> }
}

#[test]
fn global_bytes_count_widths_and_vectors() {
    const THREADS: u32 = 64;
    let tuned = Tuner::new([Sm::Sm80])
        .gpu(false)
        .ptxas(false)
        .tune(
            &[()],
            |sm, _| {
                Kernel::<WidthArgs>::generate("widths", sm, |b, p| {
                    let i = b.global_id_x();
                    let i4 = b.mul_lo(i, 4u32);
                    let (xi, oi, wi) = (b.offset(p.x, i4), b.offset(p.out, i4), b.offset(p.w, i));
                    let v = b.ld_global_nc_v4(xi, 0);
                    b.st_global_v4(oi, 0, v);
                    let _ = b.ld_global(wi, 0);
                    let _ = b.atom_global(AtomOp::Add, p.count, 1u32, None);
                })
            },
            |t, _| {
                let st = t.stream().clone();
                let ctx = st.context().clone();
                let x = st.upload(&vec![1.0f32; 4 * THREADS as usize])?;
                let w = st.upload(&vec![7u64; THREADS as usize])?;
                let mut out = ctx.alloc::<f32>(4 * THREADS as usize)?;
                let mut count = st.upload(&[0u32])?;
                let args = WidthArgs {
                    x: st.arg("x", &x)?,
                    out: st.arg_mut("out", &mut out)?,
                    w: st.arg("w", &w)?,
                    count: st.arg_mut("count", &mut count)?,
                };
                t.launch(LaunchConfig::linear(2, THREADS / 2), args)?;
                st.to_vec(&count)
            },
        )
        .unwrap();
    let est = &tuned.winners[0].evidence[0].estimate;
    // Per thread: 16 loaded + 16 stored + 8 loaded + 4 by the atomic.
    assert_eq!(
        est.global_bytes,
        u64::from(THREADS) * (16 + 16 + 8 + 4),
        "{est:?}"
    );
}

#[test]
fn gpu_candidates_are_timed_on_the_device_of_its_sm() {
    // On a GPU (or the driver emulator in CI's emulator pass): the GPU's SM
    // is ranked by device time (CUDA events), its bits checked against the
    // simulator's; another SM is still ranked by the estimate.
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    let gpu_sm = ctx.sm();
    let other = if gpu_sm == Sm::Sm80 {
        Sm::Sm90
    } else {
        Sm::Sm80
    };
    let cands = [
        Shape { block: 64, smem: 0 },
        Shape {
            block: 256,
            smem: 0,
        },
    ];
    drop(ctx);
    let tuned = Tuner::new([gpu_sm, other])
        .ptxas(false)
        .warmup(1)
        .runs(3)
        .tune(&cands, |sm, _| generate(sm, 2.5), |t, &s| launch(t, 3, s))
        .unwrap();
    let on_gpu = &tuned.winners[0];
    assert_eq!(on_gpu.ranking, Ranking::Timed);
    for e in &on_gpu.evidence {
        let t = e.timed.expect("timed on the device");
        assert!(t.as_secs_f64() < 60.0, "{t:?}");
    }
    assert_eq!(tuned.winners[1].ranking, Ranking::Estimated);
    assert!(tuned.winners[1].evidence.iter().all(|e| e.timed.is_none()));
}
