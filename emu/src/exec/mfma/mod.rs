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
//!   (nearest even) to f32 (`fused`);
//! - fp8/bf8: the same grouping with groups of 16. The study's separate even/odd partial sums are
//!   not modelled, so fp8 results can differ from the hardware in the last bit;
//! - int8: exact integer dot products added to the i32 accumulator (wrapping). Same lane layout
//!   as fp8 (8 values per lane, byte k % 4 of register (k / 4) % 2).
//! Infinities and NaNs make a group fall back to plain f64 summation, which propagates them
//! (which NaN comes out is not modelled).
//! MFMAs ignore EXEC and write every lane. BLGP permutes B's lanes; CBSZ/ABID (A broadcast
//! between blocks) only exist for multi-block shapes, and a non-zero value is refused.

mod fused;
mod simd;

use super::error::FaultKind;
use super::step::{Exec, Flow, Trouble, not_implemented};
use super::valu::f16_to_f64;
use super::wave::{LANES, Ty, Wave};
use crate::isa::{Inst, Op, Opnd};
use decode::{e4m3fnuz_to_f32, e5m2fnuz_to_f32};

/// Element decoding for the matrix operands, exact and branch-light: the emulator decodes
/// every A and B value of every MFMA (a library call per element showed up at ~9% of a model
/// decode step).
mod decode {
    /// 2^e as an f64 (for `-1022 <= e <= 1023`).
    const fn pow2(e: i32) -> f64 {
        f64::from_bits(((e + 1023) as u64) << 52)
    }

    /// FNUZ fp8 bits -> value: `mb` mantissa bits, exponent bias `bias`, 0x80 the only NaN, no
    /// infinities, no negative zero.
    const fn fnuz(b: u8, mb: u32, bias: i32) -> f32 {
        if b == 0x80 {
            return f32::NAN;
        }
        let e = ((b & 0x7f) >> mb) as i32;
        let m = (b as u32) & ((1 << mb) - 1);
        let (int, exp) = if e == 0 { (m, 1) } else { ((1 << mb) + m, e) };
        let v = int as f64 * pow2(exp - bias - mb as i32);
        (if b & 0x80 != 0 { -v } else { v }) as f32
    }

    const fn table(mb: u32, bias: i32) -> [f32; 256] {
        let mut t = [0f32; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = fnuz(i as u8, mb, bias);
            i += 1;
        }
        t
    }

    static E4M3: [f32; 256] = table(3, 8);
    static E5M2: [f32; 256] = table(2, 16);

    /// E4M3FNUZ bits -> f32 (bias 8, 0x80 = NaN, no infinities).
    #[inline(always)]
    pub fn e4m3fnuz_to_f32(b: u8) -> f32 {
        E4M3[b as usize]
    }

