//! The arithmetic of memory atomics, shared by LDS (DS), vector memory (FLAT/GLOBAL/MUBUF) and
//! scalar memory (SMEM) instructions.
//!
//! Integer operations follow the `DS_*` pseudocode of the CDNA ISA guide (section 12.12, read in
//! the CDNA4 edition; the VMEM and SMEM atomics are documented as the same operations). Float
//! atomics follow its section 9.2 "Float Memory Atomics":
//! - adds round to nearest even;
//! - denormals: in LDS the f16/bf16/f32 adder flushes inputs and outputs per MODE, min/max/cmpst
//!   flush only their inputs per MODE (min/max return the selected input unflushed), the f64
//!   adder never flushes; in the L2 cache (global, buffer, flat-to-global) ADD_F32 flushes its
//!   input denormals and nothing else flushes (table 53);
//! - min/max: a signalling NaN input returns that NaN quieted (the memory operand checked
//!   first), otherwise a quiet NaN loses to any number, and -0 < +0;
//! - compare-swap of floats compares as floats (+0 == -0, NaN never equal).

use half::{bf16, f16};

/// An atomic read-modify-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicOp {
    /// `new = data`.
    Swap,
    /// `new = old == cmp ? src : old` (integer compare).
    CmpSwap,
    /// Like `CmpSwap` with a float compare.
    CmpSwapF32,
    /// Like `CmpSwap` with a double compare.
    CmpSwapF64,
    /// `old + data` (wrapping).
    Add,
    /// `old - data`.
    Sub,
    /// `data - old`.
    Rsub,
    /// Signed minimum.
    SMin,
    /// Unsigned minimum.
    UMin,
    /// Signed maximum.
    SMax,
    /// Unsigned maximum.
    UMax,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// `old >= data ? 0 : old + 1`.
    Inc,
    /// `old == 0 || old > data ? data : old - 1`.
    Dec,
    /// `(old & !data) | data2`.
    MskOr,
    /// `old >= data ? old - data : old + data2` (32-bit only, `ds_wrap_rtn_b32`).
    Wrap,
    /// f32 add.
    AddF32,
    /// f64 add.
    AddF64,
    /// Packed 2 x f16 add.
    PkAddF16,
    /// Packed 2 x bf16 add.
    PkAddBf16,
    /// f32 minimum.
    MinF32,
    /// f32 maximum.
    MaxF32,
    /// f64 minimum.
    MinF64,
    /// f64 maximum.
    MaxF64,
}

/// Where the atomic executes, which decides its denormal handling (ISA table 53).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// In the LDS: per MODE. `keep32`/`keep16_64` are the MODE denorm fields (bit 0: keep input
    /// denormals, bit 1: keep output denormals).
    Lds { keep32: u8, keep16_64: u8 },
    /// In the L2 cache (global memory through FLAT, GLOBAL, MUBUF, SMEM).
    L2,
}

impl AtomicOp {
    /// The operation named by the tail of a VMEM/SMEM mnemonic (`global_atomic_umax_x2` ->
    /// `umax`, wide), or `None` for a name that is not an atomic.
    pub(crate) fn from_mnemonic(name: &str) -> Option<(AtomicOp, bool)> {
        let tail = name.split("atomic_").nth(1)?;
        let (op, wide) = match tail.strip_suffix("_x2") {
            Some(t) => (t, true),
            None => (tail, false),
        };
        let a = match op {
            "swap" => AtomicOp::Swap,
            "cmpswap" => AtomicOp::CmpSwap,
            "add" => AtomicOp::Add,
            "sub" => AtomicOp::Sub,
            "smin" => AtomicOp::SMin,
            "umin" => AtomicOp::UMin,
            "smax" => AtomicOp::SMax,
            "umax" => AtomicOp::UMax,
            "and" => AtomicOp::And,
            "or" => AtomicOp::Or,
            "xor" => AtomicOp::Xor,
            "inc" => AtomicOp::Inc,
            "dec" => AtomicOp::Dec,
            "add_f32" if !wide => AtomicOp::AddF32,
            "add_f64" if !wide => return Some((AtomicOp::AddF64, true)),
            "min_f64" if !wide => return Some((AtomicOp::MinF64, true)),
            "max_f64" if !wide => return Some((AtomicOp::MaxF64, true)),
            "pk_add_f16" if !wide => AtomicOp::PkAddF16,
            "pk_add_bf16" if !wide => AtomicOp::PkAddBf16,
            _ => return None,
        };
        Some((a, wide))
    }

