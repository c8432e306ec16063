// Every GLOBAL atomic of gfx942, with (sc0) and without return; buffer and scalar atomics;
// faults of misaligned atomics and out-of-range addresses; an unaligned (non-atomic) load.
// Checked by tests/asm_atomics.rs.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

// v[2:5] = this op's data for the lane: 16 bytes at the data cursor s[10:11] + 16 l.
.macro LOADDATA
  global_load_dwordx4 v[2:5], v8, s[10:11]
  s_add_u32 s10, s10, 1024
  s_addc_u32 s11, s11, 0
  s_waitcnt vmcnt(0)
.endm

// The returned (old) values, 8 bytes a lane, at the out cursor s[12:13] + 8 l.
.macro SAVE
  s_waitcnt vmcnt(0)
  global_store_dwordx2 v9, v[6:7], s[12:13]
  s_add_u32 s12, s12, 512
  s_addc_u32 s13, s13, 0
.endm

// Op \k on cell 8k with return and on cell 512 + 8k without.
.macro A32 op, k
  LOADDATA
  v_mov_b32 v7, 0
  global_atomic_\op v6, v10, v2, s[4:5] offset:8*\k sc0
  global_atomic_\op v10, v2, s[4:5] offset:512+8*\k
  SAVE
.endm
.macro A64 op, k
  LOADDATA
  global_atomic_\op v[6:7], v10, v[2:3], s[4:5] offset:8*\k sc0
  global_atomic_\op v10, v[2:3], s[4:5] offset:512+8*\k
  SAVE
.endm

.text
.globl global_atomics
.p2align 8
.type global_atomics,@function
global_atomics:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // cells, data
  s_load_dwordx2 s[12:13], s[0:1], 0x10        // out
  v_lshlrev_b32 v8, 4, v0
  v_lshlrev_b32 v9, 3, v0
  v_mov_b32 v10, 0
  s_waitcnt lgkmcnt(0)
  s_mov_b64 s[10:11], s[6:7]
  A32 swap, 0
  LOADDATA                                     // 32-bit cmpswap: v2 = new, v3 = compare
  v_mov_b32 v7, 0
  global_atomic_cmpswap v6, v10, v[2:3], s[4:5] offset:8 sc0
  global_atomic_cmpswap v10, v[2:3], s[4:5] offset:520
  SAVE
  A32 add, 2
  A32 sub, 3
  A32 smin, 4
  A32 umin, 5
  A32 smax, 6
  A32 umax, 7
  A32 and, 8
  A32 or, 9
  A32 xor, 10
  A32 inc, 11
  A32 dec, 12
  A32 add_f32, 13
  A32 pk_add_f16, 14
  A32 pk_add_bf16, 15
  A64 swap_x2, 16
  LOADDATA                                     // 64-bit cmpswap: v[2:3] new, v[4:5] compare
  global_atomic_cmpswap_x2 v[6:7], v10, v[2:5], s[4:5] offset:136 sc0
  global_atomic_cmpswap_x2 v10, v[2:5], s[4:5] offset:648
  SAVE
  A64 add_x2, 18
  A64 sub_x2, 19
  A64 smin_x2, 20
  A64 umin_x2, 21
  A64 smax_x2, 22
  A64 umax_x2, 23
  A64 and_x2, 24
  A64 or_x2, 25
  A64 xor_x2, 26
  A64 inc_x2, 27
  A64 dec_x2, 28
  A64 add_f64, 29
  A64 min_f64, 30
  A64 max_f64, 31
  s_endpgm
.Lglobal_atomics_end:
.size global_atomics, .Lglobal_atomics_end-global_atomics

