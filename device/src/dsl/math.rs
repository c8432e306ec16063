//! Float math for kernels (no_std has no libm): the hardware's fast paths via LLVM intrinsics,
//! plus erf, tanh, sigmoid and the GELU forms built on them.
//!
//! Accuracy: `exp`/`log`/`sqrt` are LLVM's AMDGPU lowerings (about 1 ulp, with range reduction);
//! `erf` has absolute error <= 1.5e-7 (see [`erf`]); `tanh` is
//! computed from `exp` with a small-argument path. Tests state per-op tolerances against f64.

use core::intrinsics;

/// e^x.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    intrinsics::expf32(x)
}

/// 2^x.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    intrinsics::exp2f32(x)
}

/// Natural logarithm.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    intrinsics::logf32(x)
}

/// Square root (correctly rounded).
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    intrinsics::sqrtf32(x)
}

/// 1 / sqrt(x).
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    1.0 / sqrt(x)
}

unsafe extern "unadjusted" {
    #[link_name = "llvm.amdgcn.fdot2"]
    fn llvm_fdot2(a: super::simd::F16x2, b: super::simd::F16x2, c: f32, clamp: bool) -> f32;
}

/// Two f16 ones, as a word: `dot2_f16(w, F16_ONES, s)` adds the pair of f16 in `w` to `s`.
pub const F16_ONES: u32 = 0x3C00_3C00;

/// `v_dot2_f32_f16`: `a.lo * b.lo + a.hi * b.hi + c`, two f16 pairs held as words, accumulated
/// in f32 (exact products).
#[inline(always)]
pub fn dot2_f16(a: u32, b: u32, c: f32) -> f32 {
    // SAFETY: a register operation; the transmutes reinterpret 32 bits as two f16.
    unsafe { llvm_fdot2(core::mem::transmute(a), core::mem::transmute(b), c, false) }
}

/// Fused multiply-add `a * b + c`.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    intrinsics::fmaf32(a, b, c)
}

/// Absolute value.
#[inline(always)]
pub fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// x with the sign of s.
#[inline(always)]
pub fn copysign(x: f32, s: f32) -> f32 {
    f32::from_bits((x.to_bits() & 0x7fff_ffff) | (s.to_bits() & 0x8000_0000))
}

/// Hyperbolic tangent.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = abs(x);
    if a < 0.25 {
        // Taylor through x^9 (truncation below 1e-8 relative here). Above 1/16 the formula
        // below loses about ulp(1) / tanh(a) to cancellation: 1.6e-6 relative at 0.066, where
        // a three-term series stopped before.
        let x2 = x * x;
        let p = fma(x2, fma(x2, fma(x2, 62.0 / 2835.0, -17.0 / 315.0), 2.0 / 15.0), -1.0 / 3.0);
        return x * fma(x2, p, 1.0);
    }
    if a > 9.0 {
        return copysign(1.0, x); // tanh(9) = 1 - 3e-8, below half an f32 ulp of 1
    }
    // tanh(a) = 1 - 2 / (e^(2a) + 1)
    let e = exp(2.0 * a);
    copysign(1.0 - 2.0 / (e + 1.0), x)
}

/// Logistic sigmoid 1 / (1 + e^-x), as `1 / (1 + e)` for x >= 0 and `e / (1 + e)` below, with
/// `e = e^-|x|`: e never overflows, so far below 0 the result follows e^x down into the
/// denormals (1 / (1 + e^-x) is 1 / inf = 0 from x = -88.7 on, which made silu(x) 0 where it is
/// still a normal number).
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    let e = exp(-abs(x));
    let r = 1.0 / (1.0 + e);
    if x >= 0.0 { r } else { e * r }
}

