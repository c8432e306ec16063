//! Lane-parallel paths for the VALU ops a model decode step runs most (`v_pk_add_f16`,
//! `v_pk_mul_f16`, `v_cvt_f32_f16`: a fifth of the emulator's time on SmolLM2 before them; the
//! f32 add, subtract, multiply and FMAs).
//!
//! The f32 ops are IEEE operations on the host too, so their fast path only drops the general
//! path's per-lane mode and modifier branches: the sources are copied into arrays, abs/neg and
//! denormal flushing become masks, and the loop vectorises.
//!
//! The general paths decode each f16 to f64, compute, and round back bit by bit per value. Here
//! the arithmetic is f32, which holds every f16 exactly, and the conversions are branch-free bit
//! arithmetic the compiler vectorises (wider through `cpu::multiversion`). A product of two f16s
//! is exact in f32, so one rounding to f16 gives the hardware's correctly rounded result. So
//! does a sum: it is inexact in f32 only when the exponents are 14 or more apart (24 bits hold
//! two 11-bit significands up to 13 apart), and then the smaller is under 2^-13 of the larger,
//! while the nearest f16 rounding boundary is at least 2^-12 of it away, below as above; the
//! f32 sum rounds to within 2^-24 and lands on the same side. Lanes with an infinity or NaN
//! operand are recomputed on the general path, so the results are the same bits. The paths run only under the modes and modifiers
//! they implement (nearest-even rounding, no clamp, no output modifier, no DPP/SDWA but the
//! word selects of `v_cvt_f32_f16`) and return `None` otherwise.

use super::super::cpu::multiversion;
use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::round::f16_from_f64;
use super::{f16_flush_in, f16_to_f32_bits, in_place, out16_bits};
use crate::isa::{Enc, Ext, Inst, Op};

/// An f32 that is not NaN -> f16 bits, rounded to nearest even (overflow to infinity),
/// branch-free.
#[inline(always)]
pub(crate) fn f32_to_f16_rne(x: f32) -> u32 {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let a = b & 0x7fff_ffff;
    // Below 2^-14 (f16 denormals): adding 0.5, whose f32 quantum is 2^-24, rounds to a multiple
    // of 2^-24 (nearest even); the sum's low bits are then that multiple.
    let half = 126u32 << 23;
    let denormal = (f32::from_bits(a) + f32::from_bits(half)).to_bits().wrapping_sub(half);
    // Normal: rebias the exponent, round on bit 13 (ties to even); a carry moves into the
    // exponent, up to infinity.
    let odd = (a >> 13) & 1;
    let normal = a.wrapping_sub(112 << 23).wrapping_add(0xfff + odd) >> 13;
    // 65520, the midpoint between 65504 (the largest f16) and 2^16, and above: infinity.
    let r = if a >= 0x477f_f000 {
        0x7c00
    } else if a < 0x3880_0000 {
        denormal
    } else {
        normal
    };
    sign | r
}

/// The fast path for `inst`, if it has one and its conditions hold.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    if inst.mods.clamp || inst.mods.omod != 0 || w.mode.round16_64 != 0 || w.mode.round32 != 0 {
        return None;
    }
    // `v_cvt_f32_f16` also in its SDWA form reading either half into a whole dword (LLVM
    // converts an f16x2 register's high half that way).
    if inst.op == Op::VCvtF32F16 {
        let shift = match inst.ext {
            Ext::None => 0,
            Ext::Sdwa(s) if s.dst_sel == 6 && matches!(s.src0_sel, 4..=6) => 16 * (s.src0_sel == 5) as u32,
            _ => return None,
        };
        return Some(cvt_f32_f16(w, inst, shift));
    }
    if inst.ext != Ext::None {
        return None;
    }
    match inst.op {
        Op::VAddF32 => Some(f32_op(w, inst, F32Op::Add)),
        Op::VSubF32 => Some(f32_op(w, inst, F32Op::Sub)),
        Op::VSubrevF32 => Some(f32_op(w, inst, F32Op::Subrev)),
        Op::VMulF32 => Some(f32_op(w, inst, F32Op::Mul)),
        Op::VFmaF32 | Op::VFmamkF32 | Op::VFmaakF32 => Some(f32_op(w, inst, F32Op::Fma)),
        Op::VFmacF32 => Some(f32_op(w, inst, F32Op::Fmac)),
        Op::VDot2cF32F16 if inst.enc != Enc::Vop3p => Some(dot2c_f32_f16(w, inst)),
        Op::VPkAddF16 => Some(pk_f16(w, inst, false)),
        Op::VPkMulF16 => Some(pk_f16(w, inst, true)),
        Op::VCvtF32U32 => Some(cvt(w, inst, Cvt::F32U32)),
        Op::VCvtF32I32 => Some(cvt(w, inst, Cvt::F32I32)),
        Op::VCvtU32F32 => Some(cvt(w, inst, Cvt::U32F32)),
        Op::VCvtI32F32 => Some(cvt(w, inst, Cvt::I32F32)),
        Op::VCvtF16F32 => Some(cvt(w, inst, Cvt::F16F32)),
        _ => None,
    }
}

