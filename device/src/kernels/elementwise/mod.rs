//! Elementwise kernels: fill, cast, unary and binary math, where.
//!
//! - element types: [`crate::dsl::dtype`]; [`access`]: 128-bit and scalar moves of raw elements;
//! - [`index`]: flat index -> strided offsets with fast division; [`nary`]: the shared driver;
//! - the kernels: [`fill`], [`cast`], [`unary`], [`binary`], [`select`] (where).

pub mod access;
pub mod binary;
pub mod cast;
mod entries;
pub mod fill;
pub mod index;
pub mod nary;
pub mod select;
pub mod unary;
