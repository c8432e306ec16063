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

/// Exact division of any u32 by a divisor fixed for a launch: the host computes a multiplier
/// and a shift once ([`Divisor::new`], passed in the kernel's arguments), and the kernel divides
/// with a high multiply, a subtraction, an addition and two shifts ([`Divisor::div_rem`]),
/// scalar when the dividend is uniform, where a run-time division is about twenty instructions
/// with a transcendental reciprocal among them. For dividends [`quotient`] cannot take (it stops
/// at 2^20): positions in a context, slots of a paged cache.
///
/// The method is Granlund and Montgomery's for invariant divisors ("Division by invariant
/// integers using multiplication", 1994, figure 4.1): with `l = ceil(log2 d)` and `m = floor(2^32
/// (2^l - d) / d) + 1`, `t1 = mulhi(m, n)` and `q = (t1 + ((n - t1) >> min(l, 1))) >> max(l - 1,
/// 0)` is `floor(n / d)` for every 32-bit `n`. The tests check it against `/` on edge and
/// random dividends for divisors of every size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    /// The divisor (at least 1).
    pub d: u32,
    /// `m` above (below 2^32 for every `d`).
    pub magic: u32,
    /// `l` above, 0 to 32.
    pub shift: u32,
}

impl Divisor {
    /// The multiplier and shift for `d` (0 is taken as 1).
    pub const fn new(d: u32) -> Divisor {
        let d = if d == 0 { 1 } else { d };
        // ceil(log2 d): 0 for 1, 32 for d above 2^31.
        let l = 32 - (d - 1).leading_zeros();
        let magic = (((1u64 << l) - d as u64) << 32) / d as u64 + 1;
        Divisor { d, magic: magic as u32, shift: l }
    }

    /// `(n / d, n % d)` for any `n`.
    #[inline(always)]
    pub const fn div_rem(self, n: u32) -> (u32, u32) {
        let t1 = ((self.magic as u64 * n as u64) >> 32) as u32;
        let (sh1, sh2) = if self.shift == 0 { (0, 0) } else { (1, self.shift - 1) };
        let q = (t1 + ((n - t1) >> sh1)) >> sh2;
        (q, n - q * self.d)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn invariant_division_is_exact_for_every_divisor_size() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut divisors: Vec<u32> = (1..=300).collect();
        for b in 2..32 {
            divisors.extend([(1u32 << b) - 1, 1 << b, (1 << b) + 1, 3 << (b - 1)]);
        }
        divisors.extend([u32::MAX, u32::MAX - 1, (1 << 31) + 1, 1 << 31, 0x8000_0001, 0x7fff_ffff]);
        divisors.extend((0..200).map(|_| next() as u32 >> (next() % 32)).filter(|&d| d > 0));
        for &d in &divisors {
            let div = Divisor::new(d);
            let mut dividends = vec![0, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1, 1 << 30];
            dividends.extend((1..8u64).map(|k| (k * d as u64).min(u32::MAX as u64) as u32));
            dividends.extend((1..8u64).map(|k| (k * d as u64).saturating_sub(1).min(u32::MAX as u64) as u32));
            dividends.extend((0..500).map(|_| next() as u32 >> (next() % 32)));
            for n in dividends {
                assert_eq!(div.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
        // Small divisors against every dividend up to 2^20 (the paged caches' page sizes).
        for d in [16u32, 48, 64, 256] {
            let div = Divisor::new(d);
            for n in 0..1 << 20 {
                assert_eq!(div.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
        assert_eq!(Divisor::new(0), Divisor::new(1));
    }

    #[test]
    fn a_wrong_multiplier_gives_wrong_quotients() {
        // The check above can fail: one less in the multiplier of 7 truncates some quotient.
        let good = Divisor::new(7);
        let bad = Divisor { magic: good.magic - 1, ..good };
        assert!((0..1u32 << 20).any(|n| bad.div_rem(n) != (n / 7, n % 7)));
    }

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
