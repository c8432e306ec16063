//! The arithmetic core of a fused-group MFMA (operand decoding and [`fused::rows_generic`]),
//! compiled once per x86 vector width and picked by what the CPU has (`cpu::Level`).
//!
//! The emulator spends a model decode step's largest share on MFMAs, and most of an MFMA on
//! turning 2 x 256 packed values into f64: on baseline x86-64 (SSE2, 2 doubles a vector) the
//! decode alone cost ~1,000 ns an instruction. The same source, inlined into functions built
//! for AVX2 or AVX-512, runs 4 or 8 values a vector. Every variant computes the same bits.

use super::decode::{e4m3fnuz_to_f32, e5m2fnuz_to_f32};
use super::fused;
use super::{In, LANES};
use crate::exec::cpu::Level;
#[cfg(target_arch = "x86_64")]
use crate::exec::cpu::f16x8_to_f32;
use crate::exec::valu::f16_to_f64;

/// An A or B operand as the lanes hold it: its (at most two) registers.
pub(super) type Raw = [[u32; LANES]; 2];

/// Value `e` of every lane's packed A/B operand, decoded exactly into `out[lane]`: one loop per
/// element type, without branches per value. `N` lanes: all of them, or the first lane of
/// each run of a uniform operand's rows.
#[inline(always)]
fn decode_elements<const N: usize, const HW: bool>(ty: In, raw: &[[u32; N]; 2], e: usize, out: &mut [f64; N]) {
    match ty {
        #[cfg(target_arch = "x86_64")]
        In::F16 if HW && N.is_multiple_of(8) => {
            let (reg, shift) = (&raw[e / 2], 16 * (e % 2));
            for (o, r) in out.chunks_exact_mut(8).zip(reg.chunks_exact(8)) {
                let h: [u16; 8] = core::array::from_fn(|i| (r[i] >> shift) as u16);
                // SAFETY: HW builds run on CPUs with F16C (`core_v3`, `core_avx512`).
                let f = unsafe { f16x8_to_f32(h) };
                for (o, f) in o.iter_mut().zip(f) {
                    *o = f as f64;
                }
            }
        }
        In::F16 => {
            let (reg, shift) = (&raw[e / 2], 16 * (e % 2));
            for (o, &v) in out.iter_mut().zip(reg) {
                *o = f16_to_f64((v >> shift) as u16);
            }
        }
        In::Bf16 => {
            // bf16 is the top half of an f32.
            let (reg, shift) = (&raw[e / 2], 16 * (e % 2));
            for (o, &v) in out.iter_mut().zip(reg) {
                *o = f32::from_bits((v >> shift) << 16) as f64;
            }
        }
        In::Fp8 | In::Bf8 => {
            let (reg, shift) = (&raw[e / 4], 8 * (e % 4));
            let conv = if ty == In::Fp8 { e4m3fnuz_to_f32 } else { e5m2fnuz_to_f32 };
            for (o, &v) in out.iter_mut().zip(reg) {
                *o = conv((v >> shift) as u8) as f64;
            }
        }
        other => {
            for (lane, o) in out.iter_mut().enumerate() {
                *o = other.value([raw[0][lane], raw[1][lane]], e);
            }
        }
    }
}

/// Whether each run of `M` lanes of every register holds one value (the operand's rows, for
/// A, or columns, for B, all the same). (Plain loops that fold a flag, which vectorise,
/// rather than `all`'s early exit.)
#[inline(always)]
fn runs_same<const M: usize>(regs: &[[u32; LANES]]) -> bool {
    let mut same = true;
    for reg in regs {
        for run in reg.chunks_exact(M) {
            for &v in run {
                same &= v == run[0];
            }
        }
    }
    same
}

/// The k values of an operand whose runs of `M` lanes each hold one value ([`runs_same`]):
/// value `e` of the first lane of every run (at most 4 runs), through the same decoder as
/// whole registers (`In::value` per value, a call the vector-width builds did not inline, was
/// a fifth of a GEMV MFMA).
#[inline(always)]
fn firsts<const M: usize, const KK: usize, const HW: bool>(ty: In, raw: &Raw) -> [f64; KK] {
    let kpl = const { KK * M / LANES };
    const { assert!(LANES / M <= 4) };
    let firsts: [[u32; 4]; 2] = core::array::from_fn(|r| core::array::from_fn(|q| if q < LANES / M { raw[r][q * M] } else { 0 }));
    let mut out = [0f64; KK];
    let mut v = [0f64; 4];
    for e in 0..kpl {
        decode_elements::<4, HW>(ty, &firsts, e, &mut v);
        for q in 0..LANES / M {
            out[q * kpl + e] = v[q];
        }
    }
    out
}

