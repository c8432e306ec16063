//! What one wave instruction costs the emulator, instruction by instruction: for each entry of
//! `CASES`, a kernel whose loop repeats that instruction 32 times (200 iterations, 64 workgroups
//! of 4 waves, every lane on) runs once to warm up and once timed on one worker thread, counting
//! lean (as the CLI and the model benches do); the time per wave instruction includes the loop's
//! three scalar instructions and the dispatch every instruction pays.
//!
//! `cargo bench -p ferrocm-emu --bench instructions` (`-- FILTER` runs the cases whose name
//! contains FILTER). Needs llvm-mc-19 and the pinned nightly's rust-lld, as the assembly tests.
//!
//! This is where to look before speeding an op up: a model step's instruction mix (the per-pc
//! counts of `ferrocm info --modeled`'s launches, or `cargo xtask profile`) times these costs
//! says which ops its time goes to. Measured on the 2-core VM (AVX-512), ns per wave
//! instruction, before -> after the per-op paths of late November 2026:
//!
//! | case | ns |
//! |---|---|
//! | `s_add_u32` | 12 |
//! | `v_add_u32` | 31 |
//! | `v_cmp_gt_u32` | 123 -> 35 |
//! | `v_cndmask_b32` | 79 -> 33 |
//! | `v_cvt_f32_u32` | 112 -> 30 |
//! | `v_cvt_f16_f32` | 207 -> 29 |
//! | `v_pk_add_f16` | 138 -> 58 |
//! | `v_pk_fma_f32` | 78 -> 62 |
//! | `v_perm_b32` | 213 -> 96 |
//! | `buffer_load_dwordx4` | 345 -> 107 |
//! | `ds_read_b128` | 87 |
//! | `v_mfma_f32_16x16x16_f16` | 310 |

#[path = "../tests/asm/harness.rs"]
mod harness;

use ferrocm_emu::exec::{Counting, LaunchOptions};
use ferrocm_emu::{EmuConfig, Emulator, LaunchParams};
use std::sync::Arc;
use std::time::Instant;

/// (kernel name, the instruction its loop repeats). The registers are set up by `PROLOGUE`:
/// v0 lane id, v1-v4 copies of it, v5 its f32 value, v6 that plus one, v7 a pair of f16s
/// (2.0, 1.0), v8 the lane's 16-byte slot in the first KiB, v10-v15 1.0 (an MFMA's operands
/// with every row alike, as the decode GEMV's; v[4:7] give rows that differ), s9 two f16 1.0s,
/// s12 a byte selector, VCC all ones, s[16:19] a 4 KiB buffer resource over the argument.
const CASES: &[(&str, &str)] = &[
    ("s_add_u32", "s_add_u32 s8, s8, s9"),
    ("s_cselect_b64", "s_cselect_b64 s[10:11], -1, 0"),
    ("v_add_u32", "v_add_u32 v2, v2, v0"),
    ("v_and_or_b32", "v_and_or_b32 v3, v3, s9, v1"),
    ("v_lshlrev_b32", "v_lshlrev_b32 v3, 4, v2"),
    ("v_mov_b32", "v_mov_b32 v3, v2"),
    ("v_cmp_gt_u32", "v_cmp_gt_u32 vcc, s9, v2"),
    ("v_cmp_lt_f32", "v_cmp_lt_f32 vcc, v5, v6"),
    ("v_cndmask_b32", "v_cndmask_b32 v3, v4, v2, vcc"),
    ("v_cvt_f32_u32", "v_cvt_f32_u32 v3, v2"),
    ("v_cvt_u32_f32", "v_cvt_u32_f32 v3, v5"),
    ("v_cvt_f16_f32", "v_cvt_f16_f32 v3, v5"),
    ("v_cvt_f32_f16", "v_cvt_f32_f16 v3, v7"),
    ("v_fma_f32", "v_fma_f32 v3, v5, v6, v3"),
    ("v_mul_f32", "v_mul_f32 v3, v5, v6"),
    ("v_pk_add_f16", "v_pk_add_f16 v3, v7, s9 op_sel_hi:[1,0]"),
    ("v_pk_fma_f32", "v_pk_fma_f32 v[10:11], v[12:13], v[14:15], v[10:11]"),
    ("v_readfirstlane_b32", "v_readfirstlane_b32 s10, v2"),
    ("v_mul_lo_u32", "v_mul_lo_u32 v3, s9, v2"),
    ("v_lshl_add_u32", "v_lshl_add_u32 v3, v2, 6, v1"),
    ("v_add3_u32", "v_add3_u32 v3, v2, v1, v0"),
    ("v_perm_b32", "v_perm_b32 v3, v2, v1, s12"),
    ("v_dot2c_f32_f16", "v_dot2c_f32_f16 v3, v7, v7"),
    ("ds_read_b128", "ds_read_b128 v[10:13], v8"),
    ("buffer_load_dwordx4", "buffer_load_dwordx4 v[10:13], v8, s[16:19], 0 offen"),
    ("v_mfma_f32_16x16x16_f16", "v_mfma_f32_16x16x16_f16 v[20:23], v[10:11], v[12:13], v[20:23]"),
    ("v_mfma_f32_16x16x16_f16 (rows differ)", "v_mfma_f32_16x16x16_f16 v[20:23], v[4:5], v[6:7], v[20:23]"),
    ("v_mfma_f32_32x32x8_f16", "v_mfma_f32_32x32x8_f16 v[16:31], v[4:5], v[6:7], v[16:31]"),
    ("s_waitcnt", "s_waitcnt vmcnt(0)"),
    ("s_nop", "s_nop 0"),
];

