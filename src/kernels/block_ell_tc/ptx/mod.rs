//! The kernels of [`super`]: one module per (kernel, precision, block
//! size `B`) and SM from sm_80 (`B` is a compile-time constant, so the
//! MMA chunks of a block unroll). Every kernel runs [`WARPS`] warps per
//! CTA and keeps its f32 accumulator fragments in registers across the
//! whole reduction, so each output element is exactly the contract's chain
//! of `mma.sync` steps. No atomics: every output element has one writer.
//!
//! | kernel | unit of work | reduction (K of the MMA) |
//! |---|---|---|
//! | `block_ell_tc_forward_{p}_b{B}` | a CTA tile of [`group_tile`]`(p, B, sm).tokens` rows `n` × the `G·B` outputs of block rows `r0 .. r0+G` ([`grouped`]: each input block staged once for the group, `cp.async`, `ldmatrix`) | each row's slots by (input block, slot) ascending (empty ones skipped), `j` in chunks |
//! | `block_ell_tc_grad_input_{p}_b{B}` | a CTA tile of rows `n` × the `G·B` inputs of column blocks `c0 .. c0+G` ([`grouped`]) | the transposed index's slots ascending, `i` in chunks |
//! | `block_ell_tc_grad_values_{p}_b{B}` | `B` ≤ 32: the filled `B × B` blocks of a tile of block rows × column blocks ([`values_tiles`](mod@values_tiles): `cp.async` token tiles of `gy`, one a row, and of `x`, one a column block, each once for the tile; `ldmatrix.trans`; 8 × 8 tiles of 32 slots a CTA at `B` = 16 on sm_90/sm_100); bf16/f16 `B` = 32 and 64, tf32 `B` = 32 on sm_90/sm_100/sm_100a: clusters of 4 CTAs over 16 × 8 tiles, `x` multicast by tensor map (`B` = 64: two warps a slot, 4 slots a CTA; tf32: tiles rounded once in shared memory, `values_cluster_tf32.rs`), [`values_cluster`]; `B` = 64 elsewhere: a group of consecutive slots of one block row ([`tiled_values`]: `gy` once for the group, `x` one a slot) | rows `n` in chunks within each 256-row N-chunk; partials joined by `add.rn` in ascending order, the running sums in registers |
//!
//! Every kernel stages its operands in shared memory (see [`grouped`],
//! [`tiled_values`], [`values_tiles`](mod@values_tiles) and [`values_cluster`]); rows `n ≥ N` are zero-filled (`+0` operands), as
//! the host model pads.

use crate::dsl::params::Ptr;
use crate::dsl::types::{Bf16x2, F16x2, F32, MmaInput, S32, Tf32, U32};
use crate::dsl::{FragA, FragB, FragC, KernelBuilder, PtxModule, TensorMapParam};
use crate::error::Result;
use crate::kernel_params;
use crate::kernels::block_ell::Dims;
use crate::target::{Feature, Sm};

use super::host::{TC_BLOCK_SIZES, TcPrecision};

mod cluster_copy;
mod common;
pub mod grouped;
mod grouped_mcast;
mod grouped_sched;
mod shape;
pub mod tiled_values;
pub mod values_cluster;
mod values_cluster_tf32;
pub mod values_tiles;
pub use grouped::{GroupTile, group_tile};
pub use grouped_mcast::input_map as forward_input_map;
pub use grouped_mcast::values_map as forward_values_map;
pub use tiled_values::{ValuesTile, values_tile};
pub use values_cluster::GradValuesTmaArgs;
pub use values_tiles::{ValuesTiles, values_tiles};

/// Warps per CTA.
pub const WARPS: u32 = 4;
/// Threads per CTA.
pub const THREADS: u32 = 32 * WARPS;

