//! Exact-by-construction f32 `exp`, `log`, `log1p` and `log_add_exp`: the
//! host mirror and the specification of the DSL routines in
//! [`crate::dsl::math`].
//!
//! Each function here is written as straight-line f32 code in which every
//! step is one IEEE operation that PTX has with the same rounding:
//! `a.mul_add(b, c)` is `fma.rn.f32`, `a + b` / `a - b` / `a * b` are
//! `add.rn` / `sub.rn` / `mul.rn`, [`ptx_max`] / [`ptx_min`] /
//! [`ptx_max_nan`] are `max.f32` / `min.f32` / `max.NaN.f32` (PTX's rules
//! for NaN operands and signed zeros), `-x.abs()` is `abs` + `neg`,
//! `to_bits` / `from_bits` are `mov.b32`, an `if c { a } else { b }` on
//! values is `setp` + `selp`, and integer steps are the PTX integer
//! instructions (`add`, `sub`, `and`, `shl`, `shr.s32`, `min.s32`). There is
//! no f64, no division, no square root, no library call and no table
//! anywhere, and the code has no data-dependent branch.
//! [`crate::dsl::math`] emits the very same operations in the very same
//! order, so the kernels give these functions' results bit for bit (NaN
//! payloads aside: every NaN is just "a NaN"); `tests/math_sim.rs` checks
//! that on the simulator. Rust never contracts `a * b + c` into an FMA, so
//! the host code computes exactly what it spells.
//!
//! # Contract
//!
//! * [`exp_f32`], [`log_f32`], [`log1p_f32`] are within **1 ulp** of the
//!   correctly rounded result for **every** f32 input (the bit pattern of
//!   the result is at most 1 away from the correctly rounded one, counted in
//!   the ordered integer encoding of f32). Measured over all 2^32 inputs
//!   against the correctly rounded CORE-MATH functions (the `core-math`
//!   crate) by `tests/math_exhaustive.rs`:
//!
//!   | function | max error | correctly rounded (of 2^32) | at 1 ulp | correctly rounded, nontrivial inputs |
//!   | --- | --- | --- | --- | --- |
//!   | `exp_f32` | 1 ulp | 4 292 507 324 (99.9427 %) | 2 459 972 | 99.5271 % of 520 184 780 |
//!   | `log_f32` | 1 ulp | 4 294 593 210 (99.9913 %) | 374 086 | 99.9825 % of 2 139 095 037 |
//!   | `log1p_f32` | 1 ulp | 4 294 376 389 (99.9862 %) | 590 907 | 99.9598 % of 1 469 445 655 |
//!
//!   "Nontrivial" inputs are those whose correctly rounded result is
//!   finite, non-zero, not 1 and not the input itself (most of the 2^32
//!   inputs are NaN, saturate, or are tiny). Command:
//!   `cargo test --release --test math_exhaustive -- --ignored --nocapture`
//!   (2 threads per sweep; on the 2-core development machine about 45 s
//!   for `exp`, 30 s for `log`, 33 s for `log1p` when run one at a time
//!   with `--test-threads 1`). The same sweep also checks that every zero
//!   and every infinity is exactly the correctly rounded result (so
//!   overflow to `+∞` and underflow to `+0` happen at exactly the right
//!   inputs) and that NaN is answered by NaN.
//! * Special values are exact: `exp(±0) = 1`, `exp(−∞) = +0`,
//!   `exp(+∞) = +∞`, `log(1) = +0`, `log(±0) = −∞`, `log(x < 0) = NaN`
//!   (including `−∞`), `log(+∞) = +∞`, `log1p(−1) = −∞`,
//!   `log1p(x < −1) = NaN`, `log1p(+∞) = +∞`, `log1p(±0) = ±0`, and a NaN
//!   input gives a NaN. `exp` overflows to `+∞` exactly where the
//!   correctly rounded result does (from `x = 88.72283935546875` on) and
//!   goes through the subnormals down to `+0` with a single rounding of
//!   the scaled value (see step 6 below), reaching `+0` exactly where the
//!   correctly rounded result does.
//! * [`log_add_exp`]`(a, b)` = `ln(e^a + e^b)`, computed as
//!   `max + f(min − max)` with `f(d) = log1p(e^d)` evaluated by one routine
//!   (see [its section](#log_add_exp)):
//!   * NaN if either is NaN; `+∞` if either is `+∞` (and neither is NaN);
//!     `−∞` if both are `−∞`; `log_add_exp(x, −∞) = x + 0` (so `x`, except
//!     `−0` which gives `+0 = ln 1`); every pair of zeros gives
//!     `f32(ln 2)`. The result is symmetric in `a` and `b` bit for bit and
//!     never below `max(a, b)`; which of two equal arguments is "the
//!     maximum" cannot be seen in the result (`max.NaN` picks `+0` from
//!     `±0`, and the result does not depend on the zero's sign).
//!   * **Within 1 ulp of the correctly rounded `ln(1 + e^d)` for every f32
//!     `d`** (`log_add_exp(0, d)`, all 2^32 inputs, positive `d`, zeros,
//!     subnormals, infinities and NaN included), measured against CORE-MATH
//!     in f64 (see the section for the figures).
//!   * For other pairs, with `f = f(min − max)`: within 1 ulp whenever
//!     `min − max` is exact in f32 and `|y| ≥ 2f` (`max ≥ f` or
//!     `max ≤ −3f`); for `f ≤ |y| < 2f` a real error below 1.51 ulp (none
//!     of 4·10^8 sampled pairs is more than 1 ulp off); in the cancellation
//!     region `C = {max < 0 and |y| < f}` an absolute error below
//!     `1.51·2^−24`; when `min − max` rounds, its rounding error `δ` adds at
//!     most `σ(d)·|δ|` (`σ = e^d/(1 + e^d) ≤ 1/2`, `|δ| ≤ ulp(d)/2`). The
//!     bound and the measured figures are in the section.

