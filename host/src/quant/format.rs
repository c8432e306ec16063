//! The GGML block formats ferrocm reads: their sizes, GGUF type ids, and exact byte layouts.
//!
//! Layouts (from ggml's `ggml-common.h` and the `gguf` package's `quants.py`; all little-endian,
//! `f16` scales are IEEE binary16). Weight `e` of a block:
//! - `Q4_0` (32 weights, 18 bytes): `d: f16, qs[16]`; `q = nibble(e)`, `w = d * (q - 8)`.
//! - `Q4_1` (32, 20): `d, m: f16, qs[16]`; `w = d * q + m`.
//! - `Q5_0` (32, 22): `d, qh: u32, qs[16]`; `q = nibble(e) | bit(qh, e) << 4`, `w = d * (q - 16)`.
//! - `Q5_1` (32, 24): `d, m, qh: u32, qs[16]`; `w = d * q + m`.
//! - `Q8_0` (32, 34): `d, qs: i8[32]`; `w = d * qs[e]`.
//!   Where `nibble(e)` is the low nibble of `qs[e]` for `e < 16`, the high nibble of `qs[e - 16]`
//!   after.
//! - `Q4_K` (256, 144): `d, dmin: f16, scales[12], qs[128]`; 8 sub-blocks of 32 with 6-bit
//!   scale `sc[s]` and min `mn[s]` packed in `scales` (see [`k_scale_min`]); weight `e` is in
//!   sub-block `s = e / 32`, its 4 bits the low (`s` even) or high nibble of
//!   `qs[32 * (s / 2) + e % 32]`; `w = d * sc[s] * q - dmin * mn[s]`.
//! - `Q5_K` (256, 176): `d, dmin, scales[12], qh[32], qs[128]`; as `Q4_K`, plus the fifth bit
//!   `(qh[e % 32] >> s) & 1`.
//! - `Q6_K` (256, 210): `ql[128], qh[64], scales: i8[16], d: f16` (d last); for
//!   `e = 128 h + 32 j + l` (`h < 2, j < 4, l < 32`): low 4 bits the nibble `j / 2` of
//!   `ql[64 h + 32 (j % 2) + l]`, high 2 bits `(qh[32 h + l] >> 2 j) & 3`;
//!   `w = d * scales[e / 16] * (q - 32)`.

use crate::error::{Error, Result};

/// A GGML block-quantized weight format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantFormat {
    /// 4-bit, one scale per 32 weights.
    Q4_0,
    /// 4-bit, scale and minimum per 32 weights.
    Q4_1,
    /// 5-bit, one scale per 32 weights.
    Q5_0,
    /// 5-bit, scale and minimum per 32 weights.
    Q5_1,
    /// 8-bit, one scale per 32 weights.
    Q8_0,
    /// 4-bit k-quant: 256-weight super-blocks of 8 sub-blocks with 6-bit scales and minimums.
    Q4K,
    /// 5-bit k-quant.
    Q5K,
    /// 6-bit k-quant: 16 sub-blocks of 16 with 8-bit scales.
    Q6K,
}

impl QuantFormat {
    /// Every format, in GGUF type-id order.
    pub const ALL: [QuantFormat; 8] = [
        QuantFormat::Q4_0,
        QuantFormat::Q4_1,
        QuantFormat::Q5_0,
        QuantFormat::Q5_1,
        QuantFormat::Q8_0,
        QuantFormat::Q4K,
        QuantFormat::Q5K,
        QuantFormat::Q6K,
    ];

    /// Weights per block.
    pub const fn block_elems(self) -> usize {
        match self {
            QuantFormat::Q4K | QuantFormat::Q5K | QuantFormat::Q6K => 256,
            _ => 32,
        }
    }

    /// Bytes per block.
    pub const fn block_bytes(self) -> usize {
        match self {
            QuantFormat::Q4_0 => 18,
            QuantFormat::Q4_1 => 20,
            QuantFormat::Q5_0 => 22,
            QuantFormat::Q5_1 => 24,
            QuantFormat::Q8_0 => 34,
            QuantFormat::Q4K => 144,
            QuantFormat::Q5K => 176,
            QuantFormat::Q6K => 210,
        }
    }

