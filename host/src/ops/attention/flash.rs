//! The flash forward: validation, layouts, launch.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::elementwise::fill;
use crate::ops::layout::contiguous_aligned;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::attention::{
    self as abi, FLASH_BLOCK_K, FLASH_BLOCK_Q, FLASH_STREAM_SLOTS, FLASH_WAVES, FlashArgs, UNBOUNDED, flash_flags, flash_stream_wave_floats,
};
use ferrocm_device::abi::{DevPtr, Kernel};

const OP: &str = "attention::flash";

/// Lengths, offsets and windows stay below this, so the kernels' key arithmetic fits an i32.
const MAX_LEN: usize = 1 << 30;

/// Flash workgroups a CU holds at once, as the stream plan counts its slots: two of 4 waves
/// at head dimensions up to 128 (up to 256 registers a lane), one at 256 (whose rounds of 304
/// are halves of rounds of 608, so the plan is as even for it).
const RESIDENT_PER_CU: usize = 2;
/// Runs a stream launch deals per slot. More than one: two co-resident workgroups do not
/// progress evenly (issue goes to the oldest wave first), so with one run per slot the first
/// to start ends well before the other, which then runs alone; with several, the next run
/// takes the freed slot. Modeled MI300X, bf16 batch 1, 32 heads, 4096 queries, d 128 / causal
/// d 128 / d 64 (`cargo xtask bench --filter attention_prefill`): 2 runs per slot 499.9 /
/// 265.3 / 306.6 us, 3: 497.3 / 263.1 / 305.1, 4: 488.1 / 266.0 / 300.4 (earlier kernels: 1
/// run 507.6 / - / 327.8, 8 runs 504.4 / - / 337.7, runs of 14 key blocks, where the set-up and
/// the partials start to show).
const RUNS_PER_SLOT: usize = 4;
/// The stream workspace's size at most: each run may leave two partials (at d 128, 17 KiB a
/// wave), so more runs, or larger heads, would take more; past this the runs get longer.
/// (The partials live briefly: a run's are read by a neighbour on its XCD as it finishes.)
const MAX_WORKSPACE_BYTES: usize = 256 << 20;
/// Stream when that leaves the busiest CU at most this share of the key blocks whole query
/// blocks per workgroup would give it.
const STREAM_BELOW: f64 = 0.9;
/// Key blocks a stream run takes at least, so that a run's set-up (Q, the first K and V
/// blocks) and its partial stay small next to its loop.
const MIN_STREAM_BLOCKS: usize = 8;
/// Workgroups a query block is split between at most (the last one merges the others'
/// partials one after another).
const MAX_CONTRIBUTORS: usize = 8;

/// Everything besides Q, K and V. `Default` is plain non-causal attention over every key, scaled
/// by `1/sqrt(head_dim)`, on batched `[batch, seq, heads, head_dim]` tensors.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlashOptions<'a> {
    /// Query row `i` attends keys `j <= i + (lk - lq)` only (bottom-right aligned).
    pub causal: bool,
    /// The score scale; `None` is `1 / sqrt(head_dim)`. Must be finite and positive.
    pub scale: Option<f32>,
    /// Sliding window: keys at most this far before the diagonal (`j >= i + off - left`).
    pub window_left: Option<usize>,
    /// Keys at most this far after the diagonal (`j <= i + off + right`; causal caps it at 0).
    pub window_right: Option<usize>,
    /// Valid keys per sequence (key padding, e.g. a BERT batch padded to one length): sequence
    /// `b` attends only its first `key_lengths[b]` keys. One entry per sequence, each at most
    /// that sequence's key rows.
    pub key_lengths: Option<&'a [usize]>,
    /// Packed variable-length batches (flash-attention's varlen API): Q is `[total_q, heads,
    /// head_dim]` and sequence `b` is its rows `cu_seqlens_q[b] .. cu_seqlens_q[b + 1]`
    /// (`batch + 1` non-decreasing offsets within the tensor). Given together with
    /// `cu_seqlens_k`.
    pub cu_seqlens_q: Option<&'a [usize]>,
    /// The key rows of each sequence in K and V (`[total_k, heads_kv, head_dim]`), likewise.
    pub cu_seqlens_k: Option<&'a [usize]>,
}

