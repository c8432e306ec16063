//! Decode over a paged KV cache: the cache ([`PagedKvCache`]), a page allocator
//! ([`PageAllocator`]), the sequences' block tables ([`BlockTable`]), writing new rows
//! ([`write_kv`]) and attending over them ([`decode`]).
//!
//! ```no_run
//! use ferrocm::{Device, DType, Tensor, ops::attention::{self, BlockTable, DecodeOptions, PageAllocator, PagedKvCache}};
//! let dev = Device::new()?;
//! // SmolLM2: 30 layers, 3 key/value heads of 64, pages of 16 tokens.
//! let cache = PagedKvCache::new(&dev, 30, 1024, 16, 3, 64, DType::Bf16)?;
//! let mut alloc = PageAllocator::new(cache.pages());
//! let mut pages = Vec::new();
//! alloc.grow(&mut pages, 101, cache.page_size())?; // room for 100 prompt tokens + 1 new one
//! let table = BlockTable::new(&dev, &[pages], &[101])?;
//! let slots = table.slots(1, cache.page_size())?; // the new token's slot
//! let k = Tensor::zeros(&dev, &[1, 3, 64], DType::Bf16)?; // [tokens, kv_heads, head_dim]
//! let q = Tensor::zeros(&dev, &[1, 1, 9, 64], DType::Bf16)?; // [batch, rows, heads, head_dim]
//! for layer in 0..30 {
//!     attention::write_kv(&cache, layer, &k, &k, &slots)?;
//!     let o = attention::decode(&q, &cache, layer, &table, &DecodeOptions::default())?;
//! }
//! # Ok::<(), ferrocm::Error>(())
//! ```

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::layout::{contiguous, contiguous_aligned};
use crate::runtime::device::Device;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::Kernel;
use ferrocm_device::abi::attention::{
    self as abi, ATTENTION_SMALL_BLOCK, DECODE_COLS, DECODE_STEP, DECODE_WAVES, DecodeArgs, DecodeCombineArgs, PAGE_QUANTUM, WriteKvArgs,
};
use ferrocm_device::num::{Divisor, QUOTIENT_LIMIT};
use std::sync::Mutex;

/// A split covers at least this many keys (a step per wave), so none of its waves idles.
const MIN_SPLIT_KEYS: usize = DECODE_WAVES as usize * DECODE_STEP as usize;

/// The KV cache of a model, in pages: per layer one K and one V tensor of
/// `[pages, kv_heads, page_size, head_dim]` (f16 or bf16), zero-filled. Token `t` of a sequence
/// lives in slot `t % page_size` of the page its [`BlockTable`] row lists at `t / page_size`.
///
/// Create one with [`PagedKvCache::new`]; hand out pages with a [`PageAllocator`]; fill slots with
/// [`write_kv`]; attend with [`decode`].
///
/// Slots and block-table entries outside the cache are found by the kernels. By default each op
/// reads the kernel's verdict back before it returns (a device-to-host copy, so the host waits
/// for the device at every call); a cache made with [`PagedKvCache::with_deferred_checks`]
/// collects the verdicts on the device and reports them from [`PagedKvCache::check`], one copy
/// for any number of calls (a model checks once per step, where it reads its logits anyway).
pub struct PagedKvCache {
    layers: Vec<(Tensor, Tensor)>,
    pages: usize,
    page_size: usize,
    kv_heads: usize,
    head_dim: usize,
    dtype: DType,
    /// `Some` with deferred checks: the verdicts not yet read.
    deferred: Option<Mutex<Deferred>>,
}

/// Calls whose verdicts a deferred-checks cache has not read yet: `flags` holds one u32 per call
/// (0, or the offending position + 1 as the kernels write it), `calls[i]` says what call `i` was.
struct Deferred {
    flags: Option<Tensor>,
    calls: Vec<Call>,
}

/// What a deferred verdict refers to.
struct Call {
    op: &'static str,
    /// The slots of a cache write, or the block table of a decode with its row width.
    culprit: Culprit,
}

/// The tensor an error position indexes.
enum Culprit {
    Slots(Tensor),
    Table(Tensor, usize),
}