    /// The new memory value. `wide` selects 64-bit integer semantics; `data2` is the compare
    /// value of the compare-swaps and the second operand of `MskOr`/`Wrap`.
    pub(crate) fn apply(self, wide: bool, old: u64, data: u64, data2: u64, unit: Unit) -> u64 {
        let m = if wide { u64::MAX } else { u32::MAX as u64 };
        let (o, d) = (old & m, data & m);
        let sx = |v: u64| if wide { v as i64 } else { v as u32 as i32 as i64 };
        match self {
            AtomicOp::Swap => d,
            AtomicOp::CmpSwap => {
                if o == data2 & m {
                    d
                } else {
                    o
                }
            }
            AtomicOp::CmpSwapF32 => {
                let flush = matches!(unit, Unit::Lds { keep32, .. } if keep32 & 1 == 0);
                let (t, c) = (ftz32(f32::from_bits(o as u32), flush), ftz32(f32::from_bits(data2 as u32), flush));
                if t == c {
                    d
                } else if flush {
                    // The guide: compare-store flushes the stored result when input flushing
                    // happens.
                    t.to_bits() as u64
                } else {
                    o
                }
            }
            AtomicOp::CmpSwapF64 => {
                let flush = matches!(unit, Unit::Lds { keep16_64, .. } if keep16_64 & 1 == 0);
                let (t, c) = (ftz64(f64::from_bits(o), flush), ftz64(f64::from_bits(data2), flush));
                if t == c {
                    d
                } else if flush {
                    t.to_bits()
                } else {
                    o
                }
            }
            AtomicOp::Add => o.wrapping_add(d) & m,
            AtomicOp::Sub => o.wrapping_sub(d) & m,
            AtomicOp::Rsub => d.wrapping_sub(o) & m,
            AtomicOp::SMin => {
                if sx(d) < sx(o) {
                    d
                } else {
                    o
                }
            }
            AtomicOp::SMax => {
                if sx(d) >= sx(o) {
                    d
                } else {
                    o
                }
            }
            AtomicOp::UMin => o.min(d),
            AtomicOp::UMax => o.max(d),
            AtomicOp::And => o & d,
            AtomicOp::Or => o | d,
            AtomicOp::Xor => o ^ d,
            AtomicOp::Inc => {
                if o >= d {
                    0
                } else {
                    o + 1
                }
            }
            AtomicOp::Dec => {
                if o == 0 || o > d {
                    d
                } else {
                    o - 1
                }
            }
            AtomicOp::MskOr => (o & !d) | (data2 & m),
            AtomicOp::Wrap => {
                if o >= d {
                    o - d
                } else {
                    o.wrapping_add(data2) & m
                }
            }
            AtomicOp::AddF32 => {
                let (fi, fo) = match unit {
                    Unit::Lds { keep32, .. } => (keep32 & 1 == 0, keep32 & 2 == 0),
                    Unit::L2 => (true, false),
                };
                let a = ftz32(f32::from_bits(o as u32), fi);
                let b = ftz32(f32::from_bits(d as u32), fi);
                ftz32(a + b, fo).to_bits() as u64
            }
            AtomicOp::AddF64 => (f64::from_bits(o) + f64::from_bits(d)).to_bits(),
            AtomicOp::PkAddF16 | AtomicOp::PkAddBf16 => {
                let (fi, fo) = match unit {
                    Unit::Lds { keep16_64, .. } => (keep16_64 & 1 == 0, keep16_64 & 2 == 0),
                    Unit::L2 => (false, false),
                };
                let bf = self == AtomicOp::PkAddBf16;
                let half = |sh: u32| add16((o >> sh) as u16, (d >> sh) as u16, bf, fi, fo) as u64;
                half(0) | half(16) << 16
            }
            AtomicOp::MinF32 | AtomicOp::MaxF32 => {
                let flush = matches!(unit, Unit::Lds { keep32, .. } if keep32 & 1 == 0);
                let (a, b) = (f32::from_bits(o as u32), f32::from_bits(d as u32));
                let pick_a = select(a.is_nan(), is_snan32(a), b.is_nan(), is_snan32(b), || {
                    let (fa, fb) = (ftz32(a, flush), ftz32(b, flush));
                    min_max_pick(fa < fb, fa > fb, fa.is_sign_negative(), fb.is_sign_negative(), self == AtomicOp::MinF32)
                });
                match pick_a {
                    Pick::A => o,
                    Pick::B => d,
                    Pick::QuietA => (o as u32 | 0x0040_0000) as u64,
                    Pick::QuietB => (d as u32 | 0x0040_0000) as u64,
                }
            }
            AtomicOp::MinF64 | AtomicOp::MaxF64 => {
                let flush = matches!(unit, Unit::Lds { keep16_64, .. } if keep16_64 & 1 == 0);
                let (a, b) = (f64::from_bits(o), f64::from_bits(d));
                let pick_a = select(a.is_nan(), is_snan64(a), b.is_nan(), is_snan64(b), || {
                    let (fa, fb) = (ftz64(a, flush), ftz64(b, flush));
                    min_max_pick(fa < fb, fa > fb, fa.is_sign_negative(), fb.is_sign_negative(), self == AtomicOp::MinF64)
                });
                match pick_a {
                    Pick::A => o,
                    Pick::B => d,
                    Pick::QuietA => o | 0x0008_0000_0000_0000,
                    Pick::QuietB => d | 0x0008_0000_0000_0000,
                }
            }
        }
    }
}

