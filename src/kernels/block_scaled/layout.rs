//! The three scale-factor layouts of [`super`]: forward maps (batch `l`,
//! row `m`, k-block `kb`) → byte offset, their inverses (offset → the
//! logical index, or `None` for a padding byte), padded sizes, and
//! conversion between layouts (padding written as zero). See the
//! [module contract](super#scale-layouts) for the byte orders and the
//! CUTLASS finding.

use crate::error::{Error, Result};
use crate::kernels::check;

/// Rows of one scale tile (the 128 of "128×4").
pub const TILE_ROWS: usize = 128;
/// K-blocks of one scale tile (the 4 of "128×4").
pub const TILE_KBLOCKS: usize = 4;
/// Bytes of one 128×4 tile.
pub const TILE_BYTES: usize = TILE_ROWS * TILE_KBLOCKS;

/// A scale-factor byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScaleLayout {
    /// `[L, M, nkb]` row-major, no padding: `offset = (l·M + m)·nkb + kb`.
    RowMajor,
    /// The cuBLAS / PyTorch `to_blocked` 128×4 layout, which is also the
    /// byte order CUTLASS's SM100 block-scaled GEMM reads. Per batch, M is
    /// padded to a multiple of 128 and nkb to a multiple of 4; tiles are
    /// row-block-major; `offset = l·Mp·Kp + tile·512 + (r%32)·16 +
    /// (r/32)·4 + kb%4` with `r = m % 128`, `tile = (m/128)·(Kp/4) +
    /// kb/4`.
    Blocked128x4,
    /// The 6-D atom tensor `[32, 4, M/128, 4, nkb/4, L]` of seed 002
    /// (`permute_scales`), stored densely row-major (its `.contiguous()`
    /// form; `l` fastest). Same padding and size as [`Self::Blocked128x4`]
    /// but a different byte order unless `M ≤ 128`, `nkb ≤ 4` and `L = 1`.
    Atom6D,
}

/// The logical extent of a scale tensor: `L` batches, `M` rows, `nkb`
/// k-blocks per row. Always valid once built: every size is ≥ 1 and the
/// padded byte count fits in `usize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScaleDims {
    l: usize,
    m: usize,
    nkb: usize,
    m_tiles: usize,
    k_tiles: usize,
}

/// The index of one scale in the seed's 6-D atom tensor `[32, 4, M/128,
/// 4, nkb/4, L]`: `m = mm·128 + mm4·32 + mm32`, `kb = kk·4 + kk4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomIndex {
    /// Row within a 32-row group, `m % 32`.
    pub mm32: usize,
    /// 32-row group within the 128-row block, `(m % 128) / 32`.
    pub mm4: usize,
    /// 128-row block, `m / 128`.
    pub mm: usize,
    /// K-block within the group of 4, `kb % 4`.
    pub kk4: usize,
    /// Group of 4 k-blocks, `kb / 4`.
    pub kk: usize,
    /// Batch.
    pub l: usize,
}

/// The seed's `ref_to_permuted_index`: (row `m`, k-block `kb`, batch `l`)
/// → 6-D atom index. Pure index arithmetic, valid for any values.
pub const fn ref_to_permuted_index(m: usize, kb: usize, l: usize) -> AtomIndex {
    AtomIndex {
        mm32: m % 32,
        mm4: (m % TILE_ROWS) / 32,
        mm: m / TILE_ROWS,
        kk4: kb % TILE_KBLOCKS,
        kk: kb / TILE_KBLOCKS,
        l,
    }
}

/// The seed's `permuted_to_ref_index`: 6-D atom index → (`m`, `kb`, `l`).
pub const fn permuted_to_ref_index(i: AtomIndex) -> (usize, usize, usize) {
    (
        i.mm * TILE_ROWS + i.mm4 * 32 + i.mm32,
        i.kk * TILE_KBLOCKS + i.kk4,
        i.l,
    )
}

impl ScaleDims {
    /// Checks and builds the extent.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values when a size is zero or
    /// the padded size `L · ⌈M/128⌉·128 · ⌈nkb/4⌉·4` overflows `usize`.
    pub fn new(l: usize, m: usize, nkb: usize) -> Result<Self> {
        if l == 0 || m == 0 || nkb == 0 {
            return Err(Error::invalid(format!(
                "block_scaled: scale dims L = {l}, M = {m}, nkb = {nkb} must all be >= 1"
            )));
        }
        let m_tiles = m.div_ceil(TILE_ROWS);
        let k_tiles = nkb.div_ceil(TILE_KBLOCKS);
        let padded = [l, m_tiles, k_tiles, TILE_BYTES]
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if padded.is_none() {
            return Err(Error::invalid(format!(
                "block_scaled: padded scale size L·Mp·Kp for L = {l}, M = {m}, nkb = {nkb} \
                 overflows usize"
            )));
        }
        Ok(Self {
            l,
            m,
            nkb,
            m_tiles,
            k_tiles,
        })
    }

