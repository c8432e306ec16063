// MUBUF through hand-built buffer resources (V#s): raw, structured, swizzled, add_tid,
// unbound, typed (format) loads and stores, loads to LDS, and the scratch-window V# that
// older compiler output uses for private memory. Checked by tests/asm_buffer.rs.
//
// Every kernel takes (in, out) pointers and runs one wave; results go to consecutive
// 256-byte rows of `out` (one dword per lane), in the order the OUT macro is used.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

// Stores \reg of every lane to the next row of out (s[6:7] walks the rows).
.macro OUT reg
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dword v1, \reg, s[6:7]
  s_add_u32 s6, s6, 256
  s_addc_u32 s7, s7, 0
.endm

// s[4:7] = in, out; v1 = lane * 4.
.macro PROLOGUE
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
.endm

// A V# in s[\d:\d+3] over in (s[4:5]): word1 high bits, num_records, word3.
.macro VSHARP d, w1, recs, w3
  s_mov_b32 s[\d], s4
  s_and_b32 s[\d+1], s5, 0xffff
  s_or_b32 s[\d+1], s[\d+1], \w1
  s_mov_b32 s[\d+2], \recs
  s_mov_b32 s[\d+3], \w3
.endm

.text

// ---- raw buffers ----------------------------------------------------------------------------
.globl buf_raw
.p2align 8
.type buf_raw,@function
buf_raw:
  PROLOGUE
  VSHARP 8, 0, 100, 0x27000            // raw: 100 bytes, format 32
  buffer_load_dword v2, v1, s[8:11], 0 offen
  OUT v2                               // row 0: in[l] if 4l < 100
  s_mov_b32 s12, 40
  buffer_load_dword v2, v1, s[8:11], s12 offen
  OUT v2                               // row 1: soffset is range-checked: in[l+10] if 4l+40+4 <= 100
  buffer_load_dword v2, v1, s[8:11], 0 offen offset:8
  OUT v2                               // row 2: the instruction offset is: in[l+2] if 4l+8 < 100
  v_lshlrev_b32 v3, 3, v0
  buffer_load_dwordx2 v[2:3], v3, s[8:11], 0 offen
  OUT v2                               // row 3: dword 0 of in[2l..], checked on its own
  OUT v3                               // row 4: dword 1 (lane 12 straddles the end)
  // A store through a 40-byte raw V# over out row 5 (soffset selects the row).
  s_mov_b32 s12, s6
  s_and_b32 s13, s7, 0xffff
  s_mov_b32 s14, 40
  s_mov_b32 s15, 0x27000
  v_add_u32 v4, 1000, v0
  buffer_store_dword v4, v1, s[12:15], 0 offen
  s_add_u32 s6, s6, 256                // row 5 written by the store: l + 1000 for l < 10
  s_addc_u32 s7, s7, 0
  VSHARP 8, 0, 100, 0                  // data format 0: an unbound resource
  buffer_load_dword v2, v1, s[8:11], 0 offen
  OUT v2                               // row 6: all zero
  s_endpgm
.Lbuf_raw_end:
.size buf_raw, .Lbuf_raw_end-buf_raw

// ---- structured, swizzled and add_tid buffers ---------------------------------------------
.globl buf_struct
.p2align 8
.type buf_struct,@function
buf_struct:
  PROLOGUE
  VSHARP 8, 16<<16, 5, 0x27000         // structured: stride 16, 5 records
  v_mov_b32 v4, v0
  v_mov_b32 v5, 4
  buffer_load_dword v2, v[4:5], s[8:11], 0 idxen offen
  OUT v2                               // row 0: in[4l+1] for l < 5
  v_mov_b32 v5, 20
  buffer_load_dword v2, v[4:5], s[8:11], 0 idxen offen
  OUT v2                               // row 1: the offset is not checked: in[4l+5] for l < 5
  buffer_load_dword v2, v4, s[8:11], 0 idxen offset:8
  OUT v2                               // row 2: in[4l+2] for l < 5
  // Swizzled: stride 8, element 4, index stride 8, 64 records.
  VSHARP 8, (8<<16)|(1<<31), 64, 0x27000|(1<<19)
  v_mov_b32 v5, 4
  buffer_load_dword v2, v[4:5], s[8:11], 0 idxen offen
  OUT v2                               // row 3: in[16(l/8) + 8 + l%8]
  buffer_load_dwordx2 v[2:3], v4, s[8:11], 0 idxen
  OUT v2                               // row 4: in[16(l/8) + l%8]
  OUT v3                               // row 5: the second dword is another element: +8
  // add_tid without idxen: a private-type buffer, not range-checked (num_records 0); with
  // data format 0 the 18-bit stride is just 4.
  VSHARP 8, 4<<16, 0, 1<<23
  buffer_load_dword v2, off, s[8:11], 0 offset:4
  OUT v2                               // row 6: in[l+1]
  s_endpgm
