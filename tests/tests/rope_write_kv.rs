//! `attention::rope_write_kv` (a decode step's rotary embedding and cache write in one launch)
//! against the two ops it fuses: `rope` over the query and key heads, then `write_kv` of the
//! rotated keys and the values. Both are checked against their f64 references in their own
//! suites (`rope.rs`, `attention_decode.rs`); the fused kernel does the same f32 arithmetic, so
//! the queries and both caches must be equal bit for bit, NaN rows of positions outside the
//! tables included.
//!
//! Cases: f16 and bf16; head dims 32, 64, 96 and 128; GQA 3:1 and 1:1; the whole head rotated
//! or only part of it; batches of 1-3 sequences of 1-3 tokens at different positions, slots
//! spread over shuffled pages of 16 or 48; a fused projection read in place and one whose
//! tokens are strided.

use ferrocm::ops::attention::{self, PagedKvCache, RopeKv, write_kv};
use ferrocm::ops::rope::{self, RopeLayout, RopeOptions, RopeTable};
use ferrocm::{DType, Error, Tensor};
use ferrocm_tests::attention::{rope_tables, shuffled_slots};
use ferrocm_tests::tensors::{bits16, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    d: usize,
    rot: usize,
    heads: usize,
    kv_heads: usize,
    batch: usize,
    seq: usize,
    /// Extra heads of padding per token (a strided projection), 0 for a plain one.
    pad: usize,
    seed: u64,
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let dev = device();
    let mut seed = c.seed;
    let (h, kvh, d) = (c.heads, c.kv_heads, c.d);
    let all = h + 2 * kvh;
    let tokens = c.batch * c.seq;
    // cos/sin of real angles for 40 positions; a sequence may start past them (NaN rows).
    let rows = 40;
    let (cos, sin) = rope_tables(rows, c.rot / 2);
    let starts: Vec<i32> = (0..c.batch).map(|b| if b == 2 { 39 } else { (b * 17 + c.seed as usize % 5) as i32 }).collect();
    let offsets = Tensor::from_slice(dev, &starts, &[c.batch]).unwrap();
    // The projection, padded per token when strided.
    let raw: Vec<f64> = (0..tokens * (all + c.pad) * d).map(|_| uniform(&mut seed) * 4.0).collect();
    let (full, _) = tensor(&raw, &[c.batch, c.seq, all + c.pad, d], c.dtype);
    let qkv = full.narrow(2, c.pad, all).unwrap();
    // Slots: pages of 16 (or, every other seed, of 48: the kernel's invariant divisor is then
    // no shift) dealt in a shuffled order.
    let pages = tokens.div_ceil(16) + 3;
    let slots = shuffled_slots(tokens, pages, &mut seed);
    let page_size = if c.seed % 2 == 0 { 16 } else { 48 };

    // The two ops it fuses.
    let two = PagedKvCache::new(dev, 2, pages, page_size, kvh, d, c.dtype).unwrap();
    let opts = RopeOptions {
        layout: RopeLayout::Interleaved,
        table: RopeTable::Cache { cos: &cos, sin: &sin },
        rotary_dim: Some(c.rot),
        offsets: Some(&offsets),
    };
    let qk = rope::rope(&qkv.narrow(2, 0, h + kvh).unwrap(), &opts).unwrap();
    let flat = |t: Tensor| t.contiguous().unwrap().reshape(&[tokens, kvh, d]).unwrap();
    write_kv(&two, 1, &flat(qk.narrow(2, h, kvh).unwrap()), &flat(qkv.narrow(2, h + kvh, kvh).unwrap()), &slots).unwrap();
    let want_q = qk.narrow(2, 0, h).unwrap();

    // The fused launch.
    let one = PagedKvCache::new(dev, 2, pages, page_size, kvh, d, c.dtype).unwrap();
    let q = attention::rope_write_kv(&qkv, h, &RopeKv { cos: &cos, sin: &sin, offsets: &offsets }, &one, 1, &slots)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(q.shape(), &[c.batch, c.seq, h, d]);
    prop_assert!(bits16(&q) == bits16(&want_q), "queries differ ({:?})", c);
    let (k1, v1) = one.layer(1).unwrap();
    let (k2, v2) = two.layer(1).unwrap();
    prop_assert!(bits16(k1) == bits16(k2), "K caches differ ({:?})", c);
    prop_assert!(bits16(v1) == bits16(v2), "V caches differ ({:?})", c);
    // Layer 0 untouched.
    prop_assert!(bits16(one.layer(0).unwrap().0).iter().all(|&b| b == 0));
    // The rotation happened: a rotated position's query is not its input.
    if starts[0] > 0 {
        prop_assert!(bits16(&q.narrow(0, 0, 1).unwrap()) != bits16(&qkv.narrow(0, 0, 1).unwrap().narrow(2, 0, h).unwrap()));
    }
    Ok(())
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(DType::F16), Just(DType::Bf16)],
        prop_oneof![Just(32usize), Just(64), Just(96), Just(128)],
        any::<bool>(),
        prop_oneof![Just((3usize, 1usize)), Just((2, 2)), Just((9, 3))],
        1usize..=3,
        1usize..=3,
        prop_oneof![Just(0usize), Just(1)],
        any::<u64>(),
    )
        .prop_map(|(dtype, d, part, (heads, kv_heads), batch, seq, pad, seed)| Case {
            dtype,
            d,
            rot: if part { d / 2 } else { d },
            heads,
            kv_heads,
            batch,
            seq,
            pad,
            seed,
        })
}

