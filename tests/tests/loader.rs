//! The code-object loader refuses corrupt, truncated and foreign input with the matching typed
//! error, and never panics.

use ferrocm::codeobj::{CodeObject, Elf};
use ferrocm::{CodeObjectError, Device, Error};
use ferrocm_tests::gfx942_code_object;

fn object() -> Vec<u8> {
    gfx942_code_object().to_vec()
}

#[test]
fn truncated_files_are_truncation_errors() {
    let co = object();
    for len in [0, 10, 16, 63, 64, 200, co.len() / 2, co.len() - 1] {
        let r = CodeObject::parse(&co[..len]);
        match r {
            Err(CodeObjectError::Truncated { .. }) => {}
            other => panic!("prefix of {len} bytes: expected Truncated, got {other:?}"),
        }
    }
}

#[test]
fn no_prefix_or_bit_flip_panics() {
    let co = object();
    for len in (0..co.len()).step_by(97) {
        let _ = CodeObject::parse(&co[..len]);
    }
    // Flip every byte of the headers and the first section table entries, one at a time.
    for i in (0..co.len().min(4096)).step_by(3) {
        let mut bad = co.clone();
        bad[i] ^= 0xA5;
        let _ = CodeObject::parse(&bad);
    }
}

#[test]
fn a_non_elf_file_is_refused() {
    assert_eq!(CodeObject::parse(b"\x7fELG not an elf at all").unwrap_err(), CodeObjectError::NotElf);
    let mut co = object();
    co[4] = 1; // ELFCLASS32
    assert_eq!(CodeObject::parse(&co).unwrap_err(), CodeObjectError::NotElf64 { class: 1 });
}

#[test]
fn the_wrong_machine_is_refused() {
    let mut co = object();
    co[18..20].copy_from_slice(&0x3Eu16.to_le_bytes()); // EM_X86_64
    assert_eq!(CodeObject::parse(&co).unwrap_err(), CodeObjectError::WrongMachine { machine: 0x3E });
    let mut co = object();
    co[7] = 0; // System V instead of AMDGPU HSA
    assert_eq!(CodeObject::parse(&co).unwrap_err(), CodeObjectError::WrongOsAbi { os_abi: 0 });
}

#[test]
fn the_wrong_architecture_is_refused() {
    let mut co = object();
    co[48] = 0x3F; // e_flags mach = gfx90a
    let parsed = CodeObject::parse(&co).unwrap();
    assert_eq!(parsed.arch, "gfx90a");
    assert_eq!(
        CodeObject::parse_for(&co, "gfx942").unwrap_err(),
        CodeObjectError::WrongArch { expected: "gfx942".into(), found: "gfx90a".into() }
    );
    co[48] = 0x01; // not a gfx9+ id this project knows
    assert_eq!(CodeObject::parse(&co).unwrap_err(), CodeObjectError::UnknownArch { mach: 0x01 });
}

/// Byte range of the metadata note's payload.
fn metadata_range(co: &[u8]) -> std::ops::Range<usize> {
    let elf = Elf::parse(co).unwrap();
    let note = elf.sections.iter().find(|s| s.kind == 7).expect("a note section");
    // Header (12 bytes) + "AMDGPU\0" padded to 8.
    let start = note.offset as usize + 12 + 8;
    let descsz = u32::from_le_bytes(co[note.offset as usize + 4..note.offset as usize + 8].try_into().unwrap());
    start..start + descsz as usize
}

#[test]
fn garbage_metadata_is_a_metadata_error() {
    let mut co = object();
    let r = metadata_range(&co);
    for b in &mut co[r.clone()] {
        *b = 0xC1; // a reserved msgpack tag
    }
    assert!(matches!(CodeObject::parse(&co).unwrap_err(), CodeObjectError::BadMetadata(_)));
    // A valid msgpack value that is not the metadata map.
    let mut co = object();
    co[r.start] = 0x90; // empty array
    assert!(matches!(CodeObject::parse(&co).unwrap_err(), CodeObjectError::BadMetadata(_)));
}

#[test]
fn host_errors_wrap_code_object_errors() {
    let e: Error = CodeObjectError::NotElf.into();
    assert!(matches!(e, Error::CodeObject(CodeObjectError::NotElf)));
    // The device's own object is the one the loader accepts.
    let dev = Device::emulator().unwrap();
    assert_eq!(dev.code_object().arch, "gfx942");
}
