//! [`Kernel<A>`]: a generated kernel that carries its argument type (see
//! its docs).

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

use super::builder::KernelBuilder;
use super::builder::params::KernelParams;
use super::memo;
use super::module::PtxModule;
use crate::abi::ParamDesc;
use crate::error::{Error, Result};
use crate::target::Sm;

/// A generated kernel that carries its argument type `A`, so a
/// launch ([`Stream::launch_kernel`](crate::runtime::Stream::launch_kernel))
/// accepts only `A`, the [`kernel_params!`](crate::kernel_params) struct
/// its parameters were declared from.
///
/// A kernel is generated from a body closure that receives the loaded
/// parameter registers ([`Kernel::generate`]), or wrapped around a module
/// whose parameter list is checked against `A` ([`Kernel::from_module`]).
/// [`Kernel::memoized`] generates it once per process for each
/// `(generator, target, tuning)`, as the library's own kernels are (see
/// [`memo`](crate::dsl::memo)). The untyped path, [`PtxModule`] with
/// [`ArgValue`](crate::abi::ArgValue)s through
/// [`Stream::launch`](crate::runtime::Stream::launch), stays for foreign
/// PTX.
///
/// ```
/// use ptxsmith::dsl::params::Ptr;
/// use ptxsmith::dsl::types::{F32, U32};
/// use ptxsmith::dsl::{Cmp, Kernel, Rounding::Rn};
/// use ptxsmith::runtime::{Context, LaunchConfig};
/// use ptxsmith::{Sm, kernel_params};
///
/// kernel_params! {
///     /// `out[i] = x[i] · 2` for `i < n`.
///     pub struct TwiceArgs => TwiceRegs { x: Ptr<F32>, out: Ptr<F32>, n: U32 }
/// }
///
/// let ctx = Context::sim(Sm::Sm80);
/// let k = Kernel::<TwiceArgs>::generate("twice", ctx.sm(), |b, p| {
///     let i = b.global_id_x();
///     let inside = b.setp(Cmp::Lt, i, p.n);
///     b.if_(inside, |b| {
///         let (xi, oi) = (b.offset(p.x, i), b.offset(p.out, i));
///         let v = b.ld_global(xi, 0);
///         let y = b.fmul(Rn, v, 2.0f32);
///         b.st_global(oi, 0, y);
///     });
/// })?;
/// let st = ctx.default_stream();
/// let x = st.upload(&[1.5f32, -3.0, 4.0])?;
/// let mut out = ctx.alloc::<f32>(3)?;
/// let args = TwiceArgs { x: st.arg("x", &x)?, out: st.arg_mut("out", &mut out)?, n: 3 };
/// st.launch_kernel(&k, LaunchConfig::linear(1, 32), args)?; // no trait import needed
/// assert_eq!(st.to_vec(&out)?, [3.0, -6.0, 8.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// Another kernel's argument struct does not compile, even with the same
/// fields (error E0308, mismatched types):
///
/// ```compile_fail,E0308
/// use ptxsmith::dsl::params::Ptr;
/// use ptxsmith::dsl::types::F32;
/// use ptxsmith::dsl::Kernel;
/// use ptxsmith::runtime::{Context, LaunchConfig};
/// use ptxsmith::{Sm, kernel_params};
///
/// kernel_params! { pub struct AArgs => ARegs { out: Ptr<F32> } }
/// kernel_params! { pub struct BArgs => BRegs { out: Ptr<F32> } }
///
/// let ctx = Context::sim(Sm::Sm80);
/// let k = Kernel::<AArgs>::generate("a", ctx.sm(), |b, p| b.st_global(p.out, 0, 1.0f32))?;
/// let st = ctx.default_stream();
/// let mut out = ctx.alloc::<f32>(1)?;
/// let wrong = BArgs { out: st.arg_mut("out", &mut out)? };
/// st.launch_kernel(&k, LaunchConfig::linear(1, 1), wrong)?; // BArgs where AArgs is needed
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// The same code with `AArgs` compiles and runs:
///
/// ```
/// # use ptxsmith::dsl::params::Ptr;
/// # use ptxsmith::dsl::types::F32;
/// # use ptxsmith::dsl::Kernel;
/// # use ptxsmith::runtime::{Context, LaunchConfig};
/// # use ptxsmith::{Sm, kernel_params};
/// # kernel_params! { pub struct AArgs => ARegs { out: Ptr<F32> } }
/// # let ctx = Context::sim(Sm::Sm80);
/// # let k = Kernel::<AArgs>::generate("a", ctx.sm(), |b, p| b.st_global(p.out, 0, 1.0f32))?;
/// # let st = ctx.default_stream();
/// # let mut out = ctx.alloc::<f32>(1)?;
/// let right = AArgs { out: st.arg_mut("out", &mut out)? };
/// st.launch_kernel(&k, LaunchConfig::linear(1, 1), right)?;
/// # assert_eq!(st.to_vec(&out)?, [1.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
pub struct Kernel<A: KernelParams> {
    module: Cow<'static, PtxModule>,
    _args: PhantomData<fn(A)>,
}

