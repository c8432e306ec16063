//! Reducing contiguous rows: a group of `lanes` lanes per row (a power of two up to the block).
//!
//! Lane `j` of a group reads the row's 16-byte chunks `j, j + lanes, ...` (4 in flight per step),
//! so every load instruction of a group covers `lanes * 16` contiguous bytes; the group then
//! combines its lanes with DPP (and LDS across waves when `lanes > 64`). Results are staged in
//! LDS and written by consecutive work-items, so one store covers all rows of the workgroup.
//! A split row (PARTIAL) is read by `splits` workgroups, each over `seg_len` elements.

use super::acc::Reducer;
use super::out::{result_bits, store_result};
use super::{is_arg, with_reducer};
use crate::abi::reduce::{REDUCE_BLOCK, ReduceRowsArgs, flags, out_type};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::reduce_group;
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::load_chunk;
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;

/// Chunks (or elements) each lane has in flight per step of the main loop.
const IN_FLIGHT: usize = 4;

/// The kernel: dispatches on the op code.
#[inline(always)]
pub fn reduce_rows<E: Chunked>(a: ReduceRowsArgs) {
    with_reducer!(a.op, R => run::<E, R>(&a))
}

#[inline(always)]
fn run<E: Chunked, R: Reducer>(a: &ReduceRowsArgs) {
    let t = workitem_id_x();
    // max(1): the host never passes 0, and LLVM then drops the divide-by-zero panics.
    let (lanes, splits) = (a.lanes.max(1), a.splits.max(1));
    let rows_per_wg = REDUCE_BLOCK / lanes;
    let local_row = t / lanes;
    // Grid x = row groups * splits, splits fastest (one dimension: y and z are limited to 65535).
    let (group, split) = (workgroup_id_x() / splits, workgroup_id_x() % splits);
    let row = group * rows_per_wg + local_row;
    let lane = (t % lanes) as usize;
    let len = a.len as usize;
    let begin = split as usize * a.seg_len as usize;
    let end = (begin + a.seg_len as usize).min(len);
    let live = row < a.rows;

    let mut s = R::empty();
    if live {
        // SAFETY: row < rows; the host sized x to rows * len elements.
        let base = unsafe { a.x.add(row as usize * len * E::BYTES) };
        s = if a.flags & flags::VECTOR_OK != 0 {
            scan_chunks::<E, R>(base, begin, end, lane, lanes as usize)
        } else {
            scan_elements::<E, R>(base, begin, end, lane, lanes as usize)
        };
    }

    let mut lds = LdsArena::new();
    let slots = lds.take::<U32x4>(32);
    let staged = lds.take::<u32>(REDUCE_BLOCK as usize);
    // SAFETY: every wave reaches this once (uniform control flow).
    s = unsafe { reduce_group(s, lanes, slots, 0, R::merge) };

    if a.flags & flags::PARTIAL != 0 {
        if lane == 0 && live {
            let p = row as usize * splits as usize + split as usize;
            // SAFETY: the host sized the partials to rows * splits.
            unsafe {
                a.part_val.add(p).write(R::value(s));
                if is_arg(a.op) {
                    a.part_idx.add(p).write(R::index(s));
                }
            }
        }
        return;
    }
    if rows_per_wg == 1 {
        if lane == 0 && live {
            // SAFETY: row < rows = the output's length.
            unsafe { store_result(a.out, a.out_type, row as usize, R::value(s), R::index(s), a.op, a.mean_div) };
        }
        return;
    }
    // Several rows per workgroup: stage the results, then write them with consecutive lanes.
    if lane == 0 {
        // SAFETY: one writer per slot; consecutive groups write consecutive words (no bank conflict).
        unsafe { staged.write(local_row as usize, result_bits(a.out_type, R::value(s), R::index(s), a.op, a.mean_div)) };
    }
    barrier();
    let out_row = group * rows_per_wg + t;
    if t < rows_per_wg && out_row < a.rows {
        // SAFETY: out_row < rows; the slot was written before the barrier.
        unsafe {
            let bits = staged.read(t as usize);
            if a.out_type == out_type::F16 || a.out_type == out_type::BF16 {
                (a.out as *mut u16).add(out_row as usize).write(bits as u16);
            } else {
                (a.out as *mut u32).add(out_row as usize).write(bits);
            }
        }
    }
}

/// Pushes elements `[begin, end)` of the row at `base` read as 16-byte chunks; `begin` is a
/// multiple of the chunk, and elements of a last partial chunk are read one by one.
#[inline(always)]
fn scan_chunks<E: Chunked, R: Reducer>(base: *const u8, begin: usize, end: usize, lane: usize, lanes: usize) -> R::S {
    let v = E::PER_CHUNK;
    let (c1, mut c) = (end / v, begin / v + lane);
    let mut s = R::empty();
    while c + (IN_FLIGHT - 1) * lanes < c1 {
        let mut ch = [[0u32; 4]; IN_FLIGHT];
        // SAFETY: all IN_FLIGHT chunks lie below c1, inside the row (16-byte aligned: VECTOR_OK).
        crate::unroll!(u < IN_FLIGHT => { ch[u] = unsafe { load_chunk(base, (c + u * lanes) * 16) }; });
        crate::unroll!(u < IN_FLIGHT => {
            let x = E::unpack(ch[u]);
            let i0 = ((c + u * lanes) * v) as u32;
            crate::unroll!(j < 8 => { if j < E::PER_CHUNK { s = R::push(s, x[j], i0 + j as u32); } });
        });
        c += IN_FLIGHT * lanes;
    }
    while c < c1 {
        // SAFETY: c < c1, as above.
        let x = E::unpack(unsafe { load_chunk(base, c * 16) });
        crate::unroll!(j < 8 => { if j < E::PER_CHUNK { s = R::push(s, x[j], (c * v + j) as u32); } });
        c += lanes;
    }
    // The elements of a last partial chunk (fewer than v, but possibly more than lanes).
    let mut e = c1 * v + lane;
    while e < end {
        // SAFETY: e < end <= len.
        s = R::push(s, unsafe { E::load(base, e) }, e as u32);
        e += lanes;
    }
    s
}

/// Pushes elements `[begin, end)` one by one: lane `j` reads `begin + j`, `begin + j + lanes`, ...
#[inline(always)]
fn scan_elements<E: Chunked, R: Reducer>(base: *const u8, begin: usize, end: usize, lane: usize, lanes: usize) -> R::S {
    let mut e = begin + lane;
    let mut s = R::empty();
    while e + (IN_FLIGHT - 1) * lanes < end {
        let mut x = [0f32; IN_FLIGHT];
        // SAFETY: every element read lies below end <= len.
        crate::unroll!(u < IN_FLIGHT => { x[u] = unsafe { E::load(base, e + u * lanes) }; });
        crate::unroll!(u < IN_FLIGHT => { s = R::push(s, x[u], (e + u * lanes) as u32); });
        e += IN_FLIGHT * lanes;
    }
    while e < end {
        // SAFETY: as above.
        s = R::push(s, unsafe { E::load(base, e) }, e as u32);
        e += lanes;
    }
    s
}
