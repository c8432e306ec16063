//! Combining the f32 partials of a split reduction into the output.
//!
//! `lanes` lanes per output: 64 when one output's partials are adjacent (split rows: a wave
//! reads them in one coalesced sweep and combines with DPP), 1 when neighbouring outputs'
//! partials are adjacent (split columns: consecutive lanes read consecutive addresses).

use super::acc::Reducer;
use super::out::store_result;
use super::{is_arg, with_reducer};
use crate::abi::reduce::{REDUCE_BLOCK, ReducePartialsArgs};
use crate::dsl::group::reduce_lanes;
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};

/// The kernel: dispatches on the op code.
#[inline(always)]
pub fn reduce_partials(a: ReducePartialsArgs) {
    with_reducer!(a.op, R => run::<R>(&a))
}

#[inline(always)]
fn run<R: Reducer>(a: &ReducePartialsArgs) {
    let t = workitem_id_x();
    // max(1): the host never passes 0, and LLVM then drops the divide-by-zero panics.
    let lanes = a.lanes.max(1);
    let o = workgroup_id_x() * (REDUCE_BLOCK / lanes) + t / lanes;
    let lane = t % lanes;
    let live = o < a.outputs;
    let mut s = R::empty();
    if live {
        let first = o as usize * a.stride_out as usize;
        let mut p = lane;
        while p < a.parts {
            let at = first + p as usize * a.stride_part as usize;
            // SAFETY: the host laid out outputs * parts partials with these strides.
            let (v, i) = unsafe { (a.part_val.add(at).read(), if is_arg(a.op) { a.part_idx.add(at).read() } else { 0 }) };
            s = R::merge(s, R::from_partial(v, i));
            p += lanes;
        }
    }
    s = reduce_lanes(s, lanes.min(64), R::merge);
    if live && lane == 0 {
        // SAFETY: o < outputs = the output's length.
        unsafe { store_result(a.out, a.out_type, o as usize, R::value(s), R::index(s), a.op, a.mean_div) };
    }
}
