//! Instruction-level tests of the VALU: each instruction is assembled with llvm-mc-19 (gfx942),
//! decoded by our decoder and executed on a fresh wave, so operand placement, modifiers and
//! encodings are exercised exactly as in a code object. Results are checked against values
//! computed independently: Rust's f32/f64 arithmetic, the host's f32 -> f16 conversion (F16C on
//! x86), brute-force nearest-value searches, and exhaustive loops where cheap.

use super::{exec_alu, exec_vop3p};
use crate::exec::wave::{FloatMode, LANES, Wave};
use crate::isa::{Enc, Inst, decode};
use half::f16;
use std::io::Write;
use std::process::{Command, Stdio};

/// Assembles `src` (one instruction per line) with llvm-mc-19 and decodes every instruction.
fn asm(src: &str) -> Vec<Inst> {
    let mut child = Command::new("llvm-mc-19")
        .args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llvm-mc-19 not found: these tests use LLVM 19 as the assembler (apt-get install llvm-19)");
    child.stdin.take().unwrap().write_all(format!("{src}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.trim().is_empty(), "llvm-mc rejected:\n{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut insts = Vec::new();
    for line in text.lines() {
        let Some(enc) = line.split("encoding: [").nth(1) else { continue };
        let bytes: Vec<u8> =
            enc.trim_end_matches(']').split(',').map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap()).collect();
        let words: Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let inst = decode(&words, 0).unwrap_or_else(|e| panic!("decode of `{}`: {e:?}", line.trim()));
        insts.push(inst);
    }
    insts
}

/// A wave with every lane on, IEEE mode and denormals kept (LLVM's defaults for gfx942 kernels).
fn wave() -> Wave {
    let mut w = Wave::new(32, 0);
    w.set_exec(u64::MAX);
    w.mode =
        FloatMode { round32: 0, round16_64: 0, denorm32: 3, denorm16_64: 3, dx10_clamp: true, ieee: true, fp16_ovfl: false, vskip: false };
    w
}

fn run(w: &mut Wave, inst: &Inst) {
    let r = if inst.enc == Enc::Vop3p { exec_vop3p(w, inst) } else { exec_alu(w, inst) };
    if let Err(e) = r {
        panic!("{} failed: {:?}", inst.op.name(), e.kind);
    }
}

/// Assembles and runs a sequence.
fn run_asm(w: &mut Wave, src: &str) {
    for i in asm(src) {
        run(w, &i);
    }
}

fn h(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

fn hv(b: u16) -> f64 {
    f16::from_bits(b).to_f64()
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }
}

/// Runs a 2-source instruction on every (a, b) pair in `pairs`, 64 at a time; returns v3.
fn lanes2(src: &str, pairs: &[(u32, u32)]) -> Vec<u32> {
    let inst = asm(src);
    let mut out = Vec::new();
    for chunk in pairs.chunks(LANES) {
        let mut w = wave();
        for (l, &(a, b)) in chunk.iter().enumerate() {
            w.v[1][l] = a;
            w.v[2][l] = b;
        }
        for i in &inst {
            run(&mut w, i);
        }
        out.extend_from_slice(&w.v[3][..chunk.len()]);
    }
    out
}

// ---- AGPR moves -----------------------------------------------------------------------------

#[test]
fn accvgpr_moves_copy_between_the_register_files() {
    // 8 VGPRs, then 8 AGPRs (a0 is unified register 8).
    let mut w = Wave::new(8, 8);
    w.set_exec(u64::MAX);
    for l in 0..LANES {
        w.v[1][l] = 0x100 + l as u32;
    }
    // VOP3P write and read, and the VOP1 AGPR-to-AGPR move (gfx940 encodes it as VOP1 0x52).
    run_asm(&mut w, "v_accvgpr_write_b32 a2, v1\nv_accvgpr_mov_b32 a5, a2\nv_accvgpr_read_b32 v3, a5");
    for l in 0..LANES {
        assert_eq!(w.v[8 + 5][l], 0x100 + l as u32);
        assert_eq!(w.v[3][l], 0x100 + l as u32);
    }
}

// ---- f16 -----------------------------------------------------------------------------------

#[test]
fn f16_add_mul_match_the_host_on_random_pairs() {
    let mut rng = Rng(7);
    let pairs: Vec<(u32, u32)> = (0..64 * 64).map(|_| (rng.next() & 0xffff, rng.next() & 0xffff)).collect();
    let add = lanes2("v_add_f16 v3, v1, v2", &pairs);
    let mul = lanes2("v_mul_f16 v3, v1, v2", &pairs);
    let mut checked = 0;
    for (k, &(a, b)) in pairs.iter().enumerate() {
        let (x, y) = (hv(a as u16) as f32, hv(b as u16) as f32);
        // f16 products are exact in f32; the host then rounds to f16 once (F16C).
        let p = h(x * y);
        if f16::from_bits(p).is_nan() {
            assert!(f16::from_bits(mul[k] as u16).is_nan());
        } else {
            assert_eq!(mul[k], p as u32, "{a:#x} * {b:#x}");
        }
        let s64 = x as f64 + y as f64;
        if (s64 as f32) as f64 == s64 || s64.is_nan() {
            let s = h(s64 as f32);
            if f16::from_bits(s).is_nan() {
                assert!(f16::from_bits(add[k] as u16).is_nan());
            } else {
                assert_eq!(add[k], s as u32, "{a:#x} + {b:#x}");
            }
            checked += 1;
        }
    }
    assert!(checked > 3000);
}

#[test]
fn f16_results_zero_or_keep_the_high_half_by_the_gfx9_rule() {
    let mut w = wave();
    w.v[1][0] = h(1.5) as u32;
    w.v[2][0] = h(2.0) as u32;
    w.v[3][0] = 0xdead_0000 | h(0.25) as u32;
    w.v[4][0] = 0xdead_0000;
    w.v[5][0] = 0xbeef_1234;
    run_asm(&mut w, "v_add_f16 v4, v1, v2\nv_mac_f16 v3, v1, v2\nv_fma_f16 v5, v1, v2, v1 op_sel:[0,0,0,1]");
    assert_eq!(w.v[4][0], h(3.5) as u32); // VOP2 f16 result: bits 31:16 zeroed
    assert_eq!(w.v[3][0], 0xdead_0000 | h(3.25) as u32); // v_mac_f16 keeps them
    assert_eq!(w.v[5][0], (h(4.5) as u32) << 16 | 0x1234); // op_sel[3]: high half, low kept
    // op_sel on sources picks the high halves.
    w.v[6][0] = (h(3.0) as u32) << 16 | h(100.0) as u32;
    run_asm(&mut w, "v_mad_f16 v7, v6, v6, v2 op_sel:[1,1,0,0]");
    assert_eq!(w.v[7][0], h(11.0) as u32);
    // SDWA: word 1 of each source, result into word 1, word 0 preserved.
    w.v[8][0] = 0x0000_5555;
    run_asm(&mut w, "v_add_f16_sdwa v8, v6, v6 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:WORD_1");
    assert_eq!(w.v[8][0], (h(6.0) as u32) << 16 | 0x5555);
}

/// Checks that `r` is the f16 nearest to `t` (no f16 is strictly closer).
fn is_nearest16(r: u16, t: f64) -> bool {
    let x = hv(r);
    if t.is_nan() {
        return x.is_nan();
    }
    if t.is_infinite() || x.is_infinite() {
        return x == t || (x.is_infinite() && t.abs() >= 65520.0 && x.signum() == t.signum());
    }
    let d = (x - t).abs();
    let up = hv(if r & 0x7fff == 0 { 1 | (r & 0x8000) } else { r + 1 });
    let down = if r & 0x7fff == 0 { -hv(1) } else { hv(r - 1) };
    (up.is_infinite() || d <= (up - t).abs()) && d <= (down - t).abs()
}

#[test]
fn f16_sqrt_and_rcp_are_correctly_rounded_for_every_input() {
    let all: Vec<(u32, u32)> = (0..=0xffffu32).map(|b| (b, 0)).collect();
    let sq = lanes2("v_sqrt_f16 v3, v1", &all);
    let rc = lanes2("v_rcp_f16 v3, v1", &all);
    for b in 0..=0xffffu16 {
        let x = hv(b);
        assert!(is_nearest16(sq[b as usize] as u16, x.sqrt()), "sqrt {b:#x} -> {:#x}", sq[b as usize]);
        assert!(is_nearest16(rc[b as usize] as u16, 1.0 / x), "rcp {b:#x} -> {:#x}", rc[b as usize]);
        assert_eq!(sq[b as usize] >> 16, 0);
    }
}

#[test]
fn f16_integer_conversions_for_every_input() {
    let all: Vec<(u32, u32)> = (0..=0xffffu32).map(|b| (b, 0)).collect();
    let from_u = lanes2("v_cvt_f16_u16 v3, v1", &all);
    let from_i = lanes2("v_cvt_f16_i16 v3, v1", &all);
    let to_i = lanes2("v_cvt_i16_f16 v3, v1", &all);
    let to_u = lanes2("v_cvt_u16_f16 v3, v1", &all);
    for b in 0..=0xffffu32 {
        let k = b as usize;
        assert_eq!(from_u[k], h(b as f32) as u32, "u16 {b}");
        assert_eq!(from_i[k], h(b as u16 as i16 as f32) as u32, "i16 {b}");
        let x = f16::from_bits(b as u16).to_f32();
        let ti = if x.is_nan() { 0 } else { x.trunc().clamp(-32768.0, 32767.0) as i16 as u16 };
        let tu = if x.is_nan() { 0 } else { x.trunc().clamp(0.0, 65535.0) as u16 };
        assert_eq!(to_i[k], ti as u32, "f16 {b:#x} -> i16");
        assert_eq!(to_u[k], tu as u32, "f16 {b:#x} -> u16");
    }
}

#[test]
fn f16_denormals_flush_by_mode() {
    let mut w = wave();
    w.v[1][0] = 0x0001; // smallest subnormal
    w.v[2][0] = 0;
    run_asm(&mut w, "v_add_f16 v3, v1, v2");
    assert_eq!(w.v[3][0], 1);
    w.mode.denorm16_64 = 0;
    run_asm(&mut w, "v_add_f16 v3, v1, v2\nv_mul_f16 v4, v1, 1.0");
    assert_eq!(w.v[3][0], 0);
    assert_eq!(w.v[4][0], 0);
    // Output flushing only: 2^-14 * 0.5 is subnormal and flushed.
    w.mode.denorm16_64 = 1;
    w.v[1][0] = 0x0400;
    w.v[2][0] = 2f32.powi(-20).to_bits();
    run_asm(&mut w, "v_mul_f16 v3, v1, 0.5\nv_cvt_f16_f32 v4, v2\nv_cvt_f32_f16 v5, 1");
    assert_eq!(w.v[3][0], 0);
    assert_eq!(w.v[4][0], 0); // f32 -> f16 subnormal result flushed
    assert_eq!(f32::from_bits(w.v[5][0]), 2f32.powi(-24)); // input denormals kept (bit 0 set)
    // f32 and f64 likewise.
    w.mode.denorm32 = 0;
    w.v[1][0] = 1; // f32 subnormal
    run_asm(&mut w, "v_add_f32 v3, v1, 0");
    assert_eq!(w.v[3][0], 0);
    w.mode.denorm32 = 3;
    run_asm(&mut w, "v_add_f32 v3, v1, 0");
    assert_eq!(w.v[3][0], 1);
}

/// Integer <-> f32 and f32 -> f16 conversions against their definitions, on edge values
/// (NaN, infinities, signed zeros, denormals, integer and f16 range ends, halfway cases) and
/// random ones, with source modifiers and both denormal modes (`v_cvt_f16_f32` zeroes the
/// high half: the comparisons take all 32 bits).
#[test]
fn conversions_match_their_definitions_on_edge_and_random_values() {
    let mut rng = Rng(0xc0_4e27);
    let edges: [u32; 20] = [
        0,
        0x8000_0000,
        1,
        0x8000_0001,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0001,
        0xffa0_0000,
        0x4f80_0000,
        0x4f7f_ffff,
        0xcf00_0000,
        0x4effffff,
        0x3f00_0000,
        0xbf7f_ffff,
        0x477f_f000,
        0x477f_efff,
        0x3380_0000,
        0x3300_0001,
        u32::MAX,
        16_777_217,
    ];
    let u32_of = |x: f64| if x.is_nan() { 0 } else { x.trunc().clamp(0.0, u32::MAX as f64) as u32 };
    let i32_of = |x: f64| if x.is_nan() { 0 } else { x.trunc().clamp(i32::MIN as f64, i32::MAX as f64) as i32 as u32 };
    for mode in [3u8, 0] {
        for round in 0..6 {
            let mut w = wave();
            w.mode.denorm16_64 = mode;
            w.mode.denorm32 = mode;
            for l in 0..LANES {
                w.v[1][l] = if round == 0 && l < edges.len() { edges[l] } else { rng.next() };
                w.v[2][l] = 0xdead_beef;
                w.v[7][l] = 0xdead_beef;
            }
            let src = w.v[1];
            run_asm(
                &mut w,
                "v_cvt_f32_u32 v3, v1\nv_cvt_f32_i32 v4, v1\nv_cvt_u32_f32 v5, v1\nv_cvt_i32_f32_e64 v6, -|v1|\nv_cvt_f16_f32 v7, v1\nv_cvt_f16_f32_e64 v2, -v1",
            );
            for l in 0..LANES {
                let (b, x) = (src[l], f32::from_bits(src[l]) as f64);
                assert_eq!(w.v[3][l], (b as f64 as f32).to_bits(), "f32_u32 {b:#x}");
                assert_eq!(w.v[4][l], (b as i32 as f64 as f32).to_bits(), "f32_i32 {b:#x}");
                assert_eq!(w.v[5][l], u32_of(x), "u32_f32 {b:#x}");
                assert_eq!(w.v[6][l], i32_of(-x.abs()), "i32_f32 -|{b:#x}|");
                for (got, v, what) in [(w.v[7][l], x, "f16_f32"), (w.v[2][l], -x, "f16_f32 -x")] {
                    let want = f16::from_f64(v);
                    if want.is_nan() {
                        assert!(f16::from_bits(got as u16).is_nan(), "{what} {b:#x}: {got:#x}");
                    } else {
                        let flushed = mode & 2 == 0 && want.to_bits() & 0x7c00 == 0;
                        let want = if flushed { want.to_bits() & 0x8000 } else { want.to_bits() };
                        assert_eq!(got, want as u32, "{what} {b:#x} mode {mode}");
                    }
                }
            }
        }
    }
}

/// The three-source integer ops (their lanes run through the vectorised `map3v`) against their
/// definitions, with vector, scalar and constant sources, over random values and shift counts
/// past 31; and a compare's lane mask feeding `v_cndmask_b32`'s select.
#[test]
fn three_source_integer_ops_and_selects_lane_by_lane() {
    let mut rng = Rng(0x3_50c);
    let mut w = wave();
    for l in 0..LANES {
        w.v[1][l] = rng.next();
        w.v[2][l] = rng.next();
        w.v[4][l] = if l % 3 == 0 { rng.next() % 64 } else { rng.next() };
    }
    w.s[10] = 0x0705_0301;
    w.s[11] = 37;
    let (a, b, c, s10) = (w.v[1], w.v[2], w.v[4], w.s[10]);
    run_asm(
        &mut w,
        "v_lshl_add_u32 v5, v1, v4, v2\nv_add3_u32 v6, v1, s11, v2\nv_lshl_or_b32 v7, v1, 5, v2\nv_perm_b32 v8, v1, v2, s10\nv_perm_b32 v9, v1, v2, v4\nv_bfe_u32 v10, v1, v4, v2\nv_bfe_i32 v11, v1, 7, v4\nv_alignbit_b32 v12, v1, v2, v4\nv_alignbyte_b32 v13, v1, v2, 3\nv_cmp_gt_u32 vcc, v1, v2\nv_cndmask_b32 v14, 37, v2, vcc",
    );
    let perm = |x: u32, y: u32, sel: u32| {
        let src = (x as u64) << 32 | y as u64;
        (0..4).fold(0u32, |acc, i| {
            let s = sel >> (8 * i) & 0xff;
            let byte = match s {
                0..=7 => (src >> (8 * s)) as u32 & 0xff,
                8..=11 => {
                    if src >> [15, 31, 47, 63][s as usize - 8] & 1 == 1 {
                        0xff
                    } else {
                        0
                    }
                }
                12 => 0,
                _ => 0xff,
            };
            acc | byte << (8 * i)
        })
    };
    let bfe = |x: u32, off: u32, width: u32, signed: bool| {
        let (off, width) = (off & 31, width & 31);
        if width == 0 {
            return 0;
        }
        let v = (x as u64) << 32 >> (off + 32) & ((1u64 << width) - 1);
        if signed && v >> (width - 1) & 1 == 1 { (v | !((1u64 << width) - 1)) as u32 } else { v as u32 }
    };
    for l in 0..LANES {
        let (x, y, z) = (a[l], b[l], c[l]);
        assert_eq!(w.v[5][l], (x << (z & 31)).wrapping_add(y), "lshl_add lane {l}");
        assert_eq!(w.v[6][l], x.wrapping_add(37).wrapping_add(y), "add3 lane {l}");
        assert_eq!(w.v[7][l], x << 5 | y, "lshl_or lane {l}");
        assert_eq!(w.v[8][l], perm(x, y, s10), "perm (scalar selector) lane {l}");
        assert_eq!(w.v[9][l], perm(x, y, z), "perm (vector selector) lane {l}");
        assert_eq!(w.v[10][l], bfe(x, z, y, false), "bfe_u32 lane {l}");
        assert_eq!(w.v[11][l], bfe(x, 7, z, true), "bfe_i32 lane {l}");
        assert_eq!(w.v[12][l], (((x as u64) << 32 | y as u64) >> (z & 31)) as u32, "alignbit lane {l}");
        assert_eq!(w.v[13][l], (((x as u64) << 32 | y as u64) >> 24) as u32, "alignbyte lane {l}");
        assert_eq!(w.v[14][l], if x > y { y } else { 37 }, "cndmask lane {l}");
    }
}

#[test]
fn f16_min_max_med3_clamp_and_transcendentals() {
    let mut w = wave();
    w.v[1][0] = h(-2.0) as u32;
    w.v[2][0] = h(3.0) as u32;
    w.v[4][0] = 0x7e00; // qNaN
    run_asm(
        &mut w,
        "v_max_f16 v3, v1, v2\nv_min_f16 v5, v4, v2\nv_med3_f16 v6, v1, v2, 1.0\nv_add_f16_e64 v7, v2, v2 clamp\nv_exp_f16 v8, v2\nv_log_f16 v9, 0.5\nv_sin_f16 v10, 0.5\nv_ldexp_f16 v11, v2, -2\nv_fract_f16 v12, v1\nv_frexp_exp_i16_f16 v13, v2",
    );
    assert_eq!(w.v[3][0], h(3.0) as u32);
    assert_eq!(w.v[5][0], h(3.0) as u32);
    assert_eq!(w.v[6][0], h(1.0) as u32);
    assert_eq!(w.v[7][0], h(1.0) as u32);
    assert_eq!(w.v[8][0], h(8.0) as u32);
    assert_eq!(w.v[9][0], h(-1.0) as u32);
    assert!(hv(w.v[10][0] as u16).abs() < 1e-3); // sin(pi) in revolutions
    assert_eq!(w.v[11][0], h(0.75) as u32); // 3 * 2^-2
    assert_eq!(w.v[12][0], 0); // fract(-2) = 0
    assert_eq!(w.v[13][0], 2);
}

#[test]
fn f16_division_sequence_is_correctly_rounded() {
    // LLVM 19's fdiv half for gfx942.
    let seq =
        "v_cvt_f32_f16_e32 v2, v1\nv_rcp_f32_e32 v2, v2\nv_fma_mixlo_f16 v2, v0, v2, 0 op_sel_hi:[1,0,0]\nv_div_fixup_f16 v0, v2, v1, v0";
    let insts = asm(seq);
    let mut rng = Rng(99);
    let mut bad = 0;
    for _ in 0..200 {
        let mut w = wave();
        let mut ab = [(0u16, 0u16); LANES];
        for l in 0..LANES {
            let (a, b) = ((rng.next() & 0xffff) as u16, (rng.next() & 0xffff) as u16);
            ab[l] = (a, b);
            w.v[0][l] = a as u32;
            w.v[1][l] = b as u32;
        }
        for i in &insts {
            run(&mut w, i);
        }
        for l in 0..LANES {
            let (a, b) = ab[l];
            // f16/f16 quotients are never within 2^-23 of an f16 tie unless exactly on it, so
            // f32 division then F16C rounding is the correctly rounded reference.
            let q = h(f16::from_bits(a).to_f32() / f16::from_bits(b).to_f32());
            let r = w.v[0][l] as u16;
            if f16::from_bits(q).is_nan() {
                assert!(f16::from_bits(r).is_nan());
            } else if r != q {
                bad += 1;
            }
        }
    }
    // rcp then one product rounds twice; the ISA allows the rare last-bit miss.
    assert!(bad < 20, "{bad} of 12800 quotients differ");
}

// ---- f32/f64 division ------------------------------------------------------------------------

fn f32_pair(rng: &mut Rng) -> (f32, f32) {
    // Exponents across the whole range, with extra weight on the extremes.
    let mut f = || {
        let e = match rng.next() % 4 {
            0 => rng.next() % 24,
            1 => 230 + rng.next() % 25,
            _ => 1 + rng.next() % 253,
        };
        f32::from_bits((rng.next() & 0x8000_0000) | e << 23 | (rng.next() & 0x7f_ffff))
    };
    (f(), f())
}

#[test]
fn f32_division_sequence_is_correctly_rounded() {
    let seq = "v_div_scale_f32 v2, s[0:1], v1, v1, v0
v_rcp_f32_e32 v3, v2
v_fma_f32 v4, -v2, v3, 1.0
v_fmac_f32_e32 v3, v4, v3
v_div_scale_f32 v4, vcc, v0, v1, v0
v_mul_f32_e32 v5, v4, v3
v_fma_f32 v6, -v2, v5, v4
v_fmac_f32_e32 v5, v6, v3
v_fma_f32 v2, -v2, v5, v4
v_div_fmas_f32 v2, v2, v3, v5
v_div_fixup_f32 v0, v2, v1, v0";
    let insts = asm(seq);
    let mut rng = Rng(3);
    let mut cases: Vec<(f32, f32)> = (0..64 * 200).map(|_| f32_pair(&mut rng)).collect();
    let specials = [0.0, -0.0, 1.0, 3.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE, 1e-45];
    for &a in &specials {
        for &b in &specials {
            cases.push((a, b));
        }
    }
    for chunk in cases.chunks(LANES) {
        let mut w = wave();
        for (l, &(a, b)) in chunk.iter().enumerate() {
            w.v[0][l] = a.to_bits();
            w.v[1][l] = b.to_bits();
        }
        for i in &insts {
            run(&mut w, i);
        }
        for (l, &(a, b)) in chunk.iter().enumerate() {
            let want = a / b;
            let got = f32::from_bits(w.v[0][l]);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{a:e} / {b:e}: got {got:e} want {want:e}");
        }
    }
}

#[test]
fn f64_division_sequence_is_correctly_rounded() {
    let seq = "v_div_scale_f64 v[4:5], s[0:1], v[2:3], v[2:3], v[0:1]
v_rcp_f64_e32 v[6:7], v[4:5]
v_fma_f64 v[8:9], -v[4:5], v[6:7], 1.0
v_fmac_f64_e32 v[6:7], v[6:7], v[8:9]
v_fma_f64 v[8:9], -v[4:5], v[6:7], 1.0
v_fmac_f64_e32 v[6:7], v[6:7], v[8:9]
v_div_scale_f64 v[8:9], vcc, v[0:1], v[2:3], v[0:1]
v_mul_f64 v[10:11], v[8:9], v[6:7]
v_fma_f64 v[4:5], -v[4:5], v[10:11], v[8:9]
v_div_fmas_f64 v[4:5], v[4:5], v[6:7], v[10:11]
v_div_fixup_f64 v[0:1], v[4:5], v[2:3], v[0:1]";
    let insts = asm(seq);
    let mut rng = Rng(5);
    let mut f = || {
        let e = match rng.next() % 4 {
            0 => (rng.next() % 60) as u64,
            1 => 1990 + (rng.next() % 57) as u64,
            _ => 1 + (rng.next() % 2045) as u64,
        };
        let m = (rng.next() as u64) << 20 ^ rng.next() as u64;
        f64::from_bits(((rng.next() as u64 & 1) << 63) | e << 52 | (m & ((1 << 52) - 1)))
    };
    for _ in 0..200 {
        let mut w = wave();
        let mut ab = [(0f64, 0f64); LANES];
        for l in 0..LANES {
            ab[l] = (f(), f());
            w.v[0][l] = ab[l].0.to_bits() as u32;
            w.v[1][l] = (ab[l].0.to_bits() >> 32) as u32;
            w.v[2][l] = ab[l].1.to_bits() as u32;
            w.v[3][l] = (ab[l].1.to_bits() >> 32) as u32;
        }
        for i in &insts {
            run(&mut w, i);
        }
        for l in 0..LANES {
            let (a, b) = ab[l];
            let got = f64::from_bits(w.v[0][l] as u64 | (w.v[1][l] as u64) << 32);
            assert!(got.to_bits() == (a / b).to_bits() || (got.is_nan() && (a / b).is_nan()), "{a:e} / {b:e}: got {got:e}");
        }
    }
}

// ---- fp8 / bf8 --------------------------------------------------------------------------------

/// Independent decoder: sign * 2^(e - bias) * (1 + m / 2^mbits), subnormals without the 1.
fn decode8(b: u8, ebits: u32, mbits: u32, bias: i32) -> f64 {
    if b == 0x80 {
        return f64::NAN;
    }
    let e = ((b & 0x7f) >> mbits) as i32;
    let m = (b as u32 & ((1 << mbits) - 1)) as f64 / (1u32 << mbits) as f64;
    let _ = ebits;
    let v = if e == 0 { m * 2f64.powi(1 - bias) } else { (1.0 + m) * 2f64.powi(e - bias) };
    if b & 0x80 != 0 { -v } else { v }
}

#[test]
fn fp8_and_bf8_decode_every_code_and_select_bytes() {
    for (op, eb, mb, bias, max) in [("fp8", 4, 3, 8, 240.0), ("bf8", 5, 2, 16, 57344.0)] {
        let codes: Vec<(u32, u32)> = (0..256u32).map(|b| (b << 16, 0)).collect();
        // SDWA byte select: the code sits in byte 2.
        let f = lanes2(&format!("v_cvt_f32_{op}_sdwa v3, v1 src0_sel:BYTE_2"), &codes);
        for b in 0..256u32 {
            let want = decode8(b as u8, eb, mb, bias);
            let got = f32::from_bits(f[b as usize]) as f64;
            assert!(got == want || (got.is_nan() && want.is_nan()), "{op} {b:#x}: {got} vs {want}");
        }
        assert_eq!(decode8(0x7f, eb, mb, bias), max);
        // The packed form reads a word: SDWA WORD_1 takes codes from bits 31:16.
        let mut w = wave();
        w.v[1][0] = 0x3840_0000 | 0x1234;
        run_asm(&mut w, &format!("v_cvt_pk_f32_{op}_sdwa v[4:5], v1 src0_sel:WORD_1"));
        assert_eq!(f32::from_bits(w.v[4][0]) as f64, decode8(0x40, eb, mb, bias));
        assert_eq!(f32::from_bits(w.v[5][0]) as f64, decode8(0x38, eb, mb, bias));
    }
}

/// Brute-force round to nearest (ties to the even code) over all finite codes; None = overflow.
fn nearest8(x: f32, eb: u32, mb: u32, bias: i32) -> Option<u8> {
    let x = x as f64;
    let mut best: Option<(f64, u8)> = None;
    for b in 0..=255u8 {
        let v = decode8(b, eb, mb, bias);
        if v.is_nan() || (v == 0.0 && b != 0) {
            continue;
        }
        let d = (v - x).abs();
        match best {
            Some((bd, bb)) if d > bd || (d == bd && (bb & 1) == 0) => {}
            _ => best = Some((d, b)),
        }
    }
    let (d, b) = best.unwrap();
    let max = decode8(0x7f, eb, mb, bias);
    // Beyond max + half an ulp of the top binade (or on it, ties to the even 2^(emax+1)).
    let half_ulp = 2f64.powi((1 << eb) - 1 - bias - mb as i32 - 1);
    if x.abs() > max + half_ulp || (x.abs() == max + half_ulp) {
        None
    } else {
        let _ = d;
        Some(b)
    }
}

#[test]
fn f32_to_fp8_and_bf8_round_to_nearest_even_or_nan_on_overflow() {
    let mut rng = Rng(11);
    for (op, eb, mb, bias) in [("fp8", 4u32, 3u32, 8), ("bf8", 5, 2, 16)] {
        let mut xs: Vec<f32> = (0..64 * 40)
            .map(|_| {
                let e = 127 - 20 + rng.next() % 38; // 2^-20 .. 2^17
                f32::from_bits((rng.next() & 0x8000_0000) | e << 23 | (rng.next() & 0x7f_ffff))
            })
            .collect();
        // Exact codes, midpoints between neighbours, and the specials.
        for b in 0..=127u8 {
            let v = decode8(b, eb, mb, bias);
            xs.push(v as f32);
            let next = decode8(b + 1, eb, mb, bias);
            if b < 127 {
                xs.push(((v + next) / 2.0) as f32);
            }
        }
        xs.extend([0.0, -0.0, -1e-30, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e30, -1e30]);
        let pairs: Vec<(u32, u32)> = xs.iter().map(|x| (x.to_bits(), (-x).to_bits())).collect();
        let mut w_init = wave();
        let _ = &mut w_init;
        let r = lanes2(&format!("v_cvt_pk_{op}_f32 v3, v1, v2"), &pairs);
        for (k, &x) in xs.iter().enumerate() {
            let want = if x.is_nan() || x.is_infinite() {
                0x80
            } else {
                nearest8(x, eb, mb, bias).map_or(0x80, |b| if b & 0x7f == 0 { 0 } else { b })
            };
            let want_neg = if x.is_nan() || x.is_infinite() {
                0x80
            } else {
                nearest8(-x, eb, mb, bias).map_or(0x80, |b| if b & 0x7f == 0 { 0 } else { b })
            };
            assert_eq!(r[k] & 0xff, want as u32, "{op} of {x:e}");
            assert_eq!((r[k] >> 8) & 0xff, want_neg as u32, "{op} of {:e}", -x);
        }
    }
}

#[test]
fn fp8_pack_selects_words_and_sr_selects_bytes() {
    let mut w = wave();
    w.v[1][0] = 1.0f32.to_bits();
    w.v[2][0] = (-2.0f32).to_bits();
    w.v[3][0] = 0xaabb_ccdd;
    w.v[4][0] = 0xaabb_ccdd;
    w.v[5][0] = 0xaabb_ccdd;
    run_asm(
        &mut w,
        "v_cvt_pk_fp8_f32 v3, v1, v2 op_sel:[0,0,1]\nv_cvt_sr_bf8_f32 v4, v1, 0 op_sel:[0,0,1,0]\nv_cvt_sr_fp8_f32 v5, -v2, 0 op_sel:[0,0,0,1]",
    );
    assert_eq!(w.v[3][0], 0xc840_ccdd); // word 1 = {fp8(-2) = 0xc8, fp8(1) = 0x40}
    assert_eq!(w.v[4][0], 0xaabb_40dd); // op_sel[3:2] = 1: byte 1 = bf8(1) = 0x40
    assert_eq!(w.v[5][0], 0xaa48_ccdd); // op_sel[3:2] = 2: byte 2 = fp8(2) = 0x48
}

#[test]
fn stochastic_rounding_adds_the_seed_below_the_kept_bits() {
    // 1 + 1/32 lies a quarter of the way from 1.0 (0x40) to 1.125 (0x41) in fp8.
    let x = 1.03125f32;
    let fmt = super::fp8::FP8;
    assert_eq!(fmt.from_f32_sr(x, 0, false), 0x40); // seed 0: truncation
    assert_eq!(fmt.from_f32_sr(x, u32::MAX, false), 0x41); // any carry rounds up
    assert_eq!(fmt.from_f32_sr(x, 0xbfff_ffff, false), 0x40); // just below 3/4 of the step: no carry
    assert_eq!(fmt.from_f32_sr(x, 0xc000_0000, false), 0x41); // exactly 3/4 of the step: carry
    // Unbiased on average over seeds.
    let mut rng = Rng(1);
    let n = 20000;
    let mean: f64 = (0..n).map(|_| fmt.to_f32(fmt.from_f32_sr(x, rng.next(), false)) as f64).sum::<f64>() / n as f64;
    assert!((mean - x as f64).abs() < 0.002, "mean {mean}");
    // Overflow and NaN rules match the round-to-nearest ones.
    assert_eq!(fmt.from_f32_sr(250.0, 0, false), 0x7f);
    assert_eq!(fmt.from_f32_sr(260.0, 0, false), 0x80);
    assert_eq!(fmt.from_f32_sr(f32::NAN, 0, false), 0x80);
    assert_eq!(fmt.from_f32_sr(-1e-9, u32::MAX, false), 0x00);
    assert_eq!(super::fp8::BF8.from_f32_sr(57344.0, u32::MAX, false), 0x7f); // exact values never move
    assert_eq!(super::fp8::BF8.from_f32_sr(57345.0, u32::MAX, false), 0x80); // carries past the maximum
    // With MODE.FP16_OVFL set, overflow and infinities saturate to the signed maximum.
    assert_eq!(fmt.from_f32_sr(260.0, 0, true), 0x7f);
    assert_eq!(fmt.from_f32_rne(f32::NEG_INFINITY, true), 0xff);
    assert_eq!(fmt.from_f32_rne(-1e6, true), 0xff);
    assert_eq!(fmt.from_f32_rne(f32::NAN, true), 0x80);
}

// ---- packed math -------------------------------------------------------------------------------

#[test]
fn packed_f16_uses_op_sel_op_sel_hi_and_negation() {
    let mut w = wave();
    w.v[1][0] = (h(2.0) as u32) << 16 | h(3.0) as u32;
    w.v[2][0] = (h(5.0) as u32) << 16 | h(7.0) as u32;
    w.v[3][0] = (h(1.0) as u32) << 16 | h(0.5) as u32;
    run_asm(
        &mut w,
        "v_pk_fma_f16 v4, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,1,0]\nv_pk_add_f16 v5, v1, 1.0\nv_pk_add_f16 v6, v1, 1.0 op_sel_hi:[1,0]\nv_pk_mul_f16 v7, v1, v2 clamp\nv_pk_max_f16 v8, v1, v2",
    );
    // lo = -(2.0) * 7 + 0.5; hi = 3.0 * -(5.0) + 1.0
    assert_eq!(w.v[4][0], (h(-14.0) as u32) << 16 | h(-13.5) as u32);
    // An inline constant is {1.0, 0.0}: the default op_sel_hi reads 0.0 for the high half.
    assert_eq!(w.v[5][0], (h(2.0) as u32) << 16 | h(4.0) as u32);
    // op_sel_hi = 0 for src1 reads the low half (1.0) for the high result too.
    assert_eq!(w.v[6][0], (h(3.0) as u32) << 16 | h(4.0) as u32);
    assert_eq!(w.v[7][0], (h(1.0) as u32) << 16 | h(1.0) as u32);
    assert_eq!(w.v[8][0], (h(5.0) as u32) << 16 | h(7.0) as u32);
}

#[test]
fn packed_integer_ops_wrap_or_clamp() {
    let mut w = wave();
    w.v[1][0] = 0xfff0_7fff;
    w.v[2][0] = 0x0020_0001;
    run_asm(
        &mut w,
        "v_pk_add_u16 v3, v1, v2\nv_pk_add_u16 v4, v1, v2 clamp\nv_pk_add_i16 v5, v1, v2 clamp\nv_pk_sub_u16 v6, v2, v1 clamp\nv_pk_lshlrev_b16 v7, 4, v2\nv_pk_mad_u16 v8, v2, v2, v2\nv_pk_max_i16 v9, v1, v2\nv_pk_mul_lo_u16 v10, v1, v2\nv_pk_ashrrev_i16 v11, 1, v1",
    );
    assert_eq!(w.v[3][0], 0x0010_8000);
    assert_eq!(w.v[4][0], 0xffff_8000);
    assert_eq!(w.v[5][0], 0x0010_7fff); // -16 + 32 = 16; 32767 + 1 saturates
    assert_eq!(w.v[6][0], 0); // both halves saturate at 0
    // The constant 4 is {4, 0}: the low half shifts by 4, the high half by 0.
    assert_eq!(w.v[7][0], 0x0020_0010);
    assert_eq!(w.v[8][0], (0x20 * 0x20 + 0x20) << 16 | 2);
    assert_eq!(w.v[9][0], 0x0020_7fff);
    assert_eq!(w.v[10][0], 0xfe00_7fff);
    assert_eq!(w.v[11][0], 0xfff0_3fff); // {1, 0} again: the high half shifts by 0
}

/// `v_pk_fma_f32` / `v_pk_mul_f32` on every lane of random values (denormals, infinities and
/// NaNs among them) with op_sel, negation of either half and clamp, under both f32 denormal
/// modes, against the host's fused multiply-add on the selected halves.
#[test]
fn packed_f32_ops_select_negate_clamp_and_flush_on_every_lane() {
    let mut rng = Rng(0x9f32);
    for mode in [3u8, 0] {
        let mut w = wave();
        w.mode.denorm32 = mode;
        for r in 4..10 {
            for l in 0..LANES {
                w.v[r][l] = match rng.next() % 8 {
                    0 => rng.next() & 0x807f_ffff,
                    1 => 0x7f80_0000 | rng.next() & 0x8000_0000 | (rng.next() % 2) << 22,
                    _ => rng.next() & 0xbfff_ffff,
                };
            }
        }
        let src = w.v.clone();
        run_asm(
            &mut w,
            "v_pk_fma_f32 v[10:11], v[4:5], v[6:7], v[8:9] op_sel:[1,0,1] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,1,1]\nv_pk_mul_f32 v[12:13], v[4:5], v[6:7] clamp",
        );
        let f = |r: usize, l: usize, neg: bool| {
            let x = f32::from_bits(src[r][l]);
            if neg { -x } else { x }
        };
        let out = |x: f32, clamp: bool| {
            let x = if clamp { if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) } } else { x };
            if mode & 2 == 0 && x.is_subnormal() { 0.0f32.copysign(x) } else { x }
        };
        let same = |got: u32, want: f32, what: &str| {
            if want.is_nan() {
                assert!(f32::from_bits(got).is_nan(), "{what}: {got:#x}");
            } else {
                assert_eq!(got, want.to_bits(), "{what}");
            }
        };
        for l in 0..LANES {
            // Low: src0.hi (negated), src1.lo, src2.hi; high: src0.lo, src1.hi (negated), src2.hi (negated).
            same(w.v[10][l], out(f(5, l, true).mul_add(f(6, l, false), f(9, l, false)), false), &format!("fma lo lane {l} mode {mode}"));
            same(w.v[11][l], out(f(4, l, false).mul_add(f(7, l, true), f(9, l, true)), false), &format!("fma hi lane {l} mode {mode}"));
            same(w.v[12][l], out(f(4, l, false) * f(6, l, false), true), &format!("mul lo lane {l}"));
            same(w.v[13][l], out(f(5, l, false) * f(7, l, false), true), &format!("mul hi lane {l}"));
        }
    }
}