/// The u32 an op's kernel sets to the offending position + 1 (a view into the deferred
/// flags, or a fresh one), and, for immediate checks, what the op reads it back about.
pub(super) struct Flag {
    pub(super) error: Tensor,
    now: Option<(&'static str, Culprit)>,
}

/// Calls a deferred-checks cache collects before it reads them back on its own (in
/// [`PagedKvCache::check`]'s place): a decode step of a large model makes a few per layer.
const DEFERRED_CALLS: usize = 1024;

impl PagedKvCache {
    /// A zero-filled cache of `layers` layers of `pages` pages of `page_size` tokens (a multiple
    /// of 16) of `kv_heads` heads of `head_dim` values (32, 64, 96, 128 or 256) of `dtype` (f16 or
    /// bf16) on `device`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size or a page size not a multiple of 16,
    /// [`Error::DTypeMismatch`], [`Error::Unsupported`] for other head dimensions or a cache past
    /// the kernels' 32-bit slot numbers; allocation errors.
    pub fn new(
        device: &Device,
        layers: usize,
        pages: usize,
        page_size: usize,
        kv_heads: usize,
        head_dim: usize,
        dtype: DType,
    ) -> Result<Self> {
        let op = "PagedKvCache::new";
        if layers == 0 || pages == 0 || kv_heads == 0 || page_size == 0 || page_size % PAGE_QUANTUM as usize != 0 {
            return Err(Error::InvalidArgument {
                op,
                message: format!("{layers} layers, {pages} pages of {page_size} tokens (a multiple of 16), {kv_heads} heads"),
            });
        }
        if !matches!(dtype, DType::F16 | DType::Bf16) {
            return Err(Error::DTypeMismatch { op, what: "cache", got: dtype, expected: "f16 or bf16".into() });
        }
        if !abi::HEAD_DIMS.contains(&(head_dim as u32)) {
            return Err(Error::Unsupported { op, what: format!("head dimension {head_dim} (the kernels take {:?})", abi::HEAD_DIMS) });
        }
        if pages.checked_mul(page_size).is_none_or(|s| s > i32::MAX as usize) {
            return Err(Error::Unsupported { op, what: format!("{pages} pages of {page_size} tokens (slot numbers are i32)") });
        }
        let shape = [pages, kv_heads, page_size, head_dim];
        let layers = (0..layers)
            .map(|_| Ok((Tensor::zeros(device, &shape, dtype)?, Tensor::zeros(device, &shape, dtype)?)))
            .collect::<Result<_>>()?;
        Ok(PagedKvCache { layers, pages, page_size, kv_heads, head_dim, dtype, deferred: None })
    }

    /// This cache with deferred checks: [`write_kv`], [`rope_write_kv`](super::rope_write_kv)
    /// and [`decode`] no longer wait for their kernels to report slots or block-table entries
    /// outside the cache; [`PagedKvCache::check`] reports the first such call since the last
    /// check (or an op does, when 1024 calls have gone unchecked). The kernels
    /// behave as before either way: an offending key/value row is not written, an offending
    /// page not read.
    ///
    /// ```no_run
    /// # use ferrocm::{Device, DType, ops::attention::PagedKvCache};
    /// let dev = Device::new()?;
    /// let cache = PagedKvCache::new(&dev, 30, 1024, 16, 3, 64, DType::Bf16)?.with_deferred_checks();
    /// // ... a decode step's write_kv / decode calls for every layer ...
    /// cache.check()?; // one device-to-host copy for all of them
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    pub fn with_deferred_checks(mut self) -> Self {
        self.deferred = Some(Mutex::new(Deferred { flags: None, calls: Vec::new() }));
        self
    }

    /// Whether the cache defers its checks ([`PagedKvCache::with_deferred_checks`]).
    pub fn defers_checks(&self) -> bool {
        self.deferred.is_some()
    }

    /// Reads the verdicts of the calls made since the last check (deferred checks; without them
    /// there is nothing to read) and forgets them. The read is ordered on the current stream:
    /// check on the stream the calls ran on, or after the device has passed them.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for the first call, in call order, that met a slot or a
    /// block-table entry outside the cache, as that call would have returned it without
    /// deferral; device errors.
    pub fn check(&self) -> Result<()> {
        let Some(d) = &self.deferred else { return Ok(()) };
        let mut d = d.lock().unwrap_or_else(|p| p.into_inner());
        let calls = std::mem::take(&mut d.calls);
        let Some(flags) = &d.flags else { return Ok(()) };
        if calls.is_empty() {
            return Ok(());
        }
        let got = flags.narrow(0, 0, calls.len())?.to_vec::<u32>()?;
        // Zeroed for the next calls (ordered on the stream after the copy above).
        self.device().memset(flags.storage(), 0, (calls.len() * 4) as u64)?;
        match calls.iter().zip(&got).find(|(_, f)| **f != 0) {
            Some((call, &flag)) => self.verdict(call.op, flag, &call.culprit),
            None => Ok(()),
        }
    }

