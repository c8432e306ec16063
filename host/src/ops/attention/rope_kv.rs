//! A decode step's rotary embedding and KV-cache write in one launch ([`rope_write_kv`]): what
//! [`rope`](crate::ops::rope::rope) over the query and key heads followed by
//! [`write_kv`](super::write_kv) does, straight from a fused QKV projection's output; or inside
//! that projection's own launch when its weights are quantized ([`qkv_rope_write_kv`]: the
//! decode GEMV's epilogue rotates and writes).

use super::PagedKvCache;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::layout::contiguous_aligned;
use crate::ops::qmatmul::{self, QMatmulOptions, RmsNorm, RopeEpilogue};
use crate::quant::QuantTensor;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor, u32_of};
use ferrocm_device::abi::attention::{self as abi, ATTENTION_SMALL_BLOCK, RopeWriteKvArgs};
use ferrocm_device::num::Divisor;

/// The rotation of [`rope_write_kv`]: `rope`'s interleaved layout (pairs `(2i, 2i + 1)`) with
/// cos/sin tables, as [`RopeTable::Cache`](crate::ops::rope::RopeTable::Cache) and
/// [`RopeOptions::offsets`](crate::ops::rope::RopeOptions) give them to `rope`.
///
/// Build one from the tables a model precomputes (`[positions, rotary_dim / 2]` f32 each) and
/// the step's first position per sequence.
#[derive(Clone, Copy, Debug)]
pub struct RopeKv<'a> {
    /// cos table, `[positions, rotary_dim / 2]` f32; `rotary_dim` (a multiple of 8, at most the
    /// head dimension) is twice its width, the rest of each head is copied unrotated.
    pub cos: &'a Tensor,
    /// sin table, as `cos`.
    pub sin: &'a Tensor,
    /// i32 `[batch]`: the position of each sequence's first token in this step (token `s` of
    /// sequence `b` sits at `offsets[b] + s`).
    pub offsets: &'a Tensor,
}

