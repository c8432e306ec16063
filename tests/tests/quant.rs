//! GGML block formats: ferrocm's f64 dequantization and its quantizer against fixtures made by
//! the `gguf` package's numpy implementation (tests/fixtures/quant/make_fixtures.py), and
//! quantized tensors on the device.
//!
//! Bit-exact: every format's dequantized weight is one f32 rounding of an exact product (f16
//! scale x small integer codes) plus at most one other exact term, so the f64 definition rounded
//! to f32 must equal numpy's f32 computation bit for bit.

use ferrocm::quant::{QuantFormat, QuantTensor, quantize};
use ferrocm::{Error, reference};
use ferrocm_tests::device;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/quant/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn dequantization_matches_the_gguf_package_bit_for_bit() {
    for format in QuantFormat::ALL {
        let blocks = fixture(&format!("{}.blocks", format.name()));
        let want = f32s(&fixture(&format!("{}.values", format.name())));
        let got = reference::quant::dequantize(format, &blocks);
        assert_eq!(got.len(), want.len(), "{format}");
        assert!(blocks.len() / format.block_bytes() >= 12, "{format}: fixture too small");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!((*g as f32).to_bits(), w.to_bits(), "{format} weight {i}: {g} vs {w}");
        }
    }
}

#[test]
fn the_quantizer_matches_the_gguf_package_bit_for_bit() {
    for format in QuantFormat::ALL.into_iter().filter(|f| f.block_elems() == 32) {
        let input = f32s(&fixture(&format!("{}.input", format.name())));
        let want = fixture(&format!("{}.blocks", format.name()));
        assert_eq!(quantize(format, &input).unwrap(), want, "{format}");
    }
}

#[test]
fn nan_and_infinite_scales_propagate() {
    // A Q8_0 block with scale +inf: codes 0 give NaN (inf * 0), others +-inf.
    let mut block = vec![0u8; 34];
    block[..2].copy_from_slice(&half::f16::INFINITY.to_le_bytes());
    block[2] = 3;
    block[3] = (-2i8) as u8;
    let w = reference::quant::dequantize(QuantFormat::Q8_0, &block);
    assert_eq!((w[0], w[1]), (f64::INFINITY, f64::NEG_INFINITY));
    assert!(w[2].is_nan());
    block[..2].copy_from_slice(&half::f16::NAN.to_le_bytes());
    assert!(reference::quant::dequantize(QuantFormat::Q8_0, &block).iter().all(|v| v.is_nan()));
}

#[test]
fn quantized_tensors_hold_their_blocks_and_refuse_bad_shapes() {
    let dev = device();
    for format in QuantFormat::ALL {
        let blocks = fixture(&format!("{}.blocks", format.name()));
        let n_blocks = blocks.len() / format.block_bytes();
        let k = format.block_elems() * if n_blocks % 2 == 0 { 2 } else { 1 };
        let n = n_blocks * format.block_elems() / k;
        let q = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
        assert_eq!((q.shape(), q.format(), q.row_bytes()), ([n, k], format, k / format.block_elems() * format.block_bytes()));
        assert_eq!(q.to_host_blocks().unwrap(), blocks);
        // K not a multiple of the block, or bytes that are not the shape.
        assert!(matches!(QuantTensor::from_blocks(dev, format, [n, k + 1], &blocks), Err(Error::Shape { .. })));
        assert!(matches!(QuantTensor::from_blocks(dev, format, [n + 1, k], &blocks), Err(Error::Shape { .. })));
    }
}

/// Compares device output bits with the reference weights rounded to f32 (then to the output
/// type, nearest even): NaN must meet NaN, everything else bit for bit.
fn assert_same_weights(what: &str, got: &ferrocm::Tensor, want: &[f64]) {
    use ferrocm::DType;
    let bits = ferrocm_tests::values::read_bits(got);
    assert_eq!(bits.len(), want.len(), "{what}");
    for (i, (&g, &w)) in bits.iter().zip(want).enumerate() {
        let w32 = w as f32;
        let (nan, expect) = match got.dtype() {
            DType::F32 => (f32::from_bits(g).is_nan(), w32.to_bits()),
            DType::F16 => (half::f16::from_bits(g as u16).is_nan(), half::f16::from_f32(w32).to_bits() as u32),
            _ => (half::bf16::from_bits(g as u16).is_nan(), half::bf16::from_f32(w32).to_bits() as u32),
        };
        if w.is_nan() {
            assert!(nan, "{what}: weight {i} is {g:#x}, want NaN");
        } else {
            assert_eq!(g, expect, "{what}: weight {i} (row {}) is {g:#x}, want {expect:#x} ({w})", i);
        }
    }
}

