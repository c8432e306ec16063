//! What a reduction keeps per lane, how one element updates it and how two combine.
//!
//! NaN and ties (the rules the host documents and the reference implements):
//! - sum/mean: IEEE arithmetic (a NaN, or +inf with -inf, gives NaN);
//! - max/min: NaN if any element is NaN (as numpy's `max`; -0 and +0 are equal);
//! - argmax/argmin: the index of the first NaN if there is one, else of the first extreme value.
//!
//! Every `merge` is commutative and associative on the values it can see, so the order lanes
//! and workgroups are combined in changes no arg result, and sums differ only by rounding.

use crate::dsl::group::Words;
use crate::dsl::math::{max_nan, min_nan};

/// A reduction's per-lane state.
pub trait Reducer {
    /// The state.
    type S: Words;
    /// The state of no elements.
    fn empty() -> Self::S;
    /// Adds element `x` at index `i`; elements reach one lane in increasing index order.
    fn push(s: Self::S, x: f32, i: u32) -> Self::S;
    /// Combines two states (commutative).
    fn merge(a: Self::S, b: Self::S) -> Self::S;
    /// The reduced value.
    fn value(s: Self::S) -> f32;
    /// The reduced index (arg ops; 0 for the others).
    fn index(s: Self::S) -> u32;
    /// A state from a partial written by [`Reducer::value`] and [`Reducer::index`].
    fn from_partial(v: f32, i: u32) -> Self::S;
}

/// Sum (and mean: the division happens at the output).
pub struct Sum;
/// NaN-propagating maximum.
pub struct Max;
/// NaN-propagating minimum.
pub struct Min;
/// First index of the maximum (of the first NaN if any).
pub struct ArgMax;
/// First index of the minimum (of the first NaN if any).
pub struct ArgMin;

impl Reducer for Sum {
    type S = f32;
    #[inline(always)]
    fn empty() -> f32 {
        0.0
    }
    #[inline(always)]
    fn push(s: f32, x: f32, _: u32) -> f32 {
        s + x
    }
    #[inline(always)]
    fn merge(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn value(s: f32) -> f32 {
        s
    }
    #[inline(always)]
    fn index(_: f32) -> u32 {
        0
    }
    #[inline(always)]
    fn from_partial(v: f32, _: u32) -> f32 {
        v
    }
}

impl Reducer for Max {
    type S = f32;
    #[inline(always)]
    fn empty() -> f32 {
        f32::NEG_INFINITY
    }
    #[inline(always)]
    fn push(s: f32, x: f32, _: u32) -> f32 {
        max_nan(s, x)
    }
    #[inline(always)]
    fn merge(a: f32, b: f32) -> f32 {
        max_nan(a, b)
    }
    #[inline(always)]
    fn value(s: f32) -> f32 {
        s
    }
    #[inline(always)]
    fn index(_: f32) -> u32 {
        0
    }
    #[inline(always)]
    fn from_partial(v: f32, _: u32) -> f32 {
        v
    }
}

impl Reducer for Min {
    type S = f32;
    #[inline(always)]
    fn empty() -> f32 {
        f32::INFINITY
    }
    #[inline(always)]
    fn push(s: f32, x: f32, _: u32) -> f32 {
        min_nan(s, x)
    }
    #[inline(always)]
    fn merge(a: f32, b: f32) -> f32 {
        min_nan(a, b)
    }
    #[inline(always)]
    fn value(s: f32) -> f32 {
        s
    }
    #[inline(always)]
    fn index(_: f32) -> u32 {
        0
    }
    #[inline(always)]
    fn from_partial(v: f32, _: u32) -> f32 {
        v
    }
}

/// The index of a state that has seen no element (sorts after every real index).
pub const NO_INDEX: u32 = u32::MAX;

/// True when `a` (value, index) beats `b`: `GREATER` for argmax, else argmin. NaN beats numbers,
/// equal values (and two NaNs) go to the lower index, an empty state loses to everything.
#[inline(always)]
fn beats<const GREATER: bool>(a: (f32, u32), b: (f32, u32)) -> bool {
    let (an, bn) = (a.0.is_nan(), b.0.is_nan());
    if an || bn {
        // One NaN wins; two NaNs (or an empty state, whose index is NO_INDEX) go by index.
        if an && bn { a.1 < b.1 } else { an && a.1 != NO_INDEX }
    } else if a.0 == b.0 {
        a.1 < b.1
    } else if GREATER {
        a.0 > b.0
    } else {
        a.0 < b.0
    }
}

macro_rules! arg_reducer {
    ($t:ident, $greater:literal, $empty:expr) => {
        impl Reducer for $t {
            type S = (f32, u32);
            #[inline(always)]
            fn empty() -> (f32, u32) {
                ($empty, NO_INDEX)
            }
            #[inline(always)]
            fn push(s: (f32, u32), x: f32, i: u32) -> (f32, u32) {
                // Indices arrive increasing: a later element wins only when strictly better, or
                // when it is the first NaN, or the first element at all.
                let take = s.1 == NO_INDEX || (x.is_nan() && !s.0.is_nan()) || if $greater { x > s.0 } else { x < s.0 };
                if take { (x, i) } else { s }
            }
            #[inline(always)]
            fn merge(a: (f32, u32), b: (f32, u32)) -> (f32, u32) {
                if b.1 == NO_INDEX || (a.1 != NO_INDEX && beats::<$greater>(a, b)) { a } else { b }
            }
            #[inline(always)]
            fn value(s: (f32, u32)) -> f32 {
                s.0
            }
            #[inline(always)]
            fn index(s: (f32, u32)) -> u32 {
                s.1
            }
            #[inline(always)]
            fn from_partial(v: f32, i: u32) -> (f32, u32) {
                (v, i)
            }
        }
    };
}

arg_reducer!(ArgMax, true, f32::NEG_INFINITY);
arg_reducer!(ArgMin, false, f32::INFINITY);
