//! `cp.async.bulk.tensor` (issue 31; sm_90, PTX 8.0): a tensor-map copy.
//!
//! PTX ISA 8.x "cp.async.bulk.tensor" with the CUDA C++ Programming
//! Guide's "Tensor Memory Access" (box, out-of-bounds fill, swizzle). The
//! map operand is the map's generic address: a kernel parameter's
//! (`cvta.param`, the window `PARAM_WINDOW + offset`; read from the
//! launch's parameter buffer) or a global one (read from global memory,
//! 64-byte aligned). Its 128 bytes must be ptxsmith's private encoding
//! ([`crate::tensor_map::encoding`], written by
//! [`TensorMap::encode_private`](crate::tensor_map::TensorMap::encode_private)
//! and the emulator's `cuTensorMapEncodeTiled`): a map that does not decode
//! — one a real driver encoded, or not a map — is a finding
//! ([`SimError::BulkCopy`](crate::sim::SimError::BulkCopy), naming the
//! kernel, block, thread and line), as are a rank other than the
//! instruction's, an interleaved map (not modelled), a destination not
//! 128-byte aligned or not aligned to the swizzle pattern (256, 512,
//! 1,024 bytes), and a swizzled box whose landing leaves its bytes (a
//! partial 128-byte row the swizzle would move past the box: not
//! modelled).
//!
//! The box at the coordinates (`.s32`, innermost first; traversed with the
//! map's element strides) is read when the copy is issued, element by
//! element (bounds and initialisation checked as loads), elements outside
//! the tensor (a coordinate below 0 or at or past the dimension) filled
//! with zeros, or with the PTX canonical NaN of the element type (all
//! ones but the sign bit) with the NaN fill. It lands densely, dimension 0
//! fastest, with the map's swizzle applied to each byte's shared address
//! ([`crate::tensor_map::swizzle_offset`]), and completes the box's bytes
//! (filled ones included) on the barrier: from there on it is
//! `interp::bulk`'s pending copy (landing, waits, findings, multicast).

use super::super::code::XInst;
use super::super::global_mem::{PARAM_WINDOW, WINDOW_SIZE};
use super::bulk::misuse;
use super::cluster::OFFSET_MASK;
use super::step::reg;
use super::{Exec, Res};
use crate::tensor_map::{Interleave, OobFill, Swizzle, TiledDesc, encoding, swizzle_offset};

const WHAT: &str = "cp.async.bulk.tensor";