#[test]
fn packed_f32_and_mov() {
    let mut w = wave();
    w.v[4][0] = 2.0f32.to_bits();
    w.v[5][0] = 3.0f32.to_bits();
    w.v[6][0] = 10.0f32.to_bits();
    w.v[7][0] = 20.0f32.to_bits();
    w.s[4] = 0.5f32.to_bits();
    w.s[5] = 4.0f32.to_bits();
    run_asm(
        &mut w,
        "v_pk_fma_f32 v[8:9], v[4:5], v[6:7], v[4:5] op_sel:[1,0,0] op_sel_hi:[0,1,1]\nv_pk_mul_f32 v[10:11], s[4:5], v[6:7]\nv_pk_add_f32 v[12:13], v[4:5], 1.0\nv_pk_mov_b32 v[14:15], v[4:5], v[6:7] op_sel:[1,0]",
    );
    assert_eq!(f32::from_bits(w.v[8][0]), 3.0 * 10.0 + 2.0);
    assert_eq!(f32::from_bits(w.v[9][0]), 2.0 * 20.0 + 3.0);
    assert_eq!((f32::from_bits(w.v[10][0]), f32::from_bits(w.v[11][0])), (5.0, 80.0));
    // The constant is {1.0, 0.0} as a 64-bit operand.
    assert_eq!((f32::from_bits(w.v[12][0]), f32::from_bits(w.v[13][0])), (3.0, 3.0));
    assert_eq!((w.v[14][0], w.v[15][0]), (3.0f32.to_bits(), 10.0f32.to_bits()));
}

