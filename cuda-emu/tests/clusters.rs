//! Thread-block clusters through the C ABI (issue 33): `cuLaunchKernelEx`
//! with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` and a kernel's compiled-in
//! `.reqnctapercluster` run a DSMEM ring exchange on the default sm_90
//! device with the host's result; the driver's codes for a grid that is
//! not a multiple of the shape, a shape other than the kernel's, and a
//! cluster on an sm_80 device; the cluster function and device
//! attributes; a planted race between the CTAs of a cluster is the
//! launch's sticky fault; a cluster of two filling each CTA's shared tile
//! with `cp.async.bulk ... .multicast::cluster` halves on `mbarrier`s
//! (issue 31) runs through the emulator with the host's result, as does
//! data handed to the peer CTA through a remote `mbarrier` arrive. A
//! cluster of 8 × 1,024 threads arriving on an `mbarrier`, whose race
//! checks' clocks would take more than the simulator's budget, is the
//! launch's sticky `CUDA_ERROR_LAUNCH_FAILED` (no panic), and runs with
//! `PTXSMITH_EMU_CHECKS=0`.

use std::ffi::c_void;
use std::ptr::null_mut;

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::U32;
use ptxsmith::dsl::*;
use ptxsmith::kernel_params;
use ptxsmith::target::Sm;
use ptxsmith_cuda_emu::cluster::CUDA_ERROR_INVALID_CLUSTER_SIZE;
use ptxsmith_cuda_emu::exports as cu;
use ptxsmith_cuda_emu::exports::{LaunchAttribute, LaunchConfig};

mod common;
use common::*;

kernel_params! {
    struct Args => Regs {
        src: Ptr<U32>,
        dst: Ptr<U32>,
    }
}

const THREADS: u32 = 32;

/// Each CTA stores `src[g]` into `recv[t]` of the next rank, then (after
/// a cluster barrier, unless `race`) writes its own `recv[t]` to `dst[g]`,
/// and waits at a last cluster barrier.
fn ring(sm: Sm, shape: Option<u32>, race: bool) -> PtxModule {
    let mut b = KernelBuilder::new("ring", sm);
    if let Some(n) = shape {
        b.cluster_dims(n, 1, 1);
    }
    let p = b.params::<Args>();
    let recv = b.shared_array::<U32>("recv", THREADS, 16);
    let t = b.tid_x();
    let g = b.global_id_x();
    let s = b.offset(p.src, g);
    let x = b.ld_global(s, 0);
    let r = b.shared_elem(&recv, t);
    b.st_shared(r, 0, 0u32);
    b.cluster_sync();
    let rank = b.cluster_ctarank();
    let n = b.cluster_nctarank();
    let next = b.add(rank, 1u32);
    let next = b.rem(next, n);
    let q = b.mapa(r, next);
    b.st_cluster(q, 0, x);
    if !race {
        b.cluster_sync();
    }
    let y = b.ld_shared(r, 0);
    let d = b.offset(p.dst, g);
    b.st_global(d, 0, y);
    b.cluster_sync();
    b.finish().unwrap()
}

fn cluster_attr(x: u32) -> LaunchAttribute {
    let mut value = [0u32; 16];
    value[..3].copy_from_slice(&[x, 1, 1]);
    LaunchAttribute {
        id: 4,
        pad: [0; 4],
        value,
    }
}

/// `cuLaunchKernelEx` of `f` over `blocks` CTAs with `attrs`.
fn launch_ex(
    f: CUfunction,
    blocks: u32,
    src: u64,
    dst: u64,
    attrs: &mut [LaunchAttribute],
) -> CUresult {
    let (mut a0, mut a1) = (src, dst);
    let mut params: [*mut c_void; 2] = [(&raw mut a0).cast(), (&raw mut a1).cast()];
    let cfg = LaunchConfig {
        grid: [blocks, 1, 1],
        block: [THREADS, 1, 1],
        smem: 0,
        stream: CUstream::default(),
        attrs: attrs.as_mut_ptr(),
        num_attrs: attrs.len() as u32,
    };
    // SAFETY: a valid config and one pointer per parameter.
    unsafe { cu::cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), null_mut()) }
}

