// NVRTC 12.9 source of tests/data/ptx/nvrtc_printf_assert.ptx (compute_80,
// optimised): printf and assert with their strings in module `.global`
// arrays, as real code has them.
extern "C" __device__ void __assertfail(const char *, const char *, unsigned, const char *, unsigned long);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__, 1))
extern "C" __global__ void k(int *out, int limit) {
  int t = threadIdx.x;
  out[t] = 2 * t;
  printf("t%d b=%.1f\n", t, t * 0.5f);
  assert(t < limit);
}
