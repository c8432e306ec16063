//! Shapes and arguments at the edges of `usize` and of emptiness (issue 13): each is a typed
//! error or a correct empty result, never a wrapped size, a panic or a silently skipped check.

use ferrocm::ops::{movement, reduce};
use ferrocm::{DType, Error, Tensor};
use ferrocm_tests::device;

fn one() -> Tensor {
    Tensor::from_slice(device(), &[1.0f32], &[1]).unwrap()
}

#[test]
fn broadcasts_whose_size_overflows_are_shape_errors() {
    // [2^32, 2^32] has 2^64 elements: numel wrapped to 0, then sum gave 0, mean NaN, to_vec an
    // empty vector and max "the reduced axis is empty".
    let e = one().broadcast_to(&[1 << 32, 1 << 32]).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    // Zero dimensions do not hide an overflow of the others (a reduction's inner size would).
    let e = one().broadcast_to(&[0, 1 << 40, 1 << 40]).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    assert!(matches!(Tensor::zeros(device(), &[0, 1 << 40, 1 << 40], DType::F32), Err(Error::Shape { .. })));
}

#[test]
fn huge_broadcast_views_fail_cleanly_where_they_cannot_run() {
    let big = one().broadcast_to(&[1 << 31, 1 << 31]).unwrap(); // 2^62 elements of 4 bytes
    assert_eq!(big.numel(), 1 << 62);
    for r in [reduce::sum(&big, None), reduce::mean(&big, None), reduce::max(&big, None)] {
        assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    }
    // 2^31 rows of 2^31 fit the kernels' 32-bit sizes; the contiguous copy does not fit memory.
    let r = reduce::sum(&big, Some(1));
    assert!(matches!(r, Err(Error::AllocationOverflow { .. })), "{r:?}");
    // 2^64 bytes on the host: an error, not an abort.
    assert!(matches!(big.to_vec::<f32>(), Err(Error::HostOutOfMemory { .. })));
}

#[test]
fn concat_of_sizes_that_overflow_is_a_shape_error() {
    let half = one().broadcast_to(&[1 << 63]).unwrap();
    let e = movement::concat(&[&half, &half], 0).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

#[test]
fn narrow_past_usize_is_an_invalid_argument() {
    let t = Tensor::zeros(device(), &[4], DType::F32).unwrap();
    // Building its own message overflowed (`start + len`).
    let e = t.narrow(0, usize::MAX, 2).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("2 entries from 18446744073709551615"), "{e}");
    assert!(t.narrow(0, 3, 2).is_err());
    assert_eq!(t.narrow(0, 4, 0).unwrap().numel(), 0);
}

#[test]
fn empty_tensors_are_contiguous() {
    let t = Tensor::zeros(device(), &[2, 0], DType::F32).unwrap();
    assert!(t.is_contiguous());
    assert_eq!(t.reshape(&[0, 7]).unwrap().shape(), &[0, 7]);
    assert!(Tensor::zeros(device(), &[0, 3, 0], DType::F16).unwrap().transpose(0, 2).unwrap().is_contiguous());
}

#[test]
fn zero_width_tables_still_check_their_indices() {
    let table = Tensor::zeros(device(), &[5, 0], DType::F32).unwrap();
    let ids = Tensor::from_slice(device(), &[1i32, 4, 0], &[3]).unwrap();
    let e = movement::embedding(&table, &ids).unwrap();
    assert_eq!(e.shape(), &[3, 0]);
    // Index 7 of 5 rows returned Ok: with nothing to copy, no kernel ran to check it.
    let bad = Tensor::from_slice(device(), &[1i32, 7, -1], &[3]).unwrap();
    for r in [movement::index_select(&table, 0, &bad), movement::embedding(&table, &bad)] {
        assert!(matches!(r, Err(Error::IndexOutOfRange { position: 1, index: 7, size: 5, .. })), "{r:?}");
    }
    // Empty along another axis too: [0, 5] indexed along axis 1.
    let t = Tensor::zeros(device(), &[0, 5], DType::F32).unwrap();
    assert!(matches!(movement::index_select(&t, 1, &bad), Err(Error::IndexOutOfRange { position: 1, .. })));
    assert_eq!(movement::index_select(&t, 1, &ids).unwrap().shape(), &[0, 3]);
}