/// Error function. |x| < 0.5: its Maclaurin series (relative error < 1e-8 before rounding);
/// otherwise Abramowitz & Stegun 7.1.26, `1 - t(a1 + t(a2 + ...)) e^(-x^2)` with
/// `t = 1 / (1 + p x)`, absolute error <= 1.5e-7.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = abs(x);
    let r = if a < 0.5 {
        // 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
        let z = a * a;
        let s = fma(z, fma(z, fma(z, fma(z, fma(z, -1.0 / 1320.0, 1.0 / 216.0), -1.0 / 42.0), 1.0 / 10.0), -1.0 / 3.0), 1.0);
        1.128_379_2 * a * s
    } else if a < 9.0 {
        let t = 1.0 / fma(0.327_591_1, a, 1.0);
        let poly = t * fma(t, fma(t, fma(t, fma(t, 1.061_405_4, -1.453_152_1), 1.421_413_8), -0.284_496_74), 0.254_829_6);
        1.0 - poly * exp(-a * a)
    } else {
        1.0
    };
    if x.is_nan() { x } else { copysign(r, x) }
}

/// GELU with the exact normal CDF: x * (1 + erf(x / sqrt 2)) / 2.
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * core::f32::consts::FRAC_1_SQRT_2))
}

/// GELU, tanh approximation: x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // sqrt(2/pi)
    0.5 * x * (1.0 + tanh(K * fma(0.044715 * x, x * x, x)))
}

/// SiLU: x * sigmoid(x). Below -92 the result is an f32 denormal that `e^x` alone no longer
/// reaches (it underflows to 0 from -103.3, while `x e^x` stays representable to about -110):
/// there it is `-e^(x + ln(-x))`, whose sum's rounding (~2^-17 relative) is far below the
/// denormal spacing, so `silu(-108.6) * inf` is `-inf` as in f32-rounded arithmetic, not NaN.
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    if x < -92.0 { -exp(x + log(-x)) } else { x * sigmoid(x) }
}

/// Base-2 logarithm.
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    intrinsics::log2f32(x)
}

/// Rounds toward zero to an integer.
#[inline(always)]
pub fn trunc(x: f32) -> f32 {
    intrinsics::truncf32(x)
}

/// `max(x, 0)`; NaN stays NaN and `relu(-0) = +0`.
#[inline(always)]
pub fn relu(x: f32) -> f32 {
    if x > 0.0 || x.is_nan() { x } else { 0.0 }
}

/// The larger of `a` and `b`, propagating NaN (unlike `v_max_f32`, which returns the other
/// operand); `maximum(-0, +0) = +0`.
#[inline(always)]
pub fn maximum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        a + b
    } else if a == b {
        f32::from_bits(a.to_bits() & b.to_bits()) // only differ in sign for zeros
    } else if a > b {
        a
    } else {
        b
    }
}

/// The smaller of `a` and `b`, propagating NaN; `minimum(-0, +0) = -0`.
#[inline(always)]
pub fn minimum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        a + b
    } else if a == b {
        f32::from_bits(a.to_bits() | b.to_bits())
    } else if a < b {
        a
    } else {
        b
    }
}

/// `x^y` with the special cases of C99 `powf` (F.9.4.4): `y = ±0` or `x = 1` give 1 (even for
/// NaN), `(-1)^±inf = 1`, a finite negative `x` with a non-integer finite `y` is NaN, and the sign
/// of a negative `x` (including -0 and -inf) survives odd integer powers.
///
/// Computed as `2^(y * log2 |x|)` in f32: the relative error grows with `|y * log2 |x||`
/// (about `2^-23 * |y log2 x|` plus a few ulp); tests state that bound.
#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    let ax = abs(x);
    let r = exp2(y * log2(ax));
    let y_int = trunc(y) == y; // true for ±inf too
    // Odd integers are exact in f32 below 2^24; above, every f32 is even.
    let y_odd = y_int && abs(y) < 16_777_216.0 && (y as i32) & 1 == 1;
    let negative = x.to_bits() >> 31 == 1;
    let mut res = if negative && y_odd { -r } else { r };
    if x < 0.0 && x.is_finite() && !y_int {
        res = f32::NAN;
    }
    if ax == 1.0 && y.is_infinite() {
        res = 1.0;
    }
    if y == 0.0 || x == 1.0 {
        res = 1.0;
    }
    res
}

/// The larger of `a` and `b`, NaN if either is NaN (IEEE 754-2019 `maximum`, except that -0
/// and +0 count as equal). Why not `core::intrinsics::maximumf32`: on amdgcn it is an outlined
/// call to its Rust fallback, not an instruction. This is `v_max_f32` plus a NaN check, and it
/// is commutative (reductions rely on every lane computing the same bits).
#[inline(always)]
pub fn max_nan(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() { a + b } else { a.max(b) }
}

