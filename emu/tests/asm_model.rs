//! The cycle model against kernels whose limit is known (tests/asm/model.s): each must model
//! within 5% of the MI300X figure that bounds it.

#[path = "asm/harness.rs"]
mod harness;

use ferrocm_emu::exec::LaunchOptions;
use ferrocm_emu::model::machine::{CLOCK_MHZ, HBM_SUSTAINED_BYTES_PER_S, LDS_BYTES_PER_CLOCK, LOADED_CLOCK_MHZ, MathKind, peak_flops};
use ferrocm_emu::model::{Bottleneck, KernelShape, Modeled, Workload, cost::mfma_flops, model};
use ferrocm_emu::{LaunchParams, LaunchStats};
use harness::Gpu;

/// Launches `kernel` over `grid` workgroups of 256 threads, emulating `sample` of them with a
/// trace, and models the whole grid.
fn run(gpu: &Gpu, kernel: &str, grid: u32, sample: u64, args: &[u64], hbm_bytes: Option<u64>) -> (LaunchStats, Modeled) {
    let kernargs = args.iter().flat_map(|a| a.to_le_bytes()).collect();
    let params = LaunchParams { grid: [grid, 1, 1], block: [256, 1, 1], dynamic_lds: 0, kernargs };
    let opts = LaunchOptions { sample: Some(LaunchOptions::spread_sample(grid as u64, sample)), trace: true, ..LaunchOptions::default() };
    let stats = gpu.emu.launch_with(&gpu.module, kernel, &params, &opts).unwrap_or_else(|e| panic!("{e}"));
    let k = gpu.module.co.kernel(kernel).unwrap();
    let m = model(stats.trace.as_ref().unwrap(), &KernelShape::of(k, 0), &Workload::mi300x(grid as u64, hbm_bytes))
        .unwrap_or_else(|e| panic!("{e}"));
    (stats, m)
}

fn within(what: &str, got: f64, want: f64, tol: f64) {
    let err = (got - want).abs() / want;
    assert!(err <= tol, "{what}: modeled {got:.4e}, expected {want:.4e} ({:.1}% off, tolerance {:.0}%)", 100.0 * err, 100.0 * tol);
}

#[test]
fn mfma_loop_models_at_the_matrix_core_peak() {
    let gpu = Gpu::new("model");
    // 14 workgroups per CU, 7 resident (68 registers -> 7 waves per SIMD): two full rounds.
    let grid = 304 * 14;
    let iterations = 64u64;
    let (stats, m) = run(&gpu, "mfma_loop", grid, 2, &[iterations], None);
    let sampled = stats.counters.workgroups as f64;
    let flops: f64 =
        stats.counters.mfma.iter().map(|(name, n)| mfma_flops(name).unwrap().0 * *n as f64).sum::<f64>() / sampled * grid as f64;
    // The CU simulation counts clocks at the peak clock: per clock, the matrix cores' peak.
    let rate = flops / (m.cycles as f64 / (CLOCK_MHZ * 1e6));
    let peak = peak_flops(MathKind::F16);
    eprintln!("mfma_loop: {:.1} TFLOP/s modeled per peak clock, peak {:.1} ({:?})", rate / 1e12, peak / 1e12, m.utilization);
    within("MFMA loop FLOP/s", rate, peak, 0.05);
    // The time is at the clock under that load: the loaded clock of the data sheet's GEMM anchor.
    within("clock under MFMA load", m.clock_mhz, LOADED_CLOCK_MHZ, 0.05);
    assert_eq!(m.bottleneck, Bottleneck::MatrixCores);
    assert_eq!(m.waves_per_simd, 7);
}

#[test]
fn streaming_copy_models_at_the_hbm_bandwidth() {
    let gpu = Gpu::new("model");
    // 16 KiB per workgroup, 16 workgroups per CU: 76 MiB each way.
    let grid: u32 = 304 * 16;
    let bytes = grid as u64 * 16384;
    let (src, dst) = (gpu.emu.alloc(bytes).unwrap(), gpu.emu.alloc(bytes).unwrap());
    let (stats, m) = run(&gpu, "copy", grid, 4, &[src, dst], None);
    let g = &stats.counters.global;
    assert_eq!(g.lines * 64, g.bytes_read + g.bytes_written, "every line fully used");
    let rate = 2.0 * bytes as f64 / m.seconds;
    eprintln!("copy: {:.3} TB/s modeled ({:?})", rate / 1e12, m.utilization);
    within("copy bandwidth", rate, HBM_SUSTAINED_BYTES_PER_S, 0.05);
    assert_eq!(m.bottleneck, Bottleneck::Memory);
}

fn lds_rate(kernel: &str) -> (f64, Modeled, LaunchStats) {
    let gpu = Gpu::new("model");
    let grid: u32 = 304 * 8;
    let (stats, m) = run(&gpu, kernel, grid, 2, &[128], None);
    let per_wg = stats.counters.lds.bytes_read as f64 / stats.counters.workgroups as f64;
    let per_cu_bytes = per_wg * m.workgroups_per_cu as f64;
    (per_cu_bytes / m.cycles as f64, m, stats)
}

