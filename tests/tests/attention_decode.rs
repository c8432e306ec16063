//! Decode over a paged KV cache on the device against the f64 reference
//! (`ferrocm::reference::attention::decode`), and against prefill of the same tokens.
//!
//! Tolerances: those of the flash suite (`tests/tests/attention.rs`, `ferrocm_tests::attention`),
//! for the decode rows seen as a packed batch (each sequence's new rows over its context,
//! causal). Decode against prefill: the sum of both outputs' bounds.
//!
//! Cases: ragged contexts (not multiples of a step or a page), 1-3 new rows (speculative
//! decoding), every head dimension, GQA ratios 1, 2, 3, 4 and 8, pages of 16, 32 and 48 tokens
//! (48: the kernel's page division by a multiplier that is not a shift) handed out shuffled,
//! forced key splits (the two-launch path) and the chooser's; the K/V rows go in through
//! `write_kv`, whose slots and the block tables are checked on the device.

use ferrocm::ops::attention::{self, BlockTable, DecodeOptions, FlashOptions, PagedKvCache, write_kv};
use ferrocm::reference::attention::{self as reference, Mask};
use ferrocm::{DType, Error, Tensor};
use ferrocm_tests::attention::{bounds, compare};
use ferrocm_tests::tensors::{close, read, rounding, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

/// A cache with sequences of `lens` tokens written through `write_kv` (pages handed out in a
/// shuffled order) over slots all NaN before, their host keys and values packed
/// `[total, kv_heads, d]`, and the pages.
struct Filled {
    cache: PagedKvCache,
    pages: Vec<Vec<u32>>,
    k: Vec<f64>,
    v: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn fill(lens: &[usize], kv_heads: usize, d: usize, page_size: usize, dtype: DType, layer: usize, seed: &mut u64) -> Filled {
    let dev = device();
    let need: usize = lens.iter().map(|n| n.div_ceil(page_size)).sum();
    let total_pages = need + 3;
    let cache = PagedKvCache::new(dev, layer + 1, total_pages, page_size, kv_heads, d, dtype).unwrap();
    // Every slot NaN first: the rows of a sequence's last page past its context, and pages no
    // sequence holds, must not reach the output (their P is 0, and 0 * NaN is NaN).
    let slots_all = total_pages * page_size;
    let (nan, _) = tensor(&vec![f64::NAN; slots_all * kv_heads * d], &[slots_all, kv_heads, d], dtype);
    let every = Tensor::from_slice(dev, &(0..slots_all as i32).collect::<Vec<_>>(), &[slots_all]).unwrap();
    write_kv(&cache, layer, &nan, &nan, &every).unwrap();
    // Shuffled page numbers, dealt to the sequences in order.
    let mut order: Vec<u32> = (0..total_pages as u32).collect();
    for i in (1..order.len()).rev() {
        let j = ((uniform(seed) + 1.0) / 2.0 * (i + 1) as f64) as usize % (i + 1);
        order.swap(i, j);
    }
    let mut it = order.into_iter();
    let pages: Vec<Vec<u32>> = lens.iter().map(|n| (0..n.div_ceil(page_size)).map(|_| it.next().unwrap()).collect()).collect();
    let total: usize = lens.iter().sum();
    let raw_k: Vec<f64> = (0..total * kv_heads * d).map(|_| uniform(seed)).collect();
    let raw_v: Vec<f64> = (0..total * kv_heads * d).map(|_| uniform(seed)).collect();
    let (kt, k) = tensor(&raw_k, &[total, kv_heads, d], dtype);
    let (vt, v) = tensor(&raw_v, &[total, kv_heads, d], dtype);
    let mut slots = Vec::with_capacity(total);
    for (b, &n) in lens.iter().enumerate() {
        slots.extend((0..n).map(|t| (pages[b][t / page_size] as usize * page_size + t % page_size) as i32));
    }
    let slots = Tensor::from_slice(dev, &slots, &[total]).unwrap();
    write_kv(&cache, layer, &kt, &vt, &slots).unwrap();
    Filled { cache, pages, k, v }
}

#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    d: usize,
    lens: Vec<usize>,
    rows: usize,
    kv_heads: usize,
    group: usize,
    page_size: usize,
    splits: Option<usize>,
    seed: u64,
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let mut seed = c.seed;
    let (batch, hq) = (c.lens.len(), c.kv_heads * c.group);
    let f = fill(&c.lens, c.kv_heads, c.d, c.page_size, c.dtype, 1, &mut seed);
    let raw_q: Vec<f64> = (0..batch * c.rows * hq * c.d).map(|_| uniform(&mut seed)).collect();
    let (q, qv) = tensor(&raw_q, &[batch, c.rows, hq, c.d], c.dtype);
    let table = BlockTable::new(device(), &f.pages, &c.lens).unwrap();
    let o = attention::decode(&q, &f.cache, 1, &table, &DecodeOptions { splits: c.splits, ..Default::default() })
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(o.shape(), &[batch, c.rows, hq, c.d]);
    let scale = 1.0 / (c.d as f64).sqrt();
    // The reference over the caches as the test wrote them (host copies in cache layout).
    let (pages, ps, kvh, d) = (f.cache.pages(), c.page_size, c.kv_heads, c.d);
    let (mut kc, mut vc) = (vec![0.0; pages * kvh * ps * d], vec![0.0; pages * kvh * ps * d]);
    let mut t0 = 0;
    for (b, &n) in c.lens.iter().enumerate() {
        for t in 0..n {
            for h in 0..kvh {
                let at = ((f.pages[b][t / ps] as usize * kvh + h) * ps + t % ps) * d;
                let from = ((t0 + t) * kvh + h) * d;
                kc[at..at + d].copy_from_slice(&f.k[from..from + d]);
                vc[at..at + d].copy_from_slice(&f.v[from..from + d]);
            }
        }
        t0 += n;
    }
    let table_host: Vec<Vec<usize>> = f.pages.iter().map(|p| p.iter().map(|&x| x as usize).collect()).collect();
    let (want, want_lse) = reference::decode(&qv, &kc, &vc, &table_host, &c.lens, c.rows, hq, kvh, ps, d, scale);
    // Bounds: the new rows as a packed causal batch over each context.
    let cu_q: Vec<usize> = (0..=batch).map(|b| b * c.rows).collect();
    let mut cu_k = vec![0];
    for &n in &c.lens {
        cu_k.push(cu_k.last().unwrap() + n);
    }
    let mask = Mask { right: Some(0), ..Default::default() };
    let bd = bounds(&qv, &f.k, &f.v, &cu_q, &cu_k, hq, kvh, d, scale, &mask, c.dtype);
    // decode has no LSE output: compare the reference's with itself.
    let lse_packed: Vec<f64> = {
        let tq = batch * c.rows;
        let mut l = vec![0.0; hq * tq];
        for b in 0..batch {
            for h in 0..hq {
                for r in 0..c.rows {
                    l[h * tq + b * c.rows + r] = want_lse[(b * hq + h) * c.rows + r];
                }
            }
        }
        l
    };
    compare(&read(&o), &want, &lse_packed, &lse_packed, &bd, hq, d, c.dtype, &format!("{c:?}"))
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(vec![DType::Bf16, DType::F16]),
        prop::sample::select(vec![32usize, 64, 96, 128, 256]),
        prop::collection::vec(prop_oneof![3usize..70, 70usize..400, Just(32), Just(128)], 1..4),
        1usize..4,
        1usize..3,
        prop::sample::select(vec![1usize, 2, 3, 4, 8]),
        prop::sample::select(vec![16usize, 32, 48]),
        prop::option::weighted(0.4, 1usize..6),
        any::<u64>(),
    )
        .prop_map(|(dtype, d, lens, rows, kv_heads, group, page_size, splits, seed)| Case {
            dtype,
            d,
            lens,
            rows,
            kv_heads,
            group: if d == 256 { group.min(2) } else { group },
            page_size,
            splits,
            seed,
        })
}

