//! How many CTAs a launch gets, written once for every family: one CTA per
//! `per_cta` work items (at least one), at most a cap; the kernels'
//! grid-stride loops cover the rest.

/// CTAs for `work_items` items of `per_cta` each (at least 1), at most
/// `per_sm` per multiprocessor of a device with `multiprocessors` of them
/// (0 counts as 1).
pub(crate) fn ctas(work_items: u64, per_cta: u64, multiprocessors: u32, per_sm: u32) -> u32 {
    let cap = u64::from(multiprocessors.max(1)) * u64::from(per_sm);
    ctas_within(work_items, per_cta, cap)
}

/// CTAs for `work_items` items of `per_cta` each (at least 1), at most
/// `cap` (saturated to `u32::MAX`).
pub(crate) fn ctas_within(work_items: u64, per_cta: u64, cap: u64) -> u32 {
    let want = work_items.div_ceil(per_cta).max(1);
    u32::try_from(want.min(cap)).unwrap_or(u32::MAX)
}

/// The launch shape the streaming kernels' tunings share (FP8's
/// `Fp8Tuning`, the block-scaled `BlockScaledTuning`): threads per CTA and
/// the grid cap per multiprocessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamShape {
    pub(crate) threads: u32,
    pub(crate) ctas_per_sm: u32,
}

/// Threads per CTA of the streaming kernels' default shape.
pub(crate) const STREAM_THREADS: u32 = 256;

impl StreamShape {
    /// The default on `sm`: [`STREAM_THREADS`] threads and a grid cap of
    /// the CTAs of that size the SM holds at once (grid-stride CTAs all get
    /// the same work, so more would run as a partial second wave).
    pub(crate) fn default_for(sm: crate::target::Sm) -> Self {
        let info = sm.info();
        Self {
            threads: STREAM_THREADS,
            ctas_per_sm: (info.max_threads_per_sm / STREAM_THREADS).min(info.max_ctas_per_sm),
        }
    }

    /// The shapes a device sweep times around `self`, `self` first: 128
    /// and 512 threads at the same threads per SM, and the grid cap
    /// doubled (a second full wave: shorter CTAs, the tail evened out).
    pub(crate) fn candidates(self) -> [Self; 4] {
        let per_sm = self.threads * self.ctas_per_sm;
        [
            self,
            Self {
                threads: 128,
                ctas_per_sm: per_sm / 128,
            },
            Self {
                threads: 512,
                ctas_per_sm: (per_sm / 512).max(1),
            },
            Self {
                ctas_per_sm: 2 * self.ctas_per_sm,
                ..self
            },
        ]
    }

    /// Check the ranges: `threads` a multiple of 32 from 64 to 1024 (the
    /// block reductions shuffle whole warps and keep one shared slot a
    /// warp), `ctas_per_sm` from 1 to 32. The first field out of range
    /// gives the tuning's own error, built from its value by `threads` or
    /// `ctas_per_sm`.
    pub(crate) fn check<E>(
        self,
        threads: impl FnOnce(u32) -> E,
        ctas_per_sm: impl FnOnce(u32) -> E,
    ) -> Result<(), E> {
        if !((64..=crate::target::MAX_THREADS_PER_BLOCK).contains(&self.threads)
            && self.threads.is_multiple_of(32))
        {
            return Err(threads(self.threads));
        }
        if !(1..=32).contains(&self.ctas_per_sm) {
            return Err(ctas_per_sm(self.ctas_per_sm));
        }
        Ok(())
    }

    /// A tuning's sweep around its default of shape `self`: the
    /// [`candidates`](Self::candidates) made tunings by `wrap`, then
    /// `extra`, keeping those `valid` accepts, each once, in that order.
    pub(crate) fn sweep<T: Copy + Eq + std::hash::Hash>(
        self,
        wrap: impl Fn(Self) -> T,
        extra: impl IntoIterator<Item = T>,
        valid: impl Fn(&T) -> bool,
    ) -> Vec<T> {
        let mut seen = std::collections::HashSet::new();
        self.candidates()
            .into_iter()
            .map(wrap)
            .chain(extra)
            .filter(|t| valid(t) && seen.insert(*t))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The families' formulas before this module, pinned: the launches
    // keep their shapes.
    fn block_ell_grid(mp: u32, tiles: usize) -> u32 {
        let cap = mp.max(1) as usize * 8;
        tiles.clamp(1, cap) as u32
    }
    fn lcse_tile_grid(mp: u32, items: u32) -> u32 {
        let cap = mp.max(1) * 32;
        items.clamp(1, cap)
    }
    fn lcse_chain_grid(mp: u32, rows: u32, chain_threads: u32) -> u32 {
        let cap = mp.max(1) * 16;
        rows.div_ceil(chain_threads).clamp(1, cap)
    }
    /// `rows ≥ 1` (the launch returns before for 0 rows).
    fn dot_blocks(mp: u32, rows: u32, block: u32) -> u32 {
        rows.div_ceil(block).min(mp.max(1) * 8)
    }
    fn fp8_grid_blocks(n: u64, sms: u32, per_block: u64, per_sm: u32) -> u32 {
        let want = n.div_ceil(per_block).max(1);
        let cap = u64::from(sms.max(1)) * u64::from(per_sm);
        u32::try_from(want.min(cap)).unwrap_or(u32::MAX)
    }
    fn elementwise_64k(len: usize, threads: u32) -> u32 {
        len.div_ceil(threads as usize).clamp(1, 1 << 16) as u32
    }
    fn hmm_task_grid(tasks: u64) -> u32 {
        tasks.clamp(1, 1 << 16) as u32
    }

    #[test]
    fn same_ctas_as_the_family_formulas() {
        let mut items: Vec<u64> = (0..300).collect();
        for e in 8..40 {
            let p = 1u64 << e;
            items.extend([p - 1, p, p + 1, 3 * p + 7]);
        }
        let sms = [0u32, 1, 2, 7, 28, 46, 84, 108, 132, 144, 170, 1000];
        for &mp in &sms {
            for &n in &items {
                let n32 = u32::try_from(n).unwrap_or(u32::MAX);
                let t = ctas(n, 1, mp, 8);
                assert_eq!(t, block_ell_grid(mp, n as usize), "block_ell {mp} {n}");
                assert_eq!(ctas(n32.into(), 1, mp, 32), lcse_tile_grid(mp, n32));
                assert_eq!(ctas(n32.into(), 128, mp, 16), lcse_chain_grid(mp, n32, 128));
                if n32 >= 1 {
                    assert_eq!(ctas(n32.into(), 256, mp, 8), dot_blocks(mp, n32, 256));
                }
                assert_eq!(ctas(n, 4096, mp, 8), fp8_grid_blocks(n, mp, 4096, 8));
                assert_eq!(
                    ctas_within(n, 256, 1 << 16),
                    elementwise_64k(n as usize, 256)
                );
                assert_eq!(ctas_within(n, 1, 1 << 16), hmm_task_grid(n));
            }
        }
    }
}
