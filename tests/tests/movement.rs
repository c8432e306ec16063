//! Data movement on the device against the reference, bit for bit: index_select and embedding
//! (with out-of-range indices reported as typed errors), transpose of the last two axes, concat.
//!
//! Every op only moves bits, so the tolerance is zero. Shapes include size 1, primes and sizes
//! around the kernels' tiles and chunk widths (transpose tiles are 64 rows x 256 bytes; row copies
//! use the widest of 16/8/4/2/1-byte chunks the addresses allow); inputs come in every layout
//! (contiguous, misaligned, transposed, padded rows) and element widths of 1, 2 and 4 bytes.

use ferrocm::ops::movement;
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::values::{Layout, Rng, read_bits, round_to, view_of};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const DTYPES: [DType; 5] = [DType::F32, DType::Bf16, DType::F16, DType::Fp8E4M3Fnuz, DType::I32];

fn random_view(dtype: DType, shape: &[usize], layout: Layout, rng: &mut Rng) -> Tensor {
    let vals: Vec<f64> = (0..shape.iter().product()).map(|_| round_to(dtype, rng.range(-200.0, 200.0))).collect();
    view_of(device(), dtype, shape, &vals, layout).0
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1usize), Just(2), Just(3), Just(4), Just(7), Just(8), Just(13), Just(16), 1usize..40]
}

proptest! {
    #![proptest_config(proptest_config(120))]

    #[test]
    fn index_select_matches_the_reference(
        dtype in prop::sample::select(DTYPES.to_vec()),
        shape in prop::collection::vec(dim(), 1..=3),
        axis_pick in 0usize..3,
        n_idx in 0usize..20,
        layout in prop::sample::select(Layout::ALL.to_vec()),
        seed in any::<u64>(),
    ) {
        let axis = axis_pick % shape.len();
        let mut rng = Rng(seed);
        let x = random_view(dtype, &shape, layout, &mut rng);
        let idx: Vec<i32> = (0..n_idx).map(|_| rng.below(shape[axis]) as i32).collect();
        let it = Tensor::from_slice(device(), &idx, &[n_idx]).unwrap();
        let y = movement::index_select(&x, axis, &it).map_err(fail)?;
        let mut want_shape = shape.clone();
        want_shape[axis] = n_idx;
        prop_assert_eq!(y.shape(), &want_shape[..]);
        prop_assert_eq!(y.dtype(), dtype);
        let want = reference::movement::index_select(&read_bits(&x), &shape, axis, &idx).unwrap();
        prop_assert_eq!(read_bits(&y), want);
    }

    #[test]
    fn out_of_range_indices_are_reported_not_read(
        rows in 1usize..20,
        width in 1usize..40,
        n_idx in 1usize..30,
        bad_at_pick in 0usize..30,
        bad in prop_oneof![Just(-1i32), Just(i32::MIN), Just(i32::MAX), 0i32..1000],
        seed in any::<u64>(),
    ) {
        let bad_at = bad_at_pick % n_idx;
        let bad = if (0..rows as i32).contains(&bad) { rows as i32 + bad } else { bad };
        let mut rng = Rng(seed);
        let table = random_view(DType::F32, &[rows, width], Layout::Contiguous, &mut rng);
        let mut idx: Vec<i32> = (0..n_idx).map(|_| rng.below(rows) as i32).collect();
        idx[bad_at] = bad;
        let it = Tensor::from_slice(device(), &idx, &[n_idx]).unwrap();
        match movement::embedding(&table, &it) {
            Err(Error::IndexOutOfRange { op: "index_select", position, index, size }) => {
                prop_assert_eq!(position, bad_at);
                prop_assert_eq!(index, bad as i64);
                prop_assert_eq!(size, rows);
            }
            other => prop_assert!(false, "expected IndexOutOfRange, got {:?}", other.map(|t| t.shape().to_vec())),
        }
    }

    #[test]
    fn transpose_last2_matches_the_reference(
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::Fp8E5M2Fnuz, DType::I8]),
        batch in prop::collection::vec(1usize..4, 0..=2),
        rows in prop_oneof![1usize..20, 60usize..70, Just(128)],
        cols in prop_oneof![1usize..20, 60usize..70, 125usize..131, 250usize..260],
        layout in prop::sample::select(Layout::ALL.to_vec()),
        seed in any::<u64>(),
    ) {
        let mut shape = batch.clone();
        shape.extend([rows, cols]);
        prop_assume!(shape.iter().product::<usize>() <= 40_000);
        let mut rng = Rng(seed);
        let x = random_view(dtype, &shape, layout, &mut rng);
        let y = movement::transpose_last2(&x).map_err(fail)?;
        let mut want_shape = shape.clone();
        let r = shape.len();
        want_shape.swap(r - 2, r - 1);
        prop_assert_eq!(y.shape(), &want_shape[..]);
        prop_assert!(y.is_contiguous());
        prop_assert_eq!(read_bits(&y), reference::movement::transpose_last2(&read_bits(&x), &shape));
    }

    #[test]
    fn concat_matches_the_reference(
        dtype in prop::sample::select(DTYPES.to_vec()),
        shape in prop::collection::vec(dim(), 1..=3),
        axis_pick in 0usize..3,
        lens in prop::collection::vec(prop_oneof![Just(0usize), 1usize..12], 1..=4),
        layouts in prop::collection::vec(prop::sample::select(Layout::ALL.to_vec()), 4),
        seed in any::<u64>(),
    ) {
        let axis = axis_pick % shape.len();
        let mut rng = Rng(seed);
        let parts: Vec<(Tensor, Vec<usize>)> = lens
            .iter()
            .zip(&layouts)
            .map(|(&len, &layout)| {
                let mut s = shape.clone();
                s[axis] = len;
                (random_view(dtype, &s, layout, &mut rng), s)
            })
            .collect();
        let refs: Vec<&Tensor> = parts.iter().map(|(t, _)| t).collect();
        let y = movement::concat(&refs, axis).map_err(fail)?;
        let mut want_shape = shape.clone();
        want_shape[axis] = lens.iter().sum();
        prop_assert_eq!(y.shape(), &want_shape[..]);
        let host: Vec<Vec<u32>> = parts.iter().map(|(t, _)| read_bits(t)).collect();
        let ref_parts: Vec<(&[u32], &[usize])> = host.iter().zip(&parts).map(|(h, (_, s))| (&h[..], &s[..])).collect();
        prop_assert_eq!(read_bits(&y), reference::movement::concat(&ref_parts, axis));
    }
}

