//! Gathers by i32 index: [`index_select`] along any axis and [`embedding`] lookups.
//!
//! Every index is checked on the device: an index outside `0..size` is never followed (its row
//! is zero-filled) and the op returns [`Error::IndexOutOfRange`] naming one offending position
//! and its value. Negative indices are out of range (no Python-style wrap-around).
//!
//! ```
//! use ferrocm::{Device, Tensor, ops::movement};
//! let dev = Device::new()?;
//! let table = Tensor::from_slice(&dev, &[0.0f32, 0.1, 1.0, 1.1, 2.0, 2.1], &[3, 2])?; // 3 rows of 2
//! let ids = Tensor::from_slice(&dev, &[2i32, 0, 2], &[3])?;
//! let e = movement::embedding(&table, &ids)?; // [3, 2]
//! assert_eq!(e.to_vec::<f32>()?, vec![2.0, 2.1, 0.0, 0.1, 2.0, 2.1]);
//! let bad = Tensor::from_slice(&dev, &[3i32], &[1])?;
//! assert!(matches!(movement::embedding(&table, &bad), Err(ferrocm::Error::IndexOutOfRange { index: 3, .. })));
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::rows::{Rows, launch};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::elementwise::copy;
use crate::tensor::{Operands, Tensor};

/// `x` with `axis` replaced by the entries `indices` picks: `out[.., j, ..] = x[.., indices[j], ..]`.
/// `indices` is a 1-D i32 tensor (any view). The output is contiguous, of `x`'s dtype.
///
/// ```
/// use ferrocm::{Device, Tensor, ops::movement};
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
/// let cols = Tensor::from_slice(&dev, &[2i32, 2, 0], &[3])?;
/// let y = movement::index_select(&x, 1, &cols)?; // columns 2, 2, 0 of each row
/// assert_eq!(y.to_vec::<f32>()?, vec![3.0, 3.0, 1.0, 6.0, 6.0, 4.0]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
///
/// Each output row (the elements after `axis`) is one contiguous copy; rows whose bytes and
/// addresses are multiples of 16 move with 128-bit loads and stores. A view of `x` whose
/// dimensions after `axis` are not contiguous, or whose dimensions before it do not merge, is
/// first copied to a contiguous tensor (one extra pass).
///
/// # Errors
/// [`Error::InvalidArgument`] for an axis out of range; [`Error::DTypeMismatch`] for non-i32
/// indices; [`Error::Shape`] for indices that are not 1-D; [`Error::DeviceMismatch`];
/// [`Error::IndexOutOfRange`] (detected on the device); allocation and launch errors.
pub fn index_select(x: &Tensor, axis: usize, indices: &Tensor) -> Result<Tensor> {
    let op = "index_select";
    if axis >= x.rank() {
        return Err(Error::InvalidArgument { op, message: format!("axis {axis} out of range for rank {}", x.rank()) });
    }
    if indices.dtype() != DType::I32 {
        return Err(Error::DTypeMismatch { op, what: "indices", got: indices.dtype(), expected: "i32".into() });
    }
    if indices.rank() != 1 {
        return Err(Error::Shape { op, message: format!("indices must be 1-D, got {:?}", indices.shape()) });
    }
    let dev = x.device();
    let mut ops = Operands::new(op, dev);
    ops.check_device("indices", indices)?;
    let n = indices.numel();
    let mut shape = x.shape().to_vec();
    let size = shape[axis];
    shape[axis] = n;
    let out = Tensor::empty(dev, &shape, x.dtype())?;
    let pre: usize = x.shape()[..axis].iter().product();
    let post: usize = x.shape()[axis + 1..].iter().product();
    if out.numel() == 0 || size == 0 {
        // No kernel runs (nothing to copy, or nothing to copy from), so none checks the indices:
        // check them here. A `[5, 0]` table and index 7 returned Ok.
        check_on_host(op, indices, size)?;
        return Ok(out);
    }

    let x = source_view(x, axis)?;
    let idx = if indices.is_contiguous() { indices.clone() } else { copy(indices)? };
    let esize = x.dtype().size();
    let (s_pre, s_axis) = outer_and_axis_strides(&x, axis);
    let error = Tensor::zeros(dev, &[1], DType::U32)?;
    let rows = Rows {
        src: ops.input_bytes("x", &x)?,
        dst: ops.output_bytes("out", &out)?,
        index: ops.input("indices", &idx)?,
        error: ops.output("error flag", &error)?,
        outer: pre,
        inner_rows: n,
        row_bytes: post * esize,
        index_limit: size,
        src_outer_pitch: s_pre * esize,
        src_row_pitch: s_axis * esize,
        dst_outer_pitch: n * post * esize,
        dst_row_pitch: post * esize,
    };
    launch(&ops, &rows)?;
    let flag = error.to_vec::<u32>()?[0];
    if flag != 0 {
        let position = flag as usize - 1;
        let index = idx.narrow(0, position, 1)?.to_vec::<i32>()?[0];
        return Err(Error::IndexOutOfRange { op, position, index: index as i64, size });
    }
    Ok(out)
}