proptest! {
    #![proptest_config(proptest_config(24))]

    #[test]
    fn decode_matches_the_reference(c in case()) {
        check(&c)?;
    }
}

/// A decode step against the prefill of the same tokens: causal flash attention over n tokens,
/// its last `rows` rows, against decode of those rows over a cache holding all n.
#[test]
fn decode_agrees_with_prefill_of_the_same_tokens() {
    let dev = device();
    for (n, rows, d, kvh, group) in [(100, 1, 64, 3, 3), (257, 3, 128, 2, 4), (33, 2, 32, 1, 8)] {
        let mut seed = n as u64;
        let hq = kvh * group;
        let f = fill(&[n], kvh, d, 16, DType::Bf16, 0, &mut seed);
        let (k, _) = tensor(&f.k, &[1, n, kvh, d], DType::Bf16);
        let (v, _) = tensor(&f.v, &[1, n, kvh, d], DType::Bf16);
        let raw_q: Vec<f64> = (0..n * hq * d).map(|_| uniform(&mut seed)).collect();
        let (q, qv) = tensor(&raw_q, &[1, n, hq, d], DType::Bf16);
        let prefill = read(&attention::flash(&q, &k, &v, &FlashOptions { causal: true, ..Default::default() }).unwrap());
        let q_new = q.narrow(1, n - rows, rows).unwrap();
        let table = BlockTable::new(dev, &f.pages, &[n]).unwrap();
        let dec = read(&attention::decode(&q_new, &f.cache, 0, &table, &DecodeOptions::default()).unwrap());
        let scale = 1.0 / (d as f64).sqrt();
        let bd = bounds(&qv, &f.k, &f.v, &[0, n], &[0, n], hq, kvh, d, scale, &Mask { right: Some(0), ..Default::default() }, DType::Bf16);
        for r in 0..rows {
            for h in 0..hq {
                let at = (n - rows + r) * hq + h;
                for e in 0..d {
                    let (x, y) = (dec[(r * hq + h) * d + e], prefill[at * d + e]);
                    let tol = 2.0 * (bd.rel[at] * bd.w[at] + rounding(DType::Bf16, y));
                    assert!(close(x, y, tol), "n {n} row {r} head {h} [{e}]: decode {x}, prefill {y} (tol {tol:e})");
                }
            }
        }
    }
}

