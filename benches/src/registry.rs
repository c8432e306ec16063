//! Every op and benchmark shape. Adding an op is one [`Case`] in [`registry`] (and, for
//! `--shape` on the command line, one arm in [`case_for`]).

use crate::data::Normal;
use ferrocm::ops::attention::{self, BlockTable, DecodeOptions, FlashOptions, PagedKvCache};
use ferrocm::ops::gemm::{GemmConfig, GemmOptions, Mfma};
use ferrocm::ops::{basic, elementwise, gemm, gemm_fp8, movement, norm, qmatmul, reduce, rope, softmax};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Device, Result, Tensor};
use ferrocm_emu::model::machine::MathKind;

/// One call of an op on prepared inputs.
pub type OpCall = Box<dyn FnMut() -> Result<()>>;
/// Allocates and fills an op's inputs on a device (normally distributed, from a seed) and
/// returns the call.
pub type Prepare = Box<dyn Fn(&Device, u64) -> Result<OpCall> + Send + Sync>;

/// An op at one shape, ready to be prepared on a device.
pub struct Case {
    /// Op name (the host function's, e.g. `gemm`).
    pub op: &'static str,
    /// Shape and dtype, e.g. `bf16 4096x4096x4096`.
    pub shape: String,
    /// Useful floating-point operations (0 for pure data movement).
    pub flops: f64,
    /// Bytes the op must move to or from HBM at least: every input read once, every output
    /// written once.
    pub min_bytes: u64,
    /// What the arithmetic runs on (its compute roof).
    pub math: MathKind,
    /// Workgroups emulated per launch when modeling (spread over the grid); enough to cover the
    /// kind of tiles the grid has, few enough to emulate in seconds.
    pub sample_workgroups: u64,
    /// Allocates and fills the inputs (normally distributed, from `seed`) and returns the op call.
    pub prepare: Prepare,
}

impl Case {
    /// `op shape`, the case's name in reports.
    pub fn name(&self) -> String {
        format!("{} {}", self.op, self.shape)
    }
}

/// Elements of the streaming benchmarks: 128 MiB of u32/f32 per buffer (256 MiB for fill), so
/// the working set of each is at least the 256 MiB Infinity Cache (GFX942.md); cheap to emulate,
/// since only a sample of the workgroups runs.
const STREAM_ELEMENTS: usize = 32 << 20;

