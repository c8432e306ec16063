//! DS instructions on a hand-written kernel (tests/asm/lds.s), expected values computed here
//! from the ISA pseudocode with lanes applied in order; and the bank-conflict counter on
//! instructions of known cost.

#[path = "asm/harness.rs"]
mod harness;

use harness::Gpu;

/// `f(lane)` for every lane, as the device would store it.
fn row(f: impl Fn(u32) -> u32) -> Vec<u32> {
    (0..64).map(f).collect()
}

/// Old values of a sequence of read-modify-writes applied in lane order from `init`.
fn rmw(init: u64, new: impl Fn(u64, u32) -> u64) -> Vec<u64> {
    let mut v = init;
    (0..64)
        .map(|l| {
            let old = v;
            v = new(v, l);
            old
        })
        .collect()
}

#[test]
fn ds_instructions_follow_the_isa() {
    let gpu = Gpu::new("lds");
    let out = gpu.zeros(64 * 48);
    gpu.launch("lds_ops", 1, 64, &[out]);
    let got: Vec<Vec<u32>> = gpu.u32s(out, 64 * 47).chunks(64).map(|c| c.to_vec()).collect();
    let lo = |v: Vec<u64>| v.into_iter().map(|x| x as u32).collect::<Vec<_>>();
    let hi = |v: Vec<u64>| v.into_iter().map(|x| (x >> 32) as u32).collect::<Vec<_>>();
    let d = |l: u32| ((37 * l) % 64) as i32 - 32;
    let min_f64 = rmw(0, |o, l| {
        let (a, b) = (f64::from_bits(o), d(l) as f64);
        if b < a { b.to_bits() } else { o }
    });
    let mut expected: Vec<(&str, Vec<u32>)> = vec![
        ("read2_b32 offset0", row(|l| l + 100)),
        ("read2_b32 offset1", row(|l| l + 200)),
        ("write2 offset1 is in dwords", row(|l| l + 200)),
        ("write2st64_b32 offset0 * 256", row(|l| l + 100)),
        ("read2st64_b32 offset1", row(|l| l + 200)),
        ("read2st64_b64 dword 0", row(|l| l + 100)),
        ("read2st64_b64 dword 1", row(|l| l)),
        ("read2st64_b64 dword 2", row(|l| l + 200)),
        ("read2st64_b64 dword 3", row(|l| !l)),
        ("write2st64_b64 offset1 * 512", row(|l| !l)),
        ("equal offsets write DATA0 once", row(|l| l + 100)),
        ("b128 dword 0", row(|l| l)),
        ("b128 dword 3", row(|l| l + 3)),
        ("b96 at +4", row(|l| l + 3)),
        ("ds_add_rtn_u32", lo(rmw(0, |o, l| o + l as u64 + 1))),
        ("ds_max_rtn_i32", lo(rmw(0, |o, l| (o as i32).max(d(l)) as u32 as u64))),
        ("ds_cmpst_rtn_b32 (DATA0 compares, DATA1 stores)", lo(rmw(0, |o, l| if o == l as u64 { l as u64 + 1 } else { o }))),
        ("ds_add_rtn_f32", lo(rmw(0, |o, l| (f32::from_bits(o as u32) + 0.25 * l as f32).to_bits() as u64))),
        ("ds_wrap_rtn_b32", lo(rmw(0, |o, _| if o >= 3 { o - 3 } else { o + 10 }))),
        ("ds_min_rtn_f64 low", lo(min_f64.clone())),
        ("ds_min_rtn_f64 high", hi(min_f64)),
        ("ds_or_rtn_b32", lo(rmw(0, |o, l| o | (2 * l as u64)))),
        ("ds_inc_rtn_u32", row(|l| l % 4)),
        ("ds_dec_rtn_u32", row(|l| [0, 3, 2, 1][l as usize % 4])),
        ("ds_mskor_rtn_b32", lo(rmw(0, |o, l| (o & !0xffff_00ff) | (l as u64) << 8))),
        ("ds_max_rtn_u64", row(|l| l.saturating_sub(1))),
    ];
    let sum: u64 = (0..64u64).fold(0u64, |s, l| s.wrapping_add(l << 32 | 0xffff_ffff));
    expected.push(("ds_add_u64 low", row(|_| sum as u32)));
    expected.push(("ds_add_u64 high", row(|_| (sum >> 32) as u32)));
    expected.extend([
        ("wrxchg2 old 0", row(|l| 2 * l)),
        ("wrxchg2 old 1", row(|l| 3 * l)),
        ("wrxchg2 new 1", row(|l| l + 200)),
        ("condxchg32 old 0", row(|l| l + 100)),
        ("condxchg32 old 1", row(|l| l + 200)),
        ("condxchg32 writes where bit 31 is set", row(|l| if l % 2 == 1 { l } else { l + 100 })),
        ("condxchg32 second dword", row(|l| l + 1000)),
        ("ds_append returns the old count", row(|_| 0)),
        ("ds_consume of 16 lanes", row(|_| 48)),
        ("ds_write_addtid_b32", row(|l| l + 100)),
        ("ds_read_addtid_b32", row(|l| l + 100)),
        ("swizzle SWAP 16", row(|l| (l ^ 16) + 100)),
        ("swizzle BROADCAST 8 3", row(|l| ((l & !7) | 3) + 100)),
        ("swizzle QUAD_PERM 3 2 1 0", row(|l| ((l & !3) | (3 - (l & 3))) + 100)),
        ("swizzle rotate left 1", row(|l| ((l & 32) | ((l + 1) & 31)) + 100)),
        ("swizzle FFT 0 (bit reversal)", row(|l| ((l & 32) | ((l & 31).reverse_bits() >> 27)) + 100)),
        ("ds_permute_b32", row(|l| (l + 59) % 64 + 100)),
        ("ds_bpermute_b32", row(|l| (l + 5) % 64 + 100)),
        (
            "bpermute from inactive lanes",
            row(|l| {
                if l >= 32 {
                    0xdead
                } else if (l + 5) % 64 < 32 {
                    (l + 5) % 64 + 100
                } else {
                    0
                }
            }),
        ),
    ]);
    assert_eq!(expected.len(), got.len());
    for (i, ((what, want), have)) in expected.iter().zip(&got).enumerate() {
        for l in 0..64 {
            assert_eq!(have[l], want[l], "row {i} ({what}), lane {l}");
        }
    }
}

