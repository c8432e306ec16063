//! Every kernel of a real code object: llvm-objdump-19 and our decoder must agree on every
//! instruction boundary and every instruction's text.

mod common;

use common::*;
use ferrocm_emu::isa::decode_range;

#[test]
fn fixture_code_object_disassembles_like_llvm_objdump() {
    require_tools();
    let path = fixture("ferrocm.co");
    let bytes = std::fs::read(&path).expect("read the fixture code object");
    let rows = parse_objdump(&objdump_file(&path));
    assert!(!rows.is_empty(), "llvm-objdump printed no instructions");
    // The .text section: find it in the ELF section headers.
    let (text_off, text_addr, text_size) = text_section(&bytes);
    let code = &bytes[text_off..text_off + text_size];
    let ours = decode_range(code, text_addr).unwrap_or_else(|e| panic!("{e}"));
    let theirs: Vec<_> = rows.iter().filter(|(_, t, _)| !t.starts_with(".long")).collect();
    let mut i = 0;
    let mut checked = 0;
    for (addr, text, _) in &theirs {
        // llvm-objdump skips the zero padding between kernels ("..."); so do we by address.
        while i < ours.len() && ours[i].0 < *addr {
            i += 1;
        }
        let (pc, inst) = &ours[i];
        assert_eq!(pc, addr, "instruction boundary differs at {addr:#x}");
        assert_eq!(norm(&inst.text()), norm(text), "at {addr:#x}");
        checked += 1;
    }
    assert!(checked > 100, "only {checked} instructions compared");
}

/// (file offset, address, size) of `.text` in a 64-bit little-endian ELF.
fn text_section(b: &[u8]) -> (usize, u64, usize) {
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let shoff = u64_at(0x28) as usize;
    let shentsize = u16_at(0x3A);
    let shnum = u16_at(0x3C);
    let shstrndx = u16_at(0x3E);
    let strtab = u64_at(shoff + shstrndx * shentsize + 0x18) as usize;
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        let name = u32_at(sh);
        let n = &b[strtab + name..];
        let n = &n[..n.iter().position(|&c| c == 0).unwrap()];
        if n == b".text" {
            return (u64_at(sh + 0x18) as usize, u64_at(sh + 0x10), u64_at(sh + 0x20) as usize);
        }
    }
    panic!("no .text section");
}
