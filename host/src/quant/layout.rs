//! GGML blocks to ferrocm's device layout and back, on the host (the layout itself is the
//! contract in [`abi::quant`](crate::abi::quant): tiles of 16 rows, chunks of 256 weights, planes
//! of codes, scales and headers cut into 16-byte slices).
//!
//! A chunk of one row is decoded into its fields (every weight's 4-bit or 8-bit code and its
//! high bits, the per-group scale bytes, the per-chunk header), and the fields are placed at
//! their layout positions; the way back gathers them and re-encodes GGML blocks. Both
//! directions are written per format from GGML's block definitions (see
//! [`QuantFormat`](super::QuantFormat)) and checked against each other and, through the device's
//! dequantization, against the f64 reference.

use super::QuantFormat;
use ferrocm_device::abi::quant::{
    self as abi, CHUNK, CHUNK_GROUPS, GROUP, PART_CODES, PARTS, Plane, TILE_ROWS, element, hi1_shift, hi2_shift, nibble_shift,
};

/// The fields of one row's chunk (up to 8 groups).
struct Fields {
    /// Per weight: the low 4 bits (nibble formats) or the whole byte (`Q8_0`, GGML's i8 bits).
    codes: [u8; CHUNK],
    /// Per weight: the bits above the nibble (`Q5_*`: 1 bit, `Q6_K`: 2 bits).
    hi: [u8; CHUNK],
    /// Per group: the row-plane bytes (group `G` at `G * width`).
    rows: [u8; 32],
    /// The chunk-plane bytes.
    header: [u8; 16],
}

impl Fields {
    fn new() -> Fields {
        Fields { codes: [0; CHUNK], hi: [0; CHUNK], rows: [0; 32], header: [0; 16] }
    }
}

fn code(f: QuantFormat) -> u32 {
    f.abi_code()
}

/// Decodes the GGML bytes of one row's chunk (`nb` groups: `nb` 32-weight blocks or one
/// super-block).
fn decode(f: QuantFormat, src: &[u8], nb: usize) -> Fields {
    let mut x = Fields::new();
    let nib = |qs: &[u8], e: usize| if e < 16 { qs[e] & 0x0F } else { qs[e - 16] >> 4 };
    match f {
        QuantFormat::Q4_0 | QuantFormat::Q4_1 | QuantFormat::Q5_0 | QuantFormat::Q5_1 | QuantFormat::Q8_0 => {
            let bb = f.block_bytes();
            for g in 0..nb {
                let b = &src[g * bb..(g + 1) * bb];
                let (scale_bytes, qh, qs): (usize, Option<u32>, &[u8]) = match f {
                    QuantFormat::Q4_0 => (2, None, &b[2..]),
                    QuantFormat::Q4_1 => (4, None, &b[4..]),
                    QuantFormat::Q5_0 => (2, Some(u32::from_le_bytes(b[2..6].try_into().unwrap())), &b[6..]),
                    QuantFormat::Q5_1 => (4, Some(u32::from_le_bytes(b[4..8].try_into().unwrap())), &b[8..]),
                    _ => (2, None, &b[2..]),
                };
                x.rows[g * scale_bytes..(g + 1) * scale_bytes].copy_from_slice(&b[..scale_bytes]);
                for e in 0..GROUP {
                    x.codes[g * GROUP + e] = if f == QuantFormat::Q8_0 { qs[e] } else { nib(qs, e) };
                    if let Some(qh) = qh {
                        x.hi[g * GROUP + e] = ((qh >> e) & 1) as u8;
                    }
                }
            }
        }
        QuantFormat::Q4K | QuantFormat::Q5K => {
            x.header.copy_from_slice(&src[..16]);
            let (qh, qs) = if f == QuantFormat::Q5K { (Some(&src[16..48]), &src[48..176]) } else { (None, &src[16..144]) };
            for e in 0..CHUNK {
                let s = e / GROUP;
                let byte = qs[32 * (s / 2) + e % 32];
                x.codes[e] = if s % 2 == 0 { byte & 0x0F } else { byte >> 4 };
                if let Some(qh) = qh {
                    x.hi[e] = (qh[e % 32] >> s) & 1;
                }
            }
        }
        QuantFormat::Q6K => {
            let (ql, qh) = (&src[..128], &src[128..192]);
            x.rows[..16].copy_from_slice(&src[192..208]);
            x.header[..2].copy_from_slice(&src[208..210]);
            for e in 0..CHUNK {
                let (h, j, l) = (e / 128, (e % 128) / 32, e % 32);
                x.codes[e] = (ql[64 * h + 32 * (j % 2) + l] >> (4 * (j / 2))) & 0x0F;
                x.hi[e] = (qh[32 * h + l] >> (2 * j)) & 0x03;
            }
        }
    }
    x
}