/// Attention forward: `softmax(scale * Q K^T + mask) V` (see the [module](super) notes).
///
/// Batched: `q` is `[batch, seq_q, heads_q, head_dim]`, `k` and `v` `[batch, seq_k, heads_kv,
/// head_dim]`, any strides with a contiguous last dimension (BSHD tensors, and BHSD ones viewed
/// with `transpose(1, 2)`, are read in place); with `cu_seqlens_*`, packed `[total, heads,
/// head_dim]`. `heads_q` must be a multiple of `heads_kv` (MHA, GQA, MQA: query head `h` reads
/// key/value head `h / (heads_q / heads_kv)`). The output has Q's shape, contiguous, in Q's dtype.
///
/// Batched attention without key lengths may be dealt out as runs of key blocks
/// ([`stream_run_for`]), planned for the device's compute units: a query block split
/// between workgroups is merged from their partials (in a fixed order: the result does not
/// depend on timing, but its last bits depend on the plan), through a workspace of up to two
/// partials per workgroup.
///
/// # Errors
/// [`Error::DTypeMismatch`] (not f16/bf16, or mixed), [`Error::DeviceMismatch`],
/// [`Error::Shape`] (ranks, head dims that differ, heads not divisible, batch or key-length
/// counts), [`Error::InvalidArgument`] (an empty batch, offsets that decrease or pass the
/// tensor, a key length past its sequence, a bad scale, one of the two offset tables alone),
/// [`Error::Unsupported`] (a head dimension other than 32, 64, 96, 128, 256, or sizes past the
/// kernels' 32-bit limits); allocation and launch errors.
pub fn flash(q: &Tensor, k: &Tensor, v: &Tensor, opts: &FlashOptions<'_>) -> Result<Tensor> {
    Ok(run(q, k, v, opts, false)?.0)
}

/// [`flash`], and the log-sum-exp of every query row (f32, natural log: `ln sum_j exp(scale
/// s_ij)` over the allowed keys, `-inf` for a row without any): `[batch, heads_q, seq_q]`, or
/// `[heads_q, total_q]` for packed batches (rows outside every sequence: `-inf`, and zeros in
/// the output).
///
/// # Errors
/// As [`flash`].
pub fn flash_with_lse(q: &Tensor, k: &Tensor, v: &Tensor, opts: &FlashOptions<'_>) -> Result<(Tensor, Tensor)> {
    let (o, lse) = run(q, k, v, opts, true)?;
    Ok((o, lse.expect("requested")))
}

