// What AMD's hand-written code objects do that compiler output does not (GFX942.md, "Things
// hand-written code objects rely on"), in one small kernel. Checked by tests/asm_handwritten.rs:
// - the function symbol has no size (no `.size` directive): the code runs to the section's end;
// - branch targets are plain labels (local STT_NOTYPE symbols), which llvm-objdump prints by name;
// - the metadata gives no `.agpr_count`: the descriptor's ACCUM_OFFSET (8) splits the unified
//   register file, and v8 is the same register as a0;
// - `s_setvskip` turns off vector instructions in between.

.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5

.text
.globl hw_kernel
.p2align 8
.type hw_kernel,@function
hw_kernel:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v2, 0
  s_mov_b32 s6, 3
loop_top:
  v_add_u32 v2, v2, v0            // three times: v2 = 3 * lane
  s_sub_u32 s6, s6, 1
  s_cmp_eq_u32 s6, 0
  s_cbranch_scc0 loop_top
  v_accvgpr_write_b32 a0, v2      // a0 is unified register 8 (ACCUM_OFFSET 8) ...
  s_nop 1
  v_add_u32 v3, 7, v8             // ... which v8 names: v3 = 3 * lane + 7
  s_mov_b32 s7, 1
  s_setvskip s7, 0                // vector instructions off:
  v_mov_b32 v3, 0                 //   not issued
  s_setvskip 0, 0                 // and on again
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v3, s[4:5]
  s_branch done
skipped:
  v_mov_b32 v3, 1                 // never reached
done:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hw_kernel
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 16
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - {.name: hw_kernel, .symbol: hw_kernel.kd, .kernarg_segment_size: 8, .kernarg_segment_align: 8, .group_segment_fixed_size: 0, .private_segment_fixed_size: 0, .wavefront_size: 64, .sgpr_count: 16, .vgpr_count: 16, .max_flat_workgroup_size: 64, .args: [{.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}]}
...
.end_amdgpu_metadata
