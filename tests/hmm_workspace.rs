//! The HMM workspace the caller keeps (`hmm::Workspace`): a warm call on
//! resident buffers allocates nothing (simulator, and a GPU or the driver
//! emulator), a reused workspace gives the bits of a fresh call (also
//! after a call of another shape, so stale scratch cannot leak), its bytes
//! are the documented formula and what it allocates, and a workspace of
//! the wrong shape or context is a typed error with nothing written.

use ptxsmith::Error;
use ptxsmith::Sm;
use ptxsmith::kernels::hmm::{self, DeviceInputs, DeviceOutputs, Posteriors, Shape, Workspace};
use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context, DeviceBuffer, Stream};

mod hmm_common;
use hmm_common::{Model, assert_same, issue_model};

/// A model's inputs and outputs resident on the device.
struct Resident {
    pi: DeviceBuffer<f32>,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    /// log_alpha, log_beta, log_likelihood, gamma, xi.
    out: [DeviceBuffer<f32>; 5],
}

/// Outputs filled with a sentinel, to see what a call wrote.
const SENTINEL: f32 = 12345.5;

impl Resident {
    fn new(st: &Stream, m: &Model) -> Resident {
        let n = m.batch * m.t * m.s;
        let put = |len: usize| st.upload(&vec![SENTINEL; len]).unwrap();
        Resident {
            pi: st.upload(&m.pi).unwrap(),
            a: st.upload(&m.a).unwrap(),
            b: st.upload(&m.b).unwrap(),
            out: [
                put(n),
                put(n),
                put(m.batch),
                put(n),
                put(m.batch * m.s * m.s),
            ],
        }
    }

    /// One call with `ws` (or a fresh workspace with `None`).
    fn run(&mut self, st: &Stream, ws: Option<&mut Workspace>, m: &Model) -> Result<(), Error> {
        let inputs = DeviceInputs {
            log_pi: self.pi.as_device(),
            log_a: self.a.as_device(),
            log_b: self.b.as_device(),
            lengths: &m.lengths,
        };
        let [alpha, beta, ll, gamma, xi] = &mut self.out;
        let out = DeviceOutputs {
            log_alpha: alpha.as_device_mut(),
            log_beta: beta.as_device_mut(),
            log_likelihood: ll.as_device_mut(),
            gamma: gamma.as_device_mut(),
            xi: xi.as_device_mut(),
        };
        match ws {
            Some(ws) => hmm::forward_backward_dev_ws(st, ws, m.shape(), &inputs, out),
            None => hmm::forward_backward_dev(st, m.shape(), &inputs, out),
        }
    }

    fn get(&self, st: &Stream, m: &Model) -> Posteriors {
        let v = |k: usize| st.to_vec(&self.out[k]).unwrap();
        Posteriors {
            batch: m.batch,
            t: m.t,
            s: m.s,
            log_alpha: v(0),
            log_beta: v(1),
            log_likelihood: v(2),
            gamma: v(3),
            xi: v(4),
        }
    }

    fn untouched(&self, st: &Stream) -> bool {
        self.out
            .iter()
            .all(|b| st.to_vec(b).unwrap().iter().all(|&x| x == SENTINEL))
    }
}

fn host_run(m: &Model) -> Posteriors {
    hmm::host::forward_backward(m.shape(), &m.inputs()).unwrap()
}

/// Warm-up with a kept workspace, then a second call: no allocation, and
/// the bits of the host model (and so of a fresh workspace).
fn warm_call_allocates_nothing(ctx: &Context, m: &Model) {
    let st = ctx.default_stream();
    let mut res = Resident::new(&st, m);
    let mut ws = Workspace::new(ctx, m.shape()).unwrap();
    res.run(&st, Some(&mut ws), m).unwrap();
    st.synchronize().unwrap();
    let before = ctx.traffic();
    res.run(&st, Some(&mut ws), m).unwrap();
    st.synchronize().unwrap();
    let t = ctx.traffic().since(&before);
    assert_eq!(t.allocations, 0, "a warm call allocated: {t:?}");
    assert_eq!(t.launches, 6, "{t:?}");
    // Only the lengths crossed the bus.
    assert_eq!(t.bytes_uploaded, 4 * m.batch as u64, "{t:?}");
    assert_same(&res.get(&st, m), &host_run(m), "warm call with a workspace");
    // Without a workspace the call makes its own: the allocations the
    // workspace saves.
    let before = ctx.traffic();
    res.run(&st, None, m).unwrap();
    st.synchronize().unwrap();
    assert_eq!(ctx.traffic().since(&before).allocations, 12);
    assert_same(&res.get(&st, m), &host_run(m), "call without a workspace");
}

#[test]
fn warm_call_with_a_workspace_allocates_nothing() {
    let ctx = Context::sim(Sm::Sm80);
    warm_call_allocates_nothing(&ctx, &issue_model(3, 11, 20, 41, true));
}

/// The same on a GPU, or on the driver emulator in CI (SKIP without one).
#[test]
fn gpu_hmm_workspace_warm_call_allocates_nothing() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    let m = if ptxsmith::testing::on_emulator(&ctx) {
        issue_model(3, 9, 20, 42, true)
    } else {
        issue_model(16, 200, 64, 42, true)
    };
    warm_call_allocates_nothing(&ctx, &m);
}