/// Encodes the fields of one row's chunk as GGML bytes into `dst`.
fn encode(f: QuantFormat, x: &Fields, nb: usize, dst: &mut [u8]) {
    match f {
        QuantFormat::Q4_0 | QuantFormat::Q4_1 | QuantFormat::Q5_0 | QuantFormat::Q5_1 | QuantFormat::Q8_0 => {
            let bb = f.block_bytes();
            for g in 0..nb {
                let b = &mut dst[g * bb..(g + 1) * bb];
                let (scale_bytes, qh_at, qs_at) = match f {
                    QuantFormat::Q4_0 => (2, None, 2),
                    QuantFormat::Q4_1 => (4, None, 4),
                    QuantFormat::Q5_0 => (2, Some(2), 6),
                    QuantFormat::Q5_1 => (4, Some(4), 8),
                    _ => (2, None, 2),
                };
                b[..scale_bytes].copy_from_slice(&x.rows[g * scale_bytes..(g + 1) * scale_bytes]);
                let c = &x.codes[g * GROUP..(g + 1) * GROUP];
                if f == QuantFormat::Q8_0 {
                    b[qs_at..qs_at + 32].copy_from_slice(c);
                } else {
                    for e in 0..16 {
                        b[qs_at + e] = (c[e] & 0x0F) | (c[e + 16] << 4);
                    }
                }
                if let Some(at) = qh_at {
                    let qh = (0..GROUP).fold(0u32, |acc, e| acc | ((x.hi[g * GROUP + e] as u32 & 1) << e));
                    b[at..at + 4].copy_from_slice(&qh.to_le_bytes());
                }
            }
        }
        QuantFormat::Q4K | QuantFormat::Q5K => {
            dst[..16].copy_from_slice(&x.header);
            let qs_at = if f == QuantFormat::Q5K { 48 } else { 16 };
            for j in 0..4 {
                for l in 0..32 {
                    dst[qs_at + 32 * j + l] = (x.codes[64 * j + l] & 0x0F) | (x.codes[64 * j + 32 + l] << 4);
                }
            }
            if f == QuantFormat::Q5K {
                for l in 0..32 {
                    dst[16 + l] = (0..8).fold(0u8, |acc, s| acc | ((x.hi[32 * s + l] & 1) << s));
                }
            }
        }
        QuantFormat::Q6K => {
            dst[..192].fill(0);
            for e in 0..CHUNK {
                let (h, j, l) = (e / 128, (e % 128) / 32, e % 32);
                dst[64 * h + 32 * (j % 2) + l] |= (x.codes[e] & 0x0F) << (4 * (j / 2));
                dst[128 + 32 * h + l] |= (x.hi[e] & 0x03) << (2 * j);
            }
            dst[192..208].copy_from_slice(&x.rows[..16]);
            dst[208..210].copy_from_slice(&x.header[..2]);
        }
    }
}

/// Where the bytes of group `g`, piece `idx` of plane `plane` start within a chunk of `nb`
/// groups, and how many bytes they are.
fn place(fc: u32, nb: usize, plane: usize, g: usize, idx: usize) -> (usize, usize) {
    let p = abi::planes(fc)[plane];
    match p {
        Plane::Part(b) | Plane::Row(b) => {
            let gps = p.groups_per_slice();
            let j = g / gps;
            (abi::slice_offset(fc, nb, plane, j) + idx * p.width(nb, j) + (g % gps) * b, b)
        }
        Plane::Chunk(b) => (abi::slice_offset(fc, nb, plane, 0) + idx * b, b),
    }
}

/// The bytes of part `part` of group `g` of a code plane of `b` bytes per part.
fn part_bytes(fc: u32, b: usize, x: &Fields, g: usize, part: usize) -> [u8; 8] {
    let code = |t: usize| GROUP * g + element(fc, part, t);
    let mut out = [0u8; 8];
    match b {
        4 => {
            let w = (0..PART_CODES).fold(0u32, |acc, t| acc | ((x.codes[code(t)] as u32 & 0x0F) << nibble_shift(t)));
            out[..4].copy_from_slice(&w.to_le_bytes());
        }
        1 => out[0] = (0..PART_CODES).fold(0u8, |acc, t| acc | ((x.hi[code(t)] & 1) << hi1_shift(t))),
        2 => {
            let w = (0..PART_CODES).fold(0u16, |acc, t| acc | ((x.hi[code(t)] as u16 & 3) << hi2_shift(t)));
            out[..2].copy_from_slice(&w.to_le_bytes());
        }
        _ => {
            for (t, o) in out.iter_mut().enumerate() {
                *o = x.codes[code(t)];
            }
        }
    }
    out
}

