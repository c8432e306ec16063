//! `attention::qkv_rope_write_kv` (a decode step's fused QKV projection with its rotary
//! embedding and KV-cache write in the GEMV's epilogue) against the two ops it fuses:
//! `qmatmul` of the same operands (its own suite checks it against the f64 reference), then
//! `rope_write_kv` (checked against `rope` and `write_kv` in `rope_write_kv.rs`). The epilogue
//! rounds each product to the cache's type and rotates in f32 exactly as those two do, so the
//! queries and both caches must be equal bit for bit, NaN rows of positions outside the tables
//! included.
//!
//! Cases: every format; f16 and bf16 caches, activations of the cache's type or f32; with and
//! without the fused RMSNorm; head dims 32, 64 and 128; GQA 1:1, 3:1 and 4:1; the whole head
//! rotated or half of it; batches of 1-3 sequences of 1-6 tokens at different positions
//! (up to 18 rows: two blocks of GEMV rows), slots spread over shuffled pages of 16 or 48
//! tokens; K with and without a partial last chunk. Deterministic cases: workgroups with
//! several tiles and more entries than work-items (the epilogue's loads past the first), a
//! product the prefill GEMM runs (the two-launch path), bad input.

use ferrocm::ops::attention::{self, PagedKvCache, RopeKv};
use ferrocm::ops::qmatmul::{self, QKernel, QMatmulOptions, RmsNorm};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Error, Tensor};
use ferrocm_tests::attention::{rope_tables, shuffled_slots};
use ferrocm_tests::quant::random_blocks;
use ferrocm_tests::tensors::{bits16, random};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Case {
    format: QuantFormat,
    dtype: DType,
    /// Activations in f32 rather than the cache's type.
    x_f32: bool,
    norm: bool,
    d: usize,
    rot: usize,
    heads: usize,
    kv_heads: usize,
    batch: usize,
    seq: usize,
    /// K in blocks of the format.
    blocks: usize,
    seed: u64,
}

