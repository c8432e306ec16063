// DS instructions: two-address forms with offset scaling and st64, the equal-offset rule,
// b128, atomics (32/64-bit, float, cmpst, wrap, condxchg), wrxchg2, append/consume, addtid,
// swizzle (all modes), permute and bpermute; and a kernel whose bank conflicts are known.
// Checked by tests/asm_lds.rs.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.macro OUT reg
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, \reg, s[6:7]
  s_add_u32 s6, s6, 256
  s_addc_u32 s7, s7, 0
.endm

.text
.globl lds_ops
.p2align 8
.type lds_ops,@function
lds_ops:
  s_load_dwordx2 s[6:7], s[0:1], 0x0           // out
  v_lshlrev_b32 v1, 2, v0                      // 4l
  v_lshlrev_b32 v2, 3, v0                      // 8l
  v_add_u32 v3, 100, v0                        // l + 100
  v_add_u32 v4, 200, v0                        // l + 200
  s_waitcnt lgkmcnt(0)
  // read2/write2: offsets in dwords.
  ds_write2_b32 v2, v3, v4 offset0:2 offset1:7
  ds_read2_b32 v[10:11], v2 offset0:2 offset1:7
  OUT v10                                      // row 0: l + 100
  OUT v11                                      // row 1: l + 200
  ds_read_b32 v10, v2 offset:28
  OUT v10                                      // row 2: l + 200 (byte offset 28 = dword 7)
  // st64 b32: offsets times 256 bytes.
  ds_write2st64_b32 v1, v3, v4 offset0:1 offset1:3
  ds_read_b32 v10, v1 offset:256
  OUT v10                                      // row 3: l + 100
  ds_read2st64_b32 v[10:11], v1 offset0:1 offset1:3
  OUT v11                                      // row 4: l + 200
  // st64 b64 (offsets times 512) at 4096 + 8l.
  v_add_u32 v6, 0x1000, v2
  v_mov_b32 v12, v3
  v_mov_b32 v13, v0
  v_mov_b32 v14, v4
  v_not_b32 v15, v0
  ds_write2st64_b64 v6, v[12:13], v[14:15] offset0:2 offset1:5
  ds_read2st64_b64 v[16:19], v6 offset0:2 offset1:5
  OUT v16                                      // rows 5-8: l + 100, l, l + 200, !l
  OUT v17
  OUT v18
  OUT v19
  ds_read_b64 v[16:17], v6 offset:2560
  OUT v17                                      // row 9: !l (5 * 512)
  // Equal offsets: one write, of DATA0.
  ds_write2_b32 v1, v3, v4 offset0:9 offset1:9
  ds_read_b32 v10, v1 offset:36
  OUT v10                                      // row 10: l + 100
  // b128 and b96.
  v_lshlrev_b32 v7, 4, v0
  v_mov_b32 v20, v0
  v_add_u32 v21, 1, v0
  v_add_u32 v22, 2, v0
  v_add_u32 v23, 3, v0
  ds_write_b128 v7, v[20:23] offset:16
  ds_read_b128 v[24:27], v7 offset:16
  OUT v24                                      // row 11: l
  OUT v27                                      // row 12: l + 3
  ds_read_b96 v[24:26], v7 offset:20
  OUT v26                                      // row 13: l + 3

  // ---- atomics on cells at 7680 (all lanes one address, applied in lane order) ----
  v_mov_b32 v30, 0x1e00
  v_mov_b32 v28, 0
  ds_write_b32 v1, v28 offset:7680             // clear 7680 .. 7936
  v_add_u32 v31, 1, v0
  ds_add_rtn_u32 v10, v30, v31
  OUT v10                                      // row 14: returns of add l + 1
  v_mul_u32_u24 v32, 37, v0
  v_and_b32 v32, 63, v32
  v_subrev_u32 v32, 32, v32                    // (37 l mod 64) - 32
  ds_max_rtn_i32 v10, v30, v32 offset:4
  OUT v10                                      // row 15
  ds_cmpst_rtn_b32 v10, v30, v0, v31 offset:8  // compare l, store l + 1
  OUT v10                                      // row 16
  v_cvt_f32_u32 v35, v0
  v_mul_f32 v35, 0x3e800000, v35               // 0.25 l
  ds_add_rtn_f32 v10, v30, v35 offset:12
  OUT v10                                      // row 17
  v_mov_b32 v36, -1
  v_mov_b32 v37, v0
  ds_add_u64 v30, v[36:37] offset:16           // cell 16: sum of (l << 32) + 0xffffffff
  v_mov_b32 v40, 3
  v_mov_b32 v41, 10
  ds_wrap_rtn_b32 v10, v30, v40, v41 offset:24
  OUT v10                                      // row 18
  v_cvt_f64_i32 v[46:47], v32
  ds_min_rtn_f64 v[10:11], v30, v[46:47] offset:32
  OUT v10                                      // rows 19-20: old f64
  OUT v11
  v_lshlrev_b32 v38, 1, v0
  ds_or_rtn_b32 v10, v30, v38 offset:40
  OUT v10                                      // row 21
  ds_inc_rtn_u32 v10, v30, v40 offset:44
  OUT v10                                      // row 22: inc with limit 3
  ds_dec_rtn_u32 v10, v30, v40 offset:48
  OUT v10                                      // row 23: dec with limit 3
  v_mov_b32 v42, 0xffff00ff
  v_lshlrev_b32 v43, 8, v0
  ds_mskor_rtn_b32 v10, v30, v42, v43 offset:52
  OUT v10                                      // row 24
  v_mov_b32 v44, v0
  v_mov_b32 v45, 0
  ds_max_rtn_u64 v[10:11], v30, v[44:45] offset:56
  OUT v10                                      // row 25
  ds_read_b32 v10, v30 offset:16
  OUT v10                                      // row 26: low dword of cell 16
  ds_read_b32 v10, v30 offset:20
  OUT v10                                      // row 27: high dword of cell 16

  // ---- wrxchg2 and condxchg32 on per-lane addresses ----
  v_lshlrev_b32 v38, 1, v0                     // 2l
  v_mul_u32_u24 v39, 3, v0                     // 3l
  ds_write2_b32 v1, v38, v39 offset0:0 offset1:64
  ds_wrxchg2_rtn_b32 v[10:11], v1, v3, v4 offset0:0 offset1:64
  OUT v10                                      // row 28: 2l
  OUT v11                                      // row 29: 3l
  ds_read2_b32 v[10:11], v1 offset0:0 offset1:64
  OUT v11                                      // row 30: l + 200
  v_mov_b32 v8, 0x1000
  v_add_u32 v8, v8, v2                         // 4096 + 8l
  ds_write2_b32 v8, v3, v4 offset1:1
  v_or_b32 v9, 7, v8                           // low address bits are masked off
  v_and_b32 v44, 1, v0
  v_lshlrev_b32 v44, 31, v44
  v_or_b32 v44, v44, v0                        // bit 31 set on odd lanes
  v_add_u32 v45, 1000, v0
  v_or_b32 v45, 0x80000000, v45                // bit 31 set: always written
  ds_condxchg32_rtn_b64 v[10:11], v9, v[44:45]
  OUT v10                                      // row 31: l + 100
  OUT v11                                      // row 32: l + 200
  ds_read2_b32 v[10:11], v8 offset1:1
  OUT v10                                      // row 33: odd lanes l, even l + 100
  OUT v11                                      // row 34: l + 1000

  // ---- append/consume and addtid ----
  s_movk_i32 m0, 0x1e40                        // cell at 7744
  ds_append v10
  OUT v10                                      // row 35: 0
  s_mov_b64 exec, 0xffff
  ds_consume v10
  s_mov_b64 exec, -1
  ds_read_b32 v10, v30 offset:64
  OUT v10                                      // row 36: 64 - 16
  s_movk_i32 m0, 0x1800
  ds_write_addtid_b32 v3 offset:8              // 6144 + 8 + 4l
  ds_read_b32 v10, v1 offset:6152
  OUT v10                                      // row 37: l + 100
  ds_read_addtid_b32 v10 offset:8
  OUT v10                                      // row 38: l + 100

  // ---- swizzle, permute, bpermute ----
  ds_swizzle_b32 v10, v3 offset:swizzle(SWAP,16)
  OUT v10                                      // row 39
  ds_swizzle_b32 v10, v3 offset:swizzle(BROADCAST,8,3)
  OUT v10                                      // row 40
  ds_swizzle_b32 v10, v3 offset:swizzle(QUAD_PERM,3,2,1,0)
  OUT v10                                      // row 41
  ds_swizzle_b32 v10, v3 offset:0xc020         // rotate left by 1 within 32 lanes
  OUT v10                                      // row 42
  ds_swizzle_b32 v10, v3 offset:0xe000         // FFT, mask 0: bit-reversed lane within 32
  OUT v10                                      // row 43
  v_add_u32 v48, 5, v0
  v_and_b32 v48, 63, v48
  v_lshlrev_b32 v48, 2, v48                    // 4 * ((l + 5) % 64)
  ds_permute_b32 v10, v48, v3
  OUT v10                                      // row 44
  ds_bpermute_b32 v10, v48, v3
  OUT v10                                      // row 45
  v_mov_b32 v10, 0xdead
  s_mov_b64 exec, 0xffffffff
  ds_bpermute_b32 v10, v48, v3
  s_mov_b64 exec, -1
  OUT v10                                      // row 46: reads from inactive lanes give 0
  s_endpgm
