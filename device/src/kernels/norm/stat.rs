//! The row statistics of the two norms: what a lane computes from its slots and how lanes merge.

use crate::dsl::chunk::Elem;
use crate::dsl::group::Words;
use crate::kernels::rows::{Slots, Spread};

/// A norm's row statistic.
pub trait Stat {
    /// The per-lane (and merged) state.
    type T: Words;
    /// The state of no elements.
    fn empty() -> Self::T;
    /// The lane's state over its valid slots (empty slots hold 0).
    fn local<E: Elem>(x: &Slots, sp: &Spread) -> Self::T;
    /// Merges two states (commutative, so every lane of a group ends with the same bits).
    fn merge(a: Self::T, b: Self::T) -> Self::T;
    /// What the output subtracts and the mean square it divides by, for a row of `n` elements.
    fn shift_and_square(t: Self::T, n: f32) -> (f32, f32);
    /// The state as the words of a 16-byte statistic slot.
    fn to_stat(t: Self::T) -> [u32; 4] {
        t.to_words()
    }
    /// The state from a statistic slot.
    fn from_stat(w: [u32; 4]) -> Self::T {
        Self::T::from_words(w)
    }
}

/// RMSNorm: the sum of squares.
pub struct Rms;

impl Stat for Rms {
    type T = f32;
    #[inline(always)]
    fn empty() -> f32 {
        0.0
    }
    #[inline(always)]
    fn local<E: Elem>(x: &Slots, _: &Spread) -> f32 {
        let mut s = 0.0;
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { s += x[h * 16 + j] * x[h * 16 + j]; }); });
        s
    }
    #[inline(always)]
    fn merge(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn shift_and_square(t: f32, n: f32) -> (f32, f32) {
        (0.0, t / n)
    }
}

/// LayerNorm: `(count, mean, M2)`, M2 the sum of squared deviations from the mean.
pub struct Layer;

impl Stat for Layer {
    type T = (f32, f32, f32);
    #[inline(always)]
    fn empty() -> (f32, f32, f32) {
        (0.0, 0.0, 0.0)
    }
    #[inline(always)]
    fn local<E: Elem>(x: &Slots, sp: &Spread) -> (f32, f32, f32) {
        // Two passes over the lane's registers: the mean, then squared deviations.
        let c = sp.count::<E>() as f32;
        if c == 0.0 {
            return (0.0, 0.0, 0.0);
        }
        let mut s = 0.0;
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { s += x[h * 16 + j]; }); });
        let mean = s / c;
        let mut m2 = 0.0;
        crate::unroll!(h < 2 => {
            crate::unroll!(j < 16 => {
                let d = x[h * 16 + j] - mean;
                if sp.valid::<E>(h * 16 + j) {
                    m2 += d * d;
                }
            });
        });
        (c, mean, m2)
    }
    #[inline(always)]
    fn merge(a: (f32, f32, f32), b: (f32, f32, f32)) -> (f32, f32, f32) {
        // Chan et al.'s pairwise update, written symmetrically in a and b. An empty side passes
        // the other through unchanged (no rounding of its mean).
        if a.0 == 0.0 {
            return b;
        }
        if b.0 == 0.0 {
            return a;
        }
        let n = a.0 + b.0;
        let mean = (a.0 * a.1 + b.0 * b.1) / n;
        let d = b.1 - a.1;
        (n, mean, a.2 + b.2 + d * d * (a.0 * b.0 / n))
    }
    #[inline(always)]
    fn shift_and_square(t: (f32, f32, f32), n: f32) -> (f32, f32) {
        (t.1, t.2 / n)
    }
}