#[test]
fn bank_conflict_counter_matches_the_measured_mi300x_values() {
    let gpu = Gpu::new("lds");
    let stats = gpu.launch("lds_conflicts", 1, 64, &[]);
    let lds = &stats.counters.lds;
    // b32/b64/b128 columns: 62 + 60 + 56; row-major b128 read and write: 0; a 2-dword stride
    // b32 read: 2; read2_b32 of that pattern: 2 per address.
    assert_eq!(lds.bank_conflict_cycles, 62 + 60 + 56 + 2 + 4);
    assert_eq!(lds.conflicted_instructions, 5);
    assert_eq!(lds.instructions, 7);
}

#[test]
fn lean_counting_computes_the_same_and_leaves_out_only_the_footprints() {
    use ferrocm_emu::exec::{Counting, LaunchOptions};
    use ferrocm_emu::{EmuError, LaunchParams};
    let gpu = Gpu::new("lds");
    let run = |counting: Counting| {
        let out = gpu.zeros(64 * 48);
        let params = LaunchParams { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds: 0, kernargs: out.to_le_bytes().to_vec() };
        let stats = gpu.emu.launch_with(&gpu.module, "lds_ops", &params, &LaunchOptions { counting, ..LaunchOptions::default() });
        (gpu.u32s(out, 64 * 47), stats.unwrap_or_else(|e| panic!("{e}")).counters)
    };
    let (full_out, full) = run(Counting::Full);
    let (lean_out, lean) = run(Counting::Lean);
    assert_eq!(lean_out, full_out);
    assert!(full.global.lines > 0 && !full.global.lane_accesses_by_width.is_empty());
    assert_eq!(lean, full.as_lean());
    // A trace's events carry the footprints: a lean traced launch is refused.
    let conflicts = LaunchParams { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds: 0, kernargs: Vec::new() };
    let traced = LaunchOptions { trace: true, counting: Counting::Lean, ..LaunchOptions::default() };
    match gpu.emu.launch_with(&gpu.module, "lds_conflicts", &conflicts, &traced) {
        Err(EmuError::Launch { reason, .. }) => assert!(reason.contains("Counting::Full"), "{reason}"),
        other => panic!("expected a launch error, got {other:?}"),
    }
}

/// Launches reuse their per-thread run state (waves, LDS, the per-pc table): whatever ran
/// before on the device, a launch's counters are its own, equal to a fresh device's.
#[test]
fn a_launch_counts_only_itself_after_other_launches() {
    let fresh = |kernel: &str, grid: u32| {
        let gpu = Gpu::new("lds");
        let out = gpu.zeros(64 * 48);
        let args = if kernel == "lds_ops" { vec![out] } else { vec![] };
        gpu.launch(kernel, grid, 64, &args).counters
    };
    let (ops, conflicts) = (fresh("lds_ops", 1), fresh("lds_conflicts", 3));
    assert!(ops.instructions > 0 && !ops.per_pc.is_empty());
    let gpu = Gpu::new("lds");
    let out = gpu.zeros(64 * 48);
    for round in 0..3 {
        assert_eq!(gpu.launch("lds_conflicts", 3, 64, &[]).counters, conflicts, "round {round}");
        assert_eq!(gpu.launch("lds_ops", 1, 64, &[out]).counters, ops, "round {round}");
    }
    // A launch that faults leaves its counts behind in the state it gives back: the next one
    // still counts only itself.
    assert!(gpu.try_launch("lds_ops", 1, 64, &[u64::MAX - 0xfff]).is_err());
    assert_eq!(gpu.launch("lds_conflicts", 3, 64, &[]).counters, conflicts);
}
