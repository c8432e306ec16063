//! Element types of model files, how each maps onto a device [`DType`], and the in-place
//! conversions a load may apply in the bounce buffers for the types ferrocm cannot hold.

use crate::dtype::{DType, Fp8E4M3Fnuz, Fp8E5M2Fnuz};
use crate::error::ModelFileError;

/// Which conversions a load may apply to element types ferrocm cannot hold on the device. Each
/// is off by default: such a tensor is then an error naming it and its type.
///
/// Get one with [`Conversions::none`] (the default) or [`Conversions::all`], then adjust the
/// fields; pass it with [`LoadOptions::convert`](crate::io::LoadOptions::convert).
///
/// ```
/// use ferrocm::io::{Conversions, Fp8Conversion};
/// let c = Conversions { i64_to_i32: true, ..Conversions::none() };
/// assert!(!c.f64_to_f32);
/// assert_eq!(Conversions::all().fp8, Some(Fp8Conversion::SameBits));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conversions {
    /// F64 -> f32, rounded to nearest (beyond the f32 range: infinity).
    pub f64_to_f32: bool,
    /// I64 -> i32; a value outside the i32 range is an error naming the tensor and element.
    pub i64_to_i32: bool,
    /// I16 -> i32 (exact).
    pub i16_to_i32: bool,
    /// U8 -> i8; a value above 127 is an error naming the tensor and element.
    pub u8_to_i8: bool,
    /// BOOL -> i8 (0 or 1; any non-zero byte is true).
    pub bool_to_i8: bool,
    /// OCP fp8 (safetensors `F8_E4M3` = E4M3FN and `F8_E5M2`) -> gfx942's FNUZ formats.
    pub fp8: Option<Fp8Conversion>,
}

impl Conversions {
    /// No conversion: every type ferrocm cannot hold is an error.
    pub const fn none() -> Conversions {
        Conversions { f64_to_f32: false, i64_to_i32: false, i16_to_i32: false, u8_to_i8: false, bool_to_i8: false, fp8: None }
    }

    /// Every conversion, fp8 as [`Fp8Conversion::SameBits`] (the one that loses nothing).
    pub const fn all() -> Conversions {
        Conversions {
            f64_to_f32: true,
            i64_to_i32: true,
            i16_to_i32: true,
            u8_to_i8: true,
            bool_to_i8: true,
            fp8: Some(Fp8Conversion::SameBits),
        }
    }
}

/// How OCP fp8 (E4M3FN, E5M2: NVIDIA's and gfx950's) becomes gfx942's FNUZ fp8.
///
/// The FNUZ formats have an exponent bias one larger, so **the same bits mean half the value**.
/// See [`Fp8E4M3Fnuz::from_e4m3fn_bits`] and the README's fp8 note.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8Conversion {
    /// Keep the bits: every device value is exactly half the file's, so the tensor's scale must
    /// be doubled ([`Weights::value_scale`](crate::io::Weights::value_scale) reports 2.0). Nothing is
    /// rounded or clipped: the usual way for block-scaled fp8 checkpoints (their E4M3 weights use
    /// the whole +-448 range, beyond FNUZ's 240). NaNs become the FNUZ NaN (0x80), OCP's -0
    /// becomes 0; E5M2 infinities, which FNUZ lacks, become NaN.
    SameBits,
    /// Keep the values (exactly: every OCP value within the FNUZ range is representable). An
    /// E4M3 value beyond +-240 or an E5M2 infinity is an error naming the tensor and element.
    SameValues,
}

/// An element type as a model file stores it (safetensors dtypes, GGML's unquantized types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileType {
    F64,
    F32,
    F16,
    Bf16,
    I64,
    I32,
    U32,
    I16,
    I8,
    U8,
    Bool,
    /// OCP E4M3FN.
    F8E4M3,
    /// OCP E5M2.
    F8E5M2,
    F8E4M3Fnuz,
    F8E5M2Fnuz,
}