/// B decoded into `KK x M` (lanes `q * M .. q * M + M` hold value `e` of k index `q * kpl + e`
/// for columns `0..M`, so every copy moves a whole run).
#[inline(always)]
fn decode_b<const M: usize, const KK: usize, const HW: bool>(b: In, rb: &Raw) -> [[f64; M]; KK] {
    let kpl = const { KK * M / LANES };
    let mut bm = [[0f64; M]; KK];
    let mut vals = [0f64; LANES];
    for e in 0..kpl {
        decode_elements::<LANES, HW>(b, rb, e, &mut vals);
        for (q, run) in vals.chunks_exact(M).enumerate() {
            bm[q * kpl + e].copy_from_slice(run);
        }
    }
    bm
}

/// `acc += A * B` in fused groups of `G` for an `M x M x KK` shape: A and B decoded from the
/// lanes into `KK x M` each (A transposed; lanes `q * M .. q * M + M` hold value `e` of k index
/// `q * kpl + e` for rows (columns) `0..M`, so every copy moves a whole run), then the groups.
#[inline(always)]
fn core<const M: usize, const KK: usize, const G: usize, const HW: bool>(a: In, b: In, ra: &Raw, rb: &Raw, acc: &mut [[f32; M]; M]) {
    let kpl = const { KK * M / LANES };
    // Every row of A the same, bit for bit (a skinny GEMM's rows padded with copies of the
    // last: every MFMA of the quantized decode GEMV): each run of M lanes holds one value, so
    // it is decoded once, not M times; with C's rows the same too, only row 0 is computed.
    let a_rows_same = runs_same::<M>(&ra[..a.regs() as usize]);
    // (Every column of B the same too, and every element of C: the caller takes `fused_one`.)
    if a_rows_same && fused::rows_same(acc) {
        let a0 = firsts::<M, KK, HW>(a, ra);
        let bm = decode_b::<M, KK, HW>(b, rb);
        fused::uniform_rows::<M, KK, G, HW>(acc, &a0, &bm);
        return;
    }
    let bm = decode_b::<M, KK, HW>(b, rb);
    let mut vals = [0f64; LANES];
    let mut at = [[0f64; M]; KK];
    for e in 0..kpl {
        if a_rows_same {
            for q in 0..LANES / M {
                at[q * kpl + e] = [a.value([ra[0][q * M], ra[1][q * M]], e); M];
            }
        } else {
            decode_elements::<LANES, HW>(a, ra, e, &mut vals);
            for (q, run) in vals.chunks_exact(M).enumerate() {
                at[q * kpl + e].copy_from_slice(run);
            }
        }
    }
    fused::rows_generic::<M, KK, G, HW>(acc, &at, &bm, a_rows_same);
}

/// Whether every row of A and every column of B (their runs of `M` lanes) are each one value:
/// with C one value too, the MFMA is one element ([`fused_one`]).
pub(super) fn uniform_operands<const M: usize>(a: In, b: In, ra: &Raw, rb: &Raw) -> bool {
    runs_same::<M>(&ra[..a.regs() as usize]) && runs_same::<M>(&rb[..b.regs() as usize])
}

/// The one element of an MFMA whose operands are uniform ([`uniform_operands`]) and whose C
/// is `c` throughout.
#[inline(always)]
fn one<const M: usize, const KK: usize, const G: usize, const HW: bool>(a: In, b: In, ra: &Raw, rb: &Raw, c: f32) -> f32 {
    fused::one_element::<KK, G, HW>(c, &firsts::<M, KK, HW>(a, ra), &firsts::<M, KK, HW>(b, rb))
}

/// [`one`] compiled for x86-64-v3.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn one_v3<const M: usize, const KK: usize, const G: usize>(a: In, b: In, ra: &Raw, rb: &Raw, c: f32) -> f32 {
    one::<M, KK, G, true>(a, b, ra, rb, c)
}

/// [`one`] compiled for AVX-512.
///
/// # Safety
/// The CPU has AVX-512 F, DQ, VL and BW, AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,f16c")]
unsafe fn one_avx512<const M: usize, const KK: usize, const G: usize>(a: In, b: In, ra: &Raw, rb: &Raw, c: f32) -> f32 {
    one::<M, KK, G, true>(a, b, ra, rb, c)
}

