//! The builder's core: the [`KernelBuilder`] type, entry directives,
//! register and label allocation, recording instructions (feature checks
//! and the minimal `.version`), plain moves, and module assembly
//! ([`KernelBuilder::finish`]).

use crate::abi::ParamDesc;
use crate::dsl::ir::*;
use crate::dsl::module::PtxModule;
use crate::dsl::printer::{KernelText, SharedDecl, print_module};
use crate::dsl::types::*;
use crate::error::{Error, Result};
use crate::target::{PtxVersion, STATIC_SMEM_LIMIT, Sm};

/// A branch target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(pub(super) u32);

/// Builds one kernel entry for one SM.
pub struct KernelBuilder {
    pub(super) name: String,
    pub(super) tuning: String,
    pub(super) sm: Sm,
    pub(super) params: Vec<ParamDesc>,
    pub(super) reqntid: Option<(u32, u32, u32)>,
    pub(super) maxntid: Option<(u32, u32, u32)>,
    pub(super) min_ctas: Option<u32>,
    pub(super) regs: [u32; 10],
    pub(super) shared: Vec<SharedDecl>,
    pub(super) body: Vec<Instr>,
    pub(super) labels: u32,
    pub(super) guard: Option<(RegId, bool)>,
    pub(super) version: PtxVersion,
    pub(super) error: Option<Error>,
}

impl KernelBuilder {
    /// Start a kernel named `name` (the `.entry` name) for `sm`.
    pub fn new(name: &str, sm: Sm) -> Self {
        let mut b = Self {
            name: name.to_string(),
            tuning: String::new(),
            sm,
            params: Vec::new(),
            reqntid: None,
            maxntid: None,
            min_ctas: None,
            regs: [0; 10],
            shared: Vec::new(),
            body: Vec::new(),
            labels: 0,
            guard: None,
            version: sm.min_ptx(),
            error: None,
        };
        if !is_identifier(name) {
            b.fail(format!("`{name}` is not a valid PTX identifier"));
        }
        b
    }

    /// The target SM.
    pub fn sm(&self) -> Sm {
        self.sm
    }

    /// Record the tuning key (part of the module cache key).
    pub fn tuning(&mut self, key: impl Into<String>) -> &mut Self {
        self.tuning = key.into();
        self
    }

    /// Require exactly this block shape (`.reqntid`).
    pub fn reqntid(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.reqntid = Some((x, y, z));
        self
    }

    /// Bound the block size (`.maxntid`).
    pub fn maxntid(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.maxntid = Some((x, y, z));
        self
    }

    /// Ask ptxas for at least `n` resident CTAs per SM (`.minnctapersm`).
    pub fn min_ctas_per_sm(&mut self, n: u32) -> &mut Self {
        self.min_ctas = Some(n);
        self
    }

    pub(super) fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(Error::Build {
                kernel: self.name.clone(),
                message,
            });
        }
    }

    /// PTX has no 8-bit `mov`/`selp`: refuse them on [`B8`] registers.
    pub(super) fn no_b8<T: RegType>(&mut self, what: &str) {
        if T::CLASS == RegClass::B8 {
            self.fail(format!(
                "{what} has no .b8 form; widen with b8_to_u32 or pack with pack_4x8"
            ));
        }
    }

    /// Allocate a fresh register of class `T`.
    pub fn reg<T: RegType>(&mut self) -> Reg<T> {
        let slot = &mut self.regs[T::CLASS as usize];
        let r = Reg::new(*slot);
        *slot += 1;
        r
    }

    pub(super) fn push(&mut self, op: Op) {
        if let Some(f) = op.feature() {
            if !self.sm.supports(f) {
                if self.error.is_none() {
                    self.error = Some(Error::UnsupportedFeature {
                        feature: f,
                        sm: self.sm,
                        needs: f.requirement(),
                    });
                }
            } else {
                self.version = self.version.max(f.min_ptx(self.sm));
            }
        }
        if self.guard.is_some() && matches!(op, Op::Label(_)) {
            self.fail("a label cannot be placed inside a guarded region".to_string());
        }
        self.body.push(Instr {
            guard: self.guard,
            op,
        });
    }

    pub(super) fn def<T: RegType>(&mut self, f: impl FnOnce(RegId) -> Op) -> Reg<T> {
        let d = self.reg::<T>();
        self.push(f(d.id()));
        d
    }

    /// A comment line in the PTX (documentation for readers of the dump).
    pub fn comment(&mut self, text: &str) {
        self.push(Op::Comment(text.to_string()));
    }

    // ---- moves -------------------------------------------------------------

    /// `d = a` into a fresh register.
    pub fn mov<T: RegType>(&mut self, a: impl Into<Src<T>>) -> Reg<T> {
        self.no_b8::<T>("mov");
        let a = a.into().v;
        self.def(|d| Op::Mov {
            ty: T::CLASS.ty(),
            d,
            a,
        })
    }

    /// Overwrite an existing register (loop-carried values).
    pub fn assign<T: RegType>(&mut self, d: Reg<T>, a: impl Into<Src<T>>) {
        self.no_b8::<T>("mov");
        let a = a.into().v;
        self.push(Op::Mov {
            ty: T::CLASS.ty(),
            d: d.id(),
            a,
        });
    }

    // ---- labels ------------------------------------------------------------

    /// A new label, to be placed with [`Self::place`].
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels)
    }

    /// Place `l` here.
    pub fn place(&mut self, l: Label) {
        self.push(Op::Label(l.0));
    }

    // ---- finishing -------------------------------------------------------------

    /// Validate and print the module.
    pub fn finish(mut self) -> Result<PtxModule> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let static_smem: u64 = self
            .shared
            .iter()
            .map(|s| u64::from(s.bytes) + u64::from(s.align))
            .sum();
        if static_smem > u64::from(STATIC_SMEM_LIMIT) {
            return Err(Error::Build {
                kernel: self.name,
                message: format!(
                    "{static_smem} bytes of static shared memory exceed {STATIC_SMEM_LIMIT}"
                ),
            });
        }
        if !matches!(
            self.body.last(),
            Some(Instr {
                op: Op::Ret,
                guard: None
            })
        ) {
            self.push(Op::Ret);
        }
        let reg_counts: Vec<(RegClass, u32)> = RegClass::ALL
            .iter()
            .map(|&c| (c, self.regs[c as usize]))
            .collect();
        let ptx = print_module(&KernelText {
            name: &self.name,
            sm: self.sm,
            version: self.version,
            params: &self.params,
            reqntid: self.reqntid,
            maxntid: self.maxntid,
            min_ctas_per_sm: self.min_ctas,
            reg_counts: &reg_counts,
            shared: &self.shared,
            body: &self.body,
        });
        Ok(PtxModule {
            kernel: self.name,
            tuning: self.tuning,
            sm: self.sm,
            version: self.version,
            params: self.params,
            ptx,
        })
    }
}

