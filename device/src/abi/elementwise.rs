//! Elementwise kernels: fill, cast, unary and binary math, `where`. Memory-bound, so every
//! kernel moves each byte once, with 128-bit accesses per lane wherever the layout allows.
//!
//! One argument struct, [`EltArgs`], serves every n-ary elementwise kernel (cast, unary, binary,
//! where): up to three strided, broadcast inputs and one contiguous output of the same logical
//! shape. The kernel symbol fixes the dtypes; the operation is a uniform runtime code, so there is
//! one kernel per (op class, dtype), not per op.
//!
//! Shapes are given innermost dimension first (`size0` is the fastest-varying one) after the host
//! has dropped size-1 dimensions and merged dimensions that are contiguous in every operand.
//! Flat indices are split into coordinates with multiply-high "magic number" division
//! ([`FastDivisor`]), a handful of instructions instead of a ~40-instruction integer division.

use super::{Ptr, PtrMut};

/// Work-items per workgroup of the elementwise kernels (4 waves).
pub const ELT_BLOCK: u32 = 256;
/// Largest rank the strided/broadcast path indexes (more dimensions are merged or refused).
pub const ELT_MAX_RANK: usize = 6;
/// Largest element count of one launch: indices are 32-bit, and the last workgroup may round up
/// by up to `ELT_BLOCK * 16` elements past `n`.
pub const ELT_MAX_ELEMENTS: u64 = (1u64 << 32) - (1u64 << 16);

/// Unary operations (`EltArgs::op` of the `unary_*` kernels). Computed in f32.
pub mod unary_op {
    /// `-x`.
    pub const NEG: u32 = 0;
    /// `|x|`.
    pub const ABS: u32 = 1;
    /// `e^x`.
    pub const EXP: u32 = 2;
    /// Natural logarithm.
    pub const LOG: u32 = 3;
    /// Square root.
    pub const SQRT: u32 = 4;
    /// `1 / sqrt(x)`.
    pub const RSQRT: u32 = 5;
    /// `1 / x`.
    pub const RECIP: u32 = 6;
    /// Hyperbolic tangent.
    pub const TANH: u32 = 7;
    /// `1 / (1 + e^-x)`.
    pub const SIGMOID: u32 = 8;
    /// `max(x, 0)` (NaN stays NaN).
    pub const RELU: u32 = 9;
    /// `x * Phi(x)`, exact normal CDF (erf form).
    pub const GELU_ERF: u32 = 10;
    /// GELU, tanh approximation.
    pub const GELU_TANH: u32 = 11;
    /// `x * sigmoid(x)`.
    pub const SILU: u32 = 12;
    /// `alpha * x + beta` (the product rounded, then the sum: no FMA contraction).
    pub const AFFINE: u32 = 13;
    /// Number of unary operations.
    pub const COUNT: u32 = 14;
}

/// Binary operations (`EltArgs::op` of the `binary_*` kernels). Computed in f32.
pub mod binary_op {
    /// `a + b`.
    pub const ADD: u32 = 0;
    /// `a - b`.
    pub const SUB: u32 = 1;
    /// `a * b`.
    pub const MUL: u32 = 2;
    /// `a / b` (IEEE division, correctly rounded).
    pub const DIV: u32 = 3;
    /// The larger value; NaN if either is NaN; `max(-0, +0) = +0`.
    pub const MAX: u32 = 4;
    /// The smaller value; NaN if either is NaN; `min(-0, +0) = -0`.
    pub const MIN: u32 = 5;
    /// `a^b` with C99 `powf` special cases.
    pub const POW: u32 = 6;
    /// `silu(a) * b` (the gate of SwiGLU feed-forward blocks).
    pub const SILU_MUL: u32 = 7;
    /// Number of binary operations.
    pub const COUNT: u32 = 8;
}

/// Element type codes: the output type of the `cast_from_*` kernels and the condition type of the
/// `where_*` kernels (`EltArgs::type_code`).
pub mod type_code {
    /// IEEE binary32.
    pub const F32: u32 = 0;
    /// IEEE binary16.
    pub const F16: u32 = 1;
    /// bfloat16.
    pub const BF16: u32 = 2;
    /// fp8 E4M3FNUZ.
    pub const FP8_E4M3: u32 = 3;
    /// fp8 E5M2FNUZ.
    pub const FP8_E5M2: u32 = 4;
    /// 32-bit signed integer.
    pub const I32: u32 = 5;
    /// 8-bit integer (as a `where` condition: nonzero is true).
    pub const I8: u32 = 6;
}

/// Bits of `EltArgs::flags`.
pub mod elt_flags {
    /// Use the vector path: each work-item handles `EPL` output elements in groups of `E`
    /// consecutive ones ([`super::EltArgs::group_elements`]), the widest operand with 128-bit accesses.
    /// Set by the host when the output is 16-byte aligned and either the rank is 1 or the
    /// innermost size is a multiple of `E` (so no group crosses a row).
    pub const VECTOR: u32 = 1 << 0;
    /// Input 0 can be read with one wide load per group in the vector path: innermost stride 1,
    /// base and every outer stride aligned to the group's bytes (`E` elements of input 0: 16
    /// bytes for the widest operand, 4 or 8 for narrower ones).
    pub const IN0_VEC: u32 = 1 << 1;
    /// As [`IN0_VEC`] for input 1.
    pub const IN1_VEC: u32 = 1 << 2;
    /// As [`IN0_VEC`] for input 2.
    pub const IN2_VEC: u32 = 1 << 3;
}