// Buffer, flat-to-global and scalar atomics on cells; returns to out rows.
.globl other_atomics
.p2align 8
.type other_atomics,@function
other_atomics:
  s_load_dwordx4 s[4:7], s[0:1], 0x0           // cells, out
  v_lshlrev_b32 v1, 2, v0
  v_lshlrev_b32 v9, 3, v0
  s_waitcnt lgkmcnt(0)
  // A raw V# over the first 16 bytes of cells: lanes with (l % 8) * 4 >= 16 are dropped.
  s_mov_b32 s8, s4
  s_and_b32 s9, s5, 0xffff
  s_mov_b32 s10, 16
  s_mov_b32 s11, 0x27000
  v_and_b32 v2, 7, v0
  v_lshlrev_b32 v2, 2, v2
  v_add_u32 v3, 1, v0
  buffer_atomic_add v3, v2, s[8:11], 0 offen sc0
  s_waitcnt vmcnt(0)
  global_store_dword v1, v3, s[6:7]            // row 0
  // 64-bit compare-swap through a V# whose soffset selects cells + 64.
  s_mov_b32 s10, 1024
  s_movk_i32 s14, 64
  v_mov_b32 v4, v0                             // new: l, 0 ... compare: l - 1 chain
  v_mov_b32 v5, 0
  v_add_u32 v6, -1, v0
  v_mov_b32 v7, 0
  v_mov_b32 v2, 0
  buffer_atomic_cmpswap_x2 v[4:7], v2, s[8:11], s14 offen sc0
  s_waitcnt vmcnt(0)
  global_store_dword v1, v4, s[6:7] offset:256 // row 1: old low dwords
  v_cvt_f64_u32 v[4:5], v0
  buffer_atomic_max_f64 v[4:5], v2, s[8:11], 0 offen offset:72 sc0
  s_waitcnt vmcnt(0)
  global_store_dword v1, v5, s[6:7] offset:512 // row 2: old high dwords
  v_mov_b32 v4, 0x3c003c00                     // (1.0, 1.0) in f16
  buffer_atomic_pk_add_f16 v4, v2, s[8:11], 0 offen offset:80 sc0
  s_waitcnt vmcnt(0)
  global_store_dword v1, v4, s[6:7] offset:768 // row 3
  // flat atomics on a global address.
  v_mov_b32 v12, s4
  v_mov_b32 v13, s5
  v_cvt_f64_u32 v[4:5], v0
  flat_atomic_add_f64 v[4:5], v[12:13], v[4:5] offset:88 sc0
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, v5, s[6:7] offset:1024 // row 4
  v_mov_b32 v4, 0x3f803f80                     // (1.0, 1.0) in bf16
  flat_atomic_pk_add_bf16 v4, v[12:13], v4 offset:96 sc0
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, v4, s[6:7] offset:1280 // row 5
  // Scalar atomics: glc returns the old value to SDATA.
  s_mov_b32 s16, 5
  s_atomic_add s16, s[4:5], 0x68 glc
  s_mov_b32 s17, 7
  s_atomic_add s17, s[4:5], 0x68
  s_mov_b32 s18, 3
  s_buffer_atomic_add s18, s[8:11], 0x6c glc   // in range (1024 bytes)
  s_mov_b32 s10, 16
  s_mov_b32 s19, 9
  s_buffer_atomic_add s19, s[8:11], 0x6c glc   // out of range now: nothing happens
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v4, s16
  v_mov_b32 v5, s18
  v_mov_b32 v6, s19
  global_store_dword v1, v4, s[6:7] offset:1536 // row 6: the old value
  global_store_dword v1, v5, s[6:7] offset:1792 // row 7: 0 (old)
  global_store_dword v1, v6, s[6:7] offset:2048 // row 8: 9 (unchanged)
  s_endpgm
.Lother_atomics_end:
.size other_atomics, .Lother_atomics_end-other_atomics

// Lane 5 adds to a misaligned address.
.globl misaligned_atomic
.p2align 8
.type misaligned_atomic,@function
misaligned_atomic:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_cmp_eq_u32 vcc, 5, v0
  v_cndmask_b32 v1, 0, 2, vcc
  s_waitcnt lgkmcnt(0)
  global_atomic_add v1, v0, s[4:5]
  s_endpgm
.Lmisaligned_atomic_end:
.size misaligned_atomic, .Lmisaligned_atomic_end-misaligned_atomic

// Lane 7 loads 1 MiB past the buffer.
.globl wild_load
.p2align 8
.type wild_load,@function
wild_load:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_cmp_eq_u32 vcc, 7, v0
  v_mov_b32 v2, 0x100000
  v_cndmask_b32 v1, 0, v2, vcc
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  s_endpgm
.Lwild_load_end:
.size wild_load, .Lwild_load_end-wild_load

// Unaligned non-atomic accesses (unaligned mode): a dword at +1 and a dwordx2 at +6.
.globl unaligned
.p2align 8
.type unaligned,@function
unaligned:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_lshlrev_b32 v3, 3, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5] offset:1
  s_waitcnt vmcnt(0)
  global_store_dword v1, v2, s[6:7] offset:3
  global_load_dwordx2 v[4:5], v3, s[4:5] offset:6
  s_waitcnt vmcnt(0)
  global_store_dwordx2 v3, v[4:5], s[6:7] offset:1024
  s_endpgm
.Lunaligned_end:
.size unaligned, .Lunaligned_end-unaligned

.rodata
.macro KD name
.p2align 6
.amdhsa_kernel \name
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 24
  .amdhsa_accum_offset 16
.end_amdhsa_kernel
.endm
KD global_atomics
KD other_atomics
KD misaligned_atomic
KD wild_load
KD unaligned

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: global_atomics, .symbol: global_atomics.kd, .kernarg_segment_size: 24, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 16, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: other_atomics, .symbol: other_atomics.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: misaligned_atomic, .symbol: misaligned_atomic.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: wild_load, .symbol: wild_load.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: unaligned, .symbol: unaligned.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 24, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
