#!/usr/bin/env python3
"""PyTorch baselines on the GPU, for comparing ptxsmith's GPU benches side by
side on the same device in the same device-suite run (scripts/device-suite.sh
runs this after the benches). Prints a Markdown table; needs torch with CUDA.

Shapes match the benches:
  logcumsumexp  [4096, 4096] f32, forward and backward (benches/logcumsumexp.rs)
  hmm forward   batch 64, T 1000, S 256: logsumexp of a broadcast sum per step
                (benches/hmm.rs times ptxsmith's whole forward-backward)
  score GEMM    x [4096, 2048] @ D^T [2048, 8192], TF32 off (benches/score_kernels.rs)
  fp8 cast      256 Mi f32 -> float8_e4m3fn and back (benches/fp8_kernels.rs)
  block-ELL     the dense layer of benches/block_ell.rs: x [4096, 2048] @ W^T
                [2048, 2048], TF32 off, forward and both weight/input grads
"""
import sys
import time


def timed(fn, reps=10):
    import torch

    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def main():
    try:
        import torch
    except ImportError as e:
        print(f"torch baselines: PyTorch not importable ({e})")
        return 1
    if not torch.cuda.is_available():
        print("torch baselines: torch.cuda.is_available() is False")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    print(f"torch baselines on {name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    rows = []

    x = torch.randn(4096, 4096, device=dev) * 10
    t = timed(lambda: torch.logcumsumexp(x, dim=1))
    rows.append(("torch.logcumsumexp fwd [4096,4096]", t, 2 * x.numel() * 4 / t / 1e9, "GB/s"))
    xg = x.clone().requires_grad_(True)
    g = torch.randn_like(x)

    def fwd_bwd():
        y = torch.logcumsumexp(xg, dim=1)
        (y * g).sum().backward()

    t = timed(fwd_bwd)
    rows.append(("torch.logcumsumexp fwd+bwd [4096,4096]", t, None, ""))

    b, T, S = 64, 1000, 256
    log_a = torch.log_softmax(torch.randn(S, S, device=dev), dim=1)
    log_b = torch.log_softmax(torch.randn(b, T, S, device=dev), dim=2)
    log_pi = torch.log_softmax(torch.randn(S, device=dev), dim=0)

    def hmm_forward():
        alpha = log_pi + log_b[:, 0]
        for step in range(1, T):
            alpha = torch.logsumexp(alpha[:, :, None] + log_a[None], dim=1) + log_b[:, step]
        return torch.logsumexp(alpha, dim=1)

    t = timed(hmm_forward, reps=3)
    rows.append(("torch HMM forward b64 T1000 S256", t, b * T * S * S / t / 1e9, "G terms/s"))

    xs = torch.randn(4096, 2048, device=dev)
    d = torch.randn(8192, 2048, device=dev)
    t = timed(lambda: xs @ d.T)
    rows.append(("torch.mm f32 (TF32 off) 4096x2048x8192", t, 2 * 4096 * 2048 * 8192 / t / 1e12, "TFLOP/s"))

    xl = torch.randn(4096, 2048, device=dev)
    w = torch.randn(2048, 2048, device=dev)
    gy = torch.randn(4096, 2048, device=dev)
    flops = 2 * 4096 * 2048 * 2048
    t = timed(lambda: xl @ w.T)
    rows.append(("torch dense layer fwd x@W^T 4096x2048x2048", t, flops / t / 1e12, "TFLOP/s"))
    t = timed(lambda: gy @ w)
    rows.append(("torch dense layer grad-input gy@W", t, flops / t / 1e12, "TFLOP/s"))
    t = timed(lambda: gy.T @ xl)
    rows.append(("torch dense layer grad-weight gy^T@x", t, flops / t / 1e12, "TFLOP/s"))

    if hasattr(torch, "float8_e4m3fn"):
        big = torch.randn(256 * 2**20, device=dev)
        t = timed(lambda: big.to(torch.float8_e4m3fn))
        rows.append(("torch f32 -> e4m3 cast 256 Mi", t, big.numel() * 5 / t / 1e9, "GB/s"))
        q = big.to(torch.float8_e4m3fn)
        t = timed(lambda: q.to(torch.float32))
        rows.append(("torch e4m3 -> f32 cast 256 Mi", t, big.numel() * 5 / t / 1e9, "GB/s"))

    print("\n| baseline | time | rate |\n|---|---:|---:|")
    for label, secs, rate, unit in rows:
        r = f"{rate:.1f} {unit}" if rate is not None else "–"
        print(f"| {label} | {secs * 1e3:.3f} ms | {r} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
