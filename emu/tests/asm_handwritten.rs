//! A kernel written the way AMD's hand-written code objects are (tests/asm/handwritten.s): a
//! function symbol of size 0, plain labels as branch targets, no `.agpr_count` in the metadata,
//! `s_setvskip`. It must run, and `disasm` must print it as llvm-objdump-19 does.

#[path = "asm/harness.rs"]
mod harness;

use ferrocm_emu::listing;
use harness::Gpu;
use std::process::Command;

#[test]
fn a_size_zero_symbol_still_has_its_code() {
    let co = harness::code_object("handwritten");
    let sym = co.elf.symbol("hw_kernel").unwrap();
    assert_eq!(sym.size, 0, "the test kernel must keep its symbol unsized");
    let k = co.kernel("hw_kernel").unwrap();
    // To the end of .text: every instruction of the kernel is inside.
    assert!(k.code_size >= 4 * 20, "code size {}", k.code_size);
}

#[test]
fn registers_come_from_the_descriptor_and_vskip_skips() {
    let gpu = Gpu::new("handwritten");
    let out = gpu.zeros(64);
    gpu.launch("hw_kernel", 1, 64, &[out]);
    let got = gpu.u32s(out, 64);
    for (l, v) in got.iter().enumerate() {
        assert_eq!(*v, 3 * l as u32 + 7, "lane {l}: v8 is a0 (ACCUM_OFFSET 8), and the skipped v_mov did not run");
    }
}

#[test]
fn disasm_names_labels_as_llvm_objdump_does() {
    let co = harness::code_object("handwritten");
    // llvm-objdump needs a file: write the linked object out.
    let path = std::env::temp_dir().join(format!("ferrocm-handwritten-{}.co", std::process::id()));
    std::fs::write(&path, co.bytes()).unwrap();
    let out = Command::new("llvm-objdump-19").args(["-d", "--mcpu=gfx942"]).arg(&path).output().expect("llvm-objdump-19");
    std::fs::remove_file(&path).ok();
    let objdump = String::from_utf8_lossy(&out.stdout);
    assert!(objdump.contains("s_cbranch_scc0 loop_top"), "llvm-objdump names the label:\n{objdump}");
    let d = listing::objdump_differential(&co, &objdump);
    assert!(d.instructions >= 20, "{} instructions compared", d.instructions);
    assert!(d.mismatches.is_empty(), "{:#?}", d.mismatches);
}
