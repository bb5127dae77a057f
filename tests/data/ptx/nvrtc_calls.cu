// NVRTC 12.9 source of tests/data/ptx/nvrtc_calls_{O3,G}.ptx (tests/sim_call.rs),
// compiled for compute_80 with and without -G: device functions (scalar,
// struct by value, nested), printf with a format string passed in memory,
// and __assertfail.
extern "C" __device__ void __assertfail(const char *, const char *, unsigned, const char *, unsigned long);
struct P { int a; float b; long long c; };
__device__ __noinline__ int add(int a, int b) { return a + b; }
__device__ __noinline__ P twist(P p, int k) { if (k == 0) return p; int buf[4]; buf[k & 3] = p.a * k; return P{buf[k & 3], p.b, p.c + p.a}; }
__device__ __noinline__ int sq(int x) { return x * x; }
__device__ __noinline__ int sumsq(int a, int b) { return sq(a) + sq(b); }
extern "C" __global__ void k(int *out, long long *out2, const char *text, int limit) {
  int t = threadIdx.x;
  int r = add(t, 3 * t);
  if (t & 1) r += sumsq(t, 2);
  P p = twist(P{t, 1.5f, 1000}, t % 3);
  out[t] = r + p.a;
  out2[t] = p.c;
  printf(text, t, r, p.b, p.c);
  if (t >= limit) __assertfail(text + 64, text + 96, 7, text + 112, 1);
}
