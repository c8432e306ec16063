//! Vector compares (VOPC and their VOP3 forms): a lane mask to VCC or an SGPR pair; the `cmpx`
//! forms also write EXEC. Lanes EXEC disables produce 0.
//!
//! Float conditions: F, LT, EQ, LE, GT, LG, GE, O (ordered), U (unordered), and the negations
//! NGE, NLG, NGT, NLE, NEQ, NLT (true when unordered), TRU. Integer: F, LT, EQ, LE, GT, NE, GE, T.

use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::{fetch32, fmod16, fmod32, fmod64, sdst_of};
use crate::isa::{Ext, Inst, Op};
use half::f16;

#[derive(Clone, Copy)]
enum Cond {
    F,
    Lt,
    Eq,
    Le,
    Gt,
    Lg,
    Ge,
    O,
    U,
    Nge,
    Nlg,
    Ngt,
    Nle,
    Neq,
    Nlt,
    Tru,
}

#[derive(Clone, Copy)]
enum Kind {
    F16,
    F32,
    F64,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

fn fcmp(c: Cond, a: f64, b: f64) -> bool {
    let un = a.is_nan() || b.is_nan();
    match c {
        Cond::F => false,
        Cond::Lt => a < b,
        Cond::Eq => a == b,
        Cond::Le => a <= b,
        Cond::Gt => a > b,
        Cond::Lg => a < b || a > b,
        Cond::Ge => a >= b,
        Cond::O => !un,
        Cond::U => un,
        Cond::Nge => !(a >= b),
        Cond::Nlg => !(a < b || a > b),
        Cond::Ngt => !(a > b),
        Cond::Nle => !(a <= b),
        Cond::Neq => a != b,
        Cond::Nlt => !(a < b),
        Cond::Tru => true,
    }
}

/// Integer compares reuse the float condition codes F, LT, EQ, LE, GT, LG (= NE), GE, TRU (= T).
fn icmp<T: Ord>(c: Cond, a: T, b: T) -> bool {
    match c {
        Cond::F => false,
        Cond::Lt => a < b,
        Cond::Eq => a == b,
        Cond::Le => a <= b,
        Cond::Gt => a > b,
        Cond::Lg => a != b,
        Cond::Ge => a >= b,
        _ => true,
    }
}

/// `v_cmp_class`: is the value in one of the classes the mask selects?
pub(crate) fn class_bits(sign: bool, nan: Option<bool>, inf: bool, zero: bool, denorm: bool) -> u32 {
    match (nan, inf, zero, denorm, sign) {
        (Some(quiet), ..) => {
            if quiet {
                1 << 1
            } else {
                1 << 0
            }
        }
        (None, true, _, _, true) => 1 << 2,
        (None, true, _, _, false) => 1 << 9,
        (None, _, true, _, true) => 1 << 5,
        (None, _, true, _, false) => 1 << 6,
        (None, _, _, true, true) => 1 << 4,
        (None, _, _, true, false) => 1 << 7,
        (None, _, _, _, true) => 1 << 3,
        (None, _, _, _, false) => 1 << 8,
    }
}

fn class32(x: f32) -> u32 {
    let nan = x.is_nan().then(|| x.to_bits() & 0x0040_0000 != 0);
    class_bits(x.is_sign_negative(), nan, x.is_infinite(), x == 0.0, x.is_subnormal())
}

fn class64(x: f64) -> u32 {
    let nan = x.is_nan().then(|| x.to_bits() & (1 << 51) != 0);
    class_bits(x.is_sign_negative(), nan, x.is_infinite(), x == 0.0, x.is_subnormal())
}

fn class16(b: u16) -> u32 {
    let x = f16::from_bits(b);
    let nan = x.is_nan().then(|| b & 0x0200 != 0);
    class_bits(x.is_sign_negative(), nan, x.is_infinite(), b & 0x7fff == 0, b & 0x7c00 == 0 && b & 0x3ff != 0)
}

fn finish(w: &mut Wave, inst: &Inst, exec: u64, bits: u64, write_exec: bool) -> Exec {
    let bits = bits & exec;
    w.set_s64(sdst_of(inst), bits)?;
    if write_exec {
        w.set_exec(bits);
    }
    Ok(Flow::Next)
}

fn compare(w: &mut Wave, inst: &Inst, kind: Kind, cond: Cond, write_exec: bool) -> Exec {
    let mut bits = 0u64;
    let exec;
    match kind {
        Kind::F64 | Kind::I64 | Kind::U64 => {
            if inst.ext != Ext::None {
                return Err(super::super::step::not_implemented(inst));
            }
            exec = w.exec();
            let ty = match kind {
                Kind::F64 => Ty::F64,
                Kind::I64 => Ty::I64,
                _ => Ty::U64,
            };
            let a = w.src64_of(inst, 0, ty)?;
            let b = w.src64_of(inst, 1, ty)?;
            for l in 0..LANES {
                let r = match kind {
                    Kind::F64 => fcmp(cond, fmod64(inst, 0, a.get(l)), fmod64(inst, 1, b.get(l))),
                    Kind::I64 => icmp(cond, a.get(l) as i64, b.get(l) as i64),
                    _ => icmp(cond, a.get(l), b.get(l)),
                };
                bits |= (r as u64) << l;
            }
        }
        _ => {
            let ty = match kind {
                Kind::F16 => Ty::F16,
                Kind::I16 | Kind::U16 => Ty::B16,
                Kind::F32 => Ty::F32,
                _ => Ty::B32,
            };
            let s = fetch32(w, inst, 2, ty)?;
            exec = s.mask;
            for l in 0..LANES {
                let (a, b) = (s.v[0][l], s.v[1][l]);
                let r = match kind {
                    Kind::F32 => fcmp(cond, fmod32(inst, 0, a) as f64, fmod32(inst, 1, b) as f64),
                    Kind::F16 => fcmp(cond, f16::from_bits(fmod16(inst, 0, a)).to_f64(), f16::from_bits(fmod16(inst, 1, b)).to_f64()),
                    Kind::I16 => icmp(cond, a as u16 as i16, b as u16 as i16),
                    Kind::U16 => icmp(cond, a as u16, b as u16),
                    Kind::I32 => icmp(cond, a as i32, b as i32),
                    _ => icmp(cond, a, b),
                };
                bits |= (r as u64) << l;
            }
        }
    }
    finish(w, inst, exec, bits, write_exec)
}

fn class(w: &mut Wave, inst: &Inst, kind: Kind, write_exec: bool) -> Exec {
    let mut bits = 0u64;
    let exec;
    if let Kind::F64 = kind {
        exec = w.exec();
        let a = w.src64_of(inst, 0, Ty::F64)?;
        let m = w.src32_of(inst, 1, Ty::B32)?;
        for l in 0..LANES {
            bits |= ((class64(fmod64(inst, 0, a.get(l))) & m.get(l) != 0) as u64) << l;
        }
    } else {
        let s = fetch32(w, inst, 2, if let Kind::F16 = kind { Ty::F16 } else { Ty::F32 })?;
        exec = s.mask;
        for l in 0..LANES {
            let c = match kind {
                Kind::F16 => class16(fmod16(inst, 0, s.v[0][l])),
                _ => class32(fmod32(inst, 0, s.v[0][l])),
            };
            bits |= ((c & s.v[1][l] != 0) as u64) << l;
        }
    }
    finish(w, inst, exec, bits, write_exec)
}

macro_rules! cmp_table {
    ($w:ident, $inst:ident; $( $kind:ident: [$( ($cmp:ident, $cmpx:ident, $cond:ident) ),* $(,)?] )*) => {
        match $inst.op {
            $( $(
                Op::$cmp => compare($w, $inst, Kind::$kind, Cond::$cond, false),
                Op::$cmpx => compare($w, $inst, Kind::$kind, Cond::$cond, true),
            )* )*
            Op::VCmpClassF32 => class($w, $inst, Kind::F32, false),
            Op::VCmpxClassF32 => class($w, $inst, Kind::F32, true),
            Op::VCmpClassF64 => class($w, $inst, Kind::F64, false),
            Op::VCmpxClassF64 => class($w, $inst, Kind::F64, true),
            Op::VCmpClassF16 => class($w, $inst, Kind::F16, false),
            Op::VCmpxClassF16 => class($w, $inst, Kind::F16, true),
            _ => return None,
        }
    };
}

/// Executes a compare, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    Some(cmp_table! { w, inst;
        F32: [
            (VCmpFF32, VCmpxFF32, F), (VCmpLtF32, VCmpxLtF32, Lt), (VCmpEqF32, VCmpxEqF32, Eq),
            (VCmpLeF32, VCmpxLeF32, Le), (VCmpGtF32, VCmpxGtF32, Gt), (VCmpLgF32, VCmpxLgF32, Lg),
            (VCmpGeF32, VCmpxGeF32, Ge), (VCmpOF32, VCmpxOF32, O), (VCmpUF32, VCmpxUF32, U),
            (VCmpNgeF32, VCmpxNgeF32, Nge), (VCmpNlgF32, VCmpxNlgF32, Nlg), (VCmpNgtF32, VCmpxNgtF32, Ngt),
            (VCmpNleF32, VCmpxNleF32, Nle), (VCmpNeqF32, VCmpxNeqF32, Neq), (VCmpNltF32, VCmpxNltF32, Nlt),
            (VCmpTruF32, VCmpxTruF32, Tru),
        ]
        F64: [
            (VCmpFF64, VCmpxFF64, F), (VCmpLtF64, VCmpxLtF64, Lt), (VCmpEqF64, VCmpxEqF64, Eq),
            (VCmpLeF64, VCmpxLeF64, Le), (VCmpGtF64, VCmpxGtF64, Gt), (VCmpLgF64, VCmpxLgF64, Lg),
            (VCmpGeF64, VCmpxGeF64, Ge), (VCmpOF64, VCmpxOF64, O), (VCmpUF64, VCmpxUF64, U),
            (VCmpNgeF64, VCmpxNgeF64, Nge), (VCmpNlgF64, VCmpxNlgF64, Nlg), (VCmpNgtF64, VCmpxNgtF64, Ngt),
            (VCmpNleF64, VCmpxNleF64, Nle), (VCmpNeqF64, VCmpxNeqF64, Neq), (VCmpNltF64, VCmpxNltF64, Nlt),
            (VCmpTruF64, VCmpxTruF64, Tru),
        ]
        F16: [
            (VCmpFF16, VCmpxFF16, F), (VCmpLtF16, VCmpxLtF16, Lt), (VCmpEqF16, VCmpxEqF16, Eq),
            (VCmpLeF16, VCmpxLeF16, Le), (VCmpGtF16, VCmpxGtF16, Gt), (VCmpLgF16, VCmpxLgF16, Lg),
            (VCmpGeF16, VCmpxGeF16, Ge), (VCmpOF16, VCmpxOF16, O), (VCmpUF16, VCmpxUF16, U),
            (VCmpNgeF16, VCmpxNgeF16, Nge), (VCmpNlgF16, VCmpxNlgF16, Nlg), (VCmpNgtF16, VCmpxNgtF16, Ngt),
            (VCmpNleF16, VCmpxNleF16, Nle), (VCmpNeqF16, VCmpxNeqF16, Neq), (VCmpNltF16, VCmpxNltF16, Nlt),
            (VCmpTruF16, VCmpxTruF16, Tru),
        ]
        I32: [
            (VCmpFI32, VCmpxFI32, F), (VCmpLtI32, VCmpxLtI32, Lt), (VCmpEqI32, VCmpxEqI32, Eq),
            (VCmpLeI32, VCmpxLeI32, Le), (VCmpGtI32, VCmpxGtI32, Gt), (VCmpNeI32, VCmpxNeI32, Lg),
            (VCmpGeI32, VCmpxGeI32, Ge), (VCmpTI32, VCmpxTI32, Tru),
        ]
        U32: [
            (VCmpFU32, VCmpxFU32, F), (VCmpLtU32, VCmpxLtU32, Lt), (VCmpEqU32, VCmpxEqU32, Eq),
            (VCmpLeU32, VCmpxLeU32, Le), (VCmpGtU32, VCmpxGtU32, Gt), (VCmpNeU32, VCmpxNeU32, Lg),
            (VCmpGeU32, VCmpxGeU32, Ge), (VCmpTU32, VCmpxTU32, Tru),
        ]
        I64: [
            (VCmpFI64, VCmpxFI64, F), (VCmpLtI64, VCmpxLtI64, Lt), (VCmpEqI64, VCmpxEqI64, Eq),
            (VCmpLeI64, VCmpxLeI64, Le), (VCmpGtI64, VCmpxGtI64, Gt), (VCmpNeI64, VCmpxNeI64, Lg),
            (VCmpGeI64, VCmpxGeI64, Ge), (VCmpTI64, VCmpxTI64, Tru),
        ]
        U64: [
            (VCmpFU64, VCmpxFU64, F), (VCmpLtU64, VCmpxLtU64, Lt), (VCmpEqU64, VCmpxEqU64, Eq),
            (VCmpLeU64, VCmpxLeU64, Le), (VCmpGtU64, VCmpxGtU64, Gt), (VCmpNeU64, VCmpxNeU64, Lg),
            (VCmpGeU64, VCmpxGeU64, Ge), (VCmpTU64, VCmpxTU64, Tru),
        ]
        I16: [
            (VCmpFI16, VCmpxFI16, F), (VCmpLtI16, VCmpxLtI16, Lt), (VCmpEqI16, VCmpxEqI16, Eq),
            (VCmpLeI16, VCmpxLeI16, Le), (VCmpGtI16, VCmpxGtI16, Gt), (VCmpNeI16, VCmpxNeI16, Lg),
            (VCmpGeI16, VCmpxGeI16, Ge), (VCmpTI16, VCmpxTI16, Tru),
        ]
        U16: [
            (VCmpFU16, VCmpxFU16, F), (VCmpLtU16, VCmpxLtU16, Lt), (VCmpEqU16, VCmpxEqU16, Eq),
            (VCmpLeU16, VCmpxLeU16, Le), (VCmpGtU16, VCmpxGtU16, Gt), (VCmpNeU16, VCmpxNeU16, Lg),
            (VCmpGeU16, VCmpxGeU16, Ge), (VCmpTU16, VCmpxTU16, Tru),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_conditions_handle_nan() {
        assert!(!fcmp(Cond::Lt, f64::NAN, 1.0));
        assert!(fcmp(Cond::Nge, f64::NAN, 1.0));
        assert!(fcmp(Cond::U, f64::NAN, 1.0));
        assert!(fcmp(Cond::Neq, f64::NAN, f64::NAN));
        assert!(!fcmp(Cond::Lg, 1.0, 1.0));
    }

    #[test]
    fn classes() {
        assert_eq!(class32(f32::NEG_INFINITY), 1 << 2);
        assert_eq!(class32(-0.0), 1 << 5);
        assert_eq!(class32(f32::from_bits(1)), 1 << 7);
        assert_eq!(class32(f32::NAN), 1 << 1);
        assert_eq!(class32(f32::from_bits(0x7f80_0001)), 1 << 0);
        assert_eq!(class64(-3.0), 1 << 3);
        assert_eq!(class16(0x3c00), 1 << 8);
    }
}