/// Every benchmark, in report order.
pub fn registry() -> Vec<Case> {
    vec![
        fill_u32(STREAM_ELEMENTS * 2),
        copy_u32(STREAM_ELEMENTS),
        saxpy(STREAM_ELEMENTS),
        // The issue-5 GEMM shapes: bf16 4096^3, and the fp8 block-scaled DeepSeek shapes.
        gemm_dense(DType::Bf16, 4096, 4096, 4096, None),
        gemm_dense(DType::Bf16, 4096, 4096, 4096, Some(Mfma::Tile16)),
        gemm_dense(DType::Fp8E4M3Fnuz, 4096, 4096, 4096, None),
        gemm_dense(DType::F16, 1024, 1024, 1024, None),
        gemm_fp8_blockscaled(4096, 7168, 2048),
        gemm_fp8_blockscaled(4096, 2112, 7168),
        // Decode-time expert GEMM: the small-M block with split-K must stream the weights.
        gemm_fp8_blockscaled(8, 4096, 7168),
        // Decode-time GEMV: the tall-skinny tile with split-K must stream the weights.
        gemm_dense(DType::Bf16, 1, 4096, 4096, None),
        // Quantized matmul (issue 17): decode GEMVs stream the quantized weights once (M = 8
        // should cost about what M = 1 does), and the prefill GEMM.
        qmatmul_case(QuantFormat::Q4K, 1, 4096, 4096),
        qmatmul_case(QuantFormat::Q4K, 8, 4096, 4096),
        qmatmul_case(QuantFormat::Q4K, 1, 14336, 4096),
        qmatmul_case(QuantFormat::Q4K, 8, 14336, 4096),
        qmatmul_case(QuantFormat::Q4_1, 1, 4096, 4096),
        qmatmul_case(QuantFormat::Q4_1, 8, 4096, 4096),
        qmatmul_case(QuantFormat::Q4_1, 1, 14336, 4096),
        qmatmul_case(QuantFormat::Q4_1, 8, 14336, 4096),
        qmatmul_case(QuantFormat::Q4K, 512, 4096, 4096),
        // SmolLM2's gate/up projection in decode, plain and with the RMSNorm of its input
        // inside (what the model runs): what the norm adds to the launch.
        qmatmul_case(QuantFormat::Q4_1, 1, 3072, 576),
        qmatmul_norm_case(QuantFormat::Q4_1, 1, 3072, 576),
        // Its QKV projection as the model runs it in decode: the norm inside, the rotary
        // embedding and the KV-cache write in the epilogue.
        qkv_rope_case(QuantFormat::Q4_1, 1, 576, 9, 3, 64, true),
        // Its down projection as the model runs it in decode: the residual stream added in the
        // epilogue.
        qmatmul_residual_case(QuantFormat::Q4_1, 1, 576, 1536),
        // The memory-bound family (issue 4) at 16M elements.
        membound("silu", 4096, 4096, 2, |x| elementwise::silu(x).map(drop)),
        membound("add", 4096, 4096, 3, |x| elementwise::add(x, x).map(drop)),
        membound("cast_f32", 4096, 4096, 3, |x| elementwise::cast(x, DType::F32).map(drop)),
        membound("transpose_last2", 4096, 4096, 2, |x| movement::transpose_last2(x).map(drop)),
        membound("sum_rows", 4096, 4096, 1, |x| reduce::sum(x, Some(1)).map(drop)),
        membound("softmax", 4096, 4096, 2, |x| softmax::softmax(x).map(drop)),
        membound("rms_norm", 4096, 4096, 2, |x| norm::rms_norm(x, None, 1e-6).map(drop)),
        membound("rope", 16384, 1024, 2, |x| {
            let heads = x.reshape(&[4, 4096, 8, 128])?;
            rope::rope(&heads, &rope::RopeOptions::default()).map(drop)
        }),
        // Attention (issue 16): the prefill forward at Llama's head dim, causal and not, and at
        // SmolLM2's.
        attention_prefill(1, 32, 4096, 128, false),
        attention_prefill(1, 32, 4096, 128, true),
        attention_prefill(1, 32, 4096, 64, false),
        // Decode over a paged cache: Llama-style GQA 4:1, 32 sequences of 4096 tokens.
        attention_decode(32, 32, 8, 4096, 128, 16),
    ]
}

/// `attention::decode` of one new query row per sequence over a bf16 paged KV cache of
/// `context` tokens per sequence (pages of `page_size`, handed out in order). Its figure of
/// merit is bandwidth: the minimum bytes are the cached K and V (read once) plus Q and O.
pub fn attention_decode(batch: usize, heads: usize, kv_heads: usize, context: usize, d: usize, page_size: usize) -> Case {
    let kv_bytes = 2 * 2 * (batch * kv_heads * context * d) as u64;
    Case {
        op: "attention_decode",
        shape: format!("bf16 b{batch} h{heads} kv{kv_heads} c{context} d{d} p{page_size}"),
        flops: 4.0 * (batch * heads * context * d) as f64,
        min_bytes: kv_bytes + 2 * 2 * (batch * heads * d) as u64,
        math: MathKind::F16,
        // Every workgroup streams the same number of keys.
        sample_workgroups: 8,
        prepare: Box::new(move |dev, seed| {
            let per_seq = context.div_ceil(page_size);
            let cache = PagedKvCache::new(dev, 1, batch * per_seq, page_size, kv_heads, d, DType::Bf16)?;
            let mut g = Normal::new(seed);
            let (k, v) = cache.layer(0)?;
            for t in [k, v] {
                t.copy_from(&g.tensor(dev, DType::Bf16, t.shape(), 1.0)?)?;
            }
            let pages: Vec<Vec<u32>> = (0..batch).map(|b| (0..per_seq).map(|i| (b * per_seq + i) as u32).collect()).collect();
            let table = BlockTable::new(dev, &pages, &vec![context; batch])?;
            let q = g.tensor(dev, DType::Bf16, &[batch, 1, heads, d], 1.0)?;
            Ok(boxed(move || attention::decode(&q, &cache, 0, &table, &DecodeOptions::default()).map(drop)))
        }),
    }
}