/// The inverse of [`part_bytes`]: writes the codes (or high bits) of part `part` of group `g`.
fn set_part_bytes(fc: u32, b: usize, x: &mut Fields, g: usize, part: usize, src: &[u8]) {
    let code = |t: usize| GROUP * g + element(fc, part, t);
    match b {
        4 => {
            let w = u32::from_le_bytes(src[..4].try_into().unwrap());
            for t in 0..PART_CODES {
                x.codes[code(t)] = ((w >> nibble_shift(t)) & 0x0F) as u8;
            }
        }
        1 => {
            for t in 0..PART_CODES {
                x.hi[code(t)] = (src[0] >> hi1_shift(t)) & 1;
            }
        }
        2 => {
            let w = u16::from_le_bytes(src[..2].try_into().unwrap());
            for t in 0..PART_CODES {
                x.hi[code(t)] = ((w >> hi2_shift(t)) & 3) as u8;
            }
        }
        _ => {
            for t in 0..PART_CODES {
                x.codes[code(t)] = src[t];
            }
        }
    }
}

/// Chunks per row and the groups of each: `(chunks, tail groups)`.
fn chunking(k: usize) -> (usize, usize) {
    ((k / GROUP).div_ceil(CHUNK_GROUPS), abi::tail_groups(k))
}

/// GGML bytes of the chunk `c` of a row (of `nb` groups).
fn ggml_chunk_range(f: QuantFormat, c: usize, nb: usize) -> std::ops::Range<usize> {
    if f.block_elems() == CHUNK {
        c * f.block_bytes()..(c + 1) * f.block_bytes()
    } else {
        let bb = f.block_bytes();
        c * CHUNK_GROUPS * bb..(c * CHUNK_GROUPS + nb) * bb
    }
}

/// The device layout of `n` rows of `k` weights given as GGML blocks (`ggml`, exactly
/// `n * row_bytes` long; the caller checked it). Padding rows are zero.
pub(crate) fn to_device(f: QuantFormat, n: usize, k: usize, ggml: &[u8]) -> Vec<u8> {
    let fc = code(f);
    let rb = f.block_bytes() * (k / f.block_elems());
    let tb = abi::tile_bytes(fc, k);
    let full = abi::chunk_bytes(fc, CHUNK_GROUPS);
    let (chunks, tail) = chunking(k);
    let planes = abi::planes(fc);
    let mut out = vec![0u8; abi::device_bytes(fc, n, k)];
    for row in 0..n {
        let (t, r) = (row / TILE_ROWS, row % TILE_ROWS);
        for c in 0..chunks {
            let nb = if c + 1 == chunks { tail } else { CHUNK_GROUPS };
            let src = &ggml[row * rb..(row + 1) * rb][ggml_chunk_range(f, c, nb)];
            let x = decode(f, src, nb);
            let base = t * tb + c * full;
            for (pi, &plane) in planes.iter().enumerate() {
                match plane {
                    Plane::Part(b) => {
                        for g in 0..nb {
                            for part in 0..PARTS {
                                let (at, len) = place(fc, nb, pi, g, TILE_ROWS * part + r);
                                out[base + at..base + at + len].copy_from_slice(&part_bytes(fc, b, &x, g, part)[..len]);
                            }
                        }
                    }
                    Plane::Row(b) => {
                        for g in 0..nb {
                            let (at, len) = place(fc, nb, pi, g, r);
                            out[base + at..base + at + len].copy_from_slice(&x.rows[g * b..(g + 1) * b]);
                        }
                    }
                    Plane::Chunk(b) => {
                        let (at, _) = place(fc, nb, pi, 0, r);
                        out[base + at..base + at + b].copy_from_slice(&x.header[..b]);
                    }
                }
            }
        }
    }
    out
}