/// Runs the fused op and the two it fuses on the same operands; asserts equal bits.
fn check(c: &Case, kernel_of_plain: QKernel) -> Result<(), TestCaseError> {
    let dev = device();
    let mut seed = c.seed;
    let (h, kvh, d) = (c.heads, c.kv_heads, c.d);
    let n = (h + 2 * kvh) * d;
    let k = c.blocks * c.format.block_elems();
    let tokens = c.batch * c.seq;
    let w = QuantTensor::from_blocks(dev, c.format, [n, k], &random_blocks(c.format, n, k, 0.05, c.seed)).unwrap();
    let x_dtype = if c.x_f32 { DType::F32 } else { c.dtype };
    let (x, _) = random(&[tokens, k], x_dtype, 1.0, &mut seed);
    let (norm_w, _) = random(&[k], x_dtype, 1.5, &mut seed);
    let rms = c.norm.then_some(RmsNorm { weight: Some(&norm_w), eps: 1e-5 });
    // 40 positions; sequence 2 starts at 37, so its later tokens are past the tables (NaN).
    let (cos, sin) = rope_tables(40, c.rot / 2);
    let starts: Vec<i32> = (0..c.batch).map(|b| if b == 2 { 37 } else { (b * 17 + c.seed as usize % 5) as i32 }).collect();
    let offsets = Tensor::from_slice(dev, &starts, &[c.batch]).unwrap();
    let rope = RopeKv { cos: &cos, sin: &sin, offsets: &offsets };
    let pages = tokens.div_ceil(16) + 3;
    let slots = shuffled_slots(tokens, pages, &mut seed);
    // Pages of 48 half the time: the kernel divides slots by a multiplier that is not a shift
    // (the slots, dealt over pages of 16, all fit).
    let page_size = if c.seed % 2 == 0 { 16 } else { 48 };

    // The two ops it fuses.
    let two = PagedKvCache::new(dev, 2, pages, page_size, kvh, d, c.dtype).unwrap();
    let opts = QMatmulOptions { out_dtype: Some(c.dtype), rms_norm: rms, kernel: kernel_of_plain, ..Default::default() };
    let qkv = qmatmul::qmatmul(&x, &w, &opts).unwrap().reshape(&[c.batch, c.seq, h + 2 * kvh, d]).unwrap();
    let want_q = attention::rope_write_kv(&qkv, h, &rope, &two, 1, &slots).unwrap();

    // The fused launch.
    let one = PagedKvCache::new(dev, 2, pages, page_size, kvh, d, c.dtype).unwrap();
    let q = attention::qkv_rope_write_kv(&x, &w, rms, h, &rope, &one, 1, &slots).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(q.shape(), &[c.batch, c.seq, h, d]);
    prop_assert!(bits16(&q) == bits16(&want_q), "queries differ ({:?})", c);
    let (k1, v1) = one.layer(1).unwrap();
    let (k2, v2) = two.layer(1).unwrap();
    prop_assert!(bits16(k1) == bits16(k2), "K caches differ ({:?})", c);
    prop_assert!(bits16(v1) == bits16(v2), "V caches differ ({:?})", c);
    // Layer 0 untouched, and something was written.
    prop_assert!(bits16(one.layer(0).unwrap().0).iter().all(|&b| b == 0));
    prop_assert!(bits16(v1).iter().any(|&b| b != 0));
    Ok(())
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![
            Just(QuantFormat::Q4_0),
            Just(QuantFormat::Q4_1),
            Just(QuantFormat::Q5_0),
            Just(QuantFormat::Q5_1),
            Just(QuantFormat::Q8_0),
            Just(QuantFormat::Q4K),
            Just(QuantFormat::Q5K),
            Just(QuantFormat::Q6K),
        ],
        (prop_oneof![Just(DType::F16), Just(DType::Bf16)], prop_oneof![3 => Just(false), 1 => Just(true)], any::<bool>()),
        prop_oneof![Just(32usize), Just(64), Just(128)],
        any::<bool>(),
        prop_oneof![Just((2usize, 2usize)), Just((9, 3)), Just((4, 1))],
        (1usize..=3, prop_oneof![3 => 1usize..=2, 1 => 3usize..=6]),
        1usize..=3,
        any::<u64>(),
    )
        .prop_map(|(format, (dtype, x_f32, norm), d, part, (heads, kv_heads), (batch, seq), kb, seed)| {
            // K: a few whole chunks and a partial one for the 32-weight formats (18 blocks is
            // SmolLM2's 576), one or two super-blocks for the k-quants.
            let blocks = if format.block_elems() == 32 { [3, 8, 18][kb - 1] } else { kb.min(2) };
            Case { format, dtype, x_f32, norm, d, rot: if part { d / 2 } else { d }, heads, kv_heads, batch, seq, blocks, seed }
        })
}

proptest! {
    #![proptest_config(proptest_config(16))]
    #[test]
    fn fused_projection_equals_qmatmul_then_rope_write_kv(c in case()) {
        check(&c, plain_kernel(&c))?;
    }
}

#[test]
fn smollm2_decode_step() {
    // 9 query heads over 3, head dim 64, K = 576, Q4_1, f16 with the norm: the model's shape.
    for batch in [1, 2] {
        let c = Case {
            format: QuantFormat::Q4_1,
            dtype: DType::F16,
            x_f32: false,
            norm: true,
            d: 64,
            rot: 64,
            heads: 9,
            kv_heads: 3,
            batch,
            seq: 1,
            blocks: 18,
            seed: 11,
        };
        check(&c, plain_kernel(&c)).unwrap();
    }
}

/// The GEMV the fused launch runs, for the plain product to compare with: the one-row kernel
/// for one 16-bit token with the norm fused (a decode step's), else the general GEMV (their
/// sums differ in order).
fn plain_kernel(c: &Case) -> QKernel {
    if c.batch * c.seq == 1 && c.norm && !c.x_f32 { QKernel::GemvOne } else { QKernel::Gemv }
}