/// [`one`] at `level`, which the CPU must run (at most [`Level::best`]).
fn one_at_level<const M: usize, const KK: usize, const G: usize>(level: Level, a: In, b: In, ra: &Raw, rb: &Raw, c: f32) -> f32 {
    match level {
        // SAFETY: the caller's level is at most what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { one_avx512::<M, KK, G>(a, b, ra, rb, c) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Level::V3 => unsafe { one_v3::<M, KK, G>(a, b, ra, rb, c) },
        _ => one::<M, KK, G, false>(a, b, ra, rb, c),
    }
}

/// The one element of a uniform fused-group MFMA ([`uniform_operands`], C `c` throughout) on
/// the widest vectors this CPU has: the same bits as [`fused`] on the whole tile.
pub(super) fn fused_one<const M: usize, const KK: usize, const G: usize>(a: In, b: In, ra: &Raw, rb: &Raw, c: f32) -> f32 {
    one_at_level::<M, KK, G>(Level::best(), a, b, ra, rb, c)
}

/// [`core`] compiled for x86-64-v3.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn core_v3<const M: usize, const KK: usize, const G: usize>(a: In, b: In, ra: &Raw, rb: &Raw, acc: &mut [[f32; M]; M]) {
    core::<M, KK, G, true>(a, b, ra, rb, acc)
}

/// [`core`] compiled for AVX-512.
///
/// # Safety
/// The CPU has AVX-512 F, DQ, VL and BW, AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,f16c")]
unsafe fn core_avx512<const M: usize, const KK: usize, const G: usize>(a: In, b: In, ra: &Raw, rb: &Raw, acc: &mut [[f32; M]; M]) {
    core::<M, KK, G, true>(a, b, ra, rb, acc)
}

/// [`core`] at `level`, which the CPU must run (at most [`Level::best`]).
fn at_level<const M: usize, const KK: usize, const G: usize>(level: Level, a: In, b: In, ra: &Raw, rb: &Raw, acc: &mut [[f32; M]; M]) {
    match level {
        // SAFETY: the caller's level is at most what the CPU has.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { core_avx512::<M, KK, G>(a, b, ra, rb, acc) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Level::V3 => unsafe { core_v3::<M, KK, G>(a, b, ra, rb, acc) },
        _ => core::<M, KK, G, false>(a, b, ra, rb, acc),
    }
}

