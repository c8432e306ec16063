//! RMSNorm and LayerNorm over rows, in f64 (see [`ops::norm`](crate::ops::norm)).

use crate::dtype::Element;

/// RMSNorm of each row of `len`: `x / sqrt(mean(x^2) + eps) * w` (`w` = 1 when absent).
///
/// # Panics
/// If `len` is 0 or does not divide `x.len()`, or `w` is not `len` long.
pub fn rms_norm(x: &[f64], len: usize, w: Option<&[f64]>, eps: f64) -> Vec<f64> {
    assert!(len > 0 && x.len() % len == 0, "rms_norm: rows of {len} do not tile {} elements", x.len());
    assert!(w.is_none_or(|w| w.len() == len), "rms_norm: weight is not [len]");
    x.chunks(len)
        .flat_map(|row| {
            let ms = row.iter().map(|v| v * v).sum::<f64>() / len as f64;
            let r = 1.0 / (ms + eps).sqrt();
            row.iter().enumerate().map(move |(j, &v)| v * r * w.map_or(1.0, |w| w[j])).collect::<Vec<_>>()
        })
        .collect()
}

/// LayerNorm of each row of `len`: `(x - mean) / sqrt(var + eps) * w + b`, biased variance
/// (`w` = 1, `b` = 0 when absent).
///
/// # Panics
/// If `len` is 0 or does not divide `x.len()`, or `w`/`b` are not `len` long.
pub fn layer_norm(x: &[f64], len: usize, w: Option<&[f64]>, b: Option<&[f64]>, eps: f64) -> Vec<f64> {
    assert!(len > 0 && x.len() % len == 0, "layer_norm: rows of {len} do not tile {} elements", x.len());
    assert!(w.is_none_or(|w| w.len() == len) && b.is_none_or(|b| b.len() == len), "layer_norm: weight/bias are not [len]");
    x.chunks(len)
        .flat_map(|row| {
            let mean = row.iter().sum::<f64>() / len as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64;
            let r = 1.0 / (var + eps).sqrt();
            row.iter()
                .enumerate()
                .map(move |(j, &v)| (v - mean) * r * w.map_or(1.0, |w| w[j]) + b.map_or(0.0, |b| b[j]))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `x + residual` rounded to `T` (the `h` of the fused residual-add norms).
///
/// # Panics
/// If the lengths differ.
pub fn add<T: Element>(x: &[T], residual: &[T]) -> Vec<T> {
    assert_eq!(x.len(), residual.len(), "add: lengths differ");
    x.iter().zip(residual).map(|(a, b)| T::from_f64(a.to_f64() + b.to_f64())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_rows() {
        let y = rms_norm(&[3.0, 4.0], 2, None, 0.0);
        let r = (12.5f64).sqrt();
        assert_eq!(y, vec![3.0 / r, 4.0 / r]);
        let y = layer_norm(&[1.0, 3.0], 2, Some(&[2.0, 2.0]), Some(&[1.0, 1.0]), 0.0);
        assert_eq!(y, vec![-1.0, 3.0]);
    }
}