#[test]
fn fma_mix_reads_f16_or_f32_per_source_and_writes_one_half() {
    let mut w = wave();
    w.v[1][0] = (h(3.0) as u32) << 16 | h(0.5) as u32;
    w.v[2][0] = 1.25f32.to_bits();
    w.v[3][0] = 100.0f32.to_bits();
    w.v[4][0] = 0xdead_beef;
    w.v[5][0] = 0xdead_beef;
    run_asm(
        &mut w,
        "v_fma_mix_f32 v6, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[1,0,0]\nv_fma_mixlo_f16 v4, v1, v2, v3 op_sel_hi:[1,0,0]\nv_fma_mixhi_f16 v5, -v1, |v2|, v1 op_sel:[1,0,1] op_sel_hi:[1,0,1]\nv_fma_mix_f32 v7, v1, v2, 2.0 op_sel_hi:[1,0,1]",
    );
    assert_eq!(f32::from_bits(w.v[6][0]), 3.0 * 1.25 + 100.0);
    assert_eq!(w.v[4][0], 0xdead_0000 | h(100.625) as u32);
    assert_eq!(w.v[5][0], (h(-3.0 * 1.25 + 3.0) as u32) << 16 | 0xbeef);
    assert_eq!(f32::from_bits(w.v[7][0]), 0.5 * 1.25 + 2.0); // 2.0 read as an f16 constant
}

