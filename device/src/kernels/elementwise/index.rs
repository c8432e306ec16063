//! Flat output index -> element offsets of the strided/broadcast inputs.
//!
//! The host passes the simplified shape innermost first with a [`FastDivisor`] per dimension,
//! so splitting an index costs a multiply-high, a few adds and shifts per dimension instead of an
//! integer division. Dimensions at or past `rank` are skipped by uniform (scalar) branches.
//!
//! [`FastDivisor`]: crate::abi::elementwise::FastDivisor

use crate::abi::elementwise::{ELT_MAX_RANK, EltArgs};

/// Inputs an elementwise kernel can have.
pub const MAX_INPUTS: usize = 3;

/// The shape of a launch and the strides of its inputs, unpacked from [`EltArgs`].
pub struct Indexer {
    rank: u32,
    size: [u32; ELT_MAX_RANK - 1],
    magic: [u32; ELT_MAX_RANK - 1],
    shifts: u32,
    /// `strides[j][d]`: input j's stride (elements) along dimension d, innermost first.
    pub strides: [[u32; ELT_MAX_RANK]; MAX_INPUTS],
}

impl Indexer {
    /// Unpacks the shape fields of `a`.
    #[inline(always)]
    pub fn new(a: &EltArgs) -> Self {
        Indexer {
            rank: a.rank,
            size: [a.size0, a.size1, a.size2, a.size3, a.size4],
            magic: [a.magic0, a.magic1, a.magic2, a.magic3, a.magic4],
            shifts: a.shifts,
            strides: [
                [a.in0_s0, a.in0_s1, a.in0_s2, a.in0_s3, a.in0_s4, a.in0_s5],
                [a.in1_s0, a.in1_s1, a.in1_s2, a.in1_s3, a.in1_s4, a.in1_s5],
                [a.in2_s0, a.in2_s1, a.in2_s2, a.in2_s3, a.in2_s4, a.in2_s5],
            ],
        }
    }

    /// Element offsets of flat index `i` in the first `NIN` inputs.
    #[inline(always)]
    #[allow(unused_assignments)] // the last unrolled copy's `rest` is dead
    pub fn offsets<const NIN: usize>(&self, i: u32) -> [u32; MAX_INPUTS] {
        let mut off = [0u32; MAX_INPUTS];
        let mut rest = i;
        crate::unroll_max!(d < ELT_MAX_RANK, 6 => {
            let dim = d as u32;
            if dim < self.rank {
                // The outermost dimension in use takes what is left; the others split it.
                let c = if dim + 1 < self.rank && d + 1 < ELT_MAX_RANK {
                    let shift = (self.shifts >> (6 * dim)) & 63;
                    let t = ((rest as u64 * self.magic[d.min(ELT_MAX_RANK - 2)] as u64) >> 32) as u32;
                    let q = ((t as u64 + rest as u64) >> shift) as u32;
                    let c = rest - q * self.size[d.min(ELT_MAX_RANK - 2)];
                    rest = q;
                    c
                } else {
                    let c = rest;
                    rest = 0;
                    c
                };
                crate::unroll_max!(j < NIN, 3 => {
                    off[j % MAX_INPUTS] += c * self.strides[j % MAX_INPUTS][d];
                });
            }
        });
        off
    }
}
