//! `where`: `out = cond ? a : b` elementwise with numpy broadcasting of all three.
//!
//! The condition is an **i8** tensor (bool-like bytes: nonzero is true) or an **i32** tensor
//! (nonzero is true). Values are selected as bits, so `a` and `b` may be any dtype of 2 or 4
//! bytes (f32, f16, bf16, i32, u32), both the same.
//!
//! ```
//! use ferrocm::{Device, Tensor, ops::elementwise as ew};
//! let dev = Device::new()?;
//! let cond = Tensor::from_slice(&dev, &[1i8, 0, 1], &[3])?;
//! let a = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0], &[3])?;
//! let b = Tensor::from_slice(&dev, &[0.0f32], &[1])?; // broadcast
//! assert_eq!(ew::where_(&cond, &a, &b)?.to_vec::<f32>()?, vec![1.0, 0.0, 3.0]);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::plan::{Nary, broadcast_shapes, run};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use ferrocm_device::abi::elementwise::{self as abi, type_code};

/// `cond ? a : b` into a new contiguous tensor of the broadcast shape and `a`'s dtype.
///
/// # Errors
/// [`Error::DTypeMismatch`] for a condition other than i8/i32, or `a` and `b` of different
/// dtypes; [`Error::Unsupported`] for values wider than 4 bytes (no such dtype yet); [`Error::Shape`]
/// when the shapes do not broadcast; [`Error::DeviceMismatch`]; allocation and launch errors.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let op = "where";
    let (cond_code, cond_bytes) = match cond.dtype() {
        DType::I8 => (type_code::I8, 1),
        DType::I32 => (type_code::I32, 4),
        d => return Err(Error::DTypeMismatch { op, what: "cond", got: d, expected: "i8 or i32".into() }),
    };
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch { op, what: "b", got: b.dtype(), expected: a.dtype().to_string() });
    }
    let vbytes = a.dtype().size();
    let kernel = match vbytes {
        4 => abi::WHERE_B32,
        2 => abi::WHERE_B16,
        1 => abi::WHERE_B8,
        n => {
            return Err(Error::Unsupported {
                op,
                what: format!("{n}-byte values ({}); 1-, 2- and 4-byte dtypes are supported", a.dtype()),
            });
        }
    };
    let epl = 16 / cond_bytes.min(vbytes) as u32;
    let shape = broadcast_shapes(op, &[cond.shape(), a.shape(), b.shape()])?;
    run(&Nary {
        op,
        kernel,
        epl,
        inputs: &[cond, a, b],
        names: &["cond", "a", "b"],
        out_shape: &shape,
        out_dtype: a.dtype(),
        code: 0,
        type_code: cond_code,
        alpha: 0.0,
        beta: 0.0,
    })
}