proptest! {
    #![proptest_config(proptest_config(24))]
    #[test]
    fn fused_step_equals_rope_then_write_kv(c in case()) {
        check(&c)?;
    }
}

#[test]
fn a_batch_with_a_position_past_the_tables() {
    // Sequence 2 starts at position 39 of 40: its second and third tokens are NaN rows.
    for dtype in [DType::F16, DType::Bf16] {
        check(&Case { dtype, d: 64, rot: 64, heads: 9, kv_heads: 3, batch: 3, seq: 3, pad: 1, seed: 7 }).unwrap();
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let dev = device();
    let cache = PagedKvCache::new(dev, 1, 4, 16, 1, 32, DType::F16).unwrap();
    let cos = Tensor::zeros(dev, &[8, 16], DType::F32).unwrap();
    let offsets = Tensor::from_slice(dev, &[0i32], &[1]).unwrap();
    let rope = RopeKv { cos: &cos, sin: &cos, offsets: &offsets };
    let qkv = Tensor::zeros(dev, &[1, 2, 5, 32], DType::F16).unwrap();
    let slots = Tensor::from_slice(dev, &[0i32, 1], &[2]).unwrap();
    assert!(attention::rope_write_kv(&qkv, 3, &rope, &cache, 0, &slots).is_ok());
    // Heads that do not add up, another head dim, another dtype, a layer past the last.
    assert!(matches!(attention::rope_write_kv(&qkv, 2, &rope, &cache, 0, &slots), Err(Error::Shape { .. })));
    let q64 = Tensor::zeros(dev, &[1, 2, 5, 64], DType::F16).unwrap();
    assert!(matches!(attention::rope_write_kv(&q64, 3, &rope, &cache, 0, &slots), Err(Error::Shape { .. })));
    let qb = Tensor::zeros(dev, &[1, 2, 5, 32], DType::Bf16).unwrap();
    assert!(matches!(attention::rope_write_kv(&qb, 3, &rope, &cache, 0, &slots), Err(Error::DTypeMismatch { .. })));
    assert!(matches!(attention::rope_write_kv(&qkv, 3, &rope, &cache, 1, &slots), Err(Error::InvalidArgument { .. })));
    // Tables: not f32, a width whose rotation is not a multiple of 8, wider than the head.
    let ch = Tensor::zeros(dev, &[8, 16], DType::F16).unwrap();
    assert!(matches!(attention::rope_write_kv(&qkv, 3, &RopeKv { cos: &ch, ..rope }, &cache, 0, &slots), Err(Error::DTypeMismatch { .. })));
    for w in [6usize, 20] {
        let t = Tensor::zeros(dev, &[8, w], DType::F32).unwrap();
        let r = RopeKv { cos: &t, sin: &t, offsets: &offsets };
        assert!(matches!(attention::rope_write_kv(&qkv, 3, &r, &cache, 0, &slots), Err(Error::Shape { .. })), "width {w}");
    }
    // Offsets and slots: counts and dtypes.
    let two = Tensor::from_slice(dev, &[0i32, 0], &[2]).unwrap();
    assert!(matches!(attention::rope_write_kv(&qkv, 3, &RopeKv { offsets: &two, ..rope }, &cache, 0, &slots), Err(Error::Shape { .. })));
    assert!(matches!(attention::rope_write_kv(&qkv, 3, &rope, &cache, 0, &offsets), Err(Error::Shape { .. })));
    let fslots = Tensor::zeros(dev, &[2], DType::F32).unwrap();
    assert!(matches!(attention::rope_write_kv(&qkv, 3, &rope, &cache, 0, &fslots), Err(Error::DTypeMismatch { .. })));
    // A slot past the cache and a negative one: found on the device, named.
    for bad in [64i32, -1] {
        let slots = Tensor::from_slice(dev, &[3i32, bad], &[2]).unwrap();
        match attention::rope_write_kv(&qkv, 3, &rope, &cache, 0, &slots) {
            Err(Error::IndexOutOfRange { position: 1, index, size: 64, .. }) => assert_eq!(index, bad as i64),
            other => panic!("expected IndexOutOfRange, got {other:?}"),
        }
    }
}