//! # `exp`
//!
//! 1. Clamp: `x > 89 → 89`, then `x < −110 → −110` (two compares and
//!    selects; a NaN passes through both and propagates to the result).
//!    `exp(89)` overflows and `exp(−110)` underflows to `+0`, and both ends
//!    still give the right `±∞`/`0` through the scaling in step 6, so the
//!    clamp only keeps `k` small.
//! 2. `t = fma(x, LOG2_E, 1.5·2^23)`; `kf = t − 1.5·2^23`;
//!    `k = bits(t) − bits(1.5·2^23)` (wrapping, as i32). Adding
//!    `1.5·2^23` leaves an integer ulp, so the FMA rounds `x·log2(e)` to
//!    the nearest integer in a single rounding; `kf` is that integer
//!    exactly and `k` the same integer read from the low mantissa bits: no
//!    conversion instruction. `k ∈ [−159, 128]`.
//! 3. Cody–Waite reduction: `rh = fma(kf, −LN2_HI, x)` is **exact**
//!    (`LN2_HI` is ln 2 rounded to f32, a multiple of 2^−24; `x` is a
//!    multiple of 2^−25 whenever `k ≠ 0`; `|rh| < 0.5`, so the difference
//!    fits 24 bits), then `r = fma(kf, −LN2_LO, rh)` with
//!    `LN2_LO = f32(ln 2 − LN2_HI)`, `|r| ≤ 0.34658`.
//! 4. `hi = 1 + rh`; `hi_err = (1 − hi) + rh` (Fast2Sum, exact:
//!    `hi + hi_err = 1 + rh`).
//! 5. `p = EXP_POLY(r)` by Horner (`p = fma(p, r, c_i)`, from `c_5` down to
//!    `c_0`); `r2 = r·r`; `tail = fma(kf, −LN2_LO, hi_err)`;
//!    `tail = fma(r2, p, tail)`; `pre = hi + tail`. That is
//!    `e^r ≈ 1 + r + r²·P(r)` with the big terms `1 + rh` kept exact and
//!    everything small (the low part of ln 2's product, `r²·P`) summed
//!    into one tail, so `pre` has a single significant rounding (the last
//!    add); `pre ∈ [0.7, 1.42]`.
//! 6. `k1 = k >> 1` (arithmetic), `k2 = k − k1`,
//!    `s_i = from_bits((k_i + 127) << 23) = 2^k_i` (both in `[−80, 64]`,
//!    normal), result `(pre·s1)·s2`. The first product is exact (its
//!    magnitude stays ≥ 2^−81), so only the second rounds: overflow to
//!    `+∞` and the rounding into the subnormal range are one IEEE rounding
//!    of `pre·2^k` (with `pre` itself already rounded to 24 bits, which is
//!    why a subnormal result, like any other, can be 1 ulp off).
//!
//! # `log`
//!
//! 1. Subnormals: `x < 2^−126 → x·2^23` (exact) and the exponent is
//!    corrected by −23 (a select of the factor and of the correction).
//! 2. Split around 2/3: `t = bits(x) − bits(2/3)` with
//!    `bits(2/3) = 0x3f2aaaab`; `e = (t as i32) >> 23`;
//!    `m = from_bits((t & 0x7fffff) + 0x3f2aaaab)`, so `x = 2^e·m` exactly
//!    with `m ∈ [0.6666667, 1.3333333]`; `f = m − 1` is exact (Sterbenz).
//! 3. The common core `log_core(e, f, d) ≈ e·ln 2 + log1p(f) + d` (`d = 0`
//!    for `log`):
//!    * `ef = from_bits(bits(1.5·2^23) + e) − 1.5·2^23` (`e` as a float,
//!      exact, no conversion instruction);
//!    * `a = ef·LN2_HI16` (exact: `LN2_HI16` has 16 significant bits and
//!      `|e| < 2^8`); `s1 = a + f`; `e1 = f − (s1 − a)` (Fast2Sum, exact,
//!      valid because `a = 0` or `|a| ≥ ln 2 > |f|`);
//!    * `hf = f·0.5`; `nhf = f·(−0.5)`; `hsq = hf·f` (f²/2 rounded);
//!      `nres = fma(nhf, f, hsq)` (exact: `hsq − f²/2`, so
//!      `−f²/2 = −hsq + nres`);
//!    * `s2 = s1 − hsq`; `e2 = (s1 − s2) − hsq` (Fast2Sum for the
//!      difference, exact, `|s1| ≥ |hsq|` on the whole domain);
//!    * `q = LOG_POLY(f)` by Horner from `c_9` down to `c_0`;
//!      `f3 = hsq·f` (≈ f³/2);
//!    * `tail = fma(ef, LN2_LO16, d)`; `tail = tail + nres`;
//!      `tail = tail + e1`; `tail = tail + e2`; `tail = fma(f3, q, tail)`;
//!    * result `s2 + tail`.
//!
//!    So `log1p(f) = f − f²/2 + (f³/2)·Q(f)`, and the three large terms
//!    `e·LN2_HI16`, `f`, `−f²/2` are added in double-f32 (their rounding
//!    errors `e1`, `e2`, `nres` are exact and go into the tail): the only
//!    significant rounding is the final add, and the tail (`|tail| < 0.02`)
//!    contributes a few hundredths of an ulp.
//! 4. Specials, in this order: `bits(x) ≥ 0x7f800000` (NaN, `+∞`, every
//!    negative including `−0`) → NaN; `bits(x) == 0x7f800000` → `+∞`;
//!    `x == 0` (either sign) → `−∞`.
//!
//! # `log1p`
//!
//! 1. `u = 1 + x` and its exact error by 2Sum: `bv = u − x`; `av = u − bv`;
//!    `c = (1 − bv) + (x − av)` (so `1 + x = u + c` exactly).
//! 2. Split `u` as in `log` (no subnormal step: `u ≥ 2^−24` or garbage that
//!    the specials replace): `e`, `m`, `fu = m − 1`.
//! 3. `c/u` to about 0.14 %: `y0 = fma(fu, fu, 1 − fu)` (`1 − f + f²`,
//!    which is 1/m to a relative `f³`, at most 3.7 %), `nm = −1 − fu`
//!    (= −m, exact), `er = fma(nm, y0, 1)`, `y1 = fma(y0, er, y0)` (one
//!    Newton step squares the relative error), `es = min(e, 126)`,
//!    `sc = from_bits((127 − es) << 23)` (= 2^−es),
//!    `du = (c·y1)·sc`. Since `|c| ≤ ulp(u)/2`, `c/u ≤ 2^−24` and this
//!    relative accuracy is far more than enough.
//! 4. `direct = (e == 0)` (`u ∈ [2/3, 4/3)`, so `|x| ≤ 0.3333334`):
//!    `f = direct ? x : fu`, `d = direct ? 0 : du`; result
//!    `log_core(e, f, d)`. Near 0 the polynomial runs on `x` itself (no
//!    cancellation); elsewhere `log1p(x) = log(u) + log1p(c/u)` with
//!    `log1p(c/u) = c/u` to far below an ulp.
//! 5. Specials, in this order: `x == 0` → `x` (keeps the sign of zero);
//!    `x == −1` → `−∞`; `!(x ≥ −1)` (less than −1, or NaN) → NaN;
//!    `x == +∞` → `+∞`.
//!
//! # `log_add_exp`
//!
//! `ln(e^a + e^b) = max + f(d)` with `d = min − max ≤ 0` and
//! `f(d) = log1p(e^d)`. Instead of rounding `e^d` and calling `log1p`
//! (101 SASS instructions; `exp`'s and `log1p`'s roundings add up to 1.4
//! ulp), `f` is one routine: `exp`'s reduction, an exactly computed
//! leading term, and a polynomial correction small enough for f32, in one
//! of two forms that share one polynomial `Q(z) ≈ (log1p(z) − z)/z²`:
//!
//! * near 0, `d > −ln 2` (`e^d > 1/2`): `f = ln 2 + z + z²·Q(z)` with
//!   `z = (e^d − 1)/2 ∈ (−1/4, 0]` (`log1p(e^d) = ln 2 + log1p(z)`);
//! * below, `e^d ≤ 1/2`: `f = E + E²·Q(E)` with `E = e^d`.
//!
//! The correction is at most 9 % (near 0) and 23 % (at `E = 1/2`) of `f`,
//! and its f32 roundings cost a fraction of that in ulps; the split at
//! `e^d = 1/2` balances the two forms (the second form alone on `[0, 1]`
//! would have a correction of 44 % of `f` at `e^d = 1`; a split at
//! `k = 0`, `e^d = 0.707`, leaves 32 % and measured errors of 1.6 ulp).
//! Step by step:
//!
//! 1. `mx = max.NaN(a, b)`; `d = max(−|a − b|, −110)` (`sub`, then `max`
//!    with `abs`/`neg`: ptxas folds those into one `FMNMX`). `−|a − b|` is
//!    `min − max` rounded to nearest. The non-NaN `max` turns the NaN of
//!    `∞ − ∞` or of a NaN input into `−110`, whose `f` is 0, so every rule
//!    follows without a select: a NaN input makes `mx` NaN; `max = +∞`
//!    gives `+∞ + 0`; two `−∞` give `−∞ + 0`; `min = −∞` gives `mx + 0`.
//! 2. `t = fma(d, LOG2_E, LAE_MAGIC)`, `kf = t − LAE_MAGIC`: `round(d·log2
//!    e)` as in `exp`. `near = d > LAE_SPLIT` (`−LN2_HI`); `ke = near ? 0 :
//!    kf`; `rh = fma(ke, −LN2_HI, d)` (exact, as in `exp`), `r = fma(ke,
//!    −LN2_LO, rh)`. Near 0 `r = rh = d ∈ (−ln 2, 0]`; below `k ≤ −1` and
//!    `|r| ≤ 0.3466`.
//! 3. The leading term: `c = near ? LN2_HI : 0`, `A = max(c, 1/2)`,
//!    `h = fma(rh, LAE_B, A)`, `he = fma(rh, LAE_B, A − h)` with `LAE_B =
//!    7/16`. `A − h` is exact (Sterbenz: `h ∈ [A/2, 2A]`) and so is `he`
//!    (`rh·7/16` has at most 27 significant bits; below, `rh` is a multiple
//!    of 2^−24 and the error a multiple of 2^−28 of at most `2^−25`; near 0 a
//!    tiny `d` makes `he` round, by 2^−24 of itself): `h + he = A + (7/16)·
//!    rh`, which is `ln 2 + (7/16)·d ≈ f(d)` near 0 and `1/2 + (7/16)·r ≈
//!    e^r/2` below.
//! 4. The tail: `t0 = fma(near ? LAE_KAPPA : kf, −LAE_B_LO, he)` adds
//!    `−k·(7/16)·LN2_LO` (the low part of `k·ln 2`) below and
//!    `ln 2 − LN2_HI` near 0; `tl = fma(R(r), r, t0)` with
//!    `R(r) ≈ (e^r − 1 − (7/8)·r)/(2r)` ([`SOFTPLUS_EXP_POLY`], degree 6,
//!    Horner). Now `h + tl ≈ e^r/2` below and `ln 2 + (e^d − 1)/2` near 0,
//!    the big part exact and `|tl| < 0.06`.
//! 5. The scale: `s = from_bits(bits(t) << 23)·2^−63 = 2^(k+1)` (the low
//!    nine bits of `t` are `k + 191`, so the shift makes `2^(k+64)`, normal
//!    for `k ≥ −159`; the product is exact down to `2^−149` and rounds to 0
//!    below, where the result is 0), `S = min(s, 1)`: 1 near 0 (where
//!    `k ∈ {0, −1}`), `2^(k+1)` below.
//! 6. `v = (h − c) + tl` (`h − c` exact): near 0 `v = z` (plus the low part
//!    of ln 2, negligible in `z`), below `v = e^r/2`. `z = v·S` (below,
//!    `e^d`), `w = z·v` (`z²` near 0, `e^d·e^r/2` below).
//! 7. `T = fma(w, Q(z), tl)` ([`SOFTPLUS_LOG_POLY`], degree 9), `g = h + T`
//!    (the one significant rounding: `g ≈ f` near 0, `f/2^(k+1)` below), and
//!    `y = fma(g, S, mx)`: `mx + g·2^(k+1)` with one rounding, so a
//!    subnormal `f` is a single correct rounding of `g·2^(k+1)` (no double
//!    rounding as in `exp`) and a zero `S` (`k ≤ −151`, `d < −104.3`) leaves
//!    `mx + 0`.
//!
//! Cost: 45 SASS instructions per call on sm_80..sm_120 (47 on sm_75, where
//! `max.NaN` is `max`, `setp.nan` and `selp`), was 101; see
//! [`crate::dsl::math`].
//!
//! **Accuracy.** `log_add_exp(0, d)` over all 2^32 f32 `d` against the
//! correctly rounded `ln(1 + e^d)` (reference: CORE-MATH's correctly
//! rounded f64 `exp` and `log1p`, `ln(1 + e^d)` or `d + ln(1 + e^−d)`,
//! within `2^−51` relative, with exact shortcuts for `d ≥ 25`, `d ≤ −104`
//! and a series for `|d| < 2^−10`; the f32 rounding is certain unless the f64
//! value lies within `2^−49` of a rounding boundary; those inputs are
//! counted as ambiguous and must be within 1 ulp of both neighbours):
//! at most 1 ulp; 4 215 838 969 of the 2^32 results (98.1577 %) correctly
//! rounded, 79 128 327 at 1 ulp, none beyond, and 18 ambiguous references
//! (the result is within 1 ulp of both candidates). Of the 490 800 548
//! nontrivial results (finite, non-zero, neither `d` itself nor
//! `f32(ln 2)`) 85.3684 % round correctly: 98.8611 % of the 257 969 685
//! with `d < 0`, 70.4189 % of the 232 830 863 with `d > 0`. The largest
//! real error for `d ≤ 0`, `ε` = 1.0075 ulp of `f(d)` (at `d = −0.76173`,
//! in the second form near its top `e^d = 1/2`), is the error of
//! `f̂ = g·S` that the pair bound below uses (the test asserts
//! `ε < 1.01`). For `d > 0` (`y = d + f(−d)`) the rounding of `g` and that
//! of the final sum add (up to 1.0724 ulp), which is why fewer
//! of those round correctly; the old `exp` + `log1p` formula had the same
//! double rounding there and rounded 76–87 % of `d < 0` correctly.
//!
//! **Other pairs.** `y = RN(mx + f̂(d̂))` with `d̂ = RN(min − max)` and
//! `|f̂ − f(d̂)| ≤ ε·ulp(f)`, so
//! `|y − ln(e^a + e^b)| ≤ ulp(y)/2 + ε·ulp(f) + σ(d)·|d − d̂|`
//! (`σ = f' = e^d/(1 + e^d)`; the test asserts this bound on every sampled
//! pair). Hence:
//!
//! * when `min − max` is exact in f32 (e.g. `min/2 ≤ max ≤ 2·min` of one
//!   sign, or a zero argument) and `|y| ≥ 2·f(d)` (`max ≥ f` or
//!   `max ≤ −3f`): `ulp(f) ≤ ulp(y)/2`, a real error below `1.01·ulp(y)`,
//!   so within 1 ulp;
//! * when it is exact and `f ≤ |y| < 2f` (`0 ≤ max < f` or
//!   `−3f < max ≤ −2f`): `ulp(f) ≤ ulp(y)`, a real error below
//!   `1.51·ulp(y)`: within 1 ulp unless both roundings are at their worst
//!   at once (never seen: not among the `log_add_exp(0, d)` with
//!   `0 < d < 0.48` of the sweep, which are this case, nor in the samples
//!   below);
//! * the cancellation region `C = {max < 0, |y| < f(d)}`
//!   (`−2·f(d) < max < 0`; e.g. `a = b = −ln 2`): absolute error below
//!   `ulp(y)/2 + ε·ulp(f) < 1.51·2^−24` (`f ≤ ln 2`, so `ulp(f) ≤ 2^−24`),
//!   which is many ulps of a `y` near 0 (a double-f32 `f` would push `C`
//!   down to `|y| ≪ f` but costs 3 more instructions);
//! * when `min − max` rounds, `|d − d̂| ≤ min(ulp(d̂)/2, |max|, |min|)` and
//!   `σ·|d − d̂|` can be more than an ulp of `y` when `y` is small against
//!   `|d|·σ(d)` (e.g. `(1e−7, −8.8)`: a tiny `max`, a `min` a few units
//!   below), of the order of `|d|/2` ulp. The old formula has the same
//!   rounding of `min − max`.
//!
//! Measured with `cargo test --release --test math_exhaustive
//! sampled_pairs_log_add_exp -- --ignored --nocapture` (4·10^8 pairs, fixed
//! seeds; 2 threads on the shared 2-core development machine):
//!
//! | pairs (fixed seed) | class | pairs | correctly rounded | beyond 1 ulp | largest error |
//! | --- | --- | --- | --- | --- | --- |
//! | `a`, `b` uniform in `[−30, 30]`, 2·10^8 | exact difference, `\|y\| ≥ 2f` | 181 164 398 | 99.777 % | 0 | 0.888 ulp |
//! | | exact difference, `f ≤ \|y\| < 2f` | 183 220 | 85.66 % | 0 | 0.888 ulp |
//! | | rounded difference (outside `C`) | 18 470 865 | 100.000 % | 0 | 0.500 ulp |
//! | | cancellation region `C` | 181 517 | 48.89 % | 33 880 | 0.555·2^−24 absolute |
//! | `a`, `b` uniform over finite f32 bit patterns, 10^8 | exact difference, `\|y\| ≥ 2f` | 54 145 750 | 99.943 % | 0 | 0.925 ulp |
//! | | exact difference, `f ≤ \|y\| < 2f` | 9 271 704 | 90.76 % | 0 | 1.064 ulp |
//! | | rounded difference (outside `C`) | 35 203 995 | 97.65 % | 10 900 | 7.86 ulp |
//! | | cancellation region `C` | 1 378 551 | 89.56 % | 16 542 | 1.025·2^−24 absolute |
//! | `a` uniform in `[−3, 1]`, `b = a − u`, `u` uniform in `[0, 4]`, 10^8 | exact difference, `\|y\| ≥ 2f` | 79 889 444 | 92.35 % | 0 | 0.927 ulp |
//! | | exact difference, `f ≤ \|y\| < 2f` | 10 053 717 | 85.70 % | 0 | 0.976 ulp |
//! | | cancellation region `C` | 10 056 839 | 48.90 % | 1 879 185 | 0.581·2^−24 absolute |
//!
//! ("Largest error" is the real error in ulps of the correctly rounded
//! result, or the absolute error in `C`; 9 of the 4·10^8 references were
//! too close to a rounding boundary to call and are not counted as
//! correctly rounded. Every pair also satisfies the bound above.) Outside
//! `C` with an exact difference the results round correctly where `|y| ≫
//! f`; where `max` and `f` are of one size (the third sample) the rounding
//! of `f` and that of the sum add, as in the old formula.
//!
//! Command for the sweep: `cargo test --release --test math_exhaustive
//! exhaustive_log_add_exp -- --ignored --nocapture` (388 s on 2 threads of
//! the shared 2-core development machine at a load average of 5 to 7; the
//! reference's CORE-MATH calls take most of it).
//!
//! # Constants and how they were derived
//!
//! * `LOG2_E = 0x3fb8aa3b`, `LN2_HI = 0x3f317218` (ln 2 rounded to f32),
//!   `LN2_LO = 0xb102e308` (f32(ln 2 − LN2_HI)), `LN2_HI16 = 0x3f317200`
//!   (ln 2 truncated to 16 significant bits), `LN2_LO16 = 0x35bfbe8e`
//!   (f32(ln 2 − LN2_HI16)), `bits(2/3) = 0x3f2aaaab` (2/3 rounded to f32).
//! * [`EXP_POLY`]: `P(r) = (e^r − 1 − r)/r²` interpolated at the 6
//!   Chebyshev nodes of `[−0.3467, 0.3467]` (degree 5), the monomial
//!   coefficients rounded to f32. [`LOG_POLY`]:
//!   `Q(f) = 2·(log1p(f) − f + f²/2)/f³` interpolated at the 10 Chebyshev
//!   nodes of `[−0.3334, 0.3334]` (degree 9), rounded to f32. The targets
//!   are evaluated by their power series in f64 and the interpolation
//!   solves the Vandermonde system in f64; the test
//!   `polynomial_coefficients_rederive` in `tests/math_exhaustive.rs`
//!   re-runs that derivation (and the ln 2 splits) and checks every bit of
//!   the constants here. Weighted by `r²` resp. `f³/2` (their weight in the
//!   result), the approximation errors of the rounded polynomials are
//!   below 5.5·10^−10 (`exp`, ≈ 0.009 ulp of 1) and 6.6·10^−10 (`log`,
//!   ≈ 0.04 ulp of the smallest result on `|f| ≤ 1/3` for `e ≠ 0`).
//!   Taylor coefficients would need one more term for `exp` and do not
//!   converge fast enough on `|f| ≤ 1/3` for `log`.
//! * `log_add_exp`'s scalars: [`LAE_MAGIC`] `= 1.5·2^23 + 191` (so the low
//!   nine bits of the rounding sum are `k + 191`, the exponent field of
//!   `2^(k+64)`); [`LAE_B`] `= 7/16`, the slope of the exact leading term
//!   (three bits; `2·7/16 = 0.875` is close to the slope 0.83 of `2f` near 0
//!   and keeps `1/2 + (7/16)·r` within `[A/2, 2A]` for Sterbenz);
//!   [`LAE_B_LO`] `= f32(LAE_B·LN2_LO)`; [`LAE_KAPPA`] `= f32(−(ln 2 −
//!   LN2_HI)/LAE_B_LO)`; [`LAE_SPLIT`] `= −LN2_HI`; [`LAE_CLAMP`] `= −110`.
//! * [`SOFTPLUS_EXP_POLY`]: `R(r) = (e^r − 1 − (7/8)·r)/(2r)` on
//!   `[−0.69315, 0.34658]` (both forms' `r`) and [`SOFTPLUS_LOG_POLY`]:
//!   `Q(z) = (log1p(z) − z)/z²` on `[−0.2501, 0.5001]`, each a **weighted
//!   minimax** fit with f32 coefficients. The weight is the size of a
//!   coefficient error in ulps of the result: `|r|·2^25` for `r < 0` and
//!   `|r|·2^24` for `r ≥ 0` (the result's ulp relative to the scaled unit);
//!   `z²/ulp(ln 2 + log1p z)` for `z < 0` and the larger of
//!   `z²/ulp(log1p z)` and `z·2^24` for `z ≥ 0`. The fit is Lawson's
//!   iteratively reweighted least squares (Householder QR, 200 iterations,
//!   2001 equally spaced points, targets from their power series in f64);
//!   then the coefficient of `x^0` is rounded to f32 and the rest refitted,
//!   then `x^1`, and so on. Weighted errors: 0.0137 ulp (`R`, degree 6) and
//!   0.0073 ulp (`Q`, degree 9); with the Chebyshev interpolation used for
//!   `exp` and `log` `R`'s would be 0.10 ulp, since its error grows toward
//!   the ends where the weight is largest. `log_add_exp_constants_rederive`
//!   in `tests/math_exhaustive.rs` re-runs the fit and checks every bit,
//!   re-checks both errors on a 7 times finer grid, and re-derives the
//!   scalars.

