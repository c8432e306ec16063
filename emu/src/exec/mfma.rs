//! Matrix-core instructions (MFMA): `D = A * B + C` for one wave.
//!
//! Lane layouts (../shared/design/GFX942.md, from AMD's matrix instruction calculator): with `kpl`
//! values of A per lane, A[i][k] is value `k % kpl` of lane `M * (k / kpl) + i`; B[k][j] the same
//! with j; C/D for 32x32 shapes: C[i][j] in register `4 * (i / 8) + i % 4` of lane
//! `(32 * (i / 4)) % 64 + j`; for 16x16 shapes: register `i % 4` of lane `16 * (i / 4) + j`.
//!
//! Arithmetic (GFX942.md, after the published bit-accurate study arXiv 2511.10909):
//! - f32: a chain of correctly rounded FMAs in k order;
//! - xf32: inputs truncated toward zero to tf32 (10 fraction bits), then as f32;
//! - f16/bf16: k in fused groups of 8: the group's products and C are aligned to the largest
//!   exponent among them and truncated to 24 fraction bits, summed exactly, and rounded once
//!   (nearest even) to f32;
//! - fp8/bf8: the same grouping with groups of 16. The study's separate even/odd partial sums are
//!   not modelled, so fp8 results can differ from the hardware in the last bit;
//! - int8: exact integer dot products added to the i32 accumulator (wrapping). Same lane layout
//!   as fp8 (8 values per lane, byte k % 4 of register (k / 4) % 2).
//! Infinities and NaNs make a group fall back to plain f64 summation, which propagates them.
//! MFMAs ignore EXEC and write every lane. BLGP permutes B's lanes; CBSZ/ABID (A broadcast
//! between blocks) only exist for multi-block shapes, and a non-zero value is refused.

use super::error::FaultKind;
use super::step::{Exec, Flow, Trouble, not_implemented};
use super::wave::{LANES, Ty, Wave};
use crate::isa::{Inst, Op, Opnd};
use ferrocm_fp8::{e4m3fnuz_to_f32, e5m2fnuz_to_f32};
use half::f16;

/// fp8 decoding (FNUZ), local to the emulator.
mod ferrocm_fp8 {
    /// E4M3FNUZ bits -> f32 (bias 8, 0x80 = NaN, no infinities).
    pub fn e4m3fnuz_to_f32(b: u8) -> f32 {
        decode(b, 3, 8)
    }
    /// E5M2FNUZ bits -> f32 (bias 16).
    pub fn e5m2fnuz_to_f32(b: u8) -> f32 {
        decode(b, 2, 16)
    }
    fn decode(b: u8, mb: u32, bias: i32) -> f32 {
        if b == 0x80 {
            return f32::NAN;
        }
        let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = ((b & 0x7f) >> mb) as i32;
        let m = (b & ((1 << mb) - 1)) as f32 / (1u32 << mb) as f32;
        if e == 0 { s * m * 2f32.powi(1 - bias) } else { s * (1.0 + m) * 2f32.powi(e - bias) }
    }
}

/// Input element type of an MFMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum In {
    F16,
    Bf16,
    F32,
    Xf32,
    Fp8,
    Bf8,
    /// Signed int8 (`v_mfma_i32_*_i8`): exact integer dot products into i32.
    I8,
}

/// One single-block MFMA shape.
#[derive(Clone, Copy, Debug)]
struct Shape {
    m: usize,
    k: usize,
    a: In,
    b: In,
}