    /// The flag `op`'s kernel reports to, about `culprit`: a fresh one the op reads back itself
    /// ([`PagedKvCache::settle`]; immediate checks), or the next of the deferred ones.
    fn flag(&self, op: &'static str, culprit: Culprit) -> Result<Flag> {
        let dev = self.device();
        let Some(d) = &self.deferred else { return Ok(Flag { error: Tensor::zeros(dev, &[1], DType::U32)?, now: Some((op, culprit)) }) };
        let full = d.lock().unwrap_or_else(|p| p.into_inner()).calls.len() >= DEFERRED_CALLS;
        if full {
            self.check()?;
        }
        let mut d = d.lock().unwrap_or_else(|p| p.into_inner());
        if d.flags.is_none() {
            d.flags = Some(Tensor::zeros(dev, &[DEFERRED_CALLS], DType::U32)?);
        }
        let i = d.calls.len();
        let error = d.flags.as_ref().map(|f| f.narrow(0, i, 1)).transpose()?.expect("allocated above");
        d.calls.push(Call { op, culprit });
        Ok(Flag { error, now: None })
    }

    /// [`PagedKvCache::flag`] for a cache write of `slots`.
    pub(super) fn slot_flag(&self, op: &'static str, slots: &Tensor) -> Result<Flag> {
        self.flag(op, Culprit::Slots(slots.clone()))
    }

    /// After `flag`'s kernel: its verdict when the checks are immediate (a device-to-host copy);
    /// nothing when they are deferred ([`PagedKvCache::check`] reads it).
    pub(super) fn settle(&self, flag: Flag) -> Result<()> {
        match flag.now {
            Some((op, culprit)) => self.verdict(op, flag.error.to_vec::<u32>()?[0], &culprit),
            None => Ok(()),
        }
    }

    /// The error of a call whose kernel reported `flag` (nonzero: position + 1).
    fn verdict(&self, op: &'static str, flag: u32, culprit: &Culprit) -> Result<()> {
        if flag == 0 {
            return Ok(());
        }
        let position = flag as usize - 1;
        match culprit {
            Culprit::Slots(slots) => {
                let index = slots.narrow(0, position, 1)?.to_vec::<i32>()?[0];
                Err(Error::IndexOutOfRange { op, position, index: index as i64, size: self.pages * self.page_size })
            }
            Culprit::Table(table, width) => {
                let (b, i) = (position / width, position % width);
                let index = table.narrow(0, b, 1)?.narrow(1, i, 1)?.to_vec::<i32>()?[0];
                Err(Error::IndexOutOfRange { op, position, index: index as i64, size: self.pages })
            }
        }
    }

    /// Layer `layer`'s K and V pages, `[pages, kv_heads, page_size, head_dim]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a layer past the last.
    pub fn layer(&self, layer: usize) -> Result<(&Tensor, &Tensor)> {
        self.layers
            .get(layer)
            .map(|(k, v)| (k, v))
            .ok_or_else(|| Error::InvalidArgument { op: "PagedKvCache::layer", message: format!("layer {layer} of {}", self.layers.len()) })
    }

    /// Layers.
    pub fn layers(&self) -> usize {
        self.layers.len()
    }
    /// Pages per layer.
    pub fn pages(&self) -> usize {
        self.pages
    }
    /// Tokens per page.
    pub fn page_size(&self) -> usize {
        self.page_size
    }
    /// Key/value heads.
    pub fn kv_heads(&self) -> usize {
        self.kv_heads
    }
    /// Values per head.
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The device the pages live on.
    pub fn device(&self) -> &Device {
        self.layers[0].0.device()
    }
}

/// Hands out a cache's pages (a free list; pages are `u32` numbers `0..pages`). Get one with
/// [`PageAllocator::new`] for [`PagedKvCache::pages`] pages.
#[derive(Clone, Debug)]
pub struct PageAllocator {
    free: Vec<u32>,
    used: Vec<bool>,
}

impl PageAllocator {
    /// All of `pages` pages free (handed out lowest first).
    pub fn new(pages: usize) -> Self {
        PageAllocator { free: (0..pages as u32).rev().collect(), used: vec![false; pages] }
    }

