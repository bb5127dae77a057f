//! `mma.sync` (issue 31): gather the warp's fragments into whole tiles by
//! the PTX ISA's fragment layout, compute `D = A·B + C` with the tensor-core
//! model of the **emulated device's** SM ([`Kernel::sm`](super::Kernel),
//! not the module's `.target`: sm_80 PTX on an H200 runs with the H100
//! model), and scatter `D` back.
//!
//! Layout (PTX ISA 8.x, with `g = laneid >> 2` (`groupID`) and
//! `t = laneid % 4` (`threadID_in_group`)):
//!
//! * §9.7.14.5.8, `m16n8k16` f16/bf16: `A` element `i` (0..8, register
//!   `i / 2`, low half for even `i`) at row `g + 8·((i >> 1) & 1)`, column
//!   `2t + (i & 1) + 8·(i >> 2)`; `B` element `i` (0..4, register `i / 2`)
//!   at row `2t + (i & 1) + 8·(i >> 1)`, column `g`.
//! * §9.7.14.5.7, `m16n8k8` tf32: `A` register `i` (0..4) at row
//!   `g + 8·(i & 1)`, column `t + 4·(i >> 1)`; `B` register `i` (0..2) at
//!   row `t + 4·i`, column `g`.
//! * `C`/`D` (both shapes, §9.7.14.5.7/8): element `i` (0..4) at row
//!   `g + 8·(i >> 1)`, column `2t + (i & 1)`.

use super::super::code::XInst;
use super::super::error::SimError;
use super::{Exec, Fault};
use crate::tensor_core::{self, InputFormat};

/// Row and column of `A` element `i` of lane `(g, t)`.
fn a_pos(fmt: InputFormat, g: usize, t: usize, i: usize) -> (usize, usize) {
    match fmt {
        InputFormat::Tf32 => (g + 8 * (i & 1), t + 4 * (i >> 1)),
        _ => (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)),
    }
}

/// Row (the `k` index) of `B` element `i` of lane `(g, t)`; its column is `g`.
fn b_row(fmt: InputFormat, t: usize, i: usize) -> usize {
    match fmt {
        InputFormat::Tf32 => t + 4 * i,
        _ => 2 * t + (i & 1) + 8 * (i >> 1),
    }
}

/// Row and column of `C`/`D` element `i` of lane `(g, t)`.
fn c_pos(g: usize, t: usize, i: usize) -> (usize, usize) {
    (g + 8 * (i >> 1), 2 * t + (i & 1))
}

impl Exec<'_> {
    /// Execute the `mma.sync` at `pc` for the full warp `w` (the caller
    /// checked that all 32 lanes are there and converged).
    pub(crate) fn exec_mma(
        &mut self,
        w: usize,
        inst: &XInst,
        pc: usize,
        fmt: InputFormat,
        ops: u32,
    ) -> Result<(), SimError> {
        let slots = self.k.e.mma[ops as usize];
        let Some(fma) = tensor_core::params(self.k.sm, fmt) else {
            return Err(self.to_err(
                Fault::Warp(format!(
                    "no tensor-core model of {} for {} operands",
                    self.k.sm, fmt
                )),
                w * 32,
                pc,
            ));
        };
        let k = if fmt == InputFormat::Tf32 { 8 } else { 16 };
        let (mut a, mut b, mut c) = (vec![0u32; 16 * k], vec![0u32; k * 8], [0f32; 128]);
        for l in 0..32 {
            let th = w * 32 + l;
            let (g, t) = (l >> 2, l & 3);
            let rd = |s: &mut Self, slot: u32| -> Result<u32, SimError> {
                s.r_checked(th, pc, slot)
                    .map(|v| v as u32)
                    .map_err(|f| s.to_err(*f, th, pc))
            };
            for (r, &slot) in slots[..4].iter().enumerate() {
                let v = rd(self, slot)?;
                if fmt == InputFormat::Tf32 {
                    let (row, col) = a_pos(fmt, g, t, r);
                    a[row * k + col] = v;
                } else {
                    for h in 0..2 {
                        let (row, col) = a_pos(fmt, g, t, 2 * r + h);
                        a[row * k + col] = (v >> (16 * h)) & 0xFFFF;
                    }
                }
            }
            for (r, &slot) in slots[4..6].iter().enumerate() {
                let v = rd(self, slot)?;
                if fmt == InputFormat::Tf32 {
                    b[b_row(fmt, t, r) * 8 + g] = v;
                } else {
                    for h in 0..2 {
                        b[b_row(fmt, t, 2 * r + h) * 8 + g] = (v >> (16 * h)) & 0xFFFF;
                    }
                }
            }
            for (i, &slot) in slots[6..].iter().enumerate() {
                let v = rd(self, slot)?;
                let (row, col) = c_pos(g, t, i);
                c[row * 8 + col] = f32::from_bits(v);
            }
        }
        let d = tensor_core::mma_tile(&fma, (16, 8, k), &a, &b, &c)
            .expect("the tiles have the instruction's shape");
        for l in 0..32 {
            let (g, t) = (l >> 2, l & 3);
            for i in 0..4 {
                let (row, col) = c_pos(g, t, i);
                self.w_collective(w * 32 + l, inst.d[i], u64::from(d[row * 8 + col].to_bits()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of every tile is owned by exactly one (lane, slot).
    #[test]
    fn layouts_cover_each_tile_once() {
        for (fmt, k, per) in [(InputFormat::Bf16, 16, 8), (InputFormat::Tf32, 8, 4)] {
            let mut seen_a = vec![0; 16 * k];
            let mut seen_b = vec![0; k * 8];
            let mut seen_c = [0; 128];
            for l in 0..32 {
                let (g, t) = (l >> 2, l & 3);
                for i in 0..per {
                    let (r, c) = a_pos(fmt, g, t, i);
                    seen_a[r * k + c] += 1;
                }
                for i in 0..per / 2 {
                    seen_b[b_row(fmt, t, i) * 8 + g] += 1;
                }
                for i in 0..4 {
                    let (r, c) = c_pos(g, t, i);
                    seen_c[r * 8 + c] += 1;
                }
            }
            assert!(seen_a.iter().chain(&seen_b).chain(&seen_c).all(|&n| n == 1));
        }
        // spot checks against the ISA's figures: lane 5 (g 1, t 1)
        assert_eq!(a_pos(InputFormat::F16, 1, 1, 0), (1, 2));
        assert_eq!(a_pos(InputFormat::F16, 1, 1, 3), (9, 3));
        assert_eq!(a_pos(InputFormat::F16, 1, 1, 6), (9, 10));
        assert_eq!(b_row(InputFormat::F16, 1, 3), 11);
        assert_eq!(a_pos(InputFormat::Tf32, 1, 1, 2), (1, 5));
        assert_eq!(b_row(InputFormat::Tf32, 1, 1), 5);
        assert_eq!(c_pos(1, 1, 3), (9, 3));
    }
}
