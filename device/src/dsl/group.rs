//! Reductions over groups of lanes (DPP and `v_readlane`) and over the waves of a workgroup (LDS).
//!
//! Why not [`wave::reduce_sum_f32`](super::wave::reduce_sum_f32): that one moves data with
//! `ds_bpermute`, an LDS instruction per step. Here the steps inside a 16-lane row are DPP lane
//! moves (`quad_perm`, `row_half_mirror`, `row_mirror`) that LLVM folds into the combining VALU
//! instruction, and the last two steps read the four row results with `v_readlane` into SGPRs.
//! No LDS traffic at all until a group spans several waves.
//!
//! The combining function must be commutative (every lane of a group then ends with the same
//! bits: after a `quad_perm` step lane 0 computes `f(a0, a1)` and lane 1 `f(a1, a0)`). Mirror
//! steps act as butterflies because, after the previous steps, all lanes of a quad (then of an
//! 8-lane half row) already hold the same value.
//!
//! Every function here must be called by all 64 lanes of the wave (uniform control flow): a DPP
//! read from a disabled lane returns the reader's own value, which would be counted twice.

use super::ids::wave_id_x;
use super::lds::LdsSlice;
use super::simd::U32x4;
use super::sync::barrier;
use super::wave::{lane_id, readfirstlane};
use core::arch::amdgpu;

/// A value that can travel between lanes: up to four 32-bit words.
pub trait Words: Copy {
    /// Words used (1..=4).
    const N: usize;
    /// The value as words (unused words zero).
    fn to_words(self) -> [u32; 4];
    /// The value from its words.
    fn from_words(w: [u32; 4]) -> Self;
}

impl Words for f32 {
    const N: usize = 1;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.to_bits(), 0, 0, 0]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        f32::from_bits(w[0])
    }
}

impl Words for (f32, u32) {
    const N: usize = 2;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.0.to_bits(), self.1, 0, 0]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        (f32::from_bits(w[0]), w[1])
    }
}

impl Words for (f32, f32) {
    const N: usize = 2;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.0.to_bits(), self.1.to_bits(), 0, 0]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        (f32::from_bits(w[0]), f32::from_bits(w[1]))
    }
}

impl Words for (f32, f32, f32) {
    const N: usize = 3;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.0.to_bits(), self.1.to_bits(), self.2.to_bits(), 0]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        (f32::from_bits(w[0]), f32::from_bits(w[1]), f32::from_bits(w[2]))
    }
}

/// DPP controls (GFX9 `dpp_ctrl` encodings).
mod ctrl {
    /// `quad_perm:[1,0,3,2]`: lane i reads lane i ^ 1.
    pub const QUAD_XOR1: u32 = 0xB1;
    /// `quad_perm:[2,3,0,1]`: lane i reads lane i ^ 2.
    pub const QUAD_XOR2: u32 = 0x4E;
    /// `row_half_mirror`: lane i of an 8-lane half row reads lane 7 - i.
    pub const ROW_HALF_MIRROR: u32 = 0x141;
    /// `row_mirror`: lane i of a 16-lane row reads lane 15 - i.
    pub const ROW_MIRROR: u32 = 0x140;
}

/// `v` as held by the lane `CTRL` selects (all rows and banks enabled).
#[inline(always)]
fn dpp<T: Words, const CTRL: u32>(v: T) -> T {
    let w = v.to_words();
    let mut o = [0u32; 4];
    crate::unroll!(i < 4 => {
        if i < T::N {
            // SAFETY: a register move between lanes; the controls used here always name a lane
            // of the same row, which is active under the module's calling rule.
            o[i] = unsafe { amdgpu::update_dpp::<CTRL, 0xF, 0xF, false>(w[i], w[i]) };
        }
    });
    T::from_words(o)
}

/// `v` as held by lane `LANE`, wave-uniform.
#[inline(always)]
fn readlane<T: Words, const LANE: u32>(v: T) -> T {
    let w = v.to_words();
    let mut o = [0u32; 4];
    crate::unroll!(i < 4 => {
        if i < T::N {
            // SAFETY: LANE is a constant below 64.
            o[i] = unsafe { amdgpu::readlane_u32(w[i], LANE) };
        }
    });
    T::from_words(o)
}

/// Combines `v` over aligned groups of `lanes` lanes (1, 2, 4, ..., 64; wave-uniform). Every lane
/// of a group returns the group's result. `f` must be commutative; all lanes must be active.
#[inline(always)]
pub fn reduce_lanes<T: Words>(mut v: T, lanes: u32, f: impl Fn(T, T) -> T) -> T {
    if lanes >= 2 {
        v = f(v, dpp::<T, { ctrl::QUAD_XOR1 }>(v));
    }
    if lanes >= 4 {
        v = f(v, dpp::<T, { ctrl::QUAD_XOR2 }>(v));
    }
    if lanes >= 8 {
        v = f(v, dpp::<T, { ctrl::ROW_HALF_MIRROR }>(v));
    }
    if lanes >= 16 {
        v = f(v, dpp::<T, { ctrl::ROW_MIRROR }>(v));
    }
    if lanes >= 32 {
        let lo = f(readlane::<T, 0>(v), readlane::<T, 16>(v));
        let hi = f(readlane::<T, 32>(v), readlane::<T, 48>(v));
        v = if lanes >= 64 {
            f(lo, hi)
        } else if lane_id() < 32 {
            lo
        } else {
            hi
        };
    }
    v
}