impl Exec<'_> {
    /// The 128 bytes of the tensor map at generic address `a`.
    fn tensor_map_bytes(&mut self, t: usize, pc: usize, a: u64) -> Res<[u8; 128]> {
        let mut b = [0u8; 128];
        if a.wrapping_sub(PARAM_WINDOW) < WINDOW_SIZE {
            let o = (a - PARAM_WINDOW) as usize;
            match self.k.params.get(o..o + 128) {
                Some(p) if o.is_multiple_of(64) => b.copy_from_slice(p),
                _ => {
                    return misuse(format!(
                        "{WHAT}: the tensor map at parameter offset {o:#x} is not 128 bytes \
                         of the parameters at a 64-byte aligned offset ({} parameter bytes)",
                        self.k.params.len()
                    ));
                }
            }
        } else {
            if !a.is_multiple_of(64) {
                return misuse(format!(
                    "{WHAT}: the tensor map address {a:#x} is not 64-byte aligned"
                ));
            }
            for k in 0..8 {
                let p = self.g.load(t, pc, a + 16 * k as u64, 16)?;
                b[16 * k..16 * k + 16].copy_from_slice(p);
            }
        }
        Ok(b)
    }

    /// `cp.async.bulk.tensor.{dims}d … [s0+off], [s1, {coords}], [s2]{, s3}`
    /// by thread `t` at `pc` (module docs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exec_cp_async_bulk_tensor(
        &mut self,
        t: usize,
        pc: usize,
        rf: &[u64],
        i: &XInst,
        dims: u8,
        multicast: bool,
        ops: u32,
    ) -> Res<()> {
        let dst = reg(rf, i.s[0]).wrapping_add(i.off as u64) & 0xFFFF_FFFF;
        let maddr = reg(rf, i.s[1]);
        let bar = reg(rf, i.s[2]) & 0xFFFF_FFFF;
        let bytes = self.tensor_map_bytes(t, pc, maddr)?;
        let d = match encoding::decode(&bytes) {
            Ok(d) => d,
            Err(e) => {
                return misuse(format!(
                    "{WHAT}: the tensor map at {maddr:#x} does not decode: {e}"
                ));
            }
        };
        if d.rank() != dims as usize {
            return misuse(format!(
                "{WHAT}.{dims}d with a tensor map of rank {}",
                d.rank()
            ));
        }
        if d.interleave != Interleave::None {
            return misuse(format!(
                "{WHAT} with interleave {:?} (not modelled by the simulator)",
                d.interleave
            ));
        }
        let doff = dst & OFFSET_MASK;
        let pattern = u64::from(d.swizzle.pattern_bytes()).max(128);
        if !doff.is_multiple_of(pattern) {
            return misuse(format!(
                "{WHAT} destination at shared offset {doff:#x} is not {pattern}-byte aligned \
                 (128 bytes, and the {}-byte pattern of swizzle {:?})",
                d.swizzle.pattern_bytes(),
                d.swizzle
            ));
        }
        let size = d.box_bytes();
        if !bar.is_multiple_of(8) {
            return misuse(format!("{WHAT} barrier at {bar:#x} is not 8-byte aligned"));
        }
        let slots = self.k.e.mma[ops as usize];
        let coords: Vec<i64> = (0..dims as usize)
            .map(|k| i64::from(reg(rf, slots[k]) as u32 as i32))
            .collect();
        let mask = multicast.then(|| reg(rf, i.s[3]) & 0xFFFF);
        let (ranks, doff, boff) = self.bulk_targets(WHAT, mask, dst, bar, size)?;
        let data = self.tensor_box(t, pc, &d, &coords, size as usize)?;
        self.bulk_pending(t, pc, &ranks, doff, boff, data.into());
        Ok(())
    }

    /// The box of `d` at `coords` as it lands (swizzled) from a
    /// pattern-aligned destination.
    fn tensor_box(
        &mut self,
        t: usize,
        pc: usize,
        d: &TiledDesc,
        coords: &[i64],
        size: usize,
    ) -> Res<Vec<u8>> {
        let es = d.dtype.size_bytes() as usize;
        let rank = d.rank();
        let n: Vec<u64> = (0..rank).map(|k| u64::from(d.box_elems(k))).collect();
        let step = |k: usize| {
            if k == 0 {
                1
            } else {
                i64::from(d.element_strides[k])
            }
        };
        let fill: u64 = match d.oob_fill {
            OobFill::Zero => 0,
            OobFill::Nan => (1u64 << (8 * es - 1)) - 1,
        };
        let mut data = vec![0u8; size];
        let total: u64 = n.iter().product();
        for l in 0..total {
            let mut rem = l;
            let mut addr = d.global_address;
            let mut inside = true;
            for k in 0..rank {
                let idx = (rem % n[k]) as i64;
                rem /= n[k];
                let g = coords[k] + idx * step(k);
                if g < 0 || g as u64 >= d.global_dims[k] {
                    inside = false;
                    break;
                }
                let stride = if k == 0 {
                    es as u64
                } else {
                    d.global_strides[k - 1]
                };
                addr = addr.wrapping_add(g as u64 * stride);
            }
            let p = l as usize * es;
            let q = swizzle_offset(d.swizzle, p as u32) as usize;
            if q + es > size {
                return misuse(format!(
                    "{WHAT}: a box of {size} bytes with swizzle {:?} moves byte {p} past its \
                     end (a partial 128-byte row; not modelled by the simulator)",
                    d.swizzle
                ));
            }
            if inside {
                let v = self.g.load(t, pc, addr, es as u32)?;
                data[q..q + es].copy_from_slice(v);
            } else {
                data[q..q + es].copy_from_slice(&fill.to_le_bytes()[..es]);
            }
        }
        debug_assert!(d.swizzle != Swizzle::None || size == total as usize * es);
        Ok(data)
    }
}
