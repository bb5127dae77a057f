//! `elect.sync` (`KernelBuilder::elect_sync`): printed as `elect.sync d|p,
//! mask`, gated at sm_90 / PTX 8.0 with a named error below, assembled by
//! the pinned ptxas on every target that has it; on the simulator every
//! thread of the mask gets the same leader (the lowest lane executing it)
//! and exactly one thread the predicate, for a full warp and for a warp
//! whose lower lanes took another path.

use ptxsmith::dsl::params::{KernelParams, Ptr};
use ptxsmith::dsl::types::U32;
use ptxsmith::dsl::*;
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct ElectArgs => ElectRegs { lead: Ptr<U32>, chosen: Ptr<U32> }
}

/// Every thread writes the leader's lane to `lead[tid]` and whether it was
/// elected to `chosen[tid]`. Lanes below `skip` of each warp take another
/// path (they write `u32::MAX` to both) and the others elect among
/// themselves (mask: lanes `skip..32`).
fn kernel(sm: Sm, skip: u32) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("elect", sm);
    let p = b.params::<ElectArgs>();
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let lp = b.offset(p.lead, tid);
    let cp = b.offset(p.chosen, tid);
    let low = b.setp(Cmp::Lt, lane, skip);
    b.if_else(
        low,
        |b| {
            b.st_global(lp, 0, u32::MAX);
            b.st_global(cp, 0, u32::MAX);
        },
        |b| {
            let mask = if skip == 0 {
                u32::MAX
            } else {
                u32::MAX << skip
            };
            let (leader, me) = b.elect_sync(mask);
            b.st_global(lp, 0, leader);
            let one = b.selp(me, 1u32, 0u32);
            b.st_global(cp, 0, one);
        },
    );
    b.finish()
}

fn run(sm: Sm, skip: u32, threads: u32) -> (Vec<u32>, Vec<u32>) {
    let ctx = Context::sim(sm);
    let st = ctx.default_stream();
    let m = kernel(sm, skip).unwrap();
    let n = threads as usize;
    let (mut lead, mut chosen) = (ctx.alloc::<u32>(n).unwrap(), ctx.alloc::<u32>(n).unwrap());
    let args = ElectArgs {
        lead: st.arg_mut("lead", &mut lead).unwrap(),
        chosen: st.arg_mut("chosen", &mut chosen).unwrap(),
    };
    st.launch(&m, LaunchConfig::linear(1, threads), &args.args())
        .unwrap();
    (st.to_vec(&lead).unwrap(), st.to_vec(&chosen).unwrap())
}

#[test]
fn printed_and_gated() {
    let m = kernel(Sm::Sm90, 0).unwrap();
    assert!(m.ptx.contains("elect.sync %r"), "{}", m.ptx);
    assert!(m.ptx.contains("|%p"), "{}", m.ptx);
    assert!(m.ptx.contains(", 0xffffffff;"), "{}", m.ptx);
    assert!(m.ptx.contains(".version 8.0\n"), "{}", m.ptx);
    for sm in [Sm::Sm70, Sm::Sm80, Sm::Sm89] {
        match kernel(sm, 0) {
            Err(Error::UnsupportedFeature { feature, needs, .. }) => {
                assert_eq!(feature, Feature::Elect);
                assert!(needs.contains("sm_90") && needs.contains("8.0"), "{needs}");
            }
            other => panic!("{sm}: {other:?}"),
        }
    }
}

#[test]
fn one_leader_a_warp_the_lowest_lane_on_the_simulator() {
    for sm in [Sm::Sm90, Sm::Sm100, Sm::Sm120] {
        for skip in [0u32, 5, 31] {
            let (lead, chosen) = run(sm, skip, 96);
            for (w, (l, c)) in lead.chunks(32).zip(chosen.chunks(32)).enumerate() {
                for lane in 0..32 {
                    if lane < skip as usize {
                        assert_eq!((l[lane], c[lane]), (u32::MAX, u32::MAX));
                    } else {
                        assert_eq!(l[lane], skip, "{sm} warp {w} lane {lane} skip {skip}");
                        assert_eq!(c[lane], u32::from(lane == skip as usize));
                    }
                }
            }
        }
    }
}

#[test]
fn ptxas_assembles_it_where_it_exists() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::Elect)) {
        let m = kernel(sm, 5).unwrap();
        if let Err(e) = tools.assemble(&m.ptx, sm) {
            panic!("elect.sync on {sm} rejected by ptxas: {e}\n{}", m.ptx);
        }
    }
    // 8.0 is minimal
    let m = kernel(Sm::Sm90, 0).unwrap();
    let lower = m.ptx.replace(".version 8.0\n", ".version 7.8\n");
    assert!(tools.assemble(&lower, Sm::Sm90).is_err());
}
