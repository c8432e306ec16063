//! What the memory-bound ops cost on large inputs, from the emulator's counters: global bytes
//! moved against the minimum the op needs, 128-bit accesses, fully used 64-byte lines, and LDS
//! bank conflicts (counted with the measured MI300X lane groups of each access width).
//!
//! Each test runs an op at a size where every workgroup is busy, sums the counters of all its
//! launches, prints them (`cargo test --test membound_counters -- --nocapture` for the table)
//! and asserts:
//! - bytes moved <= 1.05 x the minimum (inputs read once, outputs written once), for the
//!   single-pass paths; the two-pass paths for rows longer than one workgroup are bounded by
//!   their design (1.5x for softmax: the row is read twice). Per-column tables (a norm's weight
//!   and bias, RoPE's frequencies) are read once per workgroup by design, so they are allowed
//!   once per workgroup on top (they are L2 hits on a GPU, not HBM traffic) and printed apart.
//!   Split reductions add their f32 partials, written once and read once by the combine;
//! - at least 99% of the bytes in 16-byte lane accesses, besides the combine's 4-byte reads of
//!   split partials;
//! - no memory instruction of the main loops leaves a touched 64-byte line partly unused. A
//!   workgroup's own results (a reduced row's value, a split's partial, a segment's 16-byte
//!   statistic) are 2-16 bytes by nature, so one such instruction per workgroup is allowed
//!   where the op writes them, plus the combine pass's reads of split partials;
//! - zero LDS bank-conflict cycles.
//!
//! The tests share the device's counters, so each holds `counters::exclusive` and they run one
//! at a time. They are skipped on a real GPU (no counters there).

use ferrocm::ops::norm;
use ferrocm::ops::reduce::{self, ReduceOp, ReduceOptions};
use ferrocm::ops::rope::{self, RopeLayout, RopeOptions};
use ferrocm::ops::softmax;
use ferrocm::{DType, Tensor};
use ferrocm_tests::counters::{exclusive, measure};
use ferrocm_tests::tensors::{random, tensor};

/// Prints the counters and checks them against `min_bytes` (times `factor`), plus
/// `per_workgroup` bytes of per-column tables for each workgroup run; `narrow` bytes may be
/// moved in accesses under 16 bytes on top of the 1% allowance.
fn check(
    what: &str,
    c: &ferrocm::emulator::Counters,
    min_bytes: usize,
    factor: f64,
    per_workgroup: usize,
    narrow: usize,
    partial_allowed: u64,
) {
    let g = &c.global;
    let moved = g.bytes_read + g.bytes_written;
    let wide = g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) * 16;
    let tables = c.workgroups as usize * per_workgroup;
    println!(
        "{what:<44} bytes {:>11} / min {:>11} = {:.3}x (tables allowed {:>8})  16B share {:.4}  lines {:>9} (bytes/64 {:>9})  partial-line instr {:>4} (allowed {:>4})  LDS conflict cycles {}",
        moved,
        min_bytes,
        moved as f64 / min_bytes as f64,
        tables,
        wide as f64 / moved as f64,
        g.lines,
        moved / 64,
        g.partially_used_line_instructions,
        partial_allowed,
        c.lds.bank_conflict_cycles
    );
    assert!(
        moved as f64 <= factor * min_bytes as f64 + tables as f64,
        "{what}: {moved} bytes moved, minimum {min_bytes} (+ {tables} of tables)"
    );
    assert!(
        (wide + narrow as u64) as f64 >= 0.99 * moved as f64,
        "{what}: only {wide} of {moved} bytes in 16-byte accesses ({narrow} allowed narrower)"
    );
    assert!(
        g.partially_used_line_instructions <= partial_allowed,
        "{what}: {} instructions left lines partly unused",
        g.partially_used_line_instructions
    );
    assert_eq!(c.lds.bank_conflict_cycles, 0, "{what}: LDS bank conflicts");
}

fn input(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    let mut seed = seed;
    random(shape, dtype, 2.0, &mut seed).0
}

