//! Row-resident kernels' shared machinery: which elements of a row segment a lane holds, loading
//! and storing them, and which rows or segments a workgroup handles.
//!
//! Slot `s` of a lane (`s < ROW_SLOTS`) holds, with 16-byte chunks (VECTOR_OK), element
//! `(lane + lanes * (s / V)) * V + s % V` where `V` is the elements per chunk; otherwise element
//! `lane + lanes * s`. Either way the lanes of a group read contiguous memory in every load
//! instruction, and the same slot of every row holds the same column, so per-column data
//! (weights) can stay in registers across rows.

use crate::abi::rowwise::{ROW_SLOTS, ROW_SLOTS_SCALAR, ROW_STAT_FLOATS, mode};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::{Words, reduce_lanes};
use crate::dsl::ids::wave_id_x;
use crate::dsl::ids::{grid_size_x, workgroup_id_x, workgroup_size_x, workitem_id_x};
use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::mem::load_b128;
use crate::dsl::mem::{load_chunk, store_chunk};
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;
use crate::dsl::wave::lane_id;

/// Elements a lane holds (the register arrays' size).
pub const SLOTS: usize = ROW_SLOTS as usize;
/// Slots used with element accesses (the rest stay at the fill value).
const SLOTS_SCALAR: usize = ROW_SLOTS_SCALAR as usize;

/// A lane's registers of a row segment.
pub type Slots = [f32; SLOTS];

/// Where a lane's slots sit in a segment of `n` elements; `VEC`: 16-byte chunks, else single
/// elements. The access width is a type parameter, not a runtime flag, so that the kernels'
/// loops do not branch on it: LLVM would unswitch such loops into one copy per combination of
/// flags. 32-bit arithmetic: the per-slot offsets are loop-invariant across rows and LLVM keeps
/// them in registers, one VGPR each rather than two.
#[derive(Clone, Copy)]
pub struct Spread<const VEC: bool> {
    /// The lane within its group.
    pub lane: u32,
    /// Lanes of the group.
    pub lanes: u32,
    /// Elements in the segment (0 for a group without a row this iteration).
    pub n: u32,
}

impl<const VEC: bool> Spread<VEC> {
    /// The segment-relative element index of slot `s`.
    #[inline(always)]
    pub fn index<E: Chunked>(&self, s: usize) -> u32 {
        let v = E::PER_CHUNK as u32;
        let s = s as u32;
        if VEC { (self.lane + self.lanes * (s / v)) * v + s % v } else { self.lane + self.lanes * s }
    }

    /// True when slot `s` holds an element.
    #[inline(always)]
    pub fn valid<E: Chunked>(&self, s: usize) -> bool {
        (VEC || s < SLOTS_SCALAR) && self.index::<E>(s) < self.n
    }

    /// Elements the lane holds. They fill slots `0 .. count` (a prefix), so "slot `s` is
    /// valid" is also `s < count`, which code can use as arithmetic instead of a mask.
    #[inline(always)]
    pub fn count<E: Chunked>(&self) -> u32 {
        let v = E::PER_CHUNK as u32;
        if VEC {
            // Chunks lane, lane + lanes, ... below n / v, at most SLOTS / v of them.
            let chunks = (self.n / v).saturating_sub(self.lane).div_ceil(self.lanes.max(1));
            chunks.min(SLOTS as u32 / v) * v
        } else {
            self.n.saturating_sub(self.lane).div_ceil(self.lanes.max(1)).min(SLOTS_SCALAR as u32)
        }
    }

    /// Loads the lane's slots of the segment at `base`; slots without an element get `fill`.
    ///
    /// # Safety
    /// The segment's `n` elements at `base` are readable (16-byte aligned with `VEC`).
    #[inline(always)]
    pub unsafe fn load<E: Chunked>(&self, base: *const u8, fill: f32) -> Slots {
        let mut x = [fill; SLOTS];
        let v = E::PER_CHUNK;
        if VEC {
            crate::unroll!(k < 8 => {
                if k < SLOTS / v {
                    let c = self.lane + self.lanes * k as u32;
                    if c * (v as u32) < self.n {
                        // SAFETY: the chunk lies inside the segment (n is a multiple of v).
                        let e = E::unpack(unsafe { load_chunk(base, c as usize * 16) });
                        crate::unroll!(j < 8 => { if j < v { x[k * v + j] = e[j]; } });
                    }
                }
            });
        } else {
            crate::unroll!(s < SLOTS_SCALAR => {
                let i = self.lane + self.lanes * s as u32;
                if i < self.n {
                    // SAFETY: i < n.
                    x[s] = unsafe { E::load(base, i as usize) };
                }
            });
        }
        x
    }

