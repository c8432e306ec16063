//! Where the decode GEMV reads its activation rows: straight from global memory, or from the
//! workgroup's RMSNorm of them in LDS (`flags::RMS_NORM`).
//!
//! The normalised rows exist so that a transformer's RMSNorm costs no launch of its own: every
//! workgroup of the projection after the norm recomputes it for its rows (at most as many as
//! it has waves, `abi::quant::gemv_norm_fits`), which is cheap next to the weights it streams, and the
//! rows never go back to global memory. The rows' loads are among the kernel's first (before the
//! first chunk's weight loads, so their latencies overlap); what the norm adds is its
//! arithmetic (a group of waves per row, each lane a few 16-byte pieces in registers), one
//! reduction over the group (through LDS, a barrier, when the group has several waves) and one
//! barrier.

use crate::abi::elementwise::type_code;
use crate::abi::quant::{
    self as abi, GEMV_MAX_WAVES, GEMV_NORM_HELD, GEMV_NORM_SCRATCH_BYTES, GEMV_SUMS_STRIDE, QGemvArgs, flags, gemv_norm_waves_capped,
    gemv_staged_pitch,
};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::{REDUCE_WAVES_LDS_BYTES, reduce_lanes, reduce_waves_within};
use crate::dsl::ids::{workgroup_size_x, workitem_id_x};
use crate::dsl::lds::LdsSlice;
use crate::dsl::math::{F16_ONES, SmallDiv, dot2_f16, rcp_fast, rsq_fast};
use crate::dsl::mem::Buffer;
use crate::dsl::simd::{U32x2, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};
use crate::kernels::norm::{may_scale, ratio, recip, scale_of};

/// The activation rows as the GEMV's lanes read them: byte offsets `row * pitch() + 2 e` (or
/// `4 e` for f32) of element `e` of a row.
pub(super) trait ActRows: Copy {
    /// Whether the rows are the LDS copy (its reads come after [`ActRows::finish`], not
    /// before the first weight loads).
    const STAGED: bool;
    /// Bytes from one row to the next.
    fn pitch(&self) -> u32;
    /// The byte offset of the lane's row `row` (a row past the `m` rows: past them, or, staged,
    /// the last row's, so that such lanes read what a real row's lane reads: a broadcast, not
    /// a bank conflict).
    fn row_offset(&self, row: u32, m: u32) -> u32;
    /// What the rows' loads brought, for [`ActRows::finish`]: the kernel issues them first
    /// ([`NormedRows::issue`]; global rows load nothing ahead).
    type Held: Copy;
    /// Makes the rows readable (every wave once, after the first weight loads). Staged rows
    /// also fill `sums` (unless empty: formats without a minimum), the waves' tables of
    /// activation sums back to back, `sums[GEMV_SUMS_STRIDE g + row]` the sum of row `row`'s
    /// group `g`.
    ///
    /// # Safety
    /// As `issue`; `sums` is empty or holds `GEMV_SUMS_STRIDE` floats per group of K.
    unsafe fn finish(&self, a: &QGemvArgs, held: Self::Held, sums: LdsSlice<f32>);
    /// The byte offset `at` of a chunk whose first `bytes` bytes the lanes read, made safe to
    /// read: global rows take any offset (a range-checked buffer: zeros past the rows); the
    /// LDS copy moves a chunk that would end past the rows back inside its LDS (only a chunk
    /// read for nothing does: the groups of K lie inside the rows). Once per chunk, so
    /// that the reads inside it are a base and constant offsets, which the loads take as
    /// their immediate offsets.
    fn chunk_at(&self, at: u32, bytes: u32) -> u32;
    /// The 16 bytes at byte `at` (16-byte aligned). Past the rows: zeros, or (LDS) bytes of
    /// some row or of the norm's scratch, which only ever reach outputs of rows past M (never
    /// stored) or unused registers.
    ///
    /// # Safety
    /// After `finish`; `at` inside a chunk placed by [`ActRows::chunk_at`].
    unsafe fn b128(&self, at: u32) -> [u32; 4];
    /// The 8 bytes at byte `at` (8-byte aligned), as [`ActRows::b128`].
    ///
    /// # Safety
    /// As [`ActRows::b128`].
    unsafe fn b64(&self, at: u32) -> [u32; 2];
}

