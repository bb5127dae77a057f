//! Device functions (`.func`) and calls: [`KernelBuilder::device_fn`]
//! builds a function body with a builder of its own (every instruction
//! method of [`KernelBuilder`] works in it) and returns a typed
//! [`DeviceFn<P, R>`]; [`KernelBuilder::call`] calls it from a kernel or
//! from another function's body.
//!
//! See [`DeviceFn`] for the model, the types and the printed PTX.

use std::marker::PhantomData;
use std::panic::Location;
use std::sync::Arc;

use super::core::{KernelBuilder, static_smem};
use super::error::BuildError;
use super::func_def::FuncDef;
use super::memory::{GlobalPtr, SharedPtr};
use crate::dsl::ir::Op;
use crate::dsl::printer::{self, FuncText, SharedDecl};
use crate::dsl::types::*;
use crate::error::Result;
use crate::target::{STATIC_SMEM_LIMIT, Sm};

/// A device function taking `P` and returning `R` (a register type such
/// as [`F32`](crate::dsl::types::F32), a tuple of them, or `()`), made by
/// [`KernelBuilder::device_fn`] and called with [`KernelBuilder::call`].
/// Cloning is cheap; the handle may be called from any builder of the
/// same target.
///
/// ```
/// use ptxsmith::dsl::types::{F32, Reg};
/// use ptxsmith::dsl::{DeviceFn, KernelBuilder, Rounding::Rn};
/// use ptxsmith::Sm;
/// let mut b = KernelBuilder::new("k", Sm::Sm80);
/// // p(x) = (x·0.5 + 1)·x − 2, Horner with fma.rn
/// let poly: DeviceFn<F32, F32> = b.device_fn("poly", |f, x: Reg<F32>| {
///     let t = f.ffma(Rn, x, 0.5f32, 1.0f32);
///     f.ffma(Rn, t, x, -2.0f32)
/// });
/// // two arguments, two returns: tuples
/// let sum_diff = b.device_fn::<(F32, F32), (F32, F32)>("sum_diff", |f, (x, y)| {
///     (f.fadd(Rn, x, y), f.fsub(Rn, x, y))
/// });
/// let x = b.mov(3.0f32);
/// let y = b.call(&poly, x);
/// let (s, d) = b.call(&sum_diff, (x, y));
/// let _ = b.fmul(Rn, s, d);
/// let ptx = b.finish()?.ptx;
/// assert!(ptx.contains(".func (.param .b32 func_retval0) poly("));
/// assert!(ptx.contains("call.uni (retval0), poly, (param0);"));
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// * **Types.** `P` and `R` are an [`FnArg`] type (a register type such
///   as [`F32`](crate::dsl::types::F32) or [`U32`](crate::dsl::types::U32),
///   or a typed pointer [`GlobalPtr<E>`] / [`SharedPtr<E>`]: one value), a
///   tuple of them (up to six) or `()`; the body receives `P`'s registers
///   (`Reg<T>` or the pointer) and returns `R`'s. A call's arguments are
///   checked at compile time: their number and types (a register or an
///   immediate of each register type, as in any instruction; the pointer
///   for a pointer type). Predicates and `.b8` registers cannot be passed
///   (PTX has no such `.param`); pass a `U32` made with `selp`.
/// * **Registers are the function's own.** The body's builder has its own
///   id: a register of the calling kernel used in the body, or a register
///   of the body used in the kernel, is refused with
///   [`BuildError::ForeignRegister`] naming both.
/// * **Errors.** A misuse inside the body is recorded in the builder that
///   called `device_fn` (its [`finish`](KernelBuilder::finish) returns
///   it, with the body's location). Entry-only methods (`params`,
///   `load_param`, `reqntid`, …) and `ret` are refused in a body.
/// * **No recursion**: a function's handle exists only once its body is
///   built, so no body can call itself or a caller.
/// * **The module.** A kernel's module holds every function it calls
///   (transitively, each once, callees first) before its `.entry`; a
///   function may be called from several kernels of its target. Shared
///   arrays a body declares live at module scope (their names must differ
///   from the kernel's and the other functions'); special registers read
///   the calling thread's. Calls need no `.version` or target beyond the
///   base, so every SM has them.
/// * **The PTX** is the form NVRTC emits: `.func (.param .b32 func_retval0)
///   name(.param .b32 name_param_0, …)` with `ld.param`/`st.param`, several
///   returns in one `.param .align A .b8 func_retval0[N]` (laid out as a C
///   struct), and at the call a `{ .param …; st.param …; call.uni (retval0),
///   name, (param0, …); ld.param …; }` block.
pub struct DeviceFn<P, R> {
    def: Arc<FuncDef>,
    _t: PhantomData<fn(P) -> R>,
}

