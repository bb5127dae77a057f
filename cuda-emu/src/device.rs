//! Device attributes (`cuDeviceGetAttribute`) from ptxsmith's target table
//! (`ptxsmith::target`), and the occupancy calculator on the same numbers.

use ptxsmith::sim::SM_COUNT;
use ptxsmith::target::{MAX_THREADS_PER_BLOCK, STATIC_SMEM_LIMIT};

use crate::config::DeviceSpec;
use crate::error::*;
use crate::jit::Function;
use crate::launch::{MAX_BLOCK, MAX_GRID};

/// The value of attribute `attr` (`CUdevice_attribute`) of device `d` with
/// ordinal `ordinal`. Attributes of features the emulator does not have
/// (textures, surfaces, managed memory, memory pools, peer access,
/// cooperative launch, ...) are 0; an unknown attribute is
/// `CUDA_ERROR_INVALID_VALUE`.
pub fn attribute(d: &DeviceSpec, ordinal: usize, attr: i32) -> Res<i32> {
    let info = d.sm.info();
    let (major, minor) = d.cc();
    let v: i64 = match attr {
        1 => i64::from(MAX_THREADS_PER_BLOCK),
        2 => i64::from(MAX_BLOCK.0),
        3 => i64::from(MAX_BLOCK.1),
        4 => i64::from(MAX_BLOCK.2),
        5 => i64::from(MAX_GRID.0),
        6 => i64::from(MAX_GRID.1),
        7 => i64::from(MAX_GRID.2),
        // MAX_SHARED_MEMORY_PER_BLOCK: without opting in.
        8 => i64::from(STATIC_SMEM_LIMIT),
        // TOTAL_CONSTANT_MEMORY
        9 => 65536,
        // WARP_SIZE
        10 => 32,
        // MAX_PITCH
        11 => i64::from(i32::MAX),
        // MAX_REGISTERS_PER_BLOCK
        12 => i64::from(info.regs_per_sm),
        // CLOCK_RATE (kHz): a nominal 1 GHz.
        13 => 1_000_000,
        // TEXTURE_ALIGNMENT
        14 => 512,
        // GPU_OVERLAP
        15 => 1,
        // MULTIPROCESSOR_COUNT: the simulator's %nsmid.
        16 => i64::from(SM_COUNT),
        // KERNEL_EXEC_TIMEOUT (the instruction budget plays the watchdog)
        17 => 1,
        // INTEGRATED
        18 => 0,
        // CAN_MAP_HOST_MEMORY: kernels cannot reach host memory here.
        19 => 0,
        // COMPUTE_MODE: default
        20 => 0,
        // CONCURRENT_KERNELS
        31 => 1,
        // PCI bus / device / domain ids: one per device
        33 => ordinal as i64 + 1,
        34 | 50 => 0,
        // MEMORY_CLOCK_RATE, GLOBAL_MEMORY_BUS_WIDTH: no DRAM to speak of.
        36 | 37 => 0,
        // L2_CACHE_SIZE
        38 => 0,
        39 => i64::from(info.max_threads_per_sm),
        // ASYNC_ENGINE_COUNT
        40 => 1,
        // UNIFIED_ADDRESSING: 0, consistent with CAN_MAP_HOST_MEMORY. On a
        // device with unified addressing page-locked host memory is
        // directly accessible to kernels, which the simulator cannot do.
        // (Device and host addresses never overlap, so cuMemcpy and
        // cuPointerGetAttribute still tell them apart: looser than the
        // driver, which allows them only with unified addressing.)
        41 => 0,
        75 => i64::from(major),
        76 => i64::from(minor),
        // STREAM_PRIORITIES_SUPPORTED
        78 => 1,
        // GLOBAL_L1_CACHE_SUPPORTED, LOCAL_L1_CACHE_SUPPORTED
        79 | 80 => 1,
        81 => i64::from(info.smem_per_sm),
        82 => i64::from(info.regs_per_sm),
        // MANAGED_MEMORY, multi-GPU board, host atomics, pageable access,
        // concurrent managed access, compute preemption, host pointer for
        // registered memory, stream mem ops, cooperative launch (83..=96)
        83..=96 => 0,
        97 => i64::from(info.max_smem_per_block_optin),
        // CAN_FLUSH_REMOTE_WRITES, HOST_REGISTER_SUPPORTED
        98 => 0,
        99 => 1,
        100..=105 => 0,
        106 => i64::from(info.max_ctas_per_sm),
        107..=110 => 0,
        111 => i64::from(info.reserved_smem_per_cta),
        // MEMORY_POOLS_SUPPORTED: stream-ordered allocation
        // (cuMemAllocAsync/cuMemFreeAsync on the device's default pool; the
        // cuMemPool* calls themselves are absent).
        115 => 1,
        // CLUSTER_LAUNCH: thread-block clusters from sm_90 (`cluster`).
        120 => i64::from(crate::cluster::has_clusters(d.sm)),
        // Everything else newer: sparse arrays, pool handle types, RDMA,
        // tensor maps, multicast, NUMA, MPS: not emulated.
        112..=134 => 0,
        // Texture/surface limits and other pre-Volta attributes.
        21..=30 | 32 | 35 | 42..=49 | 51..=74 | 77 => 0,
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    };
    Ok(v as i32)
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: resident blocks of `f`
/// per SM at `block_size` threads and `dyn_smem` bytes, limited by threads,
/// CTA slots and shared memory of the target table. Registers are not
/// modelled (ptxas decides them on a GPU): the estimate is an upper bound.
pub fn max_active_blocks(
    d: &DeviceSpec,
    f: &Function,
    block_size: i32,
    dyn_smem: usize,
) -> Res<i32> {
    if block_size <= 0 || block_size as u32 > f.max_threads() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let info = d.sm.info();
    let warps = (block_size as u32).div_ceil(32);
    let by_threads = info.max_threads_per_sm / (warps * 32);
    let smem = u64::from(f.static_smem) + dyn_smem as u64;
    if smem > u64::from(info.max_smem_per_block_optin) {
        return Ok(0);
    }
    let per_block = smem + u64::from(info.reserved_smem_per_cta);
    let by_smem = u64::from(info.smem_per_sm)
        .checked_div(per_block)
        .map_or(u32::MAX, |b| b.min(u64::from(u32::MAX)) as u32);
    Ok(by_threads.min(info.max_ctas_per_sm).min(by_smem) as i32)
}

/// The block sizes `cuOccupancyMaxPotentialBlockSize` considers for `f`:
/// multiples of 32 up to `limit` (0: the function's maximum). The export
/// asks the caller's shared-memory callback about each of them outside
/// the driver's lock, then passes the answers to
/// [`max_potential_block_size`].
pub fn candidate_block_sizes(f: &Function, limit: i32) -> Vec<i32> {
    let max = f.max_threads() as i32;
    let limit = if limit <= 0 { max } else { limit.min(max) };
    (1..=limit / 32).map(|k| k * 32).collect()
}

/// `cuOccupancyMaxPotentialBlockSize`: `(min grid size, block size)` with
/// the most resident threads per SM (the largest block on ties), blocks a
/// multiple of 32 up to `limit` (0: the function's maximum).
pub fn max_potential_block_size(
    d: &DeviceSpec,
    f: &Function,
    dyn_smem: impl Fn(i32) -> usize,
    limit: i32,
) -> Res<(i32, i32)> {
    let mut best = (0, 0, 0);
    for b in candidate_block_sizes(f, limit) {
        let blocks = max_active_blocks(d, f, b, dyn_smem(b))?;
        let threads = blocks * b;
        if threads >= best.0 && blocks > 0 {
            best = (threads, b, blocks);
        }
    }
    if best.1 == 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok((best.2 * SM_COUNT as i32, best.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxsmith::Sm;

    #[test]
    fn attributes_come_from_the_target_table() {
        let d = DeviceSpec {
            sm: Sm::Sm90,
            memory: 1 << 30,
        };
        assert_eq!(attribute(&d, 0, 75), Ok(9));
        assert_eq!(attribute(&d, 0, 76), Ok(0));
        assert_eq!(attribute(&d, 0, 97), Ok(232_448));
        assert_eq!(attribute(&d, 0, 16), Ok(SM_COUNT as i32));
        assert_eq!(attribute(&d, 0, 10), Ok(32));
        assert_eq!(attribute(&d, 0, 1), Ok(1024));
        assert_eq!(attribute(&d, 0, 0), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(attribute(&d, 0, 999), Err(CUDA_ERROR_INVALID_VALUE));
        let old = DeviceSpec {
            sm: Sm::Sm75,
            memory: 1,
        };
        assert_eq!(attribute(&old, 0, 97), Ok(65_536));
        assert_eq!(attribute(&old, 0, 39), Ok(1024));
    }
}
