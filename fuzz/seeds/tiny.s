// The fuzz targets' small seed code object, fuzz/seeds/tiny.co: two short kernels touching
// kernarg loads, a hidden argument, EXEC masking, global loads/stores, LDS, a barrier and a
// global atomic, so that mutations start from a valid object of 3.5 KB rather than the 200 KB
// fixture (libFuzzer runs ~50x more executions a second on it). Rebuilt with
//   llvm-mc-19 -triple=amdgcn-amd-amdhsa -mcpu=gfx942 -filetype=obj -o tiny.o tiny.s
//   $(rustup run nightly-2026-05-20 rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-lld \
//       -flavor gnu -shared -o tiny.co tiny.o

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.text
.globl tiny_axpy
.p2align 8
.type tiny_axpy,@function
tiny_axpy:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // x, y
  s_load_dwordx2 s[8:9], s[0:1], 0x10          // n, a
  s_load_dword s12, s[0:1], 0x18               // hidden_block_count_x
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  v_cmp_gt_u32 vcc, s8, v0
  s_and_saveexec_b64 s[10:11], vcc
  s_cbranch_execz .Laxpy_end
  global_load_dword v2, v1, s[4:5]
  global_load_dword v3, v1, s[6:7]
  s_waitcnt vmcnt(0)
  v_fmac_f32_e32 v3, s9, v2
  v_add_u32 v3, s12, v3
  global_store_dword v1, v3, s[6:7]
.Laxpy_end:
  s_endpgm
.Ltiny_axpy_end:
.size tiny_axpy, .Ltiny_axpy_end-tiny_axpy

.globl tiny_atomic
.p2align 8
.type tiny_atomic,@function
tiny_atomic:
  s_load_dwordx2 s[4:5], s[0:1], 0x0           // counter
  v_lshlrev_b32 v1, 2, v0
  ds_write_b32 v1, v0
  s_waitcnt lgkmcnt(0)
  s_barrier
  ds_read_b32 v2, v1 offset:4
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v3, 0
  global_atomic_add v3, v2, s[4:5]
  s_endpgm
.Ltiny_atomic_end:
.size tiny_atomic, .Ltiny_atomic_end-tiny_atomic

.rodata
.p2align 6
.amdhsa_kernel tiny_axpy
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel tiny_atomic
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 8
  .amdhsa_group_segment_fixed_size 4100
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: tiny_axpy, .symbol: tiny_axpy.kd, .kernarg_segment_size: 32, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 16, .vgpr_count: 8, .max_flat_workgroup_size: 256, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 16, .size: 4, .value_kind: by_value}, {.offset: 20, .size: 4, .value_kind: by_value}, {.offset: 24, .size: 4, .value_kind: hidden_block_count_x}]}
  - {.name: tiny_atomic, .symbol: tiny_atomic.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 4100, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 8, .max_flat_workgroup_size: 1024, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
