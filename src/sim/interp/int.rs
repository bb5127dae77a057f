//! Integer helpers: widening multiplies, integer comparison, `bfe`, `prmt`.

use super::super::ir::Cmp;
use super::{mask, sext};

#[inline(always)]
pub(crate) fn wide_mul(a: u64, b: u64, w: u8, s: bool) -> u128 {
    if s {
        (sext(a, w) as i128).wrapping_mul(sext(b, w) as i128) as u128
    } else {
        ((a & mask(w)) as u128) * ((b & mask(w)) as u128)
    }
}

/// `bfe.{s,u}{w}` of `a` with position `b` and length `c` (their low
/// bytes).
#[inline(always)]
pub(crate) fn bfe(a: u64, b: u64, c: u64, w: u8, s: bool) -> u64 {
    let (x, pos, len) = (a & mask(w), b & 0xFF, c & 0xFF);
    let msb = w as u64 - 1;
    let sbit = if !s || len == 0 {
        0
    } else {
        (x >> (pos + len - 1).min(msb)) & 1
    };
    // bits 0..n come from x at pos.., the rest are sbit
    let n = if pos > msb {
        0
    } else {
        len.min(w as u64 - pos)
    };
    let low = if n == 0 { 0 } else { u64::MAX >> (64 - n) };
    let field = if n == 0 { 0 } else { (x >> pos) & low };
    field | if sbit == 1 { mask(w) & !low } else { 0 }
}

#[inline(always)]
pub(crate) fn icmp(c: Cmp, o: std::cmp::Ordering) -> bool {
    // per comparison, the outcomes (bit 0 less, 1 equal, 2 greater) that
    // make it true; the unordered forms are false on integers
    const TRUE_ON: [u8; 14] = [
        0b010, // eq
        0b101, // ne
        0b001, // lt
        0b011, // le
        0b100, // gt
        0b110, // ge
        0, 0, 0, 0, 0, 0, 0, 0,
    ];
    (TRUE_ON[c as usize] >> (o as i8 + 1)) & 1 != 0
}

/// `prmt.b32{.mode}`.
pub fn prmt(a: u32, b: u32, c: u32, mode: u8) -> u32 {
    let bytes = (b as u64) << 32 | a as u64;
    let byte = |k: u32| ((bytes >> (8 * k)) & 0xFF) as u32;
    let sel: [u32; 4] = match mode {
        0 => {
            let mut d = 0u32;
            for k in 0..4 {
                let ctl = (c >> (4 * k)) & 0xF;
                let mut v = byte(ctl & 7);
                if ctl & 8 != 0 {
                    v = if v & 0x80 != 0 { 0xFF } else { 0 };
                }
                d |= v << (8 * k);
            }
            return d;
        }
        _ => {
            let s = c & 3;
            match mode {
                1 => [s, (s + 1) % 8, (s + 2) % 8, (s + 3) % 8], // f4e
                2 => [s, (s + 7) % 8, (s + 6) % 8, (s + 5) % 8], // b4e
                3 => [s, s, s, s],                               // rc8
                4 => [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]][s as usize], // ecl
                5 => [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]][s as usize], // ecr
                _ => {
                    let p = [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]][s as usize]; // rc16
                    p
                }
            }
        }
    };
    let mut d = 0u32;
    for (k, s) in sel.iter().enumerate() {
        d |= byte(*s) << (8 * k);
    }
    d
}
