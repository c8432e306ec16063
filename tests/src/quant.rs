//! Test data for the quantized suites: GGML blocks of every format with random codes and
//! finite scales of a chosen size, and blocks with chosen non-finite scales.

use crate::values::Rng;
use ferrocm::quant::QuantFormat;
use half::f16;

/// Byte offsets of the f16 scales (and minimums) in one block of `format` that must be finite
/// for the block to hold finite weights.
pub fn scale_offsets(format: QuantFormat) -> &'static [usize] {
    match format {
        QuantFormat::Q4_0 | QuantFormat::Q5_0 | QuantFormat::Q8_0 => &[0],
        QuantFormat::Q4_1 | QuantFormat::Q5_1 | QuantFormat::Q4K | QuantFormat::Q5K => &[0, 2],
        QuantFormat::Q6K => &[208],
    }
}

/// `n` rows of `k` weights in `format`: random bytes (every code, packed scale and high bit
/// pattern is a valid block) with the f16 scales replaced by values of magnitude about `scale`
/// (random sign), so every weight is finite.
pub fn random_blocks(format: QuantFormat, n: usize, k: usize, scale: f64, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed ^ 0x9E37_79B9_7F4A_7C15);
    let bytes = n * format.row_bytes(k).expect("k is a multiple of the block");
    let mut out: Vec<u8> = (0..bytes).map(|_| rng.below(256) as u8).collect();
    for block in out.chunks_exact_mut(format.block_bytes()) {
        for &at in scale_offsets(format) {
            let v = scale * rng.range(0.25, 1.0) * if rng.unit() < 0.5 { -1.0 } else { 1.0 };
            block[at..at + 2].copy_from_slice(&f16::from_f64(v).to_le_bytes());
        }
    }
    out
}

/// The formats whose blocks are 32 weights (the quantizer's).
pub fn small_block(format: QuantFormat) -> bool {
    format.block_elems() == 32
}

/// Per weight of `blocks` (whole blocks of `format`), the magnitude of the terms the device
/// adds for it: `|w|` for symmetric formats (`w = a * (u - offset)` is one exact product), and
/// `|w - b| + |b|` for formats with a minimum (`w = a * u + b`, whose two terms are summed
/// separately, so their sizes bound the rounding, not their difference).
pub fn term_magnitudes(format: QuantFormat, blocks: &[u8]) -> Vec<f64> {
    let w = ferrocm::reference::quant::dequantize(format, blocks);
    let f16_at = |b: &[u8], at: usize| f16::from_le_bytes([b[at], b[at + 1]]).to_f64();
    let mut out = Vec::with_capacity(w.len());
    for (bi, block) in blocks.chunks_exact(format.block_bytes()).enumerate() {
        for e in 0..format.block_elems() {
            let wv = w[bi * format.block_elems() + e];
            let b = match format {
                QuantFormat::Q4_1 | QuantFormat::Q5_1 => f16_at(block, 2),
                QuantFormat::Q4K | QuantFormat::Q5K => {
                    let scales: &[u8; 12] = block[4..16].try_into().unwrap();
                    -f16_at(block, 2) * ferrocm::quant::k_scale_min(scales, e / 32).1 as f64
                }
                _ => 0.0,
            };
            out.push((wv - b).abs() + b.abs());
        }
    }
    out
}