#[test]
fn reductions() {
    let _device = exclusive();
    for (shape, axis, dtype) in [
        (vec![1usize << 22], None, DType::F32),
        (vec![1024, 8192], Some(1), DType::F32),
        (vec![2048, 4096], Some(1), DType::Bf16),
        (vec![2048, 2048], Some(0), DType::F32),
        (vec![16, 512, 256], Some(1), DType::F16),
    ] {
        let x = input(&shape, dtype, 1);
        let n: usize = shape.iter().product();
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::ArgMax] {
            let mut out = 0;
            let Some(((), c)) = measure(|| out = reduce::reduce(&x, op, axis, &ReduceOptions::default()).unwrap().numel()) else { return };
            let plan = reduce::plan(&shape, dtype, axis, x.storage().addr(), 4).unwrap();
            let out_bytes = out * if op.is_arg() { 4 } else { dtype.size() };
            // Every workgroup writes its results (a few bytes). A split reduction also writes
            // its f32 partials (and i32 indices) once and the combine reads them once, 4 bytes
            // per lane (an output's partials are strided or few).
            let allowed = c.workgroups + if plan.splits > 1 { (plan.splits * out) as u64 + 64 } else { 0 };
            let partials = if plan.splits > 1 { plan.splits * out * if op.is_arg() { 8 } else { 4 } } else { 0 };
            let min = n * dtype.size() + out_bytes + 2 * partials;
            check(&format!("{op:?} {shape:?} axis {axis:?} {dtype}"), &c, min, 1.05, 0, partials, allowed);
        }
    }
}

#[test]
fn softmax_rows() {
    let _device = exclusive();
    // (shape, dtype, two-pass): the two-pass path reads the row twice and writes one 16-byte
    // statistic per segment workgroup.
    for (shape, dtype, two_pass) in [
        (vec![1024usize, 8192], DType::F32, false),
        (vec![2048, 4096], DType::Bf16, false),
        (vec![64, 32_768], DType::F16, false),
        (vec![4, 1 << 20], DType::Bf16, true),
    ] {
        let x = input(&shape, dtype, 2);
        let n: usize = shape.iter().product();
        for log in [false, true] {
            let Some(((), c)) = measure(|| {
                if log {
                    softmax::log_softmax(&x).unwrap()
                } else {
                    softmax::softmax(&x).unwrap()
                };
            }) else {
                return;
            };
            let (factor, allowed) = if two_pass { (1.55, c.workgroups) } else { (1.05, 0) };
            check(
                &format!("{} {shape:?} {dtype}", if log { "log_softmax" } else { "softmax" }),
                &c,
                2 * n * dtype.size(),
                factor,
                0,
                0,
                allowed,
            );
        }
    }
}

#[test]
fn norms() {
    let _device = exclusive();
    for (rows, len, dtype, residual) in
        [(2048usize, 4096usize, DType::Bf16, true), (1024, 8192, DType::F32, false), (4096, 2048, DType::F16, true)]
    {
        let x = input(&[rows, len], dtype, 3);
        let r = input(&[rows, len], dtype, 4);
        let w = tensor(&vec![1.5; len], &[len], dtype).0;
        let b = tensor(&vec![0.25; len], &[len], dtype).0;
        let e = dtype.size();
        for layer in [false, true] {
            let Some(((), c)) = measure(|| match (layer, residual) {
                (false, false) => drop(norm::rms_norm(&x, Some(&w), 1e-6).unwrap()),
                (true, false) => drop(norm::layer_norm(&x, Some(&w), Some(&b), 1e-6).unwrap()),
                (false, true) => drop(norm::add_rms_norm(&x, &r, Some(&w), 1e-6).unwrap()),
                (true, true) => drop(norm::add_layer_norm(&x, &r, Some(&w), Some(&b), 1e-6).unwrap()),
            }) else {
                return;
            };
            let tensors = if residual { 4 } else { 2 };
            let affine = if layer { 2 } else { 1 } * len * e;
            check(
                &format!("{} {rows}x{len} {dtype} residual {residual}", if layer { "layer_norm" } else { "rms_norm" }),
                &c,
                tensors * rows * len * e,
                1.05,
                affine,
                0,
                0,
            );
        }
    }
}

#[test]
fn rope_heads() {
    let _device = exclusive();
    for (dtype, layout) in
        [(DType::Bf16, RopeLayout::HalfSplit), (DType::F32, RopeLayout::Interleaved), (DType::F16, RopeLayout::Interleaved)]
    {
        let shape = [4usize, 512, 32, 128];
        let x = input(&shape, dtype, 5);
        let n: usize = shape.iter().product();
        let Some(((), c)) = measure(|| drop(rope::rope(&x, &RopeOptions { layout, ..Default::default() }).unwrap())) else { return };
        // The frequency table: rotary_dim / 2 (hi, lo) f32 pairs.
        check(&format!("rope {shape:?} {dtype} {layout:?}"), &c, 2 * n * dtype.size(), 1.05, shape[3] * 4, 0, 0);
    }
}
