//! SDWA (sub-dword addressing): byte/word selects on sources and destination.
//!
//! Selects 0-3 are BYTE_0..BYTE_3, 4 WORD_0, 5 WORD_1, 6 DWORD. dst_unused: 0 pad with zeros,
//! 1 sign-extend the written field upward, 2 preserve the destination's other bits.

/// (shift, width) of a select.
fn field(sel: u8) -> (u32, u32) {
    match sel {
        0..=3 => (8 * sel as u32, 8),
        4 => (0, 16),
        5 => (16, 16),
        _ => (0, 32),
    }
}

/// Replaces every lane with its selected field, zero- or sign-extended.
pub(crate) fn select(v: &mut [u32; 64], sel: u8, sext: bool) {
    let (sh, w) = field(sel);
    if w == 32 {
        return;
    }
    for x in v.iter_mut() {
        let f = (*x >> sh) & ((1 << w) - 1);
        *x = if sext && f >> (w - 1) & 1 == 1 { f | !((1 << w) - 1) } else { f };
    }
}

/// The destination dword after writing `r` into the field `dst_sel` of `old`.
pub(crate) fn place(r: u32, old: u32, dst_sel: u8, dst_unused: u8) -> u32 {
    let (sh, w) = field(dst_sel);
    if w == 32 {
        return r;
    }
    let mask = ((1u32 << w) - 1) << sh;
    let f = (r << sh) & mask;
    match dst_unused {
        2 => (old & !mask) | f,
        1 => {
            let neg = r >> (w - 1) & 1 == 1;
            let above = if sh + w >= 32 { 0 } else { u32::MAX << (sh + w) };
            f | if neg { above } else { 0 }
        }
        _ => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_and_places_fields() {
        let mut v = [0x8180_7f01u32; 64];
        select(&mut v, 1, true); // byte 1 = 0x7f
        assert_eq!(v[0], 0x7f);
        let mut v = [0x8180_7f01u32; 64];
        select(&mut v, 5, true); // word 1 = 0x8180, negative
        assert_eq!(v[0], 0xffff_8180);
        assert_eq!(place(0x1234, 0xaaaa_bbbb, 5, 2), 0x1234_bbbb);
        assert_eq!(place(0x1234, 0xaaaa_bbbb, 5, 0), 0x1234_0000);
        assert_eq!(place(0x80, 0, 1, 1), 0xffff_8000);
    }
}
