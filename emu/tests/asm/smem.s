// Scalar memory: s_buffer_* range checks (per dword, num_records bytes or records * stride),
// s_load address alignment, s_store, and s_memtime as a monotonic counter.
// Checked by tests/asm_smem.rs.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.text
.globl smem_ops
.p2align 8
.type smem_ops,@function
smem_ops:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // buf, out
  s_waitcnt lgkmcnt(0)
  s_memtime s[40:41]
  s_mov_b32 s8, s4                             // V#: buf, stride 0, 20 bytes
  s_and_b32 s9, s5, 0xffff
  s_mov_b32 s10, 20
  s_mov_b32 s11, 0x27000
  s_buffer_load_dwordx8 s[16:23], s[8:11], 0x0 // dwords 0-4 in range, 5-7 read 0
  s_mov_b32 s12, 16
  s_buffer_load_dword s24, s[8:11], s12        // offset 16 < 20: buf[4]
  s_or_b32 s9, s9, 8<<16                       // stride 8, 3 records: 24 bytes
  s_mov_b32 s10, 3
  s_buffer_load_dwordx8 s[32:39], s[8:11], 0x0 // dwords 0-5 in range
  s_load_dword s25, s[4:5], 0x6                // the two low address bits are ignored: buf[1]
  s_waitcnt lgkmcnt(0)
  s_mov_b32 s10, 20
  s_and_b32 s9, s5, 0xffff
  s_buffer_store_dwordx4 s[16:19], s[8:11], 0xc // dwords at 12, 16 stored; 20, 24 dropped
  s_memtime s[42:43]
  s_waitcnt lgkmcnt(0)
  s_sub_u32 s26, s42, s40                      // > 0
  s_store_dwordx4 s[16:19], s[6:7], 0x0
  s_store_dwordx4 s[20:23], s[6:7], 0x10
  s_store_dwordx2 s[24:25], s[6:7], 0x20
  s_store_dword s26, s[6:7], 0x28
  s_store_dwordx4 s[32:35], s[6:7], 0x40
  s_store_dwordx4 s[36:39], s[6:7], 0x50
  s_dcache_wb
  s_waitcnt lgkmcnt(0)
  s_endpgm
.Lsmem_ops_end:
.size smem_ops, .Lsmem_ops_end-smem_ops

.rodata
.p2align 6
.amdhsa_kernel smem_ops
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 48
  .amdhsa_accum_offset 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: smem_ops, .symbol: smem_ops.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 48, .vgpr_count: 8, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
