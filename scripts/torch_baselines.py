#!/usr/bin/env python3
"""PyTorch baselines on the GPU, for comparing ptxsmith's GPU benches side by
side on the same device in the same device-suite run (scripts/device-suite.sh
runs this after the benches). Prints a Markdown table; needs torch with CUDA.

Every baseline is labelled with how it runs:
  eager     plain PyTorch calls, one kernel (or a few) per op
  graph     the eager calls captured once in a CUDA graph and replayed
  compiled  torch.compile of the same function (the fused kernel a PyTorch
            user gets); "not available" with the reason where it fails

Timing (the same rules as benches/common/timing.rs): three warm-up calls,
then ten calls queued between two CUDA events, per-call time = elapsed / 10;
the median of five such intervals is reported.

Shapes match the benches:
  logcumsumexp  [4096, 4096] f32 (benches/logcumsumexp.rs): the forward eager,
                graph and compiled; the backward alone (torch.autograd.grad of
                a kept forward), and compiled with its forward; the old
                fwd+bwd row (forward, a reduction and its backward), labelled
  hmm           batch 64, T 1000, S 256 (benches/hmm.rs times ptxsmith's whole
                forward-backward): the scaled recursion a competent user
                writes, alpha <- (alpha @ A) * b_t with a normaliser per step
                (torch.matmul; emissions max-shifted once), forward and
                forward-backward with gamma [b, T, S] and xi [b, S, S]
                (expected transition counts summed over t) as ptxsmith returns
                them, eager, captured in a CUDA graph, and with the step
                torch.compile'd; and the old, weak baseline (logsumexp of a
                [b, S, S] broadcast sum per step), labelled "old, weak"
  viterbi       batch 64, T 1000, S 256 and S 4096 (benches/viterbi.rs): the
                max-product recursion a competent user writes, per step
                (delta[:, :, None] + log_a).max(dim=1) (the first maximal
                state on ties, as ptxsmith's contract) with the backpointers
                kept, then the backtrack by one gather a step; eager,
                captured in a CUDA graph (S 256), and with the step
                torch.compile'd (the add fused into the reduction)
  score GEMM    the bench's shape: x [4096, 256] @ D^T [256, 16384] (rows 4096,
                K 16384, P 256; benches/score_kernels.rs), fp32 with TF32 off
  fp8           256 Mi f32 -> float8_e4m3fn and back (benches/fp8_kernels.rs):
                the plain casts, and quantize-with-amax (current scaling) and
                dequantize eager, graph and compiled
  block-scaled  [16384, 8192] f32 (benches/block_scaled.rs): torchao's MXFP8,
                MXFP4 and NVFP4 quantizers and dequantizers where torchao is
                installed (eager and compiled), else a "not available" line
  block-ELL     the dense layer of benches/block_ell.rs: x [4096, 2048] @ W^T
                [2048, 2048], forward and both grads, in fp32 (TF32 off),
                TF32 (allow_tf32 on) and bf16, each eager, graph and compiled:
                the bars of the tensor-core block-ELL goals (issue 31)

`--selftest` runs the logcumsumexp, HMM and Viterbi baselines' functions on
tiny CPU shapes against float64 references (log-domain recursions; every path
enumerated for Viterbi) (no GPU needed; needs torch).
"""
import statistics
import sys

WARMUP = 3
QUEUED = 10
REPS = 5


def timed(fn, queued=QUEUED, reps=REPS):
    """Per-call seconds: warm-up, then `queued` calls between two CUDA events."""
    import torch

    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(queued):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / queued)
    return statistics.median(times)


