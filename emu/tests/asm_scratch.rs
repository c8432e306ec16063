//! Private memory on a hand-written kernel (tests/asm/scratch.s): SCRATCH addressing modes,
//! flat private aperture, sub-dword, multi-dword and unaligned accesses, s_scratch_*.

#[path = "asm/harness.rs"]
mod harness;

use harness::Gpu;

#[test]
fn scratch_addressing_modes_and_views() {
    let gpu = Gpu::new("scratch");
    let out = gpu.zeros(64 * 12);
    gpu.launch("scratch_modes", 1, 64, &[out]);
    let got: Vec<Vec<u32>> = gpu.u32s(out, 64 * 12).chunks(64).map(|c| c.to_vec()).collect();
    type Row = (&'static str, Box<dyn Fn(u32) -> u32>);
    let want: Vec<Row> = vec![
        ("ST", Box::new(|l| l + 100)),
        ("SS", Box::new(|l| l + 200)),
        ("SV", Box::new(|l| l + 300)),
        ("SVS with a negative offset", Box::new(|l| l + 400)),
        ("dwordx4 dword 0", Box::new(|l| l + 100)),
        ("dwordx4 dword 2", Box::new(|l| l + 200)),
        ("sshort", Box::new(|_| 0xffff_8001)),
        ("short_d16_hi", Box::new(|_| 0x8001_1234)),
        ("ubyte of an unaligned dword", Box::new(|_| 0x22)),
        ("unaligned dword", Box::new(|_| 0x4433_2211)),
        ("s_scratch_store_dword lands in lane 1", Box::new(|l| if l == 1 { 0x55 } else { 0 })),
        ("s_scratch_load_dwordx2", Box::new(|_| 0x55)),
    ];
    for (i, (what, f)) in want.iter().enumerate() {
        for l in 0..64u32 {
            assert_eq!(got[i][l as usize], f(l), "row {i} ({what}), lane {l}");
        }
    }
}
