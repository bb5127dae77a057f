//! The builder's core: the [`KernelBuilder`] type, entry directives,
//! register and label allocation, recording instructions (feature checks
//! and the minimal `.version`), plain moves, and module assembly
//! ([`KernelBuilder::finish`]).

use std::collections::BTreeMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::error::BuildError;
use super::func_def::FuncDef;
use crate::abi::ParamDesc;
use crate::dsl::ir::*;
use crate::dsl::module::PtxModule;
use crate::dsl::printer::{self, KernelText, SharedDecl, print_module};
use crate::dsl::types::*;
use crate::error::{Error, Result};
use crate::target::{Feature, PtxVersion, Sm};

/// A branch target, owned by the builder that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    pub(super) id: u32,
    pub(super) owner: u32,
}

/// The next builder id (0 is never handed out).
static NEXT_BUILDER: AtomicU32 = AtomicU32::new(1);

/// The kernel names of the live builders, by builder id, so a foreign
/// handle's error names the kernel it came from. An entry is removed when
/// its builder is finished or dropped.
static LIVE_BUILDERS: Mutex<BTreeMap<u32, String>> = Mutex::new(BTreeMap::new());

fn live_builders() -> std::sync::MutexGuard<'static, BTreeMap<u32, String>> {
    LIVE_BUILDERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The kernel name of builder `id`, or `#id` once that builder is gone.
fn kernel_of(id: u32) -> String {
    live_builders()
        .get(&id)
        .cloned()
        .unwrap_or_else(|| format!("#{id} (a builder that has finished)"))
}

/// Builds one kernel entry for one SM.
pub struct KernelBuilder {
    pub(super) name: String,
    pub(super) tuning: String,
    pub(super) sm: Sm,
    pub(super) params: Vec<ParamDesc>,
    pub(super) reqntid: Option<(u32, u32, u32)>,
    pub(super) maxntid: Option<(u32, u32, u32)>,
    pub(super) min_ctas: Option<u32>,
    /// `.reqnctapercluster` ([`KernelBuilder::cluster_dims`]).
    pub(super) cluster_dims: Option<(u32, u32, u32)>,
    pub(super) regs: [u32; 10],
    pub(super) shared: Vec<SharedDecl>,
    pub(super) body: Vec<Instr>,
    pub(super) labels: u32,
    pub(super) guard: Option<(RegId, bool)>,
    pub(super) version: PtxVersion,
    pub(super) error: Option<Error>,
    /// This builder's id: every handle it gives out carries it.
    pub(super) id: u32,
    /// Per register class, the loop scope each register was defined in
    /// (0: outside every loop), indexed by register number.
    pub(super) reg_scope: [Vec<u32>; 10],
    /// The loop bodies being built, innermost last.
    pub(super) open_loops: Vec<u32>,
    /// Where each loop scope (1, 2, …) was opened.
    pub(super) loop_sites: Vec<&'static Location<'static>>,
    /// Whether this builder builds a device function body
    /// ([`KernelBuilder::device_fn`]) rather than an entry.
    pub(super) in_func: bool,
    /// The device functions this body calls, callees before callers, each
    /// once.
    pub(super) funcs: Vec<Arc<FuncDef>>,
    /// Call sequences emitted so far (numbers the `callseq` comments).
    pub(super) callseqs: u32,
    /// The ids of the device function builders made under this one
    /// (their names stay known until this builder is dropped).
    pub(super) built_funcs: Vec<u32>,
}

impl Drop for KernelBuilder {
    fn drop(&mut self) {
        // A device function's name stays known while the builder that
        // built it lives: its registers may still be (mis)used there, and
        // that error names it.
        if !self.in_func {
            let mut live = live_builders();
            live.remove(&self.id);
            for id in &self.built_funcs {
                live.remove(id);
            }
        }
    }
}

impl KernelBuilder {
    /// Start a kernel named `name` (the `.entry` name) for `sm`. The
    /// builder gets a process-wide unique id that every register,
    /// predicate, pointer, shared array and label it hands out carries.
    #[track_caller]
    pub fn new(name: &str, sm: Sm) -> Self {
        Self::new_in(name, sm, false)
    }

