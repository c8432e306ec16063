//! Encodings that are not gfx942 instructions give a DecodeError that names the format, the
//! opcode and the words; nothing is guessed.

use ferrocm_emu::isa::{DecodeError, decode, decode_range};

fn err(words: &[u32]) -> DecodeError {
    match decode(words, 0x1000) {
        Ok(i) => panic!("{words:08x?} decoded as {}", i.text()),
        Err(e) => e,
    }
}

#[test]
fn unknown_opcodes_name_format_opcode_and_words() {
    // SOP1 opcode 0x2f does not exist on gfx942.
    let e = err(&[0xBE94_2F0C]);
    assert_eq!((e.format, e.opcode, e.pc), ("SOP1", 0x2F, 0x1000));
    let text = e.to_string();
    assert!(text.contains("SOP1") && text.contains("0x2f") && text.contains("be942f0c") && text.contains("0x1000"), "{text}");
    // VOP3 opcode 0x3ff is in the VOP3P range only when bits 31:23 say so; 0x20f is unused.
    let e = err(&[0xD20F_0000, 0]);
    assert_eq!((e.format, e.opcode), ("VOP3", 0x20F));
    // DS opcode 0xff exists (ds_read_b128), 0xc0 does not.
    let e = err(&[0xD980_0000, 0]);
    assert_eq!((e.format, e.opcode), ("DS", 0xC0));
    // MUBUF opcode 0x7f is unused.
    let e = err(&[0xE1FC_0000, 0]);
    assert_eq!((e.format, e.opcode), ("MUBUF", 0x7F));
}

#[test]
fn unsupported_formats_and_reserved_values_are_errors() {
    // MTBUF (tbuffer_load_format_x) is outside the decoder's scope: an error, not a guess.
    let e = err(&[0xE800_0000, 0]);
    assert_eq!(e.format, "MTBUF");
    // FLAT segment 3 is reserved.
    let e = err(&[0xDC50_C000, 0x007F_0000]);
    assert_eq!(e.format, "FLAT");
    // SDWA with the reserved dst_unused value 3.
    let e = err(&[0x0240_20F9, 0x0606_1E08]);
    assert_eq!(e.format, "VOP2_SDWA");
    // A VOP3 source with the reserved operand code 249.
    let e = err(&[0xD101_0020, 0x0002_20F9]);
    assert_eq!((e.format, e.opcode), ("VOP3", 0x101));
    // s_barrier takes no immediate.
    let e = err(&[0xBF8A_0001]);
    assert_eq!((e.format, e.opcode), ("SOPP", 0xA));
    // A misaligned SGPR pair (s_mov_b64 s[1:2], ...).
    let e = err(&[0xBE81_0100]);
    assert_eq!((e.format, e.opcode), ("SOP1", 0x1));
}

#[test]
fn missing_dwords_are_errors() {
    // A literal, a second dword of a 64-bit format, an SDWA word: each may be missing.
    for words in [&[0xBE80_00FF][..], &[0xD101_0000], &[0x0240_20F9], &[0xC002_0140]] {
        let e = err(words);
        assert!(e.reason.contains("missing"), "{e}");
    }
    assert!(decode(&[], 0).is_err());
    let e = decode_range(&[0x00, 0x00, 0x80, 0xBF, 0x01], 0).unwrap_err();
    assert_eq!(e.pc, 4);
}
