//! The data-movement kernels' entry points (`abi::movement`).

use super::{gather, transpose};
use crate::abi::movement::{CopyRowsArgs, TransposeArgs};

CopyRowsArgs! {
    COPY_ROWS => gather::copy_rows,
}

TransposeArgs! {
    TRANSPOSE_B8 => transpose::transpose::<1>,
    TRANSPOSE_B16 => transpose::transpose::<2>,
    TRANSPOSE_B32 => transpose::transpose::<4>,
}
