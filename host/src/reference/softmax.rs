//! Softmax and log-softmax over rows, in f64 (see [`ops::softmax`](crate::ops::softmax)).

/// Softmax of each row of `len` elements of `x`: `exp(x - m) / sum(exp(x - m))`, `m` the row's
/// maximum (NaN if the row has a NaN; so rows with NaN, +inf or only -inf come out NaN).
///
/// # Panics
/// If `len` is 0 or does not divide `x.len()`.
pub fn softmax(x: &[f64], len: usize) -> Vec<f64> {
    rows(x, len, false)
}

/// Log-softmax of each row: `(x - m) - log(sum(exp(x - m)))`.
///
/// # Panics
/// If `len` is 0 or does not divide `x.len()`.
pub fn log_softmax(x: &[f64], len: usize) -> Vec<f64> {
    rows(x, len, true)
}

fn rows(x: &[f64], len: usize, log: bool) -> Vec<f64> {
    assert!(len > 0 && x.len() % len == 0, "softmax: rows of {len} do not tile {} elements", x.len());
    x.chunks(len)
        .flat_map(|row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| if v.is_nan() || m.is_nan() { f64::NAN } else { m.max(v) });
            let s: f64 = row.iter().map(|&v| (v - m).exp()).sum();
            row.iter().map(move |&v| if log { (v - m) - s.ln() } else { (v - m).exp() / s }).collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_special_values() {
        let p = softmax(&[1000.0, 1000.0], 2);
        assert_eq!(p, vec![0.5, 0.5]);
        assert!(softmax(&[f64::INFINITY, 1.0], 2).iter().all(|v| v.is_nan()));
        assert!(softmax(&[f64::NEG_INFINITY; 3], 3).iter().all(|v| v.is_nan()));
        assert_eq!(softmax(&[f64::NEG_INFINITY, 0.0], 2), vec![0.0, 1.0]);
        let l = log_softmax(&[0.0, 0.0], 2);
        assert!((l[0] + 2f64.ln()).abs() < 1e-15);
    }
}