#[test]
fn dot_products_match_scalar_references() {
    let mut rng = Rng(21);
    let pairs: Vec<(u32, u32)> = (0..256).map(|_| (rng.next(), rng.next())).collect();
    let i8s = lanes2("v_dot4_i32_i8 v3, v1, v2, 7", &pairs);
    let u4s = lanes2("v_dot8_u32_u4 v3, v1, v2, v1", &pairs);
    let i16s = lanes2("v_dot2_i32_i16 v3, v1, v2, -1", &pairs);
    for (k, &(a, b)) in pairs.iter().enumerate() {
        let s8: i32 = (0..4).map(|i| (a >> (8 * i)) as i8 as i32 * (b >> (8 * i)) as i8 as i32).sum();
        assert_eq!(i8s[k], (s8 + 7) as u32);
        let s4: u32 = (0..8).map(|i| (a >> (4 * i) & 15) * (b >> (4 * i) & 15)).sum();
        assert_eq!(u4s[k], s4.wrapping_add(a));
        let s16: i64 = (0..2).map(|i| (a >> (16 * i)) as i16 as i64 * (b >> (16 * i)) as i16 as i64).sum::<i64>() - 1;
        assert_eq!(i16s[k], s16 as u32);
    }
    let mut w = wave();
    w.v[1][0] = (h(2.0) as u32) << 16 | h(3.0) as u32;
    w.v[2][0] = (h(-4.0) as u32) << 16 | h(0.5) as u32;
    w.v[3][0] = 10.0f32.to_bits();
    w.v[4][0] = 1.0f32.to_bits();
    run_asm(&mut w, "v_dot2_f32_f16 v5, v1, v2, v3\nv_dot2c_f32_f16 v4, v1, v2\nv_dot2_f32_f16 v6, v1, v2, v3 neg_lo:[1,0,1]");
    assert_eq!(f32::from_bits(w.v[5][0]), 3.0 * 0.5 + 2.0 * -4.0 + 10.0);
    assert_eq!(f32::from_bits(w.v[4][0]), 1.0 + 1.5 - 8.0);
    assert_eq!(f32::from_bits(w.v[6][0]), -3.0 * 0.5 + 2.0 * -4.0 - 10.0);
    // dot4c accumulates into the destination, with DPP on src0.
    w.v[7] = [0; LANES];
    for l in 0..LANES {
        w.v[8][l] = 0x0101_0101 * l as u32;
    }
    w.v[9] = [0x0101_0101; LANES];
    run_asm(&mut w, "v_dot4c_i32_i8_dpp v7, v8, v9 row_shr:1 bound_ctrl:0");
    assert_eq!(w.v[7][0], 0); // invalid source lane reads 0 (bound_ctrl)
    assert_eq!(w.v[7][5], 4 * 4);
}