/// `src` of `blocks` CTAs and the ring's `dst` for it in clusters of `n`.
fn data(blocks: u32, n: u32) -> (Vec<u32>, Vec<u32>) {
    let src: Vec<u32> = (0..blocks * THREADS)
        .map(|i| i.wrapping_mul(0x9E37_79B9))
        .collect();
    let mut want = vec![0; src.len()];
    for c in 0..blocks {
        let from = c - c % n + (c % n + n - 1) % n;
        for t in 0..THREADS {
            want[(c * THREADS + t) as usize] = src[(from * THREADS + t) as usize];
        }
    }
    (src, want)
}

fn func_attr(f: CUfunction, attr: i32) -> i32 {
    let mut v = -1;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuFuncGetAttribute(&mut v, attr, f) });
    v
}

#[test]
fn clustered_launches_run_the_ring_and_refuse_bad_shapes() {
    let _c = TestCtx::new();
    let blocks = 8;
    let (src, want) = data(blocks, 4);
    let s = alloc(src.len() * 4);
    ok(htod(s, &src));
    let d = alloc(src.len() * 4);
    // the attribute on a kernel without a shape
    let f = function(load(&ring(Sm::Sm90, None, false).ptx), "ring").unwrap();
    ok(launch_ex(f, blocks, s, d, &mut [cluster_attr(4)]));
    assert_eq!(read_u32(d, src.len()), want);
    is(
        launch_ex(f, 6, s, d, &mut [cluster_attr(4)]),
        CUDA_ERROR_INVALID_CLUSTER_SIZE,
    );
    is(
        launch_ex(f, 16, s, d, &mut [cluster_attr(16)]),
        CUDA_ERROR_INVALID_CLUSTER_SIZE,
    );
    assert_eq!(func_attr(f, 11), 0);
    // the shape compiled in: a plain launch, and the same attribute
    let f = function(load(&ring(Sm::Sm90, Some(2), false).ptx), "ring").unwrap();
    assert_eq!(
        (func_attr(f, 10), func_attr(f, 11), func_attr(f, 12)),
        (0, 2, 1)
    );
    let (_, want2) = data(blocks, 2);
    ok(htod(d, &vec![0u32; src.len()]));
    ok(launch(
        f,
        blocks,
        THREADS,
        0,
        CUstream::default(),
        &[Arg::U64(s), Arg::U64(d)],
    ));
    assert_eq!(read_u32(d, src.len()), want2);
    ok(launch_ex(f, blocks, s, d, &mut [cluster_attr(2)]));
    is(
        launch_ex(f, blocks, s, d, &mut [cluster_attr(4)]),
        CUDA_ERROR_INVALID_CLUSTER_SIZE,
    );
    ok(ctx_sync());
    let mut v = 0;
    // SAFETY: a valid out-pointer; CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH.
    ok(unsafe { cu::cuDeviceGetAttribute(&mut v, 120, 0) });
    assert_eq!(v, 1);
}

