//! Decoding of the cluster instructions (sm_90+): `mapa.shared::cluster`
//! and `barrier.cluster.arrive`/`wait`. (`ld`/`st.shared::cluster` are
//! `decode_mem`'s, with [`Space::SharedCluster`]; `fence` at any scope is
//! a no-op of the simulator, which runs each access at once.)

use super::super::ir::*;
use super::decode::{DErr, Decoder, blank_inst, perr, unsup};
use super::operands::{Cls, Opnd};

impl Decoder<'_> {
    pub(super) fn decode_cluster(
        &self,
        base: &str,
        mods: &[&str],
        ops: &[Opnd],
    ) -> Result<Inst, DErr> {
        if self.sm > 0 && self.sm < 90 {
            return unsup(format!(
                "`{base}.{}` needs sm_90, module targets sm_{}",
                mods.join("."),
                self.sm
            ));
        }
        if base == "mapa" {
            // mapa.shared::cluster.{u32,u64} d, a, rank (the generic form,
            // `mapa.u64`, maps generic addresses: not implemented)
            if mods.first() != Some(&"shared_cluster")
                || !matches!(mods.get(1), Some(&"u32" | &"u64"))
                || mods.len() != 2
            {
                return unsup(format!(
                    "`mapa.{}` (only mapa.shared::cluster.u32/.u64)",
                    mods.join(".")
                ));
            }
            return self.simple(Op::Mapa, ops, 2, Cls::Int);
        }
        // barrier.cluster.{arrive,wait}{.sem}{.aligned}
        let rest: Vec<&str> = mods[1..]
            .iter()
            .copied()
            .filter(|m| *m != "aligned")
            .collect();
        if !ops.is_empty() {
            return perr("barrier.cluster takes no operands");
        }
        match rest.as_slice() {
            ["arrive"] | ["arrive", "release"] => {
                Ok(blank_inst(Op::ClusterArrive { relaxed: false }))
            }
            ["arrive", "relaxed"] => Ok(blank_inst(Op::ClusterArrive { relaxed: true })),
            ["wait"] | ["wait", "acquire"] => Ok(blank_inst(Op::ClusterWait)),
            _ => unsup(format!("`barrier.{}`", mods.join("."))),
        }
    }
}