    /// E5M2FNUZ bits -> f32 (bias 16).
    #[inline(always)]
    pub fn e5m2fnuz_to_f32(b: u8) -> f32 {
        E5M2[b as usize]
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
    // Asked for every VOP3P instruction: a table, not a string comparison each time.
    static TABLE: std::sync::OnceLock<Box<[bool]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| Op::all().iter().map(|o| o.name().starts_with("v_mfma")).collect())[op as usize]
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
    #[inline(always)]
    fn value(self, regs: [u32; 2], e: usize) -> f64 {
        match self {
            In::F32 => f32::from_bits(regs[0]) as f64,
            In::Xf32 => f32::from_bits(regs[e] & 0xffff_e000) as f64,
            In::F16 => f16_to_f64((regs[e / 2] >> (16 * (e % 2))) as u16),
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
    match (sh.a.group(), sh.m, sh.k) {
        (8, 32, 8) => fused_shape::<32, 8, 8>(w, inst, sh),
        (8, 16, 16) => fused_shape::<16, 16, 8>(w, inst, sh),
        (16, 16, 32) => fused_shape::<16, 32, 16>(w, inst, sh),
        (16, 32, 16) => fused_shape::<32, 16, 16>(w, inst, sh),
        _ => exact_shape(w, inst, sh),
    }
}

/// The int8 and f32/xf32 shapes, whose products and sums are exact integers or a chain of
/// FMAs: every output element on its own.
fn exact_shape(w: &mut Wave, inst: &Inst, sh: Shape) -> Exec {
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
    match (sh.a.group(), m, kk) {
        (0, ..) => {
            // int8: products and their sum are exact integers (|sum| < 2^20 for k <= 32); the
            // i32 accumulator wraps (the ISA defines no saturation for these ops).
            for i in 0..m {
                for j in 0..m {
                    let (ai, bj) = (&a[i * kk..i * kk + kk], &bt[j * kk..j * kk + kk]);
                    let (r, lane) = c_pos(m, i, j);
                    let dot: i64 = ai.iter().zip(bj).map(|(x, y)| (x * y) as i64).sum();
                    d[r][lane] = (d[r][lane] as i32).wrapping_add(dot as i32) as u32;
                }
            }
        }
        (1, ..) => {
            // f32 and xf32: a chain of correctly rounded FMAs in k order.
            for i in 0..m {
                for j in 0..m {
                    let (ai, bj) = (&a[i * kk..i * kk + kk], &bt[j * kk..j * kk + kk]);
                    let (r, lane) = c_pos(m, i, j);
                    let mut acc = f32::from_bits(d[r][lane]);
                    for k in 0..kk {
                        acc = (ai[k] as f32).mul_add(bj[k] as f32, acc);
                    }
                    d[r][lane] = acc.to_bits();
                }
            }
        }
        (g, ..) => {
            return Err(Trouble::new(FaultKind::NotImplemented(format!("{}: {m}x{m}x{kk} in fused groups of {g}", inst.op.name()))));
        }
    }
    for (r, dreg) in d.iter().take(nregs).enumerate() {
        *w.vreg_at_mut(inst.dst, r as u16)? = *dreg;
    }
    Ok(Flow::Next)
}

/// A fused-group shape (f16/bf16 in groups of 8, fp8/bf8 of 16), `M x M x KK` in groups of
/// `G`, with every array typed to the shape (no scratch larger than the operands): A and B
/// decoded from the lanes into `KK x M` each (A transposed), C gathered into `M x M`, the
/// groups through `simd::fused`, D scattered back.
///
/// Every step moves whole runs of `M` lanes: lanes `q * M .. q * M + M` hold value `e` of k
/// index `q * kpl + e` for rows (columns) `0..M`, and C register `r` of those lanes is one row
/// of C. Loops over such runs vectorise; the emulator spends a model decode step's largest
/// share on the MFMAs.
fn fused_shape<const M: usize, const KK: usize, const G: usize>(w: &mut Wave, inst: &Inst, sh: Shape) -> Exec {
    let kpl = const { KK * M / LANES };
    debug_assert!(sh.a.per_lane() == kpl && sh.b.per_lane() == kpl);
    let (mut ra, mut rb) = ([[0u32; LANES]; 2], [[0u32; LANES]; 2]);
    lanes_into(w, inst.src[0], sh.a.regs(), &mut ra)?;
    lanes_into(w, inst.src[1], sh.b.regs(), &mut rb)?;
    if inst.mods.blgp != 0 {
        let orig = rb;
        for (reg, o) in rb.iter_mut().zip(&orig) {
            for (lane, v) in reg.iter_mut().enumerate() {
                *v = o[blgp_lane(inst.mods.blgp, lane)];
            }
        }
    }
    let nregs = M * M / LANES;
    // Every row of A, every column of B and every element of C one value (the one-row GEMV's
    // activation sums): one element, written to every lane of D, without gathering C into a
    // tile and scattering it back (most of such an MFMA's time).
    if simd::uniform_operands::<M>(sh.a, sh.b, &ra, &rb) {
        let c = if inst.src[2].0 >= 256 {
            let first = w.vreg_at(inst.src[2], 0)?[0];
            let mut same = true;
            for r in 0..nregs {
                for &v in w.vreg_at(inst.src[2], r as u16)? {
                    same &= v == first;
                }
            }
            same.then_some(first)
        } else {
            Some(w.sval32(inst.src[2], inst.literal, Ty::F32)?)
        };
        if let Some(c) = c {
            let d = simd::fused_one::<M, KK, G>(sh.a, sh.b, &ra, &rb, f32::from_bits(c)).to_bits();
            for r in 0..nregs {
                *w.vreg_at_mut(inst.dst, r as u16)? = [d; LANES];
            }
            return Ok(Flow::Next);
        }
    }
    // C: registers, or an inline constant / literal broadcast to every element.
    let mut acc = [[0f32; M]; M];
    for r in 0..nregs {
        if inst.src[2].0 >= 256 {
            let c = w.vreg_at(inst.src[2], r as u16)?;
            for (q, run) in c.chunks_exact(M).enumerate() {
                let row = &mut acc[c_ij(M, r, q * M).0];
                for (x, &v) in row.iter_mut().zip(run) {
                    *x = f32::from_bits(v);
                }
            }
        } else {
            let v = f32::from_bits(w.sval32(inst.src[2], inst.literal, Ty::F32)?);
            for q in 0..LANES / M {
                acc[c_ij(M, r, q * M).0] = [v; M];
            }
        }
    }
    simd::fused::<M, KK, G>(sh.a, sh.b, &ra, &rb, &mut acc);
    for r in 0..nregs {
        let d = w.vreg_at_mut(inst.dst, r as u16)?;
        for (q, run) in d.chunks_exact_mut(M).enumerate() {
            let row = &acc[c_ij(M, r, q * M).0];
            for (v, x) in run.iter_mut().zip(row) {
                *v = x.to_bits();
            }
        }
    }
    Ok(Flow::Next)
}

/// The largest m * k of the supported shapes (32 x 16 and 16 x 32).
const MAX_MK: usize = 512;

/// The registers of an A/B operand for every lane (`regs` of them; an SGPR or constant source is
/// broadcast).
fn lanes(w: &Wave, op: Opnd, regs: u16) -> Result<[[u32; LANES]; 2], FaultKind> {
    let mut out = [[0u32; LANES]; 2];
    lanes_into(w, op, regs, &mut out)?;
    Ok(out)
}

/// [`lanes`] into `out` (registers past `regs` left as they are): no 512-byte result to move
/// through a `Result`, on the path every fused MFMA takes.
#[inline]
fn lanes_into(w: &Wave, op: Opnd, regs: u16, out: &mut [[u32; LANES]; 2]) -> Result<(), FaultKind> {
    for k in 0..regs {
        if op.0 >= 256 {
            crate::exec::cpu::copy_reg(&mut out[k as usize], w.vreg_at(op, k)?);
        } else {
            out[k as usize] = [w.sval32(op, 0, Ty::B32)?; LANES];
        }
    }
    Ok(())
}

/// (register, lane) of C[i][j].
fn c_pos(m: usize, i: usize, j: usize) -> (usize, usize) {
    if m == 32 { (4 * (i / 8) + i % 4, (32 * (i / 4)) % 64 + j) } else { (i % 4, 16 * (i / 4) + j) }
}

/// (i, j) of the C element in register `r` of `lane`: the inverse of [`c_pos`].
#[inline(always)]
fn c_ij(m: usize, r: usize, lane: usize) -> (usize, usize) {
    if m == 32 { (8 * (r / 4) + 4 * (lane / 32) + r % 4, lane % 32) } else { (4 * (lane / 16) + r, lane % 16) }
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
            for i in 0..m {
                for j in 0..m {
                    let (r, lane) = c_pos(m, i, j);
                    assert_eq!(c_ij(m, r, lane), (i, j));
                }
            }
            assert!(seen.iter().all(|&(r, l)| l < 64 && r < if m == 32 { 16 } else { 4 }));
        }
    }