impl<A: KernelParams> Clone for Kernel<A> {
    fn clone(&self) -> Self {
        Self {
            module: self.module.clone(),
            _args: PhantomData,
        }
    }
}

impl<A: KernelParams> fmt::Debug for Kernel<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("args", &std::any::type_name::<A>())
            .field("kernel", &self.module.kernel)
            .field("sm", &self.module.sm)
            .field("tuning", &self.module.tuning)
            .finish()
    }
}

impl<A: KernelParams> Kernel<A> {
    /// Generate kernel `name` for `sm`: a [`KernelBuilder`] whose
    /// parameters are `A`'s ([`KernelBuilder::params`]), the loaded
    /// registers handed to `body`, then [`KernelBuilder::finish`]. The body
    /// may record a tuning key with [`KernelBuilder::tuning`].
    ///
    /// # Errors
    /// What [`KernelBuilder::finish`] returns: the first misuse in `body`
    /// ([`Error::Build`]) or an instruction `sm` lacks
    /// ([`Error::UnsupportedFeature`]).
    #[track_caller]
    pub fn generate(
        name: &str,
        sm: Sm,
        body: impl FnOnce(&mut KernelBuilder, A::Regs),
    ) -> Result<Self> {
        let mut b = KernelBuilder::new(name, sm);
        let regs = b.params::<A>();
        body(&mut b, regs);
        let module = b.finish()?;
        Ok(Self::typed(Cow::Owned(module)))
    }

    /// Wrap `module` (built by hand, or a [`KernelBuilder`] that declared
    /// `b.params::<A>()`) as a kernel taking `A`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the module's parameter list is not
    /// `A`'s (names, kinds and order), naming both.
    pub fn from_module(module: PtxModule) -> Result<Self> {
        check_params::<A>(&module)?;
        Ok(Self::typed(Cow::Owned(module)))
    }

    fn typed(module: Cow<'static, PtxModule>) -> Self {
        Self {
            module,
            _args: PhantomData,
        }
    }

    /// The kernel `generate` makes for `(generator, sm, tuning)`,
    /// generated on the first call for that key and shared afterwards: the
    /// same `&'static Kernel<A>` (pointer-equal) and no generation on a
    /// later call, as [`memo::memoized`] does for the library's kernels.
    /// `generator` names the generator uniquely in the program (the
    /// library's own names are its kernels' paths); `tuning`'s `Debug` text
    /// is part of the key, so it must show every knob that changes the
    /// code. `sm` is only the key: `generate` must build for it.
    ///
    /// ```
    /// use ptxsmith::dsl::{Kernel, memo, params::Ptr, types::U32};
    /// use ptxsmith::{Sm, kernel_params};
    /// kernel_params! { pub struct FillArgs => FillRegs { out: Ptr<U32> } }
    ///
    /// let fill = |sm: Sm, v: u32| {
    ///     Kernel::<FillArgs>::memoized("doc fill", sm, v, || {
    ///         Kernel::<FillArgs>::generate("fill", sm, |b, p| b.st_global(p.out, 0, v))
    ///     })
    /// };
    /// let a = fill(Sm::Sm80, 7)?;
    /// let before = memo::generations();
    /// let b = fill(Sm::Sm80, 7)?;
    /// assert!(std::ptr::eq(a, b));
    /// assert_eq!(memo::generations(), before);
    /// assert!(!std::ptr::eq(a, fill(Sm::Sm90, 7)?)); // another target, another kernel
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// What `generate` returns (not remembered: a later call generates
    /// again); [`Error::InvalidArgument`] when the module memoised under
    /// this key takes another parameter list than `A`'s (the same
    /// `generator` name used for two argument types) or `generate` built
    /// for another SM than `sm` (not remembered either).
    pub fn memoized<K: fmt::Debug>(
        generator: &'static str,
        sm: Sm,
        tuning: K,
        generate: impl FnOnce() -> Result<Kernel<A>>,
    ) -> Result<&'static Kernel<A>>
    where
        A: 'static,
    {
        let module = memo::memoized(generator, sm, tuning, || {
            let k = generate()?;
            if k.sm() != sm {
                return Err(Error::invalid_argument(
                    format!("memoised kernel `{generator}`"),
                    format!("a module for {sm}"),
                    format!("a module for {}", k.sm()),
                ));
            }
            Ok(k.into_module())
        })?;
        type Typed = HashMap<(TypeId, usize), &'static (dyn Any + Send + Sync)>;
        static TYPED: Mutex<Option<Typed>> = Mutex::new(None);
        let key = (TypeId::of::<A>(), std::ptr::from_ref(module) as usize);
        let mut typed = TYPED.lock().unwrap_or_else(PoisonError::into_inner);
        let typed = typed.get_or_insert_with(HashMap::new);
        if let Some(k) = typed.get(&key).and_then(|k| k.downcast_ref::<Kernel<A>>()) {
            return Ok(k);
        }
        // Found under a key another argument type generated for.
        check_params::<A>(module)?;
        let k: &'static Kernel<A> = Box::leak(Box::new(Self::typed(Cow::Borrowed(module))));
        typed.insert(key, k);
        Ok(k)
    }