impl<P, R> Clone for DeviceFn<P, R> {
    fn clone(&self) -> Self {
        Self {
            def: Arc::clone(&self.def),
            _t: PhantomData,
        }
    }
}

impl<P, R> std::fmt::Debug for DeviceFn<P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceFn({} for {})", self.def.name, self.def.sm)
    }
}

impl<P, R> DeviceFn<P, R> {
    /// The function's name (its `.func` name in the PTX).
    pub fn name(&self) -> &str {
        &self.def.name
    }
    /// The target it was built for.
    pub fn sm(&self) -> Sm {
        self.def.sm
    }
    /// The function's PTX text (its `.func` definition; empty when its
    /// body was refused).
    pub fn ptx(&self) -> &str {
        &self.def.text
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A register of a device function's argument or return list (an
/// implementation detail of [`FnValues`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct FnReg(RegId);

/// An argument value of a call (an implementation detail of [`IntoArgs`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct FnVal(Value);

/// A type that can be passed to and returned from a device function:
/// every register type but [`Pred`] and [`B8`] (the body sees a
/// `Reg<T>`), and the typed pointers [`GlobalPtr<E>`] and [`SharedPtr<E>`]
/// (passed as their address register; the body sees the pointer).
pub trait FnArg: sealed::Sealed + 'static {
    /// What the body receives (or returns) for this type: `Reg<T>`, or
    /// the pointer itself.
    type Reg: Copy;
    #[doc(hidden)]
    fn class() -> RegClass;
    #[doc(hidden)]
    fn build(r: FnReg) -> Self::Reg;
    #[doc(hidden)]
    fn reg(r: Self::Reg) -> FnReg;
}

/// One argument of a call for a parameter of type `A`: for a register type
/// a register or immediate (`Into<Src<T>>`), for a pointer type the
/// pointer.
pub trait IntoArg<A: FnArg> {
    #[doc(hidden)]
    fn value(self) -> FnVal;
}

/// The argument or return list of a device function: one [`FnArg`] type,
/// a tuple of up to six, or `()`.
pub trait FnValues: sealed::Sealed + 'static {
    /// The registers the body receives (arguments) or returns (returns):
    /// `Reg<T>`, a tuple of them, or `()`.
    type Regs: Copy;
    #[doc(hidden)]
    fn classes() -> Vec<RegClass>;
    #[doc(hidden)]
    fn build(regs: &[FnReg]) -> Self::Regs;
    #[doc(hidden)]
    fn regs(r: Self::Regs) -> Vec<FnReg>;
}

/// The arguments of a call of a function taking `P`: a value of each of
/// `P`'s types (a register or an immediate, `Into<Src<T>>`), as a tuple
/// when `P` is one.
///
/// A wrong number of arguments, or an argument of another type, does not
/// compile:
///
/// ```compile_fail,E0277
/// use ptxsmith::dsl::types::{F32, Reg};
/// use ptxsmith::dsl::{DeviceFn, KernelBuilder, Rounding::Rn};
/// let mut b = KernelBuilder::new("k", ptxsmith::Sm::Sm80);
/// let half: DeviceFn<F32, F32> = b.device_fn("half", |f, x: Reg<F32>| f.fmul(Rn, x, 0.5f32));
/// let x = b.mov(1.0f32);
/// let _ = b.call(&half, (x, x)); // two arguments to one parameter
/// ```
///
/// ```compile_fail,E0277
/// use ptxsmith::dsl::types::{F32, Reg};
/// use ptxsmith::dsl::{DeviceFn, KernelBuilder, Rounding::Rn};
/// let mut b = KernelBuilder::new("k", ptxsmith::Sm::Sm80);
/// let half: DeviceFn<F32, F32> = b.device_fn("half", |f, x: Reg<F32>| f.fmul(Rn, x, 0.5f32));
/// let i = b.tid_x();
/// let _ = b.call(&half, i); // a U32 register for an F32 parameter
/// ```
///
/// ```compile_fail,E0277
/// use ptxsmith::dsl::types::F32;
/// use ptxsmith::dsl::{DeviceFn, KernelBuilder, Rounding::Rn};
/// let mut b = KernelBuilder::new("k", ptxsmith::Sm::Sm80);
/// let add = b.device_fn::<(F32, F32), F32>("add", |f, (x, y)| f.fadd(Rn, x, y));
/// let x = b.mov(1.0f32);
/// let _ = b.call(&add, x); // one argument to two parameters
/// ```
///
/// The same calls with the right arguments compile:
///
/// ```
/// use ptxsmith::dsl::types::{F32, Reg};
/// use ptxsmith::dsl::{DeviceFn, KernelBuilder, Rounding::Rn};
/// let mut b = KernelBuilder::new("k", ptxsmith::Sm::Sm80);
/// let half: DeviceFn<F32, F32> = b.device_fn("half", |f, x: Reg<F32>| f.fmul(Rn, x, 0.5f32));
/// let add = b.device_fn::<(F32, F32), F32>("add", |f, (x, y)| f.fadd(Rn, x, y));
/// let x = b.mov(1.0f32);
/// let h = b.call(&half, x);
/// let _ = b.call(&add, (x, h));
/// let _ = b.call(&add, (h, 2.0f32));
/// assert!(b.finish().is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "these arguments do not match the device function's parameters `{P}`",
    label = "one argument (a register or immediate) per parameter, of its type, in a tuple for several"
)]
pub trait IntoArgs<P: FnValues> {
    #[doc(hidden)]
    fn values(self) -> Vec<FnVal>;
}

