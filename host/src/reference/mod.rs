//! Plain CPU implementations of every device op: the definition each kernel is tested against.
//!
//! Written for clarity, not speed: straightforward loops, f64 accumulation where a sum is
//! involved, the same rounding rules the device op documents. Public, so users can check results
//! and tests can share them.
//!
//! # Panics are the contract for mismatched arguments
//! The references take host slices and the sizes that describe them, both entirely in the
//! caller's hands: slices that do not hold what the sizes say are a bug in the calling code, not
//! a condition to handle at run time. So every function checks its arguments before computing
//! and panics with a message naming the mismatch (each documents when under `# Panics`), as
//! `slice::copy_from_slice` does, rather than return a `Result` that every comparison in the
//! test suites would unwrap on the spot. None reads past its inputs or silently ignores part of
//! them, and sizes are multiplied with overflow checks (an overflowing shape is a mismatch).
//! Data-dependent outcomes are values, not panics: an out-of-range index is
//! [`movement::index_select`]'s `Err`, an empty max is `-inf`.

pub mod attention;
pub mod basic;
pub mod elementwise;
pub mod gemm;
pub mod math;
pub mod movement;
pub mod norm;
pub mod quant;
pub mod reduce;
pub mod rope;
pub mod softmax;

/// The element count of `shape`, `None` past `usize::MAX`.
pub(crate) fn elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Panics unless `data` holds exactly `shape`'s elements (`what` names the caller and operand).
#[track_caller]
pub(crate) fn assert_holds(what: &str, len: usize, shape: &[usize]) {
    assert!(elements(shape) == Some(len), "{what}: {len} elements do not make the shape {shape:?}");
}

#[cfg(test)]
mod tests {
    //! The references refuse mismatched arguments up front with a message naming them (before,
    //! some indexed out of bounds deep inside, some used a prefix of a longer slice).
    use super::*;
    use crate::ops::reduce::ReduceOp;
    use crate::ops::rope::RopeLayout;

    #[test]
    #[should_panic(expected = "blockscaled: sa: 3 elements do not make the shape [2, 1]")]
    fn blockscaled_checks_its_scales() {
        gemm::blockscaled(&[0.0; 8], &[1.0; 3], &[0.0; 12], &[1.0], 2, 3, 4);
    }

    #[test]
    #[should_panic(expected = "broadcast: [3] does not broadcast to [2, 2]")]
    fn broadcast_checks_the_shapes() {
        elementwise::broadcast(&[1, 2, 3], &[3], &[2, 2]);
    }

    #[test]
    #[should_panic(expected = "broadcast: data: 2 elements do not make the shape [3]")]
    fn broadcast_checks_the_data() {
        elementwise::broadcast(&[1, 2], &[3], &[2, 3]);
    }

    #[test]
    #[should_panic(expected = "concat: a part: 3 elements do not make the shape [2, 2]")]
    fn concat_checks_each_part() {
        movement::concat(&[(&[1, 2, 3, 4][..], &[2, 2][..]), (&[5, 6, 7][..], &[2, 2][..])], 0);
    }

    #[test]
    #[should_panic(expected = "concat: part 1 is [3, 1]")]
    fn concat_checks_the_other_axes() {
        movement::concat(&[(&[1, 2, 3, 4][..], &[2, 2][..]), (&[5, 6, 7][..], &[3, 1][..])], 1);
    }

    #[test]
    #[should_panic(expected = "reduce: axis Some(2) out of range for rank 2")]
    fn reduce_checks_the_axis() {
        reduce::reduce(&[0.0; 4], &[2, 2], ReduceOp::Sum, Some(2));
    }

    #[test]
    #[should_panic(expected = "reduce: x: 4 elements do not make the shape [4294967296, 4294967296]")]
    fn an_overflowing_shape_is_a_mismatch() {
        reduce::reduce(&[0.0; 4], &[1 << 32, 1 << 32], ReduceOp::Sum, None);
    }

    #[test]
    #[should_panic(expected = "rope: rotary_dim 6 must be even and at most head_dim 4")]
    fn rope_keeps_the_rotation_inside_a_head() {
        let s = rope::RopeShape { batch: 1, seq: 1, heads: 2, head_dim: 4, rotary_dim: 6 };
        rope::rope(&[0.0; 8], s, RopeLayout::HalfSplit, None, |_, _| (1.0, 0.0));
    }

    #[test]
    fn matching_arguments_pass_the_checks() {
        assert_eq!(elementwise::broadcast(&[1, 2], &[2, 1], &[2, 2]), vec![1, 1, 2, 2]);
        assert_eq!(gemm::blockscaled(&[1.0; 2], &[2.0], &[1.0; 2], &[3.0], 1, 1, 2), vec![12.0]);
        assert_eq!(elements(&[3, usize::MAX]), None);
        assert_eq!(elements(&[3, 0, usize::MAX]), Some(0));
        assert_eq!(elements(&[]), Some(1));
    }
}