#[test]
fn device_dequantization_is_bit_exact_for_every_format_and_dtype() {
    use ferrocm::DType;
    use ferrocm::ops::qmatmul;
    use ferrocm_tests::quant::{random_blocks, small_block};
    let dev = device();
    for format in QuantFormat::ALL {
        // Ragged rows (a partial tile), and for the 32-weight formats K with a partial last chunk.
        let shapes: &[(usize, usize)] =
            if small_block(format) { &[(1, 32), (17, 576), (40, 288), (5, 1024)] } else { &[(1, 256), (17, 768), (33, 512)] };
        for (si, &(n, k)) in shapes.iter().enumerate() {
            let blocks = random_blocks(format, n, k, 0.01 + si as f64, 31 * si as u64 + format.ggml_type() as u64);
            let q = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
            let want = reference::quant::dequantize(format, &blocks);
            for dtype in [DType::F32, DType::F16, DType::Bf16] {
                let y = qmatmul::dequantize(&q, dtype).unwrap();
                assert_eq!(y.shape(), &[n, k]);
                assert_same_weights(&format!("{format} {n}x{k} {dtype}"), &y, &want);
            }
        }
    }
}

#[test]
fn device_dequantization_matches_the_gguf_package_bit_for_bit() {
    use ferrocm::ops::qmatmul;
    let dev = device();
    for format in QuantFormat::ALL {
        let blocks = fixture(&format!("{}.blocks", format.name()));
        let want = f32s(&fixture(&format!("{}.values", format.name())));
        let n = blocks.len() / format.block_bytes();
        let k = format.block_elems();
        let q = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
        let got = qmatmul::dequantize(&q, ferrocm::DType::F32).unwrap().to_vec::<f32>().unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{format} weight {i}: {g} vs {w}");
        }
    }
}

#[test]
fn device_dequantization_propagates_nan_and_infinite_scales_like_the_reference() {
    use ferrocm::ops::qmatmul;
    use ferrocm_tests::quant::{random_blocks, scale_offsets};
    let dev = device();
    for format in QuantFormat::ALL {
        let k = format.block_elems() * 2;
        let n = 6;
        let mut blocks = random_blocks(format, n, k, 0.5, 99);
        let bb = format.block_bytes();
        let offs = scale_offsets(format);
        // Block b gets: +inf, -inf, NaN in its first scale; +inf in its last (a minimum where
        // the format has one).
        let specials = [half::f16::INFINITY, half::f16::NEG_INFINITY, half::f16::NAN];
        for (b, block) in blocks.chunks_exact_mut(bb).enumerate().take(8) {
            let (at, v) = if b < 3 { (offs[0], specials[b]) } else { (*offs.last().unwrap(), half::f16::INFINITY) };
            if b < 4 {
                block[at..at + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
        let q = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
        let want = reference::quant::dequantize(format, &blocks);
        assert!(want.iter().any(|w| w.is_nan()) && want.iter().any(|w| w.is_infinite()), "{format}: specials reach the weights");
        let y = qmatmul::dequantize(&q, ferrocm::DType::F32).unwrap();
        assert_same_weights(&format!("{format} specials"), &y, &want);
    }
}

#[test]
fn dequantization_refuses_non_float_outputs() {
    use ferrocm::ops::qmatmul;
    let dev = device();
    let blocks = fixture("Q8_0.blocks");
    let q = QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [blocks.len() / 34, 32], &blocks).unwrap();
    assert!(matches!(qmatmul::dequantize(&q, ferrocm::DType::I32), Err(Error::DTypeMismatch { .. })));
}
