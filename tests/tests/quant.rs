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
