//! The typed PTX DSL. This module is the only place in the crate that
//! spells PTX text (in `printer.rs`); kernels describe their code through
//! typed registers and [`KernelBuilder`] methods.
//!
//! Layers: [`types`] (typed registers and operands) → [`builder`] (records
//! IR, checks target features, computes the minimal `.version`) → `ir`
//! (printer-neutral instructions) → `printer` (text). The parameter ABI
//! ([`ParamDesc`], [`ArgValue`]) is the leaf module [`crate::abi`], shared
//! with the runtime and the simulator; [`params`] builds typed parameter
//! lists on it.
//!
//! # The register model
//!
//! * **Typed registers.** A [`Reg<T>`](types::Reg) is a virtual register
//!   of one class (`Reg<F32>`, `Reg<U32>`, …); every builder method takes
//!   and returns typed registers, so a float cannot be fed to an integer
//!   add. Each instruction writes a fresh register (SSA-like): `let s =
//!   b.fadd(Rn, x, y)` names a new value and leaves `x` unchanged.
//!   Immediates are Rust literals (`1.0f32`, `3u32`).
//! * **Predicates** are registers too (`Reg<Pred>`), made by
//!   [`setp`](KernelBuilder::setp) and combined with `pand`/`por`/`pnot`;
//!   they drive `if_`, `if_else`, `guarded`, `selp` and branches.
//! * **Owned by their builder.** Every register, predicate, pointer
//!   ([`GlobalPtr`], [`SharedPtr`]), [`SharedArray`], [`Label`] and
//!   [`Var`] carries the id of the [`KernelBuilder`] that made it. Used in
//!   another builder, it is refused with
//!   [`BuildError::ForeignRegister`] (or `ForeignSharedArray`,
//!   `ForeignLabel`), naming both kernels: printed, it would be an
//!   undeclared register or silently alias one of the other kernel's.
//! * **Loop-carried values go through a [`Var`].** The body closure of
//!   [`for_range`](KernelBuilder::for_range),
//!   [`while_`](KernelBuilder::while_) or
//!   [`grid_stride`](KernelBuilder::grid_stride) is run once, to emit the
//!   loop's code, so rebinding a Rust variable inside it does not carry a
//!   value from one iteration to the next. Declare the value before the
//!   loop with [`var`](KernelBuilder::var), update it with
//!   [`set`](KernelBuilder::set) and read it with
//!   [`get`](KernelBuilder::get) (or [`assign`](KernelBuilder::assign) to
//!   overwrite a plain register). A register defined inside a loop body and
//!   read after that loop is refused with
//!   [`BuildError::LoopValueEscapes`]:
//!
//!   ```
//!   use ptxsmith::dsl::{BuildError, KernelBuilder, Rounding::Rn};
//!   use ptxsmith::{Error, Sm};
//!   let mut b = KernelBuilder::new("k", Sm::Sm80);
//!   let mut acc = b.mov(0.0f32);
//!   b.for_range(1u32, 5u32, 1u32, |b, i| {
//!       let x = b.u32_to_f32(Rn, i);
//!       acc = b.fadd(Rn, acc, x); // adds each i to the 0 from before the loop
//!   });
//!   let _ = b.fmul(Rn, acc, 2.0f32); // read after the loop: refused
//!   let e = b.finish().unwrap_err();
//!   assert!(matches!(e, Error::Build { error: BuildError::LoopValueEscapes { .. }, .. }));
//!   ```
//!
//! # Device functions and vector accesses
//!
//! [`KernelBuilder::device_fn`] builds a `.func` with a builder of its own
//! (every instruction method works in it; its registers are its own) and
//! returns a typed [`DeviceFn<P, R>`](DeviceFn); [`KernelBuilder::call`]
//! calls it, its arguments checked at compile time. A module prints the
//! functions its entry calls before the entry, in NVRTC's form. Global
//! memory has `v2` ([`ld_global_v2`](KernelBuilder::ld_global_v2),
//! [`ld_global_nc_v2`](KernelBuilder::ld_global_nc_v2),
//! [`st_global_v2`](KernelBuilder::st_global_v2)) and `v4` accesses,
//! aligned to their whole size.
//!
//! # Errors and their locations
//!
//! The builder does not return a `Result` from each method: it records the
//! first misuse and [`KernelBuilder::finish`] returns it, never a module
//! with invalid PTX. A misuse is [`Error::Build`](crate::Error::Build)
//! carrying a [`BuildError`] (the misuse and its values: the array, index
//! and length of a constant index past a shared array, both kernels of a
//! foreign register, …) and the `location` of the call that made it: the
//! builder's methods are `#[track_caller]`, so it is the generator's own
//! file, line and column, shown in the message
//! (`kernel `k`: constant index 7 past shared array `a` of 4 (at
//! src/my_kernel.rs:42:15)`). An instruction the target lacks is
//! [`Error::UnsupportedFeature`](crate::Error::UnsupportedFeature).

pub mod blocks;
pub mod builder;
pub(crate) mod ir;
mod kernel;
pub mod math;
pub mod memo;
mod module;
pub(crate) mod printer;
pub mod types;

pub use builder::params;

pub use builder::{
    BuildError, ClusterMbarrier, ClusterPtr, CpAsyncSize, DeviceFn, FnArg, FnValues, FragA, FragB,
    FragC, GlobalPtr, IntoArg, IntoArgs, KernelBuilder, Label, LdmatrixInput, SharedArray,
    SharedMbarrier, SharedPtr, TensorMapParam, TensorMapRef, Var,
};
pub use ir::{
    AtomOp, ClusterArrive, Cmp, Fp8Format, IntRounding, ReduxOp, Rounding, ShflMode, Special,
    Ue8m0Rounding,
};
pub use kernel::Kernel;
pub use module::PtxModule;
pub use params::{ArgValue, DevPtr, KernelParams, ParamDesc, ParamKind, Ptr, ScalarType};
