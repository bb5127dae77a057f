//! Kernel parameters: one description per kernel that produces both the
//! `.param` list of the PTX entry and the argument values of a launch, so
//! the two cannot disagree (the runtime and the simulator both check a
//! launch's [`ArgValue`]s against the [`ParamDesc`]s before running).

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
}

impl ArgValue {
    /// Write the little-endian bytes the driver copies into the parameter
    /// buffer to the front of `out` (4 or 8 bytes; the rest is untouched).
    pub fn write_le(self, out: &mut [u8; 8]) {
        match self {
            ArgValue::U32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            ArgValue::S32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            ArgValue::F32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            ArgValue::U64(v) | ArgValue::Ptr(v) => *out = v.to_le_bytes(),
            ArgValue::S64(v) => *out = v.to_le_bytes(),
            ArgValue::F64(v) => *out = v.to_le_bytes(),
        }
    }

    /// Size of the value in bytes (4 or 8).
    pub const fn size(self) -> u32 {
        match self {
            ArgValue::U32(_) | ArgValue::S32(_) | ArgValue::F32(_) => 4,
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

// ---- typed parameter lists --------------------------------------------------

use std::marker::PhantomData;

use super::builder::{GlobalPtr, KernelBuilder};
use super::types::{Elem, F32, Reg, S32, U32, U64};

/// A host-side device address of `E`s, the launch argument for a
/// [`Ptr<E>`] parameter.
#[derive(Debug)]
pub struct DevPtr<E> {
    /// The device address.
    pub addr: u64,
    _e: PhantomData<E>,
}
impl<E> Clone for DevPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for DevPtr<E> {}
impl<E> DevPtr<E> {
    /// The launch argument for device address `addr` (the runtime checks
    /// it against live buffers and foreign views before a launch).
    pub fn new(addr: u64) -> Self {
        Self {
            addr,
            _e: PhantomData,
        }
    }
}

/// Parameter marker: a global pointer to `E`s.
#[derive(Debug, Clone, Copy)]
pub struct Ptr<E>(PhantomData<E>);

/// A type usable as a kernel parameter: its declaration, how the kernel
/// loads it, and how the host passes it.
pub trait ParamType {
    /// What the host passes.
    type Host: Copy;
    /// What the kernel gets.
    type Dev: Copy;
    /// The `.param` declaration's kind.
    const KIND: ParamKind;
    /// Emit the load of parameter `name` into the kernel.
    fn load(b: &mut KernelBuilder, name: &str) -> Self::Dev;
    /// The launch argument for a host value.
    fn arg(h: Self::Host) -> ArgValue;
}

impl<E: Elem> ParamType for Ptr<E> {
    type Host = DevPtr<E>;
    type Dev = GlobalPtr<E>;
    const KIND: ParamKind = ParamKind::GlobalPtr {
        elem: E::SCALAR,
        align: E::SCALAR.size(),
    };
    fn load(b: &mut KernelBuilder, name: &str) -> GlobalPtr<E> {
        b.load_param_ptr::<E>(name)
    }
    fn arg(h: DevPtr<E>) -> ArgValue {
        ArgValue::Ptr(h.addr)
    }
}

macro_rules! scalar_params {
    ($($t:ident => $host:ty, $s:ident, $v:ident;)*) => {$(
        impl ParamType for $t {
            type Host = $host;
            type Dev = Reg<$t>;
            const KIND: ParamKind = ParamKind::Scalar(ScalarType::$s);
            fn load(b: &mut KernelBuilder, name: &str) -> Reg<$t> {
                b.load_param::<$t>(name)
            }
            fn arg(h: $host) -> ArgValue {
                ArgValue::$v(h)
            }
        }
    )*};
}
scalar_params! {
    U32 => u32, U32, U32;
    S32 => i32, S32, S32;
    U64 => u64, U64, U64;
    F32 => f32, F32, F32;
}

/// A kernel's parameter list as one Rust struct (see [`kernel_params!`](crate::kernel_params)).
pub trait KernelParams {
    /// The loaded registers, one field per parameter.
    type Regs;
    /// The `.param` list, in order.
    fn descs() -> Vec<ParamDesc>;
    /// Emit the parameter loads.
    fn load(b: &mut KernelBuilder) -> Self::Regs;
    /// The launch arguments, in order.
    fn args(&self) -> Vec<ArgValue>;
}

/// Define a kernel's parameters once; generates the host struct (launch
/// values), the register struct (what the kernel body sees) and their
/// [`KernelParams`] implementation, so the `.param` list and the launch
/// arguments come from one description.
///
/// ```
/// use ptxsmith::kernel_params;
/// use ptxsmith::dsl::params::Ptr;
/// use ptxsmith::dsl::types::{F32, U32};
/// kernel_params! {
///     /// Arguments of a dot product.
///     pub struct DotArgs => DotRegs {
///         x: Ptr<F32>,
///         n: U32,
///     }
/// }
/// ```
#[macro_export]
macro_rules! kernel_params {
    ($(#[$m:meta])* $vis:vis struct $host:ident => $regs:ident { $($field:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $host {
            $(
                #[doc = concat!("The `", stringify!($field), "` argument.")]
                pub $field: <$t as $crate::dsl::params::ParamType>::Host,
            )*
        }
        #[doc = concat!("Kernel-side registers of [`", stringify!($host), "`].")]
        #[derive(Debug, Clone, Copy)]
        $vis struct $regs {
            $(
                #[doc = concat!("The loaded `", stringify!($field), "` parameter.")]
                pub $field: <$t as $crate::dsl::params::ParamType>::Dev,
            )*
        }
        impl $crate::dsl::params::KernelParams for $host {
            type Regs = $regs;
            fn descs() -> Vec<$crate::dsl::params::ParamDesc> {
                vec![$($crate::dsl::params::ParamDesc {
                    name: stringify!($field).to_string(),
                    kind: <$t as $crate::dsl::params::ParamType>::KIND,
                },)*]
            }
            fn load(b: &mut $crate::dsl::builder::KernelBuilder) -> $regs {
                $regs { $($field: <$t as $crate::dsl::params::ParamType>::load(b, stringify!($field)),)* }
            }
            fn args(&self) -> Vec<$crate::dsl::params::ArgValue> {
                vec![$(<$t as $crate::dsl::params::ParamType>::arg(self.$field),)*]
            }
        }
    };
}
