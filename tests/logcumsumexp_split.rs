//! logcumsumexp's split-path forward in one launch (`lcse_fwd_split`: a
//! CTA per tile by ticket, the carries by a look-back over published tile
//! totals and run aggregates) on the simulator: the same bits as the row
//! path and the host model at the carry tree's run boundaries (1, 2, 31,
//! 32, 33, 64, 65 and 200 tiles, the last tile ragged), several rows,
//! special values, and a second call on the same stream (the scratch is
//! zeroed per call); on a GPU (or the driver emulator) the same, where the
//! CTAs really wait for each other: a row of 2²⁴, a row of 4 129 tiles
//! (runs of 33) and several rows, each three times.

use ptxsmith::Sm;
use ptxsmith::kernels::logcumsumexp::{Shape, TILE, host, launch};
use ptxsmith::runtime::Context;
use ptxsmith::testing::cuda_for_tests;

mod common;
use common::{bits, lcg};
use launch::Path;

/// `rows` rows of `t` values in ±5 with special values: row 0 starts with
/// a tile and a half of `−∞` and has a `−∞` tile in its middle; row 1 (when
/// there is one) has a `+∞` in its last third; row 2 a NaN near its end and
/// a `−0` first element.
fn inputs(rows: usize, t: usize, seed: u32) -> Vec<f32> {
    let mut r = lcg(seed);
    let mut x: Vec<f32> = (0..rows * t).map(|_| 5.0 * r()).collect();
    x[..(3 * TILE / 2).min(t)].fill(f32::NEG_INFINITY);
    let k = (t / TILE / 2) * TILE;
    x[k..(k + TILE).min(t)].fill(f32::NEG_INFINITY);
    if rows > 1 {
        x[t + t - t / 3] = f32::INFINITY;
    }
    if rows > 2 {
        x[2 * t] = -0.0;
        x[3 * t - 2] = f32::NAN;
    }
    x
}

/// Row path, split path and host model agree bit for bit on `rows` rows of
/// `tiles` tiles (the last `TILE − ragged` short when `ragged > 0`).
fn check(ctx: &Context, rows: usize, tiles: usize, ragged: usize, seed: u32) {
    let t = tiles * TILE - ragged;
    let s = Shape::new(rows, t).unwrap();
    let x = inputs(rows, t, seed);
    let want = bits(&host::forward(s, &x).unwrap());
    let st = ctx.default_stream();
    let split = launch::forward_on_path(&st, s, Path::Split, &x).unwrap();
    assert_eq!(bits(&split), want, "split {rows} × {t} ({tiles} tiles)");
    let row = launch::forward_on_path(&st, s, Path::Row, &x).unwrap();
    assert_eq!(bits(&row), want, "row {rows} × {t} ({tiles} tiles)");
}

#[test]
fn split_forward_equals_row_path_and_host_at_run_boundaries() {
    let ctx = Context::sim(Sm::Sm80);
    for (rows, tiles, ragged, seed) in [
        (3, 1, 5, 1),
        (3, 2, 1, 2),
        (3, 31, 0, 3),
        (3, 32, 4092, 4),
        (2, 33, 7, 5),
        (1, 64, 100, 6),
        (1, 65, 2049, 7),
    ] {
        check(&ctx, rows, tiles, ragged, seed);
    }
}

/// 200 tiles (seven runs of 32, the last of 8): run aggregates of six
/// runs, the tree over them across a warp.
#[test]
fn split_forward_equals_row_path_and_host_on_200_tiles() {
    check(&Context::sim(Sm::Sm90), 1, 200, 3, 8);
}

/// The scratch (tickets, flags) starts from zero on every call: a second
/// call on the same stream gives the same bits, and the split path with
/// `x` and `y` the same buffer too.
#[test]
fn split_forward_twice_and_in_place() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let t = 3 * TILE + 9;
    let s = Shape::new(2, t).unwrap();
    let x = inputs(2, t, 9);
    let want = bits(&host::forward(s, &x).unwrap());
    let dx = st.upload(&x).unwrap();
    let mut y = ctx.alloc::<f32>(s.len()).unwrap();
    for _ in 0..2 {
        launch::forward_dev_path(&st, s, Path::Split, &dx, &mut y).unwrap();
        assert_eq!(bits(&st.to_vec(&y).unwrap()), want);
    }
    let xy = st.upload(&x).unwrap();
    // SAFETY: `rows × T` live f32s of this context, transformed in place.
    unsafe {
        ptxsmith::kernels::logcumsumexp::forward_raw(&st, s, xy.device_ptr(), xy.device_ptr())
            .unwrap();
    }
    assert_eq!(bits(&xy.to_vec().unwrap()), want);
}

#[test]
fn gpu_split_forward_matches_the_host_model() {
    let Some(ctx) = cuda_for_tests() else { return };
    let st = ctx.default_stream();
    // Smaller on the driver emulator (kernels on the simulator).
    let shapes: &[(usize, usize)] = if ptxsmith::testing::small_shapes(&ctx) {
        &[(1, 67 * TILE - 3), (3, 33 * TILE)]
    } else {
        &[(1, 1 << 24), (1, 4129 * TILE + 11), (7, 200 * TILE + 3)]
    };
    for &(rows, t) in shapes {
        let s = Shape::new(rows, t).unwrap();
        let x = inputs(rows, t, 10);
        let want = bits(&host::forward(s, &x).unwrap());
        for round in 0..3 {
            let got = launch::forward_on_path(&st, s, Path::Split, &x).unwrap();
            assert_eq!(bits(&got), want, "{rows} × {t}, round {round}");
        }
    }
}

/// A wait that never ends stops at the simulator's instruction budget: the
/// ticket counter starts at 1, so the one CTA takes tile 1 of a row of two
/// and looks back for tile 0's inclusive carry, which nobody publishes.
#[test]
fn a_look_back_nobody_answers_ends_at_the_instruction_budget() {
    use ptxsmith::dsl::params::ArgValue;
    use ptxsmith::kernels::logcumsumexp::ptx;
    use ptxsmith::runtime::exec::LaunchConfig;
    use ptxsmith::sim::{Program, Sim, SimError, SimOptions};

    let m = ptx::generate_fwd_split(Sm::Sm80).unwrap();
    let prog = Program::parse(&m.ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    sim.set_options(SimOptions {
        max_instructions: Some(3_000_000),
        ..Default::default()
    });
    let t = 2 * TILE;
    let x = sim.alloc(4 * t).unwrap();
    let data: Vec<u8> = inputs(1, t, 11)
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    sim.write(x, &data).unwrap();
    let y = sim.alloc(4 * t).unwrap();
    let words = ptx::scratch_words(1, 2);
    let scratch = sim.alloc_zeroed(8 * words).unwrap();
    sim.write(scratch + 8 * (words as u64 - 1), &1u64.to_le_bytes())
        .unwrap();
    let args = [
        ArgValue::Ptr(x),
        ArgValue::Ptr(y),
        ArgValue::Ptr(scratch),
        ArgValue::U32(1),
        ArgValue::U32(t as u32),
        ArgValue::U32(2),
        ArgValue::U32(0),
    ];
    let e = sim
        .launch_program(&prog, ptx::FWD_SPLIT, LaunchConfig::linear(1, 128), &args)
        .unwrap_err();
    match e {
        SimError::InstructionLimit { site, limit } => {
            assert_eq!(limit, 3_000_000);
            assert_eq!(site.kernel, ptx::FWD_SPLIT);
            assert_eq!(site.tid, (0, 0, 0), "thread 0 looks back");
        }
        e => panic!("expected the instruction-budget finding, got {e}"),
    }
}