/// GGML blocks of the `n` rows of `k` weights held in the device layout `dev` (the inverse of
/// [`to_device`]).
pub(crate) fn to_ggml(f: QuantFormat, n: usize, k: usize, dev: &[u8]) -> Vec<u8> {
    let fc = code(f);
    let rb = f.block_bytes() * (k / f.block_elems());
    let tb = abi::tile_bytes(fc, k);
    let full = abi::chunk_bytes(fc, CHUNK_GROUPS);
    let (chunks, tail) = chunking(k);
    let planes = abi::planes(fc);
    let mut out = vec![0u8; n * rb];
    for row in 0..n {
        let (t, r) = (row / TILE_ROWS, row % TILE_ROWS);
        for c in 0..chunks {
            let nb = if c + 1 == chunks { tail } else { CHUNK_GROUPS };
            let base = t * tb + c * full;
            let mut x = Fields::new();
            for (pi, &plane) in planes.iter().enumerate() {
                match plane {
                    Plane::Part(b) => {
                        for g in 0..nb {
                            for part in 0..PARTS {
                                let (at, len) = place(fc, nb, pi, g, TILE_ROWS * part + r);
                                set_part_bytes(fc, b, &mut x, g, part, &dev[base + at..base + at + len]);
                            }
                        }
                    }
                    Plane::Row(b) => {
                        for g in 0..nb {
                            let (at, len) = place(fc, nb, pi, g, r);
                            x.rows[g * b..(g + 1) * b].copy_from_slice(&dev[base + at..base + at + len]);
                        }
                    }
                    Plane::Chunk(b) => {
                        let (at, _) = place(fc, nb, pi, 0, r);
                        x.header[..b].copy_from_slice(&dev[base + at..base + at + b]);
                    }
                }
            }
            let dst = &mut out[row * rb..(row + 1) * rb][ggml_chunk_range(f, c, nb)];
            encode(f, &x, nb, dst);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic byte stream.
    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (s >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn the_layout_round_trips_every_format_and_ragged_shape() {
        for f in QuantFormat::ALL {
            let ks: &[usize] = if f.block_elems() == CHUNK { &[256, 768] } else { &[32, 96, 256, 576, 800] };
            for &k in ks {
                for n in [1, 15, 16, 17, 40] {
                    let ggml = bytes(n * f.row_bytes(k).unwrap(), (n * 1000 + k) as u64 + code(f) as u64);
                    let dev = to_device(f, n, k, &ggml);
                    assert_eq!(dev.len(), n.div_ceil(16) * 16 * f.row_bytes(k).unwrap(), "{f} {n}x{k}");
                    assert_eq!(to_ggml(f, n, k, &dev), ggml, "{f} {n}x{k}");
                }
            }
        }
    }

    #[test]
    fn chunks_hold_their_rows_bytes_and_tails_shrink() {
        use ferrocm_device::abi::quant::{PARTS, chunk_bytes, format, slice_offset, tail_groups, tile_bytes};
        // Q4_1, K = 576: 18 groups, two full chunks and a tail of 2.
        assert_eq!(tail_groups(576), 2);
        let f = format::Q4_1;
        assert_eq!(2 * chunk_bytes(f, 8) + chunk_bytes(f, 2), tile_bytes(f, 576));
        // Nibbles in two 16-byte slices of 64 pieces, scales in two of 16.
        assert_eq!((Plane::Part(4).slices(8), Plane::Row(4).slices(8)), (2, 2));
        assert_eq!(slice_offset(f, 8, 1, 1), 2 * 1024 + 256);
        assert_eq!(Plane::Part(4).width(2, 0), 8);
        // Code elements cover each group once.
        for fmt in 0..format::COUNT {
            let mut seen = [0u8; GROUP];
            for p in 0..PARTS {
                for t in 0..PART_CODES {
                    seen[element(fmt, p, t)] += 1;
                }
            }
            assert_eq!(seen, [1; GROUP]);
        }
    }

    #[test]
    fn nibbles_sit_where_the_contract_says() {
        // Q4_0, one row, one block: weight e has code e % 16 (low nibbles e, high e + 16).
        let mut block = vec![0u8; 18];
        for e in 0..16 {
            block[2 + e] = (e as u8) | (((e as u8) ^ 0xF) << 4);
        }
        let dev = to_device(QuantFormat::Q4_0, 1, 32, &block);
        // Part 1, row 0 is piece 16 of the nibble slice (one group: 4 bytes per piece).
        let w = u32::from_le_bytes(dev[16 * 4..16 * 4 + 4].try_into().unwrap());
        for t in 0..8 {
            let e = 8 + t; // part 1 holds weights 8..16
            assert_eq!((w >> nibble_shift(t)) & 0xF, e as u32, "code {t}");
        }
    }
}