fn shape(op: Op) -> Option<Shape> {
    use Op::*;
    let s = |m, k, a, b| Some(Shape { m, k, a, b });
    match op {
        VMfmaF3232x32x8F16 => s(32, 8, In::F16, In::F16),
        VMfmaF3216x16x16F16 => s(16, 16, In::F16, In::F16),
        VMfmaF3232x32x8Bf16 => s(32, 8, In::Bf16, In::Bf16),
        VMfmaF3216x16x16Bf16 => s(16, 16, In::Bf16, In::Bf16),
        VMfmaF3232x32x2F32 => s(32, 2, In::F32, In::F32),
        VMfmaF3216x16x4F32 => s(16, 4, In::F32, In::F32),
        VMfmaF3216x16x8Xf32 => s(16, 8, In::Xf32, In::Xf32),
        VMfmaF3232x32x4Xf32 => s(32, 4, In::Xf32, In::Xf32),
        VMfmaF3216x16x32Fp8Fp8 => s(16, 32, In::Fp8, In::Fp8),
        VMfmaF3216x16x32Fp8Bf8 => s(16, 32, In::Fp8, In::Bf8),
        VMfmaF3216x16x32Bf8Fp8 => s(16, 32, In::Bf8, In::Fp8),
        VMfmaF3216x16x32Bf8Bf8 => s(16, 32, In::Bf8, In::Bf8),
        VMfmaF3232x32x16Fp8Fp8 => s(32, 16, In::Fp8, In::Fp8),
        VMfmaF3232x32x16Fp8Bf8 => s(32, 16, In::Fp8, In::Bf8),
        VMfmaF3232x32x16Bf8Fp8 => s(32, 16, In::Bf8, In::Fp8),
        VMfmaF3232x32x16Bf8Bf8 => s(32, 16, In::Bf8, In::Bf8),
        VMfmaI3232x32x16I8 => s(32, 16, In::I8, In::I8),
        VMfmaI3216x16x32I8 => s(16, 32, In::I8, In::I8),
        _ => None,
    }
}

/// True for the matrix ops (everything `v_mfma_*`), which count as MFMA issue.
pub fn is_mfma(op: Op) -> bool {
    op.name().starts_with("v_mfma")
}

impl In {
    /// Values per lane (A/B operands are 64 bits for every shape except the f32 ones).
    fn per_lane(self) -> usize {
        match self {
            In::F32 => 1,
            In::Xf32 => 2,
            In::F16 | In::Bf16 => 4,
            In::Fp8 | In::Bf8 | In::I8 => 8,
        }
    }
    /// Registers per lane.
    fn regs(self) -> u16 {
        if self == In::F32 { 1 } else { 2 }
    }
    /// Value `e` of a lane's packed operand.
    fn value(self, regs: [u32; 2], e: usize) -> f64 {
        match self {
            In::F32 => f32::from_bits(regs[0]) as f64,
            In::Xf32 => f32::from_bits(regs[e] & 0xffff_e000) as f64,
            In::F16 => f16::from_bits((regs[e / 2] >> (16 * (e % 2))) as u16).to_f64(),
            // bf16 is the top half of an f32.
            In::Bf16 => f32::from_bits((regs[e / 2] >> (16 * (e % 2))) << 16) as f64,
            In::Fp8 => e4m3fnuz_to_f32((regs[e / 4] >> (8 * (e % 4))) as u8) as f64,
            In::Bf8 => e5m2fnuz_to_f32((regs[e / 4] >> (8 * (e % 4))) as u8) as f64,
            In::I8 => ((regs[e / 4] >> (8 * (e % 4))) as u8 as i8) as f64,
        }
    }
    /// Products fused per rounding step (0: integer arithmetic, no rounding).
    fn group(self) -> usize {
        match self {
            In::F32 | In::Xf32 => 1,
            In::F16 | In::Bf16 => 8,
            In::Fp8 | In::Bf8 => 16,
            In::I8 => 0,
        }
    }
}

/// The source lane of B for `lane` under a BLGP pattern.
fn blgp_lane(blgp: u8, lane: usize) -> usize {
    match blgp {
        1 => lane % 32,
        2 => lane % 32 + 32,
        3 => (lane + 16) % 64,
        4 => lane % 16,
        5 => lane % 16 + 16,
        6 => lane % 16 + 32,
        7 => lane % 16 + 48,
        _ => lane,
    }
}

/// Biased f64 exponent field of `x` (0 for zero and denormals, 2047 for inf/NaN).
#[inline(always)]
fn exp_field(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7ff) as i32
}