// ---- integer leftovers, lanes, DPP ---------------------------------------------------------------

#[test]
fn sixteen_bit_integer_ops_with_clamp_and_op_sel() {
    let mut w = wave();
    w.v[1][0] = 0x8000_7fff;
    w.v[2][0] = 0x0003_0002;
    w.v[3][0] = 0xdead_0000;
    w.v[21][0] = 0x12345;
    run_asm(
        &mut w,
        "v_add_u16 v4, v1, v2\nv_add_u16_e64 v5, v1, v1 clamp\nv_add_i16 v6, v1, v2 clamp\nv_sub_i16 v7, v1, v2 op_sel:[1,0] clamp\nv_mul_lo_u16 v3, v1, v2\nv_mad_u32_u16 v8, v1, v2, 1 op_sel:[1,1,0,0]\nv_mad_i32_i16 v9, v1, v2, 0 op_sel:[1,0,0,0]\nv_lshrrev_b16 v10, 1, v1\nv_max3_i16 v11, v1, v2, 0 op_sel:[1,0,0,0]\nv_med3_u16 v12, v1, v2, 5\nv_cvt_pk_i16_i32 v13, v21, -1\nv_sat_pk_u8_i16 v14, v2",
    );
    assert_eq!(w.v[4][0], 0x8001);
    assert_eq!(w.v[5][0], 0xfffe);
    assert_eq!(w.v[6][0], 0x7fff); // 32767 + 2 saturates
    assert_eq!(w.v[7][0], 0x8000); // -32768 - 2 saturates
    assert_eq!(w.v[3][0], (0x7fffu32 * 2) & 0xffff); // 16-bit result zeroes bits 31:16
    assert_eq!(w.v[8][0], 0x8000 * 3 + 1);
    assert_eq!(w.v[9][0], (-32768i32 * 2) as u32);
    assert_eq!(w.v[10][0], 0x3fff);
    assert_eq!(w.v[11][0], 2); // max(-32768, 2, 0)
    assert_eq!(w.v[12][0], 5);
    assert_eq!(w.v[13][0], 0xffff_7fff);
    assert_eq!(w.v[14][0], 0x0302);
}

