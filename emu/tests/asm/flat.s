// FLAT instructions routed by aperture: the LDS (shared) aperture, the private aperture and
// global memory, including atomics through each, and the 12-bit FLAT offset.
// Checked by tests/asm_flat.rs.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.macro OUT reg
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, \reg, s[6:7]
  s_add_u32 s6, s6, 256
  s_addc_u32 s7, s7, 0
.endm

.text
.globl flat_apertures
.p2align 8
.type flat_apertures,@function
flat_apertures:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // cells, out
  v_lshlrev_b32 v1, 2, v0
  v_add_u32 v3, 100, v0
  s_waitcnt lgkmcnt(0)
  // LDS through the shared aperture: {4l, src_shared_base}.
  v_mov_b32 v10, v1
  v_mov_b32 v11, src_shared_base
  flat_store_dword v[10:11], v3
  s_waitcnt vmcnt(0) lgkmcnt(0)
  ds_read_b32 v12, v1
  OUT v12                                      // row 0: l + 100 (written by FLAT, read by DS)
  flat_load_dword v12, v[10:11] offset:4
  OUT v12                                      // row 1: lane l + 1's value, 0 for lane 63
  v_mov_b32 v14, 0x200
  v_mov_b32 v15, src_shared_base
  v_add_u32 v16, 1, v0
  flat_atomic_add v12, v[14:15], v16 sc0       // all lanes, LDS dword 512
  OUT v12                                      // row 2: running sums
  // Private memory through the private aperture.
  v_mov_b32 v20, 8
  v_mov_b32 v21, src_private_base
  flat_store_dword v[20:21], v3 offset:4
  scratch_load_dword v12, off, off offset:12
  OUT v12                                      // row 3: l + 100
  flat_atomic_swap v12, v[20:21], v0 offset:4 sc0
  scratch_load_dword v13, off, off offset:12
  OUT v12                                      // row 4: l + 100 (old)
  OUT v13                                      // row 5: l (new)
  // Global memory: cells[l] and a shared cell.
  v_mov_b32 v23, s5
  v_add_co_u32 v22, vcc, s4, v1
  v_addc_co_u32 v23, vcc, 0, v23, vcc
  flat_store_dword v[22:23], v3 offset:256
  s_waitcnt vmcnt(0)
  global_load_dword v12, v1, s[4:5] offset:256
  OUT v12                                      // row 6: l + 100
  v_mov_b32 v24, s4
  v_mov_b32 v25, s5
  v_mov_b32 v26, v16                           // new value l + 1
  v_mov_b32 v27, v0                            // compare with l
  flat_atomic_cmpswap v12, v[24:25], v[26:27] sc0
  OUT v12                                      // row 7: l (the chain 0 -> 1 -> ... -> 64)
  // The FLAT offset field is 12 bits: bit 12 of the 13-bit field is ignored (table 54).
  .long 0xdc501004, 0x0c000016                 // flat_load_dword v12, v[22:23] with field 0x1004
  OUT v12                                      // row 8: cells[l + 1] (offset 4, not 4100)
  s_endpgm
.Lflat_apertures_end:
.size flat_apertures, .Lflat_apertures_end-flat_apertures

.rodata
.p2align 6
.amdhsa_kernel flat_apertures
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 32
  .amdhsa_group_segment_fixed_size 1024
  .amdhsa_private_segment_fixed_size 16
  .amdhsa_enable_private_segment 1
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: flat_apertures, .symbol: flat_apertures.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 1024, .private_segment_fixed_size: 16, .wavefront_size: 64, .sgpr_count: 16, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
