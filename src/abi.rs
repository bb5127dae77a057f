//! The parameter ABI of a kernel entry: the scalar types, what each
//! `.param` is ([`ParamDesc`]), one launch argument ([`ArgValue`]) and the
//! check that a launch's arguments fit an entry's parameters
//! ([`check_args`]).
//!
//! A leaf module: it imports nothing from the DSL, the runtime or the
//! simulator, so all three use it without an import circle (the DSL
//! writes the `.param` list from it, the runtime and the simulator check
//! launches against it). The typed parameter lists built on it
//! ([`kernel_params!`](crate::kernel_params)) are in
//! [`dsl::params`](crate::dsl::params), which re-exports these items.

use crate::error::{Error, Result};

/// The scalar types a kernel parameter (or a buffer element) can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `.u8`
    U8,
    /// `.u16`
    U16,
    /// `.u32`
    U32,
    /// `.s32`
    S32,
    /// `.u64`
    U64,
    /// `.s64`
    S64,
    /// `.f32`
    F32,
    /// `.f64`
    F64,
}

impl ScalarType {
    /// Size in bytes.
    pub const fn size(self) -> u32 {
        match self {
            ScalarType::U8 => 1,
            ScalarType::U16 => 2,
            ScalarType::U32 | ScalarType::S32 | ScalarType::F32 => 4,
            ScalarType::U64 | ScalarType::S64 | ScalarType::F64 => 8,
        }
    }
}

/// What one kernel parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A scalar passed by value.
    Scalar(ScalarType),
    /// A pointer to global memory holding elements of the given type,
    /// aligned to `align` bytes.
    GlobalPtr {
        /// The element type.
        elem: ScalarType,
        /// The alignment, in bytes, every launch argument must have.
        align: u32,
    },
    /// A tensor map passed by value (`.param .align 64 .b8 name[128]`,
    /// [`crate::tensor_map::TensorMap`]).
    TensorMap,
}

impl ParamKind {
    /// The parameter's size in bytes.
    pub const fn size(self) -> u32 {
        match self {
            ParamKind::Scalar(t) => t.size(),
            ParamKind::GlobalPtr { .. } => 8,
            ParamKind::TensorMap => 128,
        }
    }
}

/// One kernel parameter: name and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamDesc {
    /// The `.param` name.
    pub name: String,
    /// Scalar or pointer, and its type.
    pub kind: ParamKind,
}

/// One launch argument value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgValue {
    /// A `.u32` value.
    U32(u32),
    /// A `.s32` value.
    S32(i32),
    /// A `.u64` value.
    U64(u64),
    /// A `.s64` value.
    S64(i64),
    /// A `.f32` value.
    F32(f32),
    /// A `.f64` value.
    F64(f64),
    /// A device address (global memory) for a [`ParamKind::GlobalPtr`].
    Ptr(u64),
    /// A tensor map for a [`ParamKind::TensorMap`].
    TensorMap(crate::tensor_map::TensorMap),
}

impl ArgValue {
    /// The bytes the driver copies into the parameter buffer
    /// ([`size`](Self::size) of them, little-endian).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            ArgValue::TensorMap(m) => m.0.to_vec(),
            a => {
                let mut s = [0u8; 8];
                a.write_le(&mut s);
                s[..a.size() as usize].to_vec()
            }
        }
    }

    /// Write the little-endian bytes the driver copies into the parameter
    /// buffer to the front of `out` (4 or 8 bytes; the rest is untouched;
    /// nothing for a tensor map, which [`to_le_bytes`](Self::to_le_bytes)
    /// gives).
    pub fn write_le(self, out: &mut [u8; 8]) {
        match self {
            ArgValue::TensorMap(_) => {}
            ArgValue::U32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            ArgValue::S32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            ArgValue::F32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            ArgValue::U64(v) | ArgValue::Ptr(v) => *out = v.to_le_bytes(),
            ArgValue::S64(v) => *out = v.to_le_bytes(),
            ArgValue::F64(v) => *out = v.to_le_bytes(),
        }
    }

    /// Size of the value in bytes (4 or 8; 128 for a tensor map).
    pub const fn size(self) -> u32 {
        match self {
            ArgValue::U32(_) | ArgValue::S32(_) | ArgValue::F32(_) => 4,
            ArgValue::TensorMap(_) => 128,
            _ => 8,
        }
    }

    fn matches(self, kind: ParamKind) -> bool {
        matches!(
            (self, kind),
            (ArgValue::U32(_), ParamKind::Scalar(ScalarType::U32))
                | (ArgValue::S32(_), ParamKind::Scalar(ScalarType::S32))
                | (ArgValue::U64(_), ParamKind::Scalar(ScalarType::U64))
                | (ArgValue::S64(_), ParamKind::Scalar(ScalarType::S64))
                | (ArgValue::F32(_), ParamKind::Scalar(ScalarType::F32))
                | (ArgValue::F64(_), ParamKind::Scalar(ScalarType::F64))
                | (ArgValue::Ptr(_), ParamKind::GlobalPtr { .. })
                | (ArgValue::TensorMap(_), ParamKind::TensorMap)
        )
    }
}

/// Check that `args` fits `params` one for one (count, kind, pointer
/// alignment). Both the CUDA and the Sim backends call this before a launch.
pub fn check_args(kernel: &str, params: &[ParamDesc], args: &[ArgValue]) -> Result<()> {
    if params.len() != args.len() {
        return Err(Error::invalid(format!(
            "kernel `{kernel}` takes {} parameters, got {} arguments",
            params.len(),
            args.len()
        )));
    }
    for (p, a) in params.iter().zip(args) {
        if !a.matches(p.kind) {
            return Err(Error::invalid(format!(
                "kernel `{kernel}` parameter `{}` is {:?}, got {:?}",
                p.name, p.kind, a
            )));
        }
        if let (ArgValue::Ptr(addr), ParamKind::GlobalPtr { align, .. }) = (a, p.kind)
            && addr % u64::from(align) != 0
        {
            return Err(Error::invalid(format!(
                "kernel `{kernel}` parameter `{}` needs {align}-byte alignment, got address {addr:#x}",
                p.name
            )));
        }
    }
    Ok(())
}