kernel_params! {
    /// Arguments of `block_ell_tc_forward_{p}_b{B}` (`x`, `values`: the
    /// inputs' addresses, u16 or f32 elements by precision; `bias` is read
    /// only when `has_bias` is 1; `y` holds f32 elements, or bf16 bits
    /// when `out_bf16` is 1).
    pub struct ForwardArgs => ForwardRegs {
        x: Ptr<U32>,
        values: Ptr<U32>,
        col: Ptr<S32>,
        bias: Ptr<F32>,
        y: Ptr<U32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        has_bias: U32,
        out_bf16: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_tc_forward_{p}_b{B}` where it runs in
    /// clusters ([`grouped::forward_cluster`] > 1): [`ForwardArgs`] with
    /// the values as a tensor map ([`forward_values_map`], encoded by
    /// [`TensorMap::encode_tiled`](crate::tensor_map::TensorMap::encode_tiled))
    /// instead of a pointer, and `x` as a second one too
    /// ([`forward_input_map`]; the pointer `x` is then not read).
    pub struct ForwardTmaArgs => ForwardTmaRegs {
        x: Ptr<U32>,
        col: Ptr<S32>,
        bias: Ptr<F32>,
        y: Ptr<U32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        has_bias: U32,
        out_bf16: U32,
        vmap: TensorMapParam,
        xmap: TensorMapParam,
    }
}

kernel_params! {
    /// Arguments of `block_ell_tc_grad_input_{p}_b{B}` (`offsets [C+1]`,
    /// `slots [nnz]`: the transposed index; `gx` holds f32 elements, or
    /// bf16 bits when `out_bf16` is 1).
    pub struct GradInputArgs => GradInputRegs {
        gy: Ptr<U32>,
        values: Ptr<U32>,
        offsets: Ptr<U32>,
        slots: Ptr<U32>,
        gx: Ptr<U32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        out_bf16: U32,
    }
}

kernel_params! {
    /// Arguments of `block_ell_tc_grad_input_{p}_b{B}` where it runs in
    /// clusters ([`grouped::grad_input_cluster`] > 1): [`GradInputArgs`]
    /// with the values as a tensor map (the forward's,
    /// [`forward_values_map`]) instead of a pointer, and `gy` as a second
    /// one too ([`forward_input_map`] over `[N, R·B]`; the pointer `gy`
    /// is then not read).
    pub struct GradInputTmaArgs => GradInputTmaRegs {
        gy: Ptr<U32>,
        offsets: Ptr<U32>,
        slots: Ptr<U32>,
        gx: Ptr<U32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
        out_bf16: U32,
        vmap: TensorMapParam,
        gymap: TensorMapParam,
    }
}

kernel_params! {
    /// Arguments of `block_ell_tc_grad_values_{p}_b{B}`.
    pub struct GradValuesArgs => GradValuesRegs {
        x: Ptr<U32>,
        gy: Ptr<U32>,
        col: Ptr<S32>,
        gv: Ptr<F32>,
        n: U32,
        r: U32,
        c: U32,
        k: U32,
    }
}

/// Refuse what no variant exists for: `B` outside [`TC_BLOCK_SIZES`] and
/// SMs below sm_80.
fn check(sm: Sm, b: u32) -> Result<()> {
    // the same checks, with the same errors, as the host model
    let dims = Dims::new(0, 0, 0, b as usize)?;
    super::host::request_sm(sm, &dims)
}

fn builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    b
}

fn mma_into<T: MmaInput>(b: &mut KernelBuilder, a: FragA<T>, bf: FragB<T>, acc: FragC) {
    let d = b.mma_sync(a, bf, acc);
    for (dst, src) in acc.regs.into_iter().zip(d.regs) {
        b.assign(dst, src);
    }
}

fn name(kernel: &str, prec: TcPrecision, bs: u32) -> String {
    format!("block_ell_tc_{kernel}_{prec}_b{bs}")
}

/// `block_ell_tc_forward_{p}_b{B}` for `sm`.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for `B` not in
/// [`TC_BLOCK_SIZES`]; [`Error::UnsupportedFeature`](crate::Error::UnsupportedFeature)
/// ([`Feature::MmaSync`]) below sm_80.
pub fn generate_forward(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    check(sm, bs)?;
    match prec {
        TcPrecision::Bf16 => grouped::forward::<Bf16x2>(sm, prec, bs),
        TcPrecision::F16 => grouped::forward::<F16x2>(sm, prec, bs),
        TcPrecision::Tf32 => grouped::forward::<Tf32>(sm, prec, bs),
    }
}

/// `block_ell_tc_grad_input_{p}_b{B}` for `sm`.
///
/// # Errors
/// As [`generate_forward`].
pub fn generate_grad_input(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    check(sm, bs)?;
    match prec {
        TcPrecision::Bf16 => grouped::grad_input::<Bf16x2>(sm, prec, bs),
        TcPrecision::F16 => grouped::grad_input::<F16x2>(sm, prec, bs),
        TcPrecision::Tf32 => grouped::grad_input::<Tf32>(sm, prec, bs),
    }
}

/// `block_ell_tc_grad_values_{p}_b{B}` for `sm`.
///
/// # Errors
/// As [`generate_forward`].
pub fn generate_grad_values(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    check(sm, bs)?;
    // bf16/f16 `B` 32 and 64, tf32 `B` 32 on sm_90/sm_100: clusters
    // sharing `x`;
    // else `B` ≤ 32: tiles of rows × columns sharing both operands; `B` =
    // 64: groups of one row's slots
    if values_cluster::enabled(sm, prec, bs) {
        return match prec {
            TcPrecision::F16 => values_cluster::grad_values::<F16x2>(sm, prec, bs),
            TcPrecision::Tf32 => values_cluster::grad_values::<Tf32>(sm, prec, bs),
            TcPrecision::Bf16 => values_cluster::grad_values::<Bf16x2>(sm, prec, bs),
        };
    }
    let tiles = values_tiles(prec, bs, sm).is_some();
    match (prec, tiles) {
        (TcPrecision::Bf16, true) => values_tiles::grad_values::<Bf16x2>(sm, prec, bs),
        (TcPrecision::F16, true) => values_tiles::grad_values::<F16x2>(sm, prec, bs),
        (TcPrecision::Tf32, true) => values_tiles::grad_values::<Tf32>(sm, prec, bs),
        (TcPrecision::Bf16, false) => tiled_values::grad_values::<Bf16x2>(sm, prec, bs),
        (TcPrecision::F16, false) => tiled_values::grad_values::<F16x2>(sm, prec, bs),
        (TcPrecision::Tf32, false) => tiled_values::grad_values::<Tf32>(sm, prec, bs),
    }
}

/// Every tensor-core block-ELL kernel for `sm`: forward, grad-input and
/// grad-values × {bf16, f16, tf32} × `B` ∈ {16, 32, 64} (27 modules) from
/// sm_80; none below ([`Feature::MmaSync`]).
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    if !sm.supports(Feature::MmaSync) {
        return Ok(Vec::new());
    }
    let mut all = Vec::new();
    for prec in TcPrecision::ALL {
        for &bs in &TC_BLOCK_SIZES {
            let bs = bs as u32;
            all.push(generate_forward(sm, prec, bs)?);
            all.push(generate_grad_input(sm, prec, bs)?);
            all.push(generate_grad_values(sm, prec, bs)?);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_from_sm_80_only() {
        for sm in Sm::ALL {
            let all = variants(sm).unwrap();
            if sm.supports(Feature::MmaSync) {
                assert_eq!(all.len(), 27, "{sm}");
                for m in &all {
                    // mma in every kernel; no atomics or reductions to memory
                    // (`atom.*`, `red.*`; a warp's `redux.sync` is neither)
                    let ops: Vec<&str> = m
                        .ptx
                        .lines()
                        .map(|l| {
                            let t = l.trim_start();
                            match t.strip_prefix('@') {
                                Some(rest) => rest.split_once(' ').map_or("", |(_, op)| op),
                                None => t,
                            }
                        })
                        .collect();
                    assert!(ops.iter().any(|op| op.starts_with("mma")), "{}", m.kernel);
                    for op in ops {
                        assert!(
                            !op.starts_with("atom.") && !op.starts_with("red."),
                            "{}: {op}",
                            m.kernel
                        );
                    }
                }
            } else {
                assert!(all.is_empty(), "{sm}");
                let e = generate_forward(sm, TcPrecision::Bf16, 32).unwrap_err();
                assert!(
                    matches!(
                        e,
                        crate::Error::UnsupportedFeature {
                            feature: Feature::MmaSync,
                            ..
                        }
                    ),
                    "{e:?}"
                );
            }
        }
    }

    #[test]
    fn block_8_is_refused() {
        let e = generate_forward(Sm::Sm80, TcPrecision::F16, 8).unwrap_err();
        assert!(e.to_string().contains("B = 8"), "{e}");
    }
}
