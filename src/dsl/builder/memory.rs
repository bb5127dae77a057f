//! Memory: the typed pointers ([`GlobalPtr`], [`SharedPtr`],
//! [`SharedArray`]), parameter loads, address arithmetic, shared-array
//! declarations, loads and stores (global, read-only global, shared,
//! scalar and vector such as `ld_global_v2` and `ld_global_v4`) and
//! integer atomics.

use std::marker::PhantomData;

use super::core::{ForeignWhat, KernelBuilder, is_identifier, static_smem};
use super::error::BuildError;
use crate::dsl::ir::*;
use crate::dsl::printer::SharedDecl;
use crate::dsl::types::*;
use crate::target::STATIC_SMEM_LIMIT;

/// A typed pointer into global memory (a 64-bit global address of `E`s).
#[derive(Debug)]
pub struct GlobalPtr<E> {
    pub(crate) reg: Reg<U64>,
    _e: PhantomData<E>,
}
impl<E> Clone for GlobalPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for GlobalPtr<E> {}
impl<E> GlobalPtr<E> {
    /// The pointer whose address is in `reg` (a device function's
    /// argument).
    pub(crate) fn from_reg(reg: Reg<U64>) -> Self {
        Self {
            reg,
            _e: PhantomData,
        }
    }
    /// The address register.
    pub fn addr(self) -> Reg<U64> {
        self.reg
    }
    /// The same address viewed as a pointer to `F`s (no instruction), e.g.
    /// a byte buffer accessed four codes at a time as `U32`s. Accesses
    /// through the result must be aligned to their own size; the launch
    /// code guarantees the buffer's alignment.
    pub fn cast<F>(self) -> GlobalPtr<F> {
        GlobalPtr {
            reg: self.reg,
            _e: PhantomData,
        }
    }
}

/// A typed pointer into shared memory (a 32-bit shared-window address of `E`s).
#[derive(Debug)]
pub struct SharedPtr<E> {
    pub(crate) reg: Reg<U32>,
    _e: PhantomData<E>,
}
impl<E> Clone for SharedPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for SharedPtr<E> {}
impl<E> SharedPtr<E> {
    /// The pointer whose address is in `reg` (a device function's
    /// argument).
    pub(crate) fn from_reg(reg: Reg<U32>) -> Self {
        Self {
            reg,
            _e: PhantomData,
        }
    }
}

/// A statically sized shared-memory array of `len` elements of `E`, or
/// the dynamic shared array ([`KernelBuilder::dynamic_shared`], sized at
/// launch).
#[derive(Debug)]
pub struct SharedArray<E> {
    name: String,
    len: u32,
    align: u32,
    owner: u32,
    dynamic: bool,
    _e: PhantomData<E>,
}
impl<E> Clone for SharedArray<E> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            len: self.len,
            align: self.align,
            owner: self.owner,
            dynamic: self.dynamic,
            _e: PhantomData,
        }
    }
}
impl<E> SharedArray<E> {
    /// Number of elements (0 for the dynamic array: its size is the
    /// launch's dynamic shared memory).
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether the array has no elements (never for the dynamic array,
    /// whose size is not known when the kernel is built).
    pub fn is_empty(&self) -> bool {
        self.len == 0 && !self.dynamic
    }
    /// Whether this is the dynamic shared array
    /// ([`KernelBuilder::dynamic_shared`]).
    pub fn is_dynamic(&self) -> bool {
        self.dynamic
    }
}

impl KernelBuilder {
    /// Load a scalar parameter (used by
    /// [`KernelParams`](crate::dsl::KernelParams) implementations).
    #[track_caller]
    pub fn load_param<T: RegType>(&mut self, name: &str) -> Reg<T> {
        self.entry_only("load_param");
        let name = name.to_string();
        self.def(|d| Op::LdParam {
            ty: T::CLASS.ty(),
            d,
            name,
        })
    }

