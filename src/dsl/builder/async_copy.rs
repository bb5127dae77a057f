//! `cp.async` (issue 31; sm_80, PTX 7.0; PTX ISA "Data Movement and
//! Conversion Instructions: cp.async" and its wait-group sections): a
//! thread copies 4, 8 or 16 bytes from global to shared memory without
//! waiting; the copies it issues are grouped by `cp.async.commit_group`
//! and waited for by `cp.async.wait_group N` (every group but the newest
//! `N` complete) or `cp.async.wait_all`. Only after the covering wait may
//! the thread read the bytes (and only after a `bar.sync` after it may the
//! other threads): the simulator reports a read, or another write, of
//! bytes a pending copy will write (`SimError::AsyncCopyPending`).

use super::core::KernelBuilder;
use super::memory::{GlobalPtr, SharedPtr};
use crate::dsl::ir::*;
use crate::dsl::types::*;

/// The bytes one `cp.async.ca` copies (`.cg` copies 16 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpAsyncSize {
    /// 4 bytes.
    B4,
    /// 8 bytes.
    B8,
    /// 16 bytes.
    B16,
}

impl CpAsyncSize {
    /// The size in bytes.
    pub const fn bytes(self) -> u8 {
        match self {
            CpAsyncSize::B4 => 4,
            CpAsyncSize::B8 => 8,
            CpAsyncSize::B16 => 16,
        }
    }
}

fn at(reg: RegId) -> Addr {
    Addr {
        base: AddrBase::Reg(reg),
        offset: 0,
    }
}

impl KernelBuilder {
    /// `cp.async.ca.shared.global [dst], [src], size{, src_size}`: copy
    /// `size` bytes (both addresses aligned to it) through the L1 cache.
    /// With `src_size` (a byte count below `size`), only the first
    /// `src_size` bytes are read and the rest of `dst` is zero-filled.
    /// The bytes land in shared memory by the covering
    /// [`cp_async_wait_group`](Self::cp_async_wait_group).
    #[track_caller]
    pub fn cp_async_ca<D, S>(
        &mut self,
        dst: SharedPtr<D>,
        src: GlobalPtr<S>,
        size: CpAsyncSize,
        src_size: Option<Src<U32>>,
    ) {
        self.cp_async(false, size, dst.reg.id(), src.reg.id(), src_size);
    }

    /// `cp.async.cg.shared.global [dst], [src], 16{, src_size}`: copy 16
    /// bytes (both addresses 16-byte aligned) bypassing L1; `src_size` as
    /// for [`cp_async_ca`](Self::cp_async_ca).
    #[track_caller]
    pub fn cp_async_cg<D, S>(
        &mut self,
        dst: SharedPtr<D>,
        src: GlobalPtr<S>,
        src_size: Option<Src<U32>>,
    ) {
        self.cp_async(true, CpAsyncSize::B16, dst.reg.id(), src.reg.id(), src_size);
    }

    #[track_caller]
    fn cp_async(
        &mut self,
        cg: bool,
        size: CpAsyncSize,
        dst: RegId,
        src: RegId,
        src_size: Option<Src<U32>>,
    ) {
        self.push(Op::CpAsync {
            cg,
            size: size.bytes(),
            dst: at(dst),
            src: at(src),
            src_size: src_size.map(|n| n.v),
        });
    }

    /// `cp.async.commit_group`: the thread's `cp.async`s since the last
    /// commit become one group.
    #[track_caller]
    pub fn cp_async_commit_group(&mut self) {
        self.push(Op::CpAsyncCommit);
    }

    /// `cp.async.wait_group n`: wait until at most the newest `n` of the
    /// thread's committed groups are pending (all older groups complete).
    #[track_caller]
    pub fn cp_async_wait_group(&mut self, n: u32) {
        self.push(Op::CpAsyncWait(Some(n)));
    }

    /// `cp.async.wait_all`: wait for every `cp.async` of the thread,
    /// committed or not.
    #[track_caller]
    pub fn cp_async_wait_all(&mut self) {
        self.push(Op::CpAsyncWait(None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Feature, Sm};

    fn kernel(sm: Sm) -> crate::Result<crate::dsl::PtxModule> {
        let mut b = KernelBuilder::new("k", sm);
        let g = b.load_param_ptr::<U32>("src");
        let s = b.shared_array::<U32>("buf", 64, 16);
        let lane = b.tid_x();
        let p = b.shared_elem(&s, lane);
        let n = b.mov(2u32);
        b.cp_async_ca(p, g, CpAsyncSize::B4, None);
        b.cp_async_ca(p, g, CpAsyncSize::B8, Some(n.into()));
        b.cp_async_cg(p, g, Some(4u32.into()));
        b.cp_async_commit_group();
        b.cp_async_wait_group(1);
        b.cp_async_wait_all();
        b.finish()
    }

    #[test]
    fn prints_the_forms_at_ptx_7_0() {
        let m = kernel(Sm::Sm80).unwrap();
        assert!(m.ptx.contains(".version 7.0\n"), "{}", m.ptx);
        for s in [
            "cp.async.ca.shared.global [%r2], [%rd1], 4;",
            "cp.async.ca.shared.global [%r2], [%rd1], 8, %r3;",
            "cp.async.cg.shared.global [%r2], [%rd1], 16, 4;",
            "cp.async.commit_group;",
            "cp.async.wait_group 1;",
            "cp.async.wait_all;",
        ] {
            assert!(m.ptx.contains(s), "{s} missing in\n{}", m.ptx);
        }
    }

    #[test]
    fn refused_below_sm_80() {
        for sm in [Sm::Sm70, Sm::Sm75] {
            match kernel(sm) {
                Err(Error::UnsupportedFeature {
                    feature, sm: at, ..
                }) => {
                    assert_eq!((feature, at), (Feature::CpAsync, sm));
                }
                other => panic!("{sm}: {other:?}"),
            }
        }
    }
}