/// `x` in global memory, one range-checked buffer over its `m` rows (rows past them read as 0).
#[derive(Clone, Copy)]
pub(super) struct GlobalRows {
    buf: Buffer,
    pitch: u32,
}

impl GlobalRows {
    /// The rows of `a.x` (`a.m` rows of `a.ldx` elements of `elem_bytes`).
    #[inline(always)]
    pub(super) fn new(a: &QGemvArgs, elem_bytes: u32) -> GlobalRows {
        GlobalRows { buf: Buffer::new(a.x, a.m * a.ldx * elem_bytes), pitch: a.ldx * elem_bytes }
    }
}

impl ActRows for GlobalRows {
    const STAGED: bool = false;
    #[inline(always)]
    fn pitch(&self) -> u32 {
        self.pitch
    }
    #[inline(always)]
    fn row_offset(&self, row: u32, _m: u32) -> u32 {
        row * self.pitch
    }
    type Held = ();
    #[inline(always)]
    unsafe fn finish(&self, _: &QGemvArgs, _: (), _: LdsSlice<f32>) {}
    #[inline(always)]
    fn chunk_at(&self, at: u32, _bytes: u32) -> u32 {
        at
    }
    #[inline(always)]
    unsafe fn b128(&self, at: u32) -> [u32; 4] {
        // SAFETY: range-checked: past the rows reads zeros.
        unsafe { self.buf.load_b128(at, 0) }.to_array()
    }
    #[inline(always)]
    unsafe fn b64(&self, at: u32) -> [u32; 2] {
        // SAFETY: as above.
        unsafe { self.buf.load_b64(at, 0) }.to_array()
    }
}

/// RMSNorm of the workgroup's rows, of element type `E` (f16 or bf16), in LDS: the slots of a
/// reduction over waves, then `m` rows of `pitch` bytes.
#[derive(Clone, Copy)]
pub(super) struct NormedRows<E> {
    lds: LdsSlice<U32x4>,
    /// `reduce_waves`' slots.
    scratch: LdsSlice<U32x4>,
    pitch: u32,
    /// Bytes of the rows.
    rows_bytes: u32,
    /// The wave's part of the norm ([`NormedRows::place`]), worked out once for `issue` and
    /// `finish`.
    place: Place,
    _e: core::marker::PhantomData<E>,
}

impl<E: Chunked> NormedRows<E> {
    /// The rows of `a` in `lds` ([`gemv_staged_bytes`](crate::abi::quant::gemv_staged_bytes)
    /// of `a.m` rows, 16-byte aligned), for weights of format `f`; `place` is
    /// [`NormedRows::place`]`(a)`, worked out first for [`NormedRows::issue`].
    #[inline(always)]
    pub(super) fn new(a: &QGemvArgs, f: u32, lds: LdsSlice<U32x4>, place: Place) -> NormedRows<E> {
        let pitch = gemv_staged_pitch(f, a.k, E::BYTES as u32);
        const { assert!(GEMV_NORM_SCRATCH_BYTES as usize == REDUCE_WAVES_LDS_BYTES) };
        let slots = REDUCE_WAVES_LDS_BYTES / 16;
        NormedRows {
            lds: lds.sub(slots, lds.len() - slots),
            scratch: lds.sub(0, slots),
            pitch,
            rows_bytes: a.m.max(1) * pitch,
            place,
            _e: core::marker::PhantomData,
        }
    }