/// `attention::flash` on bf16 `[batch, seq, heads, d]` Q, K and V (MHA), non-causal or causal.
/// FLOPs by the usual convention: `4 seq^2 d` per head, half of it when causal.
pub fn attention_prefill(batch: usize, heads: usize, seq: usize, d: usize, causal: bool) -> Case {
    let full = 4.0 * (batch * heads) as f64 * (seq * seq * d) as f64;
    Case {
        op: "attention_prefill",
        shape: format!("bf16 b{batch} h{heads} s{seq} d{d}{}", if causal { " causal" } else { "" }),
        flops: if causal { full / 2.0 } else { full },
        // Q, K and V read once, O written once.
        min_bytes: 4 * 2 * (batch * seq * heads * d) as u64,
        math: MathKind::F16,
        // Causal workgroups differ in their key blocks: sample more of them.
        sample_workgroups: if causal { 16 } else { 8 },
        prepare: Box::new(move |dev, seed| {
            let mut g = Normal::new(seed);
            let shape = [batch, seq, heads, d];
            let (q, k, v) = (
                g.tensor(dev, DType::Bf16, &shape, 1.0)?,
                g.tensor(dev, DType::Bf16, &shape, 1.0)?,
                g.tensor(dev, DType::Bf16, &shape, 1.0)?,
            );
            Ok(boxed(move || attention::flash(&q, &k, &v, &FlashOptions { causal, ..Default::default() }).map(drop)))
        }),
    }
}

/// A memory-bound op on one bf16 `[rows, cols]` input whose minimum traffic is `passes` times
/// the input's bytes (e.g. 2 for read once + write once; `cast_f32` counts its f32 output as 2).
pub fn membound(op: &'static str, rows: usize, cols: usize, passes: u64, f: fn(&Tensor) -> Result<()>) -> Case {
    Case {
        op,
        shape: format!("bf16 {rows}x{cols}"),
        flops: 0.0,
        min_bytes: passes * 2 * (rows * cols) as u64,
        math: MathKind::Vector,
        sample_workgroups: 16,
        prepare: Box::new(move |dev, seed| {
            let x = Normal::new(seed).tensor(dev, DType::Bf16, &[rows, cols], 1.0)?;
            Ok(boxed(move || f(&x)))
        }),
    }
}

