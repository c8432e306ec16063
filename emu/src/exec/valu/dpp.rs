//! DPP (data-parallel primitives): `src0` read from another lane, per `dpp_ctrl`.
//!
//! A source lane is invalid when it is outside the row/wave the control allows or is disabled in
//! EXEC; the caller then reads 0 (bound_ctrl bit set) or skips the write.

use super::super::error::FaultKind;
use super::super::wave::{LANES, VReg};

/// The source lane of `lane` under `ctrl`, or None when invalid.
pub(crate) fn source_lane(ctrl: u16, lane: usize) -> Result<Option<usize>, FaultKind> {
    let row = lane / 16 * 16;
    let in_row = lane % 16;
    Ok(match ctrl {
        0x000..=0x0ff => {
            let q = lane % 4;
            Some(lane - q + ((ctrl as usize >> (2 * q)) & 3))
        }
        0x101..=0x10f => {
            let n = (ctrl & 0xf) as usize;
            (in_row + n < 16).then(|| lane + n)
        }
        0x111..=0x11f => {
            let n = (ctrl & 0xf) as usize;
            (in_row >= n).then(|| lane - n)
        }
        0x121..=0x12f => {
            let n = (ctrl & 0xf) as usize;
            Some(row + (in_row + 16 - n) % 16)
        }
        0x130 => (lane + 1 < LANES).then_some(lane + 1),
        0x134 => Some((lane + 1) % LANES),
        0x138 => (lane >= 1).then(|| lane - 1),
        0x13c => Some((lane + LANES - 1) % LANES),
        0x140 => Some(row + 15 - in_row),
        0x141 => Some(lane - lane % 8 + 7 - lane % 8),
        0x142 => (lane >= 16).then(|| row - 1),
        0x143 => (lane >= 32).then_some(31),
        // row_newbcast:n (gfx90a+; the encoding gfx10 calls row_share): every lane of a row
        // reads lane n of that row.
        0x150..=0x15f => Some(row + (ctrl & 0xf) as usize),
        _ => return Err(FaultKind::Invalid(format!("reserved dpp_ctrl {ctrl:#x}"))),
    })
}

/// `v` permuted by `ctrl`; the second value has a bit set for lanes whose source was valid.
pub(crate) fn permute(v: &VReg, ctrl: u16, exec: u64) -> Result<(VReg, u64), FaultKind> {
    let mut out = [0u32; LANES];
    let mut valid = 0u64;
    for l in 0..LANES {
        if let Some(s) = source_lane(ctrl, l)? {
            if exec >> s & 1 == 1 {
                out[l] = v[s];
                valid |= 1 << l;
            }
        }
    }
    Ok((out, valid))
}

/// Lanes enabled by a row mask (bit per 16-lane row) and bank mask (bit per 4-lane bank).
pub(crate) fn row_bank_mask(row_mask: u8, bank_mask: u8) -> u64 {
    let mut m = 0u64;
    for l in 0..LANES {
        if row_mask >> (l / 16) & 1 == 1 && bank_mask >> ((l / 4) % 4) & 1 == 1 {
            m |= 1 << l;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_rotates_and_broadcasts() {
        assert_eq!(source_lane(0x111, 17).unwrap(), Some(16)); // row_shr:1
        assert_eq!(source_lane(0x111, 16).unwrap(), None);
        assert_eq!(source_lane(0x101, 15).unwrap(), None); // row_shl:1 at the row end
        assert_eq!(source_lane(0x121, 16).unwrap(), Some(31)); // row_ror:1 wraps within the row
        assert_eq!(source_lane(0x1b, 1).unwrap(), Some(2)); // quad_perm:[3,2,1,0] -> lane 1 reads 2
        assert_eq!(source_lane(0x142, 20).unwrap(), Some(15)); // row_bcast:15
        assert_eq!(source_lane(0x143, 40).unwrap(), Some(31));
        assert_eq!(source_lane(0x140, 3).unwrap(), Some(12)); // row_mirror
        assert_eq!(source_lane(0x13c, 0).unwrap(), Some(63)); // wave_ror:1
        assert_eq!(source_lane(0x153, 37).unwrap(), Some(35)); // row_newbcast:3
    }

    #[test]
    fn masks_select_rows_and_banks() {
        assert_eq!(row_bank_mask(0xf, 0xf), u64::MAX);
        assert_eq!(row_bank_mask(0x1, 0x1), 0xf);
        assert_eq!(row_bank_mask(0xa, 0xf), 0xffff_0000_ffff_0000);
    }
}
