//! ferrocm's benchmarks, shared by `cargo bench` (criterion, `benches/kernels.rs`) and the
//! `ferrocm-bench` report/profile tool behind `cargo xtask bench` and `cargo xtask profile`.
//!
//! - [`registry`]: every op and shape (one [`registry::Case`] per entry);
//! - [`run`]: a case on the emulator, sampled and traced, through the cycle model;
//! - [`report`], [`roofline`]: markdown/JSON tables and the roofline SVG;
//! - [`profile`]: per-class breakdown and hottest basic blocks of one case;
//! - [`gpu`]: real-GPU timing with HIP events when a GPU is present;
//! - [`data`]: normally distributed inputs;
//! - [`aiter`]: AMD's AITER kernels at our shapes, side by side in the same model.
#![warn(missing_docs)]

pub mod aiter;
pub mod data;
pub mod gpu;
pub mod profile;
pub mod registry;
pub mod report;
pub mod roofline;
pub mod run;