/// The smaller of `a` and `b`, NaN if either is NaN (see [`max_nan`]).
#[inline(always)]
pub fn min_nan(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() { a + b } else { a.min(b) }
}

unsafe extern "unadjusted" {
    #[link_name = "llvm.amdgcn.exp2.f32"]
    fn llvm_amdgcn_exp2(x: f32) -> f32;
    #[link_name = "llvm.amdgcn.perm"]
    fn llvm_amdgcn_perm(src0: u32, src1: u32, sel: u32) -> u32;
    #[link_name = "llvm.amdgcn.rcp.f32"]
    fn llvm_amdgcn_rcp(x: f32) -> f32;
    #[link_name = "llvm.amdgcn.rsq.f32"]
    fn llvm_amdgcn_rsq(x: f32) -> f32;
}

/// `1 / x` as the single instruction `v_rcp_f32` (at most 1 ulp off; no rescaling of denormal
/// inputs or outputs). Why: `1.0 / x` is LLVM's correctly rounded division, about a dozen
/// instructions, which a latency-bound kernel's prologue pays in full when the quotient only
/// needs to be close (a reciprocal that a truncation or an f16/bf16 rounding follows).
#[inline(always)]
pub fn rcp_fast(x: f32) -> f32 {
    // SAFETY: a pure arithmetic instruction.
    unsafe { llvm_amdgcn_rcp(x) }
}

/// `1 / sqrt(x)` for `x >= 2^-126` or 0 (+inf), infinity (0) and NaN, as the single instruction
/// `v_rsq_f32` (at most 1 ulp off), where [`rsqrt`] is a correctly rounded square root and
/// division (some thirty instructions). Denormal `x` is the caller's to rescale.
#[inline(always)]
pub fn rsq_fast(x: f32) -> f32 {
    // SAFETY: a pure arithmetic instruction.
    unsafe { llvm_amdgcn_rsq(x) }
}

/// `v_perm_b32`: byte `i` of the result is byte `sel[i]` of the 8 bytes `hi:lo` (0-3 pick `lo`'s
/// bytes, 4-7 `hi`'s; 12 gives 0x00). One instruction for any regrouping of bytes of two words,
/// which LLVM does not always find from shifts and masks.
#[inline(always)]
pub fn perm(hi: u32, lo: u32, sel: u32) -> u32 {
    // SAFETY: a pure bit operation.
    unsafe { llvm_amdgcn_perm(hi, lo, sel) }
}

/// 2^x as the single instruction `v_exp_f32` (about 1 ulp), without [`exp2`]'s rescaling of
/// results below 2^-126: those flush to 0. Why: [`exp2`] adds a compare, two selects and an
/// `ldexp` per call, and kernels exponentiating a whole row in registers (softmax) then run out
/// of registers; a probability below 1e-38 is 0 for every output dtype's purposes.
#[inline(always)]
pub fn exp2_fast(x: f32) -> f32 {
    // SAFETY: a pure arithmetic instruction.
    unsafe { llvm_amdgcn_exp2(x) }
}

/// Division by a run-time divisor `d >= 1` of numbers below 2^20, through f32: four vector
/// instructions for the quotient, where an integer division by a run-time value is about twenty
/// (scalar or vector). Exact: [`crate::num::quotient`] argues it and its tests check it.
#[derive(Clone, Copy)]
pub struct SmallDiv {
    d: u32,
    inv: f32,
}

impl SmallDiv {
    /// Division by `d` (0 is taken as 1).
    #[inline(always)]
    pub fn new(d: u32) -> SmallDiv {
        let d = d.max(1);
        SmallDiv { d, inv: rcp_fast(d as f32) }
    }

    /// `(t / d, t % d)` for `t < 2^20`.
    #[inline(always)]
    pub fn div_rem(self, t: u32) -> (u32, u32) {
        let q = crate::num::quotient(t, self.inv);
        (q, t - q * self.d)
    }
}