.Lbuf_struct_end:
.size buf_struct, .Lbuf_struct_end-buf_struct

// ---- typed (format) loads and stores -----------------------------------------------------
.globl buf_format
.p2align 8
.type buf_format,@function
buf_format:
  PROLOGUE
  // 8_8_8_8 unorm, dst_sel (w, z, y, x), stride 4, 16 records.
  VSHARP 8, 4<<16, 16, (7|(6<<3)|(5<<6)|(4<<9)|(0<<12)|(10<<15))
  v_mov_b32 v4, v0
  buffer_load_format_xyzw v[10:13], v4, s[8:11], 0 idxen
  OUT v10                              // rows 0-3: the four channels as f32, 0 for l >= 16
  OUT v11
  OUT v12
  OUT v13
  v_mov_b32 v2, 0x12345678
  buffer_load_format_d16_xy v2, v4, s[8:11], 0 idxen
  OUT v2                               // row 4: f16(w) | f16(z) << 16
  v_mov_b32 v2, 0x12345678
  buffer_load_format_d16_hi_x v2, v4, s[8:11], 0 idxen
  OUT v2                               // row 5: f16(w) << 16 | 0x5678
  // The same element as 32 uint with dst_sel (x, 1, 0, 0): y reads integer 1.
  VSHARP 8, 4<<16, 16, (4|(1<<3)|(4<<12)|(4<<15))
  buffer_load_format_xy v[10:11], v4, s[8:11], 0 idxen
  OUT v10                              // row 6: the raw dword
  OUT v11                              // row 7: 1
  // A 16 float store through out row 9: v6 = lane as f32, stored as f16; row 8 stays zero.
  s_add_u32 s12, s6, 256
  s_addc_u32 s13, s7, 0
  s_and_b32 s13, s13, 0xffff
  s_or_b32 s13, s13, 2<<16
  s_mov_b32 s14, 64
  s_mov_b32 s15, (4|(7<<12)|(2<<15))
  v_cvt_f32_u32 v6, v0
  buffer_store_format_x v6, v4, s[12:15], 0 idxen
  s_endpgm
.Lbuf_format_end:
.size buf_format, .Lbuf_format_end-buf_format

// ---- loads to LDS and stores from LDS ------------------------------------------------------
.globl buf_lds
.p2align 8
.type buf_lds,@function
buf_lds:
  PROLOGUE
  VSHARP 8, 0, 1024, 0x27000
  s_mov_b32 m0, 256
  buffer_load_dword v1, s[8:11], 0 offen offset:4 lds
  s_waitcnt vmcnt(0)
  ds_read_b32 v2, v1 offset:260        // LDS[256 + 4 + 4l] = in[l+1]: M0 and the offset apply
  OUT v2                               // row 0
  s_mov_b32 m0, 1024
  buffer_load_sbyte v1, s[8:11], 0 offen lds
  s_waitcnt vmcnt(0)
  ds_read_b32 v2, v1 offset:1024
  OUT v2                               // row 1: sign-extended byte 4l of in
  // Store LDS[256 + 4 + 4l] through an add_tid V# over out row 2 (address out + 4l + 4).
  s_mov_b32 m0, 256
  s_mov_b32 s12, s6
  s_and_b32 s13, s7, 0xffff
  s_or_b32 s13, s13, 4<<16
  s_mov_b32 s14, 0
  s_mov_b32 s15, 1<<23
  buffer_store_lds_dword s[12:15], 0 offset:4 lds
  s_endpgm
