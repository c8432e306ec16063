//! GGML tensor types: every type id a GGUF file can name, with its block layout.

use crate::io::convert::FileType;

/// Elements per super-block of the k-quants and i-quants (`QK_K` in ggml).
const QK_K: u32 = 256;

macro_rules! ggml_types {
    ($($(#[$doc:meta])* $v:ident = $id:literal, $name:literal, $block:expr, $bytes:expr;)*) => {
        /// A GGML tensor type (the `type` of a GGUF tensor info): element types and block
        /// quantization formats, with the layout of one block.
        ///
        /// Block sizes and bytes per block follow ggml's `ggml-common.h` (the structs' sizes,
        /// checked there by `static_assert`). Ids 4, 5 (Q4_2, Q4_3), 31-33 (Q4_0_4_4 ...) and
        /// 36-38 (IQ4_NL_4_4 ...) were removed from GGML and are unknown here, as in llama.cpp.
        ///
        /// ```
        /// use ferrocm::io::gguf::GgmlType;
        /// let t = GgmlType::from_id(3).unwrap();
        /// assert_eq!((t, t.block_size(), t.block_bytes()), (GgmlType::Q4_1, 32, 20));
        /// assert!(t.is_quantized());
        /// assert_eq!(GgmlType::Q4_1.byte_size(576 * 576), Some(576 * 576 / 32 * 20));
        /// ```
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum GgmlType {
            $($(#[$doc])* $v = $id,)*
        }

        impl GgmlType {
            /// Every type, in id order.
            pub const ALL: &'static [GgmlType] = &[$(GgmlType::$v,)*];

            /// The type with GGML id `id`, `None` for ids GGML does not (or no longer) define.
            pub const fn from_id(id: u32) -> Option<GgmlType> {
                match id {
                    $($id => Some(GgmlType::$v),)*
                    _ => None,
                }
            }

            /// The GGML name (`Q4_K`, `BF16` ...).
            pub const fn name(self) -> &'static str {
                match self {
                    $(GgmlType::$v => $name,)*
                }
            }

            /// Elements per block (1 for the plain element types).
            pub const fn block_size(self) -> u32 {
                match self {
                    $(GgmlType::$v => $block,)*
                }
            }

            /// Bytes per block.
            pub const fn block_bytes(self) -> u32 {
                match self {
                    $(GgmlType::$v => $bytes,)*
                }
            }
        }
    };
}

ggml_types! {
    /// IEEE binary32.
    F32 = 0, "F32", 1, 4;
    /// IEEE binary16.
    F16 = 1, "F16", 1, 2;
    /// 32 weights: f16 scale d, 16 bytes of 4-bit quants; w = d * (q - 8).
    Q4_0 = 2, "Q4_0", 32, 2 + 16;
    /// 32 weights: f16 scale d, f16 min m, 16 bytes of 4-bit quants; w = d * q + m.
    Q4_1 = 3, "Q4_1", 32, 2 + 2 + 16;
    /// 32 weights: f16 d, 4 bytes of high bits, 16 bytes of low nibbles.
    Q5_0 = 6, "Q5_0", 32, 2 + 4 + 16;
    /// 32 weights: f16 d, f16 m, 4 bytes of high bits, 16 bytes of low nibbles.
    Q5_1 = 7, "Q5_1", 32, 2 + 2 + 4 + 16;
    /// 32 weights: f16 d, 32 int8; w = d * q.
    Q8_0 = 8, "Q8_0", 32, 2 + 32;
    /// 32 weights: f16 d, f16 s (= d * sum q), 32 int8 (ggml's `block_q8_1`; the gguf Python
    /// package still lists 40 bytes from an older f32 layout).
    Q8_1 = 9, "Q8_1", 32, 2 + 2 + 32;
    /// k-quant, 2 bits.
    Q2_K = 10, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4;
    /// k-quant, 3 bits.
    Q3_K = 11, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12;
    /// k-quant, 4 bits.
    Q4_K = 12, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12;
    /// k-quant, 5 bits.
    Q5_K = 13, "Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12;
    /// k-quant, 6 bits.
    Q6_K = 14, "Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16;
    /// k-quant, 8 bits (intermediate format of dot products).
    Q8_K = 15, "Q8_K", QK_K, 4 + QK_K + QK_K / 8;
    /// i-quant.
    IQ2_XXS = 16, "IQ2_XXS", QK_K, 2 + QK_K / 4;
    /// i-quant.
    IQ2_XS = 17, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32;
    /// i-quant.
    IQ3_XXS = 18, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8;
    /// i-quant.
    IQ1_S = 19, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16;
    /// Non-linear 4-bit.
    IQ4_NL = 20, "IQ4_NL", 32, 2 + 16;
    /// i-quant.
    IQ3_S = 21, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4;
    /// i-quant.
    IQ2_S = 22, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16;
    /// i-quant.
    IQ4_XS = 23, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64;
    /// Signed 8-bit integer.
    I8 = 24, "I8", 1, 1;
    /// Signed 16-bit integer.
    I16 = 25, "I16", 1, 2;
    /// Signed 32-bit integer.
    I32 = 26, "I32", 1, 4;
    /// Signed 64-bit integer.
    I64 = 27, "I64", 1, 8;
    /// IEEE binary64.
    F64 = 28, "F64", 1, 8;
    /// i-quant.
    IQ1_M = 29, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32;
    /// bfloat16.
    BF16 = 30, "BF16", 1, 2;
    /// Ternary, 1.69 bits.
    TQ1_0 = 34, "TQ1_0", QK_K, 2 + 4 * 13;
    /// Ternary, 2 bits.
    TQ2_0 = 35, "TQ2_0", QK_K, 2 + 64;
    /// OCP MX fp4: an E8M0 scale and 16 bytes of E2M1 pairs.
    MXFP4 = 39, "MXFP4", 32, 1 + 16;
    /// NVIDIA fp4: 64 weights, four E4M3 scales, 32 bytes of E2M1 pairs.
    NVFP4 = 40, "NVFP4", 64, 4 + 32;
    /// 1-bit: f16 d and 128 sign bits.
    Q1_0 = 41, "Q1_0", 128, 2 + 16;
}

impl GgmlType {
    /// The GGML type id.
    pub const fn id(self) -> u32 {
        self as u32
    }

    /// True for block-quantized types (kept as raw blocks on the device).
    pub const fn is_quantized(self) -> bool {
        !matches!(
            self,
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 | GgmlType::F64 | GgmlType::I8 | GgmlType::I16 | GgmlType::I32 | GgmlType::I64
        )
    }

    /// Bytes of `elements` elements (`None` when `elements` is not a whole number of blocks or
    /// the size overflows).
    pub const fn byte_size(self, elements: u64) -> Option<u64> {
        let b = self.block_size() as u64;
        if elements % b != 0 {
            return None;
        }
        (elements / b).checked_mul(self.block_bytes() as u64)
    }

    /// The block format ferrocm's quantized ops take ([`QuantFormat`](crate::quant::QuantFormat)),
    /// for the types they implement.
    pub fn quant_format(self) -> Option<crate::quant::QuantFormat> {
        crate::quant::QuantFormat::from_ggml_type(self.id())
    }

    /// The loader's element type for the unquantized types.
    pub(crate) const fn file_type(self) -> Option<FileType> {
        Some(match self {
            GgmlType::F32 => FileType::F32,
            GgmlType::F16 => FileType::F16,
            GgmlType::BF16 => FileType::Bf16,
            GgmlType::F64 => FileType::F64,
            GgmlType::I8 => FileType::I8,
            GgmlType::I16 => FileType::I16,
            GgmlType::I32 => FileType::I32,
            GgmlType::I64 => FileType::I64,
            _ => return None,
        })
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What an unknown type id is, for messages.
pub(crate) fn describe_unknown(id: u32) -> String {
    match id {
        4 | 5 => format!("{id} (Q4_2/Q4_3, removed from GGML in 2023)"),
        31..=33 | 36..=38 => format!("{id} (a repacked layout removed from GGML files; re-quantize the model)"),
        _ => id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_layouts_match_ggml() {
        // The sizes ggml's static_asserts pin, for the types GGUF files commonly hold.
        let expect = [
            (GgmlType::Q4_0, 32, 18),
            (GgmlType::Q4_1, 32, 20),
            (GgmlType::Q5_0, 32, 22),
            (GgmlType::Q5_1, 32, 24),
            (GgmlType::Q8_0, 32, 34),
            (GgmlType::Q2_K, 256, 84),
            (GgmlType::Q3_K, 256, 110),
            (GgmlType::Q4_K, 256, 144),
            (GgmlType::Q5_K, 256, 176),
            (GgmlType::Q6_K, 256, 210),
            (GgmlType::Q8_K, 256, 292),
            (GgmlType::IQ4_XS, 256, 136),
            (GgmlType::TQ1_0, 256, 54),
            (GgmlType::MXFP4, 32, 17),
        ];
        for (t, b, n) in expect {
            assert_eq!((t.block_size(), t.block_bytes()), (b, n), "{t}");
        }
        for &t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()), Some(t));
            assert_eq!(t.is_quantized(), t.file_type().is_none(), "{t}");
        }
        for id in [4, 5, 31, 32, 33, 36, 37, 38, 42, u32::MAX] {
            assert_eq!(GgmlType::from_id(id), None, "{id}");
        }
        assert_eq!(GgmlType::Q8_0.byte_size(33), None);
    }

    #[test]
    fn the_quantized_ops_formats_agree_with_the_file_types() {
        for f in crate::quant::QuantFormat::ALL {
            let t = GgmlType::from_id(f.ggml_type()).expect("a GGML type");
            assert_eq!((t.block_size() as usize, t.block_bytes() as usize), (f.block_elems(), f.block_bytes()), "{t}");
            assert_eq!(t.quant_format(), Some(f));
        }
        assert_eq!(GgmlType::Q2_K.quant_format(), None);
    }
}
