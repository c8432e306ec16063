//! Memory efficiency of the elementwise and movement kernels, from the emulator's counters.
//!
//! The goals: global traffic at most 1.05x the minimum (every input byte read once, every output
//! byte written once), 128-bit accesses wherever alignment allows, and every touched 64-byte line
//! fully used. "Traffic" is the distinct 64-byte lines each memory instruction touches, times 64:
//! what the memory system moves, where several lanes reading one word cost one line, not one
//! access each. Skipped on a real GPU (no counters there).
//!
//! One test function: the emulator keeps the counters of the last launch per device, and the
//! tests of a binary run in parallel threads sharing the device.

use ferrocm::emulator::GlobalCounters;
use ferrocm::ops::{elementwise as ew, movement};
use ferrocm::{DType, Tensor};
use ferrocm_tests::device;
use ferrocm_tests::values::tensor_of;

/// The global counters of the last launch.
fn last() -> GlobalCounters {
    device().as_emulator().expect("emulator").last_launch().expect("a launch").counters.global
}

/// Checks one launch against its minimum traffic: line traffic within `slack` of `min_bytes`, at
/// most `partial_ok` instructions with partially used lines, and only the lane access widths in
/// `widths`. Problems are collected in `bad` (so one run prints every kernel's figures).
fn check(bad: &mut Vec<String>, what: &str, g: &GlobalCounters, min_bytes: u64, slack: f64, widths: &[u32], partial_ok: u64) {
    let traffic = g.lines * 64;
    let ratio = traffic as f64 / min_bytes as f64;
    eprintln!(
        "{what}: read {} B, written {} B, line traffic {traffic} B = {ratio:.3}x minimum, lane accesses by width {:?}, partial-line instructions {}",
        g.bytes_read, g.bytes_written, g.lane_accesses_by_width, g.partially_used_line_instructions
    );
    if !(ratio >= 1.0 - 1e-9 && ratio <= slack) {
        bad.push(format!("{what}: traffic {ratio:.3}x the minimum (allowed {slack})"));
    }
    if g.partially_used_line_instructions > partial_ok {
        bad.push(format!("{what}: {} instructions with partially used lines", g.partially_used_line_instructions));
    }
    let used: Vec<u32> = g.lane_accesses_by_width.keys().copied().collect();
    if !used.iter().all(|w| widths.contains(w)) {
        bad.push(format!("{what}: access widths {used:?}, expected only {widths:?}"));
    }
}

fn f32s(n: usize) -> Vec<f64> {
    (0..n).map(|i| (i % 97) as f64 * 0.25 - 12.0).collect()
}

#[test]
fn elementwise_and_movement_kernels_move_each_byte_once_in_full_lines() {
    let dev = device();
    if dev.as_emulator().is_none() {
        eprintln!("not on the emulator: no counters");
        return;
    }
    let mut bad = Vec::new();
    // 8 workgroups of 256 work-items x 4 f32 (or 8 bf16) each.
    let n = 8 * 256 * 8;

    let x = tensor_of(dev, DType::F32, &[n], &f32s(n));
    ew::gelu_erf(&x).unwrap();
    check(&mut bad, "unary f32 gelu", &last(), 2 * 4 * n as u64, 1.0, &[16], 0);

    let a = tensor_of(dev, DType::Bf16, &[64, n / 64], &f32s(n));
    let b = tensor_of(dev, DType::Bf16, &[64, n / 64], &f32s(n));
    ew::mul(&a, &b).unwrap();
    check(&mut bad, "binary bf16 same shape", &last(), 3 * 2 * n as u64, 1.0, &[16], 0);

    // A bias row broadcast over 64 rows: each wave reads the bias lines its rows need, so the
    // bias is read once per wave (from cache after the first: HBM traffic stays at the minimum),
    // and line traffic is 1.25x here (2 rows of 512 bytes per wave).
    let bias = tensor_of(dev, DType::Bf16, &[n / 64], &f32s(n / 64));
    ew::add(&a, &bias).unwrap();
    let g = last();
    let min = (2 * n + 2 * n + 2 * n / 64) as u64;
    check(&mut bad, "binary bf16 + broadcast bias row", &g, min, 1.3, &[16], 0);

    ew::cast(&x, DType::Fp8E4M3Fnuz).unwrap();
    check(&mut bad, "cast f32 -> fp8", &last(), 5 * n as u64, 1.0, &[4, 16], 0);
    let h = tensor_of(dev, DType::F16, &[n], &f32s(n));
    ew::cast(&h, DType::Fp8E5M2Fnuz).unwrap();
    check(&mut bad, "cast f16 -> fp8", &last(), 3 * n as u64, 1.0, &[8, 16], 0);

    let c = tensor_of(dev, DType::I8, &[n], &(0..n).map(|i| (i % 3) as f64).collect::<Vec<_>>());
    ew::where_(&c, &x, &x).unwrap();
    check(&mut bad, "where f32 (i8 condition)", &last(), 13 * n as u64, 1.0, &[4, 16], 0);

    ew::fill(&x, 1.0).unwrap();
    check(&mut bad, "fill f32", &last(), 4 * n as u64, 1.0, &[16], 0);

    // Transpose: 128 x 256 f32, through LDS; both sides 128-bit and line-complete.
    let m = tensor_of(dev, DType::F32, &[128, 256], &f32s(128 * 256));
    movement::transpose_last2(&m).unwrap();
    check(&mut bad, "transpose f32 128x256", &last(), 2 * 4 * 128 * 256, 1.0, &[16], 0);
    let lds = device().as_emulator().unwrap().last_launch().unwrap().counters.lds;
    eprintln!("transpose LDS: {} instructions, {} bank-conflict cycles", lds.instructions, lds.bank_conflict_cycles);
    if lds.bank_conflict_cycles != 0 {
        bad.push(format!("transpose: {} bank-conflict cycles", lds.bank_conflict_cycles));
    }

    // Embedding: 512 rows of 256 bytes (64 f32) from a 1000-row table; each row's index is read
    // by its 16 lanes (one line per wave), the rows with 128-bit accesses.
    let table = tensor_of(dev, DType::F32, &[1000, 64], &f32s(64_000));
    let ids: Vec<i32> = (0..512).map(|i: i32| i * 37 % 1000).collect();
    let ids = Tensor::from_slice(dev, &ids, &[512]).unwrap();
    movement::embedding(&table, &ids).unwrap();
    // The last launch is the gather (the error-flag readback is a copy, not a launch). Its one
    // partially used line per wave is the index load: the wave's 4 rows share one line of ids.
    check(&mut bad, "embedding 512 x 64 f32", &last(), 2 * 512 * 256 + 512 * 4, 1.05, &[4, 16], 128);

    // Concat along the last axis: each input one block copy of 16-byte chunks.
    let p = tensor_of(dev, DType::F32, &[64, 32], &f32s(2048));
    let q = tensor_of(dev, DType::F32, &[64, 48], &f32s(3072));
    movement::concat(&[&p, &q], 1).unwrap();
    check(&mut bad, "concat (second input) 64 x 48 f32", &last(), 2 * 64 * 48 * 4, 1.0, &[16], 0);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