/// The case for `op` at a shape given on the command line: `N` for the streaming ops,
/// `[dtype] MxNxK [16x16|32x32]` for `gemm` (dtype bf16, f16, f32 or fp8 (E4M3FNUZ); default
/// bf16; the last word forces that MFMA shape instead of the chooser's), `MxNxK` for
/// `gemm_fp8_blockscaled`.
///
/// # Errors
/// A message naming what did not parse or which op is unknown.
pub fn case_for(op: &str, shape: &str) -> std::result::Result<Case, String> {
    let words: Vec<&str> = shape.split_whitespace().collect();
    let dims = |s: &str| -> std::result::Result<Vec<usize>, String> {
        s.split('x').map(|d| d.parse::<usize>().map_err(|_| format!("{d:?} in {s:?} is not a size"))).collect()
    };
    let mnk = |s: &str| -> std::result::Result<(usize, usize, usize), String> {
        match dims(s)?[..] {
            [m, n, k] => Ok((m, n, k)),
            _ => Err(format!("{s:?} is not MxNxK")),
        }
    };
    let n = || -> std::result::Result<usize, String> {
        let w = words.first().ok_or("a size is needed")?;
        w.parse().map_err(|_| format!("{w:?} is not an element count"))
    };
    match op {
        "fill_u32" => Ok(fill_u32(n()?)),
        "copy_u32" => Ok(copy_u32(n()?)),
        "saxpy" => Ok(saxpy(n()?)),
        "gemm" => {
            let mut words = &words[..];
            let mfma = match words.last() {
                Some(&"16x16") => Some(Mfma::Tile16),
                Some(&"32x32") => Some(Mfma::Tile32),
                _ => None,
            };
            if mfma.is_some() {
                words = &words[..words.len() - 1];
            }
            let (dtype, dims_word) = match *words {
                [d] => (DType::Bf16, d),
                [t, d] => (
                    match t {
                        "bf16" => DType::Bf16,
                        "f16" => DType::F16,
                        "f32" => DType::F32,
                        "fp8" => DType::Fp8E4M3Fnuz,
                        other => return Err(format!("gemm benchmarks take bf16, f16, f32 or fp8, not {other:?}")),
                    },
                    d,
                ),
                _ => return Err(format!("gemm shape {shape:?}: expected \"[dtype] MxNxK [16x16|32x32]\"")),
            };
            let (m, n, k) = mnk(dims_word)?;
            Ok(gemm_dense(dtype, m, n, k, mfma))
        }
        "gemm_fp8_blockscaled" => {
            let (m, n, k) = mnk(words.last().ok_or("a shape MxNxK is needed")?)?;
            Ok(gemm_fp8_blockscaled(m, n, k))
        }
        "attention_prefill" => {
            // "bf16 b1 h32 s4096 d128 [causal]"
            let (sizes, causal) = attention_words(&words, "attention_prefill", &["b", "h", "s", "d"])?;
            Ok(attention_prefill(sizes[0], sizes[1], sizes[2], sizes[3], causal))
        }
        "attention_decode" => {
            // "bf16 b32 h32 kv8 c4096 d128 p16"
            let (sizes, causal) = attention_words(&words, "attention_decode", &["b", "h", "kv", "c", "d", "p"])?;
            if causal {
                return Err("attention_decode shapes take no \"causal\" (decode rows see the whole context)".into());
            }
            Ok(attention_decode(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5]))
        }
        "qmatmul" => {
            let usage = || {
                format!(
                    "qmatmul shape {shape:?}: expected \"FORMAT MxNxK [norm] [residual | ropeH:KV] [gemv | gemm | one]\" (FORMAT Q4_0 ... Q6_K)"
                )
            };
            let (fmt, dims_word, rest) = match words[..] {
                [f, d, ref rest @ ..] => (f, d, rest),
                _ => return Err(usage()),
            };
            // A last word forces the kernel (else `choose_kernel` picks).
            let (kernel, rest) = match rest {
                [rest @ .., "gemv"] => (qmatmul::QKernel::Gemv, rest),
                [rest @ .., "gemm"] => (qmatmul::QKernel::Gemm, rest),
                [rest @ .., "one"] => (qmatmul::QKernel::GemvOne, rest),
                _ => (qmatmul::QKernel::Auto, rest),
            };
            let (norm, rest) = match rest {
                ["norm", rest @ ..] => (true, rest),
                _ => (false, rest),
            };
            let (residual, rest) = match rest {
                ["residual", rest @ ..] => (true, rest),
                _ => (false, rest),
            };
            let rope = match rest {
                [] => None,
                [r] if !residual => {
                    let (h, kv) = r.strip_prefix("rope").and_then(|r| r.split_once(':')).ok_or_else(usage)?;
                    Some((h.parse::<usize>().map_err(|_| usage())?, kv.parse::<usize>().map_err(|_| usage())?))
                }
                _ => return Err(usage()),
            };
            let format = QuantFormat::ALL
                .into_iter()
                .find(|f| f.name().eq_ignore_ascii_case(fmt))
                .ok_or_else(|| format!("{fmt:?} is not a GGML format ferrocm reads"))?;
            let (m, n, k) = mnk(dims_word)?;
            Ok(match rope {
                Some((heads, kv_heads)) => {
                    if heads == 0 || kv_heads == 0 || !n.is_multiple_of(heads + 2 * kv_heads) {
                        return Err(format!("{n} rows are not {heads} + 2 * {kv_heads} heads of one size"));
                    }
                    if kernel != qmatmul::QKernel::Auto {
                        return Err("the rotary QKV case runs the GEMV: no kernel word".into());
                    }
                    qkv_rope_case(format, m, k, heads, kv_heads, n / (heads + 2 * kv_heads), norm)
                }
                None => qmatmul_bench(format, m, n, k, norm, residual, kernel),
            })
        }
        other => Err(format!(
            "no benchmark for op {other:?} (known: fill_u32, copy_u32, saxpy, gemm, gemm_fp8_blockscaled, attention_prefill, attention_decode, qmatmul)"
        )),
    }
}

