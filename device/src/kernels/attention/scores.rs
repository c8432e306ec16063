//! A wave's scores in the 16x16 MFMA accumulator layout, and the online softmax over them.
//!
//! The kernels compute `S^T = K Q^T` (keys are the MFMA rows, queries the columns), so that the
//! accumulator layout is already the B operand of `O^T += V^T P^T`: register `r` of lane `l` in
//! key tile `i`, query tile `t` holds key `16 i + 4 (l / 16) + r`, query column `16 t + l % 16`
//! (GFX942.md, 16x16 C layout), and the second MFMA wants, per lane, query `l % 16` and keys
//! `4 (l / 16) + 0..4` packed in two words: the same lane, the same registers. No shuffle.
//!
//! So a lane owns one query column per query tile: its running max and sum are per lane, and a
//! row's statistics combine over the four lanes `l % 16 + 16 h` (two butterfly steps).

use crate::abi::{Bf16, F16};
use crate::dsl::math::{exp2_fast, perm};
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::wave::shuffle_xor_f32;
use crate::tile::mma::MmaInput;
use core::intrinsics::simd::{simd_add, simd_mul};

/// Scores of `KT` key tiles by `QT` query tiles (16x16 each).
pub type Scores<const KT: usize, const QT: usize> = [[F32x4; QT]; KT];

/// The input types of attention: 16-bit floats the matrix cores multiply, and how a
/// probability (in [0, 1], or NaN) is rounded to one.
pub trait Half: MmaInput {
    /// Two values rounded to the type, `a` in the low half.
    fn pack(a: f32, b: f32) -> u32;
}

impl Half for Bf16 {
    /// Round to nearest, ties away from zero: the carry of `+ 0x8000` (probabilities are
    /// non-negative and never infinite, and a NaN stays a NaN), then the two high halves
    /// together (one `v_perm_b32`): 3 instructions per pair against 8 for ties-to-even with NaN
    /// handling, on the softmax's critical path.
    #[inline(always)]
    fn pack(a: f32, b: f32) -> u32 {
        // Bytes 2, 3 of a (low half of the result), then bytes 2, 3 of b.
        perm(b.to_bits().wrapping_add(0x8000), a.to_bits().wrapping_add(0x8000), 0x0706_0302)
    }
}

impl Half for F16 {
    /// The hardware conversion (nearest even).
    #[inline(always)]
    fn pack(a: f32, b: f32) -> u32 {
        (a as f16).to_bits() as u32 | ((b as f16).to_bits() as u32) << 16
    }
}

/// The two 16x16 MFMA B-operands (keys `32 t ..`, both halves of a 32-key V^T tile; see
/// `tile::transposed`) of query tile `tq`, from probabilities in key tiles `2 t` and `2 t + 1`.
#[inline(always)]
pub fn p_chunk<E: Half, const KT: usize, const QT: usize>(p: &Scores<KT, QT>, t: usize, tq: usize) -> U32x4 {
    let (a, b) = (p[2 * t][tq].to_array(), p[2 * t + 1][tq].to_array());
    U32x4::from_array([E::pack(a[0], a[1]), E::pack(a[2], a[3]), E::pack(b[0], b[1]), E::pack(b[2], b[3])])
}

/// `-inf` at every score whose key falls outside its query's allowed range. The lane's key of
/// register `r` in key tile `i` is `key0 + 16 i + r`; query tile `t`'s column allows keys with
/// `(key - lo[t]) as u32 <= span[t]` (see [`KeyRange`]).
#[inline(always)]
pub fn mask<const KT: usize, const QT: usize>(s: &mut Scores<KT, QT>, key0: i32, ranges: &[KeyRange; QT]) {
    crate::unroll_max!(i < KT, 4 => {
        crate::unroll_max!(t < QT, 2 => {
            let mut v = s[i][t].to_array();
            crate::unroll_max!(r < 4, 4 => {
                let key = key0 + (16 * i + r) as i32;
                if !ranges[t].allows(key) {
                    v[r] = f32::NEG_INFINITY;
                }
            });
            s[i][t] = F32x4::from_array(v);
        });
    });
}

/// The keys one query row may attend: `lo ..= lo + span`, or none.
#[derive(Clone, Copy)]
pub struct KeyRange {
    lo: i32,
    span: u32,
}

impl KeyRange {
    /// Keys `lo ..= hi` (none when `hi < lo`).
    #[inline(always)]
    pub fn new(lo: i32, hi: i32) -> KeyRange {
        // An empty range starts past every key: `key - lo` is negative, a huge u32, above 0.
        if hi < lo { KeyRange { lo: i32::MAX, span: 0 } } else { KeyRange { lo, span: (hi - lo) as u32 } }
    }

    /// Whether `key` is in the range (one subtract and one unsigned compare).
    #[inline(always)]
    pub fn allows(&self, key: i32) -> bool {
        (key.wrapping_sub(self.lo) as u32) <= self.span
    }
}

