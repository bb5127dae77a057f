//! `cuLaunchKernel`: the launch is checked when it is queued, the way the
//! driver checks it (shape, shared memory against the function's opt-in,
//! parameters as the entry declares them: every size and alignment, the
//! buffer handed to the simulator as it is), and runs on the simulator, with
//! its checks on, when its stream is synchronised. A finding is a device
//! fault: the context's sticky error (see `error::finding_code`), with the
//! finding's text reported.

use std::sync::Arc;

use ptxsmith::runtime::LaunchConfig;

use crate::driver::Driver;
use crate::error::*;
use crate::ops::{LaunchOp, OpKind};

/// Grid limits of every supported target (`CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_*`).
pub const MAX_GRID: (u32, u32, u32) = (i32::MAX as u32, 65535, 65535);
/// Block limits (`CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_*`).
pub const MAX_BLOCK: (u32, u32, u32) = (1024, 1024, 64);

/// Where the parameter values come from (read by the export from the
/// caller's memory, as the driver reads it).
pub enum Params {
    /// `kernelParams`: the parameter buffer laid out by the entry's
    /// `.param` list.
    Buffer(Vec<u8>),
}

/// Check the size given with `CU_LAUNCH_PARAM_BUFFER_SIZE` against the
/// entry's parameter buffer: at least its end, at most that rounded up to
/// 8 bytes (the padding a C struct of the parameters gets). Anything else
/// means parameters of other sizes or another count than the entry's.
pub fn check_extra_size(param_bytes: u32, size: usize) -> Res<()> {
    let min = param_bytes as usize;
    if size < min || size > min.next_multiple_of(8) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}

impl Driver {
    /// The `(offset, size)` of each parameter of `f` and the size of its
    /// parameter buffer: how `kernelParams` / `extra` are read.
    pub fn param_layout(&self, f: u64) -> Res<(Vec<(u32, u32)>, u32)> {
        let (_, func) = self.function(f)?;
        Ok((func.params.clone(), func.param_bytes))
    }

    /// Check and queue a launch of `f` on `stream` in the current context,
    /// in clusters of `cluster` CTAs if given (`cuLaunchKernelEx`'s
    /// attribute, see `cluster::launch_shape`).
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &mut self,
        f: u64,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        smem: u32,
        stream: u64,
        params: Params,
        cluster: Option<(u32, u32, u32)>,
    ) -> Res<()> {
        let cur = self.current_handle()?;
        self.contexts[&cur].usable()?;
        let (fctx, func) = self.function(f)?;
        if fctx != cur {
            // A function of a module loaded in another context.
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        let dims_ok = |d: (u32, u32, u32), max: (u32, u32, u32)| {
            d.0 > 0 && d.1 > 0 && d.2 > 0 && d.0 <= max.0 && d.1 <= max.1 && d.2 <= max.2
        };
        if !dims_ok(grid, MAX_GRID) || !dims_ok(block, MAX_BLOCK) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let threads = u64::from(block.0) * u64::from(block.1) * u64::from(block.2);
        if threads > u64::from(func.max_threads()) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if func.reqntid.is_some_and(|r| r != block) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let optin = self.devices[self.contexts[&cur].device]
            .spec
            .sm
            .info()
            .max_smem_per_block_optin;
        if smem > func.max_dyn_smem
            || u64::from(func.static_smem) + u64::from(smem) > u64::from(optin)
        {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let Params::Buffer(buf) = params;
        if buf.len() != func.param_bytes as usize {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let sm = self.devices[self.contexts[&cur].device].spec.sm;
        let cluster = match func.program.entry(&func.name) {
            Some(e) => crate::cluster::launch_shape(e, grid, cluster, sm)?,
            None => None,
        };
        let op = LaunchOp {
            program: Arc::clone(&func.program),
            entry: func.name.clone(),
            cfg: LaunchConfig {
                grid,
                block,
                dynamic_smem_bytes: smem,
            },
            params: buf,
            cluster,
        };
        let (ctx, key) = self.resolve_stream(stream, true)?;
        self.enqueue(ctx, key, OpKind::Launch(Box::new(op)), Vec::new())?;
        Ok(())
    }
}
