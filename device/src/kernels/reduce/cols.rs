//! Reducing a strided axis: `[outer][len][inner]` over `len`.
//!
//! A workgroup is a tile of `tile_cols` column units by `256 / tile_cols` lanes along `len`. A
//! column unit is a 16-byte chunk of `inner` (VECTOR_OK) or one element. Lanes of a wave take
//! consecutive units of one row of `len` (or, when a row has fewer units than a wave, consecutive
//! rows, which are contiguous too), so every load is coalesced. Each lane walks `len` with a
//! stride of the tile's height, 4 rows in flight, keeping one state per column of its unit.
//!
//! The tile's rows are then folded pairwise through LDS (a halving tree, two barriers a level).
//! LDS layout: the states of work-item `t` sit at slot `t` of one array per 4 columns (16
//! bytes a slot) and per word (value, index). Readers and writers of a level are consecutive
//! work-items at consecutive slots, so every LDS access is contiguous 16-byte (or 4-byte) lanes:
//! no bank conflicts under the 128-bit phase groups of gfx942 (eight lanes covering 32 distinct
//! banks per phase, whichever eight lanes a phase serves).

use super::acc::Reducer;
use super::out::store_results;
use super::{is_arg, with_reducer};
use crate::abi::reduce::{REDUCE_BLOCK, ReduceColsArgs, flags};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::Words;
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workitem_id_x};
use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::mem::load_chunk;
use crate::dsl::mem::store_b128;
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;

/// Rows of `len` each lane has in flight per step (at most; 2 for 8-column units, whose 16
/// states per row would otherwise run out of SGPRs for the comparison masks).
const IN_FLIGHT: usize = 4;
const BLOCK: usize = REDUCE_BLOCK as usize;

/// The kernel: dispatches on the op code and the access width.
#[inline(always)]
pub fn reduce_cols<E: Chunked>(a: ReduceColsArgs) {
    if a.flags & flags::VECTOR_OK != 0 {
        with_reducer!(a.op, R => run::<E, R, true>(&a))
    } else {
        with_reducer!(a.op, R => run::<E, R, false>(&a))
    }
}

/// LDS views of the tree: per quad of columns, a value array and an index array of [`BLOCK`]
/// 16-byte slots (VEC), or one word per work-item (scalar).
struct Tree {
    val: LdsSlice<U32x4>,
    idx: LdsSlice<U32x4>,
    val1: LdsSlice<u32>,
    idx1: LdsSlice<u32>,
}

impl Tree {
    #[inline(always)]
    fn new() -> Self {
        let mut lds = LdsArena::new();
        let val = lds.take::<U32x4>(2 * BLOCK);
        let idx = lds.take::<U32x4>(2 * BLOCK);
        // The scalar path views the same bytes as words (a second arena from offset 0).
        let mut words = LdsArena::new();
        let val1 = words.take::<u32>(BLOCK);
        let idx1 = words.take::<u32>(BLOCK);
        Tree { val, idx, val1, idx1 }
    }

    /// Stores the first `v` states at `slot`.
    ///
    /// # Safety
    /// `slot < BLOCK`; no other work-item accesses the slot between the surrounding barriers.
    #[inline(always)]
    unsafe fn put<S: Words>(&self, slot: usize, st: &[S; 8], v: usize) {
        let mut w = [[0u32; 4]; 8];
        crate::unroll!(k < 8 => { w[k] = st[k].to_words(); });
        unsafe {
            if v == 1 {
                self.val1.write(slot, w[0][0]);
                if S::N > 1 {
                    self.idx1.write(slot, w[0][1]);
                }
            } else {
                crate::unroll!(q < 2 => {
                    if 4 * q < v {
                        self.val.write(q * BLOCK + slot, U32x4::from_array([w[4 * q][0], w[4 * q + 1][0], w[4 * q + 2][0], w[4 * q + 3][0]]));
                        if S::N > 1 {
                            self.idx.write(q * BLOCK + slot, U32x4::from_array([w[4 * q][1], w[4 * q + 1][1], w[4 * q + 2][1], w[4 * q + 3][1]]));
                        }
                    }
                });
            }
        }
    }

    /// Loads the first `v` states of `slot`.
    ///
    /// # Safety
    /// As [`Tree::put`], for a slot written before the last barrier.
    #[inline(always)]
    unsafe fn get<S: Words>(&self, slot: usize, v: usize) -> [S; 8] {
        let mut w = [[0u32; 4]; 8];
        unsafe {
            if v == 1 {
                w[0][0] = self.val1.read(slot);
                if S::N > 1 {
                    w[0][1] = self.idx1.read(slot);
                }
            } else {
                crate::unroll!(q < 2 => {
                    if 4 * q < v {
                        let x = self.val.read(q * BLOCK + slot).to_array();
                        crate::unroll!(k < 4 => { w[4 * q + k][0] = x[k]; });
                        if S::N > 1 {
                            let y = self.idx.read(q * BLOCK + slot).to_array();
                            crate::unroll!(k < 4 => { w[4 * q + k][1] = y[k]; });
                        }
                    }
                });
            }
        }
        let mut out = [S::from_words([0; 4]); 8];
        crate::unroll!(k < 8 => { out[k] = S::from_words(w[k]); });
        out
    }
}