#[test]
fn embedding_keeps_the_ids_shape() {
    let dev = device();
    let table: Vec<f32> = (0..5 * 8).map(|v| v as f32).collect();
    let table = Tensor::from_slice(dev, &table, &[5, 8]).unwrap();
    let ids = Tensor::from_slice(dev, &[4i32, 0, 2, 2, 1, 3], &[2, 3]).unwrap();
    let e = movement::embedding(&table, &ids).unwrap();
    assert_eq!(e.shape(), &[2, 3, 8]);
    let got = e.to_vec::<f32>().unwrap();
    for (j, id) in [4, 0, 2, 2, 1, 3].into_iter().enumerate() {
        assert_eq!(&got[j * 8..j * 8 + 8], &(0..8).map(|c| (id * 8 + c) as f32).collect::<Vec<_>>()[..]);
    }
    // Strided ids (a transposed view) are read in their logical order.
    let et = movement::embedding(&table, &ids.transpose(0, 1).unwrap()).unwrap();
    assert_eq!(et.shape(), &[3, 2, 8]);
    assert_eq!(&et.to_vec::<f32>().unwrap()[8..16], &got[24..32]); // ids[1][0] = 2
}

#[test]
fn index_select_of_an_empty_axis_reports_the_first_index() {
    let dev = device();
    let x = Tensor::zeros(dev, &[3, 0, 2], DType::F32).unwrap();
    let idx = Tensor::from_slice(dev, &[0i32], &[1]).unwrap();
    assert!(matches!(movement::index_select(&x, 1, &idx), Err(Error::IndexOutOfRange { position: 0, index: 0, size: 0, .. })));
    // No indices: an empty result, nothing checked.
    let none = Tensor::zeros(dev, &[0], DType::I32).unwrap();
    assert_eq!(movement::index_select(&x, 1, &none).unwrap().shape(), &[3, 0, 2]);
}

#[test]
fn bad_arguments_are_refused_before_launch() {
    let dev = device();
    let x = Tensor::zeros(dev, &[4, 5], DType::F32).unwrap();
    let idx = Tensor::from_slice(dev, &[0i32, 1], &[2]).unwrap();
    let fidx = Tensor::zeros(dev, &[2], DType::F32).unwrap();
    let idx2d = Tensor::from_slice(dev, &[0i32, 1], &[1, 2]).unwrap();
    assert!(matches!(movement::index_select(&x, 2, &idx), Err(Error::InvalidArgument { .. })));
    assert!(matches!(movement::index_select(&x, 0, &fidx), Err(Error::DTypeMismatch { what: "indices", .. })));
    assert!(matches!(movement::index_select(&x, 0, &idx2d), Err(Error::Shape { .. })));
    assert!(matches!(movement::embedding(&Tensor::zeros(dev, &[4], DType::F32).unwrap(), &idx), Err(Error::Shape { .. })));
    assert!(matches!(movement::embedding(&x, &fidx), Err(Error::DTypeMismatch { what: "ids", .. })));
    // concat: nothing, bad axis, mixed dtypes, mismatched sizes and ranks.
    let h = Tensor::zeros(dev, &[4, 5], DType::F16).unwrap();
    let y = Tensor::zeros(dev, &[3, 5], DType::F32).unwrap();
    let z = Tensor::zeros(dev, &[4], DType::F32).unwrap();
    assert!(matches!(movement::concat(&[], 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(movement::concat(&[&x], 2), Err(Error::InvalidArgument { .. })));
    assert!(matches!(movement::concat(&[&x, &h], 0), Err(Error::DTypeMismatch { .. })));
    assert!(matches!(movement::concat(&[&x, &y], 1), Err(Error::Shape { .. })));
    assert!(matches!(movement::concat(&[&x, &z], 0), Err(Error::Shape { .. })));
    assert_eq!(movement::concat(&[&x, &y], 0).unwrap().shape(), &[7, 5]);
}

#[test]
fn transpose_of_low_rank_and_empty_inputs() {
    let dev = device();
    let v = Tensor::from_slice(dev, &[1.0f32, 2.0, 3.0], &[3]).unwrap();
    assert_eq!(movement::transpose_last2(&v).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
    let e = Tensor::zeros(dev, &[2, 0, 5], DType::F16).unwrap();
    assert_eq!(movement::transpose_last2(&e).unwrap().shape(), &[2, 5, 0]);
}