/// With deferred checks the same calls return at once and [`PagedKvCache::check`] reports the
/// first offending call, in call order, as that call would have; a check forgets what it read;
/// the kernels skip the offending rows and pages either way; more calls than a check holds
/// are checked by the op itself.
#[test]
fn deferred_checks_report_the_first_offending_call() {
    let dev = device();
    let mut seed = 6;
    let f = fill(&[40], 1, 64, 16, DType::Bf16, 0, &mut seed);
    let pages_total = f.cache.pages();
    let cache = f.cache.with_deferred_checks();
    assert!(cache.defers_checks());
    let q = Tensor::zeros(dev, &[1, 1, 2, 64], DType::Bf16).unwrap();
    let k = Tensor::zeros(dev, &[2, 1, 64], DType::Bf16).unwrap();
    let good = BlockTable::new(dev, &f.pages, &[40]).unwrap();
    let mut pages = f.pages.clone();
    pages[0][1] = pages_total as u32 + 7;
    let bad_table = BlockTable::new(dev, &pages, &[40]).unwrap();
    let bad_slot = (pages_total * 16) as i32;
    let good_slots = Tensor::from_slice(dev, &[3i32, 4], &[2]).unwrap();
    let bad_slots = Tensor::from_slice(dev, &[3i32, bad_slot], &[2]).unwrap();
    // Nothing wrong: nothing to report.
    write_kv(&cache, 0, &k, &k, &good_slots).unwrap();
    attention::decode(&q, &cache, 0, &good, &DecodeOptions::default()).unwrap();
    cache.check().unwrap();
    // A bad write, then a bad decode: both return; the check names the write.
    write_kv(&cache, 0, &k, &k, &bad_slots).unwrap();
    attention::decode(&q, &cache, 0, &bad_table, &DecodeOptions::default()).unwrap();
    match cache.check() {
        Err(Error::IndexOutOfRange { op: "attention::write_kv", position: 1, index, size }) => {
            assert_eq!((index, size), (bad_slot as i64, pages_total * 16));
        }
        other => panic!("expected the write's IndexOutOfRange, got {other:?}"),
    }
    // What a check read is forgotten.
    cache.check().unwrap();
    attention::decode(&q, &cache, 0, &bad_table, &DecodeOptions::default()).unwrap();
    match cache.check() {
        Err(Error::IndexOutOfRange { op: "attention::decode", position: 1, index, size }) => {
            assert_eq!((index as usize, size), (pages_total + 7, pages_total));
        }
        other => panic!("expected the decode's IndexOutOfRange, got {other:?}"),
    }
    // Past the calls a check holds, an op checks the earlier ones itself.
    write_kv(&cache, 0, &k, &k, &bad_slots).unwrap();
    let mut first_error = None;
    for i in 0..1100 {
        if let Err(e) = write_kv(&cache, 0, &k, &k, &good_slots) {
            first_error = Some((i, e));
            break;
        }
    }
    match first_error {
        Some((_, Error::IndexOutOfRange { op: "attention::write_kv", position: 1, .. })) => {}
        other => panic!("expected an op to report the unchecked bad write, got {other:?}"),
    }
    cache.check().unwrap();
}