#[inline(always)]
fn run<E: Chunked, R: Reducer, const VEC: bool>(a: &ReduceColsArgs) {
    let v = if VEC { E::PER_CHUNK } else { 1 };
    let t = workitem_id_x() as usize;
    // max(1): the host never passes 0, and LLVM then drops the divide-by-zero panics.
    let tx_n = a.tile_cols.max(1) as usize;
    let ty_n = BLOCK / tx_n;
    let (ty, tx) = (t / tx_n, t % tx_n);
    let (len, inner) = (a.len as usize, a.inner as usize);
    // Grid x = outer * column tiles (y and z are limited to 65535), y = splits.
    let tiles = (inner / v).div_ceil(tx_n).max(1);
    let (o, tile) = (workgroup_id_x() as usize / tiles, workgroup_id_x() as usize % tiles);
    let unit = tile * tx_n + tx;
    let live = ty < ty_n && unit * v < inner;
    let split = workgroup_id_y() as usize;
    let begin = split * a.seg_len as usize;
    let end = (begin + a.seg_len as usize).min(len);

    let mut st = [R::empty(); 8];
    if live {
        // SAFETY: o < outer and unit * v < inner: inside x (host-sized).
        let base = unsafe { a.x.add((o * len * inner + unit * v) * E::BYTES) };
        let pitch = inner * E::BYTES;
        let inflight = if v == 8 { 2 } else { IN_FLIGHT };
        let mut l = begin + ty;
        while l + (inflight - 1) * ty_n < end {
            let mut x = [[0f32; 8]; IN_FLIGHT];
            crate::unroll!(u < IN_FLIGHT => { if u < inflight { x[u] = load_unit::<E, VEC>(base, (l + u * ty_n) * pitch); } });
            crate::unroll!(u < IN_FLIGHT => {
                if u < inflight {
                    crate::unroll!(j < 8 => { if j < v { st[j] = R::push(st[j], x[u][j], (l + u * ty_n) as u32); } });
                }
            });
            l += inflight * ty_n;
        }
        while l < end {
            let x = load_unit::<E, VEC>(base, l * pitch);
            crate::unroll!(j < 8 => { if j < v { st[j] = R::push(st[j], x[j], l as u32); } });
            l += ty_n;
        }
    }

    // Fold the tile's rows: at each level the upper half (rows [half, n)) hands its states to the
    // lower rows [0, n - half). Uniform loop: every work-item runs every level.
    let tree = Tree::new();
    let mut n = ty_n;
    while n > 1 {
        let half = n.div_ceil(2);
        barrier();
        if live && ty >= half && ty < n {
            // SAFETY: slot t is this work-item's own; read below after the barrier.
            unsafe { tree.put(t, &st, v) };
        }
        barrier();
        if live && ty + half < n {
            // SAFETY: the partner (ty + half, tx) wrote slot t + half * tx_n before the barrier.
            let other: [R::S; 8] = unsafe { tree.get(t + half * tx_n, v) };
            crate::unroll!(j < 8 => { if j < v { st[j] = R::merge(st[j], other[j]); } });
        }
        n = half;
    }

    if !(live && ty == 0) {
        return;
    }
    let col = unit * v;
    if a.flags & flags::PARTIAL != 0 {
        let p = (split * a.outer as usize + o) * inner + col;
        // SAFETY: the partials are [splits][outer][inner] (host-sized); p is a multiple of v, and
        // v = 4 or 8 columns are 16-byte aligned (inner % v == 0 under VECTOR_OK).
        unsafe {
            if v == 1 {
                a.part_val.add(p).write(R::value(st[0]));
                if is_arg(a.op) {
                    a.part_idx.add(p).write(R::index(st[0]));
                }
            } else {
                crate::unroll!(q < 2 => {
                    if 4 * q < v {
                        let b = 4 * q;
                        let mut vw = [0u32; 4];
                        let mut iw = [0u32; 4];
                        crate::unroll!(k < 4 => {
                            vw[k] = R::value(st[b + k]).to_bits();
                            iw[k] = R::index(st[b + k]);
                        });
                        store_b128(a.part_val.add(p + b) as *mut u32, U32x4::from_array(vw));
                        if is_arg(a.op) {
                            store_b128(a.part_idx.add(p + b), U32x4::from_array(iw));
                        }
                    }
                });
            }
        }
    } else {
        let mut vals = [0f32; 8];
        let mut idx = [0u32; 8];
        crate::unroll!(k < 8 => {
            vals[k] = R::value(st[k]);
            idx[k] = R::index(st[k]);
        });
        // SAFETY: element o * inner + col .. + v of the [outer][inner] output, aligned to v.
        unsafe { store_results(a.out, a.out_type, o * inner + col, &vals, &idx, v, a.op, a.mean_div) };
    }
}

/// One column unit of row `off` bytes from `base`: a chunk's elements, or one element.
#[inline(always)]
fn load_unit<E: Chunked, const VEC: bool>(base: *const u8, off: usize) -> [f32; 8] {
    // SAFETY: the caller's row is below len and its unit inside inner; chunks are 16-byte
    // aligned under VECTOR_OK.
    unsafe {
        if VEC {
            E::unpack(load_chunk(base, off))
        } else {
            let mut x = [0f32; 8];
            x[0] = E::load(base.add(off), 0);
            x
        }
    }
}
