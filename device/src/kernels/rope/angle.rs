//! cos and sin of `pos * f` for integer positions, accurate for large positions.
//!
//! Why not `sin(pos as f32 * f)`: at position 10^5 the f32 product alone is off by up to
//! 2^-24 * 10^5 = 0.006 rad, and the hardware `v_sin_f32` takes revolutions with reduced
//! accuracy. Here the product is kept as an unevaluated sum `ph + pl` (`pl` the FMA-exact
//! rounding error of `pos * hi`, plus `pos * lo`), reduced modulo 2pi with a two-part 2pi
//! (Cody-Waite), then modulo pi/2, and finished with the minimax polynomials of Cephes' sinf and
//! cosf on [-pi/4, pi/4]. Error: about 1e-7 absolute for |pos| < 2^24 (where `pos as f32` is
//! exact) and angles up to ~10^7 rad.

use crate::dsl::math::fma;
use core::intrinsics::round_ties_even_f32 as rint;

/// 2pi rounded to f32 (6.2831855). Its last bit is 2^-21, so `k * TWO_PI_HI` is a multiple of
/// 2^-21, and `ph - k * TWO_PI_HI` (|.| < 4) is exact in one FMA.
const TWO_PI_HI: f32 = 6.283_185_5;
/// 2pi - TWO_PI_HI.
const TWO_PI_LO: f32 = -1.748_455_5e-7;
/// 1 / 2pi.
const INV_TWO_PI: f32 = 0.159_154_94;
/// pi/2 rounded to f32.
const PI_2_HI: f32 = 1.570_796_4;
/// pi/2 - PI_2_HI.
const PI_2_LO: f32 = -4.371_139e-8;
/// 2 / pi.
const TWO_OVER_PI: f32 = 0.636_619_8;

/// `(sin, cos)` of `pos * (hi + lo)`.
#[inline(always)]
pub fn sincos_pos(pos: i32, hi: f32, lo: f32) -> (f32, f32) {
    let p = pos as f32;
    let ph = p * hi;
    let pl = fma(p, hi, -ph) + p * lo;
    let k = rint(ph * INV_TWO_PI);
    let r = fma(-k, TWO_PI_HI, ph);
    let r = fma(-k, TWO_PI_LO, r) + pl;
    sincos_small(r)
}

/// `(sin, cos)` of `r`, |r| up to a little over pi.
#[inline(always)]
pub fn sincos_small(r: f32) -> (f32, f32) {
    let q = rint(r * TWO_OVER_PI);
    // Exact for |q| <= 2 (Sterbenz), then the low part of pi/2.
    let y = fma(-q, PI_2_LO, fma(-q, PI_2_HI, r));
    let z = y * y;
    let s = fma(y * z, fma(fma(-1.951_529_6e-4, z, 8.332_161e-3), z, -1.666_665_5e-1), y);
    let c = fma(z * z, fma(fma(2.443_315_7e-5, z, -1.388_731_6e-3), z, 4.166_664_6e-2), fma(-0.5, z, 1.0));
    match (q as i32) & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}
