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
use ferrocm::ops::attention::{self as attn, BlockTable, DecodeOptions, FlashOptions, PageAllocator, PagedKvCache, RopeKv};
use ferrocm::ops::elementwise as ew;
use ferrocm::ops::gemm::{self, GemmOptions};
use ferrocm::ops::qmatmul::RmsNorm;
use ferrocm::ops::softmax;
use ferrocm::quant::QuantTensor;
use ferrocm::{DType, Device, Tensor};

/// The keys and values of every layer for a batch of sequences that advance together.
///
/// With f16/bf16 and a head dimension the attention kernels take, a paged cache
/// (`ferrocm::ops::attention::PagedKvCache`, pages of [`PAGE_SIZE`] tokens, each sequence's
/// pages allocated for the whole capacity up front) that decode attention reads in place;
/// otherwise per layer a `[capacity, batch, kv_heads, head_dim]` tensor (position-major, so
/// writing the next positions of the whole batch is one contiguous copy).
///
/// Get one from [`Session`](crate::llama::Session) (which owns it).
pub struct KvCache {
    store: Store,
    capacity: usize,
    batch: usize,
}

enum Store {
    Paged { cache: PagedKvCache, pages: Vec<Vec<u32>> },
    Dense { k: Vec<Tensor>, v: Vec<Tensor> },
}

impl std::fmt::Debug for KvCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.store {
            Store::Paged { .. } => "paged",
            Store::Dense { .. } => "dense",
        };
        f.debug_struct("KvCache").field("kind", &kind).field("capacity", &self.capacity).field("batch", &self.batch).finish()
    }
}

/// Tokens per page of the paged cache.
pub const PAGE_SIZE: usize = 16;