    /// Free pages.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// `n` pages.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when fewer than `n` are free (none is taken then).
    pub fn alloc(&mut self, n: usize) -> Result<Vec<u32>> {
        if n > self.free.len() {
            return Err(Error::InvalidArgument {
                op: "PageAllocator::alloc",
                message: format!("{n} pages asked, {} free", self.free.len()),
            });
        }
        let out: Vec<u32> = self.free.split_off(self.free.len() - n).into_iter().rev().collect();
        for &p in &out {
            self.used[p as usize] = true;
        }
        Ok(out)
    }

    /// Appends pages to `seq` (a sequence's pages in order) until it holds `tokens` tokens of
    /// `page_size`.
    ///
    /// # Errors
    /// As [`PageAllocator::alloc`].
    pub fn grow(&mut self, seq: &mut Vec<u32>, tokens: usize, page_size: usize) -> Result<()> {
        let need = tokens.div_ceil(page_size.max(1));
        if need > seq.len() {
            seq.extend(self.alloc(need - seq.len())?);
        }
        Ok(())
    }

    /// Returns `pages` to the free list.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a page that is not handed out (never, or freed twice);
    /// nothing is freed then.
    pub fn free(&mut self, pages: &[u32]) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        if let Some(&p) = pages.iter().find(|&&p| !self.used.get(p as usize).copied().unwrap_or(false) || !seen.insert(p)) {
            return Err(Error::InvalidArgument { op: "PageAllocator::free", message: format!("page {p} is not in use") });
        }
        for &p in pages {
            self.used[p as usize] = false;
            self.free.push(p);
        }
        Ok(())
    }
}

/// The pages and lengths of a batch of sequences, on the device for [`decode`], and the slots of
/// their newest tokens for [`write_kv`]. Build one per step with [`BlockTable::new`]; every layer
/// uses the same.
pub struct BlockTable {
    /// i32 `[batch, width]`: row `b` lists sequence `b`'s pages, then -1.
    table: Tensor,
    /// u32 `[batch]`.
    lens: Tensor,
    pages: Vec<Vec<u32>>,
    context_lens: Vec<usize>,
}

impl BlockTable {
    /// Sequence `b` holds `context_lens[b]` tokens (counting the ones this step adds) in
    /// `pages[b]` (in order).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty batch or a length per sequence mismatch,
    /// [`Error::Unsupported`] for lengths past 2^30; allocation errors.
    pub fn new(device: &Device, pages: &[Vec<u32>], context_lens: &[usize]) -> Result<Self> {
        let op = "BlockTable::new";
        if pages.is_empty() || pages.len() != context_lens.len() {
            return Err(Error::InvalidArgument { op, message: format!("{} page lists for {} lengths", pages.len(), context_lens.len()) });
        }
        if let Some(&n) = context_lens.iter().find(|&&n| n >= 1 << 30) {
            return Err(Error::Unsupported { op, what: format!("a context of {n} tokens (at most 2^30)") });
        }
        let width = pages.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut rows = vec![-1i32; pages.len() * width];
        for (b, p) in pages.iter().enumerate() {
            for (i, &x) in p.iter().enumerate() {
                rows[b * width + i] = x as i32;
            }
        }
        let table = Tensor::from_slice(device, &rows, &[pages.len(), width])?;
        let lens: Vec<u32> = context_lens.iter().map(|&n| n as u32).collect();
        let lens = Tensor::from_slice(device, &lens, &[lens.len()])?;
        Ok(BlockTable { table, lens, pages: pages.to_vec(), context_lens: context_lens.to_vec() })
    }

    /// Sequences.
    pub fn batch(&self) -> usize {
        self.context_lens.len()
    }

    /// Tokens per sequence.
    pub fn context_lens(&self) -> &[usize] {
        &self.context_lens
    }

    /// The device table, i32 `[batch, width]` (-1 past each sequence's pages).
    pub fn table(&self) -> &Tensor {
        &self.table
    }

