//! Profiled launches on the emulator device, modeled: the memory traffic the cycle model takes
//! as compulsory is the launch's operand allocations, each once (`ProfiledLaunch::operand_bytes`),
//! so bytes that every workgroup re-reads are L2 hits, as in the bench registry's cases.
//!
//! Profiling is the device's state: the test holds the device to itself while it is on. Skipped
//! on a real GPU (no profiling there).

use ferrocm::emulator::{ProfiledLaunch, Profiling};
use ferrocm::ops::qmatmul::{self, QKernel, QMatmulOptions};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Tensor};
use ferrocm_tests::counters::exclusive;
use ferrocm_tests::device;
use ferrocm_tests::quant::random_blocks;
use ferrocm_tests::tensors::random;

/// The GEMV launch of `y = x W^T + residual` run with profiling on.
fn profiled_gemv(x: &Tensor, w: &QuantTensor, residual: &Tensor) -> ProfiledLaunch {
    let emu = device().as_emulator().expect("the emulator");
    emu.take_profiled();
    emu.set_profiling(Some(Profiling { sample_workgroups: 8 }));
    let opts = QMatmulOptions { residual: Some(residual), kernel: QKernel::Gemv, ..Default::default() };
    let ran = qmatmul::qmatmul(x, w, &opts).map(drop);
    emu.set_profiling(None);
    ran.unwrap();
    let launches = emu.take_profiled();
    launches.into_iter().find(|l| l.kernel.starts_with("quant_gemv")).expect("a GEMV launch")
}

#[test]
fn operand_allocations_count_once_and_the_rest_hits_in_l2() {
    let _device = exclusive();
    let Some(emu) = device().as_emulator() else { return };
    let dev = device();
    // 32 activation rows (two row blocks: every workgroup reads 16 rows of x) of a square
    // Q4_1 weight, so x can be its own residual.
    let (m, k) = (32, 576);
    let w = QuantTensor::from_blocks(dev, QuantFormat::Q4_1, [k, k], &random_blocks(QuantFormat::Q4_1, k, k, 0.05, 3)).unwrap();
    let mut seed = 7;
    let (x, _) = random(&[m, k], DType::F16, 1.0, &mut seed);
    let (r, _) = random(&[m, k], DType::F16, 1.0, &mut seed);

    let shared = profiled_gemv(&x, &w, &x);
    let separate = profiled_gemv(&x, &w, &r);
    let (shared_bytes, separate_bytes) = (shared.operand_bytes.unwrap(), separate.operand_bytes.unwrap());
    // Weight, x and y at least (the pool's blocks round up by at most a quarter), and the
    // residual's allocation once more only when it is another one.
    let exact = (w.device_bytes().size_bytes() + 2 * m * k * 2) as u64;
    assert!((exact..=exact * 5 / 4).contains(&shared_bytes), "{shared_bytes} bytes for {exact}");
    let extra = separate_bytes - shared_bytes;
    assert!((2 * m * k) as u64 <= extra && extra <= (2 * m * k * 5 / 4) as u64, "the residual added {extra} bytes");

    // Most requested bytes are rows of x that other workgroups read too: L2 hits.
    let modeled = emu.model(&separate).unwrap();
    assert!(modeled.hbm_fraction < 0.5, "HBM share of requests {}", modeled.hbm_fraction);
    // Without the operand bytes every request is an HBM miss, and the launch models slower.
    let streaming = emu.model(&ProfiledLaunch { operand_bytes: None, ..separate.clone() }).unwrap();
    assert_eq!(streaming.hbm_fraction, 1.0);
    assert!(streaming.seconds > modeled.seconds, "{} vs {}", streaming.seconds, modeled.seconds);
}
