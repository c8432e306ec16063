//! Data-movement kernels: [`rows`] (gather / index_select / concat block copies) and
//! [`transpose`] (last two axes, tiled through LDS).

pub mod rows;
pub mod transpose;
