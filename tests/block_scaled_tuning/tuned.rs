//! The block-scaled launches of one [`BlockScaledTuning`], the launch
//! code's sequence with the tuned modules (`ptx::generate_tuned`) and the
//! tuning's block size and grid cap: NVFP4's absmax partials (the FP8
//! family's default kernel) and global scale, the quantize kernel, the
//! dequantize kernel, and a scale-layout conversion. Shared by
//! `tests/block_scaled_tuning.rs` (the simulator) and
//! `benches/block_scaled.rs` (the device sweep).
//!
//! The buffers come from `Context::alloc_zeroed`, so a padded layout's
//! padding is 0 as the launch code's memset leaves it (the kernel writes
//! only real scales); the buffers are fresh allocations, aligned for
//! every vector path, which `vec` selects from `K` alone.

use ptxsmith::dsl::PtxModule;
use ptxsmith::dsl::params::{ArgValue, KernelParams};
use ptxsmith::kernels::block_scaled::ptx::{
    self, BlockScaledTuning, Codec, ConvertArgs, DequantizeArgs, Kernel, Nvfp4GlobalArgs,
    QuantizeArgs,
};
use ptxsmith::kernels::block_scaled::{Format, Recipe, ScaleLayout, Shape};
use ptxsmith::kernels::fp8::ptx::{self as fp8_ptx, AbsmaxPartialsArgs};
use ptxsmith::runtime::{DeviceBuffer, LaunchConfig, Stream};

/// One queued kernel: module, shape, arguments.
pub type Launch = (PtxModule, LaunchConfig, Vec<ArgValue>);

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

/// The launches of one quantize + dequantize (+ conversion) under a
/// tuning, with the buffers they write.
pub struct Tuned {
    /// NVFP4: the absmax partials, the global scale, then quantize; MX:
    /// quantize.
    pub quantize: Vec<Launch>,
    /// Dequantize of the codes and scales `quantize` wrote.
    pub dequantize: Launch,
    /// The scales re-laid from the quantize layout to `to`.
    pub convert: Launch,
    codes: DeviceBuffer<u8>,
    scales: DeviceBuffer<u8>,
    global: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    converted: DeviceBuffer<u8>,
    _partials: DeviceBuffer<f32>,
}

/// The `vec` argument for fresh (aligned) buffers and row length `k`.
fn vec_flags(k: usize) -> u32 {
    match (k.is_multiple_of(4), k.is_multiple_of(16)) {
        (true, true) => ptx::VEC | ptx::WIDE,
        (true, false) => ptx::VEC,
        _ => 0,
    }
}