/// Key blocks per workgroup when a flash launch whose one-block kernel would run `workgroups`
/// workgroups (query blocks, or pairs of them for causal and windowed attention), over `total`
/// key blocks of all its query blocks, the longest `longest`, is dealt out as runs of key
/// blocks on a GPU of `cus` compute units (the `flash_stream_*` kernels); `None` when whole
/// query blocks per workgroup do as well.
///
/// Runs are an even share of all key blocks over four runs per slot (`cus` x 2 resident
/// workgroups; fewer runs, down to one a slot, where their workspace, two partials of head
/// dimension `head_dim` a run, would pass 256 MiB), at least 8 blocks and at least an eighth of
/// the longest query block's. The launch streams when that cuts the key blocks its busiest CU
/// works through by 10% or more, counting a CU's workgroups two at a time (a CU with one
/// workgroup is no faster than with two: the matrix cores need both's waves). So it streams
/// when the last of several rounds is partly empty (batch 1, 32 heads, 4096 queries: 1024
/// blocks, or 512 causal pairs, for 608 slots) or a single round is and runs can split its
/// blocks, and not when runs of 8 would only gather short blocks onto fewer CUs.
pub fn stream_run_for(cus: usize, workgroups: usize, total: usize, longest: usize, head_dim: usize) -> Option<usize> {
    let (cus, workgroups) = (cus.max(1), workgroups.max(1));
    let slots = cus * RESIDENT_PER_CU;
    // Whole runs per slot (an uneven count leaves the last round's workgroups unevenly spread:
    // 1873 runs for 608 slots, 557 us at d 128 against 497 for 1821).
    let per_slot = (MAX_WORKSPACE_BYTES / (slots * stream_slot_bytes(head_dim))).clamp(1, RUNS_PER_SLOT);
    let per = total.div_ceil(slots * per_slot).max(MIN_STREAM_BLOCKS).max(longest.div_ceil(MAX_CONTRIBUTORS)).max(1);
    // Key blocks the busiest CU works through, its workgroups taken two at a time.
    let busiest = |n: usize, each: f64| n.div_ceil(cus).max(RESIDENT_PER_CU) as f64 * each / RESIDENT_PER_CU as f64;
    let whole = busiest(workgroups, total as f64 / workgroups as f64);
    let stream = busiest(total.div_ceil(per), per as f64);
    (stream < STREAM_BELOW * whole).then_some(per)
}

/// Workspace bytes of one stream workgroup at head dimension `head_dim`: its slots' partials.
fn stream_slot_bytes(head_dim: usize) -> usize {
    (FLASH_STREAM_SLOTS * FLASH_WAVES * flash_stream_wave_floats(head_dim as u32)) as usize * 4
}

/// The key blocks query block `x` of a sequence of `lq` query and `lk` key rows attends under
/// the window sides `left` and `right` ([`UNBOUNDED`] or keys): `kb0..kb1`, the union of its
/// rows' ranges, as the kernels work it out.
fn key_blocks(x: usize, lq: usize, lk: usize, left: i32, right: i32) -> (usize, usize) {
    let (off, bq, bk) = (lk as i64 - lq as i64, FLASH_BLOCK_Q as i64, FLASH_BLOCK_K as i64);
    let lo = |i: i64| if left == UNBOUNDED { 0 } else { (i + off - left as i64).max(0) };
    let hi = |i: i64| if right == UNBOUNDED { lk as i64 - 1 } else { (i + off + right as i64).min(lk as i64 - 1) };
    let q0 = x as i64 * bq;
    let (lo_wg, hi_wg) = (lo(q0), hi((q0 + bq - 1).min(lq as i64 - 1)));
    let kb0 = lo_wg / bk;
    let kb1 = if hi_wg >= lo_wg { hi_wg / bk + 1 } else { kb0 };
    (kb0 as usize, kb1 as usize)
}

/// The kernel for `dtype` and head dimension `d`; `stream`: the `flash_stream_*` one.
fn kernel_for(dtype: DType, d: usize, stream: bool) -> Result<Kernel<FlashArgs>> {
    let table = match (dtype, stream) {
        (DType::Bf16, false) => [abi::FLASH_BF16_D32, abi::FLASH_BF16_D64, abi::FLASH_BF16_D96, abi::FLASH_BF16_D128, abi::FLASH_BF16_D256],
        (DType::F16, false) => [abi::FLASH_F16_D32, abi::FLASH_F16_D64, abi::FLASH_F16_D96, abi::FLASH_F16_D128, abi::FLASH_F16_D256],
        (DType::Bf16, true) => [
            abi::FLASH_STREAM_BF16_D32,
            abi::FLASH_STREAM_BF16_D64,
            abi::FLASH_STREAM_BF16_D96,
            abi::FLASH_STREAM_BF16_D128,
            abi::FLASH_STREAM_BF16_D256,
        ],
        (DType::F16, true) => [
            abi::FLASH_STREAM_F16_D32,
            abi::FLASH_STREAM_F16_D64,
            abi::FLASH_STREAM_F16_D96,
            abi::FLASH_STREAM_F16_D128,
            abi::FLASH_STREAM_F16_D256,
        ],
        (d, _) => return Err(Error::DTypeMismatch { op: OP, what: "q", got: d, expected: "f16 or bf16".into() }),
    };
    match abi::HEAD_DIMS.iter().position(|&h| h as usize == d) {
        Some(i) => Ok(table[i]),
        None => Err(Error::Unsupported { op: OP, what: format!("head dimension {d} (the kernels take {:?})", abi::HEAD_DIMS) }),
    }
}