/// The sizes of an attention shape `bf16 b1 h32 s4096 d128 [causal]`, in the order of `keys`
/// (the letter before each number), and whether it ends in `causal`.
fn attention_words(words: &[&str], op: &str, keys: &[&str]) -> std::result::Result<(Vec<usize>, bool), String> {
    let usage = || {
        format!(
            "{op} shape {:?}: expected \"bf16 {}\"",
            words.join(" "),
            keys.iter().map(|k| format!("{k}N")).collect::<Vec<_>>().join(" ")
        )
    };
    let (causal, words) = match words.last() {
        Some(&"causal") => (true, &words[..words.len() - 1]),
        _ => (false, words),
    };
    if words.first() != Some(&"bf16") || words.len() != keys.len() + 1 {
        return Err(usage());
    }
    let sizes = keys
        .iter()
        .zip(&words[1..])
        .map(|(k, w)| w.strip_prefix(k).and_then(|n| n.parse::<usize>().ok()).ok_or_else(usage))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((sizes, causal))
}

fn boxed(f: impl FnMut() -> Result<()> + 'static) -> OpCall {
    Box::new(f)
}

/// `fill_u32` of `n` elements.
pub fn fill_u32(n: usize) -> Case {
    Case {
        op: "fill_u32",
        shape: format!("{n}"),
        flops: 0.0,
        min_bytes: 4 * n as u64,
        math: MathKind::Vector,
        sample_workgroups: 16,
        prepare: Box::new(move |dev, _seed| {
            let mut dst = dev.alloc::<u32>(n)?;
            Ok(boxed(move || basic::fill_u32(&mut dst, 0x3f80_0000)))
        }),
    }
}

/// `copy_u32` of `n` elements.
pub fn copy_u32(n: usize) -> Case {
    Case {
        op: "copy_u32",
        shape: format!("{n}"),
        flops: 0.0,
        min_bytes: 8 * n as u64,
        math: MathKind::Vector,
        sample_workgroups: 16,
        prepare: Box::new(move |dev, seed| {
            let src: Vec<f32> = Normal::new(seed).vec(n, 1.0);
            let src = dev.from_slice::<u32>(&src.iter().map(|x| x.to_bits()).collect::<Vec<_>>())?;
            let mut dst = dev.alloc::<u32>(n)?;
            Ok(boxed(move || basic::copy_u32(&src, &mut dst)))
        }),
    }
}

/// `saxpy` of `n` elements.
pub fn saxpy(n: usize) -> Case {
    Case {
        op: "saxpy",
        shape: format!("{n} f32"),
        flops: 2.0 * n as f64,
        min_bytes: 12 * n as u64,
        math: MathKind::Vector,
        sample_workgroups: 16,
        prepare: Box::new(move |dev, seed| {
            let mut g = Normal::new(seed);
            let x = dev.from_slice(&g.vec::<f32>(n, 1.0))?;
            let mut y = dev.from_slice(&g.vec::<f32>(n, 1.0))?;
            Ok(boxed(move || basic::saxpy(1.5, &x, &mut y)))
        }),
    }
}

/// `gemm::gemm` of `[m, k] x [k, n]` in `dtype` (B given as the transposed view of an `[n, k]`
/// weight, the layout the kernel reads without copies), in the chooser's configuration, or in it
/// on the MFMA shape `mfma` (to compare the shapes; stream-K exists on 32x32 MFMAs only).
pub fn gemm_dense(dtype: DType, m: usize, n: usize, k: usize, mfma: Option<Mfma>) -> Case {
    let math = match dtype {
        DType::F32 => MathKind::F32,
        DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz => MathKind::Fp8,
        _ => MathKind::F16,
    };
    let es = dtype.size() as u64;
    // Stream-K exists on 32x32 MFMAs only: on 16x16 ones the chooser's blocks run whole.
    let config = mfma.map(|mfma| {
        let c = gemm::choose_config(dtype, 1, m, n, k);
        GemmConfig { mfma, stream_k: c.stream_k && mfma == Mfma::Tile32, ..c }
    });
    Case {
        op: "gemm",
        shape: match config {
            Some(c) => format!("{} {m}x{n}x{k} {}", dtype.name(), c.mfma.shape(dtype)),
            None => format!("{} {m}x{n}x{k}", dtype.name()),
        },
        flops: 2.0 * (m * n * k) as f64,
        min_bytes: es * (m * k + n * k + m * n) as u64,
        math,
        // Every workgroup of a dense GEMM runs the same full K loop; a few spread over the grid
        // include the edge tiles of ragged shapes.
        sample_workgroups: 8,
        prepare: Box::new(move |dev, seed| {
            let mut g = Normal::new(seed);
            let a = g.tensor(dev, dtype, &[m, k], 1.0)?;
            let b = g.tensor(dev, dtype, &[n, k], 1.0)?.transpose(0, 1)?;
            let opts = GemmOptions { config, ..Default::default() };
            Ok(boxed(move || gemm::gemm(&a, &b, &opts).map(drop)))
        }),
    }
}

