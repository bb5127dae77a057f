//! The fast CPU path of the score route: atom-tiled, vectorised (AVX where
//! the CPU has it) and multi-threaded, bit-identical to the readable model.
//! Separate from the model because it is an optimisation of it, tested
//! against it, and none of the specification.

use std::ops::Range;

use super::{TopS, TopSState, validate_route};
use crate::error::Result;
use crate::invalid_arg;

/// Atoms scored together by the fast path's inner kernel: one accumulator
/// per atom, all sharing each `x[r][c]`.
pub const LANES: usize = 16;

/// Knobs of [`route_top_s_fast_with`]. They change speed, never results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastConfig {
    /// Worker threads (at least 1); fewer run when there are fewer atom
    /// groups and rows than threads.
    pub threads: usize,
    /// Atoms per packed dictionary tile (at least 1; capped at `K`, then
    /// rounded up to a multiple of [`LANES`]). Working memory is one `atom_tile × P` panel
    /// per thread plus `rows × s` kept candidates per thread; it does not
    /// grow with `K`.
    pub atom_tile: usize,
}

impl Default for FastConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            threads,
            atom_tile: 256,
        }
    }
}

/// Below this many multiply-adds [`route_top_s_fast`] uses one thread.
const PARALLEL_MIN_MACS: usize = 1 << 18;

/// [`route_top_s`] computed fast, with [`FastConfig::default`] (one thread
/// for problems under 2^18 multiply-adds). The result is bit-identical to
/// [`route_top_s`].
///
/// [`route_top_s`]: super::route_top_s
pub fn route_top_s_fast(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
) -> Result<TopS> {
    let mut cfg = FastConfig::default();
    if rows.saturating_mul(k).saturating_mul(p) < PARALLEL_MIN_MACS {
        cfg.threads = 1;
    }
    route_top_s_fast_with(x, d, rows, k, p, s, &cfg)
}

/// [`route_top_s`] computed fast: the dictionary is walked in tiles of
/// `atom_tile` atoms packed transposed (`panel[c][lane]`), each group of
/// [`LANES`] atoms is scored with `LANES` independent accumulators that each
/// sum `c` in ascending order with separate roundings (so every score is
/// bit-identical to the plain loop), and each score goes straight into the
/// row's [`TopSState`]. Work is split over threads by atom ranges (or by
/// rows when there are too few atom groups), and the states are merged.
///
/// [`route_top_s`]: super::route_top_s
pub fn route_top_s_fast_with(
    x: &[f32],
    d: &[f32],
    rows: usize,
    k: usize,
    p: usize,
    s: usize,
    cfg: &FastConfig,
) -> Result<TopS> {
    validate_route(x, d, rows, k, p, s)?;
    if cfg.threads == 0 || cfg.atom_tile == 0 {
        return Err(invalid_arg!(
            "score: FastConfig needs threads ≥ 1 and atom_tile ≥ 1 (threads={}, atom_tile={})",
            cfg.threads,
            cfg.atom_tile
        ));
    }
    // A tile wider than K only wastes panel memory (and could overflow).
    let atom_tile = cfg.atom_tile.min(k).div_ceil(LANES) * LANES;
    let threads = cfg.threads;

    // Work items: (row range, atom range), each producing one state per row.
    let groups = k.div_ceil(LANES);
    let items: Vec<(Range<usize>, Range<usize>)> = if threads == 1 {
        vec![(0..rows, 0..k)]
    } else if groups >= threads {
        split(groups, threads)
            .into_iter()
            .map(|g| (0..rows, g.start * LANES..(g.end * LANES).min(k)))
            .collect()
    } else {
        split(rows, threads.min(rows))
            .into_iter()
            .map(|r| (r, 0..k))
            .collect()
    };

    let run = |(row_range, atom_range): (Range<usize>, Range<usize>)| {
        let states = route_part(x, d, p, s, row_range.clone(), atom_range, atom_tile);
        (row_range, states)
    };
    let parts: Vec<(Range<usize>, Vec<TopSState>)> = if items.len() == 1 {
        items.into_iter().map(run).collect()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = items
                .into_iter()
                .map(|item| scope.spawn(move || run(item)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("score worker panicked"))
                .collect()
        })
    };

    let mut per_row: Vec<Option<TopSState>> = vec![None; rows];
    for (row_range, states) in parts {
        for (r, state) in row_range.zip(states) {
            match &mut per_row[r] {
                Some(acc) => acc.merge(&state)?,
                slot @ None => *slot = Some(state),
            }
        }
    }
    let lists = per_row
        .into_iter()
        .map(|st| st.expect("every row was routed").finish());
    Ok(TopS::from_rows(rows, s, lists))
}

/// `0..n` cut into `parts` contiguous, near-equal, non-empty ranges
/// (`1 ≤ parts ≤ n`).
fn split(n: usize, parts: usize) -> Vec<Range<usize>> {
    (0..parts)
        .map(|i| n * i / parts..n * (i + 1) / parts)
        .collect()
}

