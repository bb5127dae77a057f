//! Control flow and warp operations: comparisons into predicates,
//! selection and predicate logic, branches, structured control flow
//! (`if_`, `if_else`, `guarded`, `for_range`, `while_`), barriers, and the
//! warp-level `shfl`, `vote` and `redux`. Label allocation is in the
//! parent module.

use super::core::{ForeignWhat, KernelBuilder, Label};
use super::error::BuildError;
use crate::dsl::ir::*;
use crate::dsl::types::*;

impl KernelBuilder {
    /// `a cmp b` into a predicate. Unsigned `T` compares unsigned; the
    /// unordered/`Num`/`Nan` comparisons are for floats only.
    #[track_caller]
    pub fn setp<T: CmpType>(
        &mut self,
        c: Cmp,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<Pred> {
        let is_float = matches!(T::CLASS, RegClass::F32 | RegClass::F64);
        if c.float_only() && !is_float {
            self.fail(BuildError::FloatOnlyComparison { cmp: c });
        }
        let (a, b) = (a.into().v, b.into().v);
        self.def(|d| Op::Setp {
            cmp: c,
            ty: T::CLASS.ty(),
            d,
            a,
            b,
        })
    }
    /// `p ? a : b`.
    #[track_caller]
    pub fn selp<T: RegType>(
        &mut self,
        p: Reg<Pred>,
        a: impl Into<Src<T>>,
        b: impl Into<Src<T>>,
    ) -> Reg<T> {
        if T::CLASS == RegClass::Pred {
            self.fail(BuildError::SelpOnPredicates);
        }
        self.no_b8::<T>("selp");
        let (a, b) = (a.into().v, b.into().v);
        let ty = T::CLASS.ty();
        self.def(|d| Op::Selp {
            ty,
            d,
            a,
            b,
            p: p.id(),
        })
    }
    /// `a && b`.
    #[track_caller]
    pub fn pand(&mut self, a: Reg<Pred>, b: Reg<Pred>) -> Reg<Pred> {
        self.def(|d| Op::PredLogic {
            op: IntOp::And,
            d,
            a: a.id(),
            b: b.id(),
        })
    }
    /// `a || b`.
    #[track_caller]
    pub fn por(&mut self, a: Reg<Pred>, b: Reg<Pred>) -> Reg<Pred> {
        self.def(|d| Op::PredLogic {
            op: IntOp::Or,
            d,
            a: a.id(),
            b: b.id(),
        })
    }
    /// `!a`.
    #[track_caller]
    pub fn pnot(&mut self, a: Reg<Pred>) -> Reg<Pred> {
        self.def(|d| Op::PredNot { d, a: a.id() })
    }

    // ---- branches and structured control flow -------------------------------

    /// Unconditional branch.
    #[track_caller]
    pub fn bra(&mut self, l: Label) {
        self.check_owner(l.owner, || ForeignWhat::Label);
        self.push(Op::Bra {
            target: l.id,
            uni: false,
        });
    }

    /// Branch when `p` (or when `!p` if `negate`).
    #[track_caller]
    pub fn bra_if(&mut self, p: Reg<Pred>, negate: bool, l: Label) {
        let saved = self.guard;
        if saved.is_some() {
            self.fail(BuildError::BranchInGuardedRegion);
        }
        self.check_owner(l.owner, || ForeignWhat::Label);
        self.guard = Some((p.id(), negate));
        self.push(Op::Bra {
            target: l.id,
            uni: false,
        });
        self.guard = saved;
    }

    /// Exit the thread. Not in a device function body (refused with
    /// [`BuildError::RetInDeviceFunction`]: a function returns where its
    /// body ends, after storing its return values).
    #[track_caller]
    pub fn ret(&mut self) {
        if self.in_func {
            self.fail(BuildError::RetInDeviceFunction);
        }
        self.push(Op::Ret);
    }

    /// Run `f` only when `p` holds.
    #[track_caller]
    pub fn if_(&mut self, p: Reg<Pred>, f: impl FnOnce(&mut Self)) {
        let end = self.label();
        self.bra_if(p, true, end);
        f(self);
        self.place(end);
    }

    /// `if p { then } else { otherwise }`.
    #[track_caller]
    pub fn if_else(
        &mut self,
        p: Reg<Pred>,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let (else_l, end) = (self.label(), self.label());
        self.bra_if(p, true, else_l);
        then(self);
        self.bra(end);
        self.place(else_l);
        otherwise(self);
        self.place(end);
    }

    /// Predicate every instruction `f` emits with `p` (straight-line code
    /// only: no labels or branches inside).
    #[track_caller]
    pub fn guarded(&mut self, p: Reg<Pred>, f: impl FnOnce(&mut Self)) {
        if self.guard.is_some() {
            self.fail(BuildError::NestedGuardedRegion);
        }
        self.guard = Some((p.id(), false));
        f(self);
        self.guard = None;
    }

    /// `for (i = start; i < end; i += step) body(i)` with unsigned 32-bit
    /// `i` (the loop runs zero times when `start >= end`; the caller keeps
    /// `end + step` from wrapping).
    ///
    /// `body` runs once, to emit the loop's code: carry a value from one
    /// iteration to the next in a [`Var`](crate::dsl::Var) (or with
    /// [`assign`](Self::assign)); a register `body` defines is refused
    /// when read after the loop ([`BuildError::LoopValueEscapes`]).
    #[track_caller]
    pub fn for_range(
        &mut self,
        start: impl Into<Src<U32>>,
        end: impl Into<Src<U32>>,
        step: impl Into<Src<U32>>,
        body: impl FnOnce(&mut Self, Reg<U32>),
    ) {
        let (end, step) = (end.into(), step.into());
        let i = self.mov(start);
        let (head, exit) = (self.label(), self.label());
        self.place(head);
        let done = self.setp(Cmp::Ge, i, end);
        self.bra_if(done, false, exit);
        self.loop_body(|b| body(b, i));
        let next = self.add(i, step);
        self.assign(i, next);
        self.bra(head);
        self.place(exit);
    }

    /// `while cond() { body() }`; `cond` emits code that computes the
    /// continuation predicate. As in [`for_range`](Self::for_range), a
    /// register `body` defines is refused when read after the loop; carry
    /// values in a [`Var`](crate::dsl::Var).
    #[track_caller]
    pub fn while_(
        &mut self,
        cond: impl FnOnce(&mut Self) -> Reg<Pred>,
        body: impl FnOnce(&mut Self),
    ) {
        let (head, exit) = (self.label(), self.label());
        self.place(head);
        let go = cond(self);
        self.bra_if(go, true, exit);
        self.loop_body(body);
        self.bra(head);
        self.place(exit);
    }

    // ---- synchronisation and warp operations --------------------------------

    /// CTA-wide barrier (`bar.sync 0`); every thread of the CTA must reach
    /// the same one (the simulator checks this).
    #[track_caller]
    pub fn bar_sync(&mut self) {
        self.push(Op::BarSync);
    }

    /// CTA-wide barrier that threads may reach at **different**
    /// instructions (`barrier.sync 0`, no `.aligned`; PTX ISA,
    /// "Parallel Synchronization and Communication Instructions:
    /// bar, barrier": without `.aligned` the barrier is not required to be
    /// executed by all threads at the same instruction): e.g. warps with no
    /// work in a loop's step running a short loop of their own that meets
    /// the busy warps' barriers. Every thread of the CTA must still arrive
    /// (the simulator releases the barrier when all of them wait at
    /// `barrier.sync` instructions, and reports divergence when one waits at
    /// an aligned `bar.sync` meanwhile). Within a warp the threads must be
    /// converged at it, as for every barrier the DSL emits.
    #[track_caller]
    pub fn barrier_sync_unaligned(&mut self) {
        self.push(Op::BarrierSync);
    }

    /// Warp barrier (`bar.warp.sync mask`): the threads in `mask` wait for
    /// each other, and their earlier memory accesses (shared and global)
    /// are ordered before their later ones, so lanes of one warp can hand
    /// data to each other through memory. Every thread in `mask` must
    /// execute it, and the executing thread must be in `mask`.
    #[track_caller]
    pub fn bar_warp_sync(&mut self, mask: u32) {
        self.push(Op::BarWarpSync { mask });
    }

    /// `shfl.sync` of 32 bits (`T` is any 32-bit class). `c` packs the
    /// clamp and segment mask (`0x1f` for a full-warp down/bfly/idx, `0`
    /// for up).
    #[track_caller]
    pub fn shfl<T: RegType>(
        &mut self,
        mode: ShflMode,
        a: Reg<T>,
        lane: impl Into<Src<U32>>,
        c: u32,
        mask: u32,
    ) -> Reg<T> {
        if !matches!(
            T::CLASS,
            RegClass::U32 | RegClass::S32 | RegClass::F32 | RegClass::B32
        ) {
            self.fail(BuildError::ShflWidth { class: T::CLASS });
        }
        let b = lane.into().v;
        self.def(|d| Op::Shfl {
            mode,
            d,
            a: a.value(),
            b,
            c: Value::Int(c.into()),
            mask,
        })
    }

    /// Ballot of `p` over the threads in `mask`.
    #[track_caller]
    pub fn vote_ballot(&mut self, p: Reg<Pred>, mask: u32) -> Reg<U32> {
        self.def(|d| Op::VoteBallot { d, p: p.id(), mask })
    }

    /// `vote.sync.all` (`all = true`) or `.any`.
    #[track_caller]
    pub fn vote(&mut self, all: bool, p: Reg<Pred>, mask: u32) -> Reg<Pred> {
        self.def(|d| Op::VoteAny {
            all,
            d,
            p: p.id(),
            mask,
        })
    }

    /// `elect.sync`: one leader among the threads of `mask` (every one of
    /// which must execute it, converged): returns the leader's lane and a
    /// predicate true in the leader only (sm_90+, PTX 8.0). Which lane
    /// leads is the hardware's choice (PTX ISA: deterministic for a
    /// mask); the simulator elects the lowest lane, so a kernel's results
    /// must not depend on which. Unlike a `tid == 0` guard, ptxas knows the
    /// leader's code runs in one lane: an instruction taking uniform
    /// operands there (a bulk or tensor-map copy) needs no loop over lanes.
    #[track_caller]
    pub fn elect_sync(&mut self, mask: u32) -> (Reg<U32>, Reg<Pred>) {
        let p = self.reg::<Pred>();
        let d = self.def(|d| Op::Elect { d, p: p.id(), mask });
        (d, p)
    }

    /// Warp-wide integer reduction (sm_80+).
    #[track_caller]
    pub fn redux<T: IntType>(&mut self, op: ReduxOp, a: Reg<T>, mask: u32) -> Reg<T> {
        if T::BITS != 32 {
            self.fail(BuildError::ReduxWidth { bits: T::BITS });
        }
        self.def(|d| Op::Redux {
            op,
            ty: T::CLASS.ty(),
            d,
            a: a.id(),
            mask,
        })
    }
}