    /// `op` on random operands in v0.. (A), v4.. (B), v8.. (C), D into v40..: every output
    /// against the lane layout of GFX942.md and the fused-group definition, element by element.
    /// With `repeat`, every row of A copies row 0 (a skinny GEMM's padding), and with `repeat
    /// > 1` every row of C too (all rows the same), so the decoding of A's runs once per run of
    /// lanes and the one-row result are checked as well.
    fn check_against_definition(op: Op, blgp: u8, seed: u64, repeat: u8) {
        use crate::isa::{Enc, Ext, Mods};
        let sh = shape(op).expect("an MFMA");
        let (m, kk, kpl) = (sh.m, sh.k, sh.a.per_lane());
        let nregs = m * m / LANES;
        let mut w = Wave::new(64, 0);
        let mut x = seed;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for r in 0..8 + nregs {
            for lane in 0..LANES {
                let bits = next() as u32;
                // Keep most C values ordinary floats; A/B take any bit pattern (NaN, inf included).
                let v = if r >= 8 { ((bits as f32 / u32::MAX as f32) - 0.5).to_bits() } else { bits };
                w.vreg_at_mut(Opnd::vgpr(r as u16), 0).expect("in range")[lane] = v;
            }
        }
        if repeat > 0 {
            // A's row i is lane i of each run of m lanes.
            for r in 0..2 {
                let reg = w.vreg_at_mut(Opnd::vgpr(r as u16), 0).expect("in range");
                for lane in 0..LANES {
                    reg[lane] = reg[lane - lane % m];
                }
            }
        }
        if repeat > 1 {
            for i in 1..m {
                for j in 0..m {
                    let ((r0, l0), (r, l)) = (c_pos(m, 0, j), c_pos(m, i, j));
                    let v = w.vreg_at(Opnd::vgpr(8 + r0 as u16), 0).expect("in range")[l0];
                    w.vreg_at_mut(Opnd::vgpr(8 + r as u16), 0).expect("in range")[l] = v;
                }
            }
        }
        let inst = Inst {
            op,
            enc: Enc::Vop3p,
            size: 8,
            dst: Opnd::vgpr(40),
            sdst: Opnd::NONE,
            src: [Opnd::vgpr(0), Opnd::vgpr(4), Opnd::vgpr(8), Opnd::NONE],
            literal: 0,
            imm: 0,
            mods: Mods { blgp, ..Mods::default() },
            ext: Ext::None,
            flags: 0,
        };
        let reg = |w: &Wave, r: usize| *w.vreg_at(Opnd::vgpr(r as u16), 0).expect("in range");
        let a_val = |w: &Wave, i: usize, k: usize| {
            let lane = m * (k / kpl) + i;
            sh.a.value([reg(w, 0)[lane], reg(w, 1)[lane]], k % kpl)
        };
        let b_val = |w: &Wave, k: usize, j: usize| {
            let lane = blgp_lane(blgp, m * (k / kpl) + j);
            sh.b.value([reg(w, 4)[lane], reg(w, 5)[lane]], k % kpl)
        };
        let mut want = vec![0u32; m * m];
        for i in 0..m {
            for j in 0..m {
                let (r, lane) = c_pos(m, i, j);
                let mut acc = f32::from_bits(reg(&w, 8 + r)[lane]);
                for g in (0..kk).step_by(sh.a.group()) {
                    let p: Vec<f64> = (g..g + sh.a.group()).map(|k| a_val(&w, i, k) * b_val(&w, k, j)).collect();
                    acc = fused::group(acc, &p);
                }
                want[i * m + j] = acc.to_bits();
            }
        }
        exec(&mut w, &inst).expect("runs");
        for i in 0..m {
            for j in 0..m {
                let (r, lane) = c_pos(m, i, j);
                let (got, want) = (f32::from_bits(reg(&w, 40 + r)[lane]), f32::from_bits(want[i * m + j]));
                if want.is_nan() {
                    assert!(got.is_nan(), "{} [{i}][{j}]", op.name());
                } else {
                    assert_eq!(got.to_bits(), want.to_bits(), "{} blgp {blgp} [{i}][{j}]: {got} vs {want}", op.name());
                }
            }
        }
    }