    /// Issues the loads of the lane's pieces of its row and of the weight for the wave's part
    /// `place` (every wave once, its first loads). A piece past the row reads zeros (an offset
    /// past the buffer: no memory access), which add nothing to the sums of squares and are
    /// not stored; a wave left over by the groups reads the last row's pieces and ignores
    /// them. Unconditional loads: with a bound per piece, LLVM zeroed the 32 registers first
    /// and branched around each load (some sixty instructions); clamped into the row instead,
    /// every lane past it read the row's last piece again (the counters: three times the
    /// norm's bytes).
    ///
    /// # Safety
    /// The kernel's arguments describe its buffers (see `QGemvArgs`).
    #[inline(always)]
    pub(super) unsafe fn issue(a: &QGemvArgs, place: Place) -> <Self as ActRows>::Held {
        let per_row = a.k * E::BYTES as u32 / 16;
        let (r, first, stride, _) = place;
        let row_at = r.min(a.m.max(1) - 1) * a.ldx * E::BYTES as u32;
        let (xb, wb) = (Self::rows(a), Self::weight(a));
        let mut h = [[[0u32; 4]; HELD]; 2];
        crate::unroll_max!(i < HELD, 4 => {
            let j = first + stride * i as u32;
            let (xo, wo) = if j < per_row { (row_at + 16 * j, 16 * j) } else { (Buffer::PAST, Buffer::PAST) };
            // SAFETY: inside x's rows and the weight, or past them (zeros).
            unsafe {
                h[0][i] = xb.load_b128(xo, 0).to_array();
                h[1][i] = wb.load_b128(wo, 0).to_array();
            }
        });
        h
    }
}

/// A wave's part of the norm: `(row, first piece, pieces apart, its group's waves)`
/// ([`NormedRows::place`]).
pub(super) type Place = (u32, u32, u32, u32);

/// A statistic of squares: `(k, s)`, the sum `s` of the squares of values divided by the
/// scale `k` (a power of two, 1 below 2^32: see `kernels::norm`).
type SumSq = (f32, f32);

/// Two statistics at the larger scale (exact rescaling by powers of two).
#[inline(always)]
fn merge(p: SumSq, q: SumSq) -> SumSq {
    let k = p.0.max(q.0);
    let (rp, rq) = (ratio(p.0, k), ratio(q.0, k));
    (k, p.1 * rp * rp + q.1 * rq * rq)
}

impl<E: Chunked> NormedRows<E> {
    /// The norm's weight as a range-checked buffer of its `k` elements; without NORM_WEIGHT
    /// `x`'s first row instead (valid bytes), and [`NormedRows::finish`] uses ones.
    #[inline(always)]
    fn weight(a: &QGemvArgs) -> Buffer {
        let base = if a.flags & flags::NORM_WEIGHT != 0 { a.norm_weight } else { a.x };
        Buffer::new(base, a.k * E::BYTES as u32)
    }

    /// `x`'s `m` rows as a range-checked buffer.
    #[inline(always)]
    fn rows(a: &QGemvArgs) -> Buffer {
        Buffer::new(a.x, a.m * a.ldx * E::BYTES as u32)
    }

    /// The wave's part of the work: `(row, first piece, pieces apart, its group's waves)`.
    /// Waves form groups of `wpr` ([`gemv_norm_waves_per_row`](crate::abi::quant::gemv_norm_waves_per_row)), group `g` taking row `g`
    /// (waves left over have a row past M: no work); a wave's lanes hold pieces
    /// `first + stride i` (consecutive lanes, consecutive pieces).
    #[inline(always)]
    pub(super) fn place(a: &QGemvArgs) -> Place {
        let wave = readfirstlane(workitem_id_x() / 64);
        let per_row = SmallDiv::new(a.m).div_rem(workgroup_size_x() / 64).0;
        let wpr = readfirstlane(gemv_norm_waves_capped(per_row, a.k, E::BYTES as u32));
        let (r, w) = SmallDiv::new(wpr).div_rem(wave);
        (readfirstlane(r), lane_id() + 64 * w, 64 * wpr, wpr)
    }

