//! Encoding round trip: every sample line (tests/fixtures/samples.s, written by
//! emu/tools/gen_isa.py: each opcode of each encoding with register, constant, literal,
//! modifier, SDWA, DPP and offset variants) is assembled by llvm-mc-19; we decode its bytes,
//! print them, and must get llvm-mc's canonical text back.

mod common;

use std::collections::BTreeSet;

use common::*;
use ferrocm_emu::isa::{Ext, Op, decode};

fn samples() -> Vec<String> {
    std::fs::read_to_string(fixture("samples.s"))
        .expect("read tests/fixtures/samples.s")
        .lines()
        .filter(|l| !l.starts_with("//") && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_sample_round_trips_through_llvm_mc() {
    require_tools();
    let lines = samples();
    let (asm, rejected) = assemble(&lines);
    let mut failures = Vec::new();
    // (words, llvm-mc text, our text) where the two differ: settled by llvm-objdump below.
    let mut spelled = Vec::new();
    let mut ops = BTreeSet::new();
    // (op, encoding, extension) triples seen: one per form of the generated tables.
    let mut forms = BTreeSet::new();
    for a in &asm {
        match decode(&a.words, 0) {
            Ok(inst) => {
                ops.insert(inst.op);
                let ext = match inst.ext {
                    Ext::None => 0,
                    Ext::Sdwa(_) => 1,
                    Ext::Dpp(_) => 2,
                };
                forms.insert((inst.op, format!("{:?}", inst.enc), ext));
                let _ = inst.widths();
                if inst.size as usize != 4 * a.words.len() {
                    failures.push(format!("{}: decoded {} bytes, llvm-mc emitted {}", a.text, inst.size, 4 * a.words.len()));
                } else if norm(&inst.text()) != norm(&a.text) {
                    spelled.push((a.words.clone(), a.text.clone(), inst.text()));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", a.text)),
        }
    }
    // The assembler prints the operands it parsed, which for a few constants differs from what
    // the disassembler prints for the same bytes (a 16-bit integer operand written as 1.0 is
    // the bit pattern 0x3c00 to the disassembler). The disassembler is the reference: where
    // llvm-mc's echo and our text differ, our text must equal llvm-objdump's.
    let probes: Vec<Vec<u32>> = spelled.iter().map(|(w, _, _)| w.clone()).collect();
    let dis = disassemble(&probes);
    let mut respelled = 0;
    for ((words, mc, ours), d) in spelled.iter().zip(dis) {
        match d {
            Some((t, _)) if norm(&t) == norm(ours) => respelled += 1,
            other => failures.push(format!(
                "{words:08x?}\n   llvm-mc:      {mc}\n   llvm-objdump: {}\n   ours:         {ours}",
                other.map(|o| o.0).unwrap_or_else(|| "<rejected>".into())
            )),
        }
    }
    assert!(failures.is_empty(), "{} of {} samples differ:\n{}", failures.len(), asm.len(), failures[..failures.len().min(40)].join("\n"));
    // The disassembler prints a few encodings the assembler refuses to read back (16-bit
    // operands with 32-bit literals); they are covered by the disassembly comparison test.
    assert!(
        rejected.len() * 20 < lines.len(),
        "llvm-mc rejected {} of {} samples, e.g. {:?}",
        rejected.len(),
        lines.len(),
        &rejected[..rejected.len().min(5)]
    );
    let missing: Vec<_> = Op::all().iter().filter(|o| !ops.contains(o)).collect();
    assert!(missing.is_empty(), "ops without a round-tripped sample: {missing:?}");
    // Every encoding of every op: as many as the generated tables have forms, except the
    // VOP3 forms of v_nop and v_clrexcp, which print exactly like their VOP1 forms so that
    // text cannot select them (the differential test decodes them).
    let tables = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/isa/tables.rs")).unwrap();
    let nforms = tables.lines().filter(|l| l.trim_start().starts_with("Form {")).count();
    assert_eq!(forms.len() + 2, nforms, "some encodings of some ops have no round-tripped sample");
    eprintln!(
        "{} samples round-tripped ({} matched llvm-objdump's spelling rather than llvm-mc's), \
               {} ops covered, {} lines rejected by llvm-mc",
        asm.len(),
        respelled,
        ops.len(),
        rejected.len()
    );
}
