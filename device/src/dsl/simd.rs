//! Vector types: the operand types of the MFMA intrinsics and of 64/128-bit memory accesses.
//!
//! `#[repr(simd)]` structs over arrays, so LLVM sees `<N x T>` vectors. Convert with
//! [`from_array`](F32x4::from_array)/`to_array` (a transmute): projecting into the array field of
//! a SIMD struct ICEs on the pinned nightly (see GFX942.md, Rust on amdgcn).

macro_rules! simd_type {
    ($(#[$meta:meta])* $name:ident, $elem:ty, $n:literal) => {
        $(#[$meta])*
        #[repr(simd)]
        #[derive(Clone, Copy)]
        pub struct $name([$elem; $n]);

        impl $name {
            /// Builds the vector from its lanes.
            #[inline(always)]
            pub const fn from_array(a: [$elem; $n]) -> Self {
                Self(a)
            }

            /// The vector's lanes as an array.
            #[inline(always)]
            pub fn to_array(self) -> [$elem; $n] {
                // SAFETY: same size, the array type is the struct's only field.
                unsafe { core::mem::transmute::<Self, [$elem; $n]>(self) }
            }

            /// Every lane set to `v`.
            #[inline(always)]
            pub const fn splat(v: $elem) -> Self {
                Self([v; $n])
            }
        }
    };
}

simd_type!(/// Four f16: the A/B operand of the f16 MFMAs.
    F16x4, f16, 4);
simd_type!(/// Eight f16 (one 128-bit access).
    F16x8, f16, 8);
simd_type!(/// Four bf16 as raw bits: the A/B operand of the bf16 `.1k` MFMAs (LLVM types them i16).
    Bf16x4, i16, 4);
simd_type!(/// Two f32: the A/B operand of the xf32 MFMA.
    F32x2, f32, 2);
simd_type!(/// Four f32: the C/D operand of the 16x16 MFMAs, or one 128-bit access.
    F32x4, f32, 4);
simd_type!(/// Sixteen f32: the C/D operand of the 32x32 MFMAs.
    F32x16, f32, 16);
simd_type!(/// Two u32 (one 64-bit access).
    U32x2, u32, 2);
simd_type!(/// Four u32 (one 128-bit access).
    U32x4, u32, 4);
simd_type!(/// Two i32 (a 64-bit buffer load).
    I32x2, i32, 2);
simd_type!(/// Two f16.
    F16x2, f16, 2);
simd_type!(/// Four i32: a buffer resource descriptor (V#) as the buffer intrinsics take it, or the
    /// C/D operand of the 16x16 int8 MFMA.
    I32x4, i32, 4);
simd_type!(/// Sixteen i32: the C/D operand of the 32x32 int8 MFMA.
    I32x16, i32, 16);