#[test]
fn carries_masks_and_lane_access_through_sgprs() {
    let mut w = wave();
    for l in 0..LANES {
        w.v[1][l] = l as u32;
        w.v[2][l] = u32::MAX;
    }
    w.s[8] = 0xaaaa_aaaa;
    w.s[9] = 0;
    w.s[124] = 37; // m0
    w.s[10] = 77;
    run_asm(
        &mut w,
        "v_add_co_u32_e64 v3, s[6:7], v1, v2\nv_addc_co_u32_e64 v4, s[12:13], v1, 0, s[8:9]\nv_cndmask_b32_e64 v5, 0, 1, s[8:9]\nv_readlane_b32 s11, v1, m0\nv_writelane_b32 v6, s10, m0\nv_lshl_add_u64 v[14:15], v[0:1], 2, v[0:1]\nv_xnor_b32 v7, v1, 1",
    );
    assert_eq!(w.s[6] as u64 | (w.s[7] as u64) << 32, !1u64); // lane 0 adds 0 + MAX: no carry
    assert_eq!(w.v[4][1], 2);
    assert_eq!(w.v[4][2], 2);
    assert_eq!(w.v[5][1], 1);
    assert_eq!(w.v[5][33], 0);
    assert_eq!(w.s[11], 37);
    assert_eq!(w.v[6][37], 77);
    assert_eq!(w.v[6][36], 0);
    let x = 3u64 << 32; // {v0 = 0, v1 = lane}
    assert_eq!(w.v[14][3] as u64 | (w.v[15][3] as u64) << 32, (x << 2).wrapping_add(x));
    assert_eq!(w.v[7][2], !(2 ^ 1));
}