/// Division by an invariant `d >= 1` as `q = (mulhi(n, magic) + n) >> shift` (the sum taken
/// without overflow), exact for every 32-bit `n` (Granlund & Montgomery 1994, theorem 4.2 with
/// `N = 32`, `l = ceil(log2 d)`, `m' = floor(2^32 (2^l - d) / d) + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastDivisor {
    /// The divisor.
    pub d: u32,
    /// `m' - 2^32`, which fits 32 bits.
    pub magic: u32,
    /// `ceil(log2 d)`.
    pub shift: u32,
}

impl FastDivisor {
    /// The magic numbers of `d` (`d = 0` is treated as 1).
    pub const fn new(d: u32) -> Self {
        let d = if d == 0 { 1 } else { d };
        let shift = 32 - (d - 1).leading_zeros(); // ceil(log2 d); 0 for d = 1
        let magic = (((1u64 << 32) * ((1u64 << shift) - d as u64)) / d as u64 + 1) as u32;
        FastDivisor { d, magic, shift }
    }

    /// `n / d`, as the kernels compute it.
    pub const fn div(&self, n: u32) -> u32 {
        let t = ((n as u64 * self.magic as u64) >> 32) as u32;
        ((t as u64 + n as u64) >> self.shift) as u32
    }
}

crate::kernel_abi! {
    /// Arguments of the n-ary elementwise kernels (`cast_*`, `unary_*`, `binary_*`, `where_*`):
    /// `out[i] = f(in0[off0(i)], in1[off1(i)], in2[off2(i)])` for the row-major index `i` of the
    /// (simplified) shape, where `offK` is the dot product of `i`'s coordinates with input K's
    /// strides (0 along broadcast dimensions). The output is contiguous.
    ///
    /// Launch `ceil(n / (ELT_BLOCK * EPL))` workgroups of [`ELT_BLOCK`], where `EPL` (elements
    /// per work-item) is `16 / min(element sizes)` of the kernel's operands (see each kernel and
    /// [`EltArgs::elements_per_item`]).
    pub struct EltArgs {
        /// Input 0 (the only input of cast/unary; `a` of binary; the condition of where).
        pub in0: Ptr<u8>,
        /// Input 1 (`b` of binary; the true value of where).
        pub in1: Ptr<u8>,
        /// Input 2 (the false value of where).
        pub in2: Ptr<u8>,
        /// The contiguous output, `n` elements.
        pub out: PtrMut<u8>,
        /// Element count (at most [`ELT_MAX_ELEMENTS`]).
        pub n: u32,
        /// Dimensions in use (1..=6; a 0-d tensor is rank 1 of size 1).
        pub rank: u32,
        /// Sizes of dimensions 0..5, innermost first (dimension `rank - 1` needs no divisor, so
        /// only 0..4 are passed). Scalars, not arrays: aggregates are passed indirectly by the
        /// `gpu-kernel` ABI.
        pub size0: u32,
        /// See `size0`.
        pub size1: u32,
        /// See `size0`.
        pub size2: u32,
        /// See `size0`.
        pub size3: u32,
        /// See `size0`.
        pub size4: u32,
        /// [`FastDivisor::magic`] of `size0`.
        pub magic0: u32,
        /// See `magic0`.
        pub magic1: u32,
        /// See `magic0`.
        pub magic2: u32,
        /// See `magic0`.
        pub magic3: u32,
        /// See `magic0`.
        pub magic4: u32,
        /// [`FastDivisor::shift`] of dimensions 0..4, 6 bits each (dimension k at bit 6k).
        pub shifts: u32,
        /// Strides of input 0 in elements, dimensions 0..5 (innermost first).
        pub in0_s0: u32,
        /// See `in0_s0`.
        pub in0_s1: u32,
        /// See `in0_s0`.
        pub in0_s2: u32,
        /// See `in0_s0`.
        pub in0_s3: u32,
        /// See `in0_s0`.
        pub in0_s4: u32,
        /// See `in0_s0`.
        pub in0_s5: u32,
        /// Strides of input 1.
        pub in1_s0: u32,
        /// See `in1_s0`.
        pub in1_s1: u32,
        /// See `in1_s0`.
        pub in1_s2: u32,
        /// See `in1_s0`.
        pub in1_s3: u32,
        /// See `in1_s0`.
        pub in1_s4: u32,
        /// See `in1_s0`.
        pub in1_s5: u32,
        /// Strides of input 2.
        pub in2_s0: u32,
        /// See `in2_s0`.
        pub in2_s1: u32,
        /// See `in2_s0`.
        pub in2_s2: u32,
        /// See `in2_s0`.
        pub in2_s3: u32,
        /// See `in2_s0`.
        pub in2_s4: u32,
        /// See `in2_s0`.
        pub in2_s5: u32,
        /// A [`unary_op`] or [`binary_op`] code.
        pub op: u32,
        /// A [`type_code`]: the output type of `cast_from_*`, the condition type of `where_*`.
        pub type_code: u32,
        /// [`elt_flags`] bits.
        pub flags: u32,
        /// `alpha` of [`unary_op::AFFINE`].
        pub alpha: f32,
        /// `beta` of [`unary_op::AFFINE`].
        pub beta: f32,
    }
    kernels {
        /// f32 -> any [`type_code`] (F32..I32): 4 elements per work-item (16 for fp8 outputs,
        /// 8 for 16-bit outputs) in groups of 4 (see [`EltArgs::group_elements`]).
        CAST_FROM_F32 = "cast_from_f32" @ 256,
        /// f16 -> any [`type_code`].
        CAST_FROM_F16 = "cast_from_f16" @ 256,
        /// bf16 -> any [`type_code`].
        CAST_FROM_BF16 = "cast_from_bf16" @ 256,
        /// fp8 E4M3FNUZ -> any [`type_code`].
        CAST_FROM_FP8_E4M3 = "cast_from_fp8e4m3fnuz" @ 256,
        /// fp8 E5M2FNUZ -> any [`type_code`].
        CAST_FROM_FP8_E5M2 = "cast_from_fp8e5m2fnuz" @ 256,
        /// i32 -> any [`type_code`].
        CAST_FROM_I32 = "cast_from_i32" @ 256,
        /// Any [`unary_op`] on f32 (4 elements per work-item).
        UNARY_F32 = "unary_f32" @ 256,
        /// Any [`unary_op`] on f16 (8 elements per work-item).
        UNARY_F16 = "unary_f16" @ 256,
        /// Any [`unary_op`] on bf16 (8 elements per work-item).
        UNARY_BF16 = "unary_bf16" @ 256,
        /// Any [`binary_op`] on f32 (4 elements per work-item).
        BINARY_F32 = "binary_f32" @ 256,
        /// Any [`binary_op`] on f16 (8 elements per work-item).
        BINARY_F16 = "binary_f16" @ 256,
        /// Any [`binary_op`] on bf16 (8 elements per work-item).
        BINARY_BF16 = "binary_bf16" @ 256,
        /// `out = cond ? in1 : in2` on 32-bit values; `cond` (input 0) is i8 or i32 per
        /// `type_code`, nonzero meaning true. 16 elements per work-item for an i8 condition, 4 for i32.
        WHERE_B32 = "where_b32" @ 256,
        /// As [`WHERE_B32`] on 16-bit values: 16 elements per work-item for an i8 condition, 8 for i32.
        WHERE_B16 = "where_b16" @ 256,
        /// As [`WHERE_B32`] on 8-bit values (fp8, i8): 16 elements per work-item.
        WHERE_B8 = "where_b8" @ 256,
    }
}

