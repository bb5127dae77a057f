//! The staged layout the tensor-core kernels share ([`super::grouped`] and
//! [`super::tiled_values`]): token tiles of `B` elements a row, staged in
//! shared memory with a padded row pitch, and a warp tile of `wm × wn`
//! MMA outputs.

use crate::dsl::types::MmaInput;
use crate::tensor_core::InputFormat;

use super::super::host::TcPrecision;

/// The shape of one staged kernel, in bytes and fragments.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) fmt: InputFormat,
    pub(super) bs: u32,
    /// bytes of an element
    pub(super) e: u32,
    /// bytes of a staged row (`B` elements) and its padded pitch
    pub(super) rowb: u32,
    pub(super) pitch: u32,
    /// bytes between the rows of a staged values block: the padded
    /// `pitch`, or the unpadded row where a tensor-map copy lands it
    /// swizzled ([`Shape::tma_values`])
    pub(super) vpitch: u32,
    /// bytes between the rows of a staged token tile: the padded
    /// `pitch`, or the unpadded row where a tensor-map copy lands it
    /// swizzled ([`Shape::tma_input`])
    pub(super) xpitch: u32,
    /// 16-byte copies per staged row
    pub(super) cpr: u32,
    /// token rows per staged tile
    pub(super) tokens: u32,
    /// MMA chunk (`k` per `mma.sync`)
    pub(super) q: u32,
    /// warp tile: MMA rows × columns, and its fragment counts
    pub(super) wm: u32,
    pub(super) wn: u32,
    pub(super) mt: u32,
    pub(super) nt: u32,
    /// grad-input: `B` row-major (`values[s, k, f]`)
    pub(super) trans: bool,
    /// tf32 operands already rounded in shared memory (the cluster
    /// kernels round each landed tile once, [`Shape::pre_rounded`]): the
    /// fragments are loaded without a conversion
    pub(super) rounded: bool,
}

impl Shape {
    /// The shape of precision `prec` (inputs `T`) at block size `bs`:
    /// rows padded by `pad` bytes, tiles of `tokens` rows, warp tiles of
    /// `wm × wn`.
    pub(super) fn new<T: MmaInput>(
        prec: TcPrecision,
        bs: u32,
        pad: u32,
        tokens: u32,
        (wm, wn): (u32, u32),
        trans: bool,
    ) -> Self {
        let fmt = T::FORMAT;
        let e = if fmt == InputFormat::Tf32 { 4 } else { 2 };
        let rowb = bs * e;
        Shape {
            fmt,
            bs,
            e,
            rowb,
            pitch: rowb + pad,
            vpitch: rowb + pad,
            xpitch: rowb + pad,
            cpr: rowb / 16,
            tokens,
            q: prec.chunk() as u32,
            wm,
            wn,
            mt: wm / 16,
            nt: wn / 8,
            trans,
            rounded: false,
        }
    }
    /// bytes of one buffer of a token tile
    pub(super) fn buf(&self) -> u32 {
        self.tokens * self.xpitch
    }
    /// The shape with its values blocks unpadded (rows of `B` elements,
    /// landed swizzled by a tensor-map copy).
    pub(super) fn tma_values(self) -> Self {
        Shape {
            vpitch: self.rowb,
            ..self
        }
    }
    /// The shape with its token tiles unpadded (rows of `B` elements,
    /// landed swizzled by a tensor-map copy).
    pub(super) fn tma_input(self) -> Self {
        Shape {
            xpitch: self.rowb,
            ..self
        }
    }
    /// The shape whose tf32 operands are rounded in shared memory before
    /// the fragments are loaded.
    pub(super) fn pre_rounded(self) -> Self {
        Shape {
            rounded: true,
            ..self
        }
    }
    /// The cluster kernels' shape (forward and grad-input): values and
    /// input tiles landed unpadded by tensor-map copies, and tf32 tiles
    /// rounded once in shared memory.
    pub(super) fn for_cluster(self, prec: TcPrecision) -> Self {
        let sh = self.tma_values().tma_input();
        if prec == TcPrecision::Tf32 {
            sh.pre_rounded()
        } else {
            sh
        }
    }
    /// bytes of one buffer of a `B × B` block
    pub(super) fn vbuf(&self) -> u32 {
        self.bs * self.vpitch
    }
    /// MMA chunks per block
    pub(super) fn chunks(&self) -> u32 {
        self.bs / self.q
    }
}
