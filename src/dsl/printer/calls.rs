//! The printer's parameter and call text: `.param` slots and their
//! layout, device-function calls (as NVRTC prints them) and the kernel's
//! parameter declarations.

use super::text::{reg, ty, val};
use crate::abi::{ParamDesc, ParamKind};
use crate::dsl::types::{RegId, Ty, Value, scalar_ty};

/// `[name]` or `[name+offset]`.
pub(super) fn param_addr(name: &str, offset: u32) -> String {
    match offset {
        0 => format!("[{name}]"),
        o => format!("[{name}+{o}]"),
    }
}

/// Bytes of one value of type `t` in a `.param` slot.
fn param_bytes(t: Ty) -> u32 {
    match t {
        Ty::Pred | Ty::B8 | Ty::U8 => 1,
        Ty::B16 | Ty::U16 | Ty::F16 => 2,
        Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 4,
        Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 8,
    }
}

/// The layout of a return list in its one `.param` slot: each value's
/// byte offset (aligned to its size, in order, as a C struct), the slot's
/// alignment and size. One value is a plain `.bN` slot at offset 0.
pub(crate) fn ret_layout(tys: &[Ty]) -> (Vec<u32>, u32, u32) {
    let (mut offsets, mut off, mut align) = (Vec::new(), 0u32, 1u32);
    for &t in tys {
        let n = param_bytes(t);
        off = off.div_ceil(n) * n;
        offsets.push(off);
        off += n;
        align = align.max(n);
    }
    (offsets, align, off.div_ceil(align) * align)
}

/// The `.param` declaration of one slot holding `tys` (`.param .b32 x`
/// for one value, `.param .align A .b8 x[N]` for several).
pub(super) fn slot_decl(name: &str, tys: &[Ty]) -> String {
    match tys {
        [t] => format!(".param .b{} {name}", param_bytes(*t) * 8),
        _ => {
            let (_, align, size) = ret_layout(tys);
            format!(".param .align {align} .b8 {name}[{size}]")
        }
    }
}

/// The name of parameter `i` of device function `func`.
pub(crate) fn func_param_name(func: &str, i: usize) -> String {
    format!("{func}_param_{i}")
}

/// The name of a device function's return slot.
pub(crate) const FUNC_RETVAL: &str = "func_retval0";

/// A call sequence, as NVRTC prints it: one `.param` per argument, the
/// return slot, `call.uni`, the loads of the returns, in a `{ }` block.
pub(super) fn call_text(
    seq: u32,
    func: &str,
    args: &[(Ty, Value)],
    rets: &[(Ty, RegId)],
) -> String {
    let mut lines = vec![format!("{{ // callseq {seq}")];
    let mut names = Vec::new();
    for (i, (t, v)) in args.iter().enumerate() {
        let name = format!("param{i}");
        lines.push(format!("{};", slot_decl(&name, &[*t])));
        lines.push(format!("st.param{} [{name}], {};", ty(*t), val(*v)));
        names.push(name);
    }
    let ret_tys: Vec<Ty> = rets.iter().map(|r| r.0).collect();
    let ret = if rets.is_empty() {
        String::new()
    } else {
        lines.push(format!("{};", slot_decl("retval0", &ret_tys)));
        "(retval0), ".to_string()
    };
    lines.push(format!("call.uni {ret}{func}, ({});", names.join(", ")));
    let (offsets, _, _) = ret_layout(&ret_tys);
    for ((t, d), off) in rets.iter().zip(offsets) {
        lines.push(format!(
            "ld.param{} {}, {};",
            ty(*t),
            reg(*d),
            param_addr("retval0", off)
        ));
    }
    lines.push(format!("}} // callseq {seq}"));
    lines.join("\n\t")
}

/// Parameters are printed with a `p_` prefix so a parameter name can never
/// collide with a PTX keyword or a shared array.
pub(super) fn param_name(name: &str) -> String {
    format!("p_{name}")
}

pub(super) fn param_decl(p: &ParamDesc) -> String {
    let t = match p.kind {
        ParamKind::Scalar(s) => scalar_ty(s),
        ParamKind::GlobalPtr { .. } => Ty::U64,
        ParamKind::TensorMap => {
            return format!(".param .align 64 .b8 {}[128]", param_name(&p.name));
        }
    };
    format!(".param {} {}", ty(t), param_name(&p.name))
}
