//! Operands: the syntax of one operand (register, `_`, `!p`, `p|q`,
//! vector, immediate, address) and its resolution against the entry's
//! registers, variables and special registers; immediate conversion per
//! operand class; type-suffix helpers shared by the decoders.

use super::super::fp::Rnd;
use super::super::ir::*;
use super::decode::{DErr, Decoder, perr, unsup};
use super::lex::{Lit, Tok, parse_num};

/// A parsed operand (before resolution).
#[derive(Debug, Clone)]
pub(super) enum Opnd {
    Blank,
    Name(String),
    Lit(Lit, bool),
    Not(Box<Opnd>),
    Vec(Vec<Opnd>),
    Pair(Box<Opnd>, Box<Opnd>),
    Mem(Option<String>, i64, Option<u64>),
    /// `[map, {c0, ...}]`: a tensor map's address and coordinates
    /// (`cp.async.bulk.tensor`).
    Tensor(String, Vec<Opnd>),
}

/// A variable in a state space.
#[derive(Debug, Clone, Copy)]
pub(super) struct Var {
    pub(super) sp: Space,
    pub(super) offset: u64,
}

/// Operand class for immediate conversion.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Cls {
    Int,
    F32,
    F64,
}

pub(super) fn type_bytes(s: &str) -> Option<u32> {
    Some(match s {
        ".b8" | ".u8" | ".s8" | ".e4m3x2" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".pred" => 1,
        _ => return None,
    })
}

pub(super) fn imm_bits(l: Lit, neg: bool, cls: Cls) -> u64 {
    match cls {
        Cls::Int => {
            let v = match l {
                Lit::Int(v) => v,
                Lit::F32(b) => b as u64,
                Lit::F64(b) => b,
                Lit::Dec(d) => d as i64 as u64,
            };
            if neg { v.wrapping_neg() } else { v }
        }
        Cls::F32 => {
            let x: f32 = match l {
                Lit::Int(v) => v as f32,
                Lit::F32(b) => f32::from_bits(b),
                Lit::F64(b) => f64::from_bits(b) as f32,
                Lit::Dec(d) => d as f32,
            };
            (if neg { -x } else { x }).to_bits() as u64
        }
        Cls::F64 => {
            let x: f64 = match l {
                Lit::Int(v) => v as f64,
                Lit::F32(b) => f32::from_bits(b) as f64,
                Lit::F64(b) => f64::from_bits(b),
                Lit::Dec(d) => d,
            };
            (if neg { -x } else { x }).to_bits()
        }
    }
}

/// Parse a list of operand tokens (split at top-level commas).
pub(super) fn operands(toks: &[Tok]) -> Result<Vec<Opnd>, DErr> {
    let mut out = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    let mut depth = 0;
    for t in toks {
        match t {
            Tok::P('{') | Tok::P('[') => depth += 1,
            Tok::P('}') | Tok::P(']') => depth -= 1,
            _ => {}
        }
        if *t == Tok::P(',') && depth == 0 {
            out.push(operand(&cur)?);
            cur.clear();
        } else {
            cur.push(t.clone());
        }
    }
    if !cur.is_empty() {
        out.push(operand(&cur)?);
    }
    Ok(out)
}

pub(super) fn operand(t: &[Tok]) -> Result<Opnd, DErr> {
    match t {
        [] => perr("empty operand"),
        [Tok::Id(s)] if s == "_" => Ok(Opnd::Blank),
        [Tok::Id(s)] => Ok(Opnd::Name(s.clone())),
        [Tok::Num(n)] => Ok(Opnd::Lit(
            parse_num(n).ok_or(DErr::Parse(format!("bad literal `{n}`")))?,
            false,
        )),
        [Tok::P('-'), Tok::Num(n)] => Ok(Opnd::Lit(
            parse_num(n).ok_or(DErr::Parse(format!("bad literal `{n}`")))?,
            true,
        )),
        [Tok::P('!'), rest @ ..] => Ok(Opnd::Not(Box::new(operand(rest)?))),
        [a, Tok::P('|'), b] => Ok(Opnd::Pair(
            Box::new(operand(std::slice::from_ref(a))?),
            Box::new(operand(std::slice::from_ref(b))?),
        )),
        [Tok::P('{'), inner @ .., Tok::P('}')] => {
            let v = operands(inner)?;
            Ok(Opnd::Vec(v))
        }
        [
            Tok::P('['),
            Tok::Id(map),
            Tok::P(','),
            Tok::P('{'),
            coords @ ..,
            Tok::P('}'),
            Tok::P(']'),
        ] => Ok(Opnd::Tensor(map.clone(), operands(coords)?)),
        [Tok::P('['), inner @ .., Tok::P(']')] => {
            let (base, rest) = match inner {
                [Tok::Id(s), rest @ ..] => (Some(s.clone()), rest),
                [Tok::Num(n), rest @ ..] => match parse_num(n) {
                    Some(Lit::Int(v)) => return mem_rest(None, rest, Some(v)),
                    _ => return perr("bad address"),
                },
                _ => return perr("bad address operand"),
            };
            mem_rest(base, rest, None)
        }
        _ => perr("unrecognised operand"),
    }
}