// The three functions and their core are `#[inline(always)]`: straight-line
// code of a few dozen operations, and a caller compiled with the FMA
// instructions enabled (`#[target_feature(enable = "fma")]`, as the sweeps
// in `tests/math_exhaustive.rs` are) then gets `vfmadd` for `mul_add`
// instead of a call to the software `fmaf` (the results are identical:
// both are correctly rounded).

/// `1.5·2^23`: adding it rounds to an integer and leaves the integer in the
/// low mantissa bits.
pub const ROUND_MAGIC: f32 = 12_582_912.0;
const ROUND_MAGIC_BITS: u32 = 0x4b40_0000;
/// log2(e) rounded to f32.
pub const LOG2_E: f32 = f32::from_bits(0x3fb8_aa3b);
/// ln 2 rounded to f32 (24 significant bits).
pub const LN2_HI: f32 = f32::from_bits(0x3f31_7218);
/// f32(ln 2 − [`LN2_HI`]).
pub const LN2_LO: f32 = f32::from_bits(0xb102_e308);
/// ln 2 truncated to 16 significant bits (so `e·LN2_HI16` is exact).
pub const LN2_HI16: f32 = f32::from_bits(0x3f31_7200);
/// f32(ln 2 − [`LN2_HI16`]).
pub const LN2_LO16: f32 = f32::from_bits(0x35bf_be8e);
/// The bits of 2/3 rounded to f32: the lower end of the mantissa range
/// `[2/3, 4/3)` of `log`'s split.
pub const TWO_THIRDS_BITS: u32 = 0x3f2a_aaab;
/// `exp`'s upper clamp (`exp(89)` overflows).
pub const EXP_CLAMP_HI: f32 = 89.0;
/// `exp`'s lower clamp (`exp(−110)` underflows to `+0`).
pub const EXP_CLAMP_LO: f32 = -110.0;