    /// `L`, the batches.
    pub fn l(&self) -> usize {
        self.l
    }
    /// `M`, the rows per batch.
    pub fn m(&self) -> usize {
        self.m
    }
    /// `nkb`, the k-blocks per row.
    pub fn nkb(&self) -> usize {
        self.nkb
    }
    /// `⌈M/128⌉`, the 128-row blocks per batch.
    pub fn m_tiles(&self) -> usize {
        self.m_tiles
    }
    /// `⌈nkb/4⌉`, the groups of 4 k-blocks per row.
    pub fn k_tiles(&self) -> usize {
        self.k_tiles
    }
    /// The number of real scales, `L·M·nkb`.
    pub fn count(&self) -> usize {
        self.l * self.m * self.nkb
    }
    /// Bytes of one batch in the padded layouts, `Mp·Kp = 512·⌈M/128⌉·⌈nkb/4⌉`.
    pub fn padded_batch_bytes(&self) -> usize {
        self.m_tiles * self.k_tiles * TILE_BYTES
    }
    /// The 6-D atom shape `[32, 4, ⌈M/128⌉, 4, ⌈nkb/4⌉, L]`.
    pub fn atom_shape(&self) -> [usize; 6] {
        [32, 4, self.m_tiles, 4, self.k_tiles, self.l]
    }
    /// The element strides (bytes) under which the 6-D atom index
    /// addresses the [`ScaleLayout::Blocked128x4`] bytes — CUTLASS's
    /// `tile_to_shape(SfKMajorAtom, (M, K, L), Step<_2,_1,_3>)`: `(16, 4,
    /// Kt·512, 1, 512, Mt·Kt·512)`.
    pub fn atom_strides_cutlass(&self) -> [usize; 6] {
        [
            16,
            4,
            self.k_tiles * TILE_BYTES,
            1,
            TILE_BYTES,
            self.padded_batch_bytes(),
        ]
    }
    /// The dense row-major strides of the 6-D atom shape, the byte order
    /// of [`ScaleLayout::Atom6D`]: `(4·Mt·4·Kt·L, Mt·4·Kt·L, 4·Kt·L, Kt·L,
    /// L, 1)`.
    pub fn atom_strides_row_major(&self) -> [usize; 6] {
        let shape = self.atom_shape();
        let mut strides = [1usize; 6];
        for d in (0..5).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        strides
    }

    fn check_index(&self, l: usize, m: usize, kb: usize) -> Result<()> {
        if l < self.l && m < self.m && kb < self.nkb {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "block_scaled: scale index (l, m, kb) = ({l}, {m}, {kb}) is outside \
             L = {}, M = {}, nkb = {}",
            self.l, self.m, self.nkb
        )))
    }
}

fn dot6(index: AtomIndex, strides: [usize; 6]) -> usize {
    index.mm32 * strides[0]
        + index.mm4 * strides[1]
        + index.mm * strides[2]
        + index.kk4 * strides[3]
        + index.kk * strides[4]
        + index.l * strides[5]
}

impl ScaleLayout {
    /// Every layout, for tests and conversions.
    pub const ALL: [ScaleLayout; 3] = [Self::RowMajor, Self::Blocked128x4, Self::Atom6D];

    /// The buffer length (bytes) of a scale tensor of extent `dims`:
    /// `L·M·nkb` row-major; `L·⌈M/128⌉·128·⌈nkb/4⌉·4` for the padded
    /// layouts. Never overflows (checked by [`ScaleDims::new`]).
    pub fn len(self, dims: &ScaleDims) -> usize {
        match self {
            Self::RowMajor => dims.count(),
            Self::Blocked128x4 | Self::Atom6D => dims.l * dims.padded_batch_bytes(),
        }
    }

    /// Whether the layout has padding bytes for some extents.
    pub fn is_padded(self) -> bool {
        !matches!(self, Self::RowMajor)
    }

    /// The byte offset of scale (`l`, `m`, `kb`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the index and extent when the
    /// index is out of range.
    pub fn offset(self, dims: &ScaleDims, l: usize, m: usize, kb: usize) -> Result<usize> {
        dims.check_index(l, m, kb)?;
        Ok(self.offset_unchecked(dims, l, m, kb))
    }

    /// [`Self::offset`] for an index known to be in range.
    pub(crate) fn offset_unchecked(self, dims: &ScaleDims, l: usize, m: usize, kb: usize) -> usize {
        match self {
            Self::RowMajor => (l * dims.m + m) * dims.nkb + kb,
            Self::Blocked128x4 => {
                let r = m % TILE_ROWS;
                let tile = (m / TILE_ROWS) * dims.k_tiles + kb / TILE_KBLOCKS;
                l * dims.padded_batch_bytes()
                    + tile * TILE_BYTES
                    + (r % 32) * 16
                    + (r / 32) * 4
                    + kb % TILE_KBLOCKS
            }
            Self::Atom6D => dot6(
                ref_to_permuted_index(m, kb, l),
                dims.atom_strides_row_major(),
            ),
        }
    }

