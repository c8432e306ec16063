//! Attention in f64 (see [`ops::attention`](crate::ops::attention)): the flash forward over
//! batched or packed variable-length sequences, and decode over a paged KV cache.
//!
//! Definitions (the device ops follow them):
//! - `out[i] = sum_j p_ij v_j` with `p_ij = exp(scale s_ij - M_i) / sum_j' exp(scale s_ij' - M_i)`
//!   over the keys `j` row `i` may attend, `s_ij = q_i . k_j`, `M_i` their maximum;
//! - `lse[i] = M_i + ln(sum_j exp(scale s_ij - M_i))` (natural log);
//! - a row without any allowed key has `out = 0` and `lse = -inf`;
//! - the allowed keys of row `i` of a sequence with `lq` query and `lk` key rows (see [`Mask`]):
//!   `j < key_len` and, with `off = lk - lq` (bottom-right alignment),
//!   `i + off - left <= j <= i + off + right` for the bounded sides (causal: `right = 0`).

/// Which keys each query row may attend (see the module notes).
#[derive(Clone, Debug, Default)]
pub struct Mask {
    /// Keys at most this far before the diagonal (`None`: unbounded).
    pub left: Option<usize>,
    /// Keys at most this far after the diagonal (`None`: unbounded; causal is `Some(0)`).
    pub right: Option<usize>,
    /// Valid keys per sequence (key padding), `None` for all of them.
    pub key_lens: Option<Vec<usize>>,
}

impl Mask {
    /// Whether row `i` may attend key `j` in a sequence of `lq` queries over `lk` keys of which
    /// the first `key_len` are valid.
    pub fn allows(&self, i: usize, j: usize, lq: usize, lk: usize, key_len: usize) -> bool {
        let (j, diag) = (j as i64, i as i64 + lk as i64 - lq as i64);
        j < key_len as i64 && self.left.is_none_or(|l| j >= diag - l as i64) && self.right.is_none_or(|r| j <= diag + r as i64)
    }
}

/// The geometry of a batched attention: `q` is `[batch, seq_q, heads_q, head_dim]`, `k` and `v`
/// `[batch, seq_k, heads_kv, head_dim]`, all row-major.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Sequences.
    pub batch: usize,
    /// Query rows per sequence.
    pub seq_q: usize,
    /// Key rows per sequence.
    pub seq_k: usize,
    /// Query heads.
    pub heads_q: usize,
    /// Key/value heads (dividing `heads_q`; query head `h` reads key head `h / (heads_q / heads_kv)`).
    pub heads_kv: usize,
    /// Values per head.
    pub head_dim: usize,
}

/// One sequence of one head: `q` rows (`lq` of them, `qs` apart), `k`/`v` rows (`lk`, `ks` apart),
/// each `d` values; returns (`out` rows, `lse` per row).
#[allow(clippy::too_many_arguments)]
fn sequence(
    q: &[f64],
    qs: usize,
    lq: usize,
    k: &[f64],
    v: &[f64],
    ks: usize,
    lk: usize,
    d: usize,
    scale: f64,
    mask: &Mask,
    key_len: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut out = vec![0.0; lq * d];
    let mut lse = vec![f64::NEG_INFINITY; lq];
    for i in 0..lq {
        let qi = &q[i * qs..i * qs + d];
        let s: Vec<(usize, f64)> = (0..lk)
            .filter(|&j| mask.allows(i, j, lq, lk, key_len))
            .map(|j| (j, scale * qi.iter().zip(&k[j * ks..j * ks + d]).map(|(a, b)| a * b).sum::<f64>()))
            .collect();
        if s.is_empty() {
            continue;
        }
        let m = s.iter().fold(f64::NEG_INFINITY, |m, &(_, x)| if x.is_nan() || m.is_nan() { f64::NAN } else { m.max(x) });
        let sum: f64 = s.iter().map(|&(_, x)| (x - m).exp()).sum();
        for &(j, x) in &s {
            let p = (x - m).exp() / sum;
            for (o, vj) in out[i * d..(i + 1) * d].iter_mut().zip(&v[j * ks..j * ks + d]) {
                *o += p * vj;
            }
        }
        lse[i] = m + sum.ln();
    }
    (out, lse)
}

/// Batched attention (see the module notes): `out` `[batch, seq_q, heads_q, head_dim]` and
/// `lse` `[batch, heads_q, seq_q]`.
///
/// # Panics
/// If the slices do not hold `shape`, `heads_kv` does not divide `heads_q`, or `mask.key_lens`
/// is not one length per sequence.
pub fn flash(q: &[f64], k: &[f64], v: &[f64], shape: Shape, scale: f64, mask: &Mask) -> (Vec<f64>, Vec<f64>) {
    let Shape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = shape;
    super::assert_holds("attention::flash: q", q.len(), &[batch, seq_q, heads_q, d]);
    super::assert_holds("attention::flash: k", k.len(), &[batch, seq_k, heads_kv, d]);
    super::assert_holds("attention::flash: v", v.len(), &[batch, seq_k, heads_kv, d]);
    let cu_q: Vec<usize> = (0..=batch).map(|b| b * seq_q).collect();
    let cu_k: Vec<usize> = (0..=batch).map(|b| b * seq_k).collect();
    let (out, lse) = flash_varlen(q, k, v, &cu_q, &cu_k, heads_q, heads_kv, d, scale, mask);
    // Packed LSE is [heads, total]; batched is [batch, heads, seq_q].
    let mut l = vec![0.0; batch * heads_q * seq_q];
    for b in 0..batch {
        for h in 0..heads_q {
            for i in 0..seq_q {
                l[(b * heads_q + h) * seq_q + i] = lse[h * batch * seq_q + b * seq_q + i];
            }
        }
    }
    (out, l)
}

