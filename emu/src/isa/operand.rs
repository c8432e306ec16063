//! Operand codes: which are valid at a given width, and how LLVM spells them.

use std::fmt::Write;

use super::form::Ty;
use super::inst::Opnd;

/// Is `code` (0..=127, the scalar register space) a register at width `w`? (The operand's
/// register class may exclude some of the named registers above s95 too: see `Fld::sx`.)
///
/// Pairs must be even and quads (and wider) 4-aligned; the named registers above s101 only
/// exist at the widths they have (vcc is 1 or 2 dwords, m0 only 1).
pub(crate) fn sreg_ok(code: u16, w: u8) -> bool {
    let w = w as u16;
    match w {
        0 | 1 => code <= 127,
        2 => {
            code == 125 || (code.is_multiple_of(2) && (code <= 100 || matches!(code, 102 | 104 | 106 | 126) || (108..=122).contains(&code)))
        }
        _ => code == 125 || (code.is_multiple_of(4) && ((code + w - 1) <= 103 || (code >= 108 && code + w - 1 <= 123))),
    }
}

/// Appends the name of scalar register `code` (0..=127) at width `w`.
pub(crate) fn sreg_name(out: &mut String, code: u16, w: u8) {
    let w = w.max(1) as u16;
    let range = |out: &mut String, p: &str, n: u16| {
        if w == 1 {
            let _ = write!(out, "{p}{n}");
        } else {
            let _ = write!(out, "{p}[{}:{}]", n, n + w - 1);
        }
    };
    match code {
        0..=101 => range(out, "s", code),
        102 => out.push_str(if w == 2 { "flat_scratch" } else { "flat_scratch_lo" }),
        103 => out.push_str("flat_scratch_hi"),
        104 => out.push_str(if w == 2 { "xnack_mask" } else { "xnack_mask_lo" }),
        105 => out.push_str("xnack_mask_hi"),
        106 => out.push_str(if w == 2 { "vcc" } else { "vcc_lo" }),
        107 => out.push_str("vcc_hi"),
        108..=123 => range(out, "ttmp", code - 108),
        124 => out.push_str("m0"),
        125 => out.push_str("null"),
        126 => out.push_str(if w == 2 { "exec" } else { "exec_lo" }),
        _ => out.push_str("exec_hi"),
    }
}

/// Appends a vector register range (`v5`, `a[0:3]`).
pub(crate) fn vreg_name(out: &mut String, prefix: char, n: u16, w: u8) {
    if w <= 1 {
        let _ = write!(out, "{prefix}{n}");
    } else {
        let _ = write!(out, "{prefix}[{}:{}]", n, n + w as u16 - 1);
    }
}

/// The special source codes that name hardware values rather than registers or constants.
pub(crate) fn special_name(code: u16) -> Option<&'static str> {
    Some(match code {
        235 => "src_shared_base",
        236 => "src_shared_limit",
        237 => "src_private_base",
        238 => "src_private_limit",
        239 => "src_pops_exiting_wave_id",
        251 => "src_vccz",
        252 => "src_execz",
        253 => "src_scc",
        254 => "src_lds_direct",
        _ => return None,
    })
}

/// Inline integer constants 128..=208.
pub(crate) fn is_inline_int(code: u16) -> bool {
    (128..=208).contains(&code)
}

/// Inline float constants 240..=248.
pub(crate) fn is_inline_float(code: u16) -> bool {
    (240..=248).contains(&code)
}

const FLOAT_TEXT: [&str; 8] = ["0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0"];
const F16_BITS: [u16; 9] = [0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118];
const F32_BITS: [u32; 9] =
    [0x3F00_0000, 0xBF00_0000, 0x3F80_0000, 0xBF80_0000, 0x4000_0000, 0xC000_0000, 0x4080_0000, 0xC080_0000, 0x3E22_F983];
const F64_HI_BITS: [u32; 8] = [0x3FE0_0000, 0xBFE0_0000, 0x3FF0_0000, 0xBFF0_0000, 0x4000_0000, 0xC000_0000, 0x4010_0000, 0xC010_0000];