    /// Load a pointer parameter and convert it to a global address.
    #[track_caller]
    pub fn load_param_ptr<E: Elem>(&mut self, name: &str) -> GlobalPtr<E> {
        let generic = self.load_param::<U64>(name);
        let reg = self.def(|d| Op::CvtaGlobal { d, a: generic.id() });
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements, with a 32-bit index (`mul.wide`, no overflow).
    #[track_caller]
    pub fn offset<E: Elem>(&mut self, p: GlobalPtr<E>, i: impl Into<Src<U32>>) -> GlobalPtr<E> {
        let size = E::SCALAR.size();
        let reg = self.mad_wide_u32(i, size, p.reg);
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements, with a 64-bit index.
    #[track_caller]
    pub fn offset64<E: Elem>(&mut self, p: GlobalPtr<E>, i: impl Into<Src<U64>>) -> GlobalPtr<E> {
        let size = u64::from(E::SCALAR.size());
        let reg = self.mad_lo(i, size, p.reg);
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// A fresh register holding the same address (to advance separately).
    #[track_caller]
    pub fn ptr_copy<E: Elem>(&mut self, p: GlobalPtr<E>) -> GlobalPtr<E> {
        let reg = self.mov(p.reg);
        GlobalPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// Move `p` forward by `k` elements in place (loop-carried pointers).
    #[track_caller]
    pub fn advance<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) {
        let bytes = i64::from(k) * i64::from(E::SCALAR.size());
        self.push(Op::Int {
            op: IntOp::Add,
            ty: Ty::U64,
            d: p.reg.id(),
            a: p.reg.value(),
            b: Value::Int(bytes.into()),
        });
    }

    /// Declare a shared array of `len` elements aligned to `align` bytes
    /// (a power of two, at least the element size).
    #[track_caller]
    pub fn shared_array<E: Elem>(&mut self, name: &str, len: u32, align: u32) -> SharedArray<E> {
        let size = E::SCALAR.size();
        if !align.is_power_of_two() || align < size {
            self.fail(BuildError::SharedAlignment {
                array: name.to_string(),
                align,
                elem_size: size,
            });
        }
        if !is_identifier(name) || self.shared.iter().any(|s| s.name == name) {
            self.fail(BuildError::SharedName {
                array: name.to_string(),
            });
        }
        let bytes = u64::from(len) * u64::from(size);
        let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
        self.shared.push(SharedDecl {
            name: name.to_string(),
            align,
            bytes,
            dynamic: false,
        });
        let total = static_smem(&self.shared);
        if total > u64::from(STATIC_SMEM_LIMIT) {
            self.fail(BuildError::StaticSharedLimit {
                bytes: total,
                limit: STATIC_SMEM_LIMIT,
            });
        }
        SharedArray {
            name: name.to_string(),
            len,
            align,
            owner: self.id,
            dynamic: false,
            _e: PhantomData,
        }
    }

    /// Declare the dynamic shared array: `.extern .shared .align A .b8
    /// name[];` at module scope, whose size is the launch's dynamic shared
    /// memory (`LaunchConfig::dynamic_smem_bytes`), placed after the static
    /// arrays at an `align`-byte boundary (a power of two, at least the
    /// element size). Every target has it. Constant indices are not checked
    /// against a length (there is none when the kernel is built); the
    /// simulator checks each access against the launch's size. Two dynamic
    /// arrays alias the same memory, as in PTX.
    #[track_caller]
    pub fn dynamic_shared<E: Elem>(&mut self, name: &str, align: u32) -> SharedArray<E> {
        let size = E::SCALAR.size();
        if !align.is_power_of_two() || align < size {
            self.fail(BuildError::SharedAlignment {
                array: name.to_string(),
                align,
                elem_size: size,
            });
        }
        if !is_identifier(name) || self.shared.iter().any(|s| s.name == name) {
            self.fail(BuildError::SharedName {
                array: name.to_string(),
            });
        }
        self.shared.push(SharedDecl {
            name: name.to_string(),
            align,
            bytes: 0,
            dynamic: true,
        });
        SharedArray {
            name: name.to_string(),
            len: 0,
            align,
            owner: self.id,
            dynamic: true,
            _e: PhantomData,
        }
    }

    /// Refuse a shared array of another builder.
    #[track_caller]
    fn check_array<E>(&mut self, a: &SharedArray<E>) {
        self.check_owner(a.owner, || ForeignWhat::SharedArray(a.name.clone()));
    }

    /// Address of element `i` of a shared array.
    #[track_caller]
    pub fn shared_elem<E: Elem>(
        &mut self,
        a: &SharedArray<E>,
        i: impl Into<Src<U32>>,
    ) -> SharedPtr<E> {
        let i = i.into();
        self.check_array(a);
        if let Some(k) = i.as_int().filter(|k| !a.dynamic && *k >= i128::from(a.len)) {
            self.fail(BuildError::SharedIndex {
                array: a.name.clone(),
                index: u64::try_from(k).unwrap_or(u64::MAX),
                len: a.len,
            });
        }
        let base = self.def(|d| Op::MovVarAddr {
            d,
            var: a.name.clone(),
        });
        let reg = self.mad_lo(i, E::SCALAR.size(), base);
        SharedPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements in shared memory.
    #[track_caller]
    pub fn shared_offset<E: Elem>(
        &mut self,
        p: SharedPtr<E>,
        i: impl Into<Src<U32>>,
    ) -> SharedPtr<E> {
        let reg = self.mad_lo(i, E::SCALAR.size(), p.reg);
        SharedPtr {
            reg,
            _e: PhantomData,
        }
    }

    // ---- loads and stores -------------------------------------------------

    #[track_caller]
    pub(super) fn ld_n<E: Elem, const N: usize>(
        &mut self,
        space: Space,
        base: AddrBase,
        offset: i32,
    ) -> [Reg<E::Reg>; N] {
        let regs: [Reg<E::Reg>; N] = std::array::from_fn(|_| self.reg::<E::Reg>());
        if N > 1 && E::SCALAR.size() < 4 {
            self.fail(BuildError::SubWordVector { access: "loads" });
        }
        let ty = scalar_ty(E::SCALAR);
        self.push(Op::Ld {
            space,
            ty,
            d: regs.iter().map(|r| r.id()).collect(),
            addr: Addr { base, offset },
        });
        regs
    }

    #[track_caller]
    pub(super) fn st_n<E: Elem>(
        &mut self,
        space: Space,
        base: AddrBase,
        offset: i32,
        v: Vec<Value>,
    ) {
        if v.len() > 1 && E::SCALAR.size() < 4 {
            self.fail(BuildError::SubWordVector { access: "stores" });
        }
        let ty = scalar_ty(E::SCALAR);
        self.push(Op::St {
            space,
            ty,
            v,
            addr: Addr { base, offset },
        });
    }

    /// The vector stores' operand plumbing: `v` to `p[k..k+N]` as one
    /// access, `p` the address register `addr` in `space`.
    #[track_caller]
    pub(super) fn st_vec<E: Elem, const N: usize>(
        &mut self,
        space: Space,
        addr: RegId,
        k: i32,
        v: [Reg<E::Reg>; N],
    ) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            space,
            AddrBase::Reg(addr),
            o,
            v.iter().map(|r| r.value()).collect(),
        );
    }

    #[track_caller]
    pub(super) fn elem_offset<E: Elem>(&mut self, k: i32) -> i32 {
        match k.checked_mul(E::SCALAR.size() as i32) {
            Some(o) => o,
            None => {
                self.fail(BuildError::OffsetOverflow { offset: k });
                0
            }
        }
    }

    /// Load `p[k]` (constant `k`) from global memory.
    #[track_caller]
    pub fn ld_global<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::Global, AddrBase::Reg(p.reg.id()), o)[0]
    }
    /// Load `p[k]` through the read-only path (the data must not change
    /// during the kernel).
    #[track_caller]
    pub fn ld_global_nc<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::GlobalNc, AddrBase::Reg(p.reg.id()), o)[0]
    }
    /// Load `p[k..k+4]` as one 16-byte access (the address must be 16-byte
    /// aligned; 4-byte elements only).
    #[track_caller]
    pub fn ld_global_nc_v4<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::GlobalNc, AddrBase::Reg(p.reg.id()), o)
    }
    /// Load `p[k..k+4]` as one 16-byte access through the coherent path
    /// (for data the kernel may also write, e.g. an in-place update; the
    /// address must be 16-byte aligned; 4-byte elements only).
    #[track_caller]
    pub fn ld_global_v4<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::Global, AddrBase::Reg(p.reg.id()), o)
    }
    /// Load `p[k..k+2]` as one 8-byte access through the read-only path
    /// (`ld.global.nc.v2`; the data must not change during the kernel).
    /// Elements of 4 or 8 bytes (a narrower element is refused with
    /// [`BuildError::SubWordVector`]; 8-byte elements make it a 16-byte
    /// access). The address must be aligned to the whole access (2 × the
    /// element size): the simulator reports a misaligned one as
    /// [`SimError::Misaligned`](crate::sim::SimError::Misaligned) and a GPU
    /// faults (`CUDA_ERROR_MISALIGNED_ADDRESS`).
    #[track_caller]
    pub fn ld_global_nc_v2<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> [Reg<E::Reg>; 2] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 2>(Space::GlobalNc, AddrBase::Reg(p.reg.id()), o)
    }
    /// Load `p[k..k+2]` as one access of 2 × the element size through the
    /// coherent path (`ld.global.v2`; for data the kernel may also write).
    /// Alignment and element sizes as [`ld_global_nc_v2`](Self::ld_global_nc_v2).
    #[track_caller]
    pub fn ld_global_v2<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32) -> [Reg<E::Reg>; 2] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 2>(Space::Global, AddrBase::Reg(p.reg.id()), o)
    }
    /// Store two values to `p[k..k+2]` as one access of 2 × the element
    /// size (`st.global.v2`). Alignment and element sizes as
    /// [`ld_global_nc_v2`](Self::ld_global_nc_v2).
    #[track_caller]
    pub fn st_global_v2<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32, v: [Reg<E::Reg>; 2]) {
        self.st_vec::<E, _>(Space::Global, p.reg.id(), k, v);
    }
    /// Store `v` to `p[k]`.
    #[track_caller]
    pub fn st_global<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32, v: impl Into<Src<E::Reg>>) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::Global,
            AddrBase::Reg(p.reg.id()),
            o,
            vec![v.into().v],
        );
    }
    /// Store four values to `p[k..k+4]` as one 16-byte access.
    #[track_caller]
    pub fn st_global_v4<E: Elem>(&mut self, p: GlobalPtr<E>, k: i32, v: [Reg<E::Reg>; 4]) {
        self.st_vec::<E, _>(Space::Global, p.reg.id(), k, v);
    }
    /// Load `p[k]` from shared memory.
    #[track_caller]
    pub fn ld_shared<E: Elem>(&mut self, p: SharedPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::Shared, AddrBase::Reg(p.reg.id()), o)[0]
    }
    /// Load `p[k..k+4]` from shared memory as one 16-byte access.
    #[track_caller]
    pub fn ld_shared_v4<E: Elem>(&mut self, p: SharedPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::Shared, AddrBase::Reg(p.reg.id()), o)
    }
    /// Load `p[k..k+2]` from shared memory as one 8-byte access.
    #[track_caller]
    pub fn ld_shared_v2<E: Elem>(&mut self, p: SharedPtr<E>, k: i32) -> [Reg<E::Reg>; 2] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 2>(Space::Shared, AddrBase::Reg(p.reg.id()), o)
    }
    /// Store `v` to `p[k]` in shared memory.
    #[track_caller]
    pub fn st_shared<E: Elem>(&mut self, p: SharedPtr<E>, k: i32, v: impl Into<Src<E::Reg>>) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::Shared,
            AddrBase::Reg(p.reg.id()),
            o,
            vec![v.into().v],
        );
    }
    /// Store four values to `p[k..k+4]` in shared memory.
    #[track_caller]
    pub fn st_shared_v4<E: Elem>(&mut self, p: SharedPtr<E>, k: i32, v: [Reg<E::Reg>; 4]) {
        self.st_vec::<E, _>(Space::Shared, p.reg.id(), k, v);
    }
    /// Load element `k` (constant) of a shared array: `[name+offset]`.
    #[track_caller]
    pub fn ld_shared_at<E: Elem>(&mut self, a: &SharedArray<E>, k: u32) -> Reg<E::Reg> {
        self.check_array(a);
        if !a.dynamic && k >= a.len {
            self.fail(BuildError::SharedIndex {
                array: a.name.clone(),
                index: k.into(),
                len: a.len,
            });
        }
        let o = self.elem_offset::<E>(k as i32);
        self.ld_n::<E, 1>(Space::Shared, AddrBase::Var(a.name.clone()), o)[0]
    }
    /// Store to element `k` (constant) of a shared array.
    #[track_caller]
    pub fn st_shared_at<E: Elem>(&mut self, a: &SharedArray<E>, k: u32, v: impl Into<Src<E::Reg>>) {
        self.check_array(a);
        if !a.dynamic && k >= a.len {
            self.fail(BuildError::SharedIndex {
                array: a.name.clone(),
                index: k.into(),
                len: a.len,
            });
        }
        let o = self.elem_offset::<E>(k as i32);
        self.st_n::<E>(
            Space::Shared,
            AddrBase::Var(a.name.clone()),
            o,
            vec![v.into().v],
        );
    }

    /// Integer atomic on global memory; returns the old value. `c` is the
    /// new value for `Cas` (and must be `None` otherwise).
    #[track_caller]
    pub fn atom_global<E: Elem>(
        &mut self,
        op: AtomOp,
        p: GlobalPtr<E>,
        b: impl Into<Src<E::Reg>>,
        c: Option<Src<E::Reg>>,
    ) -> Reg<E::Reg> {
        self.atom(
            Space::Global,
            op,
            AddrBase::Reg(p.reg.id()),
            b.into().v,
            c.map(|c| c.v),
            E::SCALAR,
        )
    }

    /// Integer atomic on shared memory; returns the old value.
    #[track_caller]
    pub fn atom_shared<E: Elem>(
        &mut self,
        op: AtomOp,
        p: SharedPtr<E>,
        b: impl Into<Src<E::Reg>>,
        c: Option<Src<E::Reg>>,
    ) -> Reg<E::Reg> {
        self.atom(
            Space::Shared,
            op,
            AddrBase::Reg(p.reg.id()),
            b.into().v,
            c.map(|c| c.v),
            E::SCALAR,
        )
    }

    #[track_caller]
    fn atom<R: RegType>(
        &mut self,
        space: Space,
        op: AtomOp,
        base: AddrBase,
        b: Value,
        c: Option<Value>,
        s: crate::abi::ScalarType,
    ) -> Reg<R> {
        use crate::abi::ScalarType as S;
        if !matches!(s, S::U32 | S::S32 | S::U64) {
            self.fail(BuildError::AtomicType { ty: s });
        }
        if (op == AtomOp::Cas) != c.is_some() {
            self.fail(BuildError::AtomicOperands);
        }
        let ty = scalar_ty(s);
        self.def(|d| Op::Atom {
            space,
            op,
            ty,
            d,
            addr: Addr { base, offset: 0 },
            b,
            c,
        })
    }
}
