//! Elementwise kernels: fill, cast, unary and binary math, where.
//!
//! - [`dtype`]: element types as raw bits plus conversions; [`chunk`]: 128-bit and scalar moves;
//! - [`index`]: flat index -> strided offsets with fast division; [`nary`]: the shared driver;
//! - the kernels: [`fill`], [`cast`], [`unary`], [`binary`], [`select`] (where).

pub mod binary;
pub mod cast;
pub mod chunk;
pub mod dtype;
pub mod fill;
pub mod index;
pub mod nary;
pub mod select;
pub mod unary;
