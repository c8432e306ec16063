//! gfx940 loads to LDS (tests/asm/global_lds.s): the LDS slot of lane l is
//! `M0[17:2] * 4 + offset + 4l`, the memory address the usual GLOBAL/SCRATCH one, and the
//! loaded value is written to the slot as the dword a VGPR load would produce.

#[path = "asm/harness.rs"]
mod harness;

use harness::Gpu;

#[test]
fn global_and_scratch_loads_to_lds() {
    let gpu = Gpu::new("global_lds");
    let inp: Vec<u32> = (0..256u32).map(|i| 0x8070_6050u32.wrapping_mul(i + 1) ^ 0x1357_9bdf).collect();
    let a = gpu.upload_u32(&inp);
    let out = gpu.zeros(64 * 6);
    let stats = gpu.launch("glds", 1, 64, &[a, out]);
    let rows: Vec<Vec<u32>> = gpu.u32s(out, 64 * 6).chunks(64).map(|c| c.to_vec()).collect();
    let byte = |w: u32, i: usize| w.to_le_bytes()[i];
    for l in 0..64 {
        assert_eq!(rows[0][l], inp[l + 4], "global_load_lds_dword, lane {l}");
        assert_eq!(rows[1][l], byte(inp[l], 1) as u32, "global_load_lds_ubyte, lane {l}");
        assert_eq!(rows[2][l], (inp[l + 1] >> 16) as u16 as i16 as i32 as u32, "global_load_lds_sshort, lane {l}");
        assert_eq!(rows[3][l], byte(inp[l], 3) as i8 as i32 as u32, "global_load_lds_sbyte, lane {l}");
        assert_eq!(rows[4][l], 7 * l as u32, "scratch_load_lds_dword, lane {l}");
        assert_eq!(rows[5][l], (7 * l as u32) & 0xffff, "scratch_load_lds_ushort, lane {l}");
    }
    // Six loads to LDS of 64 dwords each are LDS writes, though not DS instructions.
    assert_eq!(stats.counters.lds.bytes_written, 6 * 64 * 4);
    assert_eq!(stats.counters.global.load_instructions, 4);
}
