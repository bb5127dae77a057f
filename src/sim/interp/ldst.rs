//! The memory instructions: `ld` (with sign extension and vectors), `st`
//! and `atom`/`red` (every operation, returning or not). Kept out of line
//! from the interpreter loop: their address paths (`super::access`) are
//! long, the arithmetic in `step` is short.

use super::super::code::XInst;
use super::super::fp::{self, FOp, Rnd};
use super::super::ir::*;
use super::access::{get_le, put_le};
use super::step::{reg, set};
use super::{Exec, Fault, Res, fault, mask, sext};

impl Exec<'_> {
    /// `ld{.space}{.vN}.type d, [a+off]`.
    #[inline(never)]
    pub(crate) fn exec_ld(&mut self, t: usize, pc: usize, rf: &mut [u64], i: &XInst) -> Res<()> {
        let Op::Ld {
            sp,
            size,
            signed,
            n,
        } = i.op
        else {
            unreachable!()
        };
        let addr = reg(rf, i.s[0]).wrapping_add(i.off as u64);
        if n == 1 {
            let (rs, ra) = Self::resolve(sp, addr);
            if rs == Space::Global {
                if ra & (size as u64 - 1) != 0 {
                    return fault(Fault::Misaligned(rs, addr, size as u32));
                }
                let v = self.g.load_scalar(t, pc, ra, size)?;
                set(
                    rf,
                    i.d[0],
                    if signed { sext(v, size * 8) as u64 } else { v },
                );
                return Ok(());
            }
        }
        let bytes = self.load_bytes(t, pc, sp, addr, size as u32 * n as u32)?;
        let sz = size as usize;
        for k in 0..n as usize {
            let v = get_le(&bytes[k * sz..], size);
            let v = if signed { sext(v, size * 8) as u64 } else { v };
            set(rf, i.d[k], v);
        }
        Ok(())
    }

    /// `st{.space}{.vN}.type [a+off], v`.
    #[inline(never)]
    pub(crate) fn exec_st(&mut self, t: usize, pc: usize, rf: &mut [u64], i: &XInst) -> Res<()> {
        let Op::St { sp, size, n } = i.op else {
            unreachable!()
        };
        let addr = reg(rf, i.s[0]).wrapping_add(i.off as u64);
        if n == 1 {
            let (rs, ra) = Self::resolve(sp, addr);
            if rs == Space::Global {
                if ra & (size as u64 - 1) != 0 {
                    return fault(Fault::Misaligned(rs, addr, size as u32));
                }
                return self.g.store_scalar(t, pc, ra, size, reg(rf, i.s[1]));
            }
        }
        let sz = size as usize;
        let mut bytes = [0u8; 32];
        for k in 0..n as usize {
            put_le(&mut bytes[k * sz..], size, reg(rf, i.s[k + 1]));
        }
        self.store_bytes(t, pc, sp, addr, &bytes[..sz * n as usize])
    }

    /// `atom{.space}.op.type d, [a+off], b{, c}` and `red` (no `d`).
    #[inline(never)]
    pub(crate) fn exec_atom(&mut self, t: usize, pc: usize, rf: &mut [u64], i: &XInst) -> Res<()> {
        let Op::Atom { sp, op, w, s, ret } = i.op else {
            unreachable!()
        };
        let addr = rf[i.s[0] as usize].wrapping_add(i.off as u64);
        let x = rf[i.s[1] as usize];
        let y = if op == AtomOp::Cas {
            rf[i.s[2] as usize]
        } else {
            0
        };
        let m = mask(w);
        // atom.add.f32 flushes subnormals on .global
        let ftz = Self::resolve(sp, addr).0 == Space::Global;
        let mut f = |old: u64| -> u64 {
            (match op {
                AtomOp::Add => old.wrapping_add(x),
                AtomOp::Min | AtomOp::Max => {
                    let lt = if s {
                        sext(x, w) < sext(old, w)
                    } else {
                        x & m < old & m
                    };
                    if lt == (op == AtomOp::Min) { x } else { old }
                }
                AtomOp::Inc => {
                    if old & m >= x & m {
                        0
                    } else {
                        old + 1
                    }
                }
                AtomOp::Dec => {
                    if old & m == 0 || old & m > x & m {
                        x
                    } else {
                        old - 1
                    }
                }
                AtomOp::And => old & x,
                AtomOp::Or => old | x,
                AtomOp::Xor => old ^ x,
                AtomOp::Exch => x,
                AtomOp::Cas => {
                    if old & m == x & m {
                        y
                    } else {
                        old
                    }
                }
                AtomOp::AddF32 => {
                    fp::f32_op(FOp::Add, Rnd::Rn, ftz, false, old as u32, x as u32, 0) as u64
                }
                AtomOp::AddF64 => (f64::from_bits(old) + f64::from_bits(x)).to_bits(),
            }) & m
        };
        let old = self.atomic(t, pc, sp, addr, w as u32 / 8, &mut f)?;
        if ret && i.d[0] != NO_REG {
            rf[i.d[0] as usize] = if s { sext(old, w) as u64 & m } else { old };
        }
        Ok(())
    }
}