/// Routes rows `row_range` against atoms `atom_range` (whose start is a
/// multiple of [`LANES`] or equal to `0`), returning one state per row.
///
/// On x86-64 CPUs with AVX the same code is compiled with 256-bit vectors:
/// the same IEEE `mul`/`add` per lane, so the same bits. Only `avx` is
/// enabled, not `fma`, and Rust never contracts `a * b + c` by itself.
fn route_part(
    x: &[f32],
    d: &[f32],
    p: usize,
    s: usize,
    row_range: Range<usize>,
    atom_range: Range<usize>,
    atom_tile: usize,
) -> Vec<TopSState> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU supports AVX, checked just above.
        return unsafe { route_part_avx(x, d, p, s, row_range, atom_range, atom_tile) };
    }
    route_part_body(x, d, p, s, row_range, atom_range, atom_tile)
}

/// [`route_part_body`] compiled for AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn route_part_avx(
    x: &[f32],
    d: &[f32],
    p: usize,
    s: usize,
    row_range: Range<usize>,
    atom_range: Range<usize>,
    atom_tile: usize,
) -> Vec<TopSState> {
    route_part_body(x, d, p, s, row_range, atom_range, atom_tile)
}

#[inline(always)]
fn route_part_body(
    x: &[f32],
    d: &[f32],
    p: usize,
    s: usize,
    row_range: Range<usize>,
    atom_range: Range<usize>,
    atom_tile: usize,
) -> Vec<TopSState> {
    let mut states: Vec<TopSState> = row_range.clone().map(|_| TopSState::new(s)).collect();
    let mut panel = vec![0.0f32; atom_tile * p];
    let mut tile_start = atom_range.start;
    while tile_start < atom_range.end {
        let tile_end = (tile_start + atom_tile).min(atom_range.end);
        let n_groups = (tile_end - tile_start).div_ceil(LANES);
        let used = &mut panel[..n_groups * LANES * p];
        pack_panel(d, p, tile_start..tile_end, used);
        let tile = Tile {
            panel: used,
            start: tile_start,
            end: tile_end,
        };
        // Rows in blocks of ROW_BLOCK so each panel load feeds several
        // rows' accumulators; the leftover rows one at a time.
        let mut blocks = states.chunks_exact_mut(ROW_BLOCK);
        let mut r = row_range.start;
        for block in &mut blocks {
            let block: &mut [TopSState; ROW_BLOCK] = block.try_into().expect("exact chunk");
            score_rows(x, p, r, block, &tile);
            r += ROW_BLOCK;
        }
        for state in blocks.into_remainder() {
            score_rows::<1>(x, p, r, std::array::from_mut(state), &tile);
            r += 1;
        }
        tile_start = tile_end;
    }
    states
}

/// Rows scored together by the fast path's inner kernel.
const ROW_BLOCK: usize = 4;

/// One packed dictionary tile: atoms `start..end`, `panel` as written by
/// [`pack_panel`].
struct Tile<'a> {
    panel: &'a [f32],
    start: usize,
    end: usize,
}

/// Scores rows `r0..r0+R` against every atom of `tile` and offers the
/// scores to those rows' states.
#[inline(always)]
fn score_rows<const R: usize>(
    x: &[f32],
    p: usize,
    r0: usize,
    states: &mut [TopSState; R],
    tile: &Tile<'_>,
) {
    let xs: [&[f32]; R] = std::array::from_fn(|i| &x[(r0 + i) * p..(r0 + i + 1) * p]);
    for (g, group_panel) in tile.panel.chunks_exact(LANES * p).enumerate() {
        let a0 = tile.start + g * LANES;
        let valid = (tile.end - a0).min(LANES);
        let accs = dot_lanes_rows(xs, group_panel);
        for (state, acc) in states.iter_mut().zip(&accs) {
            for (j, &score) in acc[..valid].iter().enumerate() {
                state.offer((a0 + j) as u32, score);
            }
        }
    }
}

/// Packs atoms `atoms` of `d` group by group, transposed within a group:
/// `panel[g*LANES*p + c*LANES + j] = d[atoms.start + g*LANES + j][c]`,
/// with `0.0` in lanes past the last atom (their scores are never offered).
fn pack_panel(d: &[f32], p: usize, atoms: Range<usize>, panel: &mut [f32]) {
    for (g, group) in panel.chunks_exact_mut(LANES * p).enumerate() {
        for j in 0..LANES {
            let a = atoms.start + g * LANES + j;
            if a < atoms.end {
                let row = &d[a * p..(a + 1) * p];
                for (c, &v) in row.iter().enumerate() {
                    group[c * LANES + j] = v;
                }
            } else {
                for c in 0..p {
                    group[c * LANES + j] = 0.0;
                }
            }
        }
    }
}