impl Tuned {
    /// Generate and prepare every launch of `recipe` on `x` (`shape`,
    /// scales in `layout`, converted to `to`) under `t` with `codec`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        st: &Stream,
        x: &DeviceBuffer<f32>,
        shape: Shape,
        recipe: Recipe,
        layout: ScaleLayout,
        to: ScaleLayout,
        codec: Codec,
        t: &BlockScaledTuning,
    ) -> Tuned {
        let ctx = st.context();
        let (sm, sms) = (ctx.sm(), ctx.multiprocessor_count());
        let f = recipe.format();
        let dims = shape.scale_dims();
        let module = |k| ptx::generate_tuned(sm, k, codec, t).unwrap();
        let mut codes = ctx.alloc_zeroed::<u8>(shape.codes_len()).unwrap();
        let mut scales = ctx.alloc_zeroed::<u8>(layout.len(&dims)).unwrap();
        let mut global = ctx.alloc_zeroed::<f32>(ptx::GLOBAL_LEN).unwrap();
        let mut y = ctx.alloc_zeroed::<f32>(shape.len()).unwrap();
        let mut converted = ctx.alloc_zeroed::<u8>(to.len(&dims)).unwrap();
        let n = shape.len() as u64;
        let pblocks = fp8_ptx::grid_blocks(n, sms);
        let mut partials = ctx.alloc_zeroed::<f32>(pblocks as usize).unwrap();
        let mut quantize = Vec::new();
        if f == Format::Nvfp4 {
            let fp8 = fp8_ptx::generate_absmax_partials(sm).unwrap();
            let a = AbsmaxPartialsArgs {
                x: st.arg("x", x).unwrap(),
                n,
                partials: st.arg_mut("partials", &mut partials).unwrap(),
            };
            let cfg = LaunchConfig::linear(pblocks, fp8_ptx::BLOCK);
            quantize.push((fp8, cfg, a.args()));
            let a = Nvfp4GlobalArgs {
                partials: st.arg("partials", &partials).unwrap(),
                count: pblocks,
                global: st.arg_mut("global", &mut global).unwrap(),
            };
            let one = LaunchConfig::linear(1, t.threads);
            quantize.push((module(Kernel::Nvfp4Global), one, a.args()));
        }
        let s = ptx::layout_strides(layout, &dims);
        let nkb = ptx::div_magic(dims.nkb() as u32);
        let m = ptx::div_magic(shape.m() as u32);
        let tpb = (f.block_size() as u32 / ptx::ELEMS_PER_LANE) as u64;
        let lanes = (dims.count() as u64 * tpb).next_multiple_of(32);
        let cfg = LaunchConfig::linear(t.grid_blocks(lanes, sms), t.threads);
        let vec = vec_flags(shape.k());
        // The quantize and dequantize arguments past the buffers: the
        // shape, the access path, the divisions' magics, the layout.
        macro_rules! block_args {
            ($ty:ident { $($field:ident: $value:expr),* $(,)? }) => {
                $ty {
                    $($field: $value,)*
                    m: shape.m() as u32,
                    k: shape.k() as u32,
                    nkb: dims.nkb() as u32,
                    blocks: dims.count() as u32,
                    vec,
                    nkb_magic: nkb.0,
                    nkb_shift: nkb.1,
                    m_magic: m.0,
                    m_shift: m.1,
                    s_mm32: s[0],
                    s_mm4: s[1],
                    s_mm: s[2],
                    s_kk4: s[3],
                    s_kk: s[4],
                    s_l: s[5],
                }
            };
        }
        let a = block_args!(QuantizeArgs {
            x: st.arg("x", x).unwrap(),
            codes: st.arg_mut("codes", &mut codes).unwrap(),
            scales: st.arg_mut("scales", &mut scales).unwrap(),
            global: st.arg("global", &global).unwrap(),
        });
        quantize.push((module(Kernel::Quantize(recipe)), cfg, a.args()));
        let a = block_args!(DequantizeArgs {
            codes: st.arg("codes", &codes).unwrap(),
            scales: st.arg("scales", &scales).unwrap(),
            global: st.arg("global", &global).unwrap(),
            y: st.arg_mut("y", &mut y).unwrap(),
        });
        let dcfg = LaunchConfig::linear(t.grid_blocks(dims.count() as u64 * tpb, sms), t.threads);
        let dequantize = (module(Kernel::Dequantize(f)), dcfg, a.args());
        let count = ScaleLayout::Blocked128x4.len(&dims);
        let (a, b) = (s, ptx::layout_strides(to, &dims));
        let c = ConvertArgs {
            src: st.arg("scales", &scales).unwrap(),
            dst: st.arg_mut("converted", &mut converted).unwrap(),
            m: dims.m() as u32,
            nkb: dims.nkb() as u32,
            m_tiles: dims.m_tiles() as u32,
            k_tiles: dims.k_tiles() as u32,
            count: count as u32,
            dst_padded: u32::from(to.is_padded()),
            a_mm32: a[0],
            a_mm4: a[1],
            a_mm: a[2],
            a_kk4: a[3],
            a_kk: a[4],
            a_l: a[5],
            b_mm32: b[0],
            b_mm4: b[1],
            b_mm: b[2],
            b_kk4: b[3],
            b_kk: b[4],
            b_l: b[5],
        };
        let ccfg = LaunchConfig::linear(t.grid_blocks(count as u64, sms), t.threads);
        let convert = (module(Kernel::Convert), ccfg, c.args());
        Tuned {
            quantize,
            dequantize,
            convert,
            codes,
            scales,
            global,
            y,
            converted,
            _partials: partials,
        }
    }

    /// Queue the quantize launches.
    pub fn run_quantize(&self, st: &Stream) {
        for (m, cfg, a) in &self.quantize {
            st.launch(m, *cfg, a).unwrap();
        }
    }

    /// Queue the dequantize launch.
    pub fn run_dequantize(&self, st: &Stream) {
        let (m, cfg, a) = &self.dequantize;
        st.launch(m, *cfg, a).unwrap();
    }

    /// Queue the conversion launch.
    pub fn run_convert(&self, st: &Stream) {
        let (m, cfg, a) = &self.convert;
        st.launch(m, *cfg, a).unwrap();
    }

    /// Everything the launches wrote (raw bits, NaN payloads included).
    pub fn outputs(&self, st: &Stream, nvfp4: bool) -> Outputs {
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        Outputs {
            codes: st.to_vec(&self.codes).unwrap(),
            scales: st.to_vec(&self.scales).unwrap(),
            global: if nvfp4 {
                bits(st.to_vec(&self.global).unwrap())
            } else {
                Vec::new()
            },
            y: bits(st.to_vec(&self.y).unwrap()),
            converted: st.to_vec(&self.converted).unwrap(),
        }
    }
}
