//! Concatenation along one axis.
//!
//! ```
//! use ferrocm::{Device, Tensor, ops::movement};
//! let dev = Device::new()?;
//! let a = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = Tensor::from_slice(&dev, &[5.0f32, 6.0], &[2, 1])?;
//! let c = movement::concat(&[&a, &b], 1)?; // [2, 3]
//! assert_eq!(c.to_vec::<f32>()?, vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::rows::{Rows, launch};
use crate::error::{Error, Result};
use crate::ops::elementwise::copy;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::DevPtr;

/// The inputs joined along `axis` into a new contiguous tensor. All inputs have the same dtype
/// and rank and equal sizes outside `axis`; empty inputs are allowed.
///
/// Each input is one block copy (one launch) into its slot: `outer` rows of `len * inner`
/// contiguous elements, moved with 128-bit accesses when the bytes and addresses allow. An input
/// whose `[axis..]` part is not contiguous, or whose leading dimensions do not merge into one
/// stride, is first copied to a contiguous tensor.
///
/// # Errors
/// [`Error::InvalidArgument`] for no inputs or an axis out of range; [`Error::DTypeMismatch`];
/// [`Error::Shape`] for mismatched ranks or sizes, or an output whose size overflows `usize`;
/// [`Error::DeviceMismatch`]; allocation and launch errors.
pub fn concat(inputs: &[&Tensor], axis: usize) -> Result<Tensor> {
    let op = "concat";
    let first = inputs.first().ok_or_else(|| Error::InvalidArgument { op, message: "no inputs".into() })?;
    if axis >= first.rank() {
        return Err(Error::InvalidArgument { op, message: format!("axis {axis} out of range for rank {}", first.rank()) });
    }
    let mut total = 0;
    for (i, t) in inputs.iter().enumerate() {
        if t.dtype() != first.dtype() {
            return Err(Error::DTypeMismatch { op, what: "input", got: t.dtype(), expected: first.dtype().to_string() });
        }
        if !t.device().same_device(first.device()) {
            return Err(Error::DeviceMismatch { op, operand: "input" });
        }
        let same = t.rank() == first.rank() && (0..t.rank()).all(|d| d == axis || t.shape()[d] == first.shape()[d]);
        if !same {
            return Err(Error::Shape {
                op,
                message: format!("input {i} is {:?}, input 0 is {:?}: they must agree outside axis {axis}", t.shape(), first.shape()),
            });
        }
        // Checked: two [2^63] views (broadcasts of one element) overflowed usize here.
        total = usize::checked_add(total, t.shape()[axis])
            .ok_or_else(|| Error::Shape { op, message: format!("the inputs' sizes along axis {axis} add up to more than fit in usize") })?;
    }
    let mut shape = first.shape().to_vec();
    shape[axis] = total;
    let out = Tensor::empty(first.device(), &shape, first.dtype())?;
    let esize = first.dtype().size();
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let mut at = 0; // start of the current input along axis
    for t in inputs {
        let len = t.shape()[axis];
        if t.numel() > 0 {
            let t = block_view(t, axis)?;
            let (_, pre) = crate::ops::layout::simplify(&t.shape()[..axis], &t.strides()[..axis]);
            let mut ops = Operands::new(op, out.device());
            let rows = Rows {
                src: ops.input_bytes("input", &t)?,
                dst: ops.output_bytes("out", &out)?.add((at * inner * esize) as u64),
                index: DevPtr::NULL,
                error: DevPtr::NULL,
                outer,
                inner_rows: 1,
                row_bytes: len * inner * esize,
                index_limit: 0,
                src_outer_pitch: pre.first().copied().unwrap_or(0) * esize,
                src_row_pitch: 0,
                dst_outer_pitch: total * inner * esize,
                dst_row_pitch: 0,
            };
            launch(&ops, &rows)?;
        }
        at += len;
    }
    Ok(out)
}

/// `t` when its `[axis..]` part is contiguous and its leading dimensions merge to one stride,
/// else a contiguous copy.
fn block_view(t: &Tensor, axis: usize) -> Result<Tensor> {
    let (shape, strides) = (t.shape(), t.strides());
    let mut expected = 1;
    let mut ok = true;
    for d in (axis..t.rank()).rev() {
        if shape[d] != 1 && strides[d] != expected {
            ok = false;
        }
        expected *= shape[d];
    }
    let (pre, _) = crate::ops::layout::simplify(&shape[..axis], &strides[..axis]);
    if ok && pre.len() <= 1 { Ok(t.clone()) } else { copy(t) }
}