    /// Stores the lane's slots (rounded to `E`) into the segment at `base`.
    ///
    /// # Safety
    /// The segment's `n` elements at `base` are writable (16-byte aligned with `VEC`).
    #[inline(always)]
    pub unsafe fn store<E: Chunked>(&self, base: *mut u8, x: &Slots) {
        let v = E::PER_CHUNK;
        if VEC {
            crate::unroll!(k < 8 => {
                if k < SLOTS / v {
                    let c = self.lane + self.lanes * k as u32;
                    if c * (v as u32) < self.n {
                        let mut e = [0f32; 8];
                        crate::unroll!(j < 8 => { if j < v { e[j] = x[k * v + j]; } });
                        // SAFETY: as in load.
                        unsafe { store_chunk(base, c as usize * 16, E::pack(&e)) };
                    }
                }
            });
        } else {
            crate::unroll!(s < SLOTS_SCALAR => {
                let i = self.lane + self.lanes * s as u32;
                if i < self.n {
                    // SAFETY: i < n.
                    unsafe { E::store(base, i as usize, x[s]) };
                }
            });
        }
    }
}

/// The work of one workgroup of a row kernel, from the launch and the `mode`.
#[derive(Clone, Copy)]
pub struct Work {
    /// The work-item's lane within its group.
    pub lane: u32,
    /// FUSED: this group's first row; STATS/APPLY: the row.
    pub row: u32,
    /// FUSED: rows between this group's iterations (all groups of the grid); else 0.
    pub row_step: u32,
    /// FUSED: iterations every group runs (uniform); else 1.
    pub iters: u32,
    /// STATS/APPLY: the segment; else 0.
    pub seg: u32,
}

impl Work {
    /// Decodes the launch: `lanes` per group, `rows` rows of `segs` segments, `mode`.
    #[inline(always)]
    pub fn new(lanes: u32, rows: u32, segs: u32, m: u32) -> Self {
        let t = workitem_id_x();
        // max(1): the host never passes 0, and LLVM then drops the divide-by-zero panics.
        let (lanes, segs) = (lanes.max(1), segs.max(1));
        let lane = t % lanes;
        if m == mode::FUSED {
            let size = workgroup_size_x().max(1);
            let per_wg = size / lanes;
            // grid_size / size, not num_workgroups_x(): its division has a zero check (a panic
            // call, which makes the kernel need a dynamic stack).
            let groups = (grid_size_x().div_ceil(size) * per_wg).max(1);
            Work { lane, row: workgroup_id_x() * per_wg + t / lanes, row_step: groups, iters: rows.div_ceil(groups), seg: 0 }
        } else {
            let w = workgroup_id_x();
            Work { lane, row: w / segs, row_step: 0, iters: 1, seg: w % segs }
        }
    }
}

/// The LDS of a row kernel: the cross-wave reduction slots, one slot to broadcast a row
/// statistic, then the kernel's own area (norm weights). Matches `abi::rowwise::ROW_LDS_BYTES`.
pub struct RowLds {
    /// `dsl::group::reduce_waves` slots.
    pub slots: LdsSlice<U32x4>,
    /// The broadcast slot of [`row_statistic`].
    pub stat: LdsSlice<U32x4>,
    /// The rest of the launch's LDS, 16-byte aligned.
    pub rest: *mut u8,
}

impl RowLds {
    /// The layout over the launch-sized LDS.
    #[inline(always)]
    pub fn new() -> Self {
        let mut arena = LdsArena::new();
        let slots = arena.take::<U32x4>(32);
        let stat = arena.take::<U32x4>(1);
        let rest = arena.take::<U32x4>(0).as_ptr() as *mut u8;
        RowLds { slots, stat, rest }
    }
}

/// APPLY: a row's statistic combined from the 16-byte slots its `segs` segments wrote at
/// `stats`. Wave 0 reads them (lane p: slots p, p + 64, ..., one 128-bit load each, so the
/// reads are whole lines), combines with DPP and broadcasts through LDS; the other waves wait
/// at the barrier instead of re-reading.
///
/// # Safety
/// Every wave of the workgroup calls this (it has a barrier); `segs` slots are readable.
#[inline(always)]
pub unsafe fn row_statistic<T: Words>(stats: *const f32, segs: u32, lds: &RowLds, empty: T, merge: impl Fn(T, T) -> T + Copy) -> T {
    if wave_id_x() == 0 {
        let mut st = empty;
        let mut p = lane_id();
        while p < segs {
            // SAFETY: p < segs slots of ROW_STAT_FLOATS floats, 16-byte aligned.
            let w = unsafe { load_b128(stats.add(p as usize * ROW_STAT_FLOATS as usize) as *const u32) };
            st = merge(st, T::from_words(w.to_array()));
            p += 64;
        }
        let st = reduce_lanes(st, 64, merge);
        if lane_id() == 0 {
            // SAFETY: one writer.
            unsafe { lds.stat.write(0, U32x4::from_array(st.to_words())) };
        }
    }
    barrier();
    // SAFETY: written before the barrier; every lane reads the same address (a broadcast).
    T::from_words(unsafe { lds.stat.read(0) }.to_array())
}

impl Work {
    /// This group's row at iteration `it`, and the segment's first element and length (0 for a
    /// group past the last row).
    #[inline(always)]
    pub fn at(&self, it: u32, rows: u32, len: u32, seg_len: u32) -> (u32, u32, u32) {
        let row = self.row + it * self.row_step;
        let begin = self.seg * seg_len;
        let n = if row < rows { (len - begin).min(seg_len) } else { 0 };
        (row, begin, n)
    }
}
