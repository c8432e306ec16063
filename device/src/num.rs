//! Integer arithmetic the kernels do through f32, compiled for the host too so that its
//! exactness is tested there (`cargo test -p ferrocm-device`), not only argued.
//!
//! Why through f32: an integer division by a run-time divisor is about twenty instructions on
//! gfx942 (scalar or vector), where `v_rcp_f32`, a product and a conversion are four. Kernels
//! whose prologue is their critical path (the decode GEMV's: one instruction per 4 clocks for
//! the longest wave) divide this way (`dsl::math::SmallDiv`).

/// Numbers [`quotient`] divides are below this.
pub const QUOTIENT_LIMIT: u32 = 1 << 20;

/// `floor(t / d)` for `t < 2^20`, from `inv`, a reciprocal of `d >= 1` within one ulp of `1 / d`
/// (the hardware's `v_rcp_f32`): `trunc((t + 1/2) * inv)`.
///
/// Why it is exact: the exact `(t + 1/2) / d` is at least `1 / (2d)` from every integer;
/// `t + 1/2` is exact in f32, and `inv` (1 ulp) and the product (half an ulp) put the computed
/// value within `(t + 1/2) / d * 2^-22 < 2^20 / d * 2^-22 = 1 / (4d)` of it, so truncation gives
/// `floor(t / d)`. The tests check it for every `t` with divisors up to 64 and larger ones, for
/// the correctly rounded reciprocal and both its neighbours.
#[inline(always)]
pub fn quotient(t: u32, inv: f32) -> u32 {
    // SAFETY: finite, at least 0 and below 2^20 + 1 for the reciprocals above (a plain
    // conversion, not `as`'s saturating one: four instructions fewer on the device).
    unsafe { ((t as f32 + 0.5) * inv).to_int_unchecked::<u32>() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotients_are_exact_for_every_reciprocal_within_an_ulp() {
        let divisors = (1..=64u32).chain([96, 100, 255, 256, 1000, 4095, 65_535, 1 << 19, QUOTIENT_LIMIT - 1]);
        for d in divisors {
            let r = 1.0 / d as f32;
            for inv in [r, f32::from_bits(r.to_bits() - 1), f32::from_bits(r.to_bits() + 1)] {
                for t in 0..QUOTIENT_LIMIT {
                    let q = quotient(t, inv);
                    assert!(q == t / d, "{t} / {d} with reciprocal {inv:e} gave {q}");
                }
            }
        }
    }

    #[test]
    fn a_reciprocal_far_off_gives_wrong_quotients() {
        // The check above can fail: 40 ulps below 1/3 truncates some quotient one low.
        let r = 1.0f32 / 3.0;
        let inv = f32::from_bits(r.to_bits() - 40);
        assert!((0..QUOTIENT_LIMIT).any(|t| quotient(t, inv) != t / 3));
    }
}
