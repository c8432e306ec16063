//! Human-readable listings of a code object: the `info` summary and the `disasm` listing of
//! `ferrocm-emu`, written to any [`Write`] (the CLI's stdout, a test's buffer, a fuzzer's sink).
//!
//! Both only read what [`CodeObject::parse`] validated, so neither can panic on a parsed object;
//! a write error (a closed pipe) is returned to the caller.

use crate::codeobj::CodeObject;
use std::io::{self, Write};

/// Kernels with their entry, code size, resources and kernarg layout.
///
/// # Errors
/// Only `out`'s write errors.
pub fn info(co: &CodeObject, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{} code object v{}, {} bytes, {} kernels", co.arch, co.version, co.bytes().len(), co.kernels.len())?;
    for k in &co.kernels {
        let r = k.resources();
        let m = &k.meta;
        writeln!(out, "\n{}  (entry {:#x}, {} bytes of code)", m.name, k.code_vaddr, k.code_size)?;
        writeln!(
            out,
            "  VGPR {} AGPR {} SGPR {}  LDS {} B  scratch {} B  spills {}/{}  max waves/SIMD {}  max workgroup {}",
            r.vgprs,
            r.agprs,
            r.sgprs,
            r.lds_static,
            r.scratch,
            r.vgpr_spills,
            r.sgpr_spills,
            r.max_waves_per_simd,
            m.max_flat_workgroup_size
        )?;
        // The dispatcher allocates what the descriptor says; a disagreeing metadata field is
        // worth seeing (a hand-edited or corrupt object).
        if m.private_segment_fixed_size != r.scratch {
            writeln!(
                out,
                "  (the metadata says {} B of scratch; the descriptor's {} B is what a launch gets)",
                m.private_segment_fixed_size, r.scratch
            )?;
        }
        writeln!(out, "  kernarg segment {} bytes (align {})", m.kernarg_segment_size, m.kernarg_segment_align)?;
        for a in &m.args {
            writeln!(
                out,
                "    @{:<4} {:>3} B  {:?}{}",
                a.offset,
                a.size,
                a.value_kind,
                a.name.as_deref().map(|n| format!("  {n}")).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

/// Every kernel's code, one instruction a line in `llvm-objdump` syntax with its address and
/// encoding; words that do not decode are listed as `<invalid: ...>` and skipped one at a time.
///
/// # Errors
/// Only `out`'s write errors.
pub fn disasm(co: &CodeObject, out: &mut impl Write) -> io::Result<()> {
    for k in &co.kernels {
        writeln!(out, "\n{:016x} <{}>:", k.code_vaddr, k.meta.name)?;
        // The parser checked that the code lies in a segment's file bytes; a kernel without a
        // function symbol has no known size and lists nothing.
        let code = co.file_bytes_at(k.code_vaddr, k.code_size).unwrap_or_default();
        let words: Vec<u32> = code.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4"))).collect();
        let mut i = 0;
        while i < words.len() {
            let pc = k.code_vaddr + 4 * i as u64;
            match crate::isa::decode(&words[i..], pc) {
                Ok(inst) => {
                    // A decoded instruction never claims more words than it was given; the clamp
                    // keeps a decoder bug from becoming an out-of-range slice here.
                    let n = (inst.size as usize / 4).clamp(1, words.len() - i);
                    let raw: Vec<String> = words[i..i + n].iter().map(|w| format!("{w:08X}")).collect();
                    writeln!(out, "\t{:<56} // {pc:012X}: {}", inst.text(), raw.join(" "))?;
                    i += n;
                }
                Err(e) => {
                    writeln!(out, "\t<invalid: {e}>  // {pc:012X}: {:08X}", words[i])?;
                    i += 1;
                }
            }
        }
    }
    Ok(())
}
