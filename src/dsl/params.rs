//! Kernel parameters: one description per kernel that produces both the
//! `.param` list of the PTX entry and the argument values of a launch, so
//! the two cannot disagree (the runtime and the simulator both check a
//! launch's [`ArgValue`]s against the [`ParamDesc`]s before running).

use crate::error::{Error, Result};

/// The scalar types a kernel parameter (or a buffer element) can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    U8,
    U16,
    U32,
    S32,
    U64,
    S64,
    F32,
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
    GlobalPtr { elem: ScalarType, align: u32 },
}

/// One kernel parameter: name and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamDesc {
    pub name: String,
    pub kind: ParamKind,
}

/// One launch argument value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgValue {
    U32(u32),
    S32(i32),
    U64(u64),
    S64(i64),
    F32(f32),
    F64(f64),
    /// A device address (global memory) for a [`ParamKind::GlobalPtr`].
    Ptr(u64),
}

impl ArgValue {
    /// The little-endian bytes the driver copies into the parameter buffer.
    pub fn to_le_bytes(self) -> Vec<u8> {
        match self {
            ArgValue::U32(v) => v.to_le_bytes().to_vec(),
            ArgValue::S32(v) => v.to_le_bytes().to_vec(),
            ArgValue::U64(v) | ArgValue::Ptr(v) => v.to_le_bytes().to_vec(),
            ArgValue::S64(v) => v.to_le_bytes().to_vec(),
            ArgValue::F32(v) => v.to_le_bytes().to_vec(),
            ArgValue::F64(v) => v.to_le_bytes().to_vec(),
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
        )
    }
}

/// Check that `args` fits `params` one for one (count, kind, pointer
/// alignment). Both the CUDA and the Sim backends call this before a launch.
pub fn check_args(kernel: &str, params: &[ParamDesc], args: &[ArgValue]) -> Result<()> {
    if params.len() != args.len() {
        return Err(Error::InvalidArgument(format!(
            "kernel `{kernel}` takes {} parameters, got {} arguments",
            params.len(),
            args.len()
        )));
    }
    for (p, a) in params.iter().zip(args) {
        if !a.matches(p.kind) {
            return Err(Error::InvalidArgument(format!(
                "kernel `{kernel}` parameter `{}` is {:?}, got {:?}",
                p.name, p.kind, a
            )));
        }
        if let (ArgValue::Ptr(addr), ParamKind::GlobalPtr { align, .. }) = (a, p.kind) {
            if addr % u64::from(align) != 0 {
                return Err(Error::InvalidArgument(format!(
                    "kernel `{kernel}` parameter `{}` needs {align}-byte alignment, got address {addr:#x}",
                    p.name
                )));
            }
        }
    }
    Ok(())
}