impl FileType {
    /// The device type and the conversion to get there, per the caller's `conversions`.
    ///
    /// # Errors
    /// [`ModelFileError::UnsupportedDType`] naming the conversion that would allow it.
    pub(crate) fn plan(self, name: &str, conversions: &Conversions) -> Result<(DType, Convert), ModelFileError> {
        let refuse = |field: &str| ModelFileError::UnsupportedDType {
            dtype: name.to_string(),
            hint: format!("allow the conversion with LoadOptions::convert (Conversions {{ {field}, .. }})"),
        };
        Ok(match self {
            FileType::F32 => (DType::F32, Convert::Copy),
            FileType::F16 => (DType::F16, Convert::Copy),
            FileType::Bf16 => (DType::Bf16, Convert::Copy),
            FileType::I32 => (DType::I32, Convert::Copy),
            FileType::U32 => (DType::U32, Convert::Copy),
            FileType::I8 => (DType::I8, Convert::Copy),
            FileType::F8E4M3Fnuz => (DType::Fp8E4M3Fnuz, Convert::Copy),
            FileType::F8E5M2Fnuz => (DType::Fp8E5M2Fnuz, Convert::Copy),
            FileType::F64 if conversions.f64_to_f32 => (DType::F32, Convert::F64ToF32),
            FileType::F64 => return Err(refuse("f64_to_f32: true")),
            FileType::I64 if conversions.i64_to_i32 => (DType::I32, Convert::I64ToI32),
            FileType::I64 => return Err(refuse("i64_to_i32: true")),
            FileType::I16 if conversions.i16_to_i32 => (DType::I32, Convert::I16ToI32),
            FileType::I16 => return Err(refuse("i16_to_i32: true")),
            FileType::U8 if conversions.u8_to_i8 => (DType::I8, Convert::U8ToI8),
            FileType::U8 => return Err(refuse("u8_to_i8: true")),
            FileType::Bool if conversions.bool_to_i8 => (DType::I8, Convert::BoolToI8),
            FileType::Bool => return Err(refuse("bool_to_i8: true")),
            FileType::F8E4M3 => match conversions.fp8 {
                Some(Fp8Conversion::SameBits) => (DType::Fp8E4M3Fnuz, Convert::E4m3fnBits),
                Some(Fp8Conversion::SameValues) => (DType::Fp8E4M3Fnuz, Convert::E4m3fnValues),
                None => return Err(refuse("fp8: Some(Fp8Conversion::SameBits)")),
            },
            FileType::F8E5M2 => match conversions.fp8 {
                Some(Fp8Conversion::SameBits) => (DType::Fp8E5M2Fnuz, Convert::E5m2Bits),
                Some(Fp8Conversion::SameValues) => (DType::Fp8E5M2Fnuz, Convert::E5m2Values),
                None => return Err(refuse("fp8: Some(Fp8Conversion::SameBits)")),
            },
        })
    }
}

/// One element-wise conversion, applied in place in a bounce buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Convert {
    Copy,
    F64ToF32,
    I64ToI32,
    I16ToI32,
    U8ToI8,
    BoolToI8,
    E4m3fnBits,
    E4m3fnValues,
    E5m2Bits,
    E5m2Values,
}

impl Convert {
    /// (bytes per element in the file, bytes per element on the device).
    pub(crate) const fn sizes(self) -> (usize, usize) {
        match self {
            Convert::Copy => (1, 1),
            Convert::F64ToF32 | Convert::I64ToI32 => (8, 4),
            Convert::I16ToI32 => (2, 4),
            _ => (1, 1),
        }
    }