fn fn_reg<T: RegType>(r: FnReg) -> Reg<T> {
    Reg::new(r.0.idx, r.0.owner)
}

macro_rules! fn_scalars {
    ($($t:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl FnArg for $t {
            type Reg = Reg<$t>;
            fn class() -> RegClass {
                <$t as RegType>::CLASS
            }
            fn build(r: FnReg) -> Reg<$t> {
                fn_reg(r)
            }
            fn reg(r: Reg<$t>) -> FnReg {
                FnReg(r.id())
            }
        }
        impl<X: Into<Src<$t>>> IntoArg<$t> for X {
            fn value(self) -> FnVal {
                FnVal(self.into().v)
            }
        }
    )*};
}
fn_scalars!(U32, S32, F32, U64, S64, F64, B16, B32, F16x2, Bf16x2, Tf32);

impl<E: Elem> sealed::Sealed for GlobalPtr<E> {}
impl<E: Elem> FnArg for GlobalPtr<E> {
    type Reg = GlobalPtr<E>;
    fn class() -> RegClass {
        RegClass::U64
    }
    fn build(r: FnReg) -> GlobalPtr<E> {
        GlobalPtr::from_reg(fn_reg(r))
    }
    fn reg(p: GlobalPtr<E>) -> FnReg {
        FnReg(p.reg.id())
    }
}
impl<E: Elem> IntoArg<GlobalPtr<E>> for GlobalPtr<E> {
    fn value(self) -> FnVal {
        FnVal(self.reg.value())
    }
}
impl<E: Elem> sealed::Sealed for SharedPtr<E> {}
impl<E: Elem> FnArg for SharedPtr<E> {
    type Reg = SharedPtr<E>;
    fn class() -> RegClass {
        RegClass::U32
    }
    fn build(r: FnReg) -> SharedPtr<E> {
        SharedPtr::from_reg(fn_reg(r))
    }
    fn reg(p: SharedPtr<E>) -> FnReg {
        FnReg(p.reg.id())
    }
}
impl<E: Elem> IntoArg<SharedPtr<E>> for SharedPtr<E> {
    fn value(self) -> FnVal {
        FnVal(self.reg.value())
    }
}