enum Pick {
    A,
    B,
    QuietA,
    QuietB,
}

/// NaN rules of the memory min/max (ISA 9.2.3), then `numbers` for two non-NaN inputs.
fn select(a_nan: bool, a_snan: bool, b_nan: bool, b_snan: bool, numbers: impl Fn() -> Pick) -> Pick {
    if a_snan {
        Pick::QuietA
    } else if b_snan {
        Pick::QuietB
    } else if a_nan {
        Pick::B
    } else if b_nan {
        Pick::A
    } else {
        numbers()
    }
}

/// Min or max of two numbers with -0 < +0; ties keep the memory operand `a`.
fn min_max_pick(lt: bool, gt: bool, a_neg: bool, b_neg: bool, min: bool) -> Pick {
    let equal = !lt && !gt;
    let a_wins = if min { lt || (equal && (a_neg || !b_neg)) } else { gt || (equal && (!a_neg || b_neg)) };
    if a_wins { Pick::A } else { Pick::B }
}

fn is_snan32(x: f32) -> bool {
    x.is_nan() && x.to_bits() & 0x0040_0000 == 0
}

fn is_snan64(x: f64) -> bool {
    x.is_nan() && x.to_bits() & 0x0008_0000_0000_0000 == 0
}

fn ftz32(x: f32, flush: bool) -> f32 {
    if flush && x.is_subnormal() { 0.0f32.copysign(x) } else { x }
}

fn ftz64(x: f64, flush: bool) -> f64 {
    if flush && x.is_subnormal() { 0.0f64.copysign(x) } else { x }
}