.Llds_ops_end:
.size lds_ops, .Llds_ops_end-lds_ops

// One instruction each of known bank-conflict cost (MI300X counter semantics).
.globl lds_conflicts
.p2align 8
.type lds_conflicts,@function
lds_conflicts:
  v_lshlrev_b32 v1, 7, v0                      // 128 l: every lane on bank 0
  ds_read_b32 v2, v1                           // 62
  ds_read_b64 v[2:3], v1                       // 60
  ds_read_b128 v[2:5], v1                      // 56
  v_lshlrev_b32 v1, 4, v0
  ds_read_b128 v[2:5], v1                      // 0: 16-byte row-major
  ds_write_b128 v1, v[2:5]                     // 0
  v_lshlrev_b32 v1, 3, v0
  ds_read_b32 v2, v1                           // 2: stride of 2 dwords
  ds_read2_b32 v[2:3], v1 offset1:1            // 2 + 2: each address 2-way
  s_endpgm
.Llds_conflicts_end:
.size lds_conflicts, .Llds_conflicts_end-lds_conflicts

.rodata
.p2align 6
.amdhsa_kernel lds_ops
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 64
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 64
  .amdhsa_group_segment_fixed_size 8192
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel lds_conflicts
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
  .amdhsa_accum_offset 8
  .amdhsa_group_segment_fixed_size 8208
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: lds_ops, .symbol: lds_ops.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 8192, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 16, .vgpr_count: 64, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: lds_conflicts, .symbol: lds_conflicts.kd, .kernarg_segment_size: 0, .kernarg_segment_align: 8, .group_segment_fixed_size: 8208, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 8, .vgpr_count: 8, .max_flat_workgroup_size: 64}
...
.end_amdgpu_metadata