/// One [`FnArg`] as a whole argument or return list.
macro_rules! fn_single {
    ($([$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> FnValues for $t {
            type Regs = <$t as FnArg>::Reg;
            fn classes() -> Vec<RegClass> {
                vec![<$t as FnArg>::class()]
            }
            fn build(regs: &[FnReg]) -> Self::Regs {
                <$t as FnArg>::build(regs[0])
            }
            fn regs(r: Self::Regs) -> Vec<FnReg> {
                vec![<$t as FnArg>::reg(r)]
            }
        }
        impl<$($g)* X: IntoArg<$t>> IntoArgs<$t> for X {
            fn values(self) -> Vec<FnVal> {
                vec![self.value()]
            }
        }
    )*};
}
fn_single! {
    [] U32; [] S32; [] F32; [] U64; [] S64; [] F64; [] B16; [] B32;
    [] F16x2; [] Bf16x2; [] Tf32;
    [E: Elem,] GlobalPtr<E>; [E: Elem,] SharedPtr<E>;
}

macro_rules! fn_tuples {
    ($(($($a:ident $x:ident $i:tt),*);)*) => {$(
        impl<$($a: FnArg),*> sealed::Sealed for ($($a,)*) {}
        impl<$($a: FnArg),*> FnValues for ($($a,)*) {
            type Regs = ($(<$a as FnArg>::Reg,)*);
            fn classes() -> Vec<RegClass> {
                vec![$(<$a as FnArg>::class()),*]
            }
            fn build(regs: &[FnReg]) -> Self::Regs {
                ($(<$a as FnArg>::build(regs[$i]),)*)
            }
            fn regs(r: Self::Regs) -> Vec<FnReg> {
                vec![$(<$a as FnArg>::reg(r.$i)),*]
            }
        }
        impl<$($a: FnArg, $x: IntoArg<$a>),*> IntoArgs<($($a,)*)> for ($($x,)*) {
            fn values(self) -> Vec<FnVal> {
                vec![$(self.$i.value()),*]
            }
        }
    )*};
}
fn_tuples! {
    (A XA 0);
    (A XA 0, B XB 1);
    (A XA 0, B XB 1, C XC 2);
    (A XA 0, B XB 1, C XC 2, D XD 3);
    (A XA 0, B XB 1, C XC 2, D XD 3, E XE 4);
    (A XA 0, B XB 1, C XC 2, D XD 3, E XE 4, F XF 5);
}

impl sealed::Sealed for () {}
impl FnValues for () {
    type Regs = ();
    fn classes() -> Vec<RegClass> {
        Vec::new()
    }
    fn build(_: &[FnReg]) {}
    fn regs(_: ()) -> Vec<FnReg> {
        Vec::new()
    }
}
impl IntoArgs<()> for () {
    fn values(self) -> Vec<FnVal> {
        Vec::new()
    }
}

impl KernelBuilder {
    /// Build a device function `name` for this builder's target: `body`
    /// gets a builder of its own (every instruction method works in it)
    /// and the argument registers, and returns the return registers. A
    /// misuse inside the body is recorded here, with its location in the
    /// body (see [`DeviceFn`]); the handle is returned either
    /// way (calling a refused one is refused too).
    #[track_caller]
    pub fn device_fn<P: FnValues, R: FnValues>(
        &mut self,
        name: &str,
        body: impl FnOnce(&mut KernelBuilder, P::Regs) -> R::Regs,
    ) -> DeviceFn<P, R> {
        let mut f = KernelBuilder::new_in(name, self.sm, true);
        let params: Vec<Ty> = P::classes().iter().map(|c| c.ty()).collect();
        let args: Vec<FnReg> = P::classes()
            .into_iter()
            .enumerate()
            .map(|(i, class)| {
                let d = f.reg_of(class);
                f.push(Op::LdParamAt {
                    ty: class.ty(),
                    d,
                    name: printer::func_param_name(name, i),
                    offset: 0,
                });
                FnReg(d)
            })
            .collect();
        let out = body(&mut f, P::build(&args));
        let rets: Vec<RegId> = R::regs(out).into_iter().map(|r| r.0).collect();
        let (id, sm) = (f.id, f.sm);
        self.built_funcs.append(&mut f.built_funcs);
        self.built_funcs.push(id);
        let def = match f.finish_func(&params, &rets) {
            Ok(def) => def,
            Err(e) => {
                let broken = Some(e.to_string());
                self.record(e);
                FuncDef {
                    id,
                    name: name.to_string(),
                    sm,
                    version: sm.min_ptx(),
                    text: String::new(),
                    shared: Vec::new(),
                    callees: Vec::new(),
                    broken,
                }
            }
        };
        DeviceFn {
            def: Arc::new(def),
            _t: PhantomData,
        }
    }

    /// Call device function `f` with `args` (one value per parameter, a
    /// tuple for several; checked at compile time) and return its return
    /// registers, fresh in this builder. Refused inside a
    /// [`guarded`](Self::guarded) region, and with a function of another
    /// target or whose body was refused.
    #[track_caller]
    pub fn call<P: FnValues, R: FnValues>(
        &mut self,
        f: &DeviceFn<P, R>,
        args: impl IntoArgs<P>,
    ) -> R::Regs {
        let def = &f.def;
        if let Some(error) = &def.broken {
            self.fail(BuildError::BrokenFunction {
                function: def.name.clone(),
                error: error.clone(),
            });
        }
        if def.sm != self.sm {
            self.fail(BuildError::FunctionTarget {
                function: def.name.clone(),
                function_sm: def.sm,
                this_sm: self.sm,
            });
        }
        if self.guard.is_some() {
            self.fail(BuildError::CallInGuardedRegion);
        }
        self.add_func(def, Location::caller());
        let args = P::classes()
            .iter()
            .zip(args.values())
            .map(|(c, v)| (c.ty(), v.0))
            .collect();
        let rets: Vec<(Ty, RegId)> = R::classes()
            .iter()
            .map(|&c| (c.ty(), self.reg_of(c)))
            .collect();
        let regs: Vec<FnReg> = rets.iter().map(|r| FnReg(r.1)).collect();
        let seq = self.callseqs;
        self.callseqs += 1;
        self.push(Op::Call {
            seq,
            func: def.name.clone(),
            args,
            rets,
        });
        R::build(&regs)
    }

    /// Add `def` and its callees to the functions this body's module
    /// prints, refusing a name or shared array that clashes.
    fn add_func(&mut self, def: &Arc<FuncDef>, at: &'static Location<'static>) {
        if def.broken.is_some() {
            return;
        }
        self.version = self.version.max(def.version);
        for d in def.callees.iter().chain(std::iter::once(def)) {
            if self.funcs.iter().any(|f| f.id == d.id) {
                continue;
            }
            if d.name == self.name || self.funcs.iter().any(|f| f.name == d.name) {
                self.fail_at(
                    BuildError::FunctionName {
                        name: d.name.clone(),
                    },
                    at,
                );
            }
            self.funcs.push(Arc::clone(d));
        }
        self.check_module_shared_at(at);
    }

    /// Refuse shared arrays of the body and its functions that share a
    /// name, or whose static sizes exceed the limit together.
    #[track_caller]
    pub(super) fn check_module_shared(&mut self) {
        self.check_module_shared_at(Location::caller());
    }

    fn check_module_shared_at(&mut self, at: &'static Location<'static>) {
        if self.funcs.is_empty() {
            return;
        }
        let all: Vec<&SharedDecl> = self
            .shared
            .iter()
            .chain(self.funcs.iter().flat_map(|f| f.shared.iter()))
            .collect();
        for (i, s) in all.iter().enumerate() {
            if all[..i].iter().any(|o| o.name == s.name) {
                self.fail_at(
                    BuildError::SharedName {
                        array: s.name.clone(),
                    },
                    at,
                );
                return;
            }
        }
        let owned: Vec<SharedDecl> = all.into_iter().cloned().collect();
        let total = static_smem(&owned);
        if total > u64::from(STATIC_SMEM_LIMIT) {
            self.fail_at(
                BuildError::StaticSharedLimit {
                    bytes: total,
                    limit: STATIC_SMEM_LIMIT,
                },
                at,
            );
        }
    }

    /// Store the return values, print the `.func`, or return the body's
    /// first misuse.
    #[track_caller]
    fn finish_func(mut self, params: &[Ty], rets: &[RegId]) -> Result<FuncDef> {
        let tys: Vec<Ty> = rets.iter().map(|r| r.class.ty()).collect();
        let (offsets, _, _) = printer::ret_layout(&tys);
        for ((&r, &ty), offset) in rets.iter().zip(&tys).zip(offsets) {
            self.push(Op::StParamAt {
                ty,
                name: printer::FUNC_RETVAL.to_string(),
                offset,
                a: Value::Reg(r),
            });
        }
        self.push(Op::Ret);
        self.check_module_shared();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let reg_counts = self.reg_counts();
        let text = printer::print_func(&FuncText {
            name: &self.name,
            params,
            rets: &tys,
            reg_counts: &reg_counts,
            body: &self.body,
        });
        let callees = std::mem::take(&mut self.funcs);
        let shared = std::mem::take(&mut self.shared);
        Ok(FuncDef {
            id: self.id,
            name: self.name.clone(),
            sm: self.sm,
            version: self.version,
            text,
            shared,
            callees,
            broken: None,
        })
    }
}