/// `P(r) ≈ (e^r − 1 − r)/r²` on `|r| ≤ 0.3467`, coefficients of `r^0`
/// upwards (see the module docs for the fit).
pub const EXP_POLY: [f32; 6] = [
    f32::from_bits(0x3f00_0000),
    f32::from_bits(0x3e2a_aaab),
    f32::from_bits(0x3d2a_aa74),
    f32::from_bits(0x3c08_8870),
    f32::from_bits(0x3ab6_a1a7),
    f32::from_bits(0x3950_928b),
];

/// `Q(f) ≈ 2·(log1p(f) − f + f²/2)/f³` on `|f| ≤ 0.3334`, coefficients of
/// `f^0` upwards (see the module docs for the fit).
pub const LOG_POLY: [f32; 10] = [
    f32::from_bits(0x3f2a_aaab),
    f32::from_bits(0xbf00_0000),
    f32::from_bits(0x3ecc_cc6a),
    f32::from_bits(0xbeaa_aa4f),
    f32::from_bits(0x3e92_649c),
    f32::from_bits(0xbe80_1991),
    f32::from_bits(0x3e5e_4548),
    f32::from_bits(0xbe47_e1dc),
    f32::from_bits(0x3e6d_d766),
    f32::from_bits(0xbe5a_b6ed),
];