    /// The slots (`page * page_size + offset`, i32) of the last `rows` tokens of every sequence,
    /// sequence by sequence: `[batch * rows]`, the order of `[batch, rows, ..]` new keys.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a sequence is shorter than `rows` or its pages do not hold
    /// its tokens; allocation errors.
    pub fn slots(&self, rows: usize, page_size: usize) -> Result<Tensor> {
        let op = "BlockTable::slots";
        let mut out = Vec::with_capacity(self.batch() * rows);
        for (b, (&n, p)) in self.context_lens.iter().zip(&self.pages).enumerate() {
            if n < rows || p.len() * page_size < n {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!("sequence {b}: {n} tokens, {} pages of {page_size}, {rows} new", p.len()),
                });
            }
            out.extend((n - rows..n).map(|t| (p[t / page_size] as usize * page_size + t % page_size) as i32));
        }
        Tensor::from_slice(self.table.device(), &out, &[out.len()])
    }
}

/// Options of [`decode`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DecodeOptions {
    /// The score scale; `None` is `1 / sqrt(head_dim)`. Must be finite and positive.
    pub scale: Option<f32>,
    /// Splits of each sequence's keys, instead of the rule's (see [`decode`]); for tests and
    /// tuning.
    pub splits: Option<usize>,
}

/// Writes new keys and values, `k` and `v` `[tokens, kv_heads, head_dim]` (any strides with a
/// contiguous last dimension; `[batch, rows, ..]` tensors flattened to tokens by the caller),
/// into layer `layer` of `cache` at `slots` (i32 `[tokens]`, `page * page_size + offset`, from
/// [`BlockTable::slots`]). One launch for both.
///
/// # Errors
/// [`Error::Shape`], [`Error::DTypeMismatch`], [`Error::DeviceMismatch`],
/// [`Error::InvalidArgument`] (a layer past the last), and [`Error::IndexOutOfRange`] for a slot
/// outside the cache, found by the kernel (no row is written for it; the others are);
/// allocation and launch errors.
pub fn write_kv(cache: &PagedKvCache, layer: usize, k: &Tensor, v: &Tensor, slots: &Tensor) -> Result<()> {
    let op = "attention::write_kv";
    let (kc, vc) = cache.layer(layer)?;
    let want = [k.shape().first().copied().unwrap_or(0), cache.kv_heads, cache.head_dim];
    for (what, t) in [("k", k), ("v", v)] {
        if t.shape() != want {
            return Err(Error::Shape {
                op,
                message: format!("{what} is {:?}, expected [tokens, {}, {}]", t.shape(), cache.kv_heads, cache.head_dim),
            });
        }
        if t.dtype() != cache.dtype {
            return Err(Error::DTypeMismatch { op, what, got: t.dtype(), expected: cache.dtype.to_string() });
        }
    }
    if slots.dtype() != DType::I32 {
        return Err(Error::DTypeMismatch { op, what: "slots", got: slots.dtype(), expected: "i32".into() });
    }
    if slots.shape() != [want[0]] {
        return Err(Error::Shape { op, message: format!("{} slots for {} tokens", slots.numel(), want[0]) });
    }
    let dev = kc.device();
    let mut ops = Operands::new(op, dev);
    for (what, t) in [("k", k), ("v", v), ("slots", slots)] {
        ops.check_device(what, t)?;
    }
    let tokens = want[0];
    if tokens == 0 {
        return Ok(());
    }
    let rows = |t: &Tensor| -> Result<Tensor> {
        let ok = t.strides()[2] == 1 && t.addr() % 16 == 0 && t.strides()[..2].iter().all(|&s| (s * 2) % 16 == 0);
        if ok { Ok(t.clone()) } else { contiguous_aligned(t) }
    };
    let (k, v) = (rows(k)?, rows(v)?);
    let slots = if slots.is_contiguous() { slots.clone() } else { contiguous(slots)? };
    let flag = cache.slot_flag(op, &slots)?;
    let (per_row, heads) = (Divisor::new((cache.head_dim / 8) as u32), Divisor::new(cache.kv_heads as u32));
    let page = Divisor::new(cache.page_size as u32);
    let args = WriteKvArgs {
        k: ops.input_bytes("k", &k)?,
        v: ops.input_bytes("v", &v)?,
        slots: ops.input::<i32>("slots", &slots)?,
        k_cache: ops.output_bytes("k cache", kc)?,
        v_cache: ops.output_bytes("v cache", vc)?,
        error: ops.output::<u32>("error flag", &flag.error)?,
        k_row_stride: k.strides()[0] as u64,
        k_head_stride: k.strides()[1] as u64,
        v_row_stride: v.strides()[0] as u64,
        v_head_stride: v.strides()[1] as u64,
        tokens: ops.u32("tokens", tokens)?,
        kv_heads: cache.kv_heads as u32,
        d: cache.head_dim as u32,
        page_size: cache.page_size as u32,
        slots_total: (cache.pages * cache.page_size) as u32,
        row_magic: per_row.magic,
        row_shift: per_row.shift,
        heads_magic: heads.magic,
        heads_shift: heads.shift,
        page_magic: page.magic,
        page_shift: page.shift,
    };
    let items = ops.u32("work-items", tokens * cache.kv_heads * cache.head_dim / 8)?;
    let launch =
        LaunchConfig { grid: [items.div_ceil(ATTENTION_SMALL_BLOCK), 1, 1], block: [ATTENTION_SMALL_BLOCK, 1, 1], dynamic_lds_bytes: 0 };
    // SAFETY: k and v hold `tokens` rows of `kv_heads` heads read through 16-byte aligned
    // strides; slots has `tokens` entries; every slot the kernel follows is below
    // `pages * page_size`, inside both caches.
    unsafe { ops.launch(abi::WRITE_KV_B16, launch, &args)? };
    cache.settle(flag)
}

