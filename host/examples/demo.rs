//! The main job, end to end: pick a device (a GPU through HIP if present, else the emulator), run
//! ferrocm's ops on it, check every result against the CPU reference, and print what the device
//! did (on the emulator: the counters a profiler would show).
//!
//! `cargo xtask demo` builds the kernels, prints the resource report, then runs this.

use ferrocm::emulator::counters_json;
use ferrocm::{Device, Result, f16, ops, reference};

fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-30);
    got.iter().zip(want).fold(0f64, |m, (g, w)| m.max((*g as f64 - w).abs() / scale))
}

fn report(dev: &Device, what: &str) {
    if let Some(stats) = dev.as_emulator().and_then(|e| e.last_launch()) {
        let c = &stats.counters;
        println!(
            "  emulator: {} workgroups, {} wave instructions in {:.3} s; counters: {}",
            c.workgroups,
            c.instructions,
            stats.wall_time.as_secs_f64(),
            counters_json(c)
        );
    } else {
        println!("  ({what} ran on {})", dev.info().name);
    }
}

fn main() -> Result<()> {
    let dev = Device::new()?;
    let info = dev.info();
    println!("device: {} ({}, {} backend)", info.name, info.arch, info.backend);

    // saxpy over a ragged length.
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25 - 7.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 89) as f32 * -0.5 + 3.0).collect();
    let (dx, mut dy) = (dev.from_slice(&x)?, dev.from_slice(&y)?);
    ops::basic::saxpy(1.5, &dx, &mut dy)?;
    let ok = dy.to_vec()? == reference::basic::saxpy(1.5, &x, &y);
    println!("saxpy_f32 n={n}: {}", if ok { "matches the CPU reference bit for bit" } else { "MISMATCH" });
    report(&dev, "saxpy");

    // One 32x32 tile on the matrix cores.
    let k = 64usize;
    let a: Vec<f16> = (0..32 * k).map(|i| f16::from_f32(((i * 7) % 13) as f32 / 8.0 - 0.75)).collect();
    let b: Vec<f16> = (0..32 * k).map(|i| f16::from_f32(((i * 5) % 11) as f32 / 4.0 - 1.25)).collect();
    let c = ops::basic::mfma_tile_32x32_f16(&dev.from_slice(&a)?, &dev.from_slice(&b)?, k)?.to_vec()?;
    let want = reference::basic::matmul(&a, &b, 32, 32, k);
    let err = rel_err(&c, &want);
    println!(
        "mfma_tile_32x32_f16 k={k}: max relative error {err:.2e} vs an f64 reference ({})",
        if err < 1e-6 { "ok" } else { "TOO LARGE" }
    );
    report(&dev, "mfma tile");
    if !ok || err >= 1e-6 {
        std::process::exit(1);
    }
    Ok(())
}
