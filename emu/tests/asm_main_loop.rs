//! The main-loop MFMA share (`model::main_loop`) on a hand-written kernel whose mix is known
//! (tests/asm/main_loop.s): the emulator's real trace, decoder and cost table end to end.

#[path = "asm/harness.rs"]
mod harness;

use ferrocm_emu::LaunchParams;
use ferrocm_emu::exec::LaunchOptions;
use ferrocm_emu::model::main_loop::{loops, main_loop_mix};
use harness::Gpu;

#[test]
fn a_main_loop_of_4_mfmas_of_32_cycles_and_8_valu_ops_is_80_percent_mfma() {
    let gpu = Gpu::new("main_loop");
    let (workgroups, waves_per_workgroup, iterations) = (2u64, 4u64, 5u64);
    let params =
        LaunchParams { grid: [workgroups as u32, 1, 1], block: [256, 1, 1], dynamic_lds: 0, kernargs: iterations.to_le_bytes().to_vec() };
    let opts = LaunchOptions { sample: None, trace: true, ..LaunchOptions::default() };
    let stats = gpu.emu.launch_with(&gpu.module, "main_loop_mix", &params, &opts).unwrap_or_else(|e| panic!("{e}"));
    let trace = stats.trace.as_ref().expect("traced");
    let waves = workgroups * waves_per_workgroup;

    // Two loops: the side loop (8 MFMA instructions, run twice) and the main one (4, run 5
    // times): the main loop is the one that executed more MFMAs, not the one that has more.
    assert_eq!(loops(trace).len(), 2);
    let mix = main_loop_mix(trace).unwrap().expect("the kernel has an MFMA loop");
    let issues = waves * iterations;
    assert_eq!(mix.mfmas, 4 * issues);
    assert_eq!(mix.mfma_cycles, 4 * 32 * issues);
    // 8 full-rate VALU ops per iteration; the prologue's VALU work (a transcendental among it)
    // and the side loop's transcendental are outside the range, the LDS read, scalar ops, wait
    // and branch are not vector-unit cycles.
    assert_eq!(mix.valu_cycles, 8 * 4 * issues);
    assert!((mix.mfma_share() - 0.8).abs() < 1e-12, "{}", mix.mfma_share());
}
