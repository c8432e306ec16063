//! The driver every n-ary elementwise kernel runs: index the launch, load the inputs, apply the
//! kernel's function to `EPL` elements, store the contiguous output.
//!
//! Two paths, chosen by the host with a uniform flag, share the function body (so each op is
//! compiled once per kernel):
//! - vector: each work-item owns `EPL` output elements in `EPL / E` groups of `E` consecutive
//!   elements, where `E = 16 / (widest operand's bytes)`: the widest operand moves 16 bytes per
//!   lane per group, narrower ones 4 or 8. Group `g` of lane `l` in a wave whose run starts at
//!   element `w` is `w + (g * 64 + l) * E`, so every access instruction of the wave covers one
//!   contiguous span and uses whole 64-byte lines. (Giving each lane `EPL` consecutive elements
//!   instead would make the narrow side one 128-bit access, but then each instruction on the wide
//!   side touches 64 lines a quarter each: f32 -> fp8 moved 3.4x its bytes in lines.) Each input
//!   is read with wide loads when its flag says it is contiguous and aligned along the innermost
//!   dimension, with one load per group when it is broadcast along it (stride 0), or element by
//!   element otherwise. The host only picks this path when no group crosses a row (rank 1, or an
//!   innermost size that is a multiple of `E`), so one index split per group is enough; groups
//!   at the ragged end of a rank-1 launch go element by element.
//! - scalar: element `k` of work-item `t` in workgroup `w` is `(w*EPL + k)*BLOCK + t`, so every
//!   access instruction of a wave touches consecutive elements (coalesced even though each lane
//!   moves one element). Used for misaligned operands and innermost sizes that are not a
//!   multiple of `E`.

use super::access::{load_one, load_vec, store_one, store_vec};
use super::index::{Indexer, MAX_INPUTS};
use crate::abi::elementwise::{ELT_BLOCK, EltArgs, elt_flags};
use crate::dsl::dtype::Element;
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};

/// Raw input runs handed to a kernel's function: `x[j][k]` is element `k` of input `j`.
pub type Inputs<const EPL: usize> = [[u32; EPL]; MAX_INPUTS];

/// One input's run in the vector path.
///
/// # Safety
/// `off` and the run lie inside the input (host-checked); `vec` only when 16-byte aligned.
#[inline(always)]
unsafe fn load_run<D: Element, const EPL: usize>(p: *const u8, off: u32, stride: u32, vec: bool, valid: u32) -> [u32; EPL] {
    let mut x = [0u32; EPL];
    // SAFETY: caller.
    unsafe {
        if vec && valid >= EPL as u32 {
            x = load_vec::<D, EPL>(p.add(off as usize * D::BYTES));
        } else if stride == 0 {
            // Broadcast along the innermost dimension: one load serves the whole run.
            let v = load_one::<D>(p, off);
            x = [v; EPL];
        } else {
            crate::unroll!(k < EPL => {
                if (k as u32) < valid {
                    x[k] = load_one::<D>(p, off + k as u32 * stride);
                }
            });
        }
    }
    x
}

/// A kernel's per-element function on raw bits, for any run length: `apply::<EPL>` in the vector
/// path, `apply::<1>` in the scalar path's rolled loop (so the scalar path costs one copy of the
/// index math and of the function, not `EPL`).
pub trait EltFn {
    /// `y[k] = f(x[0][k], x[1][k], x[2][k])`.
    fn apply<const N: usize>(&self, x: &Inputs<N>) -> [u32; N];
}

/// Lanes per wave.
const WAVE: u32 = 64;