/// Packed variable-length attention: sequence `b` is query rows `cu_q[b] .. cu_q[b + 1]` of `q`
/// (`[total_q, heads_q, d]`) and key rows `cu_k[b] .. cu_k[b + 1]` of `k` and `v`
/// (`[total_k, heads_kv, d]`). Returns `out` `[total_q, heads_q, d]` (rows outside every
/// sequence 0) and `lse` `[heads_q, total_q]` (-inf there).
///
/// # Panics
/// If the offsets are not increasing from within the tensors, the slices do not hold whole rows,
/// `heads_kv` does not divide `heads_q`, or `mask.key_lens` is not one length per sequence.
#[allow(clippy::too_many_arguments)]
pub fn flash_varlen(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    cu_q: &[usize],
    cu_k: &[usize],
    heads_q: usize,
    heads_kv: usize,
    d: usize,
    scale: f64,
    mask: &Mask,
) -> (Vec<f64>, Vec<f64>) {
    let (rq, rk) = (heads_q * d, heads_kv * d);
    assert!(rq > 0 && rk > 0 && heads_q % heads_kv == 0, "attention: heads {heads_q}/{heads_kv}, head dim {d}");
    assert!(q.len() % rq == 0 && k.len() % rk == 0 && v.len() == k.len(), "attention: q, k, v do not hold whole rows");
    assert!(cu_q.len() == cu_k.len() && !cu_q.is_empty(), "attention: offset tables of {} and {} entries", cu_q.len(), cu_k.len());
    let (tq, tk) = (q.len() / rq, k.len() / rk);
    for cu in [(cu_q, tq), (cu_k, tk)] {
        assert!(cu.0.windows(2).all(|w| w[0] <= w[1]) && *cu.0.last().unwrap() <= cu.1, "attention: offsets {:?} for {} rows", cu.0, cu.1);
    }
    let batch = cu_q.len() - 1;
    if let Some(kl) = &mask.key_lens {
        assert_eq!(kl.len(), batch, "attention: key lengths per sequence");
    }
    let group = heads_q / heads_kv;
    let mut out = vec![0.0; q.len()];
    let mut lse = vec![f64::NEG_INFINITY; heads_q * tq];
    for b in 0..batch {
        let (q0, lq, k0, lk) = (cu_q[b], cu_q[b + 1] - cu_q[b], cu_k[b], cu_k[b + 1] - cu_k[b]);
        let key_len = mask.key_lens.as_ref().map_or(lk, |kl| kl[b].min(lk));
        if lq == 0 {
            continue; // no query rows: nothing to write
        }
        for h in 0..heads_q {
            let kh = h / group;
            // An empty key sequence at the end starts past the last row: an empty slice.
            let (ks, vs) = (k.get(k0 * rk + kh * d..).unwrap_or(&[]), v.get(k0 * rk + kh * d..).unwrap_or(&[]));
            let (o, l) = sequence(&q[q0 * rq + h * d..], rq, lq, ks, vs, rk, lk, d, scale, mask, key_len);
            for i in 0..lq {
                out[(q0 + i) * rq + h * d..][..d].copy_from_slice(&o[i * d..(i + 1) * d]);
                lse[h * tq + q0 + i] = l[i];
            }
        }
    }
    (out, lse)
}