/// `e^x`, within 1 ulp of the correctly rounded result for every input
/// (see the [module docs](self) for the algorithm and contract).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // 1. clamp (NaN passes through)
    let x = if x > EXP_CLAMP_HI { EXP_CLAMP_HI } else { x };
    let x = if x < EXP_CLAMP_LO { EXP_CLAMP_LO } else { x };
    // 2. k = round(x·log2 e), as a float and as an integer
    let t = x.mul_add(LOG2_E, ROUND_MAGIC);
    let kf = t - ROUND_MAGIC;
    let k = t.to_bits().wrapping_sub(ROUND_MAGIC_BITS) as i32;
    // 3. r = x − k·ln 2 (rh exact)
    let rh = kf.mul_add(-LN2_HI, x);
    let r = kf.mul_add(-LN2_LO, rh);
    // 4. 1 + rh exactly as hi + hi_err
    let hi = 1.0 + rh;
    let hi_err = (1.0 - hi) + rh;
    // 5. e^r = hi + (hi_err − k·LN2_LO + r²·P(r))
    let mut p = EXP_POLY[5];
    p = p.mul_add(r, EXP_POLY[4]);
    p = p.mul_add(r, EXP_POLY[3]);
    p = p.mul_add(r, EXP_POLY[2]);
    p = p.mul_add(r, EXP_POLY[1]);
    p = p.mul_add(r, EXP_POLY[0]);
    let r2 = r * r;
    let tail = kf.mul_add(-LN2_LO, hi_err);
    let tail = r2.mul_add(p, tail);
    let pre = hi + tail;
    // 6. ·2^k in an exact step and a rounding one
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((k2.wrapping_add(127) as u32) << 23);
    let y = pre * s1;
    y * s2
}