#[test]
fn cndmask_applies_abs_and_neg_to_its_sources() {
    let mut w = wave();
    for l in 0..LANES {
        w.v[1][l] = (-3.0f32).to_bits();
        w.v[2][l] = 2.0f32.to_bits();
    }
    w.s[8] = 0x5555_5555; // even lanes pick source 1
    w.s[9] = 0x5555_5555;
    run_asm(&mut w, "v_cndmask_b32_e64 v3, v1, -v1, s[8:9]\nv_cndmask_b32_e64 v4, |v1|, -|v2|, s[8:9]");
    assert_eq!(f32::from_bits(w.v[3][0]), 3.0);
    assert_eq!(f32::from_bits(w.v[3][1]), -3.0);
    assert_eq!(f32::from_bits(w.v[4][0]), -2.0);
    assert_eq!(f32::from_bits(w.v[4][1]), 3.0);
}

#[test]
fn sad_lerp_and_byte_packing() {
    let mut w = wave();
    w.v[1][0] = 0x0a0b_0c0d;
    w.v[2][0] = 0x0001_0000;
    w.v[4][0] = 0x0403_0201;
    w.v[5][0] = 0x0807_0605;
    w.v[6][0] = 0x0000_0000;
    w.v[7][0] = 0;
    w.v[20][0] = 255.5f32.to_bits();
    run_asm(
        &mut w,
        "v_msad_u8 v3, v1, v2, 5\nv_qsad_pk_u16_u8 v[8:9], v[4:5], v4, v[6:7]\nv_lerp_u8 v10, v1, v2, 1\nv_cvt_pk_u8_f32 v11, 2.0, 1, v1\nv_cvt_pk_u8_f32 v12, v20, 3, 0",
    );
    assert_eq!(w.v[3][0], 15);
    // Windows of v[4:5] bytes 0..3, 1..4, 2..5, 3..6 against 0x04030201.
    assert_eq!(w.v[8][0] & 0xffff, 0);
    assert_eq!(w.v[8][0] >> 16, 4);
    assert_eq!(w.v[9][0] & 0xffff, 8);
    assert_eq!(w.v[9][0] >> 16, 12);
    assert_eq!(w.v[10][0], 0x0506_0607);
    assert_eq!(w.v[11][0], 0x0a0b_020d);
    assert_eq!(w.v[12][0], 0xff00_0000); // 255.5 saturates to 255
}

#[test]
fn dpp_controls_and_64_bit_moves() {
    let mut w = wave();
    for l in 0..LANES {
        w.v[1][l] = 100 + l as u32;
        w.v[2][l] = l as u32;
        w.v[3][l] = 1000 + l as u32;
        w.v[4][l] = 0xffff;
        w.v[5][l] = 0xffff;
    }
    run_asm(
        &mut w,
        "v_mov_b32_dpp v4, v1 row_newbcast:3\nv_mov_b64_dpp v[6:7], v[2:3] row_newbcast:15 row_mask:0x5\nv_mov_b32_dpp v5, v1 row_shr:1 row_mask:0xf bank_mask:0x3 bound_ctrl:0",
    );
    assert_eq!(w.v[4][20], 100 + 19);
    assert_eq!(w.v[6][5], 15);
    assert_eq!(w.v[7][5], 1015);
    assert_eq!(w.v[6][40], 47);
    assert_eq!(w.v[6][20], 0); // row 1 masked off: untouched (was 0)
    assert_eq!(w.v[5][0], 0); // out of the row: reads 0 with bound_ctrl
    assert_eq!(w.v[5][5], 104);
    assert_eq!(w.v[5][9], 0xffff); // bank 2 disabled by bank_mask
}

#[test]
fn trig_preop_cube_and_misc_float() {
    let mut w = wave();
    w.v[2][0] = 0;
    w.v[3][0] = 0x3ff0_0000; // 1.0
    w.v[10][0] = (-3.0f32).to_bits();
    w.v[11][0] = 1.0f32.to_bits();
    w.v[12][0] = 2.0f32.to_bits();
    run_asm(
        &mut w,
        "v_trig_preop_f64 v[4:5], v[2:3], 0\nv_trig_preop_f64 v[6:7], v[2:3], 1\nv_cubeid_f32 v13, v10, v11, v12\nv_cubema_f32 v14, v10, v11, v12\nv_cubesc_f32 v15, v10, v11, v12\nv_cvt_off_f32_i4 v16, 9\nv_cvt_pknorm_i16_f32 v17, -1.0, 0.5\nv_cvt_pknorm_u16_f32 v18, 2.0, 0.5",
    );
    let p0 = f64::from_bits(w.v[4][0] as u64 | (w.v[5][0] as u64) << 32);
    let p1 = f64::from_bits(w.v[6][0] as u64 | (w.v[7][0] as u64) << 32);
    // The two segments add up to 2/pi to about 106 bits; the f64 sum shows it to 1 ulp.
    assert!(((p0 + p1) - 2.0 / std::f64::consts::PI).abs() <= f64::EPSILON);
    assert!(p1 > 0.0 && p1 < 1e-15);
    assert_eq!(f32::from_bits(w.v[13][0]), 1.0); // |x| is the major axis, x < 0: face 1
    assert_eq!(f32::from_bits(w.v[14][0]), -6.0);
    assert_eq!(f32::from_bits(w.v[15][0]), 2.0); // x < 0: sc = z
    assert_eq!(f32::from_bits(w.v[16][0]), -0.4375); // 9 = -7 in 4-bit two's complement
    assert_eq!(w.v[17][0], 16384 << 16 | 0x8001);
    assert_eq!(w.v[18][0], 32768 << 16 | 0xffff);
}

/// The exact value of f16 bits `b` after the input flushing of `mode` (f16/f64 denorm field).
fn flushed(b: u16, denorm16_64: u8) -> f64 {
    if denorm16_64 & 1 == 0 && b & 0x7c00 == 0 { if b & 0x8000 != 0 { -0.0 } else { 0.0 } } else { hv(b) }
}

/// The f16 nearest `x` (ties to even; exact: `x` is an exact sum or product of f16s in f64),
/// output denormals flushed per `denorm16_64`. A brute-force reference independent of the
/// emulator's rounding code.
fn nearest16(x: f64, denorm16_64: u8) -> u16 {
    let mut best: Option<(f64, u16)> = None;
    for b in 0..=0x7bffu16 {
        let v = hv(b);
        let d = (v - x.abs()).abs();
        if best.is_none_or(|(bd, bb)| d < bd || (d == bd && b & 1 == 0 && bb & 1 == 1)) {
            best = Some((d, b));
        }
    }
    let (_, mut b) = best.unwrap();
    // Past the largest f16 by half an ulp or more: infinity.
    if x.abs() >= 65520.0 {
        b = 0x7c00;
    }
    if denorm16_64 & 2 == 0 && b & 0x7c00 == 0 {
        b = 0;
    }
    if x.is_sign_negative() { b | 0x8000 } else { b }
}

