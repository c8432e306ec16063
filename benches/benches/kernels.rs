//! criterion benches of what runs here: the emulator's wall time per benchmark case (a sampled,
//! traced launch, as `cargo xtask bench` runs it), whole bf16 GEMMs on the emulator (its speed),
//! and the CPU reference ops. With a GPU (HIP),
//! the same cases are timed on it with HIP events (50 warm-ups, rotating >= 512 MiB of inputs);
//! without one, that group says it is not available and times nothing.
//!
//! Run: `FERROCM_PREBUILT_DIR=target/ferrocm cargo bench -p ferrocm-benches [-- FILTER]`.

use criterion::{Criterion, criterion_group, criterion_main};
use ferrocm::emulator::Profiling;
use ferrocm::ops::gemm::{self, GemmConfig, GemmOptions};
use ferrocm::{DType, Device, Tensor, bf16, reference};
use ferrocm_benches::data::Normal;
use ferrocm_benches::{gpu, registry};
use std::hint::black_box;
use std::time::Duration;

fn emulator(c: &mut Criterion) {
    let dev = match Device::emulator() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("emulator benches skipped: {e}");
            return;
        }
    };
    let emu = dev.as_emulator().expect("an emulator device");
    let mut g = c.benchmark_group("emulator");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    for case in registry::registry() {
        let mut op = match (case.prepare)(&dev, 1) {
            Ok(op) => op,
            Err(e) => {
                eprintln!("{}: {e}", case.name());
                continue;
            }
        };
        emu.set_profiling(Some(Profiling { sample_workgroups: case.sample_workgroups }));
        g.bench_function(case.name(), |b| {
            b.iter(|| {
                op().expect("op");
                emu.take_profiled()
            })
        });
        emu.set_profiling(None);
    }
    g.finish();
}

/// The emulator's own speed (issue 3's target: a whole 1024^3 bf16 GEMM in under 5 s on 2
/// cores, time linear in the work): every workgroup emulated, no sampling, one-pass 128x128
/// configuration so the three sizes run the same kernel.
fn emulator_full_gemm(c: &mut Criterion) {
    let Ok(dev) = Device::emulator() else { return };
    let mut g = c.benchmark_group("emulator_full_gemm");
    g.sample_size(10).warm_up_time(Duration::from_millis(100)).measurement_time(Duration::from_secs(10));
    let mut rng = Normal::new(5);
    for s in [256usize, 512, 1024] {
        let a = Tensor::from_slice(&dev, &rng.vec::<bf16>(s * s, 1.0), &[s, s]).expect("A");
        let w = Tensor::from_slice(&dev, &rng.vec::<bf16>(s * s, 1.0), &[s, s]).expect("W");
        let b = w.transpose(0, 1).expect("view");
        let config = Some(GemmConfig { splits: 1, ..gemm::configs(DType::Bf16)[0] });
        let opts = GemmOptions { config, ..Default::default() };
        g.bench_function(format!("bf16 {s}x{s}x{s}"), |bch| bch.iter(|| gemm::gemm(&a, &b, &opts).expect("gemm")));
    }
    g.finish();
}

fn cpu_reference(c: &mut Criterion) {
    let mut g = c.benchmark_group("cpu_reference");
    let mut rng = Normal::new(3);
    let (x, y) = (rng.vec::<f32>(1 << 20, 1.0), rng.vec::<f32>(1 << 20, 1.0));
    g.bench_function("saxpy 1M f32", |b| b.iter(|| reference::basic::saxpy(1.5, black_box(&x), black_box(&y))));
    let (m, n, k) = (128, 128, 128);
    let (a, w) = (rng.vec::<bf16>(m * k, 1.0), rng.vec::<bf16>(k * n, 1.0));
    g.bench_function("matmul bf16 128x128x128", |b| b.iter(|| reference::gemm::matmul(black_box(&a), black_box(&w), m, n, k)));
    g.finish();
}

fn real_gpu(c: &mut Criterion) {
    let dev = match gpu::gpu_device() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("gpu benches: {e}; nothing timed");
            return;
        }
    };
    let mut g = c.benchmark_group("gpu");
    g.sample_size(gpu::TIMED_RUNS);
    for case in registry::registry() {
        let mut rot = match gpu::Rotation::new(&dev, &case) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{}: {e}", case.name());
                continue;
            }
        };
        g.bench_function(case.name(), |b| {
            b.iter_custom(|iters| {
                let secs: f64 = (0..iters).map(|_| rot.timed_run().expect("timed run")).sum();
                Duration::from_secs_f64(secs)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, emulator, emulator_full_gemm, cpu_reference, real_gpu);
criterion_main!(benches);