/// `e·ln 2 + log1p(f) + d` for `|f| ≤ 0.3334` (`f` exact), `|e| < 2^8`,
/// `d` tiny: the shared core of [`log_f32`] and [`log1p_f32`].
#[inline(always)]
fn log_core(e: i32, f: f32, d: f32) -> f32 {
    let ef = f32::from_bits(ROUND_MAGIC_BITS.wrapping_add(e as u32)) - ROUND_MAGIC;
    // e·ln2_hi + f, exactly as s1 + e1
    let a = ef * LN2_HI16;
    let s1 = a + f;
    let z1 = s1 - a;
    let e1 = f - z1;
    // −f²/2 = −hsq + nres exactly
    let hf = f * 0.5;
    let nhf = f * -0.5;
    let hsq = hf * f;
    let nres = nhf.mul_add(f, hsq);
    // s1 − hsq, exactly as s2 + e2
    let s2 = s1 - hsq;
    let z2 = s1 - s2;
    let e2 = z2 - hsq;
    // (f³/2)·Q(f)
    let mut q = LOG_POLY[9];
    q = q.mul_add(f, LOG_POLY[8]);
    q = q.mul_add(f, LOG_POLY[7]);
    q = q.mul_add(f, LOG_POLY[6]);
    q = q.mul_add(f, LOG_POLY[5]);
    q = q.mul_add(f, LOG_POLY[4]);
    q = q.mul_add(f, LOG_POLY[3]);
    q = q.mul_add(f, LOG_POLY[2]);
    q = q.mul_add(f, LOG_POLY[1]);
    q = q.mul_add(f, LOG_POLY[0]);
    let f3 = hsq * f;
    // the small terms, then the one significant rounding
    let tail = ef.mul_add(LN2_LO16, d);
    let tail = tail + nres;
    let tail = tail + e1;
    let tail = tail + e2;
    let tail = f3.mul_add(q, tail);
    s2 + tail
}

