//! The built code object: an AMDGPU ELF for gfx942 holding every kernel of device/, none of which
//! spills, and the MFMA kernel really uses the matrix cores and LDS.

use ferrocm::codeobj::{CodeObject, ELFOSABI_AMDGPU_HSA, EM_AMDGPU};
use ferrocm_tests::gfx942_code_object;
use std::collections::BTreeSet;

#[test]
fn the_code_object_is_an_amdgpu_hsa_elf_for_gfx942() {
    let co = CodeObject::parse_for(gfx942_code_object(), "gfx942").unwrap();
    assert_eq!(co.elf.machine, EM_AMDGPU);
    assert_eq!(co.elf.os_abi, ELFOSABI_AMDGPU_HSA);
    assert_eq!(co.arch, "gfx942");
    assert_eq!(co.version, 6);
    assert_eq!(co.metadata.target.as_deref(), Some("amdgcn-amd-amdhsa--gfx942"));
}

#[test]
fn it_lists_exactly_the_kernels_of_the_device_crate() {
    let co = CodeObject::parse(gfx942_code_object()).unwrap();
    let built: BTreeSet<&str> = co.kernels.iter().map(|k| k.meta.name.as_str()).collect();
    let declared: BTreeSet<&str> = ferrocm::abi::ALL_KERNELS.iter().flat_map(|k| k.iter().map(|d| d.name)).collect();
    assert_eq!(built, declared);
    for k in &co.kernels {
        assert!(k.code_size > 0, "{} has no code", k.meta.name);
        assert_eq!(k.meta.wavefront_size, 64);
    }
}

#[test]
fn no_kernel_spills_or_uses_scratch() {
    let co = CodeObject::parse(gfx942_code_object()).unwrap();
    for k in &co.kernels {
        let r = k.resources();
        assert!(!r.spills(), "{} spills: {r:?}", r.name);
        assert_eq!(r.scratch, 0, "{} uses scratch", r.name);
        assert!(r.max_waves_per_simd >= 1, "{} cannot run: {r:?}", r.name);
    }
}

/// The text of one function in the assembly listing.
fn listing_of(kernel: &str) -> String {
    let path = ferrocm::code_objects::listing_path("gfx942").expect("the build keeps the gfx942 listing");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find(&format!("\n{kernel}:")).unwrap_or_else(|| panic!("{kernel} not in {path}"));
    let end = text[start..].find(".Lfunc_end").map_or(text.len(), |e| start + e);
    text[start..end].to_string()
}

#[test]
fn the_mfma_kernel_uses_the_matrix_cores_and_lds() {
    let asm = listing_of("mfma_tile_32x32_f16");
    assert!(asm.contains("v_mfma_f32_32x32x8_f16"), "no MFMA in:\n{asm}");
    assert!(asm.contains("ds_read"), "no LDS read in:\n{asm}");
    assert!(asm.contains("ds_write"), "no LDS write in:\n{asm}");
}

#[test]
fn the_copy_kernel_moves_128_bits_per_access() {
    let asm = listing_of("copy_u32");
    assert!(asm.contains("global_load_dwordx4"), "{asm}");
    assert!(asm.contains("global_store_dwordx4"), "{asm}");
}

#[test]
fn every_kernel_carries_its_declared_launch_bound() {
    let co = CodeObject::parse(gfx942_code_object()).unwrap();
    for decl in ferrocm::abi::ALL_KERNELS.iter().flat_map(|k| k.iter()) {
        let k = co.kernel(decl.name).unwrap();
        assert_eq!(k.meta.max_flat_workgroup_size, decl.max_threads, "{}", decl.name);
    }
}