/// A conversion with a fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cvt {
    F32U32,
    F32I32,
    U32F32,
    I32F32,
    F16F32,
}

/// `v_cvt_f32_u32/i32`, `v_cvt_u32/i32_f32` and `v_cvt_f16_f32` under nearest-even rounding and
/// no output modifier or clamp (`exec`'s conditions). Integer to f32 is the host's conversion
/// (nearest even; never a denormal). f32 to integer is Rust's `as`: truncation, saturation,
/// NaN to 0, the ISA's rules; input flushing cannot change it (a denormal truncates to 0
/// either way). f32 to f16 rounds to nearest even (a flushed f32 denormal and an unflushed one
/// both round to a signed zero), f16 denormal results flushed per MODE, NaN lanes converted as
/// the general path does, and op_sel's bit 3 writing the high half (else the high half is
/// zeroed, as for every VOP1 op carried over from gfx8).
fn cvt(w: &mut Wave, inst: &Inst, op: Cvt) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    let float_in = matches!(op, Cvt::U32F32 | Cvt::I32F32 | Cvt::F16F32);
    let src = w.src32_of(inst, 0, if float_in { Ty::F32 } else { Ty::B32 })?.lanes();
    // abs/neg apply to float sources only.
    let keep = if float_in && inst.mods.abs & 1 == 1 { 0x7fff_ffff } else { u32::MAX };
    let flip = if float_in && inst.mods.neg & 1 == 1 { 0x8000_0000 } else { 0 };
    let nan = cvt_lanes(&mut out, &src, op, keep, flip, w.mode.denorm16_64 & 2 == 0);
    if op == Cvt::F16F32 {
        if nan {
            for (o, &v) in out.iter_mut().zip(&src) {
                let x = f32::from_bits(v & keep ^ flip);
                if x.is_nan() {
                    *o = half::f16::from_f32(x).to_bits() as u32;
                }
            }
        }
        if inst.mods.op_sel & 8 != 0 {
            let old = w.vreg(inst.dst)?;
            for (o, &d) in out.iter_mut().zip(old) {
                *o = d & 0xffff | *o << 16;
            }
        }
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

multiversion! {
    /// [`cvt`]'s lanes, one loop per conversion (`keep`/`flip`: abs and neg of a float source;
    /// `flush16`: flush f16 denormal results). Returns whether an f32 -> f16 lane was NaN
    /// (left for the caller).
    fn cvt_lanes(out: &mut [u32; LANES], src: &[u32; LANES], op: Cvt, keep: u32, flip: u32, flush16: bool) -> bool {
        let f = |v: u32| f32::from_bits(v & keep ^ flip);
        match op {
            Cvt::F32U32 => out.iter_mut().zip(src).for_each(|(o, &v)| *o = (v as f32).to_bits()),
            Cvt::F32I32 => out.iter_mut().zip(src).for_each(|(o, &v)| *o = (v as i32 as f32).to_bits()),
            Cvt::U32F32 => out.iter_mut().zip(src).for_each(|(o, &v)| *o = f(v) as u32),
            Cvt::I32F32 => out.iter_mut().zip(src).for_each(|(o, &v)| *o = f(v) as i32 as u32),
            Cvt::F16F32 => {
                let mut nan = false;
                for (o, &v) in out.iter_mut().zip(src) {
                    let x = f(v);
                    nan |= x.is_nan();
                    let h = f32_to_f16_rne(x);
                    *o = if flush16 && h & 0x7c00 == 0 { h & 0x8000 } else { h };
                }
                return nan;
            }
        }
        false
    }
}

/// An f32 op with a fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum F32Op {
    Add,
    Sub,
    Subrev,
    Mul,
    Fma,
    /// The FMA whose addend is the destination.
    Fmac,
}

