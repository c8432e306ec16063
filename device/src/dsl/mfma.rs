//! The gfx942 matrix-core (MFMA) instructions as plain functions.
//!
//! Each `mfma_MxNxK_T(a, b, c)` returns `c + A*B` for one wave: A is MxK, B is KxN, C/D is MxN, f32
//! accumulation. Which element each lane holds is the lane layout of ../shared/design/GFX942.md
//! ("MFMA instructions, lane layouts"); kernels index fragments with those formulas.
//!
//! The `_with::<CBSZ, ABID, BLGP>` forms expose the broadcast modifiers (CBSZ/ABID: broadcast one
//! A block to the others; BLGP: B lane-group pattern). They are immediates, hence const generics.
//!
//! fp8/bf8 and int8 operands are 8 packed bytes in a `u64` (k order, lowest byte first); int8
//! products accumulate exactly in i32 (wrapping).

use super::simd::{Bf16x4, F16x4, F32x2, F32x4, F32x16, I32x4, I32x16};

unsafe extern "unadjusted" {
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x8f16"]
    fn llvm_mfma_32x32x8f16(a: F16x4, b: F16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x16f16"]
    fn llvm_mfma_16x16x16f16(a: F16x4, b: F16x4, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x8bf16.1k"]
    fn llvm_mfma_32x32x8bf16(a: Bf16x4, b: Bf16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x16bf16.1k"]
    fn llvm_mfma_16x16x16bf16(a: Bf16x4, b: Bf16x4, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.fp8.fp8"]
    fn llvm_mfma_32x32x16_fp8_fp8(a: i64, b: i64, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.fp8.bf8"]
    fn llvm_mfma_32x32x16_fp8_bf8(a: i64, b: i64, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.bf8.fp8"]
    fn llvm_mfma_32x32x16_bf8_fp8(a: i64, b: i64, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.bf8.bf8"]
    fn llvm_mfma_32x32x16_bf8_bf8(a: i64, b: i64, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8"]
    fn llvm_mfma_16x16x32_fp8_fp8(a: i64, b: i64, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.fp8.bf8"]
    fn llvm_mfma_16x16x32_fp8_bf8(a: i64, b: i64, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.bf8.fp8"]
    fn llvm_mfma_16x16x32_bf8_fp8(a: i64, b: i64, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.bf8.bf8"]
    fn llvm_mfma_16x16x32_bf8_bf8(a: i64, b: i64, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x2f32"]
    fn llvm_mfma_32x32x2f32(a: f32, b: f32, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x4f32"]
    fn llvm_mfma_16x16x4f32(a: f32, b: f32, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x8.xf32"]
    fn llvm_mfma_16x16x8xf32(a: F32x2, b: F32x2, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x4.xf32"]
    fn llvm_mfma_32x32x4xf32(a: F32x2, b: F32x2, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.i32.16x16x32.i8"]
    fn llvm_mfma_16x16x32_i8(a: i64, b: i64, c: I32x4, cbsz: i32, abid: i32, blgp: i32) -> I32x4;
    #[link_name = "llvm.amdgcn.mfma.i32.32x32x16.i8"]
    fn llvm_mfma_32x32x16_i8(a: i64, b: i64, c: I32x16, cbsz: i32, abid: i32, blgp: i32) -> I32x16;
}

macro_rules! mfma_fn {
    ($(#[$meta:meta])* $name:ident, $with:ident, $intr:ident, $ab:ty, $cd:ty, $conv:expr) => {
        $(#[$meta])*
        #[inline(always)]
        pub fn $name(a: $ab, b: $ab, c: $cd) -> $cd {
            $with::<0, 0, 0>(a, b, c)
        }

        /// As the plain form, with the CBSZ/ABID/BLGP broadcast modifiers.
        #[inline(always)]
        pub fn $with<const CBSZ: i32, const ABID: i32, const BLGP: i32>(a: $ab, b: $ab, c: $cd) -> $cd {
            let conv = $conv;
            // SAFETY: a pure register-to-register operation of the wave; every lane must be active,
            // which holds in the kernels' uniform control flow where MFMAs are issued.
            unsafe { $intr(conv(a), conv(b), c, CBSZ, ABID, BLGP) }
        }
    };
}

fn same<T>(x: T) -> T {
    x
}
fn bits64(x: u64) -> i64 {
    x as i64
}

mfma_fn!(/// `v_mfma_f32_32x32x8_f16`: 32x32 += 32x8 * 8x32, f16 in (32 cycles).
    mfma_32x32x8_f16, mfma_32x32x8_f16_with, llvm_mfma_32x32x8f16, F16x4, F32x16, same);
mfma_fn!(/// `v_mfma_f32_16x16x16_f16`: 16x16 += 16x16 * 16x16, f16 in (16 cycles).
    mfma_16x16x16_f16, mfma_16x16x16_f16_with, llvm_mfma_16x16x16f16, F16x4, F32x4, same);
mfma_fn!(/// `v_mfma_f32_32x32x8_bf16`: 32x32 += 32x8 * 8x32, bf16 in (32 cycles).
    mfma_32x32x8_bf16, mfma_32x32x8_bf16_with, llvm_mfma_32x32x8bf16, Bf16x4, F32x16, same);
mfma_fn!(/// `v_mfma_f32_16x16x16_bf16`: 16x16 += 16x16 * 16x16, bf16 in (16 cycles).
    mfma_16x16x16_bf16, mfma_16x16x16_bf16_with, llvm_mfma_16x16x16bf16, Bf16x4, F32x4, same);
mfma_fn!(/// `v_mfma_f32_32x32x16_fp8_fp8`: 32x32 += 32x16 * 16x32, E4M3FNUZ x E4M3FNUZ (32 cycles).
    mfma_32x32x16_fp8_fp8, mfma_32x32x16_fp8_fp8_with, llvm_mfma_32x32x16_fp8_fp8, u64, F32x16, bits64);
mfma_fn!(/// `v_mfma_f32_32x32x16_fp8_bf8`: A E4M3FNUZ, B E5M2FNUZ.
    mfma_32x32x16_fp8_bf8, mfma_32x32x16_fp8_bf8_with, llvm_mfma_32x32x16_fp8_bf8, u64, F32x16, bits64);
mfma_fn!(/// `v_mfma_f32_32x32x16_bf8_fp8`: A E5M2FNUZ, B E4M3FNUZ.
    mfma_32x32x16_bf8_fp8, mfma_32x32x16_bf8_fp8_with, llvm_mfma_32x32x16_bf8_fp8, u64, F32x16, bits64);
mfma_fn!(/// `v_mfma_f32_32x32x16_bf8_bf8`: both E5M2FNUZ.
    mfma_32x32x16_bf8_bf8, mfma_32x32x16_bf8_bf8_with, llvm_mfma_32x32x16_bf8_bf8, u64, F32x16, bits64);
mfma_fn!(/// `v_mfma_f32_16x16x32_fp8_fp8`: 16x16 += 16x32 * 32x16, E4M3FNUZ x E4M3FNUZ (16 cycles).
    mfma_16x16x32_fp8_fp8, mfma_16x16x32_fp8_fp8_with, llvm_mfma_16x16x32_fp8_fp8, u64, F32x4, bits64);
mfma_fn!(/// `v_mfma_f32_16x16x32_fp8_bf8`: A E4M3FNUZ, B E5M2FNUZ.
    mfma_16x16x32_fp8_bf8, mfma_16x16x32_fp8_bf8_with, llvm_mfma_16x16x32_fp8_bf8, u64, F32x4, bits64);
mfma_fn!(/// `v_mfma_f32_16x16x32_bf8_fp8`: A E5M2FNUZ, B E4M3FNUZ.
    mfma_16x16x32_bf8_fp8, mfma_16x16x32_bf8_fp8_with, llvm_mfma_16x16x32_bf8_fp8, u64, F32x4, bits64);
mfma_fn!(/// `v_mfma_f32_16x16x32_bf8_bf8`: both E5M2FNUZ.
    mfma_16x16x32_bf8_bf8, mfma_16x16x32_bf8_bf8_with, llvm_mfma_16x16x32_bf8_bf8, u64, F32x4, bits64);
mfma_fn!(/// `v_mfma_f32_32x32x2_f32`: 32x32 += 32x2 * 2x32, f32 in (64 cycles).
    mfma_32x32x2_f32, mfma_32x32x2_f32_with, llvm_mfma_32x32x2f32, f32, F32x16, same);
mfma_fn!(/// `v_mfma_f32_16x16x4_f32`: 16x16 += 16x4 * 4x16, f32 in (32 cycles).
    mfma_16x16x4_f32, mfma_16x16x4_f32_with, llvm_mfma_16x16x4f32, f32, F32x4, same);
mfma_fn!(/// `v_mfma_f32_16x16x8_xf32`: f32 in, truncated to tf32 by the hardware (16 cycles).
    /// Faster but less exact than the f32 forms: use only where the caller opted in.
    mfma_16x16x8_xf32, mfma_16x16x8_xf32_with, llvm_mfma_16x16x8xf32, F32x2, F32x4, same);
mfma_fn!(/// `v_mfma_f32_32x32x4_xf32`: f32 in, truncated to tf32 (32 cycles). Opt-in only.
    mfma_32x32x4_xf32, mfma_32x32x4_xf32_with, llvm_mfma_32x32x4xf32, F32x2, F32x16, same);
mfma_fn!(/// `v_mfma_i32_16x16x32_i8`: 16x16 += 16x32 * 32x16, i8 in, i32 sums (16 cycles).
    mfma_16x16x32_i8, mfma_16x16x32_i8_with, llvm_mfma_16x16x32_i8, u64, I32x4, bits64);
mfma_fn!(/// `v_mfma_i32_32x32x16_i8`: 32x32 += 32x16 * 16x32, i8 in, i32 sums (32 cycles).
    mfma_32x32x16_i8, mfma_32x32x16_i8_with, llvm_mfma_32x32x16_i8, u64, I32x16, bits64);
