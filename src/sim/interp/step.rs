//! The semantics of one instruction (`Exec::step`): integer, float,
//! comparison, conversion, memory, atomic and control operations.

use super::super::code::XInst;
use super::super::fp::{self, F32_NAN, FOp, MiniFmt, Rnd};
use super::super::global_mem::{CONST_WINDOW, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW};
use super::super::ir::*;
use super::convert::cvt;
use super::float::{approx, fcmp};
use super::int::{bfe, icmp, prmt, wide_mul};
use super::{EXIT, Exec, Fault, NEXT, PARK, SKIP, mask, sext};

impl Exec<'_> {
    #[inline(always)]
    pub(crate) fn step(&mut self, t: usize, pc: usize, rf: &mut [u64], i: &XInst) -> u32 {
        macro_rules! tri {
            ($e:expr) => {
                if let Err(f) = $e {
                    return self.raise(f);
                }
            };
        }
        macro_rules! a {
            () => {
                reg(rf, i.s[0])
            };
        }
        macro_rules! b {
            () => {
                reg(rf, i.s[1])
            };
        }
        macro_rules! c {
            () => {
                reg(rf, i.s[2])
            };
        }
        macro_rules! out {
            ($v:expr) => {{
                let v = $v;
                set(rf, i.d[0], v);
            }};
        }
        match i.op {
            Op::Nop => {}
            Op::Mov { .. } => out!(a!() & i.m),
            Op::Pack { n, w } => {
                let mut v = 0u64;
                for k in 0..n as usize {
                    v |= (reg(rf, i.s[k]) & mask(w)) << (k as u32 * w as u32);
                }
                out!(v)
            }
            Op::Unpack { n, w } => {
                let v = a!();
                for k in 0..n as usize {
                    set(rf, i.d[k], (v >> (k as u32 * w as u32)) & mask(w));
                }
            }
            Op::Add { .. } => out!(a!().wrapping_add(b!()) & i.m),
            Op::Sub { .. } => out!(a!().wrapping_sub(b!()) & i.m),
            Op::MulLo { .. } => out!(a!().wrapping_mul(b!()) & i.m),
            Op::MulHi { w, s } => {
                let p = wide_mul(a!(), b!(), w, s);
                out!(((p >> w) as u64) & mask(w))
            }
            Op::MulWide { w, s } => out!((wide_mul(a!(), b!(), w, s) as u64) & i.m),
            Op::MadLo { .. } => out!(a!().wrapping_mul(b!()).wrapping_add(c!()) & i.m),
            Op::MadHi { w, s } => {
                let p = wide_mul(a!(), b!(), w, s);
                out!(((p >> w) as u64).wrapping_add(c!()) & mask(w))
            }
            Op::MadWide { w, s } => {
                let p = wide_mul(a!(), b!(), w, s) as u64;
                out!(p.wrapping_add(c!()) & i.m)
            }
            Op::Div { w, s } | Op::Rem { w, s } => {
                let (x, y) = (a!(), b!());
                if y & mask(w) == 0 {
                    return self.raise(Box::new(Fault::Trap("integer division by zero")));
                }
                let is_div = matches!(i.op, Op::Div { .. });
                let r = if s {
                    let (x, y) = (sext(x, w), sext(y, w));
                    (if is_div {
                        x.wrapping_div(y)
                    } else {
                        x.wrapping_rem(y)
                    }) as u64
                } else {
                    let (x, y) = (x & mask(w), y & mask(w));
                    if is_div { x / y } else { x % y }
                };
                out!(r & mask(w))
            }
            Op::Min { w, s } | Op::Max { w, s } => {
                let (x, y) = (a!(), b!());
                let lt = if s {
                    sext(x, w) < sext(y, w)
                } else {
                    x & mask(w) < y & mask(w)
                };
                let is_min = matches!(i.op, Op::Min { .. });
                out!(if lt == is_min { x } else { y } & mask(w))
            }
            Op::And { .. } => out!(a!() & b!() & i.m),
            Op::Or { .. } => out!((a!() | b!()) & i.m),
            Op::Xor { .. } => out!((a!() ^ b!()) & i.m),
            Op::Not { .. } => out!(!a!() & i.m),
            Op::CNot { w } => out!((a!() & mask(w) == 0) as u64),
            Op::Shl { w } => {
                let (x, n) = (a!(), b!() & 0xFFFF_FFFF);
                out!(if n >= w as u64 { 0 } else { (x << n) & i.m })
            }
            Op::Shr { w, s } => {
                let (x, n) = (a!(), b!() & 0xFFFF_FFFF);
                let n = n.min(w as u64) as u32;
                let r = if s {
                    (sext(x, w) >> n.min(63)) as u64
                } else if n >= w as u32 {
                    0
                } else {
                    (x & i.m) >> n
                };
                out!(r & i.m)
            }
            Op::Bfe { w, s } => out!(bfe(a!(), b!(), c!(), w, s)),
            Op::Bfi { w } => {
                let (x, y, pos, len) = (a!(), b!(), c!() & 0xFF, reg(rf, i.s[3]) & 0xFF);
                let msb = w as u64 - 1;
                let f = y & mask(w);
                // bits pos..pos + n of y are replaced by bits 0..n of x
                let n = if pos > msb {
                    0
                } else {
                    len.min(w as u64 - pos)
                };
                out!(if n == 0 {
                    f
                } else {
                    let m = low_bits(n) << pos;
                    (f & !m) | ((x << pos) & m)
                })
            }
            Op::Prmt { mode } => out!(prmt(a!() as u32, b!() as u32, c!() as u32, mode) as u64),
            Op::Clz { w } => {
                let x = a!() & mask(w);
                out!(if w == 64 {
                    x.leading_zeros() as u64
                } else {
                    (x as u32).leading_zeros() as u64 - (32 - w.min(32) as u64)
                })
            }
            Op::Popc { w } => out!((a!() & mask(w)).count_ones() as u64),
            Op::Brev { w } => out!((a!() & mask(w)).reverse_bits() >> (64 - w as u32)),
            Op::Neg { .. } => out!(a!().wrapping_neg() & i.m),
            Op::Abs { w } => out!((sext(a!(), w).wrapping_abs() as u64) & mask(w)),
            Op::FAddRn => out!(fp::f32_rn(FOp::Add, a!() as u32, b!() as u32, 0) as u64),
            Op::FMulRn => out!(fp::f32_rn(FOp::Mul, a!() as u32, b!() as u32, 0) as u64),
            Op::FFmaRn => out!(fp::f32_rn(FOp::Fma, a!() as u32, b!() as u32, c!() as u32) as u64),
            Op::F32 { op, rnd, ftz, sat } => {
                let x = a!() as u32;
                let y = if matches!(op, FOp::Sqrt | FOp::Rcp) {
                    0
                } else {
                    b!() as u32
                };
                let z = if op == FOp::Fma { c!() as u32 } else { 0 };
                out!(if rnd == Rnd::Rn && !ftz && !sat {
                    fp::f32_rn(op, x, y, z)
                } else {
                    fp::f32_op(op, rnd, ftz, sat, x, y, z)
                } as u64)
            }
            Op::F32MinMax { max, nan, ftz } => {
                out!(fp::f32_minmax(max, nan, ftz, a!() as u32, b!() as u32) as u64)
            }
            Op::F32Abs { ftz } => {
                let x = f32::from_bits(a!() as u32);
                let x = if ftz && x.is_subnormal() {
                    0.0
                } else {
                    x.abs()
                };
                out!(if x.is_nan() { F32_NAN } else { x.to_bits() } as u64)
            }
            Op::F32Neg { ftz } => {
                let x = f32::from_bits(a!() as u32);
                let x = if ftz && x.is_subnormal() {
                    if x.is_sign_negative() { 0.0 } else { -0.0 }
                } else {
                    -x
                };
                out!(if x.is_nan() { F32_NAN } else { x.to_bits() } as u64)
            }
            Op::F64 { op } => {
                let x = f64::from_bits(a!());
                let r = match op {
                    FOp::Add => x + f64::from_bits(b!()),
                    FOp::Sub => x - f64::from_bits(b!()),
                    FOp::Mul => x * f64::from_bits(b!()),
                    FOp::Fma => x.mul_add(f64::from_bits(b!()), f64::from_bits(c!())),
                    FOp::Div => x / f64::from_bits(b!()),
                    FOp::Sqrt => x.sqrt(),
                    FOp::Rcp => 1.0 / x,
                };
                out!(r.to_bits())
            }
            Op::F64MinMax { max } => out!(fp::f64_minmax(max, a!(), b!())),
            Op::F64Abs => out!(a!() & !(1u64 << 63)),
            Op::F64Neg => out!(a!() ^ (1u64 << 63)),
            Op::SetpI { cmp, w, s, comb } => {
                let r = setp_i(rf, i, cmp, w, s);
                setp_out(rf, i, r, comb);
            }
            Op::SetpIBra { target, .. } => {
                setp_part(rf, i);
                // the `@p bra` after it, which reads `p` as written
                if (reg(rf, i.guard) != 0) != i.guard_neg {
                    return target;
                }
                return SKIP;
            }
            Op::SetpF {
                cmp,
                f64: is64,
                ftz,
                comb,
            } => {
                let (x, y) = if is64 {
                    (f64::from_bits(a!()), f64::from_bits(b!()))
                } else {
                    let (mut x, mut y) = (f32::from_bits(a!() as u32), f32::from_bits(b!() as u32));
                    if ftz {
                        if x.is_subnormal() {
                            x = 0.0;
                        }
                        if y.is_subnormal() {
                            y = 0.0;
                        }
                    }
                    (x as f64, y as f64)
                };
                setp_out(rf, i, fcmp(cmp, x, y), comb);
            }
            Op::Selp { .. } => {
                let c = (c!() != 0) != i.neg;
                let v = if c { a!() } else { b!() };
                out!(v & i.m)
            }
            Op::Cvt {
                d,
                s,
                rnd,
                irnd,
                sat,
                ftz,
            } => out!(cvt(d, s, rnd, irnd, sat, ftz, a!())),
            Op::CvtMiniEnc { fmt, relu } => {
                let enc = |v: u64| {
                    let mut x = f32::from_bits(v as u32);
                    if relu && (x < 0.0 || (x == 0.0 && x.is_sign_negative())) {
                        x = 0.0;
                    }
                    fmt.encode_satfinite(x) as u64
                };
                let (hi, lo) = (enc(a!()), enc(b!()));
                let sh = if fmt == MiniFmt::E2M1 { 4 } else { 8 };
                out!(hi << sh | lo)
            }
            Op::CvtUe8m0Enc { rnd } => {
                let enc = |v: u64| fp::ue8m0_satfinite(f32::from_bits(v as u32), rnd) as u64;
                out!(enc(a!()) << 8 | enc(b!()))
            }
            Op::CvtUe8m0Dec => {
                let v = a!();
                let dec = |c: u64| fp::ue8m0_to_bf16(c as u8) as u64;
                out!(dec(v >> 8 & 0xFF) << 16 | dec(v & 0xFF))
            }
            Op::CvtMiniDec { fmt, relu } => {
                let v = a!();
                let (hi, lo) = if fmt == MiniFmt::E2M1 {
                    ((v >> 4) & 0xF, v & 0xF)
                } else {
                    ((v >> 8) & 0xFF, v & 0xFF)
                };
                let dec = |c: u64| {
                    let h = fmt.to_f16(c as u8);
                    if relu && h & 0x8000 != 0 && h != fp::F16_NAN {
                        0
                    } else {
                        h as u64
                    }
                };
                out!(dec(hi) << 16 | dec(lo))
            }
            Op::CvtBf16x2 { rnd, relu } => {
                let cv = |v: u64| {
                    let mut x = f32::from_bits(v as u32);
                    if relu && x < 0.0 {
                        x = 0.0;
                    }
                    fp::f32_to_bf16(x, rnd) as u64
                };
                out!(cv(a!()) << 16 | cv(b!()))
            }
            Op::CvtTf32 => {
                out!(crate::tensor_core::f32_to_tf32_rna(f32::from_bits(a!() as u32)) as u64)
            }
            Op::CvtF16x2 {
                rnd,
                relu,
                satfinite,
            } => {
                let cv = |v: u64| {
                    let mut x = f32::from_bits(v as u32);
                    if relu && x < 0.0 {
                        x = 0.0;
                    }
                    fp::f32_to_f16(x, rnd, satfinite) as u64
                };
                out!(cv(a!()) << 16 | cv(b!()))
            }
            Op::Ld {
                sp: Space::Global,
                size,
                signed,
                n: 1,
            } => {
                let addr = a!().wrapping_add(i.off as u64);
                if addr & (size as u64 - 1) != 0 {
                    return self.raise(Box::new(Fault::Misaligned(
                        Space::Global,
                        addr,
                        size as u32,
                    )));
                }
                match self.g.load_scalar(t, pc, addr, size) {
                    Ok(v) => out!(if signed { sext(v, size * 8) as u64 } else { v }),
                    Err(f) => return self.raise(f),
                }
            }
            Op::Ld { .. } => tri!(self.exec_ld(t, pc, rf, i)),
            Op::St { .. } => tri!(self.exec_st(t, pc, rf, i)),
            Op::Atom { .. } => tri!(self.exec_atom(t, pc, rf, i)),
            Op::Cvta { to, sp, w } => {
                let x = a!() & mask(w.max(if to { 64 } else { w }));
                let win = match sp {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    Space::Const => CONST_WINDOW,
                    Space::Param => PARAM_WINDOW,
                    _ => 0,
                };
                out!(if to {
                    x.wrapping_sub(win) & mask(w)
                } else {
                    x.wrapping_add(win)
                })
            }
            Op::Approx { f, ftz } => {
                let x = a!() as u32;
                let y = if f == ApproxFn::Div { b!() as u32 } else { 0 };
                out!(approx(f, ftz, x, y) as u64)
            }
            Op::Bra { target } | Op::BraUni { target, .. } => return target,
            Op::BraIf { target } => {
                if (reg(rf, i.guard) != 0) != i.guard_neg {
                    return target;
                }
            }
            Op::Exit => return EXIT,
            Op::Trap => return self.raise(Box::new(Fault::Trap("trap instruction"))),
            Op::CallTooDeep => {
                return self.raise(Box::new(Fault::Trap(
                    "call past the simulator's recursion depth (32 activations of one function in a call chain; the stand-in for the device's stack limit)",
                )));
            }
            Op::CpAsync { .. } => tri!(self.exec_cp_async(t, pc, rf, i)),
            Op::CpAsyncCommit => self.exec_cp_commit(t),
            Op::CpAsyncWait { n } => tri!(self.exec_cp_wait(t, pc, n)),
            Op::Vprintf => tri!(self.exec_vprintf(t, pc, rf, i)),
            Op::MbarInit => tri!(self.exec_mbar_init(rf, i)),
            Op::MbarArrive { tx, remote } => match self.exec_mbar_arrive(t, rf, i, tx, remote) {
                Ok(v) => out!(v),
                Err(f) => return self.raise(f),
            },
            Op::MbarTryWait => match self.exec_mbar_try_wait(t, rf, i) {
                Ok(Some(v)) => out!(u64::from(v)),
                Ok(None) => return PARK,
                Err(f) => return self.raise(f),
            },
            Op::CpAsyncBulk { multicast, .. } => {
                tri!(self.exec_cp_async_bulk(t, pc, rf, i, multicast))
            }
            Op::CpAsyncBulkTensor {
                dims,
                multicast,
                ops,
            } => {
                tri!(self.exec_cp_async_bulk_tensor(t, pc, rf, i, dims, multicast, ops))
            }
            Op::AssertFail => {
                let f = self.assert_fault(t, pc, rf, i);
                return self.raise(f);
            }
            Op::Mapa => match self.mapa(a!(), b!()) {
                Ok(v) => out!(v),
                Err(f) => return self.raise(f),
            },
            Op::ClusterArrive { relaxed } => tri!(self.cluster_arrive(t, relaxed)),
            Op::ClusterWait => match self.cluster_wait(t) {
                Ok(true) => {}
                Ok(false) => return PARK,
                Err(f) => return self.raise(f),
            },
            Op::Bar { .. }
            | Op::BarWarp
            | Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Elect
            | Op::Redux { .. }
            | Op::Mma { .. }
            | Op::Ldmatrix { .. } => {
                return PARK;
            }
        }
        NEXT
    }
}