/// The decode and split-combination kernels for `dtype` and head dimension `d`.
fn kernels_for(dtype: DType, d: usize) -> Result<(Kernel<DecodeArgs>, Kernel<DecodeCombineArgs>)> {
    let (table, combine) = match dtype {
        DType::Bf16 => (
            [abi::DECODE_BF16_D32, abi::DECODE_BF16_D64, abi::DECODE_BF16_D96, abi::DECODE_BF16_D128, abi::DECODE_BF16_D256],
            abi::DECODE_COMBINE_BF16,
        ),
        _ => (
            [abi::DECODE_F16_D32, abi::DECODE_F16_D64, abi::DECODE_F16_D96, abi::DECODE_F16_D128, abi::DECODE_F16_D256],
            abi::DECODE_COMBINE_F16,
        ),
    };
    let i = abi::HEAD_DIMS
        .iter()
        .position(|&h| h as usize == d)
        .ok_or_else(|| Error::Unsupported { op: "attention::decode", what: format!("head dimension {d}") })?;
    Ok((table[i], combine))
}

/// The splits of each sequence's keys and the keys per split (a multiple of 32) for `blocks`
/// workgroups per split over contexts of at most `max_ctx` tokens on a GPU of `cus` compute
/// units (the device's; 304 on MI300X and the emulator). The rule: no split while the launch
/// has at least half a workgroup per CU (the cache streams from every CU it reaches); otherwise
/// enough splits to give every CU a workgroup, each still covering at least [`MIN_SPLIT_KEYS`]
/// keys.
pub(super) fn choose_splits(cus: usize, blocks: usize, max_ctx: usize, forced: Option<usize>) -> (usize, usize) {
    let step = DECODE_STEP as usize;
    let cus = cus.max(1);
    let splits = match forced {
        Some(s) => s.max(1),
        None if blocks * 2 >= cus => 1,
        None => cus.div_ceil(blocks.max(1)).min(max_ctx.div_ceil(MIN_SPLIT_KEYS)).max(1),
    };
    let split_keys = max_ctx.div_ceil(splits).div_ceil(step).max(1) * step;
    (max_ctx.div_ceil(split_keys).max(1), split_keys)
}