pub(super) fn mem_rest(base: Option<String>, rest: &[Tok], abs: Option<u64>) -> Result<Opnd, DErr> {
    let off: i64 = match rest {
        [] => 0,
        [Tok::P('+'), Tok::Num(n)] => lit_i64(n)?,
        [Tok::P('+'), Tok::P('-'), Tok::Num(n)] | [Tok::P('-'), Tok::Num(n)] => -lit_i64(n)?,
        _ => {
            return unsup(
                "address form (only [reg], [reg+imm], [var], [var+imm], [imm] are supported)",
            );
        }
    };
    Ok(Opnd::Mem(base, off, abs))
}

pub(super) fn lit_i64(n: &str) -> Result<i64, DErr> {
    match parse_num(n) {
        Some(Lit::Int(v)) => Ok(v as i64),
        _ => perr("bad offset"),
    }
}

pub(super) fn int_ty(t: &str) -> Option<(u8, bool)> {
    Some(match t {
        "u8" | "b8" => (8, false),
        "s8" => (8, true),
        "u16" | "b16" => (16, false),
        "s16" => (16, true),
        "u32" | "b32" => (32, false),
        "s32" => (32, true),
        "u64" | "b64" => (64, false),
        "s64" => (64, true),
        _ => return None,
    })
}

pub(super) fn cvt_ty(t: &str) -> Option<CvtTy> {
    Some(match t {
        "u8" => CvtTy::U8,
        "u16" => CvtTy::U16,
        "u32" => CvtTy::U32,
        "u64" => CvtTy::U64,
        "s8" => CvtTy::S8,
        "s16" => CvtTy::S16,
        "s32" => CvtTy::S32,
        "s64" => CvtTy::S64,
        "f16" => CvtTy::F16,
        "bf16" => CvtTy::Bf16,
        "f32" => CvtTy::F32,
        "f64" => CvtTy::F64,
        _ => return None,
    })
}

pub(super) fn rnd_of(m: &str) -> Option<Rnd> {
    Some(match m {
        "rn" => Rnd::Rn,
        "rz" => Rnd::Rz,
        "rm" => Rnd::Rm,
        "rp" => Rnd::Rp,
        _ => return None,
    })
}

pub(super) fn irnd_of(m: &str) -> Option<Rnd> {
    Some(match m {
        "rni" => Rnd::Rn,
        "rzi" => Rnd::Rz,
        "rmi" => Rnd::Rm,
        "rpi" => Rnd::Rp,
        _ => return None,
    })
}

impl Decoder<'_> {
    pub(super) fn reg(&self, o: &Opnd) -> Result<u32, DErr> {
        match o {
            Opnd::Name(n) => match self.regs.get(n) {
                Some(r) => Ok(*r),
                None if sreg::lookup(n).is_some() => {
                    perr(format!("special register `{n}` cannot be written"))
                }
                None => perr(format!("undeclared register `{n}`")),
            },
            Opnd::Blank => Ok(NO_REG),
            _ => perr("expected a register"),
        }
    }

    pub(super) fn src(&self, o: &Opnd, cls: Cls) -> Result<Src, DErr> {
        match o {
            Opnd::Name(n) => {
                if let Some(r) = self.regs.get(n) {
                    return Ok(Src::Reg(*r));
                }
                if let Some(r) = sreg::lookup(n) {
                    return Ok(Src::Reg(r));
                }
                match n.as_str() {
                    "%clock" => return Ok(Src::Clock32),
                    "%clock64" => return Ok(Src::Clock64),
                    "WARP_SZ" => return Ok(Src::Imm(32)),
                    _ => {}
                }
                if let Some(v) = self.vars.get(n) {
                    return Ok(Src::Imm(v.offset));
                }
                if n.starts_with('%') {
                    return unsup(format!(
                        "register `{n}` (undeclared or unsupported special register)"
                    ));
                }
                perr(format!("unknown name `{n}`"))
            }
            Opnd::Lit(l, neg) => Ok(Src::Imm(imm_bits(*l, *neg, cls))),
            _ => perr("expected a register or immediate"),
        }
    }

    pub(super) fn pred_src(&self, o: &Opnd) -> Result<(Src, bool), DErr> {
        match o {
            Opnd::Not(inner) => Ok((self.src(inner, Cls::Int)?, true)),
            o => Ok((self.src(o, Cls::Int)?, false)),
        }
    }
}