/// One fused group: `c + sum(p)`, every term aligned to the largest exponent and truncated
/// toward zero to 24 fraction bits, summed exactly, rounded once (nearest even) to f32.
///
/// Implemented in fixed point: with `e` the largest exponent, each term times `2^(24 - e)` is
/// truncated to an integer (below 2^25 in magnitude), the integers are summed in i64 (exact),
/// and the sum scaled back and rounded. Terms that are zero or denormal in f64 cannot occur for
/// these input types except as exact zeros.
#[inline(always)]
pub(crate) fn fused_group(c: f32, products: &[f64]) -> f32 {
    let c64 = c as f64;
    let mut emax = exp_field(c64);
    let mut special = emax == 2047;
    for &p in products {
        let e = exp_field(p);
        special |= e == 2047;
        emax = emax.max(e);
    }
    if special {
        // An infinity or NaN: plain summation propagates it as the hardware does.
        return (products.iter().sum::<f64>() + c64) as f32;
    }
    if emax == 0 {
        return c; // everything is zero: keep C, sign included
    }
    // 2^(24 - (emax - 1023)) as an f64, built from its bits (emax is a biased exponent).
    let shift = 24 - (emax - 1023);
    let scale = f64::from_bits(((shift + 1023) as u64) << 52);
    let mut sum = (c64 * scale) as i64;
    for &p in products {
        sum += (p * scale) as i64;
    }
    if sum == 0 {
        return 0.0;
    }
    (sum as f64 / scale) as f32
}

/// [`fused_group`] over the products `a[t] * b[t]` of one group, with fixed-size arrays so the
/// compiler unrolls and vectorises it (this is the emulator's hottest loop).
#[inline(always)]
fn fused_group_n<const N: usize>(c: f32, a: &[f64; N], b: &[f64; N]) -> f32 {
    let mut p = [0f64; N];
    let c64 = c as f64;
    let mut emax = exp_field(c64);
    let mut special = emax == 2047;
    for t in 0..N {
        p[t] = a[t] * b[t];
        let e = exp_field(p[t]);
        special |= e == 2047;
        emax = emax.max(e);
    }
    if special || emax == 0 {
        return fused_group(c, &p);
    }
    let shift = 24 - (emax - 1023);
    let scale = f64::from_bits(((shift + 1023) as u64) << 52);
    let mut sum = (c64 * scale) as i64;
    for t in 0..N {
        sum += (p[t] * scale) as i64;
    }
    if sum == 0 {
        return 0.0;
    }
    (sum as f64 / scale) as f32
}

/// Executes one MFMA.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Exec {
    let Some(sh) = shape(inst.op) else {
        return Err(not_implemented(inst));
    };
    if inst.mods.cbsz != 0 || inst.mods.abid != 0 {
        return Err(Trouble::new(FaultKind::NotImplemented(format!(
            "{} with cbsz {} abid {} (A broadcast applies to multi-block shapes only)",
            inst.op.name(),
            inst.mods.cbsz,
            inst.mods.abid
        ))));
    }
    let (m, kk) = (sh.m, sh.k);
    let (kpl_a, kpl_b) = (sh.a.per_lane(), sh.b.per_lane());
    // A as m x k and B^T as m x k (row j of B^T is column j of B), in f64: exact for every input
    // type. Lane L holds row L % m, k values (L / m) * kpl .. + kpl.
    let mut a = [0f64; MAX_MK];
    let mut bt = [0f64; MAX_MK];
    let ra = lanes(w, inst.src[0], sh.a.regs())?;
    let rb = lanes(w, inst.src[1], sh.b.regs())?;
    for lane in 0..LANES {
        let (i, kb) = (lane % m, (lane / m) * kpl_a);
        let regs = [ra[0][lane], ra[1][lane]];
        for e in 0..kpl_a {
            a[i * kk + kb + e] = sh.a.value(regs, e);
        }
        let src = blgp_lane(inst.mods.blgp, lane);
        let (j, kb) = (lane % m, (lane / m) * kpl_b);
        let regs = [rb[0][src], rb[1][src]];
        for e in 0..kpl_b {
            bt[j * kk + kb + e] = sh.b.value(regs, e);
        }
    }
    let nregs = if m == 32 { 16 } else { 4 };
    // C: registers, or an inline constant / literal broadcast to every element (an integer for
    // the int8 forms, whose C is i32).
    let cty = if sh.a == In::I8 { Ty::B32 } else { Ty::F32 };
    let mut d = [[0u32; LANES]; 16];
    for r in 0..nregs {
        d[r] = if inst.src[2].0 >= 256 { *w.vreg_at(inst.src[2], r as u16)? } else { [w.sval32(inst.src[2], inst.literal, cty)?; LANES] };
    }
    let group = sh.a.group();
    for i in 0..m {
        let ai = &a[i * kk..i * kk + kk];
        for j in 0..m {
            let bj = &bt[j * kk..j * kk + kk];
            let (r, lane) = c_pos(m, i, j);
            if group == 0 {
                // int8: products and their sum are exact integers (|sum| < 2^20 for k <= 32);
                // the i32 accumulator wraps (the ISA defines no saturation for these ops).
                let dot: i64 = ai.iter().zip(bj).map(|(x, y)| (x * y) as i64).sum();
                d[r][lane] = (d[r][lane] as i32).wrapping_add(dot as i32) as u32;
                continue;
            }
            let mut acc = f32::from_bits(d[r][lane]);
            match group {
                1 => {
                    for k in 0..kk {
                        acc = (ai[k] as f32).mul_add(bj[k] as f32, acc);
                    }
                }
                8 => {
                    for (ag, bg) in ai.chunks_exact(8).zip(bj.chunks_exact(8)) {
                        acc = fused_group_n::<8>(acc, ag.try_into().expect("8"), bg.try_into().expect("8"));
                    }
                }
                _ => {
                    for (ag, bg) in ai.chunks_exact(16).zip(bj.chunks_exact(16)) {
                        acc = fused_group_n::<16>(acc, ag.try_into().expect("16"), bg.try_into().expect("16"));
                    }
                }
            }
            d[r][lane] = acc.to_bits();
        }
    }
    for (r, dreg) in d.iter().take(nregs).enumerate() {
        *w.vreg_at_mut(inst.dst, r as u16)? = *dreg;
    }
    Ok(Flow::Next)
}