    /// The name used in messages.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Convert::Copy => "none",
            Convert::F64ToF32 => "f64->f32",
            Convert::I64ToI32 => "i64->i32",
            Convert::I16ToI32 => "i16->i32",
            Convert::U8ToI8 => "u8->i8",
            Convert::BoolToI8 => "bool->i8",
            Convert::E4m3fnBits => "e4m3fn->e4m3fnuz (same bits)",
            Convert::E4m3fnValues => "e4m3fn->e4m3fnuz (same values)",
            Convert::E5m2Bits => "e5m2->e5m2fnuz (same bits)",
            Convert::E5m2Values => "e5m2->e5m2fnuz (same values)",
        }
    }

    /// What a device value must be multiplied by to give the file's value.
    pub(crate) const fn value_scale(self) -> f32 {
        match self {
            Convert::E4m3fnBits | Convert::E5m2Bits => 2.0,
            _ => 1.0,
        }
    }

    /// Converts the `len` file bytes at the start of `buf` in place; returns the device bytes
    /// now at the start of `buf`. `first_elem` is the index of the first element in its tensor
    /// (for messages). A growing conversion needs `buf` to hold the result.
    ///
    /// # Errors
    /// A value the conversion cannot represent: [`ModelFileError::Conversion`].
    pub(crate) fn apply(self, buf: &mut [u8], len: usize, first_elem: u64) -> Result<usize, ModelFileError> {
        let (src, dst) = self.sizes();
        let n = len / src;
        let bad = |i: usize, what: String| ModelFileError::Conversion {
            conversion: self.name(),
            message: format!("element {} {what}", first_elem + i as u64),
        };
        match self {
            Convert::Copy => {}
            // Shrinking conversions walk forward: element i is written at i*dst <= i*src, after
            // element i has been read, so nothing unread is overwritten.
            Convert::F64ToF32 => {
                for i in 0..n {
                    let v = f64::from_le_bytes(take(buf, i * 8));
                    buf[i * 4..i * 4 + 4].copy_from_slice(&(v as f32).to_le_bytes());
                }
            }
            Convert::I64ToI32 => {
                for i in 0..n {
                    let v = i64::from_le_bytes(take(buf, i * 8));
                    let w = i32::try_from(v).map_err(|_| bad(i, format!("is {v}, outside the i32 range")))?;
                    buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
                }
            }
            // The growing one walks backward: element i goes to i*4 >= i*2, and every element
            // above i was already read.
            Convert::I16ToI32 => {
                for i in (0..n).rev() {
                    let v = i16::from_le_bytes(take(buf, i * 2));
                    buf[i * 4..i * 4 + 4].copy_from_slice(&(v as i32).to_le_bytes());
                }
            }
            Convert::U8ToI8 => {
                if let Some(i) = buf[..n].iter().position(|&b| b > 127) {
                    return Err(bad(i, format!("is {}, above i8's 127", buf[i])));
                }
            }
            Convert::BoolToI8 => buf[..n].iter_mut().for_each(|b| *b = (*b != 0) as u8),
            Convert::E4m3fnBits => buf[..n].iter_mut().for_each(|b| *b = Fp8E4M3Fnuz::from_e4m3fn_bits(*b).0),
            Convert::E5m2Bits => buf[..n].iter_mut().for_each(|b| *b = e5m2_bits_to_fnuz(*b)),
            Convert::E4m3fnValues | Convert::E5m2Values => {
                let table = if self == Convert::E4m3fnValues { e4m3fn_value_table() } else { e5m2_value_table() };
                for i in 0..n {
                    let code = buf[i];
                    buf[i] = table[code as usize].ok_or_else(|| bad(i, format!("(bits {code:#04x}) has no FNUZ equivalent")))?;
                }
            }
        }
        Ok(n * dst)
    }
}

fn take<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&buf[at..at + N]);
    a
}

/// OCP E4M3FN (bias 7, no infinities, S.1111.111 NaN) to f32.
pub(crate) fn e4m3fn_to_f32(b: u8) -> f32 {
    let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((b >> 3) & 0xf) as i32, (b & 7) as f32);
    if e == 15 && m == 7.0 {
        f32::NAN
    } else if e == 0 {
        s * m / 8.0 * 2f32.powi(-6)
    } else {
        s * (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// OCP E5M2 (bias 15, IEEE-like: exponent 31 is infinity or NaN) to f32.
pub(crate) fn e5m2_to_f32(b: u8) -> f32 {
    let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((b >> 2) & 0x1f) as i32, (b & 3) as f32);
    match (e, m) {
        (31, m) if m == 0.0 => s * f32::INFINITY,
        (31, _) => f32::NAN,
        (0, m) => s * m / 4.0 * 2f32.powi(-14),
        (e, m) => s * (1.0 + m / 4.0) * 2f32.powi(e - 15),
    }
}

/// OCP E5M2 bits as E5M2FNUZ bits: the same code (half the value), except NaNs and infinities
/// (exponent 31, which FNUZ uses for finite values) become the FNUZ NaN and -0 becomes 0.
pub(crate) const fn e5m2_bits_to_fnuz(b: u8) -> u8 {
    if b & 0x7c == 0x7c {
        0x80
    } else if b == 0x80 {
        0
    } else {
        b
    }
}

/// For each OCP E4M3FN code, the E4M3FNUZ code of the same value (`None`: beyond +-240).
fn e4m3fn_value_table() -> &'static [Option<u8>; 256] {
    static T: std::sync::OnceLock<[Option<u8>; 256]> = std::sync::OnceLock::new();
    T.get_or_init(|| same_value_table(e4m3fn_to_f32, |v| Fp8E4M3Fnuz::from_f32(v).0, |c| Fp8E4M3Fnuz(c).to_f32()))
}