/// The natural logarithm, within 1 ulp of the correctly rounded result for
/// every input (see the [module docs](self)).
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    // 1. subnormals ·2^23
    let sub = x < f32::from_bits(0x0080_0000);
    let scale = if sub { 8_388_608.0 } else { 1.0 };
    let adj: i32 = if sub { -23 } else { 0 };
    let xs = x * scale;
    // 2. x = 2^e·m, m ∈ [2/3, 4/3)
    let t = xs.to_bits().wrapping_sub(TWO_THIRDS_BITS);
    let e0 = (t as i32) >> 23;
    let e = e0.wrapping_add(adj);
    let mb = t & 0x007f_ffff;
    let mb = mb.wrapping_add(TWO_THIRDS_BITS);
    let f = f32::from_bits(mb) - 1.0;
    // 3. core
    let y = log_core(e, f, 0.0);
    // 4. specials
    let bits = x.to_bits();
    let y = if bits >= 0x7f80_0000 { f32::NAN } else { y };
    let y = if bits == 0x7f80_0000 {
        f32::INFINITY
    } else {
        y
    };
    if x == 0.0 { f32::NEG_INFINITY } else { y }
}

/// `ln(1 + x)`, within 1 ulp of the correctly rounded result for every
/// input (see the [module docs](self)).
#[inline(always)]
pub fn log1p_f32(x: f32) -> f32 {
    // 1. 1 + x = u + c exactly
    let u = 1.0 + x;
    let bv = u - x;
    let av = u - bv;
    let c1 = 1.0 - bv;
    let c2 = x - av;
    let c = c1 + c2;
    // 2. u = 2^e·m
    let t = u.to_bits().wrapping_sub(TWO_THIRDS_BITS);
    let e = (t as i32) >> 23;
    let mb = t & 0x007f_ffff;
    let mb = mb.wrapping_add(TWO_THIRDS_BITS);
    let m = f32::from_bits(mb);
    let fu = m - 1.0;
    // 3. du ≈ c/u
    let y0 = fu.mul_add(fu, 1.0 - fu);
    let nm = -1.0 - fu;
    let er = nm.mul_add(y0, 1.0);
    let y1 = y0.mul_add(er, y0);
    let es = e.min(126);
    let sc = f32::from_bits((127i32.wrapping_sub(es) as u32) << 23);
    let du = c * y1;
    let du = du * sc;
    // 4. near 0 the polynomial on x itself
    let direct = e == 0;
    let f = if direct { x } else { fu };
    let d = if direct { 0.0 } else { du };
    let y = log_core(e, f, d);
    // 5. specials
    let y = if x == 0.0 { x } else { y };
    let y = if x == -1.0 { f32::NEG_INFINITY } else { y };
    // `setp.ltu` (less than, or unordered): below −1 or NaN
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let y = if !(x >= -1.0) { f32::NAN } else { y };
    if x == f32::INFINITY { f32::INFINITY } else { y }
}

// ---------------------------------------------------------------------------
// log_add_exp
// ---------------------------------------------------------------------------

/// `1.5·2^23 + 191`: like [`ROUND_MAGIC`] it rounds `d·log2 e` to an
/// integer `k`, and the low 9 bits of its sum are `k + 191`, so shifting
/// them to the exponent field gives `2^(k+64)` directly.
pub const LAE_MAGIC: f32 = 12_583_103.0;
/// [`log_add_exp`]'s clamp of `min − max` (`e^−110` is far below the
/// smallest subnormal; the clamp keeps `k ≥ −159`).
pub const LAE_CLAMP: f32 = -110.0;
/// The split between the two forms of [`log_add_exp`]: `d > −LN2_HI`
/// (`e^d > 1/2`) takes the form around `e^d = 1`.
pub const LAE_SPLIT: f32 = -LN2_HI;
/// The slope of the exactly computed leading term `A + B·r` (`7/16`:
/// three significant bits, so `r·B` is exact in the FMA).
pub const LAE_B: f32 = 0.4375;
/// `f32(LAE_B · LN2_LO)`: the low part of `k·ln 2` seen through the slope.
pub const LAE_B_LO: f32 = f32::from_bits(0xb065_0d4e);
/// `f32(−(ln 2 − LN2_HI) / LAE_B_LO)`: multiplied by `−LAE_B_LO` it adds
/// the low part of `ln 2` to the first form's leading term.
pub const LAE_KAPPA: f32 = f32::from_bits(0xc012_4925);
/// `2^−63`: `2^(k+64) · 2^−63 = 2^(k+1)`, one multiplication that rounds
/// only when the power underflows (then to the right power or to 0).
const TWO_M63: f32 = f32::from_bits(0x2000_0000);