/// Rotates the query and key heads of `qkv` and writes the step's keys and values into
/// `layer` of `cache`: returns the rotated queries.
///
/// `qkv` is `[batch, seq, heads + 2 kv_heads, head_dim]` (a fused projection's output: query
/// heads, then key heads, then value heads; tokens may be strided, heads contiguous); token
/// `s` of sequence `b` goes to slot `slots[b * seq + s]`. The result is `[batch, seq, heads,
/// head_dim]`, contiguous. The bits are those of [`rope`](crate::ops::rope::rope) over the
/// query and key heads followed by [`write_kv`](super::write_kv) of the rotated keys and the
/// values, in one launch instead of two (or four, when a batch makes the heads strided).
///
/// ```no_run
/// use ferrocm::{Device, DType, Tensor, ops::attention::{self, BlockTable, PageAllocator, PagedKvCache, RopeKv}};
/// let dev = Device::new()?;
/// let cache = PagedKvCache::new(&dev, 1, 64, 16, 3, 64, DType::F16)?;
/// let mut alloc = PageAllocator::new(cache.pages());
/// let mut pages = Vec::new();
/// alloc.grow(&mut pages, 11, cache.page_size())?;
/// let table = BlockTable::new(&dev, &[pages], &[11])?;
/// let slots = table.slots(1, cache.page_size())?;                    // position 10's slot
/// let qkv = Tensor::zeros(&dev, &[1, 1, 9 + 2 * 3, 64], DType::F16)?;  // one token's projection
/// let cos = Tensor::zeros(&dev, &[2048, 32], DType::F32)?;
/// let sin = Tensor::zeros(&dev, &[2048, 32], DType::F32)?;
/// let offsets = Tensor::from_slice(&dev, &[10i32], &[1])?;
/// let q = attention::rope_write_kv(&qkv, 9, &RopeKv { cos: &cos, sin: &sin, offsets: &offsets }, &cache, 0, &slots)?;
/// assert_eq!(q.shape(), &[1, 1, 9, 64]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
///
/// # Errors
/// [`Error::Shape`] for `qkv` not `[batch, seq, heads + 2 kv_heads, head_dim]` of the cache's
/// heads, tables not `[positions, n]` alike with `2 n` a multiple of 8 up to the head dimension,
/// offsets not `[batch]` or slots not `[batch * seq]`; [`Error::DTypeMismatch`] (`qkv` not the
/// cache's dtype, tables not f32, offsets or slots not i32); [`Error::DeviceMismatch`];
/// [`Error::InvalidArgument`] for a layer past the last; [`Error::IndexOutOfRange`] for a slot
/// outside the cache, found by the kernel (that token's key and value are not written; the
/// others, and every query, are); allocation and launch errors. A position outside the tables
/// gives NaN rows, as `rope` does.
pub fn rope_write_kv(qkv: &Tensor, heads: usize, rope: &RopeKv<'_>, cache: &PagedKvCache, layer: usize, slots: &Tensor) -> Result<Tensor> {
    let op = "attention::rope_write_kv";
    let (kc, vc) = cache.layer(layer)?;
    let (kvh, d, dtype) = (cache.kv_heads(), cache.head_dim(), cache.dtype());
    let (batch, seq) = match *qkv.shape() {
        [b, s, h, dd] if h == heads + 2 * kvh && dd == d => (b, s),
        _ => {
            return Err(Error::Shape {
                op,
                message: format!("qkv is {:?}, expected [batch, seq, {heads} + 2 * {kvh} heads, {d}]", qkv.shape()),
            });
        }
    };
    if qkv.dtype() != dtype {
        return Err(Error::DTypeMismatch { op, what: "qkv", got: qkv.dtype(), expected: dtype.to_string() });
    }
    let half = check_rope(op, rope, slots, batch, seq, d)?;
    let (cos, sin, offsets) = (rope.cos, rope.sin, rope.offsets);
    let dev = kc.device();
    let mut ops = Operands::new(op, dev);
    for (what, t) in [("qkv", qkv), ("cos table", cos), ("sin table", sin), ("offsets", offsets), ("slots", slots)] {
        ops.check_device(what, t)?;
    }
    let q = Tensor::empty(dev, &[batch, seq, heads, d], dtype)?;
    let tokens = batch * seq;
    if tokens == 0 {
        return Ok(q);
    }
    // Tokens [batch * seq] as one axis: a view when the batch steps over whole tokens; the
    // kernel reads each token's heads as one contiguous, 16-byte aligned row.
    let rows = match qkv.flatten(0, 1) {
        Ok(r) if r.strides()[1] == d && r.strides()[2] == 1 && r.addr() % 16 == 0 && (r.strides()[0] * 2) % 16 == 0 => r,
        _ => contiguous_aligned(qkv)?.flatten(0, 1)?,
    };
    let (cos, sin) = (cos.contiguous()?, sin.contiguous()?);
    let (offsets, slots) = (offsets.contiguous()?, slots.contiguous()?);
    let flag = cache.slot_flag(op, &slots)?;
    let (per_row, all) = (Divisor::new((d / 8) as u32), Divisor::new(u32_of(op, "heads", heads + 2 * kvh)?));
    let (seq_div, page) = (Divisor::new(u32_of(op, "seq", seq.max(1))?), Divisor::new(cache.page_size() as u32));
    let args = RopeWriteKvArgs {
        qkv: ops.input_bytes("qkv", &rows)?,
        q: ops.output_bytes("q", &q)?,
        slots: ops.input::<i32>("slots", &slots)?,
        offsets: ops.input::<i32>("offsets", &offsets)?,
        cos: ops.input::<f32>("cos table", &cos)?,
        sin: ops.input::<f32>("sin table", &sin)?,
        k_cache: ops.output_bytes("k cache", kc)?,
        v_cache: ops.output_bytes("v cache", vc)?,
        error: ops.output::<u32>("error flag", &flag.error)?,
        row_stride: rows.strides()[0] as u64,
        tokens: u32_of(op, "tokens", tokens)?,
        seq: u32_of(op, "seq", seq)?,
        heads: u32_of(op, "heads", heads)?,
        kv_heads: kvh as u32,
        d: d as u32,
        rot_dim: 2 * half as u32,
        cache_rows: u32_of(op, "table rows", cos.shape()[0])?,
        page_size: cache.page_size() as u32,
        slots_total: u32_of(op, "slots", cache.pages() * cache.page_size())?,
        row_magic: per_row.magic,
        row_shift: per_row.shift,
        all_magic: all.magic,
        all_shift: all.shift,
        seq_magic: seq_div.magic,
        seq_shift: seq_div.shift,
        page_magic: page.magic,
        page_shift: page.shift,
    };
    let items = u32_of(op, "work-items", tokens * (heads + 2 * kvh) * d / 8)?;
    let kernel = if dtype == DType::Bf16 { abi::ROPE_WRITE_KV_BF16 } else { abi::ROPE_WRITE_KV_F16 };
    let launch =
        LaunchConfig { grid: [items.div_ceil(ATTENTION_SMALL_BLOCK), 1, 1], block: [ATTENTION_SMALL_BLOCK, 1, 1], dynamic_lds_bytes: 0 };
    // SAFETY: qkv holds `tokens` rows of heads + 2 kv_heads heads of d values at 16-byte aligned
    // strides; q is [tokens][heads][d]; offsets has batch entries, slots tokens; the tables
    // [rows][rot / 2] f32 with rot / 2 a multiple of 4 (16-byte aligned rows); every slot the
    // kernel follows is below pages * page_size, inside both caches.
    unsafe { ops.launch(kernel, launch, &args)? };
    cache.settle(flag)?;
    Ok(q)
}

