//! fp8 (E4M3FNUZ) and bf8 (E5M2FNUZ) conversions of gfx942.
//!
//! Formats (GFX942.md; AMD's `amd_hip_fp8.h`): E4M3FNUZ has exponent bias 8 and max 240,
//! E5M2FNUZ bias 16 and max 57344; neither has infinities or -0, and 0x80 is the only NaN.
//!
//! f32 -> fp8 behaviour, as modelled by AMD's own gfx942 emulator (ROCm rocjitsu,
//! `util/data_types.h`, `f32_to_*_fnuz_{rne,sr}_mode`) and its audit against the CDNA3 ISA guide:
//! - NaN converts to 0x80;
//! - a value whose rounded magnitude exceeds the maximum, and +-infinity, "overflow": with
//!   MODE.FP16_OVFL clear they become 0x80 (NaN), with it set the signed maximum (MODE bit 23,
//!   initialised from COMPUTE_PGM_RSRC1.FP16_OVFL; LLVM's `.amdhsa_fp16_overflow` defaults to 0).
//!   HIP's saturating conversions clamp with `v_med3_f32` before converting for exactly this
//!   reason;
//! - results that round to zero are +0 (there is no -0).
//! These instructions have no clamp bit on gfx942 (llvm-mc-19 rejects `clamp`).
//!
//! Stochastic rounding (`v_cvt_sr_*`): the CDNA3 guide (as quoted in rocjitsu's audit, ch. 12.11)
//! adds seed bits S1[31:12] (fp8) or S1[31:11] (bf8) into the f32 mantissa and then truncates.
//! For results in the normal range this is "round up iff discarded bits + random >= 2^d".
//!
//! Selection: `v_cvt_pk_*_f32` write the word op_sel[3] picks (the other word is kept),
//! `v_cvt_sr_*_f32` the byte op_sel[3:2] picks (the other bytes are kept); `v_cvt_f32_fp8` reads
//! the byte SDWA src0_sel (or VOP3 op_sel[1:0]) picks, `v_cvt_pk_f32_fp8` the word SDWA src0_sel
//! (or VOP3 op_sel[0]) picks.

use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::round::round_to_quantum;
use super::{fetch32, fmod32, out32, write32};
use crate::isa::{Enc, Inst, Op};

/// An 8-bit float format of gfx942.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fmt {
    /// Exponent bits.
    pub ebits: i32,
    /// Fraction bits.
    pub mbits: i32,
    /// Exponent bias.
    pub bias: i32,
}

/// E4M3FNUZ ("fp8").
pub(crate) const FP8: Fmt = Fmt { ebits: 4, mbits: 3, bias: 8 };
/// E5M2FNUZ ("bf8").
pub(crate) const BF8: Fmt = Fmt { ebits: 5, mbits: 2, bias: 16 };

/// The only NaN (and the overflow result while FP16_OVFL is clear).
pub(crate) const NAN8: u8 = 0x80;

impl Fmt {
    /// Minimum normal exponent.
    fn emin(self) -> i32 {
        1 - self.bias
    }

    /// The largest finite magnitude.
    pub(crate) fn max(self) -> f64 {
        let emax = (1 << self.ebits) - 1 - self.bias;
        2f64.powi(emax) * (2.0 - 2f64.powi(-self.mbits))
    }

    /// Decodes to f32 (exact); 0x80 is NaN.
    pub(crate) fn to_f32(self, b: u8) -> f32 {
        if b == NAN8 {
            // rocjitsu returns the negative quiet NaN here (the encoding's sign bit is set).
            return f32::from_bits(0xffc0_0000);
        }
        let e = ((b & 0x7f) >> self.mbits) as i32;
        let m = (b & ((1 << self.mbits) - 1)) as f64;
        let mag =
            if e == 0 { m * 2f64.powi(self.emin() - self.mbits) } else { (1.0 + m * 2f64.powi(-self.mbits)) * 2f64.powi(e - self.bias) };
        (if b & 0x80 != 0 { -mag } else { mag }) as f32
    }