/// Appends an inline constant (128..=208 or 240..=248) as LLVM prints it for type `ty`.
pub(crate) fn inline_text(out: &mut String, code: u16, ty: Ty) {
    if (128..=192).contains(&code) {
        let _ = write!(out, "{}", code - 128);
        return;
    }
    if (193..=208).contains(&code) {
        let _ = write!(out, "{}", 192 - code as i32);
        return;
    }
    let i = (code - 240) as usize;
    match ty {
        Ty::B64 | Ty::F64 => out.push_str(if i < 8 { FLOAT_TEXT[i] } else { "0.15915494309189532" }),
        // 16-bit integer operands see the f16 bit pattern of the float constant.
        Ty::I16 => {
            let _ = write!(out, "{:#x}", F16_BITS[i]);
        }
        _ => out.push_str(if i < 8 { FLOAT_TEXT[i] } else { "0.15915494" }),
    }
}

fn f32_name(v: u32) -> Option<&'static str> {
    let i = F32_BITS.iter().position(|&b| b == v)?;
    Some(if i < 8 { FLOAT_TEXT[i] } else { "0.15915494" })
}

fn f16_name(v: u32) -> Option<&'static str> {
    let i = F16_BITS.iter().position(|&b| b as u32 == v)?;
    Some(if i < 8 { FLOAT_TEXT[i] } else { "0.15915494" })
}

/// Appends a 32-bit literal as LLVM prints it for an operand of type `ty`: small integers in
/// decimal, values equal to an inline float by name, anything else in hex (truncated to the
/// bits the operand uses).
pub(crate) fn literal_text(out: &mut String, v: u32, ty: Ty) {
    let s = v as i32;
    match ty {
        Ty::B32 | Ty::I16 | Ty::V2F16 => {
            if (-16..=64).contains(&s) {
                let _ = write!(out, "{s}");
                return;
            }
            let name = match ty {
                Ty::V2F16 => f16_name(v),
                _ => f32_name(v),
            };
            if let Some(n) = name {
                out.push_str(n);
            } else if ty == Ty::I16 {
                let _ = write!(out, "{:#x}", v & 0xFFFF);
            } else {
                let _ = write!(out, "{v:#x}");
            }
        }
        Ty::B64 => {
            if v <= 64 {
                let _ = write!(out, "{v}");
            } else {
                let _ = write!(out, "{v:#x}");
            }
        }
        Ty::F64 => {
            if let Some(i) = F64_HI_BITS.iter().position(|&b| b == v) {
                out.push_str(FLOAT_TEXT[i]);
            } else if v == 0 {
                out.push('0');
            } else {
                let _ = write!(out, "{v:#x}");
            }
        }
        Ty::F16 => {
            let lo = v & 0xFFFF;
            let s16 = lo as u16 as i16;
            if (-16..=64).contains(&s16) {
                let _ = write!(out, "{s16}");
            } else if let Some(n) = f16_name(lo) {
                out.push_str(n);
            } else {
                let _ = write!(out, "{lo:#x}");
            }
        }
    }
}

/// Appends any operand: register (width `w`), inline constant, special value or literal.
pub(crate) fn opnd_text(out: &mut String, o: Opnd, w: u8, ty: Ty, literal: u32) {
    let c = o.0;
    match c {
        0..=127 => sreg_name(out, c, w),
        255 => literal_text(out, literal, ty),
        256..=511 => vreg_name(out, 'v', c - 256, w),
        512..=767 => vreg_name(out, 'a', c - 512, w),
        _ if is_inline_int(c) || is_inline_float(c) => inline_text(out, c, ty),
        _ => out.push_str(special_name(c).unwrap_or("<invalid>")),
    }
}

/// True for operands printed as a number (`neg(...)` is used instead of `-` for them).
pub(crate) fn is_constant(o: Opnd) -> bool {
    o.0 == 255 || is_inline_int(o.0) || is_inline_float(o.0)
}