impl EltArgs {
    /// Elements per work-item (`EPL`) of a kernel whose narrowest operand element is `min_bytes`
    /// wide: 16 bytes of that operand.
    pub const fn elements_per_item(min_bytes: u32) -> u32 {
        16 / min_bytes
    }

    /// Elements per group (`E`) of the vector path of a kernel whose widest operand element is
    /// `max_bytes` wide: one 128-bit access of that operand per lane. A work-item's `EPL`
    /// elements are `EPL / E` groups a wave-width apart, so each access instruction of a wave
    /// covers one contiguous span in whole 64-byte lines.
    pub const fn group_elements(max_bytes: u32) -> u32 {
        16 / max_bytes
    }
}

crate::kernel_abi! {
    /// Arguments of `fill_b128`: every byte of `[dst, dst + bytes)` set from a 16-byte pattern
    /// indexed by address modulo 16 (`pattern` word k holds the bytes for addresses 4k..4k+3 mod 16).
    /// The host rotates the element's bytes so any dtype and any start alignment work with aligned
    /// 128-bit stores in the middle and byte stores at the two ragged ends.
    pub struct FillPatternArgs {
        /// First byte to fill (any alignment).
        pub dst: PtrMut<u8>,
        /// Bytes to fill.
        pub bytes: u64,
        /// Pattern word for addresses 0..3 mod 16.
        pub pattern0: u32,
        /// Pattern word for addresses 4..7 mod 16.
        pub pattern1: u32,
        /// Pattern word for addresses 8..11 mod 16.
        pub pattern2: u32,
        /// Pattern word for addresses 12..15 mod 16.
        pub pattern3: u32,
    }
    kernels {
        /// One aligned 16-byte chunk per work-item: launch `ceil(chunks / ELT_BLOCK)` workgroups
        /// of [`ELT_BLOCK`], `chunks` = the aligned 16-byte chunks overlapping the range.
        FILL_B128 = "fill_b128" @ 256,
    }
}