/// `gemm_fp8::gemm_fp8_blockscaled` with A `[m, k]` and B `[n, k]` E4M3FNUZ, scales per 128.
pub fn gemm_fp8_blockscaled(m: usize, n: usize, k: usize) -> Case {
    let (kb, nb) = (gemm_fp8::scale_blocks(k), gemm_fp8::scale_blocks(n));
    Case {
        op: "gemm_fp8_blockscaled",
        shape: format!("{m}x{n}x{k}"),
        flops: 2.0 * (m * n * k) as f64,
        min_bytes: (m * k + n * k + 2 * m * n + 4 * (m * kb + nb * kb)) as u64,
        math: MathKind::Fp8,
        sample_workgroups: 8,
        prepare: Box::new(move |dev, seed| {
            let mut g = Normal::new(seed);
            // sigma 16 uses a good part of E4M3FNUZ's range (max 240).
            let a = g.tensor(dev, DType::Fp8E4M3Fnuz, &[m, k], 16.0)?;
            let b = g.tensor(dev, DType::Fp8E4M3Fnuz, &[n, k], 16.0)?;
            let sa: Vec<f32> = (0..m * kb).map(|_| (g.sample() * 0.1).exp() as f32 / 256.0).collect();
            let sb: Vec<f32> = (0..nb * kb).map(|_| (g.sample() * 0.1).exp() as f32 / 256.0).collect();
            let sa = Tensor::from_slice(dev, &sa, &[m, kb])?;
            let sb = Tensor::from_slice(dev, &sb, &[nb, kb])?;
            Ok(boxed(move || gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &b, &sb).map(drop)))
        }),
    }
}

/// `qmatmul::qmatmul` of f16 activations `[m, k]` with a `format` weight `[n, k]`, f16 out. The
/// compulsory bytes are the weight's (its device layout, GGML's bytes padded to 16 rows), the
/// activations' and the output's.
pub fn qmatmul_case(format: QuantFormat, m: usize, n: usize, k: usize) -> Case {
    qmatmul_bench(format, m, n, k, false, false, qmatmul::QKernel::Auto)
}

/// [`qmatmul_case`] of the RMSNorm of the activations (`QMatmulOptions::rms_norm`, with a
/// weight): the decode GEMV normalises its rows itself. The norm's weight adds `2k` bytes.
pub fn qmatmul_norm_case(format: QuantFormat, m: usize, n: usize, k: usize) -> Case {
    qmatmul_bench(format, m, n, k, true, false, qmatmul::QKernel::Auto)
}

/// [`qmatmul_case`] with an f16 residual `[m, n]` added in the epilogue
/// (`QMatmulOptions::residual`), as a transformer's output and down projections run: the
/// residual adds `2mn` bytes.
pub fn qmatmul_residual_case(format: QuantFormat, m: usize, n: usize, k: usize) -> Case {
    qmatmul_bench(format, m, n, k, false, true, qmatmul::QKernel::Auto)
}

