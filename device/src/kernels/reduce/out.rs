//! Writing reduction results in the output type.

use crate::abi::reduce::{op, out_type};
use crate::dsl::convert::{f32_to_bf16, f32_to_f16_bits};
use crate::dsl::mem::{store_b64, store_b128};
use crate::dsl::simd::{U32x2, U32x4};

/// The stored bits of one result: the index for I32 outputs, else the value (divided by
/// `mean_div` for MEAN) rounded to the output type (16-bit types in the low half).
#[inline(always)]
pub fn result_bits(ty: u32, value: f32, index: u32, code: u32, mean_div: f32) -> u32 {
    let v = if code == op::MEAN { value / mean_div } else { value };
    match ty {
        out_type::I32 => index,
        out_type::F16 => f32_to_f16_bits(v) as u32,
        out_type::BF16 => f32_to_bf16(v).0 as u32,
        _ => v.to_bits(),
    }
}

/// True when the output type is 16 bits wide.
#[inline(always)]
fn is_half(ty: u32) -> bool {
    ty == out_type::F16 || ty == out_type::BF16
}

/// Writes one result as element `i` of the output.
///
/// # Safety
/// Element `i` of the output is writable.
#[inline(always)]
pub unsafe fn store_result(p: *mut u8, ty: u32, i: usize, value: f32, index: u32, code: u32, mean_div: f32) {
    let bits = result_bits(ty, value, index, code, mean_div);
    unsafe {
        if is_half(ty) {
            (p as *mut u16).add(i).write(bits as u16);
        } else {
            (p as *mut u32).add(i).write(bits);
        }
    }
}

/// Writes the first `n` results (n is 1, 4 or 8) as elements `i..i + n`, with one or two
/// 64/128-bit stores when `n > 1`.
///
/// # Safety
/// The elements are writable and, for `n > 1`, element `i` is aligned to `n` elements.
#[inline(always)]
pub unsafe fn store_results(p: *mut u8, ty: u32, i: usize, values: &[f32; 8], index: &[u32; 8], n: usize, code: u32, mean_div: f32) {
    if n == 1 {
        unsafe { store_result(p, ty, i, values[0], index[0], code, mean_div) };
        return;
    }
    let mut b = [0u32; 8];
    crate::unroll!(k < 8 => { b[k] = result_bits(ty, values[k], index[k], code, mean_div); });
    unsafe {
        if is_half(ty) {
            let w = [b[0] | b[1] << 16, b[2] | b[3] << 16, b[4] | b[5] << 16, b[6] | b[7] << 16];
            let q = (p as *mut u16).add(i) as *mut u32;
            if n == 8 {
                store_b128(q, U32x4::from_array(w));
            } else {
                store_b64(q, U32x2::from_array([w[0], w[1]]));
            }
        } else {
            let q = (p as *mut u32).add(i);
            store_b128(q, U32x4::from_array([b[0], b[1], b[2], b[3]]));
            if n == 8 {
                store_b128(q.add(4), U32x4::from_array([b[4], b[5], b[6], b[7]]));
            }
        }
    }
}