/// `R × LANES` scores at once: lane `j` of row `i` is `dot(xs[i], atom j)`
/// of the group, with its own accumulator summing `c` ascending, separate
/// roundings (no `mul_add`), so each lane equals the readable `dot` bit for
/// bit. Each panel load is shared by the `R` rows.
#[inline(always)]
fn dot_lanes_rows<const R: usize>(xs: [&[f32]; R], group_panel: &[f32]) -> [[f32; LANES]; R] {
    let mut acc = [[0.0f32; LANES]; R];
    for (c, dc) in group_panel.chunks_exact(LANES).enumerate() {
        for i in 0..R {
            let xc = xs[i][c];
            for j in 0..LANES {
                acc[i][j] += xc * dc[j];
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::super::{dot, route_top_s};
    use super::*;

    #[test]
    fn dot_lanes_rows_matches_dot_per_lane() {
        let p = 7;
        let d: Vec<f32> = (0..20 * p).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let x: Vec<f32> = (0..2 * p).map(|i| (i as f32 * 0.91).cos()).collect();
        let mut panel = vec![f32::NAN; 2 * LANES * p];
        pack_panel(&d, p, 0..20, &mut panel);
        let (x0, x1) = (&x[..p], &x[p..]);
        for g in 0..2 {
            let accs = dot_lanes_rows([x0, x1], &panel[g * LANES * p..(g + 1) * LANES * p]);
            for (acc, xr) in accs.iter().zip([x0, x1]) {
                for (j, got) in acc.iter().enumerate() {
                    let a = g * LANES + j;
                    let want = if a < 20 {
                        dot(xr, &d[a * p..(a + 1) * p])
                    } else {
                        0.0
                    };
                    assert_eq!(got.to_bits(), want.to_bits(), "atom {a}");
                }
            }
        }
    }

    #[test]
    fn split_covers_in_order() {
        for n in 1..40 {
            for parts in 1..=n {
                let ranges = split(n, parts);
                assert_eq!(ranges.len(), parts);
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[parts - 1].end, n);
                for w in ranges.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                assert!(ranges.iter().all(|r| !r.is_empty()));
            }
        }
    }

    #[test]
    fn fast_config_rejects_zero_knobs() {
        let x = [1.0f32];
        let d = [1.0f32];
        for cfg in [
            FastConfig {
                threads: 0,
                atom_tile: 8,
            },
            FastConfig {
                threads: 1,
                atom_tile: 0,
            },
        ] {
            let msg = route_top_s_fast_with(&x, &d, 1, 1, 1, 1, &cfg)
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains(&format!("threads={}", cfg.threads))
                    && msg.contains(&format!("atom_tile={}", cfg.atom_tile)),
                "{msg}"
            );
        }
    }

    #[test]
    fn fast_splits_by_atoms_and_by_rows() {
        // Atom split (many groups) and row split (one group, many rows),
        // with tiles that do not divide K.
        for (rows, k, p, s) in [(5, 203, 9, 4), (50, 16, 3, 16), (3, 17, 2, 17)] {
            let x: Vec<f32> = (0..rows * p).map(|i| ((i * 7 % 11) as f32) - 5.0).collect();
            let d: Vec<f32> = (0..k * p).map(|i| ((i * 5 % 13) as f32) - 6.0).collect();
            let want = route_top_s(&x, &d, rows, k, p, s).unwrap();
            for threads in 1..=5 {
                for atom_tile in [1, 16, 33, 1000, usize::MAX] {
                    let cfg = FastConfig { threads, atom_tile };
                    let got = route_top_s_fast_with(&x, &d, rows, k, p, s, &cfg).unwrap();
                    assert_eq!(got, want, "rows={rows} K={k} P={p} s={s} {cfg:?}");
                }
            }
        }
    }

    #[test]
    fn baseline_and_dispatched_kernels_agree() {
        // On an AVX machine `route_part` runs the AVX build; the baseline
        // body must give the same bits (elsewhere both are the baseline).
        let finish = |states: Vec<TopSState>| -> Vec<(u32, u32)> {
            states
                .into_iter()
                .flat_map(|st| st.finish())
                .map(|(a, v)| (a, v.to_bits()))
                .collect()
        };
        for (rows, k, p, s) in [(7, 100, 13, 100), (4, 33, 64, 3), (1, 5, 1, 2)] {
            let x: Vec<f32> = (0..rows * p).map(|i| (i as f32 * 0.77).sin()).collect();
            let mut d: Vec<f32> = (0..k * p).map(|i| (i as f32 * 0.31).cos() * 1e3).collect();
            d[0] = f32::INFINITY;
            d[k * p - 1] = f32::NAN;
            for atom_tile in [16, 48] {
                let dispatched = route_part(&x, &d, p, s, 0..rows, 0..k, atom_tile);
                let baseline = route_part_body(&x, &d, p, s, 0..rows, 0..k, atom_tile);
                assert_eq!(
                    finish(dispatched),
                    finish(baseline),
                    "rows={rows} K={k} P={p}"
                );
            }
        }
    }
}
