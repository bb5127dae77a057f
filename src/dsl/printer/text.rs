//! The printer's leaf text: register classes and names, type suffixes,
//! operand values.

use crate::dsl::types::{RegClass, RegId, Ty, Value};

pub(super) fn class_decl(c: RegClass) -> (&'static str, &'static str) {
    match c {
        RegClass::Pred => (".pred", "%p"),
        RegClass::B16 => (".b16", "%h"),
        RegClass::B32 => (".b32", "%b"),
        RegClass::U32 => (".u32", "%r"),
        RegClass::S32 => (".s32", "%s"),
        RegClass::F32 => (".f32", "%f"),
        RegClass::U64 => (".u64", "%rd"),
        RegClass::S64 => (".s64", "%sd"),
        RegClass::F64 => (".f64", "%fd"),
        RegClass::B8 => (".b8", "%c"),
    }
}

pub(super) fn ty(t: Ty) -> &'static str {
    match t {
        Ty::Pred => ".pred",
        Ty::B8 => ".b8",
        Ty::B16 => ".b16",
        Ty::B32 => ".b32",
        Ty::B64 => ".b64",
        Ty::U8 => ".u8",
        Ty::U16 => ".u16",
        Ty::U32 => ".u32",
        Ty::U64 => ".u64",
        Ty::S32 => ".s32",
        Ty::S64 => ".s64",
        Ty::F16 => ".f16",
        Ty::F32 => ".f32",
        Ty::F64 => ".f64",
    }
}

pub(crate) fn reg(r: RegId) -> String {
    format!("{}{}", class_decl(r.class).1, r.idx)
}

pub(super) fn val(v: Value) -> String {
    match v {
        Value::Reg(r) => reg(r),
        Value::Int(i) => i.to_string(),
        Value::F32Bits(b) => format!("0f{b:08X}"),
        Value::F64Bits(b) => format!("0d{b:016X}"),
    }
}