/// Checks `rope`'s tables (f32 `[positions, n]` alike, `2 n` a multiple of 8 up to `d`), its
/// offsets (i32 `[batch]`) and `slots` (i32 `[batch * seq]`); returns `n`, half the rotated
/// width.
fn check_rope(op: &'static str, rope: &RopeKv<'_>, slots: &Tensor, batch: usize, seq: usize, d: usize) -> Result<usize> {
    let (cos, sin, offsets) = (rope.cos, rope.sin, rope.offsets);
    let half = cos.shape().get(1).copied().unwrap_or(0);
    for (what, t) in [("cos table", cos), ("sin table", sin)] {
        if t.dtype() != DType::F32 {
            return Err(Error::DTypeMismatch { op, what, got: t.dtype(), expected: "f32".into() });
        }
        if t.rank() != 2 || t.shape() != cos.shape() || half == 0 || (2 * half) % 8 != 0 || 2 * half > d {
            return Err(Error::Shape {
                op,
                message: format!("{what} is {:?}; expected [positions, n] like the cos table, 2 n a multiple of 8 up to {d}", t.shape()),
            });
        }
    }
    for (what, t, n) in [("offsets", offsets, batch), ("slots", slots, batch * seq)] {
        if t.dtype() != DType::I32 {
            return Err(Error::DTypeMismatch { op, what, got: t.dtype(), expected: "i32".into() });
        }
        if t.shape() != [n] {
            return Err(Error::Shape { op, message: format!("{what} are {:?}, expected [{n}]", t.shape()) });
        }
    }
    Ok(half)
}