/// A decode step's fused QKV projection with its rotary embedding and KV-cache write
/// (`attention::qkv_rope_write_kv`): `m` sequences of one token at position 100 over a paged f16
/// cache, the projection's rows `heads + 2 kv_heads` heads of `d`, with the RMSNorm of the
/// activations when `norm`. Shape `FORMAT MxNxK [norm] ropeH:KV`. The compulsory bytes are
/// [`qmatmul_case`]'s (the queries, keys and values written are the product's outputs) plus
/// the cos/sin rows read.
pub fn qkv_rope_case(format: QuantFormat, m: usize, k: usize, heads: usize, kv_heads: usize, d: usize, norm: bool) -> Case {
    let n = (heads + 2 * kv_heads) * d;
    Case {
        op: "qmatmul",
        shape: format!("{} {m}x{n}x{k}{} rope{heads}:{kv_heads}", format.name(), if norm { " norm" } else { "" }),
        flops: 2.0 * (m * n * k) as f64,
        min_bytes: (qmatmul_bytes(format, m, n, k, norm) + 4 * m * d) as u64,
        math: MathKind::F16,
        sample_workgroups: 8,
        prepare: Box::new(move |dev, seed| {
            let mut g = Normal::new(seed);
            let (w, x, nw) = qmatmul_operands(dev, &mut g, format, m, n, k, norm)?;
            let (positions, page) = (128, 16);
            let cos = g.tensor(dev, DType::F32, &[positions, d / 2], 1.0)?;
            let sin = g.tensor(dev, DType::F32, &[positions, d / 2], 1.0)?;
            let offsets = Tensor::from_slice(dev, &vec![100i32; m], &[m])?;
            let pages = m * positions / page;
            let cache = PagedKvCache::new(dev, 1, pages, page, kv_heads, d, DType::F16)?;
            // Sequence s's position 100 in its own run of pages.
            let slots: Vec<i32> = (0..m).map(|s| (s * positions + 100) as i32).collect();
            let slots = Tensor::from_slice(dev, &slots, &[m])?;
            Ok(boxed(move || {
                let rms_norm = nw.as_ref().map(|w| qmatmul::RmsNorm { weight: Some(w), eps: 1e-5 });
                let rope = attention::RopeKv { cos: &cos, sin: &sin, offsets: &offsets };
                attention::qkv_rope_write_kv(&x, &w, rms_norm, heads, &rope, &cache, 0, &slots).map(drop)
            }))
        }),
    }
}

/// The compulsory bytes of a quantized product: the weight (its device layout, GGML's bytes
/// padded to 16 rows), the f16 activations and output, and the norm's weight.
fn qmatmul_bytes(format: QuantFormat, m: usize, n: usize, k: usize, norm: bool) -> usize {
    let weight = n.div_ceil(16) * 16 * format.row_bytes(k).unwrap_or(0);
    weight + 2 * m * k + 2 * m * n + if norm { 2 * k } else { 0 }
}

/// A quantized product's operands: the weight `[n, k]`, f16 activations `[m, k]` and (with
/// `norm`) the norm's f16 weight `[k]`.
fn qmatmul_operands(
    dev: &Device,
    g: &mut Normal,
    format: QuantFormat,
    m: usize,
    n: usize,
    k: usize,
    norm: bool,
) -> Result<(QuantTensor, Tensor, Option<Tensor>)> {
    let w = QuantTensor::from_blocks(dev, format, [n, k], &g.quant_blocks(format, n, k, 0.01)?)?;
    let x = g.tensor(dev, DType::F16, &[m, k], 1.0)?;
    let nw = if norm { Some(g.tensor(dev, DType::F16, &[k], 1.0)?) } else { None };
    Ok((w, x, nw))
}

fn qmatmul_bench(format: QuantFormat, m: usize, n: usize, k: usize, norm: bool, residual: bool, kernel: qmatmul::QKernel) -> Case {
    let forced = match kernel {
        qmatmul::QKernel::Auto => "",
        qmatmul::QKernel::Gemv => " gemv",
        qmatmul::QKernel::Gemm => " gemm",
        qmatmul::QKernel::GemvOne => " one",
    };
    Case {
        op: "qmatmul",
        shape: format!(
            "{} {m}x{n}x{k}{}{}{forced}",
            format.name(),
            if norm { " norm" } else { "" },
            if residual { " residual" } else { "" }
        ),
        flops: 2.0 * (m * n * k) as f64,
        min_bytes: (qmatmul_bytes(format, m, n, k, norm) + if residual { 2 * m * n } else { 0 }) as u64,
        math: MathKind::F16,
        sample_workgroups: 8,
        prepare: Box::new(move |dev, seed| {
            let mut g = Normal::new(seed);
            let (w, x, nw) = qmatmul_operands(dev, &mut g, format, m, n, k, norm)?;
            let res = if residual { Some(g.tensor(dev, DType::F16, &[m, n], 1.0)?) } else { None };
            Ok(boxed(move || {
                let rms_norm = nw.as_ref().map(|w| qmatmul::RmsNorm { weight: Some(w), eps: 1e-5 });
                let opts = qmatmul::QMatmulOptions { rms_norm, residual: res.as_ref(), kernel, ..Default::default() };
                qmatmul::qmatmul(&x, &w, &opts).map(drop)
            }))
        }),
    }
}
