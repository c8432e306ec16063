//! FLAT routed by aperture on a hand-written kernel (tests/asm/flat.s): LDS, private and global
//! memory, atomics through each, and the 12-bit FLAT offset.

#[path = "asm/harness.rs"]
mod harness;

use harness::Gpu;

#[test]
fn flat_reaches_lds_scratch_and_global_memory() {
    let gpu = Gpu::new("flat");
    let mut init: Vec<u32> = (0..256).map(|i| 5000 + i).collect();
    init[0] = 0;
    let cells = gpu.upload_u32(&init);
    let out = gpu.zeros(64 * 9);
    let stats = gpu.launch("flat_apertures", 1, 64, &[cells, out]);
    let got: Vec<Vec<u32>> = gpu.u32s(out, 64 * 9).chunks(64).map(|c| c.to_vec()).collect();
    type Row = (&'static str, Box<dyn Fn(u32) -> u32>);
    let want: Vec<Row> = vec![
        ("flat store to LDS, DS read", Box::new(|l| l + 100)),
        ("flat load from LDS", Box::new(|l| if l < 63 { l + 101 } else { 0 })),
        ("flat atomic add in LDS", Box::new(|l| l * (l + 1) / 2)),
        ("flat store to scratch, scratch read", Box::new(|l| l + 100)),
        ("flat atomic swap in scratch (old)", Box::new(|l| l + 100)),
        ("flat atomic swap in scratch (new)", Box::new(|l| l)),
        ("flat store to global", Box::new(|l| l + 100)),
        ("flat atomic cmpswap in global", Box::new(|l| l)),
        ("12-bit flat offset", Box::new(|l| if l < 63 { 5001 + l } else { 100 })),
    ];
    for (i, (what, f)) in want.iter().enumerate() {
        for l in 0..64u32 {
            assert_eq!(got[i][l as usize], f(l), "row {i} ({what}), lane {l}");
        }
    }
    assert_eq!(gpu.u32s(cells, 1)[0], 64, "cmpswap chain");
    // FLAT accesses that hit the LDS count as LDS instructions (3) besides the DS read (1).
    assert_eq!(stats.counters.lds.instructions, 4);
}
