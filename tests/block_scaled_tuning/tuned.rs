//! The block-scaled launches of one [`BlockScaledTuning`] through the
//! library's tuned entry points (`quantize_dev_tuned`,
//! `dequantize_dev_tuned`, `convert_layout_dev_tuned`): NVFP4's absmax
//! partials and global scale then the quantize kernel, the dequantize
//! kernel, and a scale-layout conversion. Shared by
//! `tests/block_scaled_tuning.rs` (the simulator) and
//! `benches/block_scaled.rs` (the device sweep).

use std::cell::RefCell;

use ptxsmith::kernels::block_scaled::launch::{
    convert_layout_dev_tuned, dequantize_dev_tuned, quantize_dev_tuned,
};
use ptxsmith::kernels::block_scaled::ptx::{self, BlockScaledTuning, Codec};
use ptxsmith::kernels::block_scaled::{Format, Quantization, Recipe, Relayout, ScaleLayout, Shape};
use ptxsmith::runtime::{AsDeviceMut, DeviceBuffer, Stream};

/// What a tuning produced, as bits: codes, scales, the NVFP4 global scale
/// (empty for MX), the dequantized values, the converted scales.
#[derive(Debug, PartialEq, Eq)]
pub struct Outputs {
    pub codes: Vec<u8>,
    pub scales: Vec<u8>,
    pub global: Vec<u32>,
    pub y: Vec<u32>,
    pub converted: Vec<u8>,
}

/// One quantize + dequantize (+ conversion) of `x` under a tuning, with
/// the buffers they write (fresh, zeroed allocations).
pub struct Tuned<'a> {
    x: &'a DeviceBuffer<f32>,
    q: Quantization,
    to: ScaleLayout,
    codec: Codec,
    t: BlockScaledTuning,
    codes: RefCell<DeviceBuffer<u8>>,
    scales: RefCell<DeviceBuffer<u8>>,
    global: RefCell<DeviceBuffer<f32>>,
    y: RefCell<DeviceBuffer<f32>>,
    converted: RefCell<DeviceBuffer<u8>>,
}

impl<'a> Tuned<'a> {
    /// The launches of `recipe` on `x` (`shape`, scales in `layout`,
    /// converted to `to`) under `t` with `codec`, and their buffers.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        st: &Stream,
        x: &'a DeviceBuffer<f32>,
        shape: Shape,
        recipe: Recipe,
        layout: ScaleLayout,
        to: ScaleLayout,
        codec: Codec,
        t: &BlockScaledTuning,
    ) -> Tuned<'a> {
        let ctx = st.context();
        let dims = shape.scale_dims();
        let zeroed = |n| RefCell::new(ctx.alloc_zeroed::<u8>(n).unwrap());
        Tuned {
            x,
            q: Quantization {
                shape,
                recipe,
                layout,
            },
            to,
            codec,
            t: *t,
            codes: zeroed(shape.codes_len()),
            scales: zeroed(layout.len(&dims)),
            global: RefCell::new(ctx.alloc_zeroed::<f32>(ptx::GLOBAL_LEN).unwrap()),
            y: RefCell::new(ctx.alloc_zeroed::<f32>(shape.len()).unwrap()),
            converted: zeroed(to.len(&dims)),
        }
    }

    fn nvfp4(&self) -> bool {
        self.q.recipe.format() == Format::Nvfp4
    }

    /// Queue the quantize launches (NVFP4: the absmax partials, the
    /// global scale, then quantize; MX: quantize).
    pub fn run_quantize(&self, st: &Stream) {
        let mut global = self.global.borrow_mut();
        let g = self.nvfp4().then(|| global.as_device_mut());
        let (mut codes, mut scales) = (self.codes.borrow_mut(), self.scales.borrow_mut());
        quantize_dev_tuned(
            st,
            self.q,
            self.codec,
            self.x,
            &mut *codes,
            &mut *scales,
            g,
            &self.t,
        )
        .unwrap();
    }

    /// Queue the dequantize launch of what `run_quantize` wrote.
    pub fn run_dequantize(&self, st: &Stream) {
        let global = self.global.borrow();
        let g = self.nvfp4().then(|| global.slice(..).unwrap());
        let (codes, scales) = (self.codes.borrow(), self.scales.borrow());
        let mut y = self.y.borrow_mut();
        dequantize_dev_tuned(
            st, self.q, self.codec, &*codes, &*scales, g, &mut *y, &self.t,
        )
        .unwrap();
    }

    /// Queue the conversion of the scales to `to`.
    pub fn run_convert(&self, st: &Stream) {
        let r = Relayout {
            dims: self.q.shape.scale_dims(),
            from: self.q.layout,
            to: self.to,
        };
        let scales = self.scales.borrow();
        let mut converted = self.converted.borrow_mut();
        convert_layout_dev_tuned(st, r, &*scales, &mut *converted, &self.t).unwrap();
    }

    /// Everything the launches wrote (raw bits, NaN payloads included).
    pub fn outputs(&self, st: &Stream, nvfp4: bool) -> Outputs {
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        Outputs {
            codes: st.to_vec(&*self.codes.borrow()).unwrap(),
            scales: st.to_vec(&*self.scales.borrow()).unwrap(),
            global: if nvfp4 {
                bits(st.to_vec(&*self.global.borrow()).unwrap())
            } else {
                Vec::new()
            },
            y: bits(st.to_vec(&*self.y.borrow()).unwrap()),
            converted: st.to_vec(&*self.converted.borrow()).unwrap(),
        }
    }
}