/// `R(r) ≈ (e^r − 1 − 2·LAE_B·r) / (2r)` on `[−0.69315, 0.34658]`,
/// coefficients of `r^0` upwards (see the module docs for the fit).
pub const SOFTPLUS_EXP_POLY: [f32; 7] = [
    f32::from_bits(0x3d80_0000),
    f32::from_bits(0x3e7f_fffd),
    f32::from_bits(0x3daa_aa9e),
    f32::from_bits(0x3caa_acbf),
    f32::from_bits(0x3b88_9e18),
    f32::from_bits(0x3a35_0d6b),
    f32::from_bits(0x38af_2e40),
];

/// `Q(z) ≈ (log1p(z) − z) / z²` on `[−0.2501, 0.5001]`, coefficients of
/// `z^0` upwards (see the module docs for the fit).
pub const SOFTPLUS_LOG_POLY: [f32; 10] = [
    f32::from_bits(0xbf00_0000),
    f32::from_bits(0x3eaa_aab3),
    f32::from_bits(0xbe80_0044),
    f32::from_bits(0x3e4c_c91e),
    f32::from_bits(0xbe2a_8658),
    f32::from_bits(0x3e12_5b23),
    f32::from_bits(0xbe02_dd27),
    f32::from_bits(0x3dee_6348),
    f32::from_bits(0xbdb3_c9ce),
    f32::from_bits(0x3d0e_490b),
];

/// PTX `max.f32`: a NaN operand gives the other one; `−0 < +0`.
#[inline(always)]
pub fn ptx_max(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && b.to_bits() == 0x8000_0000) {
        a
    } else {
        b
    }
}

/// PTX `min.f32`: a NaN operand gives the other one; `−0 < +0`.
#[inline(always)]
pub fn ptx_min(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.to_bits() == 0x8000_0000) {
        a
    } else {
        b
    }
}

/// PTX `max.NaN.f32`: NaN if either operand is NaN, else [`ptx_max`].
#[inline(always)]
pub fn ptx_max_nan(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        ptx_max(a, b)
    }
}

/// `ln(e^a + e^b)`: `max + f(min − max)` with `f(d) = log1p(e^d)`
/// evaluated as one routine (see the [module docs](self) for the
/// algorithm, the NaN/∞ rules and the accuracy contract).
#[inline(always)]
pub fn log_add_exp(a: f32, b: f32) -> f32 {
    // 1. max (NaN if either is NaN) and d = min − max, clamped
    let mx = ptx_max_nan(a, b);
    let dd = a - b;
    let d = ptx_max(-dd.abs(), LAE_CLAMP);
    // 2. k = round(d·log2 e); the first form takes k = 0
    let t = d.mul_add(LOG2_E, LAE_MAGIC);
    let kf = t - LAE_MAGIC;
    let near = d > LAE_SPLIT;
    let ke = if near { 0.0 } else { kf };
    let rh = ke.mul_add(-LN2_HI, d);
    let r = ke.mul_add(-LN2_LO, rh);
    // 3. the leading term h = A + B·rh and its exact error
    let c = if near { LN2_HI } else { 0.0 };
    let a0 = ptx_max(c, 0.5);
    let h = rh.mul_add(LAE_B, a0);
    let hd = a0 - h;
    let he = rh.mul_add(LAE_B, hd);
    // 4. the tail of (e^r)/2 beyond h (plus ln 2's low part near 0)
    let kl = if near { LAE_KAPPA } else { kf };
    let t0 = kl.mul_add(-LAE_B_LO, he);
    let p = &SOFTPLUS_EXP_POLY;
    let mut q = p[6].mul_add(r, p[5]);
    q = q.mul_add(r, p[4]);
    q = q.mul_add(r, p[3]);
    q = q.mul_add(r, p[2]);
    q = q.mul_add(r, p[1]);
    q = q.mul_add(r, p[0]);
    let tl = q.mul_add(r, t0);
    // 5. the scale 2^(k+1) (1 near 0), exact or one rounding to 0
    let sb = f32::from_bits(t.to_bits() << 23) * TWO_M63;
    let s = ptx_min(sb, 1.0);
    // 6. z: (e^d − 1)/2 near 0, else e^d; w = z·v
    let hc = h - c;
    let v = hc + tl;
    let z = v * s;
    let w = z * v;
    // 7. the log1p correction w·Q(z), then one rounding and the scale
    let q2 = &SOFTPLUS_LOG_POLY;
    let mut u = q2[9].mul_add(z, q2[8]);
    u = u.mul_add(z, q2[7]);
    u = u.mul_add(z, q2[6]);
    u = u.mul_add(z, q2[5]);
    u = u.mul_add(z, q2[4]);
    u = u.mul_add(z, q2[3]);
    u = u.mul_add(z, q2[2]);
    u = u.mul_add(z, q2[1]);
    u = u.mul_add(z, q2[0]);
    let tt = w.mul_add(u, tl);
    let g = h + tt;
    g.mul_add(s, mx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials() {
        assert_eq!(exp_f32(0.0).to_bits(), 1.0f32.to_bits());
        assert_eq!(exp_f32(-0.0).to_bits(), 1.0f32.to_bits());
        assert_eq!(exp_f32(f32::NEG_INFINITY).to_bits(), 0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(log_f32(1.0).to_bits(), 0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NEG_INFINITY).is_nan());
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(log1p_f32(-1.0), f32::NEG_INFINITY);
        assert!(log1p_f32(-1.5).is_nan() && log1p_f32(f32::NAN).is_nan());
        assert_eq!(log1p_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(log1p_f32(0.0).to_bits(), 0);
        assert_eq!(log1p_f32(-0.0).to_bits(), 0x8000_0000);
        assert_eq!(
            log_add_exp(f32::NEG_INFINITY, f32::NEG_INFINITY),
            f32::NEG_INFINITY
        );
        assert_eq!(log_add_exp(f32::INFINITY, f32::NEG_INFINITY), f32::INFINITY);
        assert!(log_add_exp(f32::INFINITY, f32::NAN).is_nan());
        assert_eq!(log_add_exp(0.0, 0.0), core::f32::consts::LN_2);
    }
}