#[test]
fn conflict_free_lds_reads_model_at_128_bytes_per_clock() {
    let (rate, m, stats) = lds_rate("lds_read");
    assert_eq!(stats.counters.lds.bank_conflict_cycles, 0);
    eprintln!("lds_read: {rate:.1} B/clock/CU modeled ({:?})", m.utilization);
    within("LDS bytes per clock", rate, LDS_BYTES_PER_CLOCK as f64, 0.05);
    assert_eq!(m.bottleneck, Bottleneck::Lds);
}

#[test]
fn two_way_bank_conflicts_halve_the_lds_rate() {
    let (rate, m, stats) = lds_rate("lds_read_2way");
    // One replay per 8-lane phase of every ds_read_b128.
    let l = &stats.counters.lds;
    assert_eq!(l.bank_conflict_cycles, 8 * l.instructions);
    eprintln!("lds_read_2way: {rate:.1} B/clock/CU modeled ({:?})", m.utilization);
    within("LDS bytes per clock, 2-way conflicts", rate, LDS_BYTES_PER_CLOCK as f64 / 2.0, 0.05);
    assert_eq!(m.bottleneck, Bottleneck::Lds);
}

#[test]
fn model_times_are_at_the_stated_clock() {
    let gpu = Gpu::new("model");
    let (_, m) = run(&gpu, "lds_read", 304, 1, &[4], None);
    // No MFMAs: the peak clock.
    assert_eq!(m.clock_mhz, CLOCK_MHZ);
    assert!((m.seconds - m.cycles as f64 / (CLOCK_MHZ * 1e6)).abs() < 1e-15);
    assert_eq!(m.workgroups_per_cu, 1);
    assert_eq!(m.tail_efficiency, 1.0);
    let (_, m) = run(&gpu, "lds_read", 305, 1, &[4], None);
    assert_eq!(m.workgroups_per_cu, 2, "one CU runs two: the tail");
}

#[test]
fn the_first_workgroup_timeline_shows_each_wave_its_waits_and_its_code() {
    use ferrocm_emu::model::TIMELINE_MIN_STALL;
    use ferrocm_emu::model::machine::VMEM_LATENCY;
    let gpu = Gpu::new("model");
    let grid: u32 = 304;
    let bytes = grid as u64 * 16384;
    let (src, dst) = (gpu.emu.alloc(bytes).unwrap(), gpu.emu.alloc(bytes).unwrap());
    let (stats, m) = run(&gpu, "copy", grid, 1, &[src, dst], None);
    let first = &stats.trace.as_ref().unwrap().workgroups[0];
    // Every wave of a 256-work-item workgroup, in wave order.
    assert_eq!(m.timeline.len(), 4);
    for (i, w) in m.timeline.iter().enumerate() {
        assert_eq!(w.wave, i);
        // The runs cover every instruction the wave's trace holds, in clock order; so do the
        // waits.
        assert_eq!(w.issued(), first.waves[i].len() as u64);
        assert!(w.runs.windows(2).all(|p| p[0].at < p[1].at && p[0].last_pc >= p[0].pc));
        assert!(w.stalls.windows(2).all(|p| p[0].at < p[1].at));
        assert!(w.stalls.iter().all(|s| s.cycles >= TIMELINE_MIN_STALL && s.at <= w.end));
        // A copy waits for its first loads: about a memory latency.
        let longest = w.stalls.iter().map(|s| s.cycles).max().unwrap_or(0);
        assert!(longest >= VMEM_LATENCY / 2, "wave {i}: longest wait {longest} clocks");
        assert!(w.end < m.cycles, "wave {i} ends at {} of {} clocks", w.end, m.cycles);
    }
}

/// Lean counting on global loads (the one-pass load path lists no accesses then): the same
/// copy, the same counts but the footprints.
#[test]
fn a_lean_copy_counts_the_full_counts_but_the_footprints() {
    use ferrocm_emu::exec::Counting;
    let gpu = Gpu::new("model");
    let grid: u32 = 3;
    let bytes = grid as u64 * 16384;
    let words: Vec<u32> = (0..bytes as u32 / 4).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let src = gpu.upload_u32(&words);
    let run = |counting: Counting| {
        let dst = gpu.emu.alloc(bytes).unwrap();
        let kernargs = [src, dst].iter().flat_map(|a| a.to_le_bytes()).collect();
        let params = LaunchParams { grid: [grid, 1, 1], block: [256, 1, 1], dynamic_lds: 0, kernargs };
        let opts = LaunchOptions { counting, ..LaunchOptions::default() };
        let stats = gpu.emu.launch_with(&gpu.module, "copy", &params, &opts).unwrap_or_else(|e| panic!("{e}"));
        (gpu.u32s(dst, words.len()), stats.counters)
    };
    let (full_out, full) = run(Counting::Full);
    let (lean_out, lean) = run(Counting::Lean);
    assert_eq!(full_out, words);
    assert_eq!(lean_out, words);
    assert_eq!(full.global.bytes_read, bytes);
    assert!(full.global.lines > 0);
    assert_eq!(lean, full.as_lean());
}