.Lbuf_lds_end:
.size buf_lds, .Lbuf_lds_end-buf_lds

// ---- the scratch window through the runtime's scratch V# ----------------------------------
.globl buf_scratch
.p2align 8
.type buf_scratch,@function
buf_scratch:
  PROLOGUE
  // ROCR's scratch V#: swizzled, element 4, index stride 64, add_tid, base = the window.
  s_mov_b32 s8, 0
  s_mov_b32 s9, 0xf000|(1<<31)
  s_mov_b32 s10, 64*64
  s_mov_b32 s11, 0xea4fac
  buffer_store_dword v0, off, s[8:11], 0 offset:8       // lane's private dword 2
  v_add_u32 v2, 500, v0
  s_movk_i32 s12, 256                                    // wave-scaled: 4 bytes per lane
  buffer_store_dword v2, off, s[8:11], s12 offset:8     // private dword 3
  scratch_load_dword v3, off, off offset:8
  OUT v3                               // row 0: l
  scratch_load_dword v3, off, off offset:12
  OUT v3                               // row 1: l + 500
  buffer_load_dword v3, off, s[8:11], s12 offset:8
  OUT v3                               // row 2: l + 500
  s_endpgm
.Lbuf_scratch_end:
.size buf_scratch, .Lbuf_scratch_end-buf_scratch

// ---- the byte range check in the cases the CDNA guide leaves open ------------------------
// (AMD's rocjitsu after gfx950 measurements, ROCm/rocm-systems PR #10928.)
.globl buf_checks
.p2align 8
.type buf_checks,@function
buf_checks:
  PROLOGUE
  VSHARP 8, 0, 100, 0x27000            // 100 bytes, stride 0
  buffer_load_dword v2, v0, s[8:11], 0 idxen
  OUT v2                               // row 0: idxen with stride 0, checked by bytes: in[0]
  VSHARP 8, 16<<16, 100, 0x27000       // stride 16, num_records 100 read as bytes
  buffer_load_dword v2, v1, s[8:11], 0 offen
  OUT v2                               // row 1: OFFEN only on a strided buffer: in[l] if 4l+4 <= 100
  VSHARP 8, 0, 100, 0x27000
  v_add_u32 v3, 2, v1
  buffer_load_dword v2, v3, s[8:11], 0 offen
  OUT v2                               // row 2: the dword's end counts: bytes 4l+2.. if 4l+6 <= 100
  // A load to LDS over slots holding a marker: out-of-range lanes write zeros.
  v_mov_b32 v4, 0x5eed
  ds_write_b32 v1, v4
  s_mov_b32 m0, 0
  s_mov_b32 s12, 60
  s_waitcnt lgkmcnt(0)
  buffer_load_dword v1, s[8:11], s12 offen lds
  s_waitcnt vmcnt(0)
  ds_read_b32 v2, v1
  OUT v2                               // row 3: in[l+15] if 4l+64 <= 100, else 0
  s_endpgm
.Lbuf_checks_end:
.size buf_checks, .Lbuf_checks_end-buf_checks

.rodata
.macro KD name, lds, scratch, private
.p2align 6
.amdhsa_kernel \name
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 32
  .amdhsa_accum_offset 32
  .amdhsa_group_segment_fixed_size \lds
  .amdhsa_private_segment_fixed_size \scratch
  .amdhsa_enable_private_segment \private
.end_amdhsa_kernel
.endm
KD buf_raw, 0, 0, 0
KD buf_struct, 0, 0, 0
KD buf_format, 0, 0, 0
KD buf_lds, 2048, 0, 0
KD buf_scratch, 0, 64, 1
KD buf_checks, 256, 0, 0

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: buf_raw, .symbol: buf_raw.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 32, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: buf_struct, .symbol: buf_struct.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 32, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: buf_format, .symbol: buf_format.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 32, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: buf_lds, .symbol: buf_lds.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 2048, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 32, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: buf_scratch, .symbol: buf_scratch.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 64, .wavefront_size: 64, .sgpr_count: 32, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
  - {.name: buf_checks, .symbol: buf_checks.kd, .kernarg_segment_size: 16, .kernarg_segment_align: 8, .group_segment_fixed_size: 256, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 32, .vgpr_count: 32, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}, {.offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