/// An operand as the kernel reads it: element strides of (batch, row, head), last dimension
/// contiguous, 16-byte aligned rows.
struct Operand {
    t: Tensor,
    batch: usize,
    row: usize,
    head: usize,
}

/// `t` (`[batch, rows, heads, d]`, or `[rows, heads, d]` when `packed`) as the kernel reads it:
/// in place when its last dimension is contiguous, its base and strides 16-byte aligned and a
/// block of `block` rows spans under 4 GiB; else a contiguous copy.
fn operand(t: &Tensor, packed: bool, block: usize, what: &'static str) -> Result<Operand> {
    let view = |t: &Tensor| {
        let s = t.strides();
        let (batch, row, head, last) = if packed { (0, s[0], s[1], s[2]) } else { (s[0], s[1], s[2], s[3]) };
        let d = t.shape()[t.rank() - 1];
        let eb = t.dtype().size();
        let rows = t.shape()[t.rank() - 3];
        let aligned = t.addr() % 16 == 0 && [batch, row, head].iter().all(|&s| (s * eb) % 16 == 0);
        let span = (block.min(rows).max(1) - 1) as u128 * (row * eb) as u128 + (d * eb) as u128;
        (last == 1 || d == 1) && aligned && span <= u32::MAX as u128
    };
    let t = if view(t) { t.clone() } else { contiguous_aligned(t)? };
    if !view(&t) {
        return Err(Error::Unsupported {
            op: OP,
            what: format!("{what}: rows of {} bytes (a block of them spans over 4 GiB)", t.strides()[t.rank() - 3] * 2),
        });
    }
    let s = t.strides();
    let (batch, row, head) = if packed { (0, s[0], s[1]) } else { (s[0], s[1], s[2]) };
    Ok(Operand { t, batch, row, head })
}

/// Checks `cu` (`batch + 1` offsets into `total` rows) and returns the longest sequence.
fn offsets(cu: &[usize], batch: usize, total: usize, what: &str) -> Result<usize> {
    if cu.len() != batch + 1 {
        return Err(Error::Shape { op: OP, message: format!("{what} has {} entries, the batch needs {}", cu.len(), batch + 1) });
    }
    if let Some(w) = cu.windows(2).find(|w| w[1] < w[0]) {
        return Err(Error::InvalidArgument { op: OP, message: format!("{what} decreases ({} then {})", w[0], w[1]) });
    }
    let last = *cu.last().unwrap();
    if last > total {
        return Err(Error::InvalidArgument { op: OP, message: format!("{what} ends at row {last}, past the tensor's {total} rows") });
    }
    let longest = cu.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    Ok(longest)
}

/// A size as the kernels take it (below [`MAX_LEN`]).
fn len32(what: &str, v: usize) -> Result<u32> {
    if v >= MAX_LEN {
        return Err(Error::Unsupported { op: OP, what: format!("{what} = {v} (at most 2^30)") });
    }
    Ok(v as u32)
}