#[test]
fn packed_f16_add_and_mul_round_once_on_every_kind_of_operand() {
    // Random f16 bit patterns (NaNs, infinities, denormals, sums exact and inexact in f32), with
    // op_sel/op_sel_hi/negation, under each denormal mode: both halves of every lane against an
    // exact f64 result rounded by brute force.
    let mut rng = Rng(0x5eed);
    let mut cache = std::collections::HashMap::new();
    for mode in [3u8, 0, 1, 2] {
        for src in [
            "v_pk_add_f16 v3, v1, v2",
            "v_pk_mul_f16 v3, v1, v2",
            "v_pk_add_f16 v3, v1, v2 op_sel:[1,0] op_sel_hi:[0,1] neg_lo:[0,1] neg_hi:[1,1]",
            "v_pk_mul_f16 v3, v1, v2 op_sel:[0,1] op_sel_hi:[1,0] neg_lo:[1,0]",
        ] {
            let inst = asm(src);
            let mut w = wave();
            w.mode.denorm16_64 = mode;
            for l in 0..LANES {
                w.v[1][l] = rng.next();
                w.v[2][l] = rng.next();
            }
            // A few lanes of pairs whose sum is inexact in f32 and of halfway cases.
            w.v[1][0] = 0x7bff_0001;
            w.v[2][0] = 0x0001_7bff;
            w.v[1][1] = 0x3c00_3c00;
            w.v[2][1] = 0x0c00_1001;
            run(&mut w, &inst[0]);
            let m = &inst[0].mods;
            for l in 0..LANES {
                for hh in 0..2 {
                    let (sel, neg) = if hh == 0 { (m.op_sel, m.neg) } else { (m.op_sel_hi, m.neg_hi) };
                    let x = |j: usize, v: u32| {
                        let b = if sel >> j & 1 == 1 { (v >> 16) as u16 } else { v as u16 };
                        if neg >> j & 1 == 1 { b ^ 0x8000 } else { b }
                    };
                    let (a, b) = (flushed(x(0, w.v[1][l]), mode), flushed(x(1, w.v[2][l]), mode));
                    let exact = if src.contains("mul") { a * b } else { a + b };
                    let got = (w.v[3][l] >> (16 * hh)) as u16;
                    if exact.is_nan() {
                        assert!(f16::from_bits(got).is_nan(), "{src} mode {mode} lane {l}.{hh}: {got:#06x}");
                    } else if exact.is_infinite() {
                        assert_eq!(got, if exact > 0.0 { 0x7c00 } else { 0xfc00 }, "{src} lane {l}.{hh}");
                    } else {
                        let want = *cache.entry((exact.to_bits(), mode)).or_insert_with(|| nearest16(exact, mode));
                        // An exact zero sum is +0 (nearest even, x + -x = +0); the brute force
                        // keeps the f64 sum's sign, which is +0 too.
                        assert_eq!(got, want, "{src} mode {mode} lane {l}.{hh}: {a} op {b} = {exact}");
                    }
                }
            }
        }
    }
}

#[test]
fn f16_widening_is_exact_for_every_input_modifier_and_mode() {
    for mode in [3u8, 0] {
        for src in [
            "v_cvt_f32_f16 v3, v1",
            "v_cvt_f32_f16_e64 v3, -|v1|",
            "v_cvt_f32_f16_sdwa v3, v1 src0_sel:WORD_1",
            "v_cvt_f32_f16_sdwa v3, -|v1| src0_sel:WORD_1",
            "v_cvt_f32_f16_sdwa v3, v1 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0",
        ] {
            let inst = asm(src);
            for chunk in (0..=u16::MAX as u32).collect::<Vec<_>>().chunks(LANES) {
                let mut w = wave();
                w.mode.denorm16_64 = mode;
                for (l, &b) in chunk.iter().enumerate() {
                    w.v[1][l] = b | (b ^ 0x1234) << 16;
                }
                run(&mut w, &inst[0]);
                for (l, &b) in chunk.iter().enumerate() {
                    let b = if src.contains("src0_sel:WORD_1") { (b ^ 0x1234) as u16 } else { b as u16 };
                    let b = if src.contains("-|") { b | 0x8000 } else { b };
                    let want = flushed(b, mode) as f32;
                    let got = f32::from_bits(w.v[3][l]);
                    if src.contains("dst_sel:WORD_1") {
                        // The result's low 16 bits into the high half, the low half kept (0).
                        if !want.is_nan() {
                            assert_eq!(w.v[3][l], want.to_bits() << 16, "{src} mode {mode} {b:#06x}");
                        }
                        continue;
                    }
                    if want.is_nan() {
                        assert!(got.is_nan(), "{src} {b:#06x}");
                    } else {
                        assert_eq!(got.to_bits(), want.to_bits(), "{src} mode {mode} {b:#06x}");
                    }
                }
            }
        }
    }
}

#[test]
fn f32_arithmetic_follows_ieee_with_modifiers_and_every_denormal_mode() {
    // Random f32 patterns (denormals, infinities, NaNs included) through add, sub, subrev, mul,
    // fma and fmac, with abs/neg, under each f32 denormal mode, against the host's IEEE
    // arithmetic on the flushed inputs, the result flushed per mode.
    let mut rng = Rng(0xf32);
    let flush = |x: f32, on: bool| if on && x.is_subnormal() { 0.0f32.copysign(x) } else { x };
    type Op = fn(f32, f32, f32) -> f32;
    let cases: [(&str, Op, [u8; 3]); 8] = [
        ("v_add_f32 v3, v1, v2", |a, b, _| a + b, [0; 3]),
        ("v_sub_f32 v3, v1, v2", |a, b, _| a - b, [0; 3]),
        ("v_subrev_f32 v3, v1, v2", |a, b, _| b - a, [0; 3]),
        ("v_mul_f32 v3, v1, v2", |a, b, _| a * b, [0; 3]),
        ("v_fma_f32 v3, v1, v2, v4", |a, b, c| a.mul_add(b, c), [0; 3]),
        ("v_fma_f32 v3, -|v1|, v2, -v4", |a, b, c| a.mul_add(b, c), [3, 0, 2]),
        ("v_add_f32_e64 v3, |v1|, -v2", |a, b, _| a + b, [1, 2, 0]),
        ("v_fmac_f32 v3, v1, v2", |a, b, c| a.mul_add(b, c), [0; 3]),
    ];
    for mode in 0..4u8 {
        for (src, f, m) in cases {
            let inst = asm(src);
            let mut w = wave();
            w.mode.denorm32 = mode;
            let mut x = [[0u32; LANES]; 3];
            for l in 0..LANES {
                for (i, r) in [1usize, 2, 4].into_iter().enumerate() {
                    let b = match rng.next() % 8 {
                        0 => rng.next() & 0x807f_ffff, // denormal or zero
                        1 => 0x7f80_0000 | (rng.next() & 0x8000_0000) | (rng.next() % 3 & 1) << 22,
                        _ => rng.next(),
                    };
                    w.v[r][l] = b;
                    x[i][l] = b;
                }
                w.v[3][l] = w.v[4][l];
            }
            run(&mut w, &inst[0]);
            for l in 0..LANES {
                let v = |i: usize| {
                    let mut b = x[i][l];
                    if m[i] & 1 == 1 {
                        b &= 0x7fff_ffff;
                    }
                    if m[i] & 2 == 2 {
                        b ^= 0x8000_0000;
                    }
                    flush(f32::from_bits(b), mode & 1 == 0)
                };
                let want = flush(f(v(0), v(1), v(2)), mode & 2 == 0);
                let got = f32::from_bits(w.v[3][l]);
                if want.is_nan() {
                    assert!(got.is_nan(), "{src} mode {mode} lane {l}");
                } else {
                    assert_eq!(got.to_bits(), want.to_bits(), "{src} mode {mode} lane {l}: {got} vs {want}");
                }
            }
        }
    }
}

#[test]
fn f16_dot2c_adds_exact_products_in_order_under_every_denormal_mode() {
    // Random f16 pairs and f32 addends (denormals, infinities, NaNs included) against
    // ((c + a.lo * b.lo) + a.hi * b.hi) in f64, rounded once to f32, inputs and output flushed per
    // MODE.
    let mut rng = Rng(0xd072);
    for (m16, m32) in [(3u8, 3u8), (0, 0), (3, 1), (1, 2)] {
        let inst = asm("v_dot2c_f32_f16 v3, v1, v2");
        let mut w = wave();
        w.mode.denorm16_64 = m16;
        w.mode.denorm32 = m32;
        let mut c = [0u32; LANES];
        for l in 0..LANES {
            w.v[1][l] = rng.next();
            w.v[2][l] = if l % 4 == 0 { rng.next() & 0x83ff_83ff } else { rng.next() };
            c[l] = if l % 5 == 0 { rng.next() & 0x807f_ffff } else { rng.next() };
            w.v[3][l] = c[l];
        }
        let (a, b) = (w.v[1], w.v[2]);
        run(&mut w, &inst[0]);
        for l in 0..LANES {
            let h = |x: u32, k: u32| flushed((x >> (16 * k)) as u16, m16);
            let cf = f32::from_bits(c[l]);
            let cf = if m32 & 1 == 0 && cf.is_subnormal() { 0.0f32.copysign(cf) } else { cf };
            let want = (cf as f64 + h(a[l], 0) * h(b[l], 0) + h(a[l], 1) * h(b[l], 1)) as f32;
            let want = if m32 & 2 == 0 && want.is_subnormal() { 0.0f32.copysign(want) } else { want };
            let got = f32::from_bits(w.v[3][l]);
            if want.is_nan() {
                assert!(got.is_nan(), "lane {l}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "modes {m16}/{m32} lane {l}: {got} vs {want}");
            }
        }
    }
}
