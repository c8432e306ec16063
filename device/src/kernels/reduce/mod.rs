//! Reductions over one axis (sum, mean, max, min, argmax, argmin), f32 accumulation.
//!
//! - [`acc`]: the per-lane state of each operation, NaN and tie rules;
//! - [`rows`]: the contiguous axis (and "everything"), a group of lanes per row;
//! - [`cols`]: a strided axis, lanes along the contiguous dimension, rows combined through LDS;
//! - [`partials`]: combining the f32 partials of split reductions;
//! - [`out`]: writing results in the output type.

pub mod acc;
pub mod cols;
mod entries;
pub mod out;
pub mod partials;
pub mod rows;

use crate::abi::reduce::op;

/// Runs `$body` with `$r` bound to the [`Reducer`] type of the op code `$op`.
macro_rules! with_reducer {
    ($op:expr, $r:ident => $body:expr) => {
        match $op {
            crate::abi::reduce::op::SUM | crate::abi::reduce::op::MEAN => {
                type $r = crate::kernels::reduce::acc::Sum;
                $body
            }
            crate::abi::reduce::op::MAX => {
                type $r = crate::kernels::reduce::acc::Max;
                $body
            }
            crate::abi::reduce::op::MIN => {
                type $r = crate::kernels::reduce::acc::Min;
                $body
            }
            crate::abi::reduce::op::ARGMAX => {
                type $r = crate::kernels::reduce::acc::ArgMax;
                $body
            }
            _ => {
                type $r = crate::kernels::reduce::acc::ArgMin;
                $body
            }
        }
    };
}
pub(crate) use with_reducer;

/// True when the op code is an arg op (the state carries an index).
#[inline(always)]
pub fn is_arg(code: u32) -> bool {
    code == op::ARGMAX || code == op::ARGMIN
}