    /// [`new`](Self::new) for an entry (`in_func: false`) or a device
    /// function body (`true`).
    #[track_caller]
    pub(super) fn new_in(name: &str, sm: Sm, in_func: bool) -> Self {
        let id = NEXT_BUILDER.fetch_add(1, Ordering::Relaxed);
        live_builders().insert(id, name.to_string());
        let mut b = Self {
            name: name.to_string(),
            tuning: String::new(),
            sm,
            params: Vec::new(),
            reqntid: None,
            maxntid: None,
            min_ctas: None,
            cluster_dims: None,
            regs: [0; 10],
            shared: Vec::new(),
            body: Vec::new(),
            labels: 0,
            guard: None,
            version: sm.min_ptx(),
            error: None,
            id,
            reg_scope: Default::default(),
            open_loops: Vec::new(),
            loop_sites: Vec::new(),
            in_func,
            funcs: Vec::new(),
            callseqs: 0,
            built_funcs: Vec::new(),
        };
        if !is_identifier(name) {
            b.fail(BuildError::InvalidName {
                name: name.to_string(),
            });
        }
        b
    }

    /// The target SM.
    #[track_caller]
    pub fn sm(&self) -> Sm {
        self.sm
    }

    /// Record the tuning key (part of the module cache key).
    #[track_caller]
    pub fn tuning(&mut self, key: impl Into<String>) -> &mut Self {
        self.tuning = key.into();
        self
    }

    /// Require exactly this block shape (`.reqntid`).
    #[track_caller]
    pub fn reqntid(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.entry_only("reqntid");
        self.reqntid = Some((x, y, z));
        self
    }

    /// Bound the block size (`.maxntid`).
    #[track_caller]
    pub fn maxntid(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.entry_only("maxntid");
        self.maxntid = Some((x, y, z));
        self
    }

    /// Ask ptxas for at least `n` resident CTAs per SM (`.minnctapersm`).
    #[track_caller]
    pub fn min_ctas_per_sm(&mut self, n: u32) -> &mut Self {
        self.entry_only("min_ctas_per_sm");
        self.min_ctas = Some(n);
        self
    }

    /// Record `error` (with the caller's location) unless an earlier one
    /// is recorded: [`finish`](Self::finish) returns the first.
    #[track_caller]
    pub(super) fn fail(&mut self, error: BuildError) {
        self.fail_at(error, Location::caller());
    }

    /// Refuse an entry-only directive or parameter load inside a device
    /// function body ([`BuildError::NotInDeviceFunction`]).
    #[track_caller]
    pub(super) fn entry_only(&mut self, op: &'static str) {
        if self.in_func {
            self.fail(BuildError::NotInDeviceFunction { op });
        }
    }

    /// Keep `error` (an error of a device function's body) unless an
    /// earlier one is recorded.
    pub(super) fn record(&mut self, error: Error) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    /// [`fail`](Self::fail) with the location given.
    pub(super) fn fail_at(&mut self, error: BuildError, at: &'static Location<'static>) {
        if self.error.is_none() {
            self.error = Some(Error::Build {
                kernel: self.name.clone(),
                error,
                location: Some(at),
            });
        }
    }

    /// PTX has no 8-bit `mov`/`selp`: refuse them on [`B8`] registers.
    #[track_caller]
    pub(super) fn no_b8<T: RegType>(&mut self, op: &'static str) {
        if T::CLASS == RegClass::B8 {
            self.fail(BuildError::NoB8Form { op });
        }
    }

    /// Allocate a fresh register of class `T`, owned by this builder and
    /// defined in the innermost loop body being built (if any).
    #[track_caller]
    pub fn reg<T: RegType>(&mut self) -> Reg<T> {
        let r = self.reg_of(T::CLASS);
        Reg::new(r.idx, r.owner)
    }

    /// [`reg`](Self::reg) for a class known at run time.
    pub(super) fn reg_of(&mut self, class: RegClass) -> RegId {
        let slot = &mut self.regs[class as usize];
        let r = RegId {
            class,
            idx: *slot,
            owner: self.id,
        };
        *slot += 1;
        let scope = self.open_loops.last().copied().unwrap_or(0);
        self.reg_scope[class as usize].push(scope);
        r
    }

    /// Refuse a handle of another builder ([`BuildError::ForeignRegister`]).
    #[track_caller]
    pub(super) fn check_owner(&mut self, owner: u32, what: impl FnOnce() -> ForeignWhat) {
        self.check_owner_at(owner, what, Location::caller());
    }

    fn check_owner_at(
        &mut self,
        owner: u32,
        what: impl FnOnce() -> ForeignWhat,
        at: &'static Location<'static>,
    ) {
        if owner != self.id && self.error.is_none() {
            let (owner_kernel, this_kernel) = (kernel_of(owner), self.name.clone());
            let error = match what() {
                ForeignWhat::Register(register) => BuildError::ForeignRegister {
                    register,
                    owner_kernel,
                    this_kernel,
                },
                ForeignWhat::SharedArray(array) => BuildError::ForeignSharedArray {
                    array,
                    owner_kernel,
                    this_kernel,
                },
                ForeignWhat::Label => BuildError::ForeignLabel {
                    owner_kernel,
                    this_kernel,
                },
            };
            self.fail_at(error, at);
        }
    }

