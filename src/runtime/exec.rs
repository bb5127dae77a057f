//! The executor interface shared by the CUDA backend and the CPU PTX
//! simulator. Kernel launch code (`src/kernels/*/launch.rs`) is written once
//! against [`Executor`], so the exact sequence of allocations, uploads,
//! launches and downloads that runs on a GPU also runs, bit for bit, on Sim.

use crate::dsl::PtxModule;
use crate::dsl::params::ArgValue;
use crate::error::Result;
use crate::target::Sm;

/// Grid and block shape plus dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_smem_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> Self {
        Self { grid: (grid, 1, 1), block: (block, 1, 1), dynamic_smem_bytes: 0 }
    }
}

/// A device allocation owned by an [`Executor`]. `addr` is the device
/// address passed to kernels as [`ArgValue::Ptr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId {
    pub addr: u64,
    pub bytes: usize,
}

impl BufferId {
    /// The launch argument for this buffer.
    pub fn arg(&self) -> ArgValue {
        ArgValue::Ptr(self.addr)
    }
}

/// Traffic counters of an executor, for tests that assert what crossed the
/// bus (e.g. only the final top-s lists are downloaded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub bytes_uploaded: u64,
    pub bytes_downloaded: u64,
    pub launches: u64,
}

/// Something that can hold device buffers and launch PTX modules: the GPU
/// (`runtime::cuda`) or the CPU simulator (`sim`).
pub trait Executor {
    /// The SM the executor compiles for.
    fn sm(&self) -> Sm;
    /// Allocate `bytes` of device memory (contents unspecified; the
    /// simulator tracks them as uninitialised).
    fn alloc(&mut self, bytes: usize) -> Result<BufferId>;
    /// Copy `data` to the start of `buf`; `data.len()` must not exceed it.
    fn upload(&mut self, buf: BufferId, data: &[u8]) -> Result<()>;
    /// Copy the first `out.len()` bytes of `buf` to `out`.
    fn download(&mut self, buf: BufferId, out: &mut [u8]) -> Result<()>;
    /// Release `buf`.
    fn free(&mut self, buf: BufferId) -> Result<()>;
    /// Launch `module`'s entry with `args` (checked against its params) and
    /// wait for it to finish.
    fn launch(&mut self, module: &PtxModule, cfg: LaunchConfig, args: &[ArgValue]) -> Result<()>;
    /// Bytes moved and launches made so far.
    fn traffic(&self) -> Traffic;
    /// Number of streaming multiprocessors (for grid sizing).
    fn multiprocessor_count(&self) -> u32;
}