    #[test]
    fn fused_shapes_match_the_layout_and_the_group_definition() {
        use Op::*;
        for (n, op) in [
            VMfmaF3232x32x8Bf16,
            VMfmaF3216x16x16Bf16,
            VMfmaF3232x32x8F16,
            VMfmaF3216x16x16F16,
            VMfmaF3216x16x32Fp8Fp8,
            VMfmaF3216x16x32Bf8Fp8,
            VMfmaF3232x32x16Fp8Bf8,
            VMfmaF3232x32x16Bf8Bf8,
        ]
        .into_iter()
        .enumerate()
        {
            for blgp in [0, 3] {
                for repeat in 0..3 {
                    check_against_definition(op, blgp, 0x2545_f491_4f6c_dd1d ^ (n as u64 * 7919 + blgp as u64), repeat);
                }
            }
        }
    }

    #[test]
    fn f16_decoding_is_exact_for_every_bit_pattern() {
        for h in 0..=u16::MAX {
            // Every bit, NaNs included: the VALU's f16 inputs go through it too, and a NaN's
            // payload reaches their results. (`half` converts through the F16C instruction
            // where the CPU has it, which quiets and keeps the payload as IEEE recommends.)
            let want = half::f16::from_bits(h).to_f64();
            let got = f16_to_f64(h);
            assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}");
        }
    }

    #[test]
    fn fp8_decoding_matches_the_fnuz_formats() {
        assert_eq!(e4m3fnuz_to_f32(0x7f), 240.0);
        assert_eq!(e5m2fnuz_to_f32(0x7f), 57344.0);
        assert!(e4m3fnuz_to_f32(0x80).is_nan());
        assert_eq!(e4m3fnuz_to_f32(0x01), 2f32.powi(-10));
        // Every code against the format's definition: (-1)^s * 2^(e - bias) * 1.m, or
        // 2^(1 - bias) * 0.m when e = 0.
        let def = |b: u8, mb: u32, bias: i32| -> f32 {
            let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
            let e = ((b & 0x7f) >> mb) as i32;
            let m = (b & ((1 << mb) - 1)) as f32 / (1u32 << mb) as f32;
            if e == 0 { s * m * 2f32.powi(1 - bias) } else { s * (1.0 + m) * 2f32.powi(e - bias) }
        };
        for b in (0..=255u8).filter(|&b| b != 0x80) {
            assert_eq!(e4m3fnuz_to_f32(b), def(b, 3, 8), "e4m3 {b:#04x}");
            assert_eq!(e5m2fnuz_to_f32(b), def(b, 2, 16), "e5m2 {b:#04x}");
        }
        assert!(e5m2fnuz_to_f32(0x80).is_nan());
    }
}