/// `acc += A * B` of a fused-group MFMA on the widest vectors this CPU has.
pub(super) fn fused<const M: usize, const KK: usize, const G: usize>(a: In, b: In, ra: &Raw, rb: &Raw, acc: &mut [[f32; M]; M]) {
    at_level::<M, KK, G>(Level::best(), a, b, ra, rb, acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (xorshift), so the tests need no dependency.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Every level the CPU runs gives the baseline's bits (NaN-ness only for NaNs), on operands
    /// of any bit pattern, for every fused shape and element type, rows of A and C repeated or
    /// not.
    fn same_bits_at_every_level<const M: usize, const KK: usize, const G: usize>(types: &[(In, In)], seed: u64) {
        let mut next = xorshift(seed);
        let best = Level::best();
        let levels: Vec<Level> = [Level::Avx512, Level::V3].into_iter().filter(|&l| l <= best).collect();
        for &(a, b) in types {
            for round in 0..50 {
                let mut raw = || -> Raw {
                    core::array::from_fn(|_| {
                        core::array::from_fn(|_| {
                            let v = next() as u32;
                            // Every other round, mostly zeros (a skinny GEMM's padding).
                            if round % 2 == 1 && v % 4 != 0 { 0 } else { v }
                        })
                    })
                };
                let (mut ra, rb) = (raw(), raw());
                // Every third round, every row of A the same (the GEMV's padded rows).
                if round % 3 == 2 {
                    for reg in ra.iter_mut() {
                        for lane in 0..LANES {
                            reg[lane] = reg[lane - lane % M];
                        }
                    }
                }
                let mut acc: [[f32; M]; M] = core::array::from_fn(|_| core::array::from_fn(|_| f32::from_bits(next() as u32)));
                // Every sixth round, C's rows the same too (the GEMV's MFMAs: row 0 alone).
                if round % 6 == 5 {
                    acc = [acc[0]; M];
                }
                let mut want = acc;
                at_level::<M, KK, G>(Level::Baseline, a, b, &ra, &rb, &mut want);
                for &level in &levels {
                    let mut got = acc;
                    at_level::<M, KK, G>(level, a, b, &ra, &rb, &mut got);
                    for (gr, wr) in got.iter().zip(&want) {
                        for (g, w) in gr.iter().zip(wr) {
                            if w.is_nan() {
                                assert!(g.is_nan(), "{level:?} {a:?}x{b:?} {M}x{M}x{KK}: {g} vs NaN");
                            } else {
                                assert_eq!(g.to_bits(), w.to_bits(), "{level:?} {a:?}x{b:?} {M}x{M}x{KK}: {g} vs {w}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_vector_width_gives_the_baseline_bits() {
        let half = [(In::F16, In::F16), (In::Bf16, In::Bf16)];
        let eight = [(In::Fp8, In::Fp8), (In::Fp8, In::Bf8), (In::Bf8, In::Fp8), (In::Bf8, In::Bf8)];
        same_bits_at_every_level::<32, 8, 8>(&half, 0x9e37_79b9_7f4a_7c15);
        same_bits_at_every_level::<16, 16, 8>(&half, 0xd1b5_4a32_d192_ed03);
        same_bits_at_every_level::<16, 32, 16>(&eight, 0x8cb9_2ba7_2f3d_8dd7);
        same_bits_at_every_level::<32, 16, 16>(&eight, 0xa076_1d64_78bd_642f);
    }

    /// A with every row the same, B with every column the same and C one value throughout (the
    /// one-row GEMV's activation sums, which compute one element), at every level the CPU
    /// runs: the definition's bits ([`fused::group`] per element, group by group), on operands
    /// of any bit pattern and C values of every kind (zeros of both signs, denormals,
    /// infinities, NaN).
    fn uniform_operands_give_the_definitions_bits<const M: usize, const KK: usize, const G: usize>(types: &[(In, In)], seed: u64) {
        let mut next = xorshift(seed);
        let kpl = KK * M / LANES;
        let levels: Vec<Level> = [Level::Baseline, Level::Avx512, Level::V3].into_iter().filter(|&l| l <= Level::best()).collect();
        for &(a, b) in types {
            for round in 0..200 {
                // One value per run of M lanes (a row of A, a column of B); every other round
                // mostly zeros.
                let mut raw = || -> Raw {
                    let mut r: Raw = core::array::from_fn(|_| core::array::from_fn(|_| next() as u32));
                    for reg in r.iter_mut() {
                        for lane in 0..LANES {
                            reg[lane] = if round % 2 == 1 && reg[lane - lane % M] % 4 != 0 { 0 } else { reg[lane - lane % M] };
                        }
                    }
                    r
                };
                let (ra, rb) = (raw(), raw());
                let r = next();
                let c = match r % 8 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => f32::from_bits((r >> 32) as u32 & 0x807f_ffff),
                    3 => f32::INFINITY,
                    4 => f32::NAN,
                    _ => f32::from_bits((r >> 32) as u32),
                };
                // The definition: k index q * kpl + e is value e of lane q * M.
                let value = |ty: In, raw: &Raw, k: usize| ty.value([raw[0][(k / kpl) * M], raw[1][(k / kpl) * M]], k % kpl);
                let mut want = c;
                for g in 0..KK / G {
                    let p: Vec<f64> = (g * G..(g + 1) * G).map(|k| value(a, &ra, k) * value(b, &rb, k)).collect();
                    want = fused::group(want, &p);
                }
                assert!(uniform_operands::<M>(a, b, &ra, &rb));
                for &level in &levels {
                    let one = one_at_level::<M, KK, G>(level, a, b, &ra, &rb, c);
                    let mut got = [[c; M]; M];
                    at_level::<M, KK, G>(level, a, b, &ra, &rb, &mut got);
                    got[0][0] = one;
                    for g in got.iter().flatten() {
                        if want.is_nan() {
                            assert!(g.is_nan(), "{level:?} {a:?}x{b:?} {M}x{M}x{KK}: {g} vs NaN");
                        } else {
                            assert_eq!(g.to_bits(), want.to_bits(), "{level:?} {a:?}x{b:?} {M}x{M}x{KK}: {g} vs {want}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn uniform_operands_compute_one_element_with_the_definitions_bits() {
        let half = [(In::F16, In::F16), (In::Bf16, In::Bf16)];
        let eight = [(In::Fp8, In::Fp8), (In::Fp8, In::Bf8), (In::Bf8, In::Fp8), (In::Bf8, In::Bf8)];
        uniform_operands_give_the_definitions_bits::<32, 8, 8>(&half, 0x2545_f491_4f6c_dd1d);
        uniform_operands_give_the_definitions_bits::<16, 16, 8>(&half, 0x9e37_79b9_7f4a_7c15);
        uniform_operands_give_the_definitions_bits::<16, 32, 16>(&eight, 0xd1b5_4a32_d192_ed03);
        uniform_operands_give_the_definitions_bits::<32, 16, 16>(&eight, 0x8cb9_2ba7_2f3d_8dd7);
    }
}