#[test]
fn a_reused_workspace_gives_the_bits_of_a_fresh_one_across_shapes() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    // Capacity 4 × 12 × 40 (48 steps); the calls below: the full shape,
    // smaller S and batch, a longer T over fewer sequences, then the full
    // shape again on other data, each after a call that left its scratch
    // in another layout.
    let mut ws = Workspace::new(&ctx, Shape::new(4, 12, 40).unwrap()).unwrap();
    let models = [
        issue_model(4, 12, 40, 51, true),
        issue_model(3, 7, 33, 52, true),
        issue_model(2, 24, 40, 53, true),
        issue_model(1, 5, 1, 54, false),
        issue_model(4, 12, 40, 55, true),
        issue_model(3, 7, 33, 56, true),
    ];
    for (k, m) in models.iter().enumerate() {
        assert!(ws.fits(m.shape()), "model {k}");
        let got = hmm::forward_backward_on_ws(&st, &mut ws, m.shape(), &m.inputs()).unwrap();
        let fresh = hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
        let what = format!("call {k}: {}x{}x{}", m.batch, m.t, m.s);
        assert_same(&got, &fresh, &what);
        assert_same(&got, &host_run(m), &what);
    }
}

#[test]
fn bytes_for_is_the_formula_and_what_the_workspace_allocates() {
    let ctx = Context::sim(Sm::Sm80);
    for (batch, t, s) in [
        (1, 1, 1),
        (3, 11, 20),
        (2, 7, 16),
        (5, 3, 17),
        (0, 4, 8),
        (2, 0, 3),
    ] {
        let shape = Shape::new(batch, t, s).unwrap();
        let s16 = s.div_ceil(16) * 16;
        let n = batch * t;
        // Each buffer holds at least one element.
        let formula = 4
            * (2 * s16 * s16
                + 6 * s16
                + 4
                + batch.max(1)
                + 6 * n.max(1)
                + 3 * (n * s).max(1)
                + (n * s16).max(1));
        assert_eq!(Workspace::bytes_for(shape), formula, "{shape:?}");
        let before = ctx.traffic();
        let ws = Workspace::new(&ctx, shape).unwrap();
        assert_eq!(ctx.traffic().since(&before).allocations, 12, "{shape:?}");
        assert_eq!(ws.bytes(), formula, "{shape:?}");
        assert_eq!(ws.shape(), shape);
    }
    // The documented table.
    for (batch, t, s, bytes) in [
        (1, 1000, 4, 138_452),
        (8, 1000, 256, 33_490_480),
        (64, 1000, 256, 264_210_704),
        (64, 1000, 1024, 1_058_525_456),
        (16, 100, 4096, 239_212_112),
    ] {
        let shape = Shape::new(batch, t, s).unwrap();
        assert_eq!(Workspace::bytes_for(shape), bytes, "{shape:?}");
    }
}

#[test]
fn a_workspace_that_does_not_fit_is_an_error_naming_both_shapes() {
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let mut ws = Workspace::new(&ctx, Shape::new(2, 10, 8).unwrap()).unwrap();
    // Larger S; more sequences; more steps.
    for (batch, t, s) in [(1, 2, 9), (3, 2, 8), (2, 11, 8)] {
        let m = issue_model(batch, t, s, 61, false);
        assert!(!ws.fits(m.shape()));
        let mut res = Resident::new(&st, &m);
        let before = ctx.traffic();
        let e = res.run(&st, Some(&mut ws), &m).unwrap_err();
        let Error::InvalidArgument(a) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(a.what, "workspace");
        let msg = e.to_string();
        assert!(
            msg.contains("batch = 2, T = 10, S = 8")
                && msg.contains(&format!("batch = {batch}, T = {t}, S = {s}")),
            "{msg}"
        );
        let t = ctx.traffic().since(&before);
        assert_eq!((t.uploads, t.launches, t.allocations), (0, 0, 0), "{t:?}");
        assert!(res.untouched(&st), "{batch}x{t:?}x{s}: outputs written");
        // The slice entry point refuses it the same way.
        let e = hmm::forward_backward_on_ws(&st, &mut ws, m.shape(), &m.inputs()).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(a) if a.what == "workspace"));
    }
}

#[test]
fn a_workspace_of_another_context_is_refused() {
    let (ctx, other) = (Context::sim(Sm::Sm80), Context::sim(Sm::Sm80));
    let st = ctx.default_stream();
    let m = issue_model(2, 5, 6, 71, true);
    let mut ws = Workspace::new(&other, m.shape()).unwrap();
    let mut res = Resident::new(&st, &m);
    let e = res.run(&st, Some(&mut ws), &m).unwrap_err();
    match &e {
        Error::WrongContext { what, owner, used } => {
            assert_eq!(what, "workspace");
            assert_eq!((*owner, *used), (other.id(), ctx.id()));
        }
        _ => panic!("{e:?}"),
    }
    assert!(res.untouched(&st));
}