/// A decode step's fused QKV projection with quantized weights, its rotary embedding and its
/// KV-cache write: what [`qmatmul`](crate::ops::qmatmul::qmatmul) (output in the cache's dtype,
/// `rms_norm` applied first if given) followed by [`rope_write_kv`] does, in one launch when
/// the decode GEMV runs the product (its epilogue rotates and writes, `abi::quant::flags::
/// ROPE_KV`), else in those two. Returns the rotated queries `[batch, seq, heads, head_dim]`.
///
/// `x` is `[batch * seq, K]` (sequence-major; `batch` is the length of `rope.offsets`), `w`
/// `[(heads + 2 kv_heads) head_dim, K]`: query heads, then key heads, then value heads, as a
/// fused projection's rows. The bits are those of the two calls.
///
/// ```no_run
/// use ferrocm::{Device, DType, Tensor, f16, ops::attention::{self, BlockTable, PageAllocator, PagedKvCache, RopeKv}};
/// use ferrocm::quant::{QuantFormat, QuantTensor, quantize};
/// let dev = Device::new()?;
/// let cache = PagedKvCache::new(&dev, 1, 64, 16, 3, 64, DType::F16)?;
/// let mut alloc = PageAllocator::new(cache.pages());
/// let mut pages = Vec::new();
/// alloc.grow(&mut pages, 11, cache.page_size())?;
/// let table = BlockTable::new(&dev, &[pages], &[11])?;
/// let slots = table.slots(1, cache.page_size())?;                     // position 10's slot
/// let w: Vec<f32> = (0..960 * 576).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
/// let wq = QuantTensor::from_blocks(&dev, QuantFormat::Q4_1, [960, 576], &quantize(QuantFormat::Q4_1, &w)?)?;
/// let x = Tensor::from_slice(&dev, &vec![f16::ONE; 576], &[1, 576])?;  // one token's activations
/// let cos = Tensor::zeros(&dev, &[2048, 32], DType::F32)?;
/// let sin = Tensor::zeros(&dev, &[2048, 32], DType::F32)?;
/// let offsets = Tensor::from_slice(&dev, &[10i32], &[1])?;
/// let rope = RopeKv { cos: &cos, sin: &sin, offsets: &offsets };
/// let q = attention::qkv_rope_write_kv(&x, &wq, None, 9, &rope, &cache, 0, &slots)?;
/// assert_eq!(q.shape(), &[1, 1, 9, 64]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
///
/// # Errors
/// [`Error::Shape`] for `w` not `(heads + 2 kv_heads) head_dim` rows of the cache's heads, `x`'s
/// rows not a multiple of the batch, and those of [`rope_write_kv`] and
/// [`qmatmul`](crate::ops::qmatmul::qmatmul) (with the norm's); [`Error::DTypeMismatch`] for a
/// cache that is not f16 or bf16; the rest as those two.
#[allow(clippy::too_many_arguments)]
pub fn qkv_rope_write_kv(
    x: &Tensor,
    w: &QuantTensor,
    rms_norm: Option<RmsNorm<'_>>,
    heads: usize,
    rope: &RopeKv<'_>,
    cache: &PagedKvCache,
    layer: usize,
    slots: &Tensor,
) -> Result<Tensor> {
    let op = "attention::qkv_rope_write_kv";
    let (kc, vc) = cache.layer(layer)?;
    let (kvh, d, dtype) = (cache.kv_heads(), cache.head_dim(), cache.dtype());
    if !matches!(dtype, DType::F16 | DType::Bf16) {
        return Err(Error::DTypeMismatch { op, what: "cache", got: dtype, expected: "f16 or bf16".into() });
    }
    let [n, _] = w.shape();
    if n != (heads + 2 * kvh) * d {
        return Err(Error::Shape {
            op,
            message: format!("W has {n} rows; {heads} + 2 * {kvh} heads of {d} are {}", (heads + 2 * kvh) * d),
        });
    }
    let m: usize = x.shape().iter().rev().skip(1).product();
    let batch = match rope.offsets.shape() {
        &[b] if b > 0 && m.is_multiple_of(b) => b,
        s => return Err(Error::Shape { op, message: format!("offsets are {s:?}; expected [batch], a divisor of x's {m} rows") }),
    };
    let seq = m / batch;
    let half = check_rope(op, rope, slots, batch, seq, d)?;
    let opts = QMatmulOptions { out_dtype: Some(dtype), rms_norm, ..Default::default() };
    let (cos, sin) = (rope.cos.contiguous()?, rope.sin.contiguous()?);
    let (offsets, slots) = (rope.offsets.contiguous()?, slots.contiguous()?);
    let flag = cache.slot_flag(op, &slots)?;
    let epilogue = RopeEpilogue {
        heads,
        kv_heads: kvh,
        head_dim: d,
        rot_dim: 2 * half,
        seq,
        page_size: cache.page_size(),
        slots_total: cache.pages() * cache.page_size(),
        cos: &cos,
        sin: &sin,
        offsets: &offsets,
        slots: &slots,
        k_cache: kc,
        v_cache: vc,
        error: &flag.error,
    };
    if let Some(q) = qmatmul::fused_rope(x, w, &opts, &epilogue)? {
        cache.settle(flag)?;
        return q.reshape(&[batch, seq, heads, d]);
    }
    // The prefill GEMM (or a product the GEMV's epilogue cannot index) runs the product; the
    // rotation and the write follow in their own launch.
    let qkv = qmatmul::qmatmul(x, w, &opts)?.reshape(&[batch, seq, heads + 2 * kvh, d])?;
    rope_write_kv(&qkv, heads, rope, cache, layer, &slots)
}
