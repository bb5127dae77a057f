//! Typed kernel parameter lists: one description per kernel
//! ([`kernel_params!`](crate::kernel_params)) that produces both the
//! `.param` list of the PTX entry and the argument values of a launch, so
//! the two cannot disagree (the runtime and the simulator both check a
//! launch's [`ArgValue`]s against the [`ParamDesc`]s before running).
//!
//! The wire ABI these lists are written in ([`ScalarType`], [`ParamKind`],
//! [`ParamDesc`], [`ArgValue`], [`check_args`]) lives in the leaf module
//! [`crate::abi`]; it is re-exported here so `dsl::params::…` paths keep
//! working.

use std::marker::PhantomData;

pub use crate::abi::{ArgValue, ParamDesc, ParamKind, ScalarType, check_args};

use super::core::KernelBuilder;
use super::error::BuildError;
use super::memory::GlobalPtr;
use crate::dsl::types::{Elem, F32, Reg, S32, U32, U64};

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

impl KernelBuilder {
    /// Declare the kernel's parameters (once) and load them into registers.
    #[track_caller]
    pub fn params<P: KernelParams>(&mut self) -> P::Regs {
        if !self.params.is_empty() {
            self.fail(BuildError::ParamsTwice);
        }
        self.params = P::descs();
        P::load(self)
    }
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
