//! `ferrocm-emu disasm` against `llvm-objdump-19 -d --mcpu=gfx942` on AMD's hand-written gfx942
//! code objects (the AITER wheel): every line must agree (symbol headers, branch labels, operand
//! spelling, encodings, `<symbol+offset>` notes, zero runs). CI checks a fixed sample, the first
//! and last object of every directory of the wheel; `cargo xtask aiter disasm` checks all of
//! them.

#[path = "aiter/common.rs"]
mod common;

use std::collections::BTreeMap;
use std::process::Command;

#[test]
fn disasm_agrees_with_llvm_objdump_on_a_sample_of_every_family() {
    let Some(wheel) = common::wheel() else { return };
    let objects = wheel.gfx942_objects().unwrap();
    // The first and last object of each directory (objects are sorted).
    let mut by_dir: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for o in &objects {
        let dir = o.rsplit_once('/').map_or("", |(d, _)| d).to_string();
        by_dir.entry(dir).or_default().push(o);
    }
    let sample: Vec<&String> =
        by_dir.values().flat_map(|v| [v[0], v[v.len() - 1]]).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let (mut instructions, mut bad) = (0u64, Vec::new());
    for rel in &sample {
        let path = wheel.gfx942(rel);
        let out = Command::new("llvm-objdump-19")
            .args(["-d", "--mcpu=gfx942"])
            .arg(&path)
            .output()
            .expect("llvm-objdump-19 (apt-get install llvm-19)");
        assert!(out.status.success(), "llvm-objdump-19 failed on {rel}");
        let co = wheel.code_object(rel).unwrap();
        let d = ferrocm_emu::listing::objdump_differential(&co, &String::from_utf8_lossy(&out.stdout));
        instructions += d.instructions;
        if let Some((line, theirs, ours)) = d.mismatches.first() {
            bad.push(format!("{rel}:{line} ({} lines differ)\n  llvm-objdump: {theirs}\n  ferrocm-emu:  {ours}", d.mismatches.len()));
        }
    }
    eprintln!(
        "disasm differential: {} of {} gfx942 code objects ({} directories), {instructions} instructions, {} mismatching objects",
        sample.len(),
        objects.len(),
        by_dir.len(),
        bad.len()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
