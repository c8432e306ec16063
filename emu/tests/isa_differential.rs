//! Differential disassembly: random encodings of every format go to llvm-objdump-19 and to our
//! decoder. Where LLVM prints an instruction we must decode it to the same size and text;
//! where LLVM refuses it (or decodes it only with an "Invalid register" complaint) we must
//! refuse it too. A fixed seed keeps the run reproducible; ISA_FUZZ_N scales it.

mod common;

use common::*;
use ferrocm_emu::isa::decode;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u32) as usize]
    }
}

/// A field value: often zero, often a typical value, sometimes anything.
fn field(r: &mut Rng, bits: u32) -> u32 {
    let mask = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
    match r.below(10) {
        0..=3 => 0,
        4 => mask,
        5 => 1 & mask,
        _ => r.next() & mask,
    }
}

/// A 9-bit source operand code biased towards the interesting classes.
fn src9(r: &mut Rng) -> u32 {
    match r.below(12) {
        0..=3 => 256 + r.below(256),
        4 | 5 => r.below(128),
        6 => 128 + r.below(81),
        7 => 240 + r.below(9),
        8 => r.pick(&[235, 236, 237, 238, 239, 251, 252, 253, 254, 255, 209]),
        9 => 255,
        10 => r.pick(&[102, 104, 106, 124, 125, 126, 108, 112]),
        _ => r.below(512),
    }
}

fn src8(r: &mut Rng) -> u32 {
    src9(r) & 0xFF
}

fn literal(r: &mut Rng) -> u32 {
    let any = r.next();
    r.pick(&[
        0x3F80_0000,
        0x3C00,
        0x3FF0_0000,
        5,
        0xFFFF_FFF0,
        0xFFF0,
        0x3118,
        0xFFFF_FFEF,
        0x4040_0000,
        0x3E22_F983,
        0,
        64,
        65,
        0xBC00,
        0x1234_5678,
        any,
    ])
}

fn random_encoding(r: &mut Rng) -> Vec<u32> {
    let lit = literal(r);
    let w = match r.below(22) {
        0 => vec![0xBE80_0000 | field(r, 7) << 16 | r.below(0x40) << 8 | src8(r)],
        1 => vec![0x8000_0000 | r.below(0x60) << 23 | field(r, 7) << 16 | src8(r) << 8 | src8(r)],
        2 => vec![0xB000_0000 | r.below(0x1D) << 23 | field(r, 7) << 16 | field(r, 16)],
        3 => vec![0xBF00_0000 | r.below(0x20) << 16 | src8(r) << 8 | src8(r)],
        4 => vec![0xBF80_0000 | r.below(0x20) << 16 | field(r, 16)],
        5 => vec![0xC000_0000 | r.below(0xB0) << 18 | field(r, 5) << 13 | field(r, 7) << 6 | field(r, 6), field(r, 32)],
        6 => vec![0x7E00_0000 | field(r, 8) << 17 | r.below(0x60) << 9 | src9(r)],
        7 => vec![r.below(0x3E) << 25 | field(r, 8) << 17 | field(r, 8) << 9 | src9(r)],
        8 => vec![0x7C00_0000 | r.below(256) << 17 | field(r, 8) << 9 | src9(r)],
        9 | 10 => {
            // VOP1/VOP2/VOPC with an SDWA or DPP word.
            let first = match r.below(3) {
                0 => 0x7E00_0000 | field(r, 8) << 17 | r.below(0x60) << 9,
                1 => r.below(0x3E) << 25 | field(r, 8) << 17 | field(r, 8) << 9,
                _ => 0x7C00_0000 | r.below(256) << 17 | field(r, 8) << 9,
            };
            if r.below(2) == 0 {
                // Selector 7 is reserved and crashes llvm-objdump-19 (an llvm_unreachable in its
                // printer), so the random words keep to 0..=6.
                let sd = r.below(256)
                    | r.below(7) << 8
                    | r.below(4) << 11
                    | field(r, 3) << 13
                    | r.below(7) << 16
                    | field(r, 5) << 19
                    | r.below(7) << 24
                    | field(r, 5) << 27;
                vec![first | 0xF9, sd]
            } else {
                let ctrl = if r.below(2) == 0 { r.below(0x100) } else { 0x100 + r.below(0x60) };
                let dp = r.below(256) | ctrl << 8 | field(r, 7) << 17 | r.below(16) << 24 | r.below(16) << 28;
                vec![first | 0xFA, dp]
            }
        }
        11..=13 => {
            let op = if r.below(3) == 0 { r.below(0x100) } else { 0x100 + r.below(0x1B0) };
            vec![
                0xD000_0000 | op << 16 | field(r, 8) << 8 | r.below(256),
                src9(r) | src9(r) << 9 | (if r.below(2) == 0 { 0 } else { src9(r) }) << 18 | field(r, 5) << 27,
            ]
        }
        14 | 15 => vec![
            0xD380_0000 | r.below(0x80) << 16 | field(r, 8) << 8 | r.below(256),
            src9(r) | src9(r) << 9 | (if r.below(2) == 0 { 0 } else { src9(r) }) << 18 | field(r, 5) << 27,
        ],
        16 | 17 => vec![
            0xD800_0000 | field(r, 1) << 25 | r.below(256) << 17 | field(r, 1) << 16 | field(r, 16),
            field(r, 8) << 24 | field(r, 8) << 16 | field(r, 8) << 8 | r.below(256),
        ],
        18 | 19 => {
            let (a, b) = (r.below(128), r.below(102));
            let saddr = r.pick(&[0x7F, 0, a, 0x7F, b]);
            vec![
                0xDC00_0000 | field(r, 1) << 25 | r.below(0x70) << 18 | field(r, 2) << 16 | r.below(3) << 14 | field(r, 14),
                field(r, 8) << 24 | field(r, 1) << 23 | saddr << 16 | field(r, 8) << 8 | r.below(256),
            ]
        }
        _ => vec![
            0xE000_0000 | r.below(0x80) << 18 | field(r, 6) << 12 | field(r, 12),
            src8(r) << 24 | field(r, 3) << 21 | r.below(32) << 16 | field(r, 8) << 8 | r.below(256),
        ],
    };
    let mut w = w;
    w.push(lit);
    w
}

