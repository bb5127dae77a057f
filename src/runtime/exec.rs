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
        Self {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            dynamic_smem_bytes: 0,
        }
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

/// Plain element types that cross the host/device boundary as
/// little-endian bytes.
pub trait Plain: Copy + Default + 'static {
    const SIZE: usize;
    fn put(self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("slice of SIZE bytes"))
            }
        }
    )*};
}
plain!(u8, u16, u32, i32, u64, i64, f32, f64);

/// Bytes of `data`, little-endian.
pub fn to_bytes<T: Plain>(data: &[T]) -> Vec<u8> {
    let mut out = vec![0u8; data.len() * T::SIZE];
    for (v, chunk) in data.iter().zip(out.chunks_exact_mut(T::SIZE)) {
        v.put(chunk);
    }
    out
}

/// Values from little-endian bytes.
pub fn from_bytes<T: Plain>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::get).collect()
}

/// Allocate a buffer holding `data`.
pub fn upload_new<T: Plain>(ex: &mut dyn Executor, data: &[T]) -> Result<BufferId> {
    let buf = ex.alloc(data.len().max(1) * T::SIZE)?;
    ex.upload(buf, &to_bytes(data))?;
    Ok(buf)
}

/// Download the first `n` elements of `buf`.
pub fn download_vec<T: Plain>(ex: &mut dyn Executor, buf: BufferId, n: usize) -> Result<Vec<T>> {
    let mut bytes = vec![0u8; n * T::SIZE];
    ex.download(buf, &mut bytes)?;
    Ok(from_bytes(&bytes))
}
