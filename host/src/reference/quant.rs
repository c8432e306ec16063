//! Dequantization of GGML blocks in f64: the definition the device's dequantizing kernels are
//! checked against (see [`QuantFormat`] for the layouts).
//!
//! NaN or infinite `f16` scales propagate as IEEE arithmetic says: `inf * 0` is NaN, `inf * q`
//! is ±inf, NaN stays NaN; the device follows the same arithmetic in f32.
//!
//! Contract: `blocks` holds whole blocks; a length that is not a multiple of the block size is a
//! caller bug and panics (as everywhere in `reference`).

use crate::quant::{QuantFormat, k_scale_min};
use half::f16;

fn f16_at(b: &[u8], at: usize) -> f64 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f64()
}

/// The 4-bit value of weight `e` (0..32) of a 32-weight block's 16 packed bytes.
fn nibble32(qs: &[u8], e: usize) -> u8 {
    if e < 16 { qs[e] & 0x0F } else { qs[e - 16] >> 4 }
}

/// The weights of one block, written to `out` (`format.block_elems()` values).
///
/// # Panics
/// When `block` or `out` has the wrong length.
pub fn dequantize_block(format: QuantFormat, block: &[u8], out: &mut [f64]) {
    assert_eq!(block.len(), format.block_bytes(), "{format}: one block is {} bytes", format.block_bytes());
    assert_eq!(out.len(), format.block_elems(), "{format}: one block is {} weights", format.block_elems());
    match format {
        QuantFormat::Q4_0 => {
            let d = f16_at(block, 0);
            for (e, o) in out.iter_mut().enumerate() {
                *o = d * (nibble32(&block[2..], e) as f64 - 8.0);
            }
        }
        QuantFormat::Q4_1 => {
            let (d, m) = (f16_at(block, 0), f16_at(block, 2));
            for (e, o) in out.iter_mut().enumerate() {
                *o = d * nibble32(&block[4..], e) as f64 + m;
            }
        }
        QuantFormat::Q5_0 => {
            let d = f16_at(block, 0);
            let qh = u32::from_le_bytes(block[2..6].try_into().expect("4 bytes"));
            for (e, o) in out.iter_mut().enumerate() {
                let q = nibble32(&block[6..], e) | (((qh >> e) & 1) as u8) << 4;
                *o = d * (q as f64 - 16.0);
            }
        }
        QuantFormat::Q5_1 => {
            let (d, m) = (f16_at(block, 0), f16_at(block, 2));
            let qh = u32::from_le_bytes(block[4..8].try_into().expect("4 bytes"));
            for (e, o) in out.iter_mut().enumerate() {
                let q = nibble32(&block[8..], e) | (((qh >> e) & 1) as u8) << 4;
                *o = d * q as f64 + m;
            }
        }
        QuantFormat::Q8_0 => {
            let d = f16_at(block, 0);
            for (e, o) in out.iter_mut().enumerate() {
                *o = d * block[2 + e] as i8 as f64;
            }
        }
        QuantFormat::Q4K | QuantFormat::Q5K => {
            let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
            let scales: &[u8; 12] = block[4..16].try_into().expect("12 bytes");
            let (qh, qs) = if format == QuantFormat::Q5K { (Some(&block[16..48]), &block[48..]) } else { (None, &block[16..]) };
            for (e, o) in out.iter_mut().enumerate() {
                let s = e / 32;
                let byte = qs[32 * (s / 2) + e % 32];
                let mut q = if s % 2 == 0 { byte & 0x0F } else { byte >> 4 };
                if let Some(qh) = qh {
                    q |= ((qh[e % 32] >> s) & 1) << 4;
                }
                let (sc, mn) = k_scale_min(scales, s);
                *o = d * sc as f64 * q as f64 - dmin * mn as f64;
            }
        }
        QuantFormat::Q6K => {
            let (ql, qh, scales) = (&block[..128], &block[128..192], &block[192..208]);
            let d = f16_at(block, 208);
            for (e, o) in out.iter_mut().enumerate() {
                let (h, j, l) = (e / 128, (e % 128) / 32, e % 32);
                let low = ql[64 * h + 32 * (j % 2) + l] >> (4 * (j / 2)) & 0x0F;
                let high = (qh[32 * h + l] >> (2 * j)) & 0x03;
                let q = (low | high << 4) as f64 - 32.0;
                *o = d * scales[e / 16] as i8 as f64 * q;
            }
        }
    }
}

/// Every weight of `blocks` (whole blocks of `format`), in order.
///
/// # Panics
/// When `blocks.len()` is not a multiple of the block size.
pub fn dequantize(format: QuantFormat, blocks: &[u8]) -> Vec<f64> {
    assert_eq!(blocks.len() % format.block_bytes(), 0, "{format}: {} bytes are not whole blocks", blocks.len());
    let mut out = vec![0.0; blocks.len() / format.block_bytes() * format.block_elems()];
    for (b, o) in blocks.chunks_exact(format.block_bytes()).zip(out.chunks_exact_mut(format.block_elems())) {
        dequantize_block(format, b, o);
    }
    out
}

/// `y[m][n] = sum_k x[m][k] * W[n][k]` in f64 for a quantized weight `W` (`n` rows of `k`
/// weights, `blocks` row-major) and activations `x` (`m x k`, row-major).
///
/// # Panics
/// On lengths that do not match `m`, `n`, `k`.
pub fn matmul(format: QuantFormat, blocks: &[u8], n: usize, k: usize, x: &[f64], m: usize) -> Vec<f64> {
    let w = dequantize(format, blocks);
    assert_eq!(w.len(), n * k, "{format}: the blocks hold {} weights, not {n} x {k}", w.len());
    assert_eq!(x.len(), m * k, "x holds {} values, not {m} x {k}", x.len());
    let mut y = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            y[i * n + j] = (0..k).map(|p| x[i * k + p] * w[j * k + p]).sum();
        }
    }
    y
}
