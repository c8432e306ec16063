//! The reduction kernels' entry points (`abi::reduce`).

use super::{cols, partials, rows};
use crate::abi::reduce::{ReduceColsArgs, ReducePartialsArgs, ReduceRowsArgs};

ReduceRowsArgs! {
    REDUCE_ROWS_F32 => rows::reduce_rows::<f32>,
    REDUCE_ROWS_F16 => rows::reduce_rows::<F16>,
    REDUCE_ROWS_BF16 => rows::reduce_rows::<Bf16>,
}

ReduceColsArgs! {
    REDUCE_COLS_F32 => cols::reduce_cols::<f32>,
    REDUCE_COLS_F16 => cols::reduce_cols::<F16>,
    REDUCE_COLS_BF16 => cols::reduce_cols::<Bf16>,
}

ReducePartialsArgs! {
    REDUCE_PARTIALS => partials::reduce_partials,
}