def graphed(fn):
    """`fn` captured in a CUDA graph: returns the replay function."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(WARMUP):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


class Table:
    """Rows printed as soon as they are measured (a step timeout of the
    device suite then keeps what ran)."""

    def __init__(self):
        print("\n| baseline | how | time | rate |\n|---|---|---:|---:|", flush=True)

    def add(self, label, how, secs, rate=None, unit=""):
        r = f"{rate:.1f} {unit}" if rate is not None else "–"
        print(f"| {label} | {how} | {secs * 1e3:.3f} ms | {r} |", flush=True)

    def na(self, label, how, why):
        why = " ".join(str(why).split())[:160]
        print(f"| {label} | {how} | – | not available: {why} |", flush=True)

    def run(self, label, how, fn, rate_of=None, unit="", queued=QUEUED, reps=REPS):
        """Time `fn` (made by a thunk, so that building it may fail too)."""
        try:
            f = fn()
            secs = timed(f, queued=queued, reps=reps)
        except Exception as e:  # noqa: BLE001 - any failure is reported, not raised
            self.na(label, how, f"{type(e).__name__}: {e}")
            return None
        self.add(label, how, secs, rate_of(secs) if rate_of else None, unit)
        return secs


def compiled(fn):
    import torch

    c = torch.compile(fn)
    return c


def logcumsumexp(t, dev):
    import torch

    x = torch.randn(4096, 4096, device=dev) * 10
    gbps = lambda s: 2 * x.numel() * 4 / s / 1e9  # noqa: E731
    gbps_b = lambda s: 3 * x.numel() * 4 / s / 1e9  # noqa: E731 - x, g in, gx out
    label = "torch.logcumsumexp fwd [4096,4096]"
    t.run(label, "eager", lambda: lambda: torch.logcumsumexp(x, dim=1), gbps, "GB/s")
    t.run(label, "graph", lambda: graphed(lambda: torch.logcumsumexp(x, dim=1)), gbps, "GB/s")
    t.run(
        label,
        "compiled",
        lambda: (lambda f: lambda: f(x))(compiled(lambda v: torch.logcumsumexp(v, dim=1))),
        gbps,
        "GB/s",
    )
    xg = x.clone().requires_grad_(True)
    g = torch.randn_like(x)
    # The backward alone: the forward's graph is kept, each call runs only
    # logcumsumexp's backward (12 B/element at the least: x, g in, gx out;
    # PyTorch's formula also reads y).
    y = torch.logcumsumexp(xg, dim=1)
    label_b = "torch.logcumsumexp bwd alone [4096,4096] (autograd.grad(y, x, g))"
    t.run(
        label_b,
        "eager",
        lambda: lambda: torch.autograd.grad(y, xg, g, retain_graph=True),
        gbps_b,
        "GB/s at 12 B/elem",
    )

    def compiled_bwd():
        # torch.compile'd forward; AOTAutograd compiles its backward too.
        f = compiled(lambda v: torch.logcumsumexp(v, dim=1))
        return lambda: torch.autograd.grad(f(xg), xg, g)

    t.run(
        "torch.logcumsumexp fwd+bwd [4096,4096] (forward recomputed)",
        "compiled",
        compiled_bwd,
        gbps_b,
        "GB/s at 12 B/elem",
    )

    def fwd_bwd():
        yy = torch.logcumsumexp(xg, dim=1)
        (yy * g).sum().backward()

    t.run("torch.logcumsumexp fwd+bwd [4096,4096] (old: with a reduction and its backward)", "eager", lambda: fwd_bwd)


# ---- HMM --------------------------------------------------------------------
#
# The scaled recursion (Rabiner): with A = exp(log_a), the emissions
# max-shifted per step, b_t = exp(log_b_t - max_i log_b_t[i]),
#   alpha_0 = pi * b_0,              c_0 = sum alpha_0, alpha_0 /= c_0
#   alpha_t = (alpha_{t-1} @ A) * b_t, c_t = sum alpha_t, alpha_t /= c_t
#   log p(x) = sum_t (log c_t + max log_b_t)
# backward with the same normalisers:
#   beta_{T-1} = 1, beta_t = ((b_{t+1} * beta_{t+1}) @ A^T) / c_{t+1}
# then gamma_t = alpha_t * beta_t (sums to 1) and the expected transition
# counts xi[i][j] = A[i][j] * sum_t alpha_t[i] (b_{t+1} beta_{t+1})[j] / c_{t+1}
# (one batched matmul over t): gamma [b, T, S] and xi [b, S, S] as ptxsmith
# returns them (the log-domain alpha and beta are not formed).


def hmm_inputs(b, T, S, dev, dtype=None):
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    kw = {"dtype": dtype or torch.float32}
    log_a = torch.log_softmax(torch.randn(S, S, generator=gen, **kw), dim=1).to(dev)
    log_b = torch.log_softmax(torch.randn(b, T, S, generator=gen, **kw), dim=2).to(dev)
    log_pi = torch.log_softmax(torch.randn(S, generator=gen, **kw), dim=0).to(dev)
    return log_pi, log_a, log_b


def hmm_scaled_step(alpha, a, bt):
    """One scaled forward step: (alpha @ A) * b_t, normalised."""
    import torch

    v = torch.matmul(alpha, a) * bt
    c = v.sum(dim=1, keepdim=True)
    return v / c, c


def hmm_scaled_prep(log_pi, log_a, log_b):
    import torch

    mb = log_b.amax(dim=2, keepdim=True)
    return torch.exp(log_pi), torch.exp(log_a), torch.exp(log_b - mb), mb


def hmm_scaled_forward(log_pi, log_a, log_b, step=hmm_scaled_step):
    """Log-likelihood [b] and the normalised alphas [b, T, S], scales [b, T, 1]."""
    import torch

    pi, a, eb, mb = hmm_scaled_prep(log_pi, log_a, log_b)
    T = log_b.shape[1]
    alpha = pi * eb[:, 0]
    c = alpha.sum(dim=1, keepdim=True)
    alpha = alpha / c
    alphas, cs = [alpha], [c]
    for t in range(1, T):
        alpha, c = step(alpha, a, eb[:, t])
        alphas.append(alpha)
        cs.append(c)
    cs = torch.stack(cs, dim=1)
    ll = (torch.log(cs) + mb).sum(dim=(1, 2))
    return ll, torch.stack(alphas, dim=1), cs, a, eb


def hmm_scaled_forward_backward(log_pi, log_a, log_b, step=hmm_scaled_step):
    """(log-likelihood [b], gamma [b, T, S], xi [b, S, S])."""
    import torch

    ll, alphas, cs, a, eb = hmm_scaled_forward(log_pi, log_a, log_b, step)
    T = log_b.shape[1]
    at = a.t()
    beta = torch.ones_like(alphas[:, 0])
    betas = [beta]
    for t in range(T - 2, -1, -1):
        beta, _ = hmm_backward_step(beta, at, eb[:, t + 1], cs[:, t + 1])
        betas.append(beta)
    betas = torch.stack(betas[::-1], dim=1)
    gamma = alphas * betas
    w = eb[:, 1:] * betas[:, 1:] / cs[:, 1:]
    xi = torch.matmul(alphas[:, :-1].transpose(1, 2), w) * a
    return ll, gamma, xi


def hmm_backward_step(beta, at, bt1, ct1):
    import torch

    return torch.matmul(bt1 * beta, at) / ct1, None


def hmm_weak_forward(log_pi, log_a, log_b):
    """The old, weak baseline: logsumexp of a [b, S, S] broadcast sum per step."""
    import torch

    alpha = log_pi + log_b[:, 0]
    for step in range(1, log_b.shape[1]):
        alpha = torch.logsumexp(alpha[:, :, None] + log_a[None], dim=1) + log_b[:, step]
    return torch.logsumexp(alpha, dim=1)


def hmm(t, dev):
    import torch

    b, T, S = 64, 1000, 256
    log_pi, log_a, log_b = hmm_inputs(b, T, S, dev)
    terms = lambda s: b * T * S * S / s / 1e9  # noqa: E731
    unit = "G B·T·S² terms/s"
    slow = {"queued": 1, "reps": 3}
    fwd = lambda: hmm_scaled_forward(log_pi, log_a, log_b)[0]  # noqa: E731
    fb = lambda: hmm_scaled_forward_backward(log_pi, log_a, log_b)  # noqa: E731
    lf = f"torch HMM forward (scaled, matmul) b{b} T{T} S{S}"
    lfb = f"torch HMM forward-backward + gamma + xi (scaled, matmul) b{b} T{T} S{S}"
    t.run(lf, "eager", lambda: fwd, terms, unit, **slow)
    t.run(lfb, "eager", lambda: fb, terms, unit, **slow)
    t.run(lf, "graph", lambda: graphed(fwd), terms, unit, **slow)
    t.run(lfb, "graph", lambda: graphed(fb), terms, unit, **slow)

    def with_compiled_step(whole):
        step = compiled(hmm_scaled_step)
        if whole:
            return lambda: hmm_scaled_forward_backward(log_pi, log_a, log_b, step)
        return lambda: hmm_scaled_forward(log_pi, log_a, log_b, step)[0]

    t.run(lf, "compiled step", lambda: with_compiled_step(False), terms, unit, **slow)
    t.run(lfb, "compiled step", lambda: with_compiled_step(True), terms, unit, **slow)
    t.run(
        f"torch HMM forward b{b} T{T} S{S} (old, weak: logsumexp of a broadcast sum)",
        "eager",
        lambda: lambda: hmm_weak_forward(log_pi, log_a, log_b),
        terms,
        unit,
        **slow,
    )


def viterbi_step(delta, log_a, bt):
    """One max-product step: the best predecessor of every state (the first
    on ties) and the new scores."""
    v, i = (delta[:, :, None] + log_a[None]).max(dim=1)
    return v + bt, i


def viterbi_decode(log_pi, log_a, log_b, step=viterbi_step):
    """Best paths [b, T] and their scores [b] (every sequence of length T)."""
    import torch

    b, T, S = log_b.shape
    delta = log_pi[None] + log_b[:, 0]
    bps = []
    for s in range(1, T):
        delta, i = step(delta, log_a, log_b[:, s])
        bps.append(i)
    score, last = delta.max(dim=1)
    path = [last]
    for i in reversed(bps):
        last = i.gather(1, last[:, None])[:, 0]
        path.append(last)
    return score, torch.stack(path[::-1], 1)


def viterbi(t, dev):
    unit = "G B·T·S² terms/s"
    for S, slow in ((256, {"queued": 1, "reps": 3}), (4096, {"queued": 1, "reps": 1})):
        b, T = 64, 1000
        log_pi, log_a, log_b = hmm_inputs(b, T, S, dev)
        terms = lambda s, S=S, b=b, T=T: b * T * S * S / s / 1e9  # noqa: E731
        dec = lambda lp=log_pi, la=log_a, lb=log_b: viterbi_decode(lp, la, lb)  # noqa: E731
        label = f"torch Viterbi (max-product, backtrack by gather) b{b} T{T} S{S}"
        t.run(label, "eager", lambda dec=dec: dec, terms, unit, **slow)
        if S <= 256:
            # the [b, S, S] step temporaries of S 4096 (4 GiB each) would
            # stay in the graph's pool for all T steps
            t.run(label, "graph", lambda dec=dec: graphed(dec), terms, unit, **slow)

        def with_compiled_step(lp=log_pi, la=log_a, lb=log_b):
            step = compiled(viterbi_step)
            return lambda: viterbi_decode(lp, la, lb, step)

        t.run(label, "compiled step", with_compiled_step, terms, unit, **slow)
        del log_pi, log_a, log_b


def selftest():
    """The baselines' functions on tiny CPU shapes against log-domain
    references in float64 (no GPU)."""
    import torch

    torch.manual_seed(0)
    b, T, S = 3, 7, 5
    log_pi, log_a, log_b = hmm_inputs(b, T, S, "cpu", torch.float64)
    # log-domain reference: alpha and beta by logsumexp
    la = [log_pi + log_b[:, 0]]
    for s in range(1, T):
        la.append(torch.logsumexp(la[-1][:, :, None] + log_a[None], dim=1) + log_b[:, s])
    lb = [torch.zeros(b, S, dtype=torch.float64)]
    for s in range(T - 2, -1, -1):
        lb.append(torch.logsumexp(log_a[None] + (log_b[:, s + 1] + lb[-1])[:, None, :], dim=2))
    lb = lb[::-1]
    la, lb = torch.stack(la, 1), torch.stack(lb, 1)
    ll_ref = torch.logsumexp(la[:, -1], dim=1)
    gamma_ref = torch.exp(la + lb - ll_ref[:, None, None])
    xi_ref = torch.zeros(b, S, S, dtype=torch.float64)
    for s in range(T - 1):
        xi_ref += torch.exp(
            la[:, s, :, None] + log_a[None] + (log_b[:, s + 1] + lb[:, s + 1])[:, None, :] - ll_ref[:, None, None]
        )
    ll, gamma, xi = hmm_scaled_forward_backward(log_pi, log_a, log_b)
    ll_f = hmm_scaled_forward(log_pi, log_a, log_b)[0]
    ll_w = hmm_weak_forward(log_pi, log_a, log_b)
    errs = {
        "ll (forward)": (ll_f - ll_ref).abs().max().item(),
        "ll (forward-backward)": (ll - ll_ref).abs().max().item(),
        "ll (old, weak)": (ll_w - ll_ref).abs().max().item(),
        "gamma": (gamma - gamma_ref).abs().max().item(),
        "xi": (xi - xi_ref).abs().max().item(),
    }
    # logcumsumexp backward alone against the closed form
    x = torch.randn(4, 33, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, 33, dtype=torch.float64)
    y = torch.logcumsumexp(x, dim=1)
    (gx,) = torch.autograd.grad(y, x, g, retain_graph=True)
    gx_ref = torch.exp(x) * torch.flip(torch.cumsum(torch.flip(g * torch.exp(-y), [1]), 1), [1])
    errs["logcumsumexp bwd"] = (gx - gx_ref).abs().max().item()
    # Viterbi against every path enumerated
    import itertools

    vb, vT, vS = 3, 4, 3
    lp, la, lb = hmm_inputs(vb, vT, vS, "cpu", torch.float64)
    score, path = viterbi_decode(lp, la, lb)
    worst, wrong = 0.0, 0
    for q in range(vb):
        best = max(
            itertools.product(range(vS), repeat=vT),
            key=lambda p: lp[p[0]] + lb[q, 0, p[0]] + sum(la[p[s - 1], p[s]] + lb[q, s, p[s]] for s in range(1, vT)),
        )
        ref = lp[best[0]] + lb[q, 0, best[0]] + sum(la[best[s - 1], best[s]] + lb[q, s, best[s]] for s in range(1, vT))
        worst = max(worst, abs(score[q].item() - ref.item()))
        wrong += int(tuple(path[q].tolist()) != best)
    errs["viterbi score"] = worst
    errs["viterbi paths wrong"] = float(wrong)
    ok = True
    for k, e in errs.items():
        good = e < 1e-9
        ok &= good
        print(f"selftest {k}: max |err| {e:.3g} {'ok' if good else 'FAILED'}")
    print("selftest: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def score_gemm(t, dev):
    import torch

    rows, k, p = 4096, 16384, 256
    xs = torch.randn(rows, p, device=dev)
    d = torch.randn(k, p, device=dev)
    tf = lambda s: 2 * rows * k * p / s / 1e12  # noqa: E731
    torch.backends.cuda.matmul.allow_tf32 = False
    t.run(f"torch.mm fp32 (TF32 off) x[{rows},{p}] @ D^T[{p},{k}]", "eager", lambda: lambda: xs @ d.T, tf, "TFLOP/s")


def dense_layer(t, dev):
    import torch

    n, fin, fout = 4096, 2048, 2048
    flops = 2 * n * fin * fout
    tf = lambda s: flops / s / 1e12  # noqa: E731
    for dtype, tf32, name in [
        (torch.float32, False, "fp32 (TF32 off)"),
        (torch.float32, True, "TF32"),
        (torch.bfloat16, False, "bf16"),
    ]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        xl = torch.randn(n, fin, device=dev, dtype=dtype)
        w = torch.randn(fout, fin, device=dev, dtype=dtype)
        gy = torch.randn(n, fout, device=dev, dtype=dtype)
        ops = [
            (f"dense layer fwd x@W^T {n}x{fin}x{fout} {name}", lambda a, b: a @ b.T, (xl, w)),
            (f"dense layer grad-input gy@W {name}", lambda a, b: a @ b, (gy, w)),
            (f"dense layer grad-weight gy^T@x {name}", lambda a, b: a.T @ b, (gy, xl)),
        ]
        # Each op eager, replayed from a CUDA graph, and torch.compile'd
        # (the same three labels as the other baselines), in the same run.
        for label, op, (a, b) in ops:
            t.run(label, "eager", lambda op=op, a=a, b=b: lambda: op(a, b), tf, "TFLOP/s")
            t.run(label, "graph", lambda op=op, a=a, b=b: graphed(lambda: op(a, b)), tf, "TFLOP/s")
            t.run(
                label,
                "compiled",
                lambda op=op, a=a, b=b: (lambda f: lambda: f(a, b))(compiled(op)),
                tf,
                "TFLOP/s",
            )
    torch.backends.cuda.matmul.allow_tf32 = False


def fp8(t, dev):
    import torch

    if not hasattr(torch, "float8_e4m3fn"):
        t.na("fp8 casts", "eager", "torch has no float8_e4m3fn")
        return
    e4m3 = torch.float8_e4m3fn
    fmax = torch.finfo(e4m3).max
    big = torch.randn(256 * 2**20, device=dev)
    n = big.numel()
    gbps = lambda b: lambda s: n * b / s / 1e9  # noqa: E731
    t.run("f32 -> e4m3 cast 256 Mi (no scaling), 5 B/elem", "eager", lambda: lambda: big.to(e4m3), gbps(5), "GB/s")
    q = big.to(e4m3)
    t.run("e4m3 -> f32 cast 256 Mi, 5 B/elem", "eager", lambda: lambda: q.to(torch.float32), gbps(5), "GB/s")

    def quant_amax(x):
        amax = x.abs().amax()
        scale = fmax / torch.clamp(amax, min=1e-12)
        return (x * scale).clamp(-fmax, fmax).to(e4m3), scale.reciprocal()

    def dequant(codes, scale_inv):
        return codes.to(torch.float32) * scale_inv

    s_inv = torch.tensor(2.0, device=dev)
    label_q = "fp8 quantize with amax (current scaling) 256 Mi, 9 B/elem"
    label_d = "fp8 dequantize 256 Mi, 5 B/elem"
    t.run(label_q, "eager", lambda: lambda: quant_amax(big), gbps(9), "GB/s")
    t.run(label_d, "eager", lambda: lambda: dequant(q, s_inv), gbps(5), "GB/s")
    t.run(label_q, "graph", lambda: graphed(lambda: quant_amax(big)), gbps(9), "GB/s")
    t.run(label_d, "graph", lambda: graphed(lambda: dequant(q, s_inv)), gbps(5), "GB/s")
    t.run(label_q, "compiled", lambda: (lambda f: lambda: f(big))(compiled(quant_amax)), gbps(9), "GB/s")
    t.run(label_d, "compiled", lambda: (lambda f: lambda: f(q, s_inv))(compiled(dequant)), gbps(5), "GB/s")


def block_scaled(t, dev):
    """torchao's MX and NVFP4 quantizers, where torchao is installed."""
    import torch

    m, k = 16384, 8192
    try:
        import torchao  # noqa: F401
        from torchao.prototype.mx_formats.mx_tensor import MXTensor
    except Exception as e:  # noqa: BLE001
        t.na("torchao MXFP8/MXFP4/NVFP4 quantize and dequantize", "eager/compiled", f"torchao: {e}")
        return
    x = torch.randn(m, k, device=dev)
    n = x.numel()
    gbps = lambda b: lambda s: n * b / s / 1e9  # noqa: E731
    fp4 = getattr(torch, "float4_e2m1fn_x2", None)
    try:
        from torchao.prototype.mx_formats.constants import DTYPE_FP4

        fp4 = DTYPE_FP4
    except Exception:  # noqa: BLE001
        pass
    # (name, element dtype, block, bytes per element quantize = 4 in + codes + scales)
    formats = [("MXFP8 E4M3", torch.float8_e4m3fn, 32, 1.0 + 1 / 32)]
    if fp4 is not None:
        formats.append(("MXFP4", fp4, 32, 0.5 + 1 / 32))
    else:
        t.na("torchao MXFP4", "eager/compiled", "no FP4 element dtype in this torch/torchao")
    for name, elem, block, out_b in formats:
        to_mx = lambda v, elem=elem, block=block: MXTensor.to_mx(v, elem, block)  # noqa: E731
        t.run(f"torchao {name} quantize [{m},{k}]", "eager", lambda to_mx=to_mx: lambda: to_mx(x), gbps(4 + out_b), "GB/s")
        t.run(
            f"torchao {name} quantize [{m},{k}]",
            "compiled",
            lambda to_mx=to_mx: (lambda f: lambda: f(x))(compiled(to_mx)),
            gbps(4 + out_b),
            "GB/s",
        )
        try:
            mx = to_mx(x)
            deq = lambda v: v.to_dtype(torch.float32)  # noqa: E731
            t.run(f"torchao {name} dequantize [{m},{k}]", "eager", lambda mx=mx: lambda: deq(mx), gbps(4 + out_b), "GB/s")
            t.run(
                f"torchao {name} dequantize [{m},{k}]",
                "compiled",
                lambda mx=mx: (lambda f: lambda: f(mx))(compiled(deq)),
                gbps(4 + out_b),
                "GB/s",
            )
        except Exception as e:  # noqa: BLE001
            t.na(f"torchao {name} dequantize", "eager/compiled", f"{type(e).__name__}: {e}")
    try:
        from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor
    except Exception as e:  # noqa: BLE001
        t.na("torchao NVFP4 quantize and dequantize", "eager/compiled", f"{type(e).__name__}: {e}")
        return
    nv_b = 4 + 0.5 + 1 / 16
    t.run(f"torchao NVFP4 quantize [{m},{k}]", "eager", lambda: lambda: NVFP4Tensor.to_nvfp4(x), gbps(nv_b), "GB/s")
    t.run(
        f"torchao NVFP4 quantize [{m},{k}]",
        "compiled",
        lambda: (lambda f: lambda: f(x))(compiled(lambda v: NVFP4Tensor.to_nvfp4(v))),
        gbps(nv_b),
        "GB/s",
    )
    try:
        nv = NVFP4Tensor.to_nvfp4(x)
        t.run(
            f"torchao NVFP4 dequantize [{m},{k}]",
            "eager",
            lambda: lambda: nv.to_dtype(torch.float32),
            gbps(nv_b),
            "GB/s",
        )
    except Exception as e:  # noqa: BLE001
        t.na("torchao NVFP4 dequantize", "eager", f"{type(e).__name__}: {e}")


def main():
    try:
        import torch
    except ImportError as e:
        print(f"torch baselines: PyTorch not importable ({e})")
        return 1
    if "--selftest" in sys.argv[1:]:
        return selftest()
    if not torch.cuda.is_available():
        print("torch baselines: torch.cuda.is_available() is False")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    print(f"torch baselines on {name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    try:
        import torchao

        print(f"torchao {getattr(torchao, '__version__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"torchao not available: {type(e).__name__}: {e}")
    t = Table()
    # Viterbi last: its S 4096 rows take the longest (the step has a 420 s budget)
    for part in (logcumsumexp, hmm, score_gemm, dense_layer, fp8, block_scaled, viterbi):
        try:
            part(t, dev)
        except Exception as e:  # noqa: BLE001 - one failing part must not hide the others
            t.na(part.__name__, "–", f"{type(e).__name__}: {e}")
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