/// The largest m * k of the supported shapes (32 x 16 and 16 x 32).
const MAX_MK: usize = 512;

/// The registers of an A/B operand for every lane (`regs` of them; an SGPR or constant source is
/// broadcast).
fn lanes(w: &Wave, op: Opnd, regs: u16) -> Result<[[u32; LANES]; 2], FaultKind> {
    let mut out = [[0u32; LANES]; 2];
    for k in 0..regs {
        out[k as usize] = if op.0 >= 256 { *w.vreg_at(op, k)? } else { [w.sval32(op, 0, Ty::B32)?; LANES] };
    }
    Ok(out)
}

/// (register, lane) of C[i][j].
fn c_pos(m: usize, i: usize, j: usize) -> (usize, usize) {
    if m == 32 { (4 * (i / 8) + i % 4, (32 * (i / 4)) % 64 + j) } else { (i % 4, 16 * (i / 4) + j) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_cover_every_lane_once() {
        for m in [16usize, 32] {
            let mut seen = std::collections::HashSet::new();
            for i in 0..m {
                for j in 0..m {
                    assert!(seen.insert(c_pos(m, i, j)));
                }
            }
            assert_eq!(seen.len(), m * m);
            assert!(seen.iter().all(|&(r, l)| l < 64 && r < if m == 32 { 16 } else { 4 }));
        }
    }

    #[test]
    fn fused_group_truncates_small_terms_then_rounds_once() {
        // 1 + 2^-30: the small product is below the 24-bit window and is truncated away.
        assert_eq!(fused_group(1.0, &[2f64.powi(-30)]), 1.0);
        // Exact small sums are kept.
        assert_eq!(fused_group(0.0, &[1.0, 2.0, 3.0]), 6.0);
        // Round-to-nearest-even of the exact window sum: 1 + 2^-24 ties to 1.
        assert_eq!(fused_group(1.0, &[2f64.powi(-24)]), 1.0);
        // 1 + 3*2^-24 rounds up to 1 + 2^-22.
        assert_eq!(fused_group(1.0, &[3.0 * 2f64.powi(-24)]), 1.0 + 2f32.powi(-22));
        assert!(fused_group(1.0, &[f64::INFINITY]).is_infinite());
        assert!(fused_group(f32::NAN, &[1.0]).is_nan());
    }

    #[test]
    fn fp8_decoding_matches_the_fnuz_formats() {
        assert_eq!(e4m3fnuz_to_f32(0x7f), 240.0);
        assert_eq!(e5m2fnuz_to_f32(0x7f), 57344.0);
        assert!(e4m3fnuz_to_f32(0x80).is_nan());
        assert_eq!(e4m3fnuz_to_f32(0x01), 2f32.powi(-10));
    }
}