    /// `1 / sqrt(mean square + eps)` in units of the scale `k = 1 / inv` (`sum`: the squares of
    /// the values divided by `k`): the output is `x inv rstd w`.
    ///
    /// The mean and the root are the hardware's `v_rcp_f32` and `v_rsq_f32` (1 ulp each), not
    /// correctly rounded division and square root: about fifty instructions fewer on the
    /// prologue every wave waits for, and the result is rounded to f16/bf16 (11 or 8 bits)
    /// anyway.
    #[inline(always)]
    fn rstd(a: &QGemvArgs, sum: f32, inv: f32) -> f32 {
        let t = sum * rcp_fast(a.k as f32) + a.eps * inv * inv;
        // v_rsq_f32 takes no denormal input: those are scaled by 2^64 first and the root by
        // 2^32 after (a row of tiny values with a tiny eps).
        let small = t < f32::MIN_POSITIVE;
        let r = rsq_fast(if small { t * f32::from_bits((127 + 64) << 23) } else { t });
        let r = if small { r * f32::from_bits((127 + 32) << 23) } else { r };
        // t is infinite only for a row holding an infinity (finite rows are scaled into
        // range): NaN throughout, like a NaN. t == 0 with eps > 0: eps / k^2 underflowed on a
        // constant row, whose outputs are then 0 as in the reference. (Selects after the root,
        // not branches around it: the branches were on every wave's path to the K loop.)
        if t == f32::INFINITY {
            f32::NAN
        } else if t == 0.0 && a.eps > 0.0 {
            f32::MAX
        } else {
            r
        }
    }
}

/// Pieces of 16 bytes of a row each lane holds in registers ([`gemv_norm_fits`]).
const HELD: usize = GEMV_NORM_HELD as usize;
/// Most waves of a GEMV workgroup, and so of a row's group.
const MAXW: usize = GEMV_MAX_WAVES as usize;

impl<E: Chunked> ActRows for NormedRows<E> {
    const STAGED: bool = true;
    /// The lane's pieces of its row and of the weight, raw.
    type Held = [[[u32; 4]; HELD]; 2];

    #[inline(always)]
    fn pitch(&self) -> u32 {
        self.pitch
    }

    #[inline(always)]
    fn row_offset(&self, row: u32, m: u32) -> u32 {
        row.min(m.max(1) - 1) * self.pitch
    }