fn run(q: &Tensor, k: &Tensor, v: &Tensor, opts: &FlashOptions<'_>, want_lse: bool) -> Result<(Tensor, Option<Tensor>)> {
    let dtype = q.dtype();
    if !matches!(dtype, DType::F16 | DType::Bf16) {
        return Err(Error::DTypeMismatch { op: OP, what: "q", got: dtype, expected: "f16 or bf16".into() });
    }
    for (what, t) in [("k", k), ("v", v)] {
        if t.dtype() != dtype {
            return Err(Error::DTypeMismatch { op: OP, what, got: t.dtype(), expected: dtype.to_string() });
        }
    }
    let dev = q.device();
    let mut ops = Operands::new(OP, dev);
    ops.check_device("k", k)?;
    ops.check_device("v", v)?;

    let packed = match (opts.cu_seqlens_q, opts.cu_seqlens_k) {
        (Some(_), Some(_)) => true,
        (None, None) => false,
        _ => return Err(Error::InvalidArgument { op: OP, message: "cu_seqlens_q and cu_seqlens_k go together".into() }),
    };
    let rank = if packed { 3 } else { 4 };
    for (what, t) in [("q", q), ("k", k), ("v", v)] {
        if t.rank() != rank {
            let layout = if packed { "[total, heads, head_dim] (packed)" } else { "[batch, seq, heads, head_dim]" };
            return Err(Error::Shape { op: OP, message: format!("{what} is {:?}, expected {layout}", t.shape()) });
        }
    }
    if k.shape() != v.shape() {
        return Err(Error::Shape { op: OP, message: format!("k is {:?} but v is {:?}", k.shape(), v.shape()) });
    }
    let (qs, ks) = (q.shape(), k.shape());
    let (hq, hk, d) = (qs[rank - 2], ks[rank - 2], qs[rank - 1]);
    if ks[rank - 1] != d {
        return Err(Error::Shape { op: OP, message: format!("head dimensions differ: q has {d}, k and v have {}", ks[rank - 1]) });
    }
    if hk == 0 || hq % hk != 0 {
        return Err(Error::Shape { op: OP, message: format!("{hq} query heads are not a multiple of {hk} key/value heads") });
    }
    let (batch, seq_q, seq_k) = if packed { (opts.cu_seqlens_q.unwrap().len().saturating_sub(1), 0, 0) } else { (qs[0], qs[1], ks[1]) };
    if !packed && ks[0] != batch {
        return Err(Error::Shape { op: OP, message: format!("q has batch {batch}, k and v {}", ks[0]) });
    }
    if batch == 0 {
        return Err(Error::InvalidArgument { op: OP, message: "empty batch (no sequences)".into() });
    }
    let (one_block, stream_kernel) = (kernel_for(dtype, d, false)?, kernel_for(dtype, d, true)?);
    let scale = opts.scale.unwrap_or(1.0 / (d as f32).sqrt());
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::InvalidArgument { op: OP, message: format!("scale {scale} must be finite and positive") });
    }

    // Sequence lengths (per sequence, for the key-length check) and the longest query run.
    let (lq_max, key_rows): (usize, Vec<usize>) = if packed {
        let (cq, ck) = (opts.cu_seqlens_q.unwrap(), opts.cu_seqlens_k.unwrap());
        let lq = offsets(cq, batch, qs[0], "cu_seqlens_q")?;
        offsets(ck, batch, ks[0], "cu_seqlens_k")?;
        (lq, ck.windows(2).map(|w| w[1] - w[0]).collect())
    } else {
        (seq_q, vec![seq_k; batch])
    };
    len32("query rows", if packed { qs[0] } else { seq_q })?;
    len32("key rows", if packed { ks[0] } else { seq_k })?;
    if let Some(kl) = opts.key_lengths {
        if kl.len() != batch {
            return Err(Error::Shape { op: OP, message: format!("{} key lengths for {batch} sequences", kl.len()) });
        }
        if let Some((b, (&l, &n))) = kl.iter().zip(&key_rows).enumerate().find(|(_, (l, n))| l > n) {
            return Err(Error::InvalidArgument { op: OP, message: format!("key length {l} of sequence {b} is past its {n} keys") });
        }
    }

    // Output (and LSE): rows outside every packed sequence are never written by the kernel.
    let out_shape = qs.to_vec();
    let covered = !packed || (opts.cu_seqlens_q.unwrap()[0] == 0 && *opts.cu_seqlens_q.unwrap().last().unwrap() == qs[0]);
    let out = if covered { Tensor::empty(dev, &out_shape, dtype)? } else { Tensor::zeros(dev, &out_shape, dtype)? };
    let lse = if want_lse {
        let t = Tensor::empty(dev, &if packed { vec![hq, qs[0]] } else { vec![batch, hq, seq_q] }, DType::F32)?;
        if !covered {
            fill(&t, f64::NEG_INFINITY)?;
        }
        Some(t)
    } else {
        None
    };
    if lq_max == 0 || out.numel() == 0 {
        return Ok((out, lse));
    }

    let bq = FLASH_BLOCK_Q as usize;
    let (pq, pk, pv) =
        (operand(q, packed, bq, "q")?, operand(k, packed, FLASH_BLOCK_K as usize, "k")?, operand(v, packed, FLASH_BLOCK_K as usize, "v")?);
    // Small host tables go up as u32 tensors; `ops` keeps them alive for the launch.
    let table = |ops: &mut Operands<'_>, what: &'static str, vals: Option<&[usize]>| -> Result<(DevPtr<u32>, Option<Tensor>)> {
        match vals {
            None => Ok((DevPtr::NULL, None)),
            Some(vals) => {
                let v: Vec<u32> = vals.iter().map(|&x| len32(what, x)).collect::<Result<_>>()?;
                let t = Tensor::from_slice(dev, &v, &[v.len()])?;
                Ok((ops.input::<u32>(what, &t)?, Some(t)))
            }
        }
    };
    let (cu_q, _tq) = table(&mut ops, "cu_seqlens_q", opts.cu_seqlens_q)?;
    let (cu_k, _tk) = table(&mut ops, "cu_seqlens_k", opts.cu_seqlens_k)?;
    let (key_lens, _tl) = table(&mut ops, "key_lengths", opts.key_lengths)?;
    let window = |w: Option<usize>| w.map_or(UNBOUNDED, |w| w.min(MAX_LEN) as i32);
    let right = if opts.causal { Some(0) } else { opts.window_right };
    // With a window the work of a query block grows (or shrinks) along the sequence: pair block
    // x with block n - 1 - x so that every workgroup does the same.
    let paired = right.is_some() || opts.window_left.is_some();
    let lse_ptr = match &lse {
        Some(t) => ops.output::<f32>("lse", t)?,
        None => DevPtr::NULL,
    };
    let strides = [pq.row, pq.head, pk.row, pk.head, pv.row, pv.head].map(|s| ops.u32("a row or head stride", s));
    let [qr, qh, kr, kh, vr, vh] = strides;
    let mut args = FlashArgs {
        q: ops.input_bytes("q", &pq.t)?,
        k: ops.input_bytes("k", &pk.t)?,
        v: ops.input_bytes("v", &pv.t)?,
        o: ops.output_bytes("out", &out)?,
        lse: lse_ptr,
        workspace: DevPtr::NULL,
        stream_table: DevPtr::NULL,
        counters: DevPtr::NULL,
        cu_seqlens_q: cu_q,
        cu_seqlens_k: cu_k,
        key_lens,
        q_batch_stride: pq.batch as u64,
        k_batch_stride: pk.batch as u64,
        v_batch_stride: pv.batch as u64,
        q_row_stride: qr?,
        q_head_stride: qh?,
        k_row_stride: kr?,
        k_head_stride: kh?,
        v_row_stride: vr?,
        v_head_stride: vh?,
        heads: hq as u32,
        lse_rows: len32("query rows", if packed { qs[0] } else { seq_q })?,
        seq_q: seq_q as u32,
        seq_k: seq_k as u32,
        group: (hq / hk) as u32,
        scale_log2: scale * std::f32::consts::LOG2_E,
        window_left: window(opts.window_left),
        window_right: window(right),
        flags: if want_lse { flash_flags::LSE } else { 0 } | if paired { flash_flags::PAIRED } else { 0 },
        sk_per: 0,
        sk_total: 0,
    };
    let blocks = lq_max.div_ceil(bq);
    let lds = abi::flash_lds_bytes(d as u32);
    // Batched attention without key lengths gives every (batch entry, head) the same query
    // blocks over the same key blocks: they may be dealt out as runs of key blocks
    // ([`stream_run_for`]), when every block has keys (the one-block kernel writes the zeros of
    // those without). Planned for the device's compute units on every backend (the split
    // changes the sums' order).
    let plan = (!packed && opts.key_lengths.is_none()).then(|| {
        let ranges: Vec<(usize, usize)> = (0..blocks).map(|x| key_blocks(x, seq_q, seq_k, args.window_left, args.window_right)).collect();
        let total = batch * hq * ranges.iter().map(|&(a, b)| b - a).sum::<usize>();
        let longest = ranges.iter().map(|&(a, b)| b - a).max().unwrap_or(0);
        let workgroups = batch * hq * if paired { blocks.div_ceil(2) } else { blocks };
        let streamable = ranges.iter().all(|&(a, b)| b > a) && total < 1 << 31;
        let per = if streamable { stream_run_for(dev.info().compute_units as usize, workgroups, total, longest, d) } else { None };
        per.map(|per| (per, ranges, total))
    });
    if let Some(Some((per, ranges, total))) = plan {
        // Where each query block's key blocks start in one head's run, then where its keys start.
        let mut table = Vec::with_capacity(2 * blocks + 1);
        table.push(0u32);
        for &(a, b) in &ranges {
            table.push(table.last().unwrap() + (b - a) as u32);
        }
        table.extend(ranges.iter().map(|&(a, _)| a as u32));
        let table = Tensor::from_slice(dev, &table, &[table.len()])?;
        let workgroups = total.div_ceil(per);
        let workspace = dev.alloc::<f32>(workgroups * stream_slot_bytes(d) / 4)?;
        let counters = dev.zeros::<u32>(batch * hq * blocks * FLASH_WAVES as usize)?;
        args.stream_table = ops.input::<u32>("stream table", &table)?;
        args.workspace = ops.buffer("stream partials", &workspace)?;
        args.counters = ops.buffer("stream counters", &counters)?;
        args.sk_per = ops.u32("key blocks per workgroup", per)?;
        args.sk_total = ops.u32("key blocks of every query block", total)?;
        args.flags &= !flash_flags::PAIRED;
        let launch =
            LaunchConfig { grid: [ops.u32("workgroups", workgroups)?, 1, 1], block: [FLASH_WAVES * 64, 1, 1], dynamic_lds_bytes: lds };
        // SAFETY: as below for Q, K, V, O and LSE (batched); the table has 2 n + 1 entries for
        // the n query blocks, every block with keys; the workspace holds every workgroup's
        // slots and the counters (zeroed on this stream before the launch) one u32 per query
        // block and wave.
        unsafe { ops.launch(stream_kernel, launch, &args)? };
        return Ok((out, lse));
    }
    let grid =
        [ops.u32("query blocks", if paired { blocks.div_ceil(2) } else { blocks })?, ops.u32("heads", hq)?, ops.u32("batch", batch)?];
    let launch = LaunchConfig { grid, block: [FLASH_WAVES * 64, 1, 1], dynamic_lds_bytes: lds };
    // SAFETY: Q, K and V hold every row of every sequence the offsets or batch shapes name
    // (checked above), read through 16-byte aligned strides with blocks under 4 GiB; O and LSE
    // are fresh tensors of the shapes the kernel writes; the tables have `batch (+ 1)` entries.
    unsafe { ops.launch(one_block, launch, &args)? };
    Ok((out, lse))
}