/// One 16-bit half of a packed add. The f64 sum of two f16/bf16 values is exact or so far below
/// half an ulp of the larger operand that one rounding to 16 bits is correctly rounded.
fn add16(a: u16, b: u16, bf: bool, flush_in: bool, flush_out: bool) -> u16 {
    // Exponent field all zeros, mantissa not: a subnormal.
    let exp_mask = if bf { 0x7f80 } else { 0x7c00 };
    let sub = |x: u16| x & exp_mask == 0 && x & 0x7fff != 0;
    let to = |x: u16| -> f64 {
        let v = if bf { bf16::from_bits(x).to_f64() } else { f16::from_bits(x).to_f64() };
        if flush_in && sub(x) { 0.0f64.copysign(v) } else { v }
    };
    let s = to(a) + to(b);
    let bits = if bf { bf16::from_f64(s).to_bits() } else { f16::from_f64(s).to_bits() };
    if flush_out && sub(bits) { bits & 0x8000 } else { bits }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LDS_KEEP: Unit = Unit::Lds { keep32: 3, keep16_64: 3 };

    #[test]
    fn integer_ops_follow_the_isa_pseudocode() {
        use AtomicOp::*;
        assert_eq!(Inc.apply(false, 3, 3, 0, Unit::L2), 0);
        assert_eq!(Inc.apply(false, 2, 3, 0, Unit::L2), 3);
        assert_eq!(Dec.apply(false, 0, 7, 0, Unit::L2), 7);
        assert_eq!(Dec.apply(false, 9, 7, 0, Unit::L2), 7);
        assert_eq!(Dec.apply(false, 5, 7, 0, Unit::L2), 4);
        assert_eq!(SMin.apply(false, 5, 0xffff_ffff, 0, Unit::L2), 0xffff_ffff);
        assert_eq!(UMin.apply(false, 5, 0xffff_ffff, 0, Unit::L2), 5);
        assert_eq!(SMax.apply(true, 1, u64::MAX, 0, Unit::L2), 1);
        assert_eq!(Rsub.apply(false, 5, 3, 0, Unit::L2), 0xffff_fffe);
        assert_eq!(Add.apply(false, 0xffff_ffff, 1, 0, Unit::L2), 0);
        assert_eq!(MskOr.apply(false, 0xff, 0x0f, 0x100, Unit::L2), 0x1f0);
        assert_eq!(Wrap.apply(false, 5, 3, 10, Unit::L2), 2);
        assert_eq!(Wrap.apply(false, 2, 3, 10, Unit::L2), 12);
        assert_eq!(CmpSwap.apply(true, 7, 9, 7, Unit::L2), 9);
        assert_eq!(CmpSwap.apply(true, 8, 9, 7, Unit::L2), 8);
        assert_eq!(AtomicOp::from_mnemonic("global_atomic_umax_x2"), Some((UMax, true)));
        assert_eq!(AtomicOp::from_mnemonic("flat_atomic_add_f64"), Some((AddF64, true)));
        assert_eq!(AtomicOp::from_mnemonic("s_buffer_atomic_cmpswap"), Some((CmpSwap, false)));
        assert_eq!(AtomicOp::from_mnemonic("global_atomic_frob"), None);
    }

    #[test]
    fn float_atomics_follow_section_9_2() {
        use AtomicOp::*;
        let den = f32::from_bits(1);
        // L2 ADD_F32 flushes input denormals; LDS keeps them when MODE says so.
        assert_eq!(AddF32.apply(false, den.to_bits() as u64, 0, 0, Unit::L2), 0);
        assert_eq!(AddF32.apply(false, den.to_bits() as u64, 0, 0, LDS_KEEP), 1);
        assert_eq!(f32::from_bits(AddF32.apply(false, 1.5f32.to_bits() as u64, 2.25f32.to_bits() as u64, 0, Unit::L2) as u32), 3.75);
        // min/max: quiet NaN loses, signalling NaN wins quieted, -0 < +0.
        let qnan = f32::NAN.to_bits() as u64;
        let snan = 0x7f80_0001u64;
        assert_eq!(MaxF32.apply(false, qnan, 2f32.to_bits() as u64, 0, LDS_KEEP), 2f32.to_bits() as u64);
        assert_eq!(MinF32.apply(false, 2f32.to_bits() as u64, qnan, 0, LDS_KEEP), 2f32.to_bits() as u64);
        assert_eq!(MinF32.apply(false, snan, 2f32.to_bits() as u64, 0, LDS_KEEP), 0x7fc0_0001);
        assert_eq!(MaxF32.apply(false, 0x8000_0000, 0, 0, LDS_KEEP), 0);
        assert_eq!(MinF32.apply(false, 0, 0x8000_0000, 0, LDS_KEEP), 0x8000_0000);
        assert_eq!(f64::from_bits(MaxF64.apply(true, 1f64.to_bits(), (-3f64).to_bits(), 0, Unit::L2)), 1.0);
        // Float compare-swap: +0 == -0.
        assert_eq!(CmpSwapF32.apply(false, 0x8000_0000, 5, 0, LDS_KEEP), 5);
        // Packed halves round once: 1 + 2^-11 in f16 is a tie that rounds to even (1.0).
        let one = f16::from_f32(1.0).to_bits() as u64;
        let tiny = f16::from_f64(2f64.powi(-11)).to_bits() as u64;
        assert_eq!(
            PkAddF16.apply(false, one | one << 16, tiny | one << 16, 0, Unit::L2),
            one | (f16::from_f32(2.0).to_bits() as u64) << 16
        );
        let b = bf16::from_f32(1.5).to_bits() as u64;
        assert_eq!(PkAddBf16.apply(false, b, b, 0, Unit::L2), bf16::from_f32(3.0).to_bits() as u64);
    }
}