    /// Per row (its group of waves): the squares' statistic of the lane's pieces (their
    /// values divided by the power of two at or below their largest magnitude when that is
    /// 2^32 or more, as `ops::norm` scales: squares of finite bf16 can overflow f32), merged at
    /// the larger scale over the lanes and the group's waves (one reduction, through LDS when
    /// the group has several waves); then `x / sqrt(sum / K + eps) * w` rounded to `E` into
    /// LDS, with the group sums (pieces `4g..4g + 4` are group `g`, held by a quad of lanes:
    /// their partial sums meet by DPP). A row holding a NaN or an infinity is NaN throughout,
    /// as `ops::norm`'s.
    #[inline(always)]
    unsafe fn finish(&self, a: &QGemvArgs, h: Self::Held, sums: LdsSlice<f32>) {
        let per_row = a.k * E::BYTES as u32 / 16;
        let (r, first, stride, wpr) = self.place;
        if r >= a.m {
            // A wave left over by the groups: only the barriers (its group's reduction's, when
            // groups have several waves, and the last).
            if wpr > 1 {
                barrier();
            }
            barrier();
            return;
        }
        let x = |i: usize| E::unpack(h[0][i]);
        // f16 pieces are summed as they are, a pair of f16 per v_dot2_f32_f16 (exact products,
        // f32 sums): no conversions, a quarter of the instructions.
        let f16 = E::CODE == type_code::F16;
        let (inv, sum) = if may_scale::<E>() {
            let x: [[f32; 8]; HELD] = core::array::from_fn(x);
            let mut big = 0u32;
            crate::unroll_max!(i < HELD, 4 => {
                crate::unroll_max!(e < 8, 8 => { if e < E::PER_CHUNK { big = big.max(x[i][e].to_bits() & 0x7fff_ffff); } });
            });
            let k = scale_of(f32::from_bits(big));
            let inv = recip(k);
            let mut sum = 0.0f32;
            crate::unroll_max!(i < HELD, 4 => {
                crate::unroll_max!(e < 8, 8 => { if e < E::PER_CHUNK { let v = x[i][e] * inv; sum += v * v; } });
            });
            let st = reduce_lanes((k, sum), 64, merge);
            // SAFETY: every live wave calls this once, the others a barrier; our slots.
            let st = if wpr > 1 { unsafe { reduce_waves_within::<_, MAXW>(st, wpr, self.scratch, 0, merge) } } else { st };
            (recip(st.0), st.1)
        } else {
            // f16 (at most 65504): squares cannot overflow, no scaling (k = 1).
            let mut sum = 0.0f32;
            crate::unroll_max!(i < HELD, 4 => {
                crate::unroll_max!(q < 4, 4 => { sum = dot2_f16(h[0][i][q], h[0][i][q], sum); });
            });
            let add = |p: f32, q: f32| p + q;
            let sum = reduce_lanes(sum, 64, add);
            // SAFETY: as above.
            (1.0, if wpr > 1 { unsafe { reduce_waves_within::<_, MAXW>(sum, wpr, self.scratch, 0, add) } } else { sum })
        };
        let scale = inv * Self::rstd(a, sum, inv);
        let weighted = a.flags & flags::NORM_WEIGHT != 0;
        crate::unroll_max!(i < HELD, 4 => {
            let j = first + stride * i as u32;
            if j < per_row {
                let w = if weighted { E::unpack(h[1][i]) } else { [1.0; 8] };
                let (xi, mut y) = (x(i), [0.0f32; 8]);
                crate::unroll_max!(e < 8, 8 => { y[e] = xi[e] * scale * w[e]; });
                let packed = E::pack(&y);
                // SAFETY: piece j of row r, inside the staged rows; this lane's own piece.
                unsafe { self.lds.write(((r * self.pitch) / 16 + j) as usize, U32x4::from_array(packed)) };
                if !sums.is_empty() {
                    let mut part = 0.0f32;
                    if f16 {
                        crate::unroll_max!(q < 4, 4 => { part = dot2_f16(packed[q], F16_ONES, part); });
                    } else {
                        let back = E::unpack(packed);
                        crate::unroll_max!(e < 8, 8 => { if e < E::PER_CHUNK { part += back[e]; } });
                    }
                    let total = reduce_lanes(part, 4, |p, q| p + q);
                    if j % 4 == 0 {
                        // SAFETY: GEMV_SUMS_STRIDE floats per group of K (host-sized).
                        unsafe { sums.write(((j / 4) * GEMV_SUMS_STRIDE as u32 + r) as usize, total) };
                    }
                }
            }
        });
        barrier();
    }

    /// A chunk ending past the rows starts `bytes` before their end instead, which may be in
    /// the scratch slots before them (a chunk is at most 512 bytes, the slots as many:
    /// `GEMV_NORM_SCRATCH_BYTES`), so the offset is signed.
    #[inline(always)]
    fn chunk_at(&self, at: u32, bytes: u32) -> u32 {
        const { assert!(GEMV_NORM_SCRATCH_BYTES as usize >= abi::CHUNK * 2) };
        (at as i32).min(self.rows_bytes as i32 - bytes as i32) as u32
    }

    #[inline(always)]
    unsafe fn b128(&self, at: u32) -> [u32; 4] {
        // SAFETY: inside the rows or the scratch slots before them (`chunk_at`), 16-byte
        // aligned, written before `finish`'s barrier (or unused).
        unsafe { ((self.lds.as_ptr() as *const u8).offset(at as i32 as isize) as *const U32x4).read() }.to_array()
    }

    #[inline(always)]
    unsafe fn b64(&self, at: u32) -> [u32; 2] {
        // SAFETY: as above, 8-byte aligned.
        unsafe { ((self.lds.as_ptr() as *const u8).offset(at as i32 as isize) as *const U32x2).read() }.to_array()
    }
}