/// PTX identifiers: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`.
pub(super) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        }
        Some('_' | '$') => {
            let rest: Vec<char> = chars.collect();
            !rest.is_empty()
                && rest
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Feature;

    fn err_of(r: Result<PtxModule>) -> Error {
        r.expect_err("builder should refuse")
    }

    #[test]
    fn missing_feature_is_a_typed_error_naming_sm_and_feature() {
        let mut b = KernelBuilder::new("k", Sm::Sm75);
        let t = b.tid_x();
        let _ = b.redux(ReduxOp::Add, t, u32::MAX);
        match err_of(b.finish()) {
            Error::UnsupportedFeature { feature, sm, .. } => {
                assert_eq!((feature, sm), (Feature::Redux, Sm::Sm75));
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn feature_use_raises_the_version_only_as_far_as_needed() {
        let build = |sm: Sm, fp8: bool| {
            let mut b = KernelBuilder::new("k", sm);
            let f = b.mov(1.0f32);
            if fp8 {
                let _ = b.cvt_to_fp8x2(Fp8Format::E4M3, f, f);
            }
            b.finish().unwrap().version.to_string()
        };
        assert_eq!(build(Sm::Sm89, false), "7.8");
        assert_eq!(build(Sm::Sm89, true), "8.1");
        assert_eq!(build(Sm::Sm90, true), "7.8");
        assert_eq!(build(Sm::Sm100, true), "8.6");
        assert_eq!(build(Sm::Sm80, false), "7.0");
    }

    #[test]
    fn constant_index_past_a_shared_array_is_refused() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let a = b.shared_array::<F32>("a", 4, 4);
        let _ = b.ld_shared_at(&a, 4);
        assert!(
            matches!(err_of(b.finish()), Error::Build { message, .. } if message.contains("index 4"))
        );
    }

    #[test]
    fn static_shared_memory_over_48k_is_refused() {
        let mut b = KernelBuilder::new("k", Sm::Sm90);
        let _ = b.shared_array::<F32>("a", 12 * 1024, 16);
        assert!(
            matches!(err_of(b.finish()), Error::Build { message, .. } if message.contains("static shared"))
        );
    }

    #[test]
    fn misuse_is_refused() {
        let mut b = KernelBuilder::new("9bad", Sm::Sm80);
        let _ = b.mov(1u32);
        assert!(err_of(b.finish()).to_string().contains("identifier"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let _ = b.setp(Cmp::Ltu, x, 2u32);
        assert!(err_of(b.finish()).to_string().contains("floats only"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let _ = b.div(x, 0u32);
        assert!(err_of(b.finish()).to_string().contains("division"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let _ = b.shared_array::<F32>("a", 4, 2);
        assert!(err_of(b.finish()).to_string().contains("alignment"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let p = b.mov(1u32);
        let q = b.setp(Cmp::Eq, p, 1u32);
        b.guarded(q, |b| {
            let l = b.label();
            b.place(l);
        });
        assert!(err_of(b.finish()).to_string().contains("guarded"));
    }

    #[test]
    fn float_immediates_are_exact_hex_and_ops_carry_rounding() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(0.1f32);
        let y = b.fmul(Rounding::Rn, x, 3.0f32);
        let _ = b.fadd(Rounding::Rz, y, -0.0f32);
        let ptx = b.finish().unwrap().ptx;
        assert!(ptx.contains("0f3DCCCCCD"), "{ptx}");
        assert!(ptx.contains("mul.rn.f32"));
        assert!(ptx.contains("add.rz.f32"));
        assert!(ptx.contains("0f80000000"));
        assert!(!ptx.contains(".approx"));
    }
}