/// The online-softmax statistics of a lane's query columns: the running maximum of
/// `scale_log2 * s` (log2 units) and the lane's share of the running sum of `exp2` below it.
#[derive(Clone, Copy)]
pub struct Online<const QT: usize> {
    /// Running maximum per query tile (-inf before the first allowed key).
    pub m: [f32; QT],
    /// This lane's partial sum per query tile (its keys only, see [`Online::row_sum`]).
    pub l: [f32; QT],
}

impl<const QT: usize> Online<QT> {
    /// Nothing seen yet.
    #[inline(always)]
    pub fn new() -> Self {
        Online { m: [f32::NEG_INFINITY; QT], l: [0.0; QT] }
    }

    /// Folds one block of raw scores `s` (in place: they become the probabilities
    /// `exp2(c s - m)` in f32) into the statistics, `c` = `scale_log2`; returns per query tile
    /// the factor `exp2(m_old - m_new)` by which earlier sums and accumulators must be scaled.
    ///
    /// A column whose maximum is still `-inf` (every key so far masked) subtracts 0 instead, so
    /// its probabilities are `exp2(-inf) = 0`, not NaN, and its factor is 0. NaN scores are
    /// ignored by the maximum and propagate through their probability.
    ///
    /// Why scale first and take the maximum of `c s`: in IEEE mode `v_max_f32` must not see a
    /// signalling NaN, so LLVM quiets every operand it cannot prove canonical (an MFMA result)
    /// with one more `v_max_f32 x, x, x`: 68 instructions for a wave's 32 scores. Products are
    /// canonical: 16 packed multiplies and a tree of `v_max3_f32` do the same in 32.
    #[inline(always)]
    pub fn step<const KT: usize>(&mut self, s: &mut Scores<KT, QT>, c: f32) -> [f32; QT] {
        let mut alpha = [1.0f32; QT];
        crate::unroll_max!(t < QT, 2 => {
            let mut mx = f32::NEG_INFINITY;
            crate::unroll_max!(i < KT, 4 => {
                // SAFETY (simd_*): lane-wise arithmetic of plain f32 vectors.
                s[i][t] = unsafe { simd_mul(s[i][t], F32x4::splat(c)) };
                let v = s[i][t].to_array();
                // A chain, two values at a time: `v_max3_f32` each (a tree of pairs cost half
                // again as many instructions).
                mx = mx.max(v[0]).max(v[1]);
                mx = mx.max(v[2]).max(v[3]);
            });
            // The column's other keys are in lanes l ^ 16, l ^ 32, l ^ 48.
            mx = mx.max(shuffle_xor_f32(mx, 16));
            mx = mx.max(shuffle_xor_f32(mx, 32));
            let m_new = self.m[t].max(mx);
            let m_use = if m_new == f32::NEG_INFINITY { 0.0 } else { m_new };
            alpha[t] = exp2_fast(self.m[t] - m_use);
            let neg = F32x4::splat(-m_use);
            crate::unroll_max!(i < KT, 4 => {
                let x = unsafe { simd_add(s[i][t], neg) }.to_array();
                s[i][t] = F32x4::from_array([exp2_fast(x[0]), exp2_fast(x[1]), exp2_fast(x[2]), exp2_fast(x[3])]);
            });
            // The block's sum as a tree of packed additions (tiles pairwise, then halves): a
            // running sum from zero cost one more addition per column, and LLVM paired its
            // scalar tail across the two columns with moves in between.
            const { assert!(KT == 1 || KT == 2 || KT == 4, "the sum's tree is written for 1, 2 or 4 tiles") };
            let sum = if KT == 4 {
                unsafe { simd_add(simd_add(s[0][t], s[1][t]), simd_add(s[2 % KT][t], s[3 % KT][t])) }
            } else if KT == 2 {
                unsafe { simd_add(s[0][t], s[1 % KT][t]) }
            } else {
                s[0][t]
            }
            .to_array();
            self.l[t] = self.l[t] * alpha[t] + ((sum[0] + sum[2]) + (sum[1] + sum[3]));
            self.m[t] = m_new;
        });
        alpha
    }

    /// The whole sum of query tile `t`'s column (the four lanes' shares added).
    #[inline(always)]
    pub fn row_sum(&self, t: usize) -> f32 {
        let l = self.l[t] + shuffle_xor_f32(self.l[t], 16);
        l + shuffle_xor_f32(l, 32)
    }
}

impl<const QT: usize> Default for Online<QT> {
    fn default() -> Self {
        Self::new()
    }
}

/// `acc * f` lane-wise (two `v_pk_mul_f32`).
#[inline(always)]
pub fn scale(acc: F32x4, f: f32) -> F32x4 {
    // SAFETY: lane-wise arithmetic of plain f32 vectors.
    unsafe { simd_mul(acc, F32x4::splat(f)) }
}