    /// The `ggml_type` id GGUF files store.
    pub const fn ggml_type(self) -> u32 {
        match self {
            QuantFormat::Q4_0 => 2,
            QuantFormat::Q4_1 => 3,
            QuantFormat::Q5_0 => 6,
            QuantFormat::Q5_1 => 7,
            QuantFormat::Q8_0 => 8,
            QuantFormat::Q4K => 12,
            QuantFormat::Q5K => 13,
            QuantFormat::Q6K => 14,
        }
    }

    /// The format of a `ggml_type` id, if ferrocm reads it.
    pub fn from_ggml_type(id: u32) -> Option<QuantFormat> {
        QuantFormat::ALL.into_iter().find(|f| f.ggml_type() == id)
    }

    /// The format code of ferrocm's kernels ([`ferrocm_device::abi::quant::format`]).
    pub(crate) const fn abi_code(self) -> u32 {
        use ferrocm_device::abi::quant::format as f;
        match self {
            QuantFormat::Q4_0 => f::Q4_0,
            QuantFormat::Q4_1 => f::Q4_1,
            QuantFormat::Q5_0 => f::Q5_0,
            QuantFormat::Q5_1 => f::Q5_1,
            QuantFormat::Q8_0 => f::Q8_0,
            QuantFormat::Q4K => f::Q4_K,
            QuantFormat::Q5K => f::Q5_K,
            QuantFormat::Q6K => f::Q6_K,
        }
    }

    /// GGML's name (`Q4_0`, `Q4_K`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            QuantFormat::Q4_0 => "Q4_0",
            QuantFormat::Q4_1 => "Q4_1",
            QuantFormat::Q5_0 => "Q5_0",
            QuantFormat::Q5_1 => "Q5_1",
            QuantFormat::Q8_0 => "Q8_0",
            QuantFormat::Q4K => "Q4_K",
            QuantFormat::Q5K => "Q5_K",
            QuantFormat::Q6K => "Q6_K",
        }
    }

    /// Bytes of one row of `k` weights.
    ///
    /// # Errors
    /// [`Error::Shape`] when `k` is not a multiple of the block size; [`Error::AllocationOverflow`].
    pub fn row_bytes(self, k: usize) -> Result<usize> {
        if k % self.block_elems() != 0 {
            return Err(Error::Shape {
                op: "quantized tensor",
                message: format!("K = {k} is not a multiple of {}'s {}-weight blocks", self.name(), self.block_elems()),
            });
        }
        (k / self.block_elems())
            .checked_mul(self.block_bytes())
            .ok_or(Error::AllocationOverflow { elements: k, elem_size: self.block_bytes() })
    }
}

impl std::fmt::Display for QuantFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The 6-bit scale and minimum of sub-block `s` (0..8) of a `Q4_K`/`Q5_K` super-block, unpacked
/// from its 12 scale bytes: sub-blocks 0..4 keep the low 6 bits of bytes `s` (scale) and
/// `s + 4` (min); sub-blocks 4..8 take their low 4 bits from byte `s + 4`'s nibbles and their
/// top 2 bits from the spare top bits of bytes `s - 4` and `s`.
pub fn k_scale_min(scales: &[u8; 12], s: usize) -> (u8, u8) {
    if s < 4 {
        (scales[s] & 0x3F, scales[s + 4] & 0x3F)
    } else {
        let mixed = scales[s + 4];
        ((mixed & 0x0F) | ((scales[s - 4] >> 2) & 0x30), (mixed >> 4) | ((scales[s] >> 2) & 0x30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ids_match_ggml() {
        for f in QuantFormat::ALL {
            assert_eq!(QuantFormat::from_ggml_type(f.ggml_type()), Some(f));
        }
        assert_eq!(QuantFormat::from_ggml_type(0), None, "F32 is not a block format");
        assert_eq!(QuantFormat::Q4_1.row_bytes(576).unwrap(), 360);
        assert!(QuantFormat::Q4K.row_bytes(576).is_err());
    }

    #[test]
    fn k_scales_unpack_every_bit_once() {
        // Each scale/min bit of the 12 bytes lands in exactly one output bit.
        let mut seen = [[0u32; 2]; 8];
        for byte in 0..12 {
            for bit in 0..8 {
                let mut s = [0u8; 12];
                s[byte] = 1 << bit;
                for (sub, out) in seen.iter_mut().enumerate() {
                    let (sc, mn) = k_scale_min(&s, sub);
                    out[0] += sc.count_ones();
                    out[1] += mn.count_ones();
                }
            }
        }
        assert_eq!(seen, [[6, 6]; 8]);
    }
}