#[test]
fn workgroups_with_several_tiles_and_entries_past_their_work_items() {
    // 80 heads of 64 = 5120 rows (320 tiles: some workgroups take two); 16 rows per block, one
    // wave (K = 256): 128 entries per tile for 64 work-items.
    let c = Case {
        format: QuantFormat::Q8_0,
        dtype: DType::Bf16,
        x_f32: false,
        norm: false,
        d: 64,
        rot: 32,
        heads: 64,
        kv_heads: 8,
        batch: 2,
        seq: 8,
        blocks: 8,
        seed: 5,
    };
    check(&c, QKernel::Gemv).unwrap();
}

#[test]
fn a_product_for_the_prefill_gemm_takes_two_launches_with_the_same_bits() {
    // 300 rows: the prefill GEMM runs the product, rope_write_kv the rest.
    let c = Case {
        format: QuantFormat::Q4_0,
        dtype: DType::F16,
        x_f32: false,
        norm: false,
        d: 32,
        rot: 32,
        heads: 2,
        kv_heads: 1,
        batch: 1,
        seq: 300,
        blocks: 2,
        seed: 3,
    };
    check(&c, QKernel::Auto).unwrap();
}

#[test]
fn bad_input_is_a_typed_error() {
    let dev = device();
    let cache = PagedKvCache::new(dev, 1, 4, 16, 1, 32, DType::F16).unwrap();
    let (cos, sin) = rope_tables(8, 16);
    let offsets = Tensor::from_slice(dev, &[0i32], &[1]).unwrap();
    let rope = RopeKv { cos: &cos, sin: &sin, offsets: &offsets };
    let w = QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [160, 64], &random_blocks(QuantFormat::Q8_0, 160, 64, 0.05, 1)).unwrap();
    let x = Tensor::zeros(dev, &[2, 64], DType::F16).unwrap();
    let slots = Tensor::from_slice(dev, &[0i32, 1], &[2]).unwrap();
    assert!(attention::qkv_rope_write_kv(&x, &w, None, 3, &rope, &cache, 0, &slots).is_ok());
    // Heads that do not add up to W's rows; a layer past the last; K not W's.
    assert!(matches!(attention::qkv_rope_write_kv(&x, &w, None, 2, &rope, &cache, 0, &slots), Err(Error::Shape { .. })));
    assert!(matches!(attention::qkv_rope_write_kv(&x, &w, None, 3, &rope, &cache, 1, &slots), Err(Error::InvalidArgument { .. })));
    let x96 = Tensor::zeros(dev, &[2, 96], DType::F16).unwrap();
    assert!(matches!(attention::qkv_rope_write_kv(&x96, &w, None, 3, &rope, &cache, 0, &slots), Err(Error::Shape { .. })));
    // Offsets not dividing the rows; slots not one per row; f32 tables expected.
    let three = Tensor::from_slice(dev, &[0i32, 0, 0], &[3]).unwrap();
    assert!(matches!(
        attention::qkv_rope_write_kv(&x, &w, None, 3, &RopeKv { offsets: &three, ..rope }, &cache, 0, &slots),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(attention::qkv_rope_write_kv(&x, &w, None, 3, &rope, &cache, 0, &offsets), Err(Error::Shape { .. })));
    let ch = Tensor::zeros(dev, &[8, 16], DType::F16).unwrap();
    assert!(matches!(
        attention::qkv_rope_write_kv(&x, &w, None, 3, &RopeKv { cos: &ch, ..rope }, &cache, 0, &slots),
        Err(Error::DTypeMismatch { .. })
    ));
    // A slot past the cache and a negative one: found on the device, named.
    for bad in [64i32, -1] {
        let slots = Tensor::from_slice(dev, &[3i32, bad], &[2]).unwrap();
        match attention::qkv_rope_write_kv(&x, &w, None, 3, &rope, &cache, 0, &slots) {
            Err(Error::IndexOutOfRange { position: 1, index, size: 64, .. }) => assert_eq!(index, bad as i64),
            other => panic!("expected IndexOutOfRange, got {other:?}"),
        }
    }
}