#[test]
fn a_race_between_the_ctas_of_a_cluster_is_the_launchs_fault() {
    let _c = TestCtx::new();
    let (src, _) = data(4, 4);
    let s = alloc(src.len() * 4);
    ok(htod(s, &src));
    let d = alloc(src.len() * 4);
    let f = function(load(&ring(Sm::Sm90, Some(4), true).ptx), "ring").unwrap();
    ok(launch(
        f,
        4,
        THREADS,
        0,
        CUstream::default(),
        &[Arg::U64(s), Arg::U64(d)],
    ));
    is(ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
}

#[test]
fn clusters_are_refused_on_an_sm_80_device() {
    if !in_emulator_process_with(
        "clusters_are_refused_on_an_sm_80_device",
        &[("PTXSMITH_EMU_DEVICES", "sm_80")],
    ) {
        return;
    }
    let _c = TestCtx::new();
    let mut v = -1;
    // SAFETY: a valid out-pointer; CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH.
    ok(unsafe { cu::cuDeviceGetAttribute(&mut v, 120, 0) });
    assert_eq!(v, 0);
    // a kernel without cluster instructions, for sm_80
    let mut b = KernelBuilder::new("copy", Sm::Sm80);
    let p = b.params::<Args>();
    let g = b.global_id_x();
    let s = b.offset(p.src, g);
    let x = b.ld_global(s, 0);
    let d = b.offset(p.dst, g);
    b.st_global(d, 0, x);
    let m = b.finish().unwrap();
    let f = function(load(&m.ptx), "copy").unwrap();
    let (src, _) = data(2, 1);
    let s = alloc(src.len() * 4);
    ok(htod(s, &src));
    let d = alloc(src.len() * 4);
    is(
        launch_ex(f, 2, s, d, &mut [cluster_attr(2)]),
        CUDA_ERROR_NOT_SUPPORTED,
    );
    ok(launch_ex(f, 2, s, d, &mut [cluster_attr(1)]));
    assert_eq!(read_u32(d, src.len()), src);
}

/// Clusters of two: rank `r` multicasts words `32r..32r+32` of tile
/// `%clusterid.x` (64 words) of `src` into both CTAs' `tile`, completing
/// on each CTA's mbarrier; after the wait thread `t` writes `tile[t]` and
/// `tile[t + 32]` to `dst[64·ctaid + ..]`.
fn multicast_tile() -> PtxModule {
    let mut b = KernelBuilder::new("multicast_tile", Sm::Sm90);
    b.cluster_dims(2, 1, 1);
    let p = b.params::<Args>();
    let tile = b.shared_array::<U32>("tile", 2 * THREADS, 16);
    let bar = b.shared_mbarrier("bar");
    let t = b.tid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.mbarrier_init_cluster(first, &[(bar, 1)]);
    b.if_(first, |b| {
        let _ = b.mbarrier_arrive_expect_tx(bar, 8 * THREADS);
        let rank = b.cluster_ctarank();
        let cid = b.clusterid_x();
        let half = b.mul_lo(rank, THREADS);
        let w = b.mad_lo(cid, 2 * THREADS, half);
        let g = b.offset(p.src, w);
        let s = b.shared_elem(&tile, half);
        b.cp_async_bulk_multicast(s, g, 4 * THREADS, bar, 0b11u32);
    });
    b.mbarrier_wait(bar, 0u32);
    let cta = b.ctaid_x();
    let base = b.mad_lo(cta, 2 * THREADS, t);
    let out = b.offset(p.dst, base);
    let s = b.shared_elem(&tile, t);
    let lo = b.ld_shared(s, 0);
    let hi = b.ld_shared(s, THREADS as i32);
    b.st_global(out, 0, lo);
    b.st_global(out, THREADS as i32, hi);
    b.cluster_sync();
    b.finish().unwrap()
}

#[test]
fn a_multicast_bulk_copy_fills_both_ctas_of_a_cluster() {
    let _c = TestCtx::new();
    let blocks = 4;
    let src: Vec<u32> = (0..blocks * THREADS)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5A5A)
        .collect();
    let want: Vec<u32> = (0..blocks * 2 * THREADS)
        .map(|i| {
            let (cta, w) = (i / (2 * THREADS), i % (2 * THREADS));
            src[((cta / 2) * 2 * THREADS + w) as usize]
        })
        .collect();
    let s = alloc(src.len() * 4);
    ok(htod(s, &src));
    let d = alloc(want.len() * 4);
    let f = function(load(&multicast_tile().ptx), "multicast_tile").unwrap();
    ok(launch(
        f,
        blocks,
        THREADS,
        0,
        CUstream::default(),
        &[Arg::U64(s), Arg::U64(d)],
    ));
    ok(ctx_sync());
    assert_eq!(read_u32(d, want.len()), want);
}