/// Decode attention: `q` (`[batch, rows, heads, head_dim]`, any strides with a contiguous last
/// dimension) holds each sequence's `rows` newest tokens' queries (positions
/// `context_lens[b] - rows ..`, whose keys and values [`write_kv`] already put in the cache);
/// each attends its sequence's cached keys up to its own position (causal among the new rows).
/// Query head `h` reads key/value head `h / (heads / kv_heads)`. Returns `[batch, rows, heads,
/// head_dim]` in the cache's dtype.
///
/// One launch; two when the batch is too small to fill the GPU (`batch * kv_heads` workgroups
/// under half the CUs): the keys are then split (flash-decoding) and a second kernel combines the
/// splits. Sequences of different lengths share a launch.
///
/// # Errors
/// [`Error::Shape`] (rank, head dimension, heads not a multiple of the cache's, a batch other
/// than the table's, a sequence shorter than `rows` or longer than its table row),
/// [`Error::DTypeMismatch`], [`Error::DeviceMismatch`], [`Error::InvalidArgument`] (a bad scale
/// or layer), and [`Error::IndexOutOfRange`] for a block-table entry outside the cache's pages,
/// found by the kernel; allocation and launch errors.
pub fn decode(q: &Tensor, cache: &PagedKvCache, layer: usize, table: &BlockTable, opts: &DecodeOptions) -> Result<Tensor> {
    let op = "attention::decode";
    let (kc, vc) = cache.layer(layer)?;
    if q.rank() != 4 || q.shape()[3] != cache.head_dim {
        return Err(Error::Shape { op, message: format!("q is {:?}, expected [batch, rows, heads, {}]", q.shape(), cache.head_dim) });
    }
    let (batch, rows, heads, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    if q.dtype() != cache.dtype {
        return Err(Error::DTypeMismatch { op, what: "q", got: q.dtype(), expected: cache.dtype.to_string() });
    }
    if heads == 0 || heads % cache.kv_heads != 0 {
        return Err(Error::Shape { op, message: format!("{heads} query heads are not a multiple of {} key/value heads", cache.kv_heads) });
    }
    if batch != table.batch() {
        return Err(Error::Shape { op, message: format!("q has {batch} sequences, the block table {}", table.batch()) });
    }
    let width = table.table.shape()[1];
    if let Some((b, &n)) = table.context_lens.iter().enumerate().find(|(_, n)| **n < rows || **n > width * cache.page_size) {
        return Err(Error::Shape {
            op,
            message: format!("sequence {b} has {n} tokens: fewer than the {rows} new rows, or more than its {width} pages hold"),
        });
    }
    let dev = kc.device();
    let mut ops = Operands::new(op, dev);
    ops.check_device("q", q)?;
    ops.check_device("block table", &table.table)?;
    let scale = opts.scale.unwrap_or(1.0 / (d as f32).sqrt());
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::InvalidArgument { op, message: format!("scale {scale} must be finite and positive") });
    }
    let out = Tensor::empty(dev, &[batch, rows, heads, d], cache.dtype)?;
    if rows == 0 {
        return Ok(out);
    }
    let (kernel, combine) = kernels_for(cache.dtype, d)?;
    let ok = q.strides()[3] == 1 && q.addr() % 16 == 0 && q.strides()[..3].iter().all(|&s| (s * 2) % 16 == 0);
    let q = if ok { q.clone() } else { contiguous_aligned(q)? };
    let group = heads / cache.kv_heads;
    let col_groups = (group * rows).div_ceil(DECODE_COLS as usize);
    // The kernel splits grid y and the query columns with `num::quotient` (below 2^20).
    let columns = cache.kv_heads * col_groups * DECODE_COLS as usize;
    if columns >= QUOTIENT_LIMIT as usize {
        return Err(Error::Unsupported {
            op,
            what: format!(
                "{heads} query heads x {rows} new rows in column groups of 16 per key/value head: {columns} columns, 2^20 or more"
            ),
        });
    }
    let blocks = batch * cache.kv_heads * col_groups;
    let max_ctx = table.context_lens.iter().copied().max().unwrap_or(0);
    let (splits, split_keys) = choose_splits(dev.info().compute_units as usize, blocks, max_ctx, opts.splits);
    let out_rows = batch * rows * heads;
    let flag = cache.flag(op, Culprit::Table(table.table.clone(), width))?;
    let partial = if splits > 1 { Some((dev.alloc::<f32>(splits * out_rows * d)?, dev.alloc::<f32>(splits * out_rows)?)) } else { None };
    let (po, pl) = match &partial {
        Some((o, l)) => (ops.buffer("partial outputs", o)?, ops.buffer("partial lse", l)?),
        None => (ferrocm_device::abi::DevPtr::NULL, ferrocm_device::abi::DevPtr::NULL),
    };
    let o_ptr = ops.output_bytes("out", &out)?;
    let page = Divisor::new(cache.page_size as u32);
    let args = DecodeArgs {
        q: ops.input_bytes("q", &q)?,
        k_cache: ops.input_bytes("k cache", kc)?,
        v_cache: ops.input_bytes("v cache", vc)?,
        block_table: ops.input::<i32>("block table", &table.table)?,
        context_lens: ops.input::<u32>("context lengths", &table.lens)?,
        o: o_ptr,
        partial_o: po,
        partial_lse: pl,
        error: ops.output::<u32>("error flag", &flag.error)?,
        q_batch_stride: q.strides()[0] as u64,
        q_row_stride: ops.u32("q's row stride", q.strides()[1])?,
        q_head_stride: ops.u32("q's head stride", q.strides()[2])?,
        table_stride: width as u32,
        pages: cache.pages as u32,
        page_size: page.d,
        page_magic: page.magic,
        page_shift: page.shift,
        kv_heads: cache.kv_heads as u32,
        heads: ops.u32("heads", heads)?,
        group: group as u32,
        rows: ops.u32("rows", rows)?,
        col_groups: col_groups as u32,
        split_rows: ops.u32("output rows", out_rows)?,
        splits: splits as u32,
        split_keys: split_keys as u32,
        scale_log2: scale * std::f32::consts::LOG2_E,
    };
    let grid = [splits as u32, ops.u32("workgroups", cache.kv_heads * col_groups)?, ops.u32("batch", batch)?];
    let launch = LaunchConfig { grid, block: [DECODE_WAVES * 64, 1, 1], dynamic_lds_bytes: abi::decode_lds_bytes(d as u32) };
    // SAFETY: q holds `[batch, rows, heads, d]` through 16-byte aligned strides; each
    // sequence's table row covers its context (checked above) and entries outside the cache are
    // not followed; the output and partials are sized for every row and split.
    unsafe { ops.launch(kernel, launch, &args)? };
    if splits > 1 {
        let items = ops.u32("work-items", out_rows * d / 8)?;
        let cargs =
            DecodeCombineArgs { partial_o: po, partial_lse: pl, o: o_ptr, out_rows: out_rows as u32, d: d as u32, splits: splits as u32 };
        let launch = LaunchConfig {
            grid: [items.div_ceil(ATTENTION_SMALL_BLOCK), 1, 1],
            block: [ATTENTION_SMALL_BLOCK, 1, 1],
            dynamic_lds_bytes: 0,
        };
        // SAFETY: the partials were written by the launch above (same stream); `out` holds
        // every row.
        unsafe { ops.launch(combine, launch, &cargs)? };
    }
    cache.settle(flag)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fill_the_gpu_only_when_the_batch_does_not() {
        // 32 sequences x 8 kv heads: 256 workgroups, no split.
        assert_eq!(choose_splits(304, 256, 4096, None), (1, 4096));
        // One sequence of 8 kv heads: 38 splits would fill 304 CUs; 32 give each 128 keys, a
        // step per wave.
        assert_eq!(choose_splits(304, 8, 4096, None), (32, 128));
        let (s, k) = choose_splits(304, 8, 3000, None);
        assert!(s * 8 >= 180 && k % 32 == 0 && s * k >= 3000 && (s - 1) * k < 3000, "{s} x {k}");
        assert_eq!(choose_splits(304, 1, 100, None), (1, 128));
        // Forced: 100 keys in 3 splits of 64 (multiples of 32) make 2.
        assert_eq!(choose_splits(304, 1, 100, Some(3)), (2, 64));
        // A GPU of 80 CUs (MI308X): 10 splits give each of its CUs a workgroup; 40 workgroups
        // already fill half of it.
        assert_eq!(choose_splits(80, 8, 4096, None), (10, 416));
        assert_eq!(choose_splits(80, 40, 4096, None), (1, 4096));
    }

    #[test]
    fn the_allocator_hands_out_and_takes_back_pages() {
        let mut a = PageAllocator::new(4);
        let mut seq = Vec::new();
        a.grow(&mut seq, 33, 16).unwrap();
        assert_eq!(seq, vec![0, 1, 2]);
        assert!(a.alloc(2).is_err());
        assert!(a.free(&[1, 1]).is_err());
        a.free(&seq).unwrap();
        assert!(a.free(&[0]).is_err());
        assert_eq!(a.available(), 4);
    }
}
