//! Attention for the models, behind two functions (`causal` over a [`KvCache`], `padded`
//! with per-sequence key lengths) so that the kernels behind them can change in one place.
//!
//! f16 and bf16 activations with a head dimension the kernels take (32, 64, 96, 128, 256) run
//! `ferrocm::ops::attention::flash`: one launch, the scores never leave the chip, f32
//! statistics; grouped-query heads read their shared key/value head in place, and the cache is
//! read in place as a `[batch, positions, kv_heads, head_dim]` view. Other activations (f32) and
//! head dimensions are composed of ferrocm's ops: scores by GEMM (`alpha` = 1/sqrt(d), the mask
//! fused as the GEMM's residual), a row softmax, and the weighted sum of values by GEMM, all in
//! f32.

use crate::error::Result;
use ferrocm::ops::attention::{self as flash_attention, FlashOptions};
use ferrocm::ops::elementwise as ew;
use ferrocm::ops::gemm::{self, GemmOptions};
use ferrocm::ops::softmax;
use ferrocm::{DType, Device, Tensor};

/// The keys and values of every layer for a batch of sequences that advance together:
/// per layer `[capacity, batch, kv_heads, head_dim]` (position-major, so writing the next
/// positions of the whole batch is one contiguous copy).
///
/// Get one from [`Session`](crate::llama::Session) (which owns it).
#[derive(Debug)]
pub struct KvCache {
    k: Vec<Tensor>,
    v: Vec<Tensor>,
    capacity: usize,
    batch: usize,
}

impl KvCache {
    /// An empty cache of `capacity` positions for `batch` sequences.
    pub(crate) fn new(
        device: &Device,
        layers: usize,
        capacity: usize,
        batch: usize,
        kv_heads: usize,
        head_dim: usize,
        dtype: DType,
    ) -> Result<KvCache> {
        let shape = [capacity, batch, kv_heads, head_dim];
        let mut k = Vec::with_capacity(layers);
        let mut v = Vec::with_capacity(layers);
        for _ in 0..layers {
            // Unwritten positions are never read (causal and length limits), so `empty` is enough.
            k.push(Tensor::empty(device, &shape, dtype)?);
            v.push(Tensor::empty(device, &shape, dtype)?);
        }
        Ok(KvCache { k, v, capacity, batch })
    }

    /// Positions per sequence.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sequences.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Bytes held on the device.
    pub fn bytes(&self) -> usize {
        self.k.iter().chain(&self.v).map(|t| t.numel() * t.dtype().size()).sum()
    }

    /// Stores `k` and `v` (`[batch, tokens, kv_heads, head_dim]`, any views) at positions
    /// `pos..pos + tokens` of `layer`.
    pub(crate) fn write(&self, layer: usize, pos: usize, k: &Tensor, v: &Tensor) -> Result<()> {
        for (cache, new) in [(&self.k[layer], k), (&self.v[layer], v)] {
            let t = new.shape()[1];
            // [batch, tokens, ...] -> [tokens, batch, ...]: a view; contiguous (no copy) when
            // batch or tokens is 1, as in decoding.
            let src = new.transpose(0, 1)?.contiguous()?;
            cache.narrow(0, pos, t)?.copy_from(&src)?;
        }
        Ok(())
    }
}

/// The most negative finite value of `dtype`: masked scores, finite so that no `inf - inf`
/// can appear, and `exp` of it minus any score is 0.
fn mask_value(dtype: DType) -> f32 {
    match dtype {
        DType::F16 => -65504.0,
        _ => f32::MIN,
    }
}

