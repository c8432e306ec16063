//! The second pass of a split decode (`abi::attention::DecodeCombineArgs`): each split's
//! normalised output weighed by its share of the row's softmax mass, `exp(lse_s - max lse)`.

use super::scores::Half;
use crate::abi::attention::{ATTENTION_SMALL_BLOCK, DecodeCombineArgs};
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::math::exp;
use crate::dsl::simd::{F32x4, U32x4};

/// One work-item per 8 values of one output row: 32 bytes of each split's partial (two 16-byte
/// loads, consecutive work-items on consecutive bytes) and one 16-byte store.
#[inline(always)]
pub fn decode_combine<E: Half>(args: DecodeCombineArgs) {
    let per_row = args.d / 8;
    let item = workgroup_id_x() * ATTENTION_SMALL_BLOCK + workitem_id_x();
    if item >= args.out_rows * per_row {
        return;
    }
    let (r, c) = ((item / per_row) as usize, (item % per_row) as usize);
    let (rows, d, splits) = (args.out_rows as usize, args.d as usize, args.splits as usize);
    let mut m = f32::NEG_INFINITY;
    for s in 0..splits {
        // SAFETY: split s's LSE of row r (host-sized).
        m = m.max(unsafe { args.partial_lse.add(s * rows + r).read() });
    }
    let m_use = if m == f32::NEG_INFINITY { 0.0 } else { m };
    let (mut acc, mut total) = ([0.0f32; 8], 0.0f32);
    for s in 0..splits {
        // SAFETY: as above; the partial rows are 16-byte aligned (d % 8 == 0, aligned base).
        let w = exp(unsafe { args.partial_lse.add(s * rows + r).read() } - m_use);
        let p = unsafe { args.partial_o.add((s * rows + r) * d + 8 * c) } as *const F32x4;
        let (lo, hi) = unsafe { (p.read().to_array(), p.add(1).read().to_array()) };
        crate::unroll_max!(e < 4, 4 => {
            acc[e] += w * lo[e];
            acc[4 + e] += w * hi[e];
        });
        total += w;
    }
    let inv = if total == 0.0 { 0.0 } else { 1.0 / total };
    let v = |e: usize| E::from_f32(acc[e] * inv);
    let out = U32x4::from_array([v(0) | v(1) << 16, v(2) | v(3) << 16, v(4) | v(5) << 16, v(6) | v(7) << 16]);
    // SAFETY: row r of O, 16-byte aligned.
    unsafe { (args.o.add((r * d + 8 * c) * 2) as *mut U32x4).write(out) };
}
