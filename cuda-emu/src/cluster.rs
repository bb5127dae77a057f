//! Thread-block cluster launches (sm_90+): the cluster shape of a launch
//! from `cuLaunchKernelEx`'s `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` and
//! the entry's `.reqnctapercluster` / `.explicitcluster` /
//! `.maxclusterrank`, checked when the launch is queued, as the driver
//! checks it; the simulator then runs the CTAs of each cluster together
//! (`ptxsmith::sim`, `Sim::launch_program_bytes_clustered`).

use ptxsmith::sim::Entry;
use ptxsmith::target::Sm;

use crate::error::*;

/// `CUDA_ERROR_INVALID_CLUSTER_SIZE` (`cuda.h`): "a kernel launch error
/// has occurred due to cluster misconfiguration".
pub const CUDA_ERROR_INVALID_CLUSTER_SIZE: CUresult = 912;

/// The most CTAs of a cluster without the non-portable opt-in
/// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`, not emulated).
pub const MAX_PORTABLE_CLUSTER: u32 = 8;

/// Whether devices of `sm` launch clusters.
pub fn has_clusters(sm: Sm) -> bool {
    sm.info().cc.0 >= 9
}

/// The cluster shape to hand the simulator for a launch of `e` over
/// `grid` with launch attribute `attr` on a device of `sm`: `None` for a
/// launch without an attribute (the simulator reads `.reqnctapercluster`
/// itself) or with `(1, 1, 1)` below sm_90 (the driver ignores it there).
/// Refused: another shape below sm_90 (`CUDA_ERROR_NOT_SUPPORTED`, as
/// the emulator refuses every feature a device lacks); on sm_90+ a shape
/// other than `.reqnctapercluster`, none for an `.explicitcluster` entry,
/// more than [`MAX_PORTABLE_CLUSTER`] CTAs or `.maxclusterrank`, a grid
/// that is not a multiple of it (`CUDA_ERROR_INVALID_CLUSTER_SIZE`).
pub fn launch_shape(
    e: &Entry,
    grid: (u32, u32, u32),
    attr: Option<(u32, u32, u32)>,
    sm: Sm,
) -> Res<Option<(u32, u32, u32)>> {
    if !has_clusters(sm) {
        return match attr {
            None | Some((1, 1, 1)) => Ok(None),
            Some(_) => Err(CUDA_ERROR_NOT_SUPPORTED),
        };
    }
    let dims = match (attr, e.reqnctapercluster) {
        (Some(a), Some(q)) if a != q => return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE),
        (Some(a), _) => a,
        (None, Some(q)) => q,
        (None, None) if e.explicitcluster => return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE),
        (None, None) => return Ok(None),
    };
    let size = u64::from(dims.0) * u64::from(dims.1) * u64::from(dims.2);
    if size == 0
        || size > u64::from(MAX_PORTABLE_CLUSTER)
        || e.maxclusterrank.is_some_and(|m| size > u64::from(m))
        || !grid.0.is_multiple_of(dims.0)
        || !grid.1.is_multiple_of(dims.1)
        || !grid.2.is_multiple_of(dims.2)
    {
        return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE);
    }
    Ok(attr)
}

/// `cuFuncGetAttribute`'s cluster attributes of `e`: 10
/// `CLUSTER_SIZE_MUST_BE_SET` (`.explicitcluster`), 11–13
/// `REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH` (`.reqnctapercluster`, 0
/// without), 14 `NON_PORTABLE_CLUSTER_SIZE_ALLOWED` and 15
/// `CLUSTER_SCHEDULING_POLICY_PREFERENCE` (0: not emulated).
pub fn func_attribute(e: Option<&Entry>, attr: i32) -> u32 {
    let req = e.and_then(|e| e.reqnctapercluster);
    match attr {
        10 => u32::from(e.is_some_and(|e| e.explicitcluster)),
        11 => req.map_or(0, |d| d.0),
        12 => req.map_or(0, |d| d.1),
        13 => req.map_or(0, |d| d.2),
        _ => 0,
    }
}