    /// Check one register operand: this builder's, and (when read) not a
    /// value of a loop body that has ended.
    fn check_reg(&mut self, r: RegId, read: bool, at: &'static Location<'static>) {
        self.check_owner_at(r.owner, || ForeignWhat::Register(printer::reg(r)), at);
        if !read || r.owner != self.id || self.error.is_some() {
            return;
        }
        let scope = self.reg_scope[r.class as usize]
            .get(r.idx as usize)
            .copied()
            .unwrap_or(0);
        if scope != 0 && !self.open_loops.contains(&scope) {
            let loop_at = self.loop_sites[scope as usize - 1];
            self.fail_at(
                BuildError::LoopValueEscapes {
                    register: printer::reg(r),
                    loop_at,
                },
                at,
            );
        }
    }

    /// Build a loop body: registers `f` defines belong to it, and reading
    /// one after it ends is refused ([`BuildError::LoopValueEscapes`]).
    #[track_caller]
    pub(super) fn loop_body<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.loop_sites.push(Location::caller());
        let scope = self.loop_sites.len() as u32;
        self.open_loops.push(scope);
        let r = f(self);
        self.open_loops.pop();
        r
    }

    /// Record that the kernel uses `f` (an instruction's or a directive's):
    /// refused below its SM ([`Error::UnsupportedFeature`], the first error
    /// kept), else the PTX version raised to the feature's minimum.
    pub(super) fn require(&mut self, f: Feature) {
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

    #[track_caller]
    pub(super) fn push(&mut self, op: Op) {
        let at = Location::caller();
        op.for_each_reg(|r, read| self.check_reg(r, read, at));
        if let Some((p, _)) = self.guard {
            self.check_reg(p, true, at);
        }
        if let Some(f) = op.feature() {
            self.require(f);
        }
        if self.guard.is_some() && matches!(op, Op::Label(_)) {
            self.fail(BuildError::LabelInGuardedRegion);
        }
        self.body.push(Instr {
            guard: self.guard,
            op,
        });
    }

    #[track_caller]
    pub(super) fn def<T: RegType>(&mut self, f: impl FnOnce(RegId) -> Op) -> Reg<T> {
        let d = self.reg::<T>();
        self.push(f(d.id()));
        d
    }

    /// A comment line in the PTX (documentation for readers of the dump).
    #[track_caller]
    pub fn comment(&mut self, text: &str) {
        self.push(Op::Comment(text.to_string()));
    }

    // ---- moves -------------------------------------------------------------

    /// `d = a` into a fresh register.
    #[track_caller]
    pub fn mov<T: RegType>(&mut self, a: impl Into<Src<T>>) -> Reg<T> {
        self.no_b8::<T>("mov");
        let a = a.into().v;
        self.def(|d| Op::Mov {
            ty: T::CLASS.ty(),
            d,
            a,
        })
    }

    /// Overwrite an existing register: `mov d, a` (loop-carried values;
    /// [`Var`](crate::dsl::Var) is the same with its own type).
    #[track_caller]
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
    #[track_caller]
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label {
            id: self.labels,
            owner: self.id,
        }
    }

    /// Place `l` here.
    #[track_caller]
    pub fn place(&mut self, l: Label) {
        self.check_owner(l.owner, || ForeignWhat::Label);
        self.push(Op::Label(l.id));
    }

    // ---- finishing -------------------------------------------------------------

    /// Validate and print the module, or return the first misuse
    /// recorded ([`Error::Build`] with its [`BuildError`] and the caller's
    /// location, or [`Error::UnsupportedFeature`]).
    #[track_caller]
    pub fn finish(mut self) -> Result<PtxModule> {
        if let Some(e) = self.error.take() {
            return Err(e);
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
        self.check_module_shared();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let reg_counts = self.reg_counts();
        let module_shared: Vec<SharedDecl> = self
            .funcs
            .iter()
            .flat_map(|f| f.shared.iter().cloned())
            .collect();
        let funcs: Vec<&str> = self.funcs.iter().map(|f| f.text.as_str()).collect();
        let ptx = print_module(&KernelText {
            name: &self.name,
            sm: self.sm,
            version: self.version,
            params: &self.params,
            reqntid: self.reqntid,
            maxntid: self.maxntid,
            min_ctas_per_sm: self.min_ctas,
            cluster_dims: self.cluster_dims,
            reg_counts: &reg_counts,
            shared: &self.shared,
            body: &self.body,
            module_shared: &module_shared,
            funcs: &funcs,
        });
        Ok(PtxModule {
            kernel: std::mem::take(&mut self.name),
            tuning: std::mem::take(&mut self.tuning),
            sm: self.sm,
            version: self.version,
            params: std::mem::take(&mut self.params),
            ptx,
        })
    }
}