/// Where one step's new keys go and what its queries attend: built once per step by
/// [`KvCache::step`], used by every layer.
pub(crate) struct Step {
    pos: usize,
    tokens: usize,
    /// The paged cache's block table and the new tokens' slots.
    paged: Option<(BlockTable, Tensor)>,
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
        let store = if flash_fits(dtype, head_dim) {
            let per_seq = capacity.div_ceil(PAGE_SIZE);
            // Deferred checks: the writes and decodes of a step report slots or pages outside
            // the cache once, from `KvCache::check` (not with a device-to-host copy per call).
            let cache = PagedKvCache::new(device, layers, per_seq * batch, PAGE_SIZE, kv_heads, head_dim, dtype)?.with_deferred_checks();
            let mut alloc = PageAllocator::new(cache.pages());
            let pages = (0..batch).map(|_| alloc.alloc(per_seq)).collect::<ferrocm::Result<Vec<_>>>()?;
            Store::Paged { cache, pages }
        } else {
            let shape = [capacity, batch, kv_heads, head_dim];
            let mut k = Vec::with_capacity(layers);
            let mut v = Vec::with_capacity(layers);
            for _ in 0..layers {
                // Unwritten positions are never read (causal and length limits), so `empty` is enough.
                k.push(Tensor::empty(device, &shape, dtype)?);
                v.push(Tensor::empty(device, &shape, dtype)?);
            }
            Store::Dense { k, v }
        };
        Ok(KvCache { store, capacity, batch })
    }

    /// The verdicts of the paged cache's writes and decodes since the last check (see
    /// `PagedKvCache::with_deferred_checks`): one device-to-host copy a step.
    pub(crate) fn check(&self) -> Result<()> {
        match &self.store {
            Store::Paged { cache, .. } => Ok(cache.check()?),
            Store::Dense { .. } => Ok(()),
        }
    }

    /// Positions per sequence.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sequences.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Whether this is the paged cache (see the type's notes).
    pub fn paged(&self) -> bool {
        matches!(self.store, Store::Paged { .. })
    }

    /// Bytes held on the device.
    pub fn bytes(&self) -> usize {
        let t = |t: &Tensor| t.numel() * t.dtype().size();
        match &self.store {
            Store::Paged { cache, .. } => (0..cache.layers()).filter_map(|l| cache.layer(l).ok()).map(|(k, v)| t(k) + t(v)).sum(),
            Store::Dense { k, v } => k.iter().chain(v).map(t).sum(),
        }
    }

    /// The step that adds `tokens` positions per sequence at `pos`.
    pub(crate) fn step(&self, device: &Device, pos: usize, tokens: usize) -> Result<Step> {
        let paged = match &self.store {
            Store::Paged { cache, pages } => {
                let table = BlockTable::new(device, pages, &vec![pos + tokens; self.batch])?;
                let slots = table.slots(tokens, cache.page_size())?;
                Some((table, slots))
            }
            Store::Dense { .. } => None,
        };
        Ok(Step { pos, tokens, paged })
    }

    /// Stores `k` and `v` (`[batch, tokens, kv_heads, head_dim]`, any views) at the step's
    /// positions of `layer`.
    pub(crate) fn write(&self, layer: usize, step: &Step, k: &Tensor, v: &Tensor) -> Result<()> {
        match (&self.store, &step.paged) {
            (Store::Paged { cache, .. }, Some((_, slots))) => {
                // [batch, tokens, ..] -> [batch * tokens, ..], the order of the slots: a view of
                // the fused QKV output (write_kv reads rows through their strides).
                let flat = |t: &Tensor| -> Result<Tensor> { Ok(t.flatten(0, 1)?) };
                attn::write_kv(cache, layer, &flat(k)?, &flat(v)?, slots)?;
            }
            (Store::Dense { k: kc, v: vc }, _) => {
                for (cache, new) in [(&kc[layer], k), (&vc[layer], v)] {
                    // [batch, tokens, ...] -> [tokens, batch, ...]: a view; contiguous (no copy) when
                    // batch or tokens is 1, as in decoding.
                    let src = new.transpose(0, 1)?.contiguous()?;
                    cache.narrow(0, step.pos, step.tokens)?.copy_from(&src)?;
                }
            }
            (Store::Paged { .. }, None) => unreachable!("a paged cache's steps carry a block table"),
        }
        Ok(())
    }

    /// Whether [`KvCache::rope_write`] takes this step: a paged cache and a step that attends
    /// through decode attention (not a prompt from an empty cache, whose flash attention reads
    /// the rotated keys from a tensor), with a rotation of whole 16-byte chunks.
    pub(crate) fn fuses_rope(&self, step: &Step, rotary_dim: usize) -> bool {
        self.paged() && !(step.pos == 0 && step.tokens > 1) && rotary_dim.is_multiple_of(8)
    }

    /// Rotates the query and key heads of `qkv` (`[batch, tokens, heads + 2 kv_heads,
    /// head_dim]`, a fused projection's output) and writes the keys and values at the step's
    /// positions of `layer`, in one launch; returns the rotated queries. Only where
    /// [`KvCache::fuses_rope`] says so.
    pub(crate) fn rope_write(&self, layer: usize, step: &Step, qkv: &Tensor, heads: usize, rope: &RopeKv<'_>) -> Result<Tensor> {
        match (&self.store, &step.paged) {
            (Store::Paged { cache, .. }, Some((_, slots))) => Ok(attn::rope_write_kv(qkv, heads, rope, cache, layer, slots)?),
            _ => unreachable!("fuses_rope admits paged caches only, whose steps carry slots"),
        }
    }

    /// [`KvCache::rope_write`] of the fused QKV projection `rms_norm(x) w^T` (`w` quantized,
    /// `x` `[batch * tokens, hidden]`), in the projection's own launch where the decode GEMV
    /// runs it; returns the rotated queries `[batch, tokens, heads, head_dim]`. Only where
    /// [`KvCache::fuses_rope`] says so.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn project_rope_write(
        &self,
        layer: usize,
        step: &Step,
        x: &Tensor,
        w: &QuantTensor,
        rms: Option<RmsNorm<'_>>,
        heads: usize,
        rope: &RopeKv<'_>,
    ) -> Result<Tensor> {
        match (&self.store, &step.paged) {
            (Store::Paged { cache, .. }, Some((_, slots))) => Ok(attn::qkv_rope_write_kv(x, w, rms, heads, rope, cache, layer, slots)?),
            _ => unreachable!("fuses_rope admits paged caches only, whose steps carry slots"),
        }
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

/// Causal self-attention of the step's new queries `q` (`[batch, tokens, heads, head_dim]`, any
/// view) over the cached keys of `layer` (this step's, `k_new`/`v_new`, already written):
/// positions `0..pos + tokens`. The result is `[batch * tokens, heads * head_dim]` in `q`'s
/// dtype.
pub(crate) fn causal(q: &Tensor, k_new: &Tensor, v_new: &Tensor, cache: &KvCache, layer: usize, step: &Step) -> Result<Tensor> {
    let (b, t, h, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let (pos, s) = (step.pos, step.pos + step.tokens);
    match (&cache.store, &step.paged) {
        (Store::Paged { .. }, _) if pos == 0 && t > 1 => {
            // A prompt from an empty cache: its own keys are all there is; flash attention
            // reads them where they are.
            let o = attn::flash(q, k_new, v_new, &FlashOptions { causal: true, ..Default::default() })?;
            return Ok(o.reshape(&[b * t, h * d])?);
        }
        (Store::Paged { .. }, _) => return cached(q, cache, layer, step),
        _ => {}
    }
    let Store::Dense { k: kc, v: vc } = &cache.store else { unreachable!("handled above") };
    let kvh = kc[layer].shape()[2];
    let g = h / kvh;
    // [capacity, B, KVH, D] -> [B, KVH, S, D]: a view the GEMM reads in place (rows of D with a
    // stride of B*KVH*D; B and KVH collapse into one batch stride).
    let keys = kc[layer].narrow(0, 0, s)?.transpose(0, 1)?.transpose(1, 2)?;
    let values = vc[layer].narrow(0, 0, s)?.transpose(0, 1)?.transpose(1, 2)?;
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

/// Attention of the step's queries `q` (`[batch, tokens, heads, head_dim]`) over `layer` of a
/// paged cache that already holds the step's keys: decode attention, positions `0..pos +
/// tokens`. The result is `[batch * tokens, heads * head_dim]`.
pub(crate) fn cached(q: &Tensor, cache: &KvCache, layer: usize, step: &Step) -> Result<Tensor> {
    let (b, t, h, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    match (&cache.store, &step.paged) {
        (Store::Paged { cache: pc, .. }, Some((table, _))) => {
            let o = attn::decode(q, pc, layer, table, &DecodeOptions::default())?;
            Ok(o.reshape(&[b * t, h * d])?)
        }
        _ => unreachable!("a paged cache's steps carry a block table"),
    }
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
        let o = attn::flash(q, k, v, &FlashOptions { key_lengths: Some(lengths), ..Default::default() })?;
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