/// Causal self-attention of `tokens` new queries per sequence at positions `pos..pos+tokens`
/// over the cached keys `0..pos+tokens` of `layer` (already written): `q` is
/// `[batch, tokens, heads, head_dim]` (any view), the result `[batch * tokens, heads * head_dim]`
/// in `q`'s dtype.
pub(crate) fn causal(q: &Tensor, cache: &KvCache, layer: usize, pos: usize) -> Result<Tensor> {
    let (b, t, h, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let s = pos + t;
    if flash_fits(q.dtype(), d) {
        // [capacity, B, KVH, D] -> [B, S, KVH, D]: a view the kernel reads in place. The t new
        // queries are the last t of the s positions: the causal diagonal aligned bottom right.
        let keys = cache.k[layer].narrow(0, 0, s)?.transpose(0, 1)?;
        let values = cache.v[layer].narrow(0, 0, s)?.transpose(0, 1)?;
        let o = flash_attention::flash(q, &keys, &values, &FlashOptions { causal: true, ..Default::default() })?;
        return Ok(o.reshape(&[b * t, h * d])?);
    }
    let kvh = cache.k[layer].shape()[2];
    let g = h / kvh;
    // [capacity, B, KVH, D] -> [B, KVH, S, D]: a view the GEMM reads in place (rows of D with a
    // stride of B*KVH*D; B and KVH collapse into one batch stride).
    let keys = cache.k[layer].narrow(0, 0, s)?.transpose(0, 1)?.transpose(1, 2)?;
    let values = cache.v[layer].narrow(0, 0, s)?.transpose(0, 1)?.transpose(1, 2)?;
    // Queries as [B, KVH, G*T, D]: the G query heads sharing a KV head are rows of one product.
    let qg = if t == 1 {
        q.squeeze(1)?.unflatten(1, &[kvh, g])?
    } else {
        q.unflatten(2, &[kvh, g])?.transpose(1, 2)?.transpose(2, 3)?.contiguous()?.reshape(&[b, kvh, g * t, d])?
    };
    // Row (g, i) is the query at position pos + i: it sees keys 0..=pos + i.
    let mask = if t > 1 {
        let mv = mask_value(DType::F32);
        let m: Vec<f32> = (0..g * t).flat_map(|r| (0..s).map(move |j| if j <= pos + r % t { 0.0 } else { mv })).collect();
        Some(Tensor::from_slice(q.device(), &m, &[g * t, s])?)
    } else {
        None
    };
    let o = weighted_values(&qg, &keys, &values, mask.as_ref(), q.dtype())?; // [B, KVH, G*T, D]
    let o = if t == 1 {
        o.reshape(&[b, h * d])?
    } else {
        o.reshape(&[b, kvh, g, t, d])?.transpose(2, 3)?.transpose(1, 2)?.contiguous()?.reshape(&[b * t, h * d])?
    };
    Ok(o)
}

/// Whether the flash kernels take `dtype` and head dimension `d`.
fn flash_fits(dtype: DType, d: usize) -> bool {
    matches!(dtype, DType::F16 | DType::Bf16) && ferrocm::abi::attention::HEAD_DIMS.iter().any(|&h| h as usize == d)
}

/// Bidirectional attention with key padding: `q`, `k`, `v` are `[batch, tokens, heads,
/// head_dim]` (any views); sequence `i` attends its first `lengths[i]` keys. Returns
/// `[batch * tokens, heads * head_dim]`.
pub(crate) fn padded(q: &Tensor, k: &Tensor, v: &Tensor, lengths: &[usize]) -> Result<Tensor> {
    let (b, t, h, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    if flash_fits(q.dtype(), d) {
        let o = flash_attention::flash(q, k, v, &FlashOptions { key_lengths: Some(lengths), ..Default::default() })?;
        return Ok(o.reshape(&[b * t, h * d])?);
    }
    // The mask added to the scores: 0 for real keys, most negative for padding.
    let mv = mask_value(DType::F32);
    let mask: Vec<f32> = lengths.iter().flat_map(|&len| (0..t).map(move |j| if j < len { 0.0 } else { mv })).collect();
    let mask = Tensor::from_slice(q.device(), &mask, &[b, 1, 1, t])?;
    let qh = q.transpose(1, 2)?; // [B, H, T, D]
    let kh = k.transpose(1, 2)?;
    let vh = v.transpose(1, 2)?;
    let o = weighted_values(&qh, &kh, &vh, Some(&mask), q.dtype())?; // [B, H, T, D]
    Ok(o.transpose(1, 2)?.contiguous()?.reshape(&[b * t, h * d])?)
}

/// `softmax(q k^T / sqrt(d) + mask) v` over the last two axes of `[..., rows, D]` queries and
/// `[..., keys, D]` keys and values; scores, probabilities and the value product in f32, four
/// launches (scores with the mask fused, softmax, values transposed to f32, their product).
fn weighted_values(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, out: DType) -> Result<Tensor> {
    let d = q.shape()[q.rank() - 1];
    let r = k.rank();
    let opts = GemmOptions { alpha: 1.0 / (d as f32).sqrt(), residual: mask, out_dtype: Some(DType::F32), ..Default::default() };
    let scores = gemm::gemm(q, &k.transpose(r - 2, r - 1)?, &opts)?;
    let p = softmax::softmax(&scores)?;
    // The value product in f32 too: the GEMM reads its second operand K-contiguous, which
    // values `[..., keys, D]` are not, so they are transposed into `[..., D, keys]` once anyway;
    // converting them to f32 in that same pass costs no launch and keeps the probabilities f32.
    let vt = ew::cast(&v.transpose(r - 2, r - 1)?, DType::F32)?;
    Ok(gemm::gemm(&p, &vt.transpose(r - 2, r - 1)?, &GemmOptions { out_dtype: Some(out), ..Default::default() })?)
}
