//! Hostile calls: initialisation, errors, symbols, devices and contexts.

use super::*;

/// The hostile calls of export `name` among initialisation, errors, symbols, devices and contexts (none for others).
#[allow(unused_unsafe)]
pub fn cases<'a>(name: &'a str, e: &'a Env) -> Vec<Case<'a>> {
    let mut v: Vec<Case<'a>> = Vec::new();
    // A writable 32-byte buffer for out-pointers (leaked, as every buffer
    // below: the calls run after this function returned).
    let base = Box::leak(Box::new([0u64; 4])).as_mut_ptr() as usize;
    let out = move || base as *mut u64;
    // Misaligned: one byte into it.
    let mis = move || (base + 1) as *mut u64;
    let host = vec![0u8; 256].leak();
    let hp = host.as_mut_ptr().cast::<c_void>();

    match name {
        "cuInit" => {
            case!(v, "flags 1", cu::cuInit(1));
            case!(v, "flags all", cu::cuInit(u32::MAX));
        }
        "cuDriverGetVersion" => case!(v, "null", cu::cuDriverGetVersion(null_mut())),
        "cuGetErrorName" => {
            case!(v, "unknown code", cu::cuGetErrorName(12345, out().cast()));
            case!(v, "null", cu::cuGetErrorName(0, null_mut()));
        }
        "cuGetErrorString" => {
            case!(
                v,
                "unknown code",
                cu::cuGetErrorString(u32::MAX, out().cast())
            );
            case!(v, "null", cu::cuGetErrorString(1, null_mut()));
        }
        "cuGetProcAddress" => {
            case!(
                v,
                "null symbol",
                cu::cuGetProcAddress(null(), out().cast(), 12090, 0)
            );
            case!(
                v,
                "null pfn",
                cu::cuGetProcAddress(c"cuInit".as_ptr(), null_mut(), 12090, 0)
            );
            case!(
                v,
                "bad flags",
                cu::cuGetProcAddress(c"cuInit".as_ptr(), mis().cast(), 12090, !0)
            );
            case!(
                v,
                "old version",
                cu::cuGetProcAddress(c"cuInit".as_ptr(), out().cast(), -1, 0)
            );
        }
        "cuGetProcAddress_v2" => {
            case!(
                v,
                "null symbol",
                cu::cuGetProcAddress_v2(null(), out().cast(), 12090, 0, null_mut())
            );
            case!(
                v,
                "unknown",
                cu::cuGetProcAddress_v2(c"cuX".as_ptr(), out().cast(), 12090, 0, mis().cast())
            );
        }
        "cuGetExportTable" => {
            case!(v, "null table", cu::cuGetExportTable(null_mut(), hp));
            case!(v, "null id", cu::cuGetExportTable(out().cast(), null()));
            case!(v, "unknown", cu::cuGetExportTable(mis().cast(), hp));
        }
        "cuDeviceGet" => {
            case!(v, "null", cu::cuDeviceGet(null_mut(), 0));
            for d in [-1, 99, c_int::MIN] {
                case!(v, format!("ordinal {d}"), cu::cuDeviceGet(out().cast(), d));
            }
        }
        "cuDeviceGetCount" => case!(v, "null", cu::cuDeviceGetCount(null_mut())),
        "cuDeviceGetName" => {
            case!(v, "null", cu::cuDeviceGetName(null_mut(), 64, 0));
            case!(v, "length 0", cu::cuDeviceGetName(out().cast(), 0, 0));
            case!(v, "length -1", cu::cuDeviceGetName(out().cast(), -1, 0));
            case!(v, "device 99", cu::cuDeviceGetName(out().cast(), 32, 99));
        }
        "cuDeviceGetUuid" | "cuDeviceGetUuid_v2" => {
            let g = if name == "cuDeviceGetUuid" {
                cu::cuDeviceGetUuid
            } else {
                cu::cuDeviceGetUuid_v2
            };
            case!(v, "null", g(null_mut(), 0));
            case!(v, "device -1", g(out().cast(), -1));
        }
        "cuDeviceTotalMem_v2" => {
            case!(v, "null", cu::cuDeviceTotalMem_v2(null_mut(), 0));
            case!(v, "device 7", cu::cuDeviceTotalMem_v2(out().cast(), 7));
        }
        "cuDeviceGetAttribute" => {
            case!(v, "null", cu::cuDeviceGetAttribute(null_mut(), 1, 0));
            for a in [0, -1, 100_000] {
                case!(
                    v,
                    format!("attribute {a}"),
                    cu::cuDeviceGetAttribute(mis().cast(), a, 0)
                );
            }
            case!(v, "device 5", cu::cuDeviceGetAttribute(out().cast(), 1, 5));
        }
        "cuDeviceComputeCapability" => {
            case!(
                v,
                "null",
                cu::cuDeviceComputeCapability(null_mut(), out().cast(), 0)
            );
            case!(
                v,
                "device -3",
                cu::cuDeviceComputeCapability(
                    out().cast(),
                    out().cast::<c_int>().wrapping_add(1),
                    -3
                )
            );
        }
        "cuDeviceCanAccessPeer" => {
            case!(v, "null", cu::cuDeviceCanAccessPeer(null_mut(), 0, 0));
            case!(v, "peer 9", cu::cuDeviceCanAccessPeer(out().cast(), 0, 9));
        }
        "cuDevicePrimaryCtxRetain" => {
            case!(v, "null", cu::cuDevicePrimaryCtxRetain(null_mut(), 0));
            case!(v, "device 9", cu::cuDevicePrimaryCtxRetain(out().cast(), 9));
        }
        "cuDevicePrimaryCtxRelease_v2" => {
            case!(v, "device -1", cu::cuDevicePrimaryCtxRelease_v2(-1));
            case!(v, "never retained", cu::cuDevicePrimaryCtxRelease_v2(0));
        }
        "cuDevicePrimaryCtxReset_v2" => case!(v, "device 42", cu::cuDevicePrimaryCtxReset_v2(42)),
        "cuDevicePrimaryCtxSetFlags_v2" => {
            case!(v, "device 42", cu::cuDevicePrimaryCtxSetFlags_v2(42, 0));
            case!(v, "flags", cu::cuDevicePrimaryCtxSetFlags_v2(0, u32::MAX));
        }
        "cuDevicePrimaryCtxGetState" => {
            case!(
                v,
                "null",
                cu::cuDevicePrimaryCtxGetState(0, null_mut(), null_mut())
            );
            case!(
                v,
                "device 42",
                cu::cuDevicePrimaryCtxGetState(42, out().cast(), out().cast())
            );
        }
        "cuCtxCreate_v2" => {
            case!(v, "null", cu::cuCtxCreate_v2(null_mut(), 0, 0));
            case!(v, "flags", cu::cuCtxCreate_v2(out().cast(), u32::MAX, 0));
            case!(v, "device 9", cu::cuCtxCreate_v2(mis().cast(), 0, 9));
        }
        "cuCtxCreate_v3" => {
            case!(
                v,
                "null",
                cu::cuCtxCreate_v3(null_mut(), null_mut(), 0, 0, 0)
            );
            case!(v, "affinity", cu::cuCtxCreate_v3(out().cast(), hp, 1, 0, 0));
            case!(
                v,
                "count -5",
                cu::cuCtxCreate_v3(out().cast(), hp, -5, 0, 0)
            );
            case!(
                v,
                "huge count, null",
                cu::cuCtxCreate_v3(out().cast(), null_mut(), c_int::MAX, 0, 0)
            );
        }
        "cuCtxCreate_v4" => {
            case!(v, "null", cu::cuCtxCreate_v4(null_mut(), null_mut(), 0, 0));
            case!(
                v,
                "device -1",
                cu::cuCtxCreate_v4(out().cast(), null_mut(), 0, -1)
            );
            case!(
                v,
                "flags",
                cu::cuCtxCreate_v4(out().cast(), null_mut(), 0x1000, 0)
            );
        }
        "cuCtxDestroy_v2" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxDestroy_v2(c));
            }
        }
        "cuCtxSetCurrent" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxSetCurrent(c));
            }
        }
        "cuCtxPushCurrent_v2" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxPushCurrent_v2(c));
            }
        }
        "cuCtxGetCurrent" => case!(v, "null", cu::cuCtxGetCurrent(null_mut())),
        "cuCtxPopCurrent_v2" => {
            case!(
                v,
                "empty stack",
                without_context(|| cu::cuCtxPopCurrent_v2(null_mut()))
            );
        }
        "cuCtxSynchronize" => case!(v, "no context", without_context(|| cu::cuCtxSynchronize())),
        "cuCtxGetDevice" => {
            case!(v, "null", cu::cuCtxGetDevice(null_mut()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxGetDevice(mis().cast()))
            );
        }
        "cuCtxGetFlags" => {
            case!(v, "null", cu::cuCtxGetFlags(null_mut()));
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxGetFlags(out().cast()))
            );
        }
        "cuCtxGetApiVersion" => {
            case!(
                v,
                "null",
                cu::cuCtxGetApiVersion(CUcontext::default(), null_mut())
            );
            for c in e.bad_contexts() {
                case!(
                    v,
                    format!("{:?}", c),
                    cu::cuCtxGetApiVersion(c, out().cast())
                );
            }
        }
        "cuCtxGetStreamPriorityRange" => {
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxGetStreamPriorityRange(null_mut(), null_mut()))
            );
        }
        "cuCtxGetLimit" => {
            case!(v, "null", cu::cuCtxGetLimit(null_mut(), 0));
            case!(v, "limit 999", cu::cuCtxGetLimit(mis().cast(), 999));
        }
        "cuCtxSetLimit" => {
            case!(v, "limit 999", cu::cuCtxSetLimit(999, 1));
            case!(
                v,
                "no context",
                without_context(|| cu::cuCtxSetLimit(0, HUGE))
            );
        }
        "cuCtxGetCacheConfig" => case!(v, "null", cu::cuCtxGetCacheConfig(null_mut())),
        "cuCtxSetCacheConfig" => case!(v, "config 99", cu::cuCtxSetCacheConfig(99)),
        "cuCtxGetSharedMemConfig" => case!(v, "null", cu::cuCtxGetSharedMemConfig(null_mut())),
        "cuCtxSetSharedMemConfig" => case!(v, "config 99", cu::cuCtxSetSharedMemConfig(99)),
        "cuCtxEnablePeerAccess" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxEnablePeerAccess(c, 0));
            }
            case!(v, "flags", cu::cuCtxEnablePeerAccess(e.other, 7));
        }
        "cuCtxDisablePeerAccess" => {
            for c in e.bad_contexts() {
                case!(v, format!("{:?}", c), cu::cuCtxDisablePeerAccess(c));
            }
            case!(v, "never enabled", cu::cuCtxDisablePeerAccess(e.other));
        }
        _ => {}
    }
    v
}
