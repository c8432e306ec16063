//! Casts between f32, f16, bf16, fp8 (E4M3FNUZ, E5M2FNUZ) and i32.
//!
//! Rules (each value is rounded once):
//! - float -> float: through f32 (exact for every narrower format), then to nearest even;
//!   f16/bf16 overflow to infinity, fp8 saturates to its largest finite value; NaN stays NaN (fp8:
//!   0x80, its only NaN); fp8 has no negative zero, so values that round to zero become +0.
//! - float -> i32: toward zero, saturating at the i32 range, NaN -> 0.
//! - i32 -> float: nearest even, rounding the integer directly (so i32 -> bf16 does not round
//!   twice through f32).
//! - same type: the bits are copied (NaN payloads kept).
//!
//! One kernel per input type; the output type is the uniform `type_code`. Each arm moves
//! `16 / min(input bytes, output bytes)` elements per work-item in groups of
//! `16 / max(input bytes, output bytes)`: the wider side moves 128 bits per lane per group, the
//! narrower 32 or 64, and every access instruction uses whole lines (see `nary`).

use super::nary::{EltFn, Inputs, run};
use crate::abi::elementwise::{EltArgs, type_code};
use crate::abi::{Bf16, F16, Fp8E4M3Fnuz, Fp8E5M2Fnuz};
use crate::dsl::dtype::Element;
use core::marker::PhantomData;

/// The function of an `I -> O` cast.
struct Cast<I, O>(PhantomData<(I, O)>);

impl<I: Element, O: Element> EltFn for Cast<I, O> {
    #[inline(always)]
    fn apply<const N: usize>(&self, x: &Inputs<N>) -> [u32; N] {
        let mut y = [0u32; N];
        crate::unroll!(k < N => {
            let v = x[0][k];
            y[k] = if I::CODE == O::CODE {
                v
            } else if I::IS_INT {
                O::from_i32(v as i32)
            } else {
                O::from_f32(I::to_f32(v))
            };
        });
        y
    }
}

/// `I -> O` over the launch, `EPL` elements per work-item in groups of `E`.
#[inline(always)]
fn cast<I: Element, O: Element, const EPL: usize, const E: usize>(args: &EltArgs) {
    run::<EPL, E, 1, I, I, I, O, _>(args, &Cast::<I, O>(PhantomData));
}

/// Elements per work-item of an `a`-byte -> `b`-byte cast: one 128-bit access of the narrower.
const fn epl(a: usize, b: usize) -> usize {
    16 / if a < b { a } else { b }
}

/// Elements per group of an `a`-byte -> `b`-byte cast: one 128-bit access of the wider.
const fn group(a: usize, b: usize) -> usize {
    16 / if a > b { a } else { b }
}

macro_rules! cast_kernel {
    ($(#[$meta:meta])* $name:ident, $in:ty) => {
        $(#[$meta])*
        #[inline(always)]
        pub fn $name(args: EltArgs) {
            const I: usize = <$in as Element>::BYTES;
            match args.type_code {
                type_code::F32 => cast::<$in, f32, { epl(I, 4) }, { group(I, 4) }>(&args),
                type_code::F16 => cast::<$in, F16, { epl(I, 2) }, { group(I, 2) }>(&args),
                type_code::BF16 => cast::<$in, Bf16, { epl(I, 2) }, { group(I, 2) }>(&args),
                type_code::FP8_E4M3 => cast::<$in, Fp8E4M3Fnuz, { epl(I, 1) }, { group(I, 1) }>(&args),
                type_code::FP8_E5M2 => cast::<$in, Fp8E5M2Fnuz, { epl(I, 1) }, { group(I, 1) }>(&args),
                type_code::I32 => cast::<$in, i32, { epl(I, 4) }, { group(I, 4) }>(&args),
                // The host only passes the codes above.
                _ => {}
            }
        }
    };
}

cast_kernel!(/// f32 -> `type_code`.
    cast_from_f32, f32);
cast_kernel!(/// f16 -> `type_code`.
    cast_from_f16, F16);
cast_kernel!(/// bf16 -> `type_code`.
    cast_from_bf16, Bf16);
cast_kernel!(/// fp8 E4M3FNUZ -> `type_code`.
    cast_from_fp8e4m3, Fp8E4M3Fnuz);
cast_kernel!(/// fp8 E5M2FNUZ -> `type_code`.
    cast_from_fp8e5m2, Fp8E5M2Fnuz);
cast_kernel!(/// i32 -> `type_code`.
    cast_from_i32, i32);
