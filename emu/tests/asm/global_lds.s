// gfx940 loads straight to LDS (global_load_lds_*, scratch_load_lds_*): the LDS address is
// M0[17:2] * 4 + the instruction offset + 4 * lane. Checked by tests/asm_global_lds.rs.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.macro OUT reg
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, \reg, s[6:7]
  s_add_u32 s6, s6, 256
  s_addc_u32 s7, s7, 0
.endm

.text
.globl glds
.p2align 8
.type glds,@function
glds:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // in, out
  v_lshlrev_b32 v1, 2, v0                      // v1 = 4 * lane
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v3, s5
  v_add_co_u32 v2, vcc, s4, v1
  v_addc_co_u32 v3, vcc, 0, v3, vcc            // v[2:3] = in + 4 * lane
  // 64-bit address form; M0 = 66: bits 1:0 are ignored, so the slots start at 64 + 16.
  s_mov_b32 m0, 66
  global_load_lds_dword v[2:3], off offset:16
  s_waitcnt vmcnt(0)
  ds_read_b32 v5, v1 offset:80
  OUT v5                                       // row 0: in[l + 4]
  // saddr form, a byte: slots at 512 + 1 (unaligned in LDS: the offset applies to both).
  s_movk_i32 m0, 512
  global_load_lds_ubyte v1, s[4:5] offset:1
  s_waitcnt vmcnt(0)
  ds_read_b32 v5, v1 offset:513
  OUT v5                                       // row 1: byte 1 of in[l], zero-extended
  // A negative offset: memory in + 4l + 8 - 2, slots at 1024 - 2.
  s_movk_i32 m0, 1024
  v_add_u32 v6, 8, v1
  global_load_lds_sshort v6, s[4:5] offset:-2
  s_waitcnt vmcnt(0)
  ds_read_b32 v5, v1 offset:1022
  OUT v5                                       // row 2: high half of in[l + 1], sign-extended
  global_load_lds_sbyte v[2:3], off offset:3
  s_waitcnt vmcnt(0)
  ds_read_b32 v5, v1 offset:1027
  OUT v5                                       // row 3: byte 3 of in[l], sign-extended
  // scratch_load_lds_dword: the lane's private dword 2 into slots at 1536 + 8.
  v_mul_u32_u24 v7, 7, v0
  scratch_store_dword off, v7, off offset:8
  s_movk_i32 m0, 1536
  scratch_load_lds_dword off, off offset:8
  s_waitcnt vmcnt(0)
  ds_read_b32 v5, v1 offset:1544
  OUT v5                                       // row 4: 7 * l
  // SS form: sgpr offset 4, instruction offset 4.
  s_mov_b32 s8, 4
  scratch_load_lds_ushort off, s8 offset:4
  s_waitcnt vmcnt(0)
  ds_read_b32 v5, v1 offset:1540
  OUT v5                                       // row 5: low half of 7 * l
  s_endpgm
.Lglds_end:
.size glds, .Lglds_end-glds

.rodata
.p2align 6
.amdhsa_kernel glds
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 16
  .amdhsa_group_segment_fixed_size 2048
  .amdhsa_private_segment_fixed_size 16
  .amdhsa_enable_private_segment 1
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: glds, .symbol: glds.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 2048, .private_segment_fixed_size: 16, .wavefront_size: 64, .sgpr_count: 16, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