    /// Encodes an exactly representable magnitude (0 < r <= max) with a sign.
    fn encode(self, neg: bool, r: f64) -> u8 {
        if r == 0.0 {
            return 0;
        }
        let e = ((r.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let bits = if e < self.emin() {
            (r * 2f64.powi(self.mbits - self.emin())) as u8
        } else {
            let m = ((r * 2f64.powi(-e) - 1.0) * 2f64.powi(self.mbits)) as u8;
            ((e + self.bias) as u8) << self.mbits | m
        };
        bits | if neg { 0x80 } else { 0 }
    }

    /// The result of an overflow (or an infinity): NaN, or the signed maximum with FP16_OVFL.
    fn overflow(self, neg: bool, saturate: bool) -> u8 {
        if saturate { 0x7f | if neg { 0x80 } else { 0 } } else { NAN8 }
    }

    /// f32 -> fp8 with round to nearest even (`v_cvt_pk_*_f32`); `saturate` is MODE.FP16_OVFL.
    pub(crate) fn from_f32_rne(self, x: f32, saturate: bool) -> u8 {
        if x.is_nan() {
            return NAN8;
        }
        if x.is_infinite() {
            return self.overflow(x.is_sign_negative(), saturate);
        }
        let r = round_to_quantum(x as f64, 0.0, self.emin(), self.mbits);
        if r > self.max() { self.overflow(x.is_sign_negative(), saturate) } else { self.encode(x.is_sign_negative(), r) }
    }

    /// f32 -> fp8 with stochastic rounding by `seed` (`v_cvt_sr_*_f32`); `saturate` as above.
    pub(crate) fn from_f32_sr(self, x: f32, seed: u32, saturate: bool) -> u8 {
        if x.is_nan() {
            return NAN8;
        }
        if x.is_infinite() {
            return self.overflow(x.is_sign_negative(), saturate);
        }
        // Add the seed's top (23 - mbits) bits below the kept mantissa bits, then truncate.
        let drop = 23 - self.mbits as u32;
        let mag = x.to_bits() & 0x7fff_ffff;
        let biased = f32::from_bits(mag.saturating_add(seed >> (32 - drop)).min(0x7f80_0000)) as f64;
        // Truncate to the format's grid (the quantum of the value's binade, or the subnormal one).
        let e = if biased >= 2f64.powi(self.emin()) { ((biased.to_bits() >> 52) & 0x7ff) as i32 - 1023 } else { self.emin() };
        let q = 2f64.powi(e - self.mbits);
        let r = (biased / q).floor() * q;
        if r > self.max() || biased.is_infinite() {
            self.overflow(x.is_sign_negative(), saturate)
        } else {
            self.encode(x.is_sign_negative(), r)
        }
    }
}

fn fmt_of(op: Op) -> Fmt {
    match op {
        Op::VCvtF32Bf8 | Op::VCvtPkF32Bf8 | Op::VCvtPkBf8F32 | Op::VCvtSrBf8F32 => BF8,
        _ => FP8,
    }
}

/// Executes an fp8/bf8 conversion, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    Some(match inst.op {
        VCvtF32Fp8 | VCvtF32Bf8 => cvt_f32(w, inst),
        VCvtPkF32Fp8 | VCvtPkF32Bf8 => cvt_pk_f32(w, inst),
        VCvtPkFp8F32 | VCvtPkBf8F32 => cvt_pk_to8(w, inst),
        VCvtSrFp8F32 | VCvtSrBf8F32 => cvt_sr_to8(w, inst),
        _ => return None,
    })
}

fn cvt_f32(w: &mut Wave, inst: &Inst) -> Exec {
    let f = fmt_of(inst.op);
    let s = fetch32(w, inst, 1, Ty::B32)?;
    let byte = if inst.enc == Enc::Vop3 { (inst.mods.op_sel & 3) as u32 } else { 0 };
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        out[l] = out32(w, inst, f.to_f32((s.v[0][l] >> (8 * byte)) as u8));
    }
    write32(w, inst, s.mask, &out)
}

fn cvt_pk_f32(w: &mut Wave, inst: &Inst) -> Exec {
    let f = fmt_of(inst.op);
    let s = fetch32(w, inst, 1, Ty::B32)?;
    let word = if inst.enc == Enc::Vop3 && inst.mods.op_sel & 1 != 0 { 16 } else { 0 };
    let mut out = [0u64; LANES];
    for l in 0..LANES {
        let h = s.v[0][l] >> word;
        let lo = out32(w, inst, f.to_f32(h as u8)) as u64;
        let hi = out32(w, inst, f.to_f32((h >> 8) as u8)) as u64;
        out[l] = lo | hi << 32;
    }
    w.write_v64(inst.dst, s.mask, &out)?;
    Ok(Flow::Next)
}

fn cvt_pk_to8(w: &mut Wave, inst: &Inst) -> Exec {
    super::require_rne(w, inst)?;
    let f = fmt_of(inst.op);
    let s = fetch32(w, inst, 2, Ty::F32)?;
    let old = *w.vreg(inst.dst)?;
    let sh = if inst.mods.op_sel & 8 != 0 { 16 } else { 0 };
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let a = f.from_f32_rne(fmod32(inst, 0, s.v[0][l]), w.mode.fp16_ovfl) as u32;
        let b = f.from_f32_rne(fmod32(inst, 1, s.v[1][l]), w.mode.fp16_ovfl) as u32;
        out[l] = (old[l] & !(0xffff << sh)) | (a | b << 8) << sh;
    }
    write32(w, inst, s.mask, &out)
}

fn cvt_sr_to8(w: &mut Wave, inst: &Inst) -> Exec {
    let f = fmt_of(inst.op);
    let s = fetch32(w, inst, 2, Ty::F32)?;
    let old = *w.vreg(inst.dst)?;
    let sh = 8 * ((inst.mods.op_sel >> 2) & 3) as u32;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        // The seed is an integer operand: only src0 takes float modifiers.
        let r = f.from_f32_sr(fmod32(inst, 0, s.v[0][l]), s.v[1][l], w.mode.fp16_ovfl) as u32;
        out[l] = (old[l] & !(0xff << sh)) | r << sh;
    }
    write32(w, inst, s.mask, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_constants() {
        assert_eq!(FP8.max(), 240.0);
        assert_eq!(BF8.max(), 57344.0);
        assert_eq!(FP8.to_f32(0x7f), 240.0);
        assert_eq!(FP8.to_f32(0x40), 1.0);
        assert_eq!(FP8.to_f32(0x01), 2f32.powi(-10));
        assert_eq!(BF8.to_f32(0x7f), 57344.0);
        assert_eq!(BF8.to_f32(0x01), 2f32.powi(-17));
        assert_eq!(BF8.to_f32(0x40), 1.0);
        assert!(FP8.to_f32(0x80).is_nan());
    }
}
