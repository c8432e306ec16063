//! A CPU quantizer for the 32-weight formats, so tests and tools can make quantized weights.
//!
//! The rules are ggml's reference quantizers (`quantize_row_*_ref`, mirrored by the `gguf`
//! package's `quants.py`), in f32 as they compute: the scale from the block's extreme value(s),
//! its reciprocal taken before the scale is rounded to f16, codes truncated after adding a
//! half (Q8_0: rounded half away from zero). The k-quants' quantizers (a per-sub-block search)
//! are not implemented: their blocks come from GGUF files.

use super::QuantFormat;
use crate::error::{Error, Result};
use half::f16;

fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_le_bytes()
}

fn recip(d: f32) -> f32 {
    if d == 0.0 { 0.0 } else { 1.0 / d }
}

/// Packs 32 codes (< 16, or their low nibbles) two per byte: codes 0..16 low, 16..32 high.
fn pack_nibbles(q: &[u8; 32]) -> [u8; 16] {
    std::array::from_fn(|i| (q[i] & 0x0F) | (q[i + 16] << 4))
}

/// Bit `e` of the result is bit 4 of code `e`.
fn high_bits(q: &[u8; 32]) -> [u8; 4] {
    let mut bits = 0u32;
    for (e, &c) in q.iter().enumerate() {
        bits |= ((c >> 4) as u32 & 1) << e;
    }
    bits.to_le_bytes()
}

/// The value of largest magnitude (the first one on ties), with its sign.
fn signed_absmax(x: &[f32]) -> f32 {
    x.iter().copied().fold(0.0f32, |best, v| if v.abs() > best.abs() { v } else { best })
}

/// `values` (a multiple of 32 of them) as blocks of `format`.
///
/// # Errors
/// [`Error::Shape`] for a length that is not a multiple of 32; [`Error::Unsupported`] for the
/// k-quant formats.
pub fn quantize(format: QuantFormat, values: &[f32]) -> Result<Vec<u8>> {
    if format.block_elems() != 32 {
        return Err(Error::Unsupported { op: "quantize", what: format!("quantizing to {format} (k-quant blocks come from GGUF files)") });
    }
    if values.len() % 32 != 0 {
        return Err(Error::Shape { op: "quantize", message: format!("{} values are not whole blocks of 32", values.len()) });
    }
    let mut out = Vec::with_capacity(values.len() / 32 * format.block_bytes());
    for x in values.chunks_exact(32) {
        match format {
            QuantFormat::Q4_0 | QuantFormat::Q5_0 => {
                let half_range = if format == QuantFormat::Q4_0 { 8.0 } else { 16.0 };
                let d = signed_absmax(x) / -half_range;
                let id = recip(d);
                let top = 2.0 * half_range - 1.0;
                let q: [u8; 32] = std::array::from_fn(|e| (x[e] * id + (half_range + 0.5)).trunc().clamp(0.0, top) as u8);
                out.extend(f16_bytes(d));
                if format == QuantFormat::Q5_0 {
                    out.extend(high_bits(&q));
                }
                out.extend(pack_nibbles(&q));
            }
            QuantFormat::Q4_1 | QuantFormat::Q5_1 => {
                let levels = if format == QuantFormat::Q4_1 { 15.0 } else { 31.0 };
                let (min, max) = x.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                let d = (max - min) / levels;
                let id = recip(d);
                let q: [u8; 32] = std::array::from_fn(|e| ((x[e] - min) * id + 0.5).trunc().clamp(0.0, levels) as u8);
                out.extend(f16_bytes(d));
                out.extend(f16_bytes(min));
                if format == QuantFormat::Q5_1 {
                    out.extend(high_bits(&q));
                }
                out.extend(pack_nibbles(&q));
            }
            QuantFormat::Q8_0 => {
                let d = signed_absmax(x).abs() / 127.0;
                let id = recip(d);
                out.extend(f16_bytes(d));
                // f32::round is half away from zero, like ggml's roundf.
                out.extend(x.iter().map(|&v| (v * id).round() as i8 as u8));
            }
            QuantFormat::Q4K | QuantFormat::Q5K | QuantFormat::Q6K => unreachable!("refused above"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::quant::dequantize;

    #[test]
    fn quantizing_then_dequantizing_stays_within_half_a_step() {
        let values: Vec<f32> = (0..32 * 64).map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0 + (i / 32) as f32 * 0.01).collect();
        for format in [QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1, QuantFormat::Q8_0] {
            let blocks = quantize(format, &values).unwrap();
            assert_eq!(blocks.len(), values.len() / 32 * format.block_bytes());
            let back = dequantize(format, &blocks);
            for (b, x) in back.chunks(32).zip(values.chunks(32)) {
                let absmax = x.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
                let (lo, hi) = x.iter().fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v as f64), h.max(v as f64)));
                // Q4_0/Q5_0 map the extreme to code 0, so the other end stops one step short:
                // a whole step of error there; the others are off by at most half a step.
                let err = match format {
                    QuantFormat::Q4_0 => absmax / 8.0,
                    QuantFormat::Q5_0 => absmax / 16.0,
                    QuantFormat::Q4_1 => (hi - lo) / 15.0 * 0.5,
                    QuantFormat::Q5_1 => (hi - lo) / 31.0 * 0.5,
                    _ => absmax / 127.0 * 0.5,
                };
                // Plus the f16 rounding of the scale (times up to 16 codes) and of the minimum.
                let tol = err * 1.001 + absmax * 2f64.powi(-10) * 2.0;
                for (&got, &want) in b.iter().zip(x) {
                    assert!((got - want as f64).abs() <= tol, "{format}: {got} vs {want} (tol {tol})");
                }
            }
        }
        assert!(quantize(QuantFormat::Q4K, &values).is_err());
        assert!(quantize(QuantFormat::Q8_0, &values[..31]).is_err());
    }
}
