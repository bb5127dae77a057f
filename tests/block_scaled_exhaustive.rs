//! Exhaustive sweeps of the block-scaled codecs against oracles written
//! here from the format definitions, independently of `src/`:
//!
//! * E2M1 on all 2^32 f32 bit patterns (the spec `encode_e2m1` and the
//!   kernels' software steps `encode_e2m1_branch_free`): the nearest of
//!   the eight magnitudes by exact distance, ties to the even code,
//!   saturation above 6, NaN → `0x7`, the sign kept.
//! * E8M0 `Floor` and `RCeil` for every MX element format on all 2^31
//!   non-negative f32 amax values (NaNs included), from exact arithmetic
//!   in f64, where every f32 — subnormals too — is a normal number:
//!   `Floor = clamp(floor(log2 amax) − emax, −127, 127)`, `RCeil` = the
//!   smallest power of two ≥ the f32 product `amax · rn(1/max)`, saturated
//!   to [2^-127, 2^127]; and a stride over the negative half (the sign is
//!   ignored).
//! * UE4M3 on the non-negative half plus a stride over the negative half:
//!   the nearest E4M3 value (a table built here from the bit layout), ties
//!   to the even mantissa, saturation at 448.
//!
//! `#[ignore]`d: run with `cargo test --release --test
//! block_scaled_exhaustive -- --ignored` (CI runs them via
//! `scripts/test.sh` with `CI=true`). Each sweep prints its time.

use ptxsmith::kernels::block_scaled::{self as bs, Format};
use rayon::prelude::*;
use std::time::Instant;

const CHUNK: u64 = 1 << 22;

/// Runs `check(bits)` for every `bits` in `[start, end)` (a `step` apart)
/// on every core (chunks of [`CHUNK`] inputs); returns how many failed and
/// the first few failures (the lowest inputs).
fn sweep(name: &str, start: u64, end: u64, step: u64, check: impl Fn(u32) -> bool + Sync) {
    let t0 = Instant::now();
    let chunks = (end - start).div_ceil(CHUNK * step);
    // Per chunk: its mismatches and up to 8 of them, in input order.
    let (failed, examples) = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let lo = start + c * CHUNK * step;
            let hi = (lo + CHUNK * step).min(end);
            let mut bad = (0u64, Vec::new());
            for b in (lo..hi).step_by(step as usize) {
                if !check(b as u32) {
                    bad.0 += 1;
                    if bad.1.len() < 8 {
                        bad.1.push(b as u32);
                    }
                }
            }
            bad
        })
        .reduce(
            || (0, Vec::new()),
            |mut a, b| {
                a.0 += b.0;
                a.1.extend(b.1);
                a.1.truncate(8);
                a
            },
        );
    let count = (end - start).div_ceil(step);
    println!(
        "{name}: {count} inputs, {failed} mismatches, {:.1} s on {} threads",
        t0.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    let shown: Vec<String> = examples.iter().map(|b| format!("{b:#010x}")).collect();
    assert_eq!(failed, 0, "{name}: first mismatching inputs {shown:?}");
}

/// The nearest E2M1 code by exact distance. `|x| − v` is exact in f64
/// wherever the choice is close (|x| within a factor 2^20 of `v`, at most
/// 24 + 23 significant bits); far from every point, rounding cannot flip
/// the comparison.
fn e2m1_oracle(x: f32) -> u8 {
    const MAGNITUDES: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    if x.is_nan() {
        return 0x7;
    }
    let sign = if x.is_sign_negative() { 0x8 } else { 0 };
    let a = (x as f64).abs();
    if a > 6.0 {
        return sign | 0x7; // satfinite, ±Inf included
    }
    let mut best = 0usize;
    let mut best_distance = f64::INFINITY;
    for (code, &v) in MAGNITUDES.iter().enumerate() {
        let d = (a - v).abs();
        if d < best_distance || (d == best_distance && code % 2 == 0) {
            best = code;
            best_distance = d;
        }
    }
    sign | best as u8
}

