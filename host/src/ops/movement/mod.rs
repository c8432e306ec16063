//! Data movement: [`index_select`] and [`embedding`] (i32-indexed gathers with on-device range
//! checks), [`transpose_last2`] (LDS-tiled, coalesced both ways), [`concat()`] along any axis.
//!
//! Strided views to contiguous memory are [`elementwise::copy`](crate::ops::elementwise::copy)
//! (vectorised) and [`layout::contiguous`](crate::ops::layout::contiguous).

mod rows;

pub mod concat;
pub mod gather;
pub mod transpose;

pub use concat::concat;
pub use gather::{embedding, index_select};
pub use transpose::transpose_last2;