/// Clusters of two: rank 0's thread `t` stores `src[32·%clusterid.x + t]`
/// into rank 1's `recv[t]` (`st.shared::cluster`) and, if `handoff`,
/// arrives remotely on rank 1's mbarrier; rank 1 (after waiting on it, if
/// `handoff`) writes `recv[t]` to `dst[32·%clusterid.x + t]`. The arrive
/// and wait order the store before the read (`sim::interp::mbar_order`).
fn mbarrier_handoff(handoff: bool) -> PtxModule {
    let mut b = KernelBuilder::new("mbarrier_handoff", Sm::Sm90);
    b.cluster_dims(2, 1, 1);
    let p = b.params::<Args>();
    let recv = b.shared_array::<U32>("recv", THREADS, 16);
    let full = b.shared_mbarrier("full");
    let t = b.tid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.mbarrier_init_cluster(first, &[(full, THREADS)]);
    let rank = b.cluster_ctarank();
    let cid = b.clusterid_x();
    let g = b.mad_lo(cid, THREADS, t);
    let r = b.shared_elem(&recv, t);
    let producer = b.setp(Cmp::Eq, rank, 0u32);
    b.if_else(
        producer,
        |b| {
            let s = b.offset(p.src, g);
            let x = b.ld_global(s, 0);
            let q = b.mapa(r, 1u32);
            b.st_cluster(q, 0, x);
            if handoff {
                let rb = b.mapa_mbarrier(full, 1u32);
                b.mbarrier_arrive_remote(rb);
            }
        },
        |b| {
            if handoff {
                b.mbarrier_wait(full, 0u32);
            }
            let y = b.ld_shared(r, 0);
            let d = b.offset(p.dst, g);
            b.st_global(d, 0, y);
        },
    );
    b.cluster_sync();
    b.finish().unwrap()
}

#[test]
fn a_remote_mbarrier_arrive_hands_data_to_the_peer() {
    let _c = TestCtx::new();
    let blocks = 4;
    let src: Vec<u32> = (0..blocks * THREADS)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0xA5A5)
        .collect();
    let want: Vec<u32> = src[..(blocks / 2 * THREADS) as usize].to_vec();
    let s = alloc(src.len() * 4);
    ok(htod(s, &src));
    let d = alloc(want.len() * 4);
    for handoff in [true, false] {
        let m = mbarrier_handoff(handoff);
        let f = function(load(&m.ptx), "mbarrier_handoff").unwrap();
        ok(launch(
            f,
            blocks,
            THREADS,
            0,
            CUstream::default(),
            &[Arg::U64(s), Arg::U64(d)],
        ));
        if handoff {
            ok(ctx_sync());
            assert_eq!(read_u32(d, want.len()), want);
        } else {
            // without the arrive and the wait: a race between the CTAs
            is(ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
        }
    }
}

/// Clusters of 8 CTAs of 1,024 threads that all arrive on one mbarrier
/// and wait for its phase.
fn all_arrive() -> PtxModule {
    let mut b = KernelBuilder::new("all_arrive", Sm::Sm90);
    b.cluster_dims(8, 1, 1);
    let full = b.shared_mbarrier("full");
    let t = b.tid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.if_(first, |b| b.mbarrier_init(full, 1024u32));
    b.bar_sync();
    b.mbarrier_arrive(full);
    b.mbarrier_wait(full, 0u32);
    b.cluster_sync();
    b.finish().unwrap()
}

#[test]
fn mbarrier_clocks_over_the_simulators_budget_are_the_launchs_fault() {
    let _c = TestCtx::new();
    let f = function(load(&all_arrive().ptx), "all_arrive").unwrap();
    ok(launch(f, 8, 1024, 0, CUstream::default(), &[]));
    // the simulator refuses the race checks' clocks (8,192 threads: over
    // 256 MiB): a driver error, not a panic
    is(ctx_sync(), CUDA_ERROR_LAUNCH_FAILED);
}

#[test]
fn mbarrier_clocks_over_the_budget_run_with_the_checks_off() {
    if !in_emulator_process_with(
        "mbarrier_clocks_over_the_budget_run_with_the_checks_off",
        &[("PTXSMITH_EMU_CHECKS", "0")],
    ) {
        return;
    }
    let _c = TestCtx::new();
    let f = function(load(&all_arrive().ptx), "all_arrive").unwrap();
    ok(launch(f, 8, 1024, 0, CUstream::default(), &[]));
    ok(ctx_sync());
}
