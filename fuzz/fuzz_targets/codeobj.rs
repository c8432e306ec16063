//! Any bytes: as a code object (parse, resources, `info`, `disasm`, load into an emulator and
//! scan each kernel for atomics as a launch does) and as an instruction stream (decode and
//! print every instruction). Nothing may panic, hang or allocate without bound: libFuzzer's
//! `-rss_limit_mb` and `-timeout` catch the last two.
#![no_main]

use ferrocm_emu::codeobj::CodeObject;
use ferrocm_emu::{EmuConfig, Emulator, isa, listing};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    instructions(data);
    let Ok(co) = CodeObject::parse(data) else { return };
    for k in &co.kernels {
        let r = k.resources();
        assert!(r.max_waves_per_simd <= 8);
    }
    listing::info(&co, &mut std::io::sink()).expect("a sink takes everything");
    listing::disasm(&co, &mut std::io::sink()).expect("a sink takes everything");
    let co = Arc::new(co);
    let emu = Emulator::new(EmuConfig { threads: 1, memory_limit: 512 << 20, ..EmuConfig::default() });
    let Ok(module) = emu.load(co.clone()) else { return };
    for k in &co.kernels {
        module.kernel_has_global_atomics(&k.meta.name);
    }
});

/// The bytes as dwords, decoded and printed one instruction after another.
fn instructions(data: &[u8]) {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut i = 0;
    while i < words.len() {
        match isa::decode(&words[i..], 4 * i as u64) {
            Ok(inst) => {
                let _ = inst.text();
                assert!(inst.size >= 4 && inst.size as usize <= 4 * (words.len() - i), "{inst:?} claims more words than it had");
                i += inst.size as usize / 4;
            }
            Err(e) => {
                let _ = e.to_string();
                i += 1;
            }
        }
    }
}