/// Block-table entries and slots outside the cache are refused on the device.
#[test]
fn entries_and_slots_outside_the_cache_are_refused() {
    let dev = device();
    let mut seed = 5;
    let f = fill(&[40], 1, 64, 16, DType::Bf16, 0, &mut seed);
    let q = Tensor::zeros(dev, &[1, 1, 2, 64], DType::Bf16).unwrap();
    // The second of three pages is past the cache.
    let mut pages = f.pages.clone();
    pages[0][1] = f.cache.pages() as u32 + 7;
    let table = BlockTable::new(dev, &pages, &[40]).unwrap();
    match attention::decode(&q, &f.cache, 0, &table, &DecodeOptions::default()) {
        Err(Error::IndexOutOfRange { position, index, size, .. }) => {
            assert_eq!((position, index as usize, size), (1, f.cache.pages() + 7, f.cache.pages()));
        }
        other => panic!("expected IndexOutOfRange, got {other:?}"),
    }
    // A context longer than its table row is a shape error before anything runs.
    let short = BlockTable::new(dev, &[vec![0]], &[40]).unwrap();
    assert!(matches!(attention::decode(&q, &f.cache, 0, &short, &DecodeOptions::default()), Err(Error::Shape { .. })));
    // A slot past the cache, and a negative one.
    let k = Tensor::zeros(dev, &[2, 1, 64], DType::Bf16).unwrap();
    for bad in [(f.cache.pages() * 16) as i32, -1] {
        let slots = Tensor::from_slice(dev, &[3i32, bad], &[2]).unwrap();
        match write_kv(&f.cache, 0, &k, &k, &slots) {
            Err(Error::IndexOutOfRange { position: 1, index, .. }) => assert_eq!(index, bad as i64),
            other => panic!("expected IndexOutOfRange, got {other:?}"),
        }
    }
    // Mismatched shapes and dtypes.
    let q3 = Tensor::zeros(dev, &[1, 1, 3, 64], DType::Bf16).unwrap();
    let ok = BlockTable::new(dev, &f.pages, &[40]).unwrap();
    assert!(matches!(attention::decode(&q3.narrow(2, 0, 3).unwrap(), &f.cache, 0, &ok, &DecodeOptions::default()), Ok(_)));
    let qf = Tensor::zeros(dev, &[1, 1, 2, 64], DType::F16).unwrap();
    assert!(matches!(attention::decode(&qf, &f.cache, 0, &ok, &DecodeOptions::default()), Err(Error::DTypeMismatch { .. })));
    let q32 = Tensor::zeros(dev, &[1, 1, 2, 32], DType::Bf16).unwrap();
    assert!(matches!(attention::decode(&q32, &f.cache, 0, &ok, &DecodeOptions::default()), Err(Error::Shape { .. })));
    assert!(matches!(attention::decode(&q, &f.cache, 1, &ok, &DecodeOptions::default()), Err(Error::InvalidArgument { .. })));
}

/// The kernel splits its grid and query columns through `num::quotient`: 2^20 columns or more
/// (16 per group of query heads and new rows, per key/value head) are refused before anything
/// runs.
#[test]
fn too_many_query_columns_are_unsupported() {
    let dev = device();
    let mut seed = 9;
    let f = fill(&[40], 1, 32, 16, DType::Bf16, 0, &mut seed);
    let table = BlockTable::new(dev, &f.pages, &[40]).unwrap();
    // 65,536 query heads of one key/value head, 16 new rows: 2^20 columns.
    let q = Tensor::zeros(dev, &[1, 16, 1 << 16, 32], DType::Bf16).unwrap();
    match attention::decode(&q, &f.cache, 0, &table, &DecodeOptions::default()) {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("1048576 columns"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}
