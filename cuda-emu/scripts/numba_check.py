"""Numba kernels on the CUDA driver emulator (run by numba-check.sh).

Four kernels as a Numba user writes them: an element-wise kernel indexed
with `cuda.grid`, a shared-memory block reduction with `cuda.syncthreads`,
an atomic add, and a kernel that prints. Each runs on the emulator (the
libcuda.so.1 on LD_LIBRARY_PATH) and its result is compared with the one
computed on the host. Prints one line per kernel (PASS, or FAIL with the
cause) and the counts; exit status 0 when all pass, 1 otherwise.
"""

import sys
import traceback

import numpy as np
from numba import cuda


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sum(x, out):
    tile = cuda.shared.array(128, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.size else np.float32(0)
    cuda.syncthreads()
    step = 64
    while step > 0:
        if t < step:
            tile[t] += tile[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = tile[0]


@cuda.jit
def count_odd(x, counter):
    i = cuda.grid(1)
    if i < x.size and x[i] % 2 == 1:
        cuda.atomic.add(counter, 0, 1)


@cuda.jit
def hello(n):
    i = cuda.grid(1)
    if i < n:
        print("hello from thread", i)


def check_axpy():
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, dtype=np.float32)
    out = cuda.device_array(n, dtype=np.float32)
    axpy[(n + 127) // 128, 128](np.float32(2.0), cuda.to_device(x), cuda.to_device(y), out)
    got = out.copy_to_host()
    want = np.float32(2.0) * x + y
    assert np.array_equal(got, want), f"axpy: {got[:4]} vs {want[:4]}"


def check_block_sum():
    n = 1000
    x = np.arange(n, dtype=np.float32) % 7
    blocks = (n + 127) // 128
    out = cuda.device_array(blocks, dtype=np.float32)
    block_sum[blocks, 128](cuda.to_device(x), out)
    got = out.copy_to_host()
    want = np.array([x[b * 128:(b + 1) * 128].sum() for b in range(blocks)], dtype=np.float32)
    assert np.array_equal(got, want), f"block sums {got} vs {want}"


def check_atomic():
    n = 1000
    x = np.arange(n, dtype=np.int32)
    counter = cuda.to_device(np.zeros(1, dtype=np.int32))
    count_odd[(n + 127) // 128, 128](cuda.to_device(x), counter)
    got = int(counter.copy_to_host()[0])
    assert got == 500, f"atomic count {got} vs 500"


def check_print():
    # The emulator writes printf output to the process's stdout (file
    # descriptor 1) when the launch ends: catch it there and compare.
    import os
    import tempfile

    sys.stdout.flush()
    with tempfile.TemporaryFile() as f:
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            hello[1, 4](4)
            cuda.synchronize()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        out = f.read().decode()
    sys.stdout.write(out)
    want = "".join(f"hello from thread {i}\n" for i in range(4))
    assert out == want, f"printed {out!r} vs {want!r}"


CHECKS = [
    ("cuda.grid element-wise", check_axpy),
    ("shared-memory reduction", check_block_sum),
    ("atomic add", check_atomic),
    ("print", check_print),
]


def main():
    passed, failed = 0, []
    for name, check in CHECKS:
        try:
            check()
            cuda.synchronize()
            print(f"PASS {name}", flush=True)
            passed += 1
        except Exception as e:  # noqa: BLE001 - report every failure
            cause = f"{type(e).__name__}: {e}".strip().splitlines()
            print(f"FAIL {name}: {' | '.join(cause)[:600]}", flush=True)
            if "-v" in sys.argv:
                traceback.print_exc()
            failed.append(name)
    print(f"numba-cuda kernels on the emulator: {passed} passed, {len(failed)} failed")
    for name in failed:
        print(f"  failed: {name}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