/// LDS words [`reduce_waves`] needs: two phases of one 16-byte slot per wave of a 1024-item
/// workgroup.
pub const REDUCE_WAVES_LDS_BYTES: usize = 2 * 16 * 16;

/// The first half of a reduction over waves ([`reduce_waves`], [`reduce_waves_within`]): the
/// wave's `v` into its slot of phase `phase`, the barrier, and where the phase's slots and the
/// wave's group (of `waves`, at least 1) start: `(slots, first)`, slot indices.
///
/// # Safety
/// As [`reduce_waves`].
#[inline(always)]
unsafe fn publish<T: Words>(v: T, waves: u32, lds: LdsSlice<U32x4>, phase: u32) -> (usize, usize) {
    let wave = wave_id_x();
    let slots = (phase & 1) as usize * 16;
    if lane_id() == 0 {
        // SAFETY: wave < 16 for workgroups of at most 1024 items; one writer per slot.
        unsafe { lds.write(slots + wave as usize, U32x4::from_array(v.to_words())) };
    }
    barrier();
    // (Through f32: an integer division by the run-time group size is some twenty scalar
    // instructions on the caller's critical path.)
    (slots, (wave - readfirstlane(super::math::SmallDiv::new(waves).div_rem(wave).1)) as usize)
}

/// Combines per-wave values (already reduced over each wave) over aligned groups of `waves`
/// consecutive waves, through LDS; every lane of the group's waves returns the result, combined
/// in wave order (so every wave computes the same bits).
///
/// `lds` holds at least 32 slots ([`REDUCE_WAVES_LDS_BYTES`]). Calls alternate `phase` (0, 1):
/// a wave can then start the next call while a slower one still reads this call's slots, and no
/// second barrier is needed.
///
/// # Safety
/// Every wave of the workgroup calls this the same number of times (it contains a barrier), and
/// nothing else uses `lds` meanwhile.
#[inline(always)]
pub unsafe fn reduce_waves<T: Words>(v: T, waves: u32, lds: LdsSlice<U32x4>, phase: u32, f: impl Fn(T, T) -> T) -> T {
    // max(1): callers never pass 0, and LLVM then drops the divide-by-zero panic.
    let waves = waves.max(1);
    // SAFETY: forwarded to the caller.
    let (slots, first) = unsafe { publish(v, waves, lds, phase) };
    // SAFETY: the slots of this group were written before the barrier; every lane reads the same
    // address (a broadcast, no bank conflict).
    let mut acc = T::from_words(unsafe { lds.read(slots + first) }.to_array());
    let mut w = 1;
    while w < waves as usize {
        acc = f(acc, T::from_words(unsafe { lds.read(slots + first + w) }.to_array()));
        w += 1;
    }
    acc
}

/// [`reduce_waves`] in a workgroup of at most `MAX` waves (8 or fewer): the same result, read
/// in one go. Each wave reads the `MAX` slots from its group's first at constant offsets (the
/// slots past the group, other groups' or unwritten, are read and left out by a select) and
/// waits once; the loop over the run-time group size (unrolled by LLVM) waited for each
/// slot's read before the next, their destination registers overlapping.
///
/// # Safety
/// As [`reduce_waves`]; the workgroup has at most `MAX` waves.
#[inline(always)]
pub unsafe fn reduce_waves_within<T: Words, const MAX: usize>(
    v: T,
    waves: u32,
    lds: LdsSlice<U32x4>,
    phase: u32,
    f: impl Fn(T, T) -> T,
) -> T {
    // The group's first wave is below MAX, so its slots and the MAX - 1 after them stay inside
    // the phase's 16.
    const { assert!(MAX >= 1 && 2 * MAX - 1 <= 16) };
    let waves = waves.max(1);
    // SAFETY: forwarded to the caller.
    let (slots, first) = unsafe { publish(v, waves, lds, phase) };
    // SAFETY: inside the phase's slots (above); the group's were written before the barrier,
    // every lane reads the same address (a broadcast, no bank conflict). Only `T::N` words.
    let word = |i: usize, k: usize| unsafe { (lds.as_ptr() as *const u32).add(4 * i + k).read() };
    let mut got = [[0u32; 4]; MAX];
    crate::unroll_max!(w < MAX, 8 => {
        crate::unroll!(k < 4 => {
            if k < T::N {
                got[w][k] = word(slots + first + w, k);
            }
        });
    });
    let mut acc = T::from_words(got[0]);
    crate::unroll_max!(w < MAX, 8 => {
        if w > 0 {
            let with = f(acc, T::from_words(got[w]));
            acc = if (w as u32) < waves { with } else { acc };
        }
    });
    acc
}

/// Combines `v` over aligned groups of `lanes` lanes (a power of two up to 1024, uniform over the
/// workgroup): within a wave with [`reduce_lanes`], across waves with [`reduce_waves`].
///
/// # Safety
/// As [`reduce_waves`] when `lanes > 64` (every wave calls, the same number of times).
#[inline(always)]
pub unsafe fn reduce_group<T: Words>(v: T, lanes: u32, lds: LdsSlice<U32x4>, phase: u32, f: impl Fn(T, T) -> T + Copy) -> T {
    if lanes <= 64 {
        reduce_lanes(v, lanes, f)
    } else {
        let v = reduce_lanes(v, 64, f);
        // SAFETY: forwarded to the caller.
        unsafe { reduce_waves(v, lanes / 64, lds, phase, f) }
    }
}