    /// The generated module (its PTX, parameters, target, tuning key).
    pub fn module(&self) -> &PtxModule {
        &self.module
    }

    /// The module, owned (a copy for a memoised kernel).
    pub fn into_module(self) -> PtxModule {
        self.module.into_owned()
    }

    /// The entry name.
    pub fn name(&self) -> &str {
        &self.module.kernel
    }

    /// The target the kernel was generated for.
    pub fn sm(&self) -> Sm {
        self.module.sm
    }

    /// The PTX text.
    pub fn ptx(&self) -> &str {
        &self.module.ptx
    }
}

impl<A: KernelParams> AsRef<PtxModule> for Kernel<A> {
    fn as_ref(&self) -> &PtxModule {
        &self.module
    }
}

fn show(ps: &[ParamDesc]) -> String {
    let names: Vec<String> = ps
        .iter()
        .map(|p| format!("{}: {:?}", p.name, p.kind))
        .collect();
    format!("({})", names.join(", "))
}

fn check_params<A: KernelParams>(module: &PtxModule) -> Result<()> {
    let want = A::descs();
    if module.params == want {
        return Ok(());
    }
    Err(Error::invalid_argument(
        format!("parameters of kernel `{}`", module.kernel),
        format!("{} of {}", show(&want), std::any::type_name::<A>()),
        show(&module.params),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::params::Ptr;
    use crate::dsl::types::{F32, U32};

    crate::kernel_params! { struct OneArgs => OneRegs { out: Ptr<U32> } }
    crate::kernel_params! { struct OtherArgs => OtherRegs { out: Ptr<F32> } }

    #[test]
    fn from_module_checks_the_parameter_list() {
        let k = Kernel::<OneArgs>::generate("one", Sm::Sm80, |b, p| b.st_global(p.out, 0, 1u32))
            .unwrap();
        assert_eq!(k.name(), "one");
        assert_eq!(k.sm(), Sm::Sm80);
        let m = k.into_module();
        assert!(Kernel::<OneArgs>::from_module(m.clone()).is_ok());
        let e = Kernel::<OtherArgs>::from_module(m).unwrap_err().to_string();
        assert!(e.contains("parameters of kernel `one`"), "{e}");
        assert!(e.contains("OtherArgs"), "{e}");
    }

    #[test]
    fn memoized_refuses_one_generator_name_for_two_argument_types() {
        let a = Kernel::<OneArgs>::memoized("kernel.rs test twin", Sm::Sm80, (), || {
            Kernel::<OneArgs>::generate("twin", Sm::Sm80, |b, p| b.st_global(p.out, 0, 1u32))
        })
        .unwrap();
        assert_eq!(a.name(), "twin");
        let e = Kernel::<OtherArgs>::memoized("kernel.rs test twin", Sm::Sm80, (), || {
            Kernel::<OtherArgs>::generate("twin", Sm::Sm80, |b, p| b.st_global(p.out, 0, 1.0f32))
        })
        .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }

    #[test]
    fn memoized_refuses_a_module_for_another_target() {
        let e = Kernel::<OneArgs>::memoized("kernel.rs test target", Sm::Sm90, (), || {
            Kernel::<OneArgs>::generate("t", Sm::Sm80, |b, p| b.st_global(p.out, 0, 1u32))
        })
        .unwrap_err();
        assert!(e.to_string().contains("a module for sm_90"), "{e}");
    }
}