/// Every value of the 16-bit immediate of the instructions that print it symbolically, and
/// the VOP3 forms no assembler text selects.
fn special_immediates(step: u32) -> Vec<Vec<u32>> {
    let mut v = vec![vec![0xD140_0000, 0], vec![0xD175_0000, 0]]; // v_nop, v_clrexcp (VOP3)
    for imm in (0..0x10000).step_by(step as usize) {
        v.push(vec![0xBF8C_0000 | imm]); // s_waitcnt
        v.push(vec![0xBF90_0000 | imm]); // s_sendmsg
        v.push(vec![0xB894_0000 | imm]); // s_getreg_b32 s20
        v.push(vec![0xD87A_0000 | imm, 0x2000_0004]); // ds_swizzle_b32 v32, v4
    }
    v
}

#[test]
fn random_encodings_match_llvm_objdump() {
    require_tools();
    let n: usize = std::env::var("ISA_FUZZ_N").ok().and_then(|s| s.parse().ok()).unwrap_or(60_000);
    let seed = std::env::var("ISA_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9E37_79B9_7F4A_7C15);
    let mut r = Rng(seed);
    let mut probes: Vec<Vec<u32>> = (0..n).map(|_| random_encoding(&mut r)).collect();
    probes.extend(special_immediates(if n > 100_000 { 1 } else { 7 }));
    let theirs = verdicts(&probes);
    let mut bad = Vec::new();
    let mut crashes = Vec::new();
    let (mut agreed_ok, mut agreed_err) = (0, 0);
    let mut undefined = 0;
    for (p, v) in probes.iter().zip(&theirs) {
        let ours = decode(p, 0);
        // SDWA dst_unused = 3 is reserved. LLVM 19 accepts it and prints UNUSED_PAD (its printer
        // reaches an llvm_unreachable that release builds compile away); we refuse it.
        let vop_e32 = p[0] >> 31 == 0 || p[0] >> 25 == 0x3F;
        if vop_e32 && p[0] & 0x1FF == 0xF9 && p[0] >> 25 != 0x3E && p[1] >> 11 & 3 == 3 {
            if let Ok(inst) = ours
                && inst.size == 8
            {
                bad.push(format!("{p:08x?}: decoded a reserved dst_unused value: {}", inst.text()));
            }
            undefined += 1;
            continue;
        }
        if *v == Verdict::Crash {
            // LLVM 19 has no answer; an error is the only honest one for us.
            if let Ok(inst) = ours {
                bad.push(format!("{p:08x?}\n   llvm: <crashes>\n   ours: {}", inst.text()));
            }
            crashes.push(format!("{p:08x?}"));
            continue;
        }
        let t = match v {
            Verdict::Text(t, n) => Some((t.clone(), *n)),
            _ => None,
        };
        match (&t, ours) {
            (Some((text, n)), Ok(inst)) => {
                if inst.size as usize != 4 * n || norm(&inst.text()) != norm(text) {
                    bad.push(format!("{p:08x?}\n   llvm: {text} ({n} dwords)\n   ours: {} ({} bytes)", inst.text(), inst.size));
                } else {
                    agreed_ok += 1;
                }
            }
            (Some((text, _)), Err(e)) => bad.push(format!("{p:08x?}\n   llvm: {text}\n   ours: {e}")),
            (None, Ok(inst)) => bad.push(format!("{p:08x?}\n   llvm: <rejected>\n   ours: {}", inst.text())),
            (None, Err(_)) => agreed_err += 1,
        }
    }
    eprintln!(
        "{} probes: {agreed_ok} decoded alike, {agreed_err} rejected by both, {undefined} \
               with reserved SDWA dst_unused (refused by us), {} crash llvm-objdump-19 {:?}, {} differ",
        probes.len(),
        crashes.len(),
        crashes,
        bad.len()
    );
    assert!(bad.is_empty(), "{} of {} encodings differ:\n{}", bad.len(), probes.len(), bad[..bad.len().min(60)].join("\n"));
}