#[test]
#[ignore = "exhaustive: 2^32 inputs"]
fn e2m1_encoder_all_f32() {
    // The spec and the steps of the kernels' software encoder.
    sweep("e2m1 all f32", 0, 1 << 32, 1, |b| {
        let x = f32::from_bits(b);
        let want = e2m1_oracle(x);
        bs::encode_e2m1(x) == want && bs::encode_e2m1_branch_free(x) == want
    });
}

/// `floor(log2 a)` for a finite `a > 0`: the exponent of `a` as an f64,
/// which is normal for every f32.
fn floor_log2(a: f64) -> i32 {
    ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023
}

fn floor_oracle(amax: f32, emax: i32) -> u8 {
    let a = (amax as f64).abs();
    if a.is_nan() {
        return 0xFF;
    }
    if a.is_infinite() {
        return 0xFE;
    }
    if a == 0.0 {
        return 0;
    }
    ((floor_log2(a) - emax).clamp(-127, 127) + 127) as u8
}

fn rceil_oracle(amax: f32, inv_max: f32) -> u8 {
    let product = amax.abs() * inv_max; // the f32 product of the contract
    let p = product as f64;
    if p.is_nan() {
        return 0xFF;
    }
    if p.is_infinite() {
        return 0xFE;
    }
    if p == 0.0 {
        return 0;
    }
    // p is a power of two iff its f64 fraction field is zero.
    let exact_power = p.to_bits() & ((1u64 << 52) - 1) == 0;
    let k = floor_log2(p) + i32::from(!exact_power);
    (k.clamp(-127, 127) + 127) as u8
}

fn e8m0_check(b: u32) -> bool {
    let amax = f32::from_bits(b);
    [Format::Mxfp8E4m3, Format::Mxfp8E5m2, Format::Mxfp4]
        .iter()
        .all(|f| {
            let (emax, inv) = (f.element_emax(), f.element_max_reciprocal());
            bs::e8m0_floor(amax, emax) == floor_oracle(amax, emax as i32)
                && bs::e8m0_rceil(amax, inv) == rceil_oracle(amax, inv)
        })
}

#[test]
#[ignore = "exhaustive: 2^31 inputs × 3 formats × 2 rules"]
fn e8m0_floor_and_rceil_all_amax() {
    sweep("e8m0 floor+rceil, amax >= +0", 0, 1 << 31, 1, e8m0_check);
    sweep(
        "e8m0 floor+rceil, negative stride",
        1 << 31,
        1 << 32,
        251,
        e8m0_check,
    );
}

/// The 127 finite non-negative E4M3 values by code, from the bit layout.
fn e4m3_table() -> Vec<f64> {
    (0..0x7Fu32)
        .map(|c| {
            let (e, m) = ((c >> 3) as i32, c & 7);
            if e == 0 {
                m as f64 * 2f64.powi(-9)
            } else {
                (1.0 + m as f64 / 8.0) * 2f64.powi(e - 7)
            }
        })
        .collect()
}

fn ue4m3_oracle(table: &[f64], x: f32) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let a = (x as f64).abs();
    if a >= 448.0 {
        return 0x7E;
    }
    let hi = table.partition_point(|&v| v < a);
    if table[hi] == a || hi == 0 {
        return hi as u8;
    }
    let lo = hi - 1;
    let (dl, dh) = (a - table[lo], table[hi] - a);
    let code = if dl < dh || (dl == dh && lo % 2 == 0) {
        lo
    } else {
        hi
    };
    code as u8
}

#[test]
#[ignore = "exhaustive: 2^31 inputs"]
fn ue4m3_encoder_all_non_negative() {
    let table = e4m3_table();
    let check =
        |b: u32| bs::encode_ue4m3(f32::from_bits(b)) == ue4m3_oracle(&table, f32::from_bits(b));
    sweep("ue4m3, x >= +0", 0, 1 << 31, 1, check);
    sweep("ue4m3, negative stride", 1 << 31, 1 << 32, 251, check);
}