/// The first index outside `0..size`, as the kernel would report it, read on the host (for
/// launches that copy nothing: the indices are all there is to read).
fn check_on_host(op: &'static str, indices: &Tensor, size: usize) -> Result<()> {
    let bad = indices.to_vec::<i32>()?.into_iter().enumerate().find(|&(_, i)| usize::try_from(i).is_ok_and(|i| i >= size) || i < 0);
    match bad {
        Some((position, index)) => Err(Error::IndexOutOfRange { op, position, index: index as i64, size }),
        None => Ok(()),
    }
}

/// `x` itself when its dimensions after `axis` are contiguous and those before it merge into one
/// stride; otherwise a contiguous copy.
fn source_view(x: &Tensor, axis: usize) -> Result<Tensor> {
    let (shape, strides) = (x.shape(), x.strides());
    let mut expected = 1;
    let mut tail_ok = true;
    for d in (axis + 1..x.rank()).rev() {
        if shape[d] != 1 && strides[d] != expected {
            tail_ok = false;
        }
        expected *= shape[d];
    }
    let (pre_shape, _) = crate::ops::layout::simplify(&shape[..axis], &strides[..axis]);
    if tail_ok && pre_shape.len() <= 1 { Ok(x.clone()) } else { copy(x) }
}

/// The stride of the merged dimensions before `axis` (0 when there are none) and of `axis`.
fn outer_and_axis_strides(x: &Tensor, axis: usize) -> (usize, usize) {
    let (_, pre_strides) = crate::ops::layout::simplify(&x.shape()[..axis], &x.strides()[..axis]);
    (pre_strides.first().copied().unwrap_or(0), x.strides()[axis])
}

/// Embedding lookup: `out[i.., :] = table[ids[i..], :]` for a `[vocab, dim]` table and i32 `ids`
/// of any shape; the output is `[ids.shape.., dim]`.
///
/// # Errors
/// [`Error::Shape`] unless `table` is 2-D; as [`index_select`].
pub fn embedding(table: &Tensor, ids: &Tensor) -> Result<Tensor> {
    if table.rank() != 2 {
        return Err(Error::Shape { op: "embedding", message: format!("the table must be [vocab, dim], got {:?}", table.shape()) });
    }
    if ids.dtype() != DType::I32 {
        return Err(Error::DTypeMismatch { op: "embedding", what: "ids", got: ids.dtype(), expected: "i32".into() });
    }
    let flat = if ids.is_contiguous() { ids.clone() } else { copy(ids)? };
    let flat = flat.reshape(&[ids.numel()])?;
    let rows = index_select(table, 0, &flat)?;
    let mut shape = ids.shape().to_vec();
    shape.push(table.shape()[1]);
    rows.reshape(&shape)
}
