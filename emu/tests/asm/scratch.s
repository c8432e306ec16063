// Private memory: the four gfx940 SCRATCH addressing modes (ST, SS, SV, SVS), sub-dword and
// multi-dword scratch accesses, an unaligned dword (unaligned mode), the flat private aperture
// reading what SCRATCH wrote, and s_scratch_* in the swizzled layout.
// Checked by tests/asm_scratch.rs.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.macro OUT reg
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, \reg, s[6:7]
  s_add_u32 s6, s6, 256
  s_addc_u32 s7, s7, 0
.endm

.text
.globl scratch_modes
.p2align 8
.type scratch_modes,@function
scratch_modes:
  s_load_dwordx2 s[6:7], s[0:1], 0x0           // out
  v_lshlrev_b32 v1, 2, v0
  v_add_u32 v3, 100, v0
  v_add_u32 v4, 200, v0
  v_add_u32 v6, 300, v0
  v_add_u32 v7, 400, v0
  s_waitcnt lgkmcnt(0)
  scratch_store_dword off, v3, off offset:16   // ST: offset only -> 16
  s_mov_b32 s8, 20
  scratch_store_dword off, v4, s8 offset:4     // SS: sgpr + offset -> 24
  v_mov_b32 v5, 32
  scratch_store_dword v5, v6, off              // SV: vgpr -> 32
  scratch_store_dword v5, v7, s8 offset:-4     // SVS: vgpr + sgpr + offset -> 48
  // Read back through the flat private aperture: {offset, src_private_base}.
  v_mov_b32 v10, 0
  v_mov_b32 v11, src_private_base
  flat_load_dword v12, v[10:11] offset:16
  OUT v12                                      // row 0: l + 100
  flat_load_dword v12, v[10:11] offset:24
  OUT v12                                      // row 1: l + 200
  flat_load_dword v12, v[10:11] offset:32
  OUT v12                                      // row 2: l + 300
  flat_load_dword v12, v[10:11] offset:48
  OUT v12                                      // row 3: l + 400
  // dwordx4 around them, sub-dword and d16_hi.
  scratch_load_dwordx4 v[12:15], off, off offset:16
  OUT v12                                      // row 4: l + 100
  OUT v14                                      // row 5: l + 200
  v_mov_b32 v16, 0xffff8001
  scratch_store_short off, v16, off offset:56
  scratch_load_sshort v12, off, off offset:56
  OUT v12                                      // row 6: -32767
  v_mov_b32 v12, 0x1234
  scratch_load_short_d16_hi v12, off, off offset:56
  OUT v12                                      // row 7: 0x80011234
  // An unaligned dword (unaligned mode): bytes 41..45.
  v_mov_b32 v16, 0x44332211
  scratch_store_dword off, v16, off offset:41
  scratch_load_ubyte v12, off, off offset:42
  OUT v12                                      // row 8: 0x22
  scratch_load_dword v12, off, off offset:41
  OUT v12                                      // row 9: 0x44332211
  // s_scratch: byte address base + offset (+ soffset * 64) in the swizzled layout, where
  // dword d of lane l is at 256 d + 4 l: offset 0x104 is dword 1 of lane 1.
  s_mov_b32 s10, 0
  s_mov_b32 s11, src_private_base
  s_movk_i32 s12, 0x55
  s_scratch_store_dword s12, s[10:11], 0x104
  s_waitcnt lgkmcnt(0)
  scratch_load_dword v12, off, off offset:4
  OUT v12                                      // row 10: 0x55 in lane 1, 0 elsewhere
  s_scratch_load_dwordx2 s[14:15], s[10:11], 0x100
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v12, s15
  OUT v12                                      // row 11: 0x55 (dword 1 of lane 1 again)
  s_endpgm
.Lscratch_modes_end:
.size scratch_modes, .Lscratch_modes_end-scratch_modes

.rodata
.p2align 6
.amdhsa_kernel scratch_modes
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 24
  .amdhsa_accum_offset 32
  .amdhsa_private_segment_fixed_size 64
  .amdhsa_enable_private_segment 1
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: scratch_modes, .symbol: scratch_modes.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 64, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
