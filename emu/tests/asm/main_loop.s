// A kernel with a known main-loop instruction mix, for the main-loop MFMA share
// (emu/tests/asm_main_loop.rs, emu/src/model/main_loop.rs):
// - a prologue with VALU work outside any loop (must not count);
// - a side loop, run twice, of 8 MFMAs and a transcendental (16 VALU cycles): more MFMA
//   instructions than the main loop but fewer MFMA issues;
// - the main loop, run `iterations` times: 4 v_mfma_f32_32x32x8_bf16 (8 passes, 32 cycles each)
//   and 8 full-rate VALU ops (4 cycles each), plus scalar, LDS, waitcnt and branch instructions
//   that are not vector-unit cycles: a share of 128 / (128 + 32) = 80%.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.text
.globl main_loop_mix
.p2align 8
.type main_loop_mix,@function
main_loop_mix:
  s_load_dword s2, s[0:1], 0x0                  // iterations
  v_mov_b32 v0, 0x3f803f80                      // bf16 pairs (1.0, 1.0)
  v_mov_b32 v1, v0
  v_mov_b32 v2, v0
  v_mov_b32 v3, v0
  v_lshlrev_b32 v4, 2, v0                       // LDS address: 4 * thread
  v_and_b32 v4, 0xff, v4
  v_exp_f32 v5, v0
  s_mov_b32 s3, 2
  s_waitcnt lgkmcnt(0)
.Lside:
  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]
  v_mfma_f32_32x32x8_bf16 a[16:31], v[0:1], v[2:3], a[16:31]
  v_mfma_f32_32x32x8_bf16 a[32:47], v[0:1], v[2:3], a[32:47]
  v_mfma_f32_32x32x8_bf16 a[48:63], v[0:1], v[2:3], a[48:63]
  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]
  v_mfma_f32_32x32x8_bf16 a[16:31], v[0:1], v[2:3], a[16:31]
  v_mfma_f32_32x32x8_bf16 a[32:47], v[0:1], v[2:3], a[32:47]
  v_mfma_f32_32x32x8_bf16 a[48:63], v[0:1], v[2:3], a[48:63]
  v_exp_f32 v5, v5
  s_sub_u32 s3, s3, 1
  s_cmp_lg_u32 s3, 0
  s_cbranch_scc1 .Lside
.Lmain:
  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]
  v_add_u32 v6, 1, v6
  v_mfma_f32_32x32x8_bf16 a[16:31], v[0:1], v[2:3], a[16:31]
  v_add_u32 v7, 1, v7
  ds_read_b32 v8, v4
  v_mfma_f32_32x32x8_bf16 a[32:47], v[0:1], v[2:3], a[32:47]
  v_add_u32 v6, 1, v6
  v_add_u32 v7, 1, v7
  v_mfma_f32_32x32x8_bf16 a[48:63], v[0:1], v[2:3], a[48:63]
  v_add_u32 v6, 1, v6
  v_add_u32 v7, 1, v7
  s_sub_u32 s2, s2, 1
  v_add_u32 v6, 1, v6
  s_cmp_lg_u32 s2, 0
  v_add_u32 v7, 1, v7
  s_waitcnt lgkmcnt(0)
  s_nop 1
  s_cbranch_scc1 .Lmain
  v_add_u32 v6, v6, v7
  s_endpgm
.Lmain_loop_mix_end:
.size main_loop_mix, .Lmain_loop_mix_end-main_loop_mix

.rodata
.p2align 6
.amdhsa_kernel main_loop_mix
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 76
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 12
  .amdhsa_group_segment_fixed_size 256
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: main_loop_mix, .symbol: main_loop_mix.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 256, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 12, .agpr_count: 64, .max_flat_workgroup_size: 256, .args: [{.offset: 0, .size: 8, .value_kind: by_value}]}
...
.end_amdgpu_metadata