    /// The inverse of [`Self::offset`]: `Some((l, m, kb))` for the byte of
    /// a real scale, `None` for a padding byte.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `offset ≥ self.len(dims)`.
    pub fn index_of(
        self,
        dims: &ScaleDims,
        offset: usize,
    ) -> Result<Option<(usize, usize, usize)>> {
        let len = self.len(dims);
        if offset >= len {
            return Err(Error::invalid(format!(
                "block_scaled: scale offset {offset} is outside the {self:?} buffer of {len} \
                 bytes (L = {}, M = {}, nkb = {})",
                dims.l, dims.m, dims.nkb
            )));
        }
        let (m, kb, l) = match self {
            Self::RowMajor => {
                let per_batch = dims.m * dims.nkb;
                let rem = offset % per_batch;
                return Ok(Some((offset / per_batch, rem / dims.nkb, rem % dims.nkb)));
            }
            Self::Blocked128x4 => {
                let batch = dims.padded_batch_bytes();
                let (l, rem) = (offset / batch, offset % batch);
                let (tile, within) = (rem / TILE_BYTES, rem % TILE_BYTES);
                permuted_to_ref_index(AtomIndex {
                    mm32: within / 16,
                    mm4: (within % 16) / 4,
                    mm: tile / dims.k_tiles,
                    kk4: within % 4,
                    kk: tile % dims.k_tiles,
                    l,
                })
            }
            Self::Atom6D => {
                let shape = dims.atom_shape();
                let mut digits = [0usize; 6];
                let mut rest = offset;
                for d in (0..6).rev() {
                    digits[d] = rest % shape[d];
                    rest /= shape[d];
                }
                permuted_to_ref_index(AtomIndex {
                    mm32: digits[0],
                    mm4: digits[1],
                    mm: digits[2],
                    kk4: digits[3],
                    kk: digits[4],
                    l: digits[5],
                })
            }
        };
        Ok((m < dims.m && kb < dims.nkb).then_some((l, m, kb)))
    }
}

/// Re-lays a scale tensor of extent `dims` from `from` to `to`; every
/// padding byte of `to` is `T::default()` (0 for bytes). Generic so that
/// tests can move unique labels; scales are `u8`.
///
/// # Errors
/// [`Error::InvalidArgument`] when `src.len()` is not `from.len(dims)`.
pub fn convert<T: Copy + Default>(
    src: &[T],
    dims: &ScaleDims,
    from: ScaleLayout,
    to: ScaleLayout,
) -> Result<Vec<T>> {
    check::len(
        "block_scaled",
        "src",
        src.len(),
        from.len(dims),
        format_args!(
            "{from:?} scales of L = {}, M = {}, nkb = {}",
            dims.l, dims.m, dims.nkb
        ),
    )?;
    let mut dst = vec![T::default(); to.len(dims)];
    for l in 0..dims.l {
        for m in 0..dims.m {
            for kb in 0..dims.nkb {
                dst[to.offset_unchecked(dims, l, m, kb)] =
                    src[from.offset_unchecked(dims, l, m, kb)];
            }
        }
    }
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_tile_atom_equals_blocked() {
        let dims = ScaleDims::new(1, 100, 3).unwrap();
        for m in 0..100 {
            for kb in 0..3 {
                assert_eq!(
                    ScaleLayout::Atom6D.offset(&dims, 0, m, kb).unwrap(),
                    ScaleLayout::Blocked128x4.offset(&dims, 0, m, kb).unwrap()
                );
            }
        }
    }

    #[test]
    fn bad_dims_and_indices_are_errors() {
        assert!(ScaleDims::new(0, 1, 1).is_err());
        assert!(ScaleDims::new(1, 0, 1).is_err());
        assert!(ScaleDims::new(1, 1, 0).is_err());
        assert!(ScaleDims::new(usize::MAX, 1, 1).is_err());
        assert!(ScaleDims::new(1, usize::MAX, 1).is_err());
        let dims = ScaleDims::new(2, 3, 5).unwrap();
        assert!(ScaleLayout::RowMajor.offset(&dims, 2, 0, 0).is_err());
        assert!(ScaleLayout::Blocked128x4.offset(&dims, 0, 3, 0).is_err());
        assert!(ScaleLayout::Atom6D.offset(&dims, 0, 0, 5).is_err());
        let len = ScaleLayout::Atom6D.len(&dims);
        assert!(ScaleLayout::Atom6D.index_of(&dims, len).is_err());
        assert!(
            convert(
                &[0u8; 29],
                &dims,
                ScaleLayout::RowMajor,
                ScaleLayout::Atom6D
            )
            .is_err()
        );
    }
}
