//! criterion benches of the runtime: an allocation-heavy op sequence (1000 small softmax + GEMM
//! calls, each making temporaries: the output, a contiguous copy of a broadcast bias, split-K
//! partials) with the memory pool caching and with caching off (every block straight back to the
//! device: a plain malloc/free runtime).
//!
//! On the emulator backend; and through the HIP test double as well when `FERROCM_HIP_LIBRARY`
//! names it (there `hipFree` waits for the device, as on a GPU, which is what the pool avoids).
//!
//! Run: `FERROCM_PREBUILT_DIR=$PWD/target/ferrocm cargo bench -p ferrocm-benches --bench runtime`
//! (add `FERROCM_HIP_LIBRARY=$PWD/target/release/libferrocm_hip_shim.so` after
//! `cargo build --release -p ferrocm-hip-shim` for the HIP rows).

use criterion::{Criterion, criterion_group, criterion_main};
use ferrocm::ops::gemm::{self, GemmConfig, GemmOptions};
use ferrocm::ops::softmax;
use ferrocm::{DType, Device, Tensor};
use std::time::Duration;

/// Calls per measured iteration.
const CALLS: usize = 1000;

fn sequence(dev: &Device) -> ferrocm::Result<()> {
    let (m, n, k) = (8, 64, 256);
    let x = Tensor::from_slice(dev, &vec![0.25f32; m * k], &[m, k])?;
    let w = Tensor::from_slice(dev, &vec![0.5f32; n * k], &[n, k])?;
    let bias = Tensor::from_slice(dev, &[0.125f32], &[1])?.broadcast_to(&[n])?;
    let split = GemmConfig { splits: 4, ..gemm::tiled_config(DType::F32, 1, m, n, k) };
    let opts = GemmOptions { bias: Some(&bias), config: Some(split), ..Default::default() };
    for _ in 0..CALLS {
        let p = softmax::softmax(&x.narrow(1, 0, n)?)?;
        let y = gemm::gemm(&x, &w.transpose(0, 1)?, &opts)?;
        drop((p, y));
    }
    dev.synchronize()
}

fn pool(c: &mut Criterion) {
    let mut devices = Vec::new();
    match Device::emulator() {
        Ok(d) => devices.push(("emulator", d)),
        Err(e) => eprintln!("emulator rows skipped: {e}"),
    }
    if std::env::var_os("FERROCM_HIP_LIBRARY").is_some() {
        match Device::hip(0) {
            Ok(d) => devices.push(("hip", d)),
            Err(e) => eprintln!("HIP rows skipped: {e}"),
        }
    }
    let mut g = c.benchmark_group("pool");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(15));
    for (backend, dev) in &devices {
        for caching in [true, false] {
            dev.memory_pool().set_caching(caching);
            let name = format!("{backend}/{CALLS}x softmax+gemm/{}", if caching { "pool" } else { "no pool" });
            g.bench_function(name, |b| b.iter(|| sequence(dev).expect("sequence")));
            let s = dev.memory_pool().stats();
            eprintln!("{backend} caching={caching}: {s:?}");
        }
    }
    g.finish();
}

criterion_group!(benches, pool);
criterion_main!(benches);
