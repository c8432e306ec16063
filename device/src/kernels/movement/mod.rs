//! Data-movement kernels: [`gather`] (embedding / index_select row gathers, concat block copies) and
//! [`transpose`] (last two axes, tiled through LDS).

mod entries;
pub mod gather;
pub mod transpose;
