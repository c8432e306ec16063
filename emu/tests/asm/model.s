// Kernels with known limits, for the cycle model's validation (tests/asm_model.rs):
// - mfma_loop: four independent 32x32x8 bf16 MFMA chains per wave, nothing else in the loop
//   but its counter: bound by the matrix cores.
// - copy: each thread copies 64 bytes with 16-byte loads and stores: bound by HBM.
// - lds_read: 16-byte LDS reads, row-major (conflict-free): bound by the LDS pipe.
// - lds_read_2way: the same with a 32-byte lane stride, which puts two dwords on every bank a
//   b128 phase touches: 2-way bank conflicts.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.text
.globl mfma_loop
.p2align 8
.type mfma_loop,@function
mfma_loop:
  s_load_dword s2, s[0:1], 0x0                  // iterations
  v_mov_b32 v0, 0x3f803f80                      // bf16 pairs (1.0, 1.0)
  v_mov_b32 v1, v0
  v_mov_b32 v2, v0
  v_mov_b32 v3, v0
  s_waitcnt lgkmcnt(0)
.Lmfma:
  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]
  v_mfma_f32_32x32x8_bf16 a[16:31], v[0:1], v[2:3], a[16:31]
  v_mfma_f32_32x32x8_bf16 a[32:47], v[0:1], v[2:3], a[32:47]
  v_mfma_f32_32x32x8_bf16 a[48:63], v[0:1], v[2:3], a[48:63]
  s_sub_u32 s2, s2, 1
  s_cmp_lg_u32 s2, 0
  s_cbranch_scc1 .Lmfma
  s_endpgm
.Lmfma_loop_end:
.size mfma_loop, .Lmfma_loop_end-mfma_loop

.globl copy
.p2align 8
.type copy,@function
copy:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // src, dst
  // wave w of the workgroup owns 4 KiB at 16 KiB * workgroup + 4 KiB * w; each instruction moves
  // 1 KiB of consecutive bytes (16 per lane).
  v_and_b32 v1, 63, v0
  v_lshlrev_b32 v1, 4, v1
  v_lshrrev_b32 v2, 6, v0
  v_lshlrev_b32 v2, 12, v2
  s_lshl_b32 s3, s2, 14
  v_add3_u32 v1, v1, v2, s3
  s_waitcnt lgkmcnt(0)
  global_load_dwordx4 v[4:7], v1, s[4:5]
  global_load_dwordx4 v[8:11], v1, s[4:5] offset:1024
  global_load_dwordx4 v[12:15], v1, s[4:5] offset:2048
  global_load_dwordx4 v[16:19], v1, s[4:5] offset:3072
  s_waitcnt vmcnt(0)
  global_store_dwordx4 v1, v[4:7], s[6:7]
  global_store_dwordx4 v1, v[8:11], s[6:7] offset:1024
  global_store_dwordx4 v1, v[12:15], s[6:7] offset:2048
  global_store_dwordx4 v1, v[16:19], s[6:7] offset:3072
  s_endpgm
.Lcopy_end:
.size copy, .Lcopy_end-copy

.globl lds_read
.p2align 8
.type lds_read,@function
lds_read:
  s_load_dword s2, s[0:1], 0x0                  // iterations
  v_lshlrev_b32 v1, 4, v0
  v_and_b32 v1, 0x3ff, v1                       // 16 * (thread % 64)
  s_waitcnt lgkmcnt(0)
.Lread:
  ds_read_b128 v[4:7], v1
  ds_read_b128 v[8:11], v1 offset:1024
  ds_read_b128 v[12:15], v1 offset:2048
  ds_read_b128 v[16:19], v1 offset:3072
  s_sub_u32 s2, s2, 1
  s_cmp_lg_u32 s2, 0
  s_waitcnt lgkmcnt(4)
  s_cbranch_scc1 .Lread
  s_waitcnt lgkmcnt(0)
  s_endpgm
.Llds_read_end:
.size lds_read, .Llds_read_end-lds_read

.globl lds_read_2way
.p2align 8
.type lds_read_2way,@function
lds_read_2way:
  s_load_dword s2, s[0:1], 0x0
  v_lshlrev_b32 v1, 5, v0
  v_and_b32 v1, 0x7ff, v1                       // 32 * (thread % 64)
  s_waitcnt lgkmcnt(0)
.Lread2:
  ds_read_b128 v[4:7], v1
  ds_read_b128 v[8:11], v1 offset:2048
  ds_read_b128 v[12:15], v1 offset:4096
  ds_read_b128 v[16:19], v1 offset:6144
  s_sub_u32 s2, s2, 1
  s_cmp_lg_u32 s2, 0
  s_waitcnt lgkmcnt(4)
  s_cbranch_scc1 .Lread2
  s_waitcnt lgkmcnt(0)
  s_endpgm
.Llds_read_2way_end:
.size lds_read_2way, .Llds_read_2way_end-lds_read_2way

.rodata
.p2align 6
.amdhsa_kernel mfma_loop
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 68
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel copy
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_next_free_vgpr 20
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 20
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel lds_read
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 20
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 20
  .amdhsa_group_segment_fixed_size 4096
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel lds_read_2way
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 20
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 20
  .amdhsa_group_segment_fixed_size 8192
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: mfma_loop, .symbol: mfma_loop.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 4, .agpr_count: 64, .max_flat_workgroup_size: 256, .args: [{.offset: 0, .size: 8, .value_kind: by_value}]}
  - {.name: copy, .symbol: copy.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 20, .max_flat_workgroup_size: 256, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: lds_read, .symbol: lds_read.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 4096, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 20, .max_flat_workgroup_size: 256, .args: [{.offset: 0, .size: 8, .value_kind: by_value}]}
  - {.name: lds_read_2way, .symbol: lds_read_2way.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 8192, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 20, .max_flat_workgroup_size: 256, .args: [{.offset: 0, .size: 8, .value_kind: by_value}]}
...
.end_amdgpu_metadata