/// Register setup shared by every case (see `CASES`).
const PROLOGUE: &str = "  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_mov_b32 v1, v0
  v_mov_b32 v2, v0
  v_mov_b32 v3, v0
  v_mov_b32 v4, v0
  v_cvt_f32_u32 v5, v0
  v_add_f32 v6, 1.0, v5
  v_mov_b32 v7, 0x3c004000
  v_and_b32 v8, 0x3f0, v0
  v_mov_b32 v10, 1.0
  v_mov_b32 v11, 1.0
  v_mov_b32 v12, 1.0
  v_mov_b32 v13, 1.0
  v_mov_b32 v14, 1.0
  v_mov_b32 v15, 1.0
  s_mov_b32 s9, 0x3c003c00
  s_mov_b32 s12, 0x05040100
  s_mov_b32 s8, 0
  s_mov_b32 vcc_lo, -1
  s_mov_b32 vcc_hi, -1
  s_mov_b32 s6, 200
  s_waitcnt lgkmcnt(0)
  s_mov_b32 s16, s4
  s_mov_b32 s17, s5
  s_mov_b32 s18, 4096
  s_mov_b32 s19, 0x00020000
";

/// Repeats of the instruction per loop iteration.
const UNROLL: usize = 32;

/// The code object source of every case: one kernel per case, named `k{index}`.
fn source() -> String {
    let mut s = String::from(".amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"\n.amdhsa_code_object_version 5\n.text\n");
    for (i, (_, inst)) in CASES.iter().enumerate() {
        s += &format!(".globl k{i}\n.p2align 8\n.type k{i},@function\nk{i}:\n{PROLOGUE}k{i}_top:\n");
        for _ in 0..UNROLL {
            s += &format!("  {inst}\n");
        }
        s += &format!("  s_sub_u32 s6, s6, 1\n  s_cmp_eq_u32 s6, 0\n  s_cbranch_scc0 k{i}_top\n  s_waitcnt vmcnt(0)\n  s_endpgm\n");
    }
    for i in 0..CASES.len() {
        s += &format!(
            ".rodata\n.p2align 6\n.amdhsa_kernel k{i}\n  .amdhsa_user_sgpr_kernarg_segment_ptr 1\n  .amdhsa_next_free_vgpr 32\n  .amdhsa_next_free_sgpr 24\n  .amdhsa_accum_offset 32\n  .amdhsa_group_segment_fixed_size 1024\n.end_amdhsa_kernel\n"
        );
    }
    s += ".amdgpu_metadata\n---\namdhsa.version: [1, 2]\namdhsa.target: amdgcn-amd-amdhsa--gfx942\namdhsa.kernels:\n";
    for i in 0..CASES.len() {
        s += &format!(
            "  - {{.name: k{i}, .symbol: k{i}.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 1024, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 32, .max_flat_workgroup_size: 256, .args: [{{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}}]}}\n"
        );
    }
    s + "...\n.end_amdgpu_metadata\n"
}

fn main() {
    // `cargo bench` passes `--bench`; anything else not starting with `-` filters the cases.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let co = Arc::new(harness::assemble("instructions", &source()));
    let emu = Emulator::new(EmuConfig { threads: 1, instruction_budget: 1 << 30, memory_limit: 1 << 30, ..EmuConfig::default() });
    let module = emu.load(co).expect("the generated code object loads");
    let buf = emu.alloc(4096).expect("a 4 KiB buffer");
    let params = LaunchParams { grid: [64, 1, 1], block: [256, 1, 1], dynamic_lds: 0, kernargs: buf.to_le_bytes().to_vec() };
    let opts = LaunchOptions { counting: Counting::Lean, ..LaunchOptions::default() };
    println!("| case | ns per wave instruction | wave instructions |\n|---|---:|---:|");
    for (i, (name, _)) in CASES.iter().enumerate() {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let kernel = format!("k{i}");
        emu.launch_with(&module, &kernel, &params, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let t = Instant::now();
        let stats = emu.launch_with(&module, &kernel, &params, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ns = t.elapsed().as_secs_f64() * 1e9 / stats.counters.instructions as f64;
        println!("| `{name}` | {ns:.1} | {} |", stats.counters.instructions);
    }
}