/// Runs `f` over the launch described by `args`: `NIN` inputs of types `D0`, `D1`, `D2` (unused
/// ones are not touched), output type `DO`, `EPL` elements per work-item in groups of `E`
/// (`16 / ` the widest operand's bytes; `E` divides `EPL`).
#[inline(always)]
pub fn run<const EPL: usize, const E: usize, const NIN: usize, D0: Element, D1: Element, D2: Element, DO: Element, F: EltFn>(
    args: &EltArgs,
    f: &F,
) {
    let n = args.n;
    let ix = Indexer::new(args);
    let tid = workitem_id_x();
    let wg = workgroup_id_x();

    if args.flags & elt_flags::VECTOR != 0 {
        let lane = tid % WAVE;
        // First element of this wave's run of 64 * EPL.
        let wave_base = (wg * ELT_BLOCK + tid - lane) * EPL as u32;
        if wave_base + lane * E as u32 >= n {
            return; // the first group starts past the end, so do the later ones
        }
        let vec_flags = [elt_flags::IN0_VEC, elt_flags::IN1_VEC, elt_flags::IN2_VEC];
        let mut x: Inputs<EPL> = [[0u32; EPL]; MAX_INPUTS];
        // Phase 1: every group's input runs.
        crate::unroll_max!(g < EPL / E, 4 => {
            let start = wave_base + (g as u32 * WAVE + lane) * E as u32;
            if start < n {
                let valid = n - start;
                let off = ix.offsets::<NIN>(start);
                // SAFETY: the host checked that every index of every input view lies in its
                // buffer and set the INk_VEC flags only for 16-byte aligned, innermost-contiguous
                // inputs (so each group's run, a multiple of E elements in, is aligned to its size).
                unsafe {
                    if NIN > 0 {
                        let r = load_run::<D0, E>(args.in0, off[0], ix.strides[0][0], args.flags & vec_flags[0] != 0, valid);
                        crate::unroll!(k < E => { x[0][(g * E + k) % EPL] = r[k]; });
                    }
                    if NIN > 1 {
                        let r = load_run::<D1, E>(args.in1, off[1], ix.strides[1][0], args.flags & vec_flags[1] != 0, valid);
                        crate::unroll!(k < E => { x[1][(g * E + k) % EPL] = r[k]; });
                    }
                    if NIN > 2 {
                        let r = load_run::<D2, E>(args.in2, off[2], ix.strides[2][0], args.flags & vec_flags[2] != 0, valid);
                        crate::unroll!(k < E => { x[2][(g * E + k) % EPL] = r[k]; });
                    }
                }
            }
        });
        // Phase 2: the function, once over all groups (the op's match stays outside the loops).
        let y = f.apply::<EPL>(&x);
        // Phase 3: the contiguous output runs.
        crate::unroll_max!(g < EPL / E, 4 => {
            let start = wave_base + (g as u32 * WAVE + lane) * E as u32;
            if start < n {
                let valid = n - start;
                let mut r = [0u32; E];
                crate::unroll!(k < E => { r[k] = y[(g * E + k) % EPL]; });
                // SAFETY: out holds n elements of DO and is 16-byte aligned when VECTOR is set;
                // start is a multiple of E.
                unsafe {
                    if valid >= E as u32 {
                        store_vec::<DO, E>(args.out.add(start as usize * DO::BYTES), &r);
                    } else {
                        crate::unroll!(k < E => {
                            if (k as u32) < valid {
                                store_one::<DO>(args.out, start + k as u32, r[k]);
                            }
                        });
                    }
                }
            }
        });
    } else {
        // Element k of this work-item: (wg * EPL + k) * BLOCK + tid. A rolled loop: each
        // iteration is independent, so waves overlap their latencies instead of one wave
        // unrolling EPL copies of the index math.
        let base = wg * ELT_BLOCK * EPL as u32 + tid;
        let mut k = 0;
        while k < EPL as u32 {
            let i = base + k * ELT_BLOCK;
            if i >= n {
                break;
            }
            let off = ix.offsets::<NIN>(i);
            let mut x: Inputs<1> = [[0u32; 1]; MAX_INPUTS];
            // SAFETY: as above; out holds n elements.
            unsafe {
                if NIN > 0 {
                    x[0][0] = load_one::<D0>(args.in0, off[0]);
                }
                if NIN > 1 {
                    x[1][0] = load_one::<D1>(args.in1, off[1]);
                }
                if NIN > 2 {
                    x[2][0] = load_one::<D2>(args.in2, off[2]);
                }
                store_one::<DO>(args.out, i, f.apply::<1>(&x)[0]);
            }
            k += 1;
        }
    }
}
