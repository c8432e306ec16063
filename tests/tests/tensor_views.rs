//! `Tensor::unflatten` (splitting an axis of any view), `Tensor::flatten` (merging axes of a
//! view without a copy) and `Tensor::copy_from` (overwriting a slice in place, as a KV cache
//! does), against host index arithmetic.

use ferrocm::{DType, Error, Tensor};
use ferrocm_tests::device;

#[test]
fn unflatten_splits_an_axis_of_a_strided_view() {
    let dev = device();
    // [tokens 3, heads 6, dim 2]: narrow the heads to 4, then split them into 2 groups of 2.
    let data: Vec<f32> = (0..36).map(|i| i as f32).collect();
    let t = Tensor::from_slice(dev, &data, &[3, 6, 2]).unwrap();
    let v = t.narrow(1, 1, 4).unwrap().unflatten(1, &[2, 2]).unwrap();
    assert_eq!(v.shape(), &[3, 2, 2, 2]);
    assert_eq!(v.strides(), &[12, 4, 2, 1]);
    let got = v.to_vec::<f32>().unwrap();
    let mut want = Vec::new();
    for tok in 0..3 {
        for g in 0..2 {
            for h in 0..2 {
                for d in 0..2 {
                    want.push(data[tok * 12 + (1 + g * 2 + h) * 2 + d]);
                }
            }
        }
    }
    assert_eq!(got, want);
    // Transposed axes split too: the new axes keep the old stride's multiples.
    let tt = t.transpose(0, 1).unwrap().unflatten(0, &[3, 2]).unwrap();
    assert_eq!(tt.shape(), &[3, 2, 3, 2]);
    assert_eq!(tt.strides(), &[4, 2, 12, 1]);
}

#[test]
fn unflatten_refuses_sizes_that_do_not_multiply() {
    let t = Tensor::zeros(device(), &[4, 6], DType::F32).unwrap();
    assert!(matches!(t.unflatten(1, &[4, 2]), Err(Error::Shape { .. })));
    assert!(matches!(t.unflatten(2, &[6]), Err(Error::InvalidArgument { .. })));
    assert!(matches!(t.unflatten(1, &[usize::MAX, 2]), Err(Error::Shape { .. })));
    assert_eq!(t.unflatten(0, &[1, 4, 1]).unwrap().shape(), &[1, 4, 1, 6]);
}

#[test]
fn flatten_merges_axes_of_a_view_without_a_copy() {
    let dev = device();
    // [batch 2, tokens 3, heads 5, dim 2]: heads 1..4 of every (batch, token) merged over
    // batch and tokens, as the KV cache writes a fused QKV output.
    let data: Vec<f32> = (0..60).map(|i| i as f32).collect();
    let t = Tensor::from_slice(dev, &data, &[2, 3, 5, 2]).unwrap();
    let k = t.narrow(2, 1, 3).unwrap();
    let f = k.flatten(0, 1).unwrap();
    assert_eq!(f.shape(), &[6, 3, 2]);
    assert_eq!(f.strides(), &[10, 2, 1]);
    assert_eq!(f.addr(), k.addr(), "a view, not a copy");
    let mut want = Vec::new();
    for bt in 0..6 {
        for h in 1..4 {
            want.extend_from_slice(&data[bt * 10 + h * 2..bt * 10 + h * 2 + 2]);
        }
    }
    assert_eq!(f.to_vec::<f32>().unwrap(), want);
    // Axes of size 1 merge with anything; a whole contiguous tensor flattens to its elements.
    let one = t.narrow(1, 2, 1).unwrap().flatten(1, 2).unwrap();
    assert_eq!((one.shape(), one.strides()), (&[2usize, 5, 2][..], &[30usize, 2, 1][..]));
    assert_eq!(t.flatten(0, 3).unwrap().to_vec::<f32>().unwrap(), data);
    assert_eq!(t.flatten(2, 2).unwrap().shape(), t.shape());
}

#[test]
fn flatten_refuses_axes_that_are_not_one_run() {
    let t = Tensor::zeros(device(), &[2, 3, 5, 2], DType::F32).unwrap();
    // The narrowed axis is inside the merge: its rows leave gaps.
    assert!(matches!(t.narrow(2, 1, 3).unwrap().flatten(1, 3), Err(Error::Layout { .. })));
    // Transposed axes run backwards.
    assert!(matches!(t.transpose(0, 1).unwrap().flatten(0, 1), Err(Error::Layout { .. })));
    assert!(matches!(t.flatten(2, 1), Err(Error::InvalidArgument { .. })));
    assert!(matches!(t.flatten(0, 4), Err(Error::InvalidArgument { .. })));
}

#[test]
fn copy_from_overwrites_a_slice_in_place() {
    let dev = device();
    let cache = Tensor::zeros(dev, &[8, 3], DType::F32).unwrap();
    let rows = Tensor::from_slice(dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    cache.narrow(0, 5, 2).unwrap().copy_from(&rows).unwrap();
    let got = cache.to_vec::<f32>().unwrap();
    let mut want = vec![0.0f32; 24];
    want[15..21].copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(got, want);
    // From a slice of the same storage that does not overlap.
    cache.narrow(0, 0, 2).unwrap().copy_from(&cache.narrow(0, 5, 2).unwrap()).unwrap();
    assert_eq!(cache.to_vec::<f32>().unwrap()[..6], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn copy_from_refuses_what_it_cannot_copy() {
    let dev = device();
    let dst = Tensor::zeros(dev, &[4, 4], DType::F32).unwrap();
    let src = Tensor::zeros(dev, &[4, 4], DType::F32).unwrap();
    assert!(matches!(dst.copy_from(&src.narrow(0, 0, 2).unwrap()), Err(Error::Shape { .. })));
    assert!(matches!(dst.copy_from(&Tensor::zeros(dev, &[4, 4], DType::Bf16).unwrap()), Err(Error::DTypeMismatch { .. })));
    assert!(matches!(dst.copy_from(&src.transpose(0, 1).unwrap()), Err(Error::Layout { .. })));
    assert!(matches!(dst.narrow(1, 0, 2).unwrap().copy_from(&src.narrow(1, 0, 2).unwrap()), Err(Error::Layout { .. })));
    // Overlapping rows of one storage.
    assert!(matches!(dst.narrow(0, 0, 2).unwrap().copy_from(&dst.narrow(0, 1, 2).unwrap()), Err(Error::Layout { .. })));
}
