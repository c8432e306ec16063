//! Row-resident kernels' shared machinery: which elements of a row segment a lane holds, loading
//! and storing them, and which rows or segments a workgroup handles.
//!
//! Slot `s` of a lane (`s < ROW_SLOTS`) holds, with 16-byte chunks (VECTOR_OK), element
//! `(lane + lanes * (s / V)) * V + s % V` where `V` is the elements per chunk; otherwise element
//! `lane + lanes * s`. Either way the lanes of a group read contiguous memory in every load
//! instruction, and the same slot of every row holds the same column, so per-column data
//! (weights) can stay in registers across rows.

use crate::abi::rows::{ROW_SLOTS, mode};
use crate::dsl::chunk::{Elem, load_chunk, store_chunk};
use crate::dsl::ids::{num_workgroups_x, workgroup_id_x, workgroup_size_x, workitem_id_x};

/// Elements a lane holds.
pub const SLOTS: usize = ROW_SLOTS as usize;

/// A lane's registers of a row segment.
pub type Slots = [f32; SLOTS];

/// Where a lane's slots sit in a segment of `n` elements.
#[derive(Clone, Copy)]
pub struct Spread {
    /// The lane within its group.
    pub lane: usize,
    /// Lanes of the group.
    pub lanes: usize,
    /// Elements in the segment (0 for a group without a row this iteration).
    pub n: usize,
    /// 16-byte chunks (else single elements).
    pub vector: bool,
}

impl Spread {
    /// The segment-relative element index of slot `s`.
    #[inline(always)]
    pub fn index<E: Elem>(&self, s: usize) -> usize {
        let v = E::PER_CHUNK;
        if self.vector { (self.lane + self.lanes * (s / v)) * v + s % v } else { self.lane + self.lanes * s }
    }

    /// True when slot `s` holds an element.
    #[inline(always)]
    pub fn valid<E: Elem>(&self, s: usize) -> bool {
        self.index::<E>(s) < self.n
    }

    /// Elements the lane holds.
    #[inline(always)]
    pub fn count<E: Elem>(&self) -> u32 {
        let mut c = 0;
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { c += self.valid::<E>(h * 16 + j) as u32; }); });
        c
    }

    /// Loads the lane's slots of the segment at `base`; slots without an element get `fill`.
    ///
    /// # Safety
    /// The segment's `n` elements at `base` are readable (16-byte aligned with `vector`).
    #[inline(always)]
    pub unsafe fn load<E: Elem>(&self, base: *const u8, fill: f32) -> Slots {
        let mut x = [fill; SLOTS];
        let v = E::PER_CHUNK;
        if self.vector {
            crate::unroll!(k < 8 => {
                if k < SLOTS / v {
                    let c = self.lane + self.lanes * k;
                    if c * v < self.n {
                        // SAFETY: the chunk lies inside the segment (n is a multiple of v).
                        let e = E::unpack(unsafe { load_chunk(base, c * 16) });
                        crate::unroll!(j < 8 => { if j < v { x[k * v + j] = e[j]; } });
                    }
                }
            });
        } else {
            crate::unroll!(h < 2 => {
                crate::unroll!(j < 16 => {
                    let i = self.lane + self.lanes * (h * 16 + j);
                    if i < self.n {
                        // SAFETY: i < n.
                        x[h * 16 + j] = unsafe { E::load(base, i) };
                    }
                });
            });
        }
        x
    }

    /// Stores the lane's slots (rounded to `E`) into the segment at `base`.
    ///
    /// # Safety
    /// The segment's `n` elements at `base` are writable (16-byte aligned with `vector`).
    #[inline(always)]
    pub unsafe fn store<E: Elem>(&self, base: *mut u8, x: &Slots) {
        let v = E::PER_CHUNK;
        if self.vector {
            crate::unroll!(k < 8 => {
                if k < SLOTS / v {
                    let c = self.lane + self.lanes * k;
                    if c * v < self.n {
                        let mut e = [0f32; 8];
                        crate::unroll!(j < 8 => { if j < v { e[j] = x[k * v + j]; } });
                        // SAFETY: as in load.
                        unsafe { store_chunk(base, c * 16, E::pack(&e)) };
                    }
                }
            });
        } else {
            crate::unroll!(h < 2 => {
                crate::unroll!(j < 16 => {
                    let i = self.lane + self.lanes * (h * 16 + j);
                    if i < self.n {
                        // SAFETY: i < n.
                        unsafe { E::store(base, i, x[h * 16 + j]) };
                    }
                });
            });
        }
    }
}

/// The work of one workgroup of a row kernel, from the launch and the `mode`.
#[derive(Clone, Copy)]
pub struct Work {
    /// The work-item's lane within its group.
    pub lane: usize,
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
        let lane = (t % lanes) as usize;
        if m == mode::FUSED {
            let per_wg = workgroup_size_x() / lanes;
            let groups = num_workgroups_x() * per_wg;
            Work { lane, row: workgroup_id_x() * per_wg + t / lanes, row_step: groups, iters: rows.div_ceil(groups), seg: 0 }
        } else {
            let w = workgroup_id_x();
            Work { lane, row: w / segs, row_step: 0, iters: 1, seg: w % segs }
        }
    }
}