/// For each OCP E5M2 code, the E5M2FNUZ code of the same value (`None`: an infinity).
fn e5m2_value_table() -> &'static [Option<u8>; 256] {
    static T: std::sync::OnceLock<[Option<u8>; 256]> = std::sync::OnceLock::new();
    T.get_or_init(|| same_value_table(e5m2_to_f32, |v| Fp8E5M2Fnuz::from_f32(v).0, |c| Fp8E5M2Fnuz(c).to_f32()))
}

/// A code keeps its value only where the FNUZ encoding decodes back exactly; NaN stays NaN.
fn same_value_table(decode: fn(u8) -> f32, encode: fn(f32) -> u8, back: fn(u8) -> f32) -> [Option<u8>; 256] {
    let mut t = [None; 256];
    for (b, slot) in t.iter_mut().enumerate() {
        let v = decode(b as u8);
        *slot = if v.is_nan() {
            Some(0x80)
        } else {
            let c = encode(v);
            (back(c) == v).then_some(c)
        };
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrinking_and_growing_conversions_in_place() {
        let vals = [1.5f64, -2.25, 1e300];
        let mut buf: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(Convert::F64ToF32.apply(&mut buf, 24, 0).unwrap(), 12);
        let got: Vec<f32> = buf[..12].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, vec![1.5, -2.25, f32::INFINITY]);

        let mut buf: Vec<u8> = [-3i16, 32767, -32768].iter().flat_map(|v| v.to_le_bytes()).collect();
        buf.resize(12, 0xee);
        assert_eq!(Convert::I16ToI32.apply(&mut buf, 6, 0).unwrap(), 12);
        let got: Vec<i32> = buf.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, vec![-3, 32767, -32768]);
    }

    #[test]
    fn range_checked_conversions_name_the_element() {
        let mut buf: Vec<u8> = [5i64, 1 << 40].iter().flat_map(|v| v.to_le_bytes()).collect();
        let e = Convert::I64ToI32.apply(&mut buf, 16, 100).unwrap_err().to_string();
        assert!(e.contains("element 101") && e.contains("1099511627776"), "{e}");
        let mut buf = vec![1u8, 200];
        let e = Convert::U8ToI8.apply(&mut buf, 2, 0).unwrap_err().to_string();
        assert!(e.contains("element 1") && e.contains("200"), "{e}");
    }

    #[test]
    fn fp8_same_values_is_exact_and_same_bits_halves() {
        for b in 0..=255u8 {
            let v = e4m3fn_to_f32(b);
            match e4m3fn_value_table()[b as usize] {
                Some(c) if v.is_nan() => assert_eq!(c, 0x80),
                Some(c) => assert_eq!(Fp8E4M3Fnuz(c).to_f32(), v, "{b:#x}"),
                None => assert!(v.abs() > 240.0, "{b:#x} = {v}"),
            }
            let v5 = e5m2_to_f32(b);
            match e5m2_value_table()[b as usize] {
                Some(c) if v5.is_nan() => assert_eq!(c, 0x80),
                Some(c) => assert_eq!(Fp8E5M2Fnuz(c).to_f32(), v5, "{b:#x}"),
                None => assert!(v5.is_infinite(), "{b:#x} = {v5}"),
            }
            let half = Fp8E5M2Fnuz(e5m2_bits_to_fnuz(b)).to_f32();
            assert!(if v5.is_finite() { half * 2.0 == v5 } else { half.is_nan() }, "{b:#x}");
        }
        assert_eq!(e4m3fn_to_f32(0x7e), 448.0);
        assert_eq!(e5m2_to_f32(0x7b), 57344.0);
    }
}
