//! Human-readable listings of a code object: the `info` summary and the `disasm` listing of
//! `ferrocm-emu`, written to any [`Write`] (the CLI's stdout, a test's buffer, a fuzzer's sink).
//!
//! Both only read what [`CodeObject::parse`] validated, so neither can panic on a parsed object;
//! a write error (a closed pipe) is returned to the caller.

use crate::codeobj::{CodeObject, SHF_EXECINSTR, SHT_NOBITS, STT_FILE, STT_FUNC, STT_NOTYPE, STT_SECTION};
use std::collections::HashMap;
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

/// The executable sections, laid out as `llvm-objdump-19 -d --mcpu=gfx942` lays them out: a
/// header per symbol (a kernel, an assembler label), then each instruction from that symbol to
/// the next with its address and encoding, branch targets as the label at the target where an
/// untyped symbol sits there (else the raw offset and a `<symbol+0xoffset>` note), runs of 8 or
/// more zero bytes as `...`. A word that does not decode is listed as `<invalid: ...>` (the
/// error naming it; llvm-objdump prints `.long`) and skipped.
///
/// # Errors
/// Only `out`'s write errors.
pub fn disasm(co: &CodeObject, out: &mut impl Write) -> io::Result<()> {
    let elf = &co.elf;
    for (index, sec) in elf.sections.iter().enumerate() {
        if sec.flags & SHF_EXECINSTR == 0 || sec.kind == SHT_NOBITS {
            continue;
        }
        let Some(bytes) = sec.offset.checked_add(sec.size).and_then(|end| co.bytes().get(sec.offset as usize..end as usize)) else {
            writeln!(out, "\n<section {} ({} bytes at file offset {:#x}) lies outside the file>", sec.name, sec.size, sec.offset)?;
            continue;
        };
        section(co, index, bytes, out)?;
    }
    Ok(())
}

/// One executable section (`index` in the section table, its file `bytes`).
fn section(co: &CodeObject, index: usize, bytes: &[u8], out: &mut impl Write) -> io::Result<()> {
    let sec = &co.elf.sections[index];
    let end = sec.addr.saturating_add(bytes.len() as u64);
    // The symbols llvm-objdump lists in a section: all but section and file symbols, by address
    // (then type, then name); a section without a symbol at its start gets its own name there.
    let mut syms: Vec<(u64, u8, &str)> = co
        .elf
        .symbols
        .iter()
        .filter(|s| s.section as usize == index && s.kind != STT_SECTION && s.kind != STT_FILE && (sec.addr..end).contains(&s.value))
        .map(|s| (s.value, s.kind, s.name.as_str()))
        .collect();
    syms.sort();
    if syms.first().is_none_or(|s| s.0 != sec.addr) {
        syms.insert(0, (sec.addr, STT_FUNC, sec.name.as_str()));
    }
    // Branch operands name the untyped symbol (an assembler label) at their target, the first
    // in the order above when there are several (LLVM's `AMDGPUSymbolizer`).
    let mut labels: HashMap<u64, &str> = HashMap::new();
    for &(a, kind, name) in &syms {
        if kind == STT_NOTYPE {
            labels.entry(a).or_insert(name);
        }
    }
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4"))).collect();
    writeln!(out, "\nDisassembly of section {}:", sec.name)?;
    let mut i = 0;
    while i < syms.len() {
        let start = syms[i].0;
        let mut j = i;
        while j < syms.len() && syms[j].0 == start {
            writeln!(out, "\n{start:016x} <{}>:", syms[j].2)?;
            j += 1;
        }
        let stop = syms.get(j).map_or(end, |s| s.0);
        let mut at = ((start - sec.addr) / 4) as usize;
        let stop_word = ((stop - sec.addr) / 4) as usize;
        while at < stop_word {
            let zeros = words[at..stop_word].iter().take_while(|&&w| w == 0).count();
            // llvm-objdump skips 8 or more zero bytes (`countSkippableZeroBytes`).
            if zeros >= 2 {
                writeln!(out, "\t\t...")?;
                at += zeros;
                continue;
            }
            let pc = sec.addr + 4 * at as u64;
            // The instruction may run past the next symbol, as in llvm-objdump, which decodes
            // from the section's remaining bytes.
            match crate::isa::decode(&words[at..], pc) {
                Ok(inst) => {
                    // A decoded instruction never claims more words than it was given; the clamp
                    // keeps a decoder bug from becoming an out-of-range slice here.
                    let n = (inst.size as usize / 4).clamp(1, words.len() - at);
                    let target = inst.branch_target(pc);
                    let label = target.and_then(|t| labels.get(&t).copied());
                    let text = format!("\t{}", inst.text_with_label(label));
                    write!(out, "{text:<60}// {pc:012X}:")?;
                    for w in &words[at..at + n] {
                        write!(out, " {w:08X}")?;
                    }
                    // An unlabelled target is noted as the nearest symbol at or before it.
                    if let (Some(t), None) = (target, label)
                        && let Some(&(a, _, name)) = syms.iter().rev().find(|s| s.0 <= t)
                    {
                        match t - a {
                            0 => write!(out, " <{name}>")?,
                            d => write!(out, " <{name}+{d:#x}>")?,
                        }
                    }
                    writeln!(out)?;
                    at += n;
                }
                Err(e) => {
                    writeln!(out, "\t<invalid: {e}>  // {pc:012X}: {:08X}", words[at])?;
                    at += 1;
                }
            }
        }
        i = j;
    }
    Ok(())
}

/// How a [`disasm`] listing compares with `llvm-objdump -d`'s of the same file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Differential {
    /// Instruction lines compared (llvm-objdump's, each `\t<text> // <address>: <words>`).
    pub instructions: u64,
    /// Lines that differ: (line number in llvm-objdump's listing, llvm-objdump's, ours).
    pub mismatches: Vec<(usize, String, String)>,
}

/// Compares [`disasm`] of `co` with `objdump`, the standard output of `llvm-objdump-19 -d
/// --mcpu=gfx942` on the same file, line by line after llvm-objdump's first two lines (a blank
/// line and the file name). Every line counts: headers, labels, instructions and their
/// comments, zero runs.
pub fn objdump_differential(co: &CodeObject, objdump: &str) -> Differential {
    let mut ours = Vec::new();
    // Writing to a Vec cannot fail.
    disasm(co, &mut ours).expect("a Vec takes everything");
    let ours = String::from_utf8_lossy(&ours);
    let theirs: Vec<&str> = objdump.lines().skip(2).collect();
    let mine: Vec<&str> = ours.lines().collect();
    let mut d = Differential::default();
    for i in 0..theirs.len().max(mine.len()) {
        let (t, m) = (theirs.get(i).copied().unwrap_or("<missing>"), mine.get(i).copied().unwrap_or("<missing>"));
        if t.starts_with('\t') && !t.starts_with("\t\t") {
            d.instructions += 1;
        }
        if t != m {
            d.mismatches.push((i + 3, t.to_string(), m.to_string()));
        }
    }
    d
}