impl KernelBuilder {
    /// The register declarations: per class, how many were made.
    pub(super) fn reg_counts(&self) -> Vec<(RegClass, u32)> {
        RegClass::ALL
            .iter()
            .map(|&c| (c, self.regs[c as usize]))
            .collect()
    }
}

/// The static shared memory the declared arrays take (sizes plus
/// alignment slack), checked against [`STATIC_SMEM_LIMIT`](crate::target::STATIC_SMEM_LIMIT) as arrays are
/// declared.
pub(super) fn static_smem(shared: &[SharedDecl]) -> u64 {
    shared
        .iter()
        .filter(|s| !s.dynamic)
        .map(|s| u64::from(s.bytes) + u64::from(s.align))
        .sum()
}

/// What a foreign handle is, for its error.
pub(super) enum ForeignWhat {
    Register(String),
    SharedArray(String),
    Label,
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
    use crate::target::{Feature, STATIC_SMEM_LIMIT};

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

    /// The [`BuildError`] of a refused build, and that its location is
    /// this file.
    fn build_err(r: Result<PtxModule>) -> BuildError {
        match err_of(r) {
            Error::Build {
                error,
                location: Some(l),
                ..
            } => {
                assert!(l.file().ends_with("core.rs"), "{l}");
                error
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn constant_index_past_a_shared_array_is_refused() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let a = b.shared_array::<F32>("a", 4, 4);
        let _ = b.ld_shared_at(&a, 4);
        assert_eq!(
            build_err(b.finish()),
            BuildError::SharedIndex {
                array: "a".into(),
                index: 4,
                len: 4
            }
        );
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let a = b.shared_array::<U32>("s", 8, 4);
        let _ = b.shared_elem(&a, 9u32);
        assert!(matches!(
            build_err(b.finish()),
            BuildError::SharedIndex {
                index: 9,
                len: 8,
                ..
            }
        ));
    }

    #[test]
    fn static_shared_memory_over_48k_is_refused() {
        let mut b = KernelBuilder::new("k", Sm::Sm90);
        let _ = b.shared_array::<F32>("a", 12 * 1024, 16);
        assert_eq!(
            build_err(b.finish()),
            BuildError::StaticSharedLimit {
                bytes: 48 * 1024 + 16,
                limit: STATIC_SMEM_LIMIT
            }
        );
    }

    #[test]
    fn misuse_is_refused() {
        let mut b = KernelBuilder::new("9bad", Sm::Sm80);
        let _ = b.mov(1u32);
        assert_eq!(
            build_err(b.finish()),
            BuildError::InvalidName {
                name: "9bad".into()
            }
        );

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let _ = b.setp(Cmp::Ltu, x, 2u32);
        assert_eq!(
            build_err(b.finish()),
            BuildError::FloatOnlyComparison { cmp: Cmp::Ltu }
        );

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let _ = b.div(x, 0u32);
        assert_eq!(
            build_err(b.finish()),
            BuildError::DivisionByZero { op: "division" }
        );

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let _ = b.shared_array::<F32>("a", 4, 2);
        assert_eq!(
            build_err(b.finish()),
            BuildError::SharedAlignment {
                array: "a".into(),
                align: 2,
                elem_size: 4
            }
        );

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let p = b.mov(1u32);
        let q = b.setp(Cmp::Eq, p, 1u32);
        b.guarded(q, |b| {
            let l = b.label();
            b.place(l);
        });
        assert_eq!(build_err(b.finish()), BuildError::LabelInGuardedRegion);
    }

    #[test]
    fn the_first_misuse_is_kept_and_shown_with_its_location() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let x = b.mov(1u32);
        let line = line!() + 1;
        let _ = b.rem(x, 0u32);
        let _ = b.div(x, 0u32);
        let e = err_of(b.finish());
        let Error::Build {
            kernel,
            error,
            location: Some(l),
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(
            (kernel.as_str(), error, l.line()),
            ("k", &BuildError::DivisionByZero { op: "remainder" }, line)
        );
        assert_eq!(
            e.to_string(),
            format!(
                "kernel `k`: integer remainder by the constant 0 (at {}:{line}:{})",
                file!(),
                l.column()
            )
        );
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