/// Per source: the bits kept (abs clears the sign) and flipped (neg); MODE's f32 flushing.
struct F32Mods {
    keep: [u32; 3],
    flip: [u32; 3],
    flush_in: bool,
    flush_out: bool,
}

/// `v_add/sub/subrev/mul/fma/fmac/fmamk/fmaak_f32` (module docs).
fn f32_op(w: &mut Wave, inst: &Inst, op: F32Op) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    {
        let n = match op {
            F32Op::Fma => 3,
            _ => 2,
        };
        let mut s = [[0u32; LANES]; 3];
        for (i, si) in s.iter_mut().enumerate().take(n) {
            *si = w.src32_of(inst, i, Ty::F32)?.lanes();
        }
        if op == F32Op::Fmac {
            s[2] = *w.vreg(inst.dst)?;
        }
        let m = F32Mods {
            keep: core::array::from_fn(|i| if inst.mods.abs >> i & 1 == 1 { 0x7fff_ffff } else { u32::MAX }),
            flip: core::array::from_fn(|i| if inst.mods.neg >> i & 1 == 1 { 0x8000_0000 } else { 0 }),
            flush_in: w.mode.denorm32 & 1 == 0,
            flush_out: w.mode.denorm32 & 2 == 0,
        };
        f32_lanes(&mut out, &s, op, &m);
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// Flushes f32 bits `b` to a signed zero when they are a denormal and `flush` is set.
#[inline(always)]
fn flush32(b: u32, flush: bool) -> u32 {
    if flush && b & 0x7f80_0000 == 0 { b & 0x8000_0000 } else { b }
}

/// [`f32_lanes`]' loop for one op.
#[inline(always)]
fn lanes3(out: &mut [u32; LANES], s: &[[u32; LANES]; 3], m: &F32Mods, f: impl Fn(f32, f32, f32) -> f32) {
    for (l, o) in out.iter_mut().enumerate() {
        let x = |i: usize| f32::from_bits(flush32(s[i][l] & m.keep[i] ^ m.flip[i], m.flush_in));
        *o = flush32(f(x(0), x(1), x(2)).to_bits(), m.flush_out);
    }
}

multiversion! {
    /// [`f32_op`]'s arithmetic on every lane, one loop per op.
    fn f32_lanes(out: &mut [u32; LANES], s: &[[u32; LANES]; 3], op: F32Op, m: &F32Mods) {
        match op {
            F32Op::Add => lanes3(out, s, m, |a, b, _| a + b),
            F32Op::Sub => lanes3(out, s, m, |a, b, _| a - b),
            F32Op::Subrev => lanes3(out, s, m, |a, b, _| b - a),
            F32Op::Mul => lanes3(out, s, m, |a, b, _| a * b),
            F32Op::Fma | F32Op::Fmac => lanes3(out, s, m, |a, b, c| a.mul_add(b, c)),
        }
    }
}

/// `v_dot2c_f32_f16` (VOP2/VOP3): per lane `d + a.lo * b.lo + a.hi * b.hi`, added in f64 in that
/// order (each product of f16s exact) and rounded once to f32, as the general path (`dot`)
/// computes it; abs/neg apply to both halves of a source.
fn dot2c_f32_f16(w: &mut Wave, inst: &Inst) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    {
        // The sources and the addend (the destination) read in place: copying the three was a
        // third of the instruction.
        let (a, b, d) = (w.src32_of(inst, 0, Ty::F16)?, w.src32_of(inst, 1, Ty::F16)?, w.vreg(inst.dst)?);
        let half_mod = |j: usize| {
            let keep = if inst.mods.abs >> j & 1 == 1 { 0x7fff_7fff } else { u32::MAX };
            let flip = if inst.mods.neg >> j & 1 == 1 { 0x8000_8000 } else { 0 };
            (keep, flip)
        };
        let m = DotMods {
            src: [half_mod(0), half_mod(1)],
            flush16: w.mode.denorm16_64 & 1 == 0,
            flush_in32: w.mode.denorm32 & 1 == 0,
            flush_out32: w.mode.denorm32 & 2 == 0,
        };
        in_place(a, |a| in_place(b, |b| dot2_lanes(&mut out, [a, b, d], &m)));
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// [`dot2_lanes`]' modifiers: per f16 source the bits kept and flipped (both halves), and the
/// flushing of MODE.
struct DotMods {
    src: [(u32, u32); 2],
    flush16: bool,
    flush_in32: bool,
    flush_out32: bool,
}

multiversion! {
    /// [`dot2c_f32_f16`]'s arithmetic on every lane (`s`: the two f16x2 sources, the addend).
    fn dot2_lanes(out: &mut [u32; LANES], s: [&[u32; LANES]; 3], m: &DotMods) {
        for (l, o) in out.iter_mut().enumerate() {
            let x = |j: usize, h: u32| {
                let (keep, flip) = m.src[j];
                let b = ((s[j][l] & keep ^ flip) >> (16 * h)) & 0xffff;
                let b = if m.flush16 && b & 0x7c00 == 0 { b & 0x8000 } else { b };
                f32::from_bits(f16_to_f32_bits(b)) as f64
            };
            let c = f32::from_bits(flush32(s[2][l], m.flush_in32)) as f64;
            let acc = c + x(0, 0) * x(1, 0) + x(0, 1) * x(1, 1);
            *o = flush32((acc as f32).to_bits(), m.flush_out32);
        }
    }
}

/// `v_cvt_f32_f16`: the f16 (the half at `shift` of an SDWA source, else chosen by op_sel;
/// abs/neg, input flushing) widened; never an f32 denormal, so the output flushing has nothing
/// to do.
fn cvt_f32_f16(w: &mut Wave, inst: &Inst, shift: u32) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    {
        let src = w.src32_of(inst, 0, Ty::F16)?;
        let shift = if inst.mods.op_sel & 1 == 1 { 16 } else { shift };
        let (abs, neg) = (inst.mods.abs & 1 == 1, inst.mods.neg & 1 == 1);
        let clear = if abs { 0x7fff } else { 0xffff };
        let flip = if neg { 0x8000 } else { 0 };
        let flush = w.mode.denorm16_64 & 1 == 0;
        widen(&mut out, &src.lanes(), shift, clear, flip, flush);
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

multiversion! {
    /// [`cvt_f32_f16`]'s lanes: half at `shift`, `& clear`, `^ flip`, flushed if `flush`.
    fn widen(out: &mut [u32; LANES], src: &[u32; LANES], shift: u32, clear: u32, flip: u32, flush: bool) {
        for (o, &v) in out.iter_mut().zip(src) {
            let h = (v >> shift) & clear ^ flip;
            let h = if flush && h & 0x7c00 == 0 { h & 0x8000 } else { h };
            *o = f16_to_f32_bits(h);
        }
    }
}

/// `v_pk_add_f16` / `v_pk_mul_f16` (module docs).
fn pk_f16(w: &mut Wave, inst: &Inst, mul: bool) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    {
        // Copied: a loop over arrays vectorises, one reading either kind of source does not.
        let srcs = [w.src32_of(inst, 0, Ty::F16)?.lanes(), w.src32_of(inst, 1, Ty::F16)?.lanes()];
        // Per result half h and source j: the shift selecting the half (op_sel for the low
        // result, op_sel_hi for the high) and the sign flip (neg / neg_hi).
        let mut shift = [[0u32; 2]; 2];
        let mut flip = [[0u32; 2]; 2];
        for h in 0..2 {
            let (sel, neg) = if h == 0 { (inst.mods.op_sel, inst.mods.neg) } else { (inst.mods.op_sel_hi, inst.mods.neg_hi) };
            for j in 0..2 {
                shift[h][j] = if sel >> j & 1 == 1 { 16 } else { 0 };
                flip[h][j] = if neg >> j & 1 == 1 { 0x8000 } else { 0 };
            }
        }
        let (flush_in, flush_out) = (w.mode.denorm16_64 & 1 == 0, w.mode.denorm16_64 & 2 == 0);
        // Halves whose fast result is not the correctly rounded one, bit h of lane l.
        let mut redo = [0u8; LANES];
        let modes = Halves { shift, flip, flush_in, flush_out, mul };
        let any = pk_f16_lanes(&mut out, &mut redo, &srcs, &modes);
        for (l, &bad) in redo.iter().enumerate().filter(|_| any) {
            for h in 0..2 {
                if bad >> h & 1 == 1 {
                    let x = |j: usize| fmod16_sel(srcs[j][l], shift[h][j], flip[h][j]);
                    let (a, b) = (f16_flush_in(w, x(0)), f16_flush_in(w, x(1)));
                    let v = out16_bits(w, inst, f16_from_f64(if mul { a * b } else { a + b }));
                    out[l] = out[l] & !(0xffff << (16 * h)) | (v as u32) << (16 * h);
                }
            }
        }
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// How [`pk_f16_lanes`] reads and writes halves.
struct Halves {
    shift: [[u32; 2]; 2],
    flip: [[u32; 2]; 2],
    flush_in: bool,
    flush_out: bool,
    mul: bool,
}

multiversion! {
    /// [`pk_f16`]'s arithmetic on every lane: results into `out`, the halves to recompute on
    /// the general path marked in `redo`. Each source is first rearranged so that its low half
    /// is what the low result reads (op_sel, neg, input flushing applied) and its high half what
    /// the high result reads; then the f16 arithmetic runs on both halves of every lane alike
    /// ([`f16_pairs_f16c`] or [`f16_pairs_bits`]). Returns whether any half is to redo.
    fn pk_f16_lanes(out: &mut [u32; LANES], redo: &mut [u8; LANES], srcs: &[[u32; LANES]; 2], m: &Halves) -> bool {
        let mut w = [[0u32; LANES]; 2];
        for (j, wj) in w.iter_mut().enumerate() {
            let (flip, sh) = (m.flip[0][j] | m.flip[1][j] << 16, m.shift);
            for (o, &v) in wj.iter_mut().zip(&srcs[j]) {
                let x = ((v >> sh[0][j]) & 0xffff | ((v >> sh[1][j]) & 0xffff) << 16) ^ flip;
                // Input flushing, per half: an exponent of zero keeps only the sign.
                let lo = if m.flush_in && x & 0x7c00 == 0 { x & 0xffff_8000 } else { x };
                *o = if m.flush_in && lo & 0x7c00_0000 == 0 { lo & 0x8000_ffff } else { lo };
            }
        }
        #[cfg(target_arch = "x86_64")]
        if super::super::cpu::Level::best() >= super::super::cpu::Level::V3 {
            // SAFETY: the CPU has F16C.
            unsafe { f16_pairs_f16c(out, &w, m.mul) };
        } else {
            f16_pairs_bits(out, &w, m.mul);
        }
        #[cfg(not(target_arch = "x86_64"))]
        f16_pairs_bits(out, &w, m.mul);
        let mut any = 0u8;
        for l in 0..LANES {
            let o = out[l];
            let lo = if m.flush_out && o & 0x7c00 == 0 { o & 0xffff_8000 } else { o };
            out[l] = if m.flush_out && lo & 0x7c00_0000 == 0 { lo & 0x8000_ffff } else { lo };
            let special = |h: u32| (w[0][l] >> h & 0x7c00 == 0x7c00 || w[1][l] >> h & 0x7c00 == 0x7c00) as u8;
            redo[l] = special(0) | special(16) << 1;
            any |= redo[l];
        }
        any != 0
    }
}

/// `out = a + b` (or `a * b`) on both f16 halves of every lane, rounded to nearest even, through
/// F16C's conversions, four lanes each; NaN and infinity operands give unspecified halves (the
/// caller redoes them). A product is exact in f32; a sum is inexact only for exponents 14 or
/// more apart, and then f32's rounding cannot move it across an f16 rounding boundary (module
/// docs): one rounding to f16 is right, and the same bits as [`f16_pairs_bits`]
/// (`pk_f16_paths_agree`). Inlined into the x86-64-v3 and AVX-512 builds.
///
/// # Safety
/// The CPU has F16C.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn f16_pairs_f16c(out: &mut [u32; LANES], w: &[[u32; LANES]; 2], mul: bool) {
    use core::arch::x86_64::{
        __m128i, _MM_FROUND_TO_NEAREST_INT, _mm_loadu_si128, _mm_storeu_si128, _mm256_add_ps, _mm256_cvtph_ps, _mm256_cvtps_ph,
        _mm256_mul_ps,
    };
    for q in 0..LANES / 4 {
        // SAFETY: lanes 4q..4q + 4 of each array, 16 bytes, inside them; the CPU has F16C
        // (the caller) and AVX (implied by F16C).
        unsafe {
            let a = _mm256_cvtph_ps(_mm_loadu_si128(w[0].as_ptr().add(4 * q) as *const __m128i));
            let b = _mm256_cvtph_ps(_mm_loadu_si128(w[1].as_ptr().add(4 * q) as *const __m128i));
            let r = if mul { _mm256_mul_ps(a, b) } else { _mm256_add_ps(a, b) };
            _mm_storeu_si128(out.as_mut_ptr().add(4 * q) as *mut __m128i, _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(r));
        }
    }
}

/// [`f16_pairs_f16c`] through [`f16_to_f32_bits`] and [`f32_to_f16_rne`]'s bit arithmetic.
#[inline(always)]
fn f16_pairs_bits(out: &mut [u32; LANES], w: &[[u32; LANES]; 2], mul: bool) {
    for (l, o) in out.iter_mut().enumerate() {
        let mut r = 0;
        for h in [0, 16] {
            let x = |j: usize| f32::from_bits(f16_to_f32_bits(w[j][l] >> h & 0xffff));
            let (a, b) = (x(0), x(1));
            r |= f32_to_f16_rne(if mul { a * b } else { a + b }) << h;
        }
        *o = r;
    }
}

/// The half of `v` at `shift`, its sign flipped by `flip` (the general path's operand).
fn fmod16_sel(v: u32, shift: u32, flip: u32) -> u16 {
    ((v >> shift) as u16) ^ flip as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The F16C conversions and the bit arithmetic give the same halves for every finite f16
    /// against a spread of second operands (denormals, the largest values, halfway cases,
    /// random), sums and products; infinities and NaNs are redone on the general path, so their
    /// halves are not compared.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn pk_f16_paths_agree() {
        use super::super::super::cpu::Level;
        if Level::best() < Level::V3 {
            eprintln!("no F16C on this CPU: only the bit arithmetic runs here");
            return;
        }
        let mut x = 0x0123_4567_89ab_cdefu64;
        let mut seconds: Vec<u32> = vec![0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x1400, 0x3555, 0x0200];
        while seconds.len() < 48 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            seconds.push(x as u32 & 0xffff);
        }
        let finite = |h: u32| h & 0x7c00 != 0x7c00;
        for &b in &seconds {
            for chunk in (0..=0xffffu32).collect::<Vec<_>>().chunks(2 * LANES) {
                let mut w = [[0u32; LANES]; 2];
                for l in 0..LANES {
                    w[0][l] = chunk[2 * l] | chunk[2 * l + 1] << 16;
                    w[1][l] = b | (b ^ 0x0401) << 16;
                }
                for mul in [false, true] {
                    let (mut hw, mut bits) = ([0u32; LANES], [0u32; LANES]);
                    // SAFETY: the CPU has F16C (checked above).
                    unsafe { f16_pairs_f16c(&mut hw, &w, mul) };
                    f16_pairs_bits(&mut bits, &w, mul);
                    for l in 0..LANES {
                        for h in [0, 16] {
                            let (p, q) = (w[0][l] >> h & 0xffff, w[1][l] >> h & 0xffff);
                            if finite(p) && finite(q) {
                                assert_eq!(hw[l] >> h & 0xffff, bits[l] >> h & 0xffff, "{p:#06x} {} {q:#06x}", if mul { '*' } else { '+' });
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn f16_widening_is_exact_for_every_bit_pattern() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            assert_eq!(f16_to_f32_bits(h as u32), want.to_bits(), "{h:#06x}");
        }
    }

    #[test]
    fn f16_narrowing_rounds_to_nearest_even() {
        // Every f32 pattern in a stride that visits every exponent and many mantissas, plus
        // the neighbourhoods of the boundaries (denormal/normal, the largest f16, halfway).
        let mut xs: Vec<u32> = (0..=u32::MAX / 251).map(|i| i * 251).collect();
        for edge in [0x3880_0000u32, 0x477f_e000, 0x477f_f000, 0x3300_0000, 0x3380_0000, 0x7f80_0000] {
            xs.extend(edge - 4096..edge + 4096);
        }
        for b in xs {
            let x = f32::from_bits(b);
            if x.is_nan() {
                continue;
            }
            let want = half::f16::from_f32(x).to_bits() as u32;
            assert_eq!(f32_to_f16_rne(x), want, "{b:#010x} ({x:e})");
            let neg = f32::from_bits(b ^ 0x8000_0000);
            assert_eq!(f32_to_f16_rne(neg), half::f16::from_f32(neg).to_bits() as u32, "{:#010x}", b ^ 0x8000_0000);
        }
    }
}