/// Decode over a paged cache: sequence `b`'s `rows` newest tokens (its last query rows, at
/// positions `context_lens[b] - rows ..`) attend the cache causally. `q` is
/// `[batch, rows, heads_q, d]`; the caches are `[pages, heads_kv, page_size, d]` and token `t` of
/// sequence `b` lives in slot `t % page_size` of page `block_table[b][t / page_size]`.
/// Returns `out` `[batch, rows, heads_q, d]` and `lse` `[batch, heads_q, rows]`.
///
/// # Panics
/// If a slice does not hold its shape, a sequence's pages do not cover its context, or an entry
/// is not a page of the cache.
#[allow(clippy::too_many_arguments)]
pub fn decode(
    q: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
    block_table: &[Vec<usize>],
    context_lens: &[usize],
    rows: usize,
    heads_q: usize,
    heads_kv: usize,
    page_size: usize,
    d: usize,
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let batch = context_lens.len();
    super::assert_holds("attention::decode: q", q.len(), &[batch, rows, heads_q, d]);
    assert_eq!(block_table.len(), batch, "attention::decode: one block table per sequence");
    let page = heads_kv * page_size * d;
    assert!(page > 0 && k_cache.len() % page == 0 && v_cache.len() == k_cache.len(), "attention::decode: caches of whole pages");
    let pages = k_cache.len() / page;
    // Gather each sequence's keys and values into rows and attend them causally.
    let mut out = vec![0.0; q.len()];
    let mut lse = vec![f64::NEG_INFINITY; batch * heads_q * rows];
    let mask = Mask { left: None, right: Some(0), key_lens: None };
    let group = heads_q / heads_kv;
    for b in 0..batch {
        let n = context_lens[b];
        assert!(
            n >= rows && block_table[b].len() * page_size >= n,
            "attention::decode: sequence {b}: {n} tokens, {} pages",
            block_table[b].len()
        );
        for h in 0..heads_q {
            let kh = h / group;
            let (mut ks, mut vs) = (Vec::with_capacity(n * d), Vec::with_capacity(n * d));
            for t in 0..n {
                let p = block_table[b][t / page_size];
                assert!(p < pages, "attention::decode: page {p} of {pages}");
                let at = p * page + (kh * page_size + t % page_size) * d;
                ks.extend_from_slice(&k_cache[at..at + d]);
                vs.extend_from_slice(&v_cache[at..at + d]);
            }
            let qrows: Vec<f64> = (0..rows).flat_map(|r| q[((b * rows + r) * heads_q + h) * d..][..d].to_vec()).collect();
            let (o, l) = sequence(&qrows, d, rows, &ks, &vs, d, n, d, scale, &mask, n);
            for r in 0..rows {
                out[((b * rows + r) * heads_q + h) * d..][..d].copy_from_slice(&o[r * d..(r + 1) * d]);
                lse[(b * heads_q + h) * rows + r] = l[r];
            }
        }
    }
    (out, lse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_is_copied_and_masks_follow_the_bottom_right_diagonal() {
        // One query, one key: the output is that key's value whatever the score.
        let (o, l) = flash(
            &[3.0, 1.0],
            &[2.0, 5.0],
            &[7.0, -1.0],
            Shape { batch: 1, seq_q: 1, seq_k: 1, heads_q: 1, heads_kv: 1, head_dim: 2 },
            0.5,
            &Mask::default(),
        );
        assert_eq!(o, vec![7.0, -1.0]);
        assert!((l[0] - 0.5 * 11.0).abs() < 1e-12);
        // 2 queries over 4 keys, causal: row 0 sees keys 0..=2, row 1 all four.
        let m = Mask { right: Some(0), ..Default::default() };
        assert!(m.allows(0, 2, 2, 4, 4) && !m.allows(0, 3, 2, 4, 4) && m.allows(1, 3, 2, 4, 4));
        // More queries than keys: the first rows see nothing.
        assert!(!m.allows(0, 0, 4, 2, 2) && !m.allows(1, 0, 4, 2, 2) && m.allows(2, 0, 4, 2, 2));
        let w = Mask { left: Some(1), right: Some(0), key_lens: None };
        assert!(!w.allows(3, 1, 4, 4, 4) && w.allows(3, 2, 4, 4, 4));
    }

    #[test]
    fn rows_without_keys_are_zero_with_lse_minus_infinity() {
        let shape = Shape { batch: 1, seq_q: 2, seq_k: 1, heads_q: 1, heads_kv: 1, head_dim: 1 };
        let (o, l) = flash(&[1.0, 1.0], &[1.0], &[4.0], shape, 1.0, &Mask { right: Some(0), ..Default::default() });
        assert_eq!(o, vec![0.0, 4.0]);
        assert_eq!(l[0], f64::NEG_INFINITY);
        let (o, l) = flash(&[1.0, 1.0], &[1.0], &[4.0], shape, 1.0, &Mask { key_lens: Some(vec![0]), ..Default::default() });
        assert_eq!(o, vec![0.0, 0.0]);
        assert!(l.iter().all(|&x| x == f64::NEG_INFINITY));
    }

    #[test]
    fn decode_matches_the_last_row_of_causal_attention() {
        // 3 tokens in pages of 2: token t in page [1, 0][t / 2], slot t % 2.
        let (d, page_size) = (2, 2);
        let keys = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]];
        let vals = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let mut kc = vec![0.0; 2 * page_size * d];
        let mut vc = kc.clone();
        let table = vec![vec![1, 0]];
        for t in 0..3 {
            let at = table[0][t / page_size] * page_size * d + (t % page_size) * d;
            kc[at..at + d].copy_from_slice(&keys[t]);
            vc[at..at + d].copy_from_slice(&vals[t]);
        }
        let q = [0.5, -0.25];
        let (o, _) = decode(&q, &kc, &vc, &table, &[3], 1, 1, 1, page_size, d, 1.0);
        let shape = Shape { batch: 1, seq_q: 1, seq_k: 3, heads_q: 1, heads_kv: 1, head_dim: d };
        let (want, _) = flash(&q, keys.as_flattened(), vals.as_flattened(), shape, 1.0, &Mask { right: Some(0), ..Default::default() });
        assert!(o.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12), "{o:?} vs {want:?}");
    }
}
