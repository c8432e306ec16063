//! Rotary position embedding, in f64 (see [`ops::rope`](crate::ops::rope)).

use crate::ops::rope::RopeLayout;

/// Geometry of a RoPE input `[batch][seq][heads][head_dim]`.
#[derive(Clone, Copy, Debug)]
pub struct RopeShape {
    /// Sequences.
    pub batch: usize,
    /// Tokens per sequence.
    pub seq: usize,
    /// Heads per token.
    pub heads: usize,
    /// Elements per head vector.
    pub head_dim: usize,
    /// Rotated elements at the start of each head vector.
    pub rotary_dim: usize,
}

/// RoPE of the row-major `x` with per-sequence start `offsets` (`None`: 0) and `angle(pos, i)`
/// the rotation of pair `i` at position `pos` (for example `pos * theta^(-2i / rotary_dim)`),
/// returning `(cos, sin)`.
///
/// # Panics
/// If `x` does not hold the shape's elements, `rotary_dim` is odd or above `head_dim`, or
/// `offsets` is not `batch` long.
pub fn rope(x: &[f64], s: RopeShape, layout: RopeLayout, offsets: Option<&[i32]>, cos_sin: impl Fn(i64, usize) -> (f64, f64)) -> Vec<f64> {
    super::assert_holds("rope: x", x.len(), &[s.batch, s.seq, s.heads, s.head_dim]);
    // A rotary part wider than the head would rotate into the next head's elements.
    assert!(
        s.rotary_dim % 2 == 0 && s.rotary_dim <= s.head_dim,
        "rope: rotary_dim {} must be even and at most head_dim {}",
        s.rotary_dim,
        s.head_dim
    );
    assert!(offsets.is_none_or(|o| o.len() == s.batch), "rope: offsets are not [batch]");
    let half = s.rotary_dim / 2;
    let mut out = x.to_vec();
    for b in 0..s.batch {
        for t in 0..s.seq {
            let pos = offsets.map_or(0, |o| o[b] as i64) + t as i64;
            for h in 0..s.heads {
                let base = ((b * s.seq + t) * s.heads + h) * s.head_dim;
                for i in 0..half {
                    let (c, sn) = cos_sin(pos, i);
                    let (ia, ib) = match layout {
                        RopeLayout::HalfSplit => (base + i, base + i + half),
                        RopeLayout::Interleaved => (base + 2 * i, base + 2 * i + 1),
                    };
                    let (xa, xb) = (x[ia], x[ib]);
                    out[ia] = xa * c - xb * sn;
                    out[ib] = xb * c + xa * sn;
                }
            }
        }
    }
    out
}

/// `(cos, sin)` of `pos * f` in f64, for [`rope`] with computed angles.
pub fn angle(pos: i64, f: f64) -> (f64, f64) {
    let a = pos as f64 * f;
    (a.cos(), a.sin())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_pairs_by_position() {
        let s = RopeShape { batch: 1, seq: 2, heads: 1, head_dim: 2, rotary_dim: 2 };
        let y = rope(&[1.0, 0.0, 1.0, 0.0], s, RopeLayout::Interleaved, None, |p, _| angle(p, std::f64::consts::FRAC_PI_2));
        assert_eq!(y[0..2], [1.0, 0.0]);
        assert!((y[2]).abs() < 1e-15 && (y[3] - 1.0).abs() < 1e-15);
    }
}