/// The outcome of an integer `setp`'s comparison.
#[inline(always)]
fn setp_i(rf: &[u64], i: &XInst, cmp: Cmp, w: u8, s: bool) -> bool {
    let (x, y) = (reg(rf, i.s[0]), reg(rf, i.s[1]));
    if s {
        let (x, y) = (sext(x, w), sext(y, w));
        icmp(cmp, x.cmp(&y))
    } else {
        let (x, y) = (x & i.m, y & i.m);
        icmp(cmp, x.cmp(&y))
    }
}

/// The `setp` half of an `Op::SetpIBra` (the interpreter's exact mode runs
/// it alone, and the `bra` after it as its own instruction).
#[inline(always)]
pub(crate) fn setp_part(rf: &mut [u64], i: &XInst) {
    if let Op::SetpIBra { cmp, w, s, .. } = i.op {
        let r = setp_i(rf, i, cmp, w, s);
        setp_out(rf, i, r, Comb::None);
    }
}

/// The mask of the low `n` bits (`n` in 0..=64).
#[inline(always)]
fn low_bits(n: u64) -> u64 {
    if n == 0 { 0 } else { u64::MAX >> (64 - n) }
}

/// Slot `s` of the register file `rf`, whose length is a power of two
/// above every operand slot ([`Code::stride`]): the mask keeps the index in
/// bounds without a check.
///
/// [`Code::stride`]: super::super::code::Code::stride
#[inline(always)]
pub(crate) fn reg(rf: &[u64], s: u32) -> u64 {
    rf[s as usize & (rf.len() - 1)]
}

/// Write slot `d` (absent destinations are the sink slot, see
/// [`Code::stride`]).
///
/// [`Code::stride`]: super::super::code::Code::stride
#[inline(always)]
pub(crate) fn set(rf: &mut [u64], d: u32, v: u64) {
    let m = rf.len() - 1;
    rf[d as usize & m] = v;
}

#[inline(always)]
fn setp_out(rf: &mut [u64], i: &XInst, r: bool, comb: Comb) {
    let (p, q) = if comb == Comb::None {
        (r, !r)
    } else {
        let c = (reg(rf, i.s[2]) != 0) != i.neg;
        let f = |x: bool| match comb {
            Comb::And => x && c,
            Comb::Or => x || c,
            Comb::Xor => x != c,
            Comb::None => x,
        };
        (f(r), f(!r))
    };
    set(rf, i.d[0], p as u64);
    set(rf, i.d[1], q as u64);
}
