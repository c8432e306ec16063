//! Matrix products with GGML block-quantized weights ([`QuantTensor`]), the weights staying
//! quantized on the device: `y = x W^T` (the convention of a `Linear` layer) with GEMM's fused
//! epilogue, and their dequantization.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, f16, ops::{gemm::Activation, qmatmul::{self, QMatmulOptions}}};
//! use ferrocm::quant::{QuantFormat, QuantTensor, quantize};
//! let dev = Device::new()?;
//! let w: Vec<f32> = (0..256 * 576).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
//! let wq = QuantTensor::from_blocks(&dev, QuantFormat::Q4_1, [256, 576], &quantize(QuantFormat::Q4_1, &w)?)?;
//! let x = Tensor::from_slice(&dev, &vec![f16::ONE; 576], &[1, 576])?;       // one decode token
//! let y = qmatmul::qmatmul(&x, &wq, &QMatmulOptions { activation: Activation::Silu, ..Default::default() })?;
//! assert_eq!(y.shape(), &[1, 256]);                                          // f16, silu(x W^T)
//! let dense = qmatmul::dequantize(&wq, ferrocm::DType::F32)?;               // [256, 576] f32
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! # Decode: M <= 16 rows
//! The GEMV kernel (`kernels/quant/gemv.rs`) reads every weight byte once in full-line 128-bit
//! loads and runs the matrix cores on the codes themselves (exact in f16/bf16), applying each
//! group's scale to the f32 product: its cost does not grow with M up to 16. A workgroup owns
//! 16 weight rows and splits K between up to 8 waves, whose partial sums meet in LDS (one
//! launch, no second reduction pass, deterministic); a row's partial last chunk (K not a
//! multiple of 256) is a wave's whole share, so it runs beside the full chunks.
//!
//! # Prefill: many rows of f16 or bf16
//! The GEMM kernel (`kernels/quant/gemm.rs`) runs the tile layer's pipeline on 128 x 64 blocks
//! of `y`, two groups of waves each on half of K: the activations go from memory straight into
//! the MFMAs' registers; the weight tiles are loaded as quantized chunks (a whole chunk ahead)
//! and dequantized one group of 32 per K-tile into LDS, rounded to the activations' type, for
//! the f16/bf16 matrix cores (not llama.cpp's int8 route: the activations keep their precision,
//! see the kernel's notes). Below a few hundred rows (or 64 for wide weights, 32 for very wide
//! ones or wide ones with a long K) the GEMV in passes of 16 rows is faster: [`choose_kernel`]
//! has the rule and its measurements, [`QMatmulOptions::kernel`] forces either. f32 activations always
//! take the GEMV (exact three-term split of x, weights read once per 16 rows): the GEMM has no
//! f32 path.
//!
//! # RMSNorm inside the GEMV
//! [`QMatmulOptions::rms_norm`] normalises `x`'s rows first, the way a transformer's
//! projections after a norm read them. In decode the GEMV does it itself: each workgroup
//! loads its rows and the norm's weight next to its first weight loads, normalises them into
//! LDS (a group of waves per row, one reduction) and reads its activations from there: no
//! norm launch, no normalised rows in global memory. Modeled MI300X, SmolLM2's 576-wide rows:
//! the GEMV takes 0.8 us longer with the norm than without, the separate norm launch it
//! replaces 2 us (`ferrocm-bench profile qmatmul --shape "Q4_1 1x960x576 norm"`).
//!
//! # Precision
//! Products of activations and codes are exact and sum in f32; per group of 32 weights the
//! f32 sum is scaled (`a * sum`) and, for formats with a minimum (`Q4_1`, `Q5_1`, `Q4_K`,
//! `Q5_K`), the group's activation sum times the minimum is added. f16 and bf16 activations go
//! to the matrix cores as they are; f32 activations are split exactly into three bf16 terms. The
//! error is that of f32 accumulation over the terms `|x| (|a u| + |b|)` (codes `u`): tests bound
//! it by `(K / 32 + 16) * 2^-22` times their sum, plus the output's rounding. The prefill GEMM
//! multiplies the weights in the activations' type, in f32: with bf16 activations the f32
//! weight rounded to bf16 (half an ulp); with f16 activations each weight comes from packed f16
//! arithmetic, `u * a + b` in one rounding with the group's scale `a` and minimum `b` rounded to
//! f16 first (exact for `Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0`; the k-quants' `d * sc` and
//! `dmin * m` round): within an ulp of f16 of `|a u| + |b| + |w|` plus f16's subnormal spacing.
//! With f16 activations a weight, scale or minimum beyond f16's range (|v| > 65504: f16 scales
//! near their maximum) becomes infinite (NaN for a zero code), where the GEMV and the reference
//! keep it finite.
//!
//! Dequantization is exact: each weight is the f64 definition of
//! [`reference::quant`](crate::reference::quant) rounded to f32 (the f32 operations the kernels
//! do are exact or round once, see `kernels/quant/format.rs`); f16 and bf16 outputs are that f32
//! rounded to nearest even. NaN and infinite scales propagate as IEEE arithmetic says, as in the
//! reference (`inf * 0` is NaN).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::gemm::{Activation, reduce_splits};
use crate::ops::layout::{contiguous, contiguous_aligned};
use crate::ops::norm;
use crate::quant::QuantTensor;
use crate::runtime::device::Device;
use crate::runtime::launch::{LDS_LIMIT_BYTES, LaunchConfig};
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::DevPtr;
use ferrocm_device::abi::gemm::{self as gemm_abi, GemmReduceArgs};
use ferrocm_device::abi::quant::{
    self as abi, CHUNK_GROUPS, DEQUANT_KERNELS, DEQUANT_LDS_BYTES, DEQUANT_THREADS, DequantArgs, GEMM_BLOCK_M, GEMM_BLOCK_N, GEMM_KERNELS,
    GEMM_LDS_BYTES, GEMM_WAVES, GEMV_KERNELS, GEMV_MAX_WAVES, GEMV_NORM_KERNELS, GEMV_ONE_KERNELS, GEMV_ONE_LDS_BYTES,
    GEMV_ONE_NORM_KERNELS, GEMV_ROWS, GROUP, QGemmArgs, QGemvArgs, TILE_ROWS, flags, gemv_lds_bytes, gemv_norm_fits, gemv_staged_bytes,
};
use ferrocm_device::num::Divisor;

/// Everything besides the operands: GEMM's epilogue ([`GemmOptions`](crate::ops::gemm::GemmOptions)'
/// bias, activation, residual, output dtype).
#[derive(Clone, Copy, Debug, Default)]
pub struct QMatmulOptions<'a> {
    /// Per-column bias, `[N]` f32, added first.
    pub bias: Option<&'a Tensor>,
    /// The fused activation (after the bias).
    pub activation: Activation,
    /// Added last, `[..., N]` (the output's shape, or one broadcasting to it) of the output
    /// dtype.
    pub residual: Option<&'a Tensor>,
    /// Output dtype (f32, f16 or bf16). Default: the activations' dtype.
    pub out_dtype: Option<DType>,
    /// Which kernel runs (default [`QKernel::Auto`]: [`choose_kernel`]'s rule); forcing one is
    /// for tests and tuning sweeps.
    pub kernel: QKernel,
    /// SwiGLU's gate fused into the GEMV's epilogue (a gate/up projection and `silu(gate) * up`
    /// in one launch): `W`'s rows come in tiles of 16, 8 gate rows then their 8 up rows (see
    /// [`QuantTensor::interleave_halves`](crate::quant::QuantTensor::interleave_halves)), and `y`
    /// is `[..., N / 2]` with `y[.., 8 t + i] = silu(x w_{16 t + i}) * (x w_{16 t + 8 + i})`, both
    /// products and the gate in f32, rounded once. N must be a multiple of 16; no bias, residual
    /// or activation; always the GEMV (the GEMM forced with it is [`Error::Unsupported`]).
    pub swiglu: bool,
    /// RMSNorm of `x`'s rows first: the product is `rms_norm(x, weight, eps) W^T`, the
    /// normalised rows rounded to `x`'s dtype as [`norm::rms_norm`]
    /// returns them. The GEMV with f16 or bf16 activations computes the norm itself when its
    /// workgroups have a wave per row to spare and the rows are short enough to sit in the
    /// waves' registers (`abi::quant::gemv_norm_fits`: decode rows, up to about as many as K
    /// has 256s, K up to 16384 for one row): each workgroup normalises its rows into LDS, no
    /// launch and no global round trip for the norm. Elsewhere (the GEMM, f32 activations,
    /// larger blocks of rows) `norm::rms_norm` runs first. The two differ only in the order the
    /// statistic sums in (a normalised element may round to the neighbouring value).
    pub rms_norm: Option<RmsNorm<'a>>,
}

/// The RMSNorm [`QMatmulOptions::rms_norm`] applies to the activations: `x / sqrt(mean(x^2) +
/// eps) * weight` over each row, in f32, as [`norm::rms_norm`]
/// (including its handling of huge values and of rows holding a NaN or an infinity, which are
/// NaN throughout).
#[derive(Clone, Copy, Debug)]
pub struct RmsNorm<'a> {
    /// `[K]` of `x`'s dtype; `None` means 1.
    pub weight: Option<&'a Tensor>,
    /// Added to the mean square; finite and non-negative.
    pub eps: f32,
}

/// The two kernels behind [`qmatmul`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QKernel {
    /// [`choose_kernel`] picks.
    #[default]
    Auto,
    /// The decode GEMV: 16 activation rows per pass (M > 16 runs `ceil(M / 16)` passes over
    /// the weights, side by side); any activation dtype.
    Gemv,
    /// The prefill GEMM: 128 x 64 blocks of `y`, the weights dequantized into LDS; f16 or bf16
    /// activations only.
    Gemm,
    /// The decode GEMV of one activation row (`kernels/quant/gemv_one.rs`): M = 1, f16 or bf16
    /// activations (the RMSNorm, SwiGLU's gate and, with the norm fused, a QKV projection's
    /// rotary epilogue as in the GEMV); elsewhere [`Error::Unsupported`]. [`QKernel::Auto`]
    /// takes it for those products when W has no more tiles of 16 rows than the GPU has
    /// compute units (a workgroup per tile; forced past that, and on the emulator's launch
    /// shapes, a workgroup per unit takes tiles `x, x + grid, ..`, with the same bits);
    /// [`QKernel::Gemv`] never does.
    GemvOne,
}

/// The kernel [`QKernel::Auto`] runs for `m` activation rows of `x_dtype`, `n` weight rows and
/// `K = k`: the GEMM when `m > 256`, `m > 64` with `n >= 1024`, or `m > 32` with `n >= 8192`, or
/// with `n >= 4096` and `k >= 2048` (f16/bf16 activations), else the GEMV.
///
/// Why, modeled MI300X (`cargo xtask profile qmatmul --shape "Q4_1 MxNxK gemv"`, and `gemm`):
/// the GEMV's time grows with its passes (one per 16 rows), the GEMM's hardly does up to M =
/// 128 (one workgroup per 64 rows of N and 128 of M, each CU one, K split over more when that
/// leaves CUs idle: [`gemm_splits`]) but it fills the chip only with enough blocks. 14336 x
/// 4096: GEMV 25 / 37 / 50 us at M = 32 / 48 / 64, GEMM 33-35; 4096 x 4096: GEMV 17 / 25 / 33
/// us at M = 32 / 48 / 64, GEMM 13-15 (4 splits) from M = 17 to 128; 4096 x 2048 (Q4_K): GEMV
/// 9 / 17 us at M = 32 / 64, GEMM 9 / 10; 4096 x 1024 and 4096 x 576 at M = 48: GEMV 8 and 6
/// us, GEMM 9 and 8 (short K: no split); 3072 x 576: GEMV 6 / 11 us at M = 64 / 128, GEMM 8;
/// 960 x 576: GEMV 4 / 7 / 13 us at M = 128 / 256 / 512, GEMM 8; 576 x 1536: GEMV 8 / 14 us at
/// M = 256 / 512, GEMM 15 (11 at M = 128, its K split in two). Misses: 4096 x 4096 at M = 17-32
/// (GEMV 17 us, GEMM 13), and 576 x 1536 at M = 512 (by 1 us).
pub fn choose_kernel(m: usize, n: usize, k: usize, x_dtype: DType) -> QKernel {
    let gemm = x_dtype != DType::F32 && (m > 256 || (m > 64 && n >= 1024) || (m > 32 && (n >= 8192 || (n >= 4096 && k >= 2048))));
    if gemm { QKernel::Gemm } else { QKernel::Gemv }
}

/// K splits of the prefill GEMM for `m x n` outputs, `K = k`, on a GPU of `units` compute units:
/// doubled (up to 8) while the blocks (64 weight rows by 128 activation rows) times the splits
/// still fit one per unit and each split keeps at least two chunks of 256 (one per group of
/// waves). The splits' f32 sums are added by the dense GEMM's split-K reduction, which runs the
/// epilogue.
///
/// Why: a block per CU runs the whole K loop, so a launch with few blocks takes as long as a
/// full one. Modeled MI300X, `cargo xtask profile qmatmul --shape "Q4_1 64x4096x4096 gemm"` (64
/// blocks): 33 us in one pass, 14 us in 4 splits (11 us, then the reduction's 2).
pub fn gemm_splits(units: usize, m: usize, n: usize, k: usize) -> usize {
    let blocks = n.div_ceil(GEMM_BLOCK_N as usize) * m.div_ceil(GEMM_BLOCK_M as usize);
    let chunks = (k / GROUP as usize).div_ceil(CHUNK_GROUPS as usize);
    let mut splits = 1;
    while splits < 8 && blocks * splits * 2 <= units && chunks / (splits * 2) >= 2 {
        splits *= 2;
    }
    splits
}

/// The kernels' code for an output (or activation) dtype.
fn dtype_code(op: &'static str, what: &'static str, d: DType) -> Result<u32> {
    match d {
        DType::F32 => Ok(abi::dtype::F32),
        DType::F16 => Ok(abi::dtype::F16),
        DType::Bf16 => Ok(abi::dtype::BF16),
        d => Err(Error::DTypeMismatch { op, what, got: d, expected: "f32, f16 or bf16".into() }),
    }
}

/// `W` as a dense row-major `[N, K]` tensor of `dtype` (f32, f16 or bf16), on `w`'s device.
///
/// # Errors
/// [`Error::DTypeMismatch`] for another dtype; allocation and launch errors.
pub fn dequantize(w: &QuantTensor, dtype: DType) -> Result<Tensor> {
    let out_type = dtype_code("dequantize", "output", dtype)?;
    let [n, k] = w.shape();
    let dev = w.device();
    let y = Tensor::empty(dev, &[n, k], dtype)?;
    if n == 0 || k == 0 {
        return Ok(y);
    }
    let mut ops = Operands::new("dequantize", dev);
    let args = DequantArgs {
        w: ops.buffer("W", w.device_bytes())?,
        y: ops.output_bytes("y", &y)?,
        n: ops.u32("N", n)?,
        k: ops.u32("K", k)?,
        out_type,
    };
    let grid = [ops.u32("chunks", (k / GROUP).div_ceil(CHUNK_GROUPS))?, ops.u32("tiles", n.div_ceil(TILE_ROWS))?, 1];
    let cfg = LaunchConfig { grid, block: [DEQUANT_THREADS, 1, 1], dynamic_lds_bytes: DEQUANT_LDS_BYTES };
    // SAFETY: the kernel reads the device layout of [n, k] (the buffer holds all of its tiles)
    // and writes the n * k elements of y, a fresh contiguous (16-byte aligned) tensor.
    unsafe { ops.launch(DEQUANT_KERNELS[w.format().abi_code() as usize], cfg, &args)? };
    Ok(y)
}

/// `y = x W^T` (+ bias, activation, residual) with `x` `[..., K]` (any leading dimensions,
/// taken as M rows) of f32, f16 or bf16 and the quantized weight `W` `[N, K]`; `y` is
/// `[..., N]` of `opts.out_dtype` (default: `x`'s dtype).
///
/// # Errors
/// [`Error::Shape`] when `x`'s last dimension is not K, or a bias or residual of the wrong
/// shape; [`Error::DTypeMismatch`] for activations, outputs, bias (f32) or residual (the output
/// dtype) of an unsupported dtype; [`Error::DeviceMismatch`] for operands on another device;
/// [`Error::Unsupported`] for [`QKernel::Gemm`] forced on f32 activations or with `swiglu`;
/// [`Error::Shape`] / [`Error::InvalidArgument`] for `swiglu` with N not a multiple of 16 or
/// with a bias, residual or activation; for `rms_norm`, those of
/// [`norm::rms_norm`] (a weight not `[K]` of `x`'s dtype, a
/// negative, infinite or NaN `eps`); allocation and launch errors.
pub fn qmatmul(x: &Tensor, w: &QuantTensor, opts: &QMatmulOptions<'_>) -> Result<Tensor> {
    Ok(product(x, w, opts, None)?.expect("without a rotary epilogue every product runs"))
}

/// A fused QKV projection's rotary embedding and KV-cache write (`abi::quant::flags::ROPE_KV`),
/// its operands checked by [`qkv_rope_write_kv`](crate::ops::attention::qkv_rope_write_kv): the
/// rows of W are `heads` query heads, then `kv_heads` key heads, then as many value heads.
pub(crate) struct RopeEpilogue<'a> {
    pub(crate) heads: usize,
    pub(crate) kv_heads: usize,
    pub(crate) head_dim: usize,
    pub(crate) rot_dim: usize,
    /// Tokens per sequence (x's rows are sequence-major).
    pub(crate) seq: usize,
    pub(crate) page_size: usize,
    pub(crate) slots_total: usize,
    /// f32 `[positions, rot_dim / 2]`, contiguous.
    pub(crate) cos: &'a Tensor,
    pub(crate) sin: &'a Tensor,
    /// i32 `[m / seq]` and `[m]`, contiguous.
    pub(crate) offsets: &'a Tensor,
    pub(crate) slots: &'a Tensor,
    pub(crate) k_cache: &'a Tensor,
    pub(crate) v_cache: &'a Tensor,
    /// One u32, set by a bad slot.
    pub(crate) error: &'a Tensor,
}

/// `qmatmul` with the rotary epilogue in the GEMV: the rotated queries `[m, heads head_dim]`, or
/// `None` (nothing launched) where the GEMV does not run the product or its epilogue cannot
/// index the operands (`opts.out_dtype` is the cache's).
pub(crate) fn fused_rope(x: &Tensor, w: &QuantTensor, opts: &QMatmulOptions<'_>, rope: &RopeEpilogue<'_>) -> Result<Option<Tensor>> {
    product(x, w, opts, Some(rope))
}

/// [`qmatmul`], with `rope` the rotary epilogue (`None` returned when the GEMV does not run the
/// product).
fn product(x: &Tensor, w: &QuantTensor, opts: &QMatmulOptions<'_>, rope: Option<&RopeEpilogue<'_>>) -> Result<Option<Tensor>> {
    const OP: &str = "qmatmul";
    let [n, k] = w.shape();
    if x.rank() == 0 || x.shape()[x.rank() - 1] != k {
        return Err(Error::Shape { op: OP, message: format!("x is {:?}; W is [{n}, {k}], so x's last dimension must be {k}", x.shape()) });
    }
    let x_type = dtype_code(OP, "x", x.dtype())?;
    let out_dtype = opts.out_dtype.unwrap_or(x.dtype());
    let out_type = dtype_code(OP, "output", out_dtype)?;
    let dev = w.device();
    let mut ops = Operands::new(OP, dev);
    ops.check_device("x", x)?;
    let mut shape = x.shape()[..x.rank() - 1].to_vec();
    let m: usize = shape.iter().product();
    if let Some(rn) = &opts.rms_norm {
        check_norm(&ops, rn, x.dtype(), k)?;
    }
    let mut fl = 0u32;
    if opts.swiglu {
        if n % 16 != 0 {
            return Err(Error::Shape { op: OP, message: format!("swiglu needs W's rows in tiles of 16, got N = {n}") });
        }
        if opts.bias.is_some() || opts.residual.is_some() || opts.activation != Activation::None {
            return Err(Error::InvalidArgument { op: OP, message: "swiglu takes no bias, residual or activation".into() });
        }
        if opts.kernel == QKernel::Gemm {
            return Err(Error::Unsupported { op: OP, what: "swiglu on the prefill GEMM (the GEMV takes it)".into() });
        }
        fl |= flags::SWIGLU;
    }
    if rope.is_some() {
        // (The caller asks for no bias, residual, activation or gate.)
        fl |= flags::ROPE_KV;
    }
    // The output's columns: N, or N / 2 with the gate fused, or the query heads' with the
    // rotary epilogue.
    let cols = match rope {
        Some(r) => r.heads * r.head_dim,
        None if opts.swiglu => n / 2,
        None => n,
    };
    shape.push(cols);
    let y = Tensor::empty(dev, &shape, out_dtype)?;

    let bias = match opts.bias {
        Some(b) => {
            ops.check_device("bias", b)?;
            if b.shape() != [n] || b.dtype() != DType::F32 {
                return Err(Error::Shape { op: OP, message: format!("bias must be [{n}] f32, got {:?} {}", b.shape(), b.dtype()) });
            }
            fl |= flags::BIAS;
            ops.input::<f32>("bias", &contiguous(b)?)?
        }
        None => DevPtr::NULL,
    };
    let residual = match opts.residual {
        Some(r) => {
            ops.check_device("residual", r)?;
            if r.dtype() != out_dtype {
                return Err(Error::DTypeMismatch { op: OP, what: "residual", got: r.dtype(), expected: out_dtype.to_string() });
            }
            fl |= flags::RESIDUAL;
            let r = contiguous(&r.broadcast_to(&shape)?)?;
            ops.input_bytes("residual", &r)?
        }
        None => DevPtr::NULL,
    };
    if m == 0 || n == 0 {
        return Ok(Some(y));
    }
    let fc = w.format().abi_code();
    ops.u32("W bytes", w.device_bytes().len())?;
    let kernel = match opts.kernel {
        QKernel::Auto if opts.swiglu => QKernel::Gemv,
        QKernel::Auto => choose_kernel(m, n, k, x.dtype()),
        QKernel::Gemm if x.dtype() == DType::F32 => {
            return Err(Error::Unsupported {
                op: OP,
                what: "the prefill GEMM with f32 activations (QKernel::Gemv or Auto take them)".into(),
            });
        }
        QKernel::GemvOne if m != 1 || !matches!(x.dtype(), DType::F16 | DType::Bf16) || rope.is_some() && opts.rms_norm.is_none() => {
            return Err(Error::Unsupported {
                op: OP,
                what: format!(
                    "the one-row GEMV for {m} rows of {}{} (it takes one f16 or bf16 row; the rotary epilogue only with the norm)",
                    x.dtype(),
                    if rope.is_some() && opts.rms_norm.is_none() { " with the rotary epilogue and no norm" } else { "" }
                ),
            });
        }
        forced => forced,
    };
    let force_one = kernel == QKernel::GemvOne;
    let kernel = if force_one { QKernel::Gemv } else { kernel };
    // The epilogue divides column and row indices below 2^20 (`dsl::math::SmallDiv`) and
    // addresses the tables with 32-bit byte offsets.
    if let Some(r) = rope
        && (kernel != QKernel::Gemv || n >= 1 << 20 || m >= 1 << 20 || r.cos.numel() * 4 > u32::MAX as usize)
    {
        return Ok(None);
    }
    // The GEMV's launch shape and LDS, and whether it can take the norm in. Every decision is
    // the GPU's shape's (the device's compute units), so that a shape sized for fewer units (the
    // emulator's `LaunchShapes::Emulator`) changes only how the tiles share out over
    // workgroups, which leaves every output bit as it is; it is taken where its LDS fits too.
    let gpu_units = dev.info().compute_units.max(1) as usize;
    let gemv = GemvPlan::new(fc, n, k, gpu_units);
    // One activation row of f16 or bf16, and no more tiles than the GPU has compute units: the
    // lean kernel of one row (`kernels/quant/gemv_one.rs`; a decode step's projections). With
    // more tiles, the general GEMV's workgroups of several tiles, their loads running ahead
    // across them, win (modeled `Q4_K 1x14336x4096`: 20,800 cycles against 24,072 with a
    // workgroup per tile).
    let one = force_one
        || opts.kernel == QKernel::Auto
            && kernel == QKernel::Gemv
            && m == 1
            && matches!(x.dtype(), DType::F16 | DType::Bf16)
            && n.div_ceil(TILE_ROWS) <= gpu_units;
    let one_plan = GemvPlan::one(n, k, shape_units_of(dev));
    let rows = m.min(GEMV_ROWS as usize) as u32;
    let staged_bytes = gemv_staged_bytes(fc, rows, k as u32, x.dtype().size() as u32);
    // The norm goes into the kernel where its row fits in the waves' registers and LDS.
    let (norm_waves, norm_lds) = if one { (one_plan.waves, one_plan.lds) } else { (gemv.waves, gemv.lds) };
    let fuse_norm = opts.rms_norm.is_some()
        && kernel == QKernel::Gemv
        && matches!(x.dtype(), DType::F16 | DType::Bf16)
        && gemv_norm_fits(rows, k as u32, x.dtype().size() as u32, norm_waves)
        && norm_lds + staged_bytes <= LDS_LIMIT_BYTES;
    let shape_units = shape_units_of(dev);
    let gemv = match GemvPlan::new(fc, n, k, shape_units) {
        fewer if shape_units < gpu_units && gemv.lds <= LDS_LIMIT_BYTES => {
            let staged = if fuse_norm { staged_bytes } else { 0 };
            if fewer.lds + staged <= LDS_LIMIT_BYTES { fewer } else { gemv }
        }
        _ => gemv,
    };
    let normed;
    let x = match &opts.rms_norm {
        Some(rn) if !fuse_norm => {
            normed = norm::rms_norm(x, rn.weight, rn.eps)?;
            &normed
        }
        _ => x,
    };
    // The kernels read x as [M][K] rows at 16-byte aligned addresses (K is a multiple of 32, so
    // contiguous rows stay aligned).
    let x = contiguous_aligned(x)?;
    if kernel == QKernel::Gemm {
        // Prefill: the GEMM with the weights dequantized into LDS, its K split when its blocks
        // alone would leave CUs idle (the GPU's plan: the splits change the sums' order).
        let splits = gemm_splits(gpu_units, m, n, k);
        let chunks = (k / GROUP as usize).div_ceil(CHUNK_GROUPS as usize);
        let y_ptr = ops.output_bytes("y", &y)?;
        let mut args = QGemmArgs {
            w: ops.buffer("W", w.device_bytes())?,
            x: ops.input_bytes("x", &x)?,
            y: y_ptr,
            bias,
            residual,
            m: ops.u32("M", m)?,
            n: ops.u32("N", n)?,
            k: ops.u32("K", k)?,
            ldx: ops.u32("K", k)?,
            ldy: ops.u32("N", n)?,
            ldr: ops.u32("N", n)?,
            x_type,
            out_type,
            activation: opts.activation.code(),
            flags: fl,
            split_chunks: ops.u32("chunks per split", chunks.div_ceil(splits))?,
        };
        let grid = [
            ops.u32("N blocks", n.div_ceil(GEMM_BLOCK_N as usize))?,
            ops.u32("M blocks", m.div_ceil(GEMM_BLOCK_M as usize))?,
            splits as u32,
        ];
        let cfg = LaunchConfig { grid, block: [GEMM_WAVES * 64, 1, 1], dynamic_lds_bytes: GEMM_LDS_BYTES };
        if splits == 1 {
            // SAFETY: W's layout holds every tile of [n, k]; x is [m][k] contiguous and aligned
            // (the kernel clamps its block's rows inside it); y and the residual are [m][n]
            // contiguous of the output dtype; the bias has n f32.
            unsafe { ops.launch(GEMM_KERNELS[fc as usize], cfg, &args)? };
            return Ok(Some(y));
        }
        // Split: f32 sums `[split][M][N]`, then the dense GEMM's reduction adds them in split
        // order and runs the epilogue.
        let elems = m * n;
        let partial = dev.alloc::<f32>(splits * elems)?;
        let partial_ptr = ops.buffer("split-K partials", &partial)?;
        args.y = partial_ptr.cast();
        args.out_type = abi::dtype::F32;
        args.activation = Activation::None.code();
        args.flags = 0;
        // SAFETY: as above; the partials hold every split's [m][n] f32 sums.
        unsafe { ops.launch(GEMM_KERNELS[fc as usize], cfg, &args)? };
        let red = GemmReduceArgs {
            partial: partial_ptr,
            c: y_ptr,
            bias,
            residual,
            split_stride: elems as u64,
            batch_stride_r: 0,
            rows: ops.u32("M", m)?,
            m: ops.u32("M", m)?,
            n: ops.u32("N", n)?,
            ldr: ops.u32("N", n)?,
            splits: splits as u32,
            alpha: 1.0,
            beta: 0.0,
            out_type,
            activation: opts.activation.code(),
            flags: fl & (gemm_abi::flags::BIAS | gemm_abi::flags::RESIDUAL),
        };
        // SAFETY: the partials were written by the launch above (a stream runs in order); y,
        // the bias and the residual as for the one-pass launch.
        unsafe { reduce_splits(&mut ops, red)? };
        return Ok(Some(y));
    }
    // (The one-row kernels with the rotary epilogue are those with the norm: without it, the
    // general GEMV takes the epilogue.)
    let one = one && (rope.is_none() || fuse_norm);
    if force_one && !one {
        return Err(Error::Unsupported {
            op: OP,
            what: format!("the one-row GEMV's rotary epilogue with K = {k} (the norm it needs does not fit its waves)"),
        });
    }
    let GemvPlan { grid_x, tiles_per_group, waves, per_wave, lds } = if one { one_plan } else { gemv };
    if lds > LDS_LIMIT_BYTES {
        return Err(Error::Unsupported {
            op: OP,
            what: format!("K = {k} for {} (its activation sums need {lds} bytes of LDS)", w.format()),
        });
    }
    let m_block = GEMV_ROWS;
    let (norm_weight, eps, lds, kernel) = match &opts.rms_norm {
        Some(rn) if fuse_norm => {
            fl |= flags::RMS_NORM;
            let weight = match rn.weight {
                Some(t) => {
                    fl |= flags::NORM_WEIGHT;
                    ops.input_bytes("norm weight", &contiguous_aligned(t)?)?
                }
                None => DevPtr::NULL,
            };
            let by_dtype = if one { GEMV_ONE_NORM_KERNELS } else { GEMV_NORM_KERNELS }[usize::from(x.dtype() == DType::Bf16)];
            (weight, rn.eps, lds + staged_bytes, by_dtype[fc as usize])
        }
        _ if one => (DevPtr::NULL, 0.0, lds, GEMV_ONE_KERNELS[fc as usize]),
        _ => (DevPtr::NULL, 0.0, lds, GEMV_KERNELS[fc as usize]),
    };
    // (Without the epilogue the kernel reads none of the page fields.)
    let page = Divisor::new(rope.map_or(1, |r| r.page_size as u32));
    let args = QGemvArgs {
        w: ops.buffer("W", w.device_bytes())?,
        x: ops.input_bytes("x", &x)?,
        y: ops.output_bytes("y", &y)?,
        bias,
        residual,
        m: ops.u32("M", m)?,
        n: ops.u32("N", n)?,
        k: ops.u32("K", k)?,
        ldx: ops.u32("K", k)?,
        ldy: ops.u32("N", cols)?,
        ldr: ops.u32("N", n)?,
        x_type,
        out_type,
        activation: opts.activation.code(),
        flags: fl,
        chunks_per_wave: ops.u32("chunks per wave", per_wave)?,
        m_block,
        tiles_per_group: tiles_per_group as u32,
        grid_x: grid_x as u32,
        norm_weight,
        eps,
        rope_slots: rope.map_or(Ok(DevPtr::NULL), |r| ops.input::<i32>("slots", r.slots))?,
        rope_offsets: rope.map_or(Ok(DevPtr::NULL), |r| ops.input::<i32>("offsets", r.offsets))?,
        rope_cos: rope.map_or(Ok(DevPtr::NULL), |r| ops.input::<f32>("cos table", r.cos))?,
        rope_sin: rope.map_or(Ok(DevPtr::NULL), |r| ops.input::<f32>("sin table", r.sin))?,
        k_cache: rope.map_or(Ok(DevPtr::NULL), |r| ops.output_bytes("k cache", r.k_cache))?,
        v_cache: rope.map_or(Ok(DevPtr::NULL), |r| ops.output_bytes("v cache", r.v_cache))?,
        rope_error: rope.map_or(Ok(DevPtr::NULL), |r| ops.output::<u32>("error flag", r.error))?,
        rope_seq: rope.map_or(0, |r| r.seq as u32),
        heads: rope.map_or(0, |r| r.heads as u32),
        kv_heads: rope.map_or(0, |r| r.kv_heads as u32),
        head_dim: rope.map_or(0, |r| r.head_dim as u32),
        rot_dim: rope.map_or(0, |r| r.rot_dim as u32),
        cache_rows: rope.map_or(Ok(0), |r| ops.u32("table rows", r.cos.shape()[0]))?,
        page_size: rope.map_or(0, |r| r.page_size as u32),
        page_magic: page.magic,
        page_shift: page.shift,
        slots_total: rope.map_or(Ok(0), |r| ops.u32("slots", r.slots_total))?,
    };
    // The activation rows are one range-checked buffer of 32-bit size.
    ops.u32("x bytes", m * k * x.dtype().size())?;
    let grid = [ops.u32("tiles", grid_x)?, ops.u32("row blocks", m.div_ceil(m_block as usize))?, 1];
    let cfg = LaunchConfig { grid, block: [waves * 64, 1, 1], dynamic_lds_bytes: lds };
    // SAFETY: W's layout holds every tile of [n, k]; x is [m][k] contiguous and aligned; y and
    // the residual are [m][n] contiguous of the output dtype; the bias has n f32; the norm's
    // weight (with NORM_WEIGHT) k elements of x's dtype, and the LDS holds the staged rows;
    // with ROPE_KV (its operands checked by `qkv_rope_write_kv`) y is [m][heads head_dim], the
    // tables [cache_rows][rot_dim / 2] f32, m slots and m / seq offsets, and every slot below
    // slots_total is inside both caches (their shape).
    unsafe { ops.launch(kernel, cfg, &args)? };
    Ok(Some(y))
}

/// The GEMV's launch shape for `[m, k] x [n, k]^T` and the LDS it needs without the norm.
struct GemvPlan {
    grid_x: usize,
    tiles_per_group: usize,
    waves: u32,
    per_wave: usize,
    lds: u32,
}

impl GemvPlan {
    /// The plan on a device of `units` compute units.
    fn new(fc: u32, n: usize, k: usize, units: usize) -> GemvPlan {
        let chunks = (k / GROUP).div_ceil(CHUNK_GROUPS);
        let tiles = n.div_ceil(TILE_ROWS);
        // One workgroup per CU at most, each taking tiles x, x + grid, .. with its waves' loads
        // running ahead across them (the start-up latency and the activation sums are paid once
        // per workgroup); its waves split K ([`plan_waves`]).
        // At most 16 tiles per workgroup (their results wait in LDS for the epilogue).
        let grid_x = tiles.min(units.max(tiles.div_ceil(16))).max(1);
        let tiles_per_group = tiles.div_ceil(grid_x);
        let (waves, per_wave) = plan_waves(chunks, k / (GROUP * CHUNK_GROUPS));
        // The waves' tables of activation sums (formats with a minimum) take 80 bytes per group
        // of K: with one tile per workgroup, K up to 19,000 or so fits beside the rest.
        let lds = gemv_lds_bytes(fc, waves, per_wave as u32, tiles_per_group as u32);
        GemvPlan { grid_x, tiles_per_group, waves, per_wave, lds }
    }

    /// The plan of the kernel of one activation row on a launch shape of `units` compute units:
    /// a workgroup per tile up to one per unit, each taking tiles `x, x + grid, ..` (on the
    /// GPU's shape `QKernel::Auto` takes the kernel for no more tiles than units: a workgroup
    /// per tile; on the emulator's, each workgroup stages a normed row once for all its tiles;
    /// the same bits either way); its waves taking one full chunk each up to
    /// [`GEMV_MAX_WAVES`] (with the partial chunk's wave), more each past that
    /// ([`plan_waves_one`]).
    fn one(n: usize, k: usize, units: usize) -> GemvPlan {
        let chunks = (k / GROUP).div_ceil(CHUNK_GROUPS);
        let (waves, per_wave) = plan_waves_one(chunks, k / (GROUP * CHUNK_GROUPS));
        let tiles = n.div_ceil(TILE_ROWS);
        let grid_x = tiles.min(units).max(1);
        GemvPlan { grid_x, tiles_per_group: tiles.div_ceil(grid_x), waves, per_wave, lds: GEMV_ONE_LDS_BYTES }
    }
}

/// The compute units `dev`'s launch shapes are sized for (fewer than the GPU's on the
/// emulator: `LaunchShapes::Emulator`).
fn shape_units_of(dev: &Device) -> usize {
    dev.backend_impl().shape_units().max(1) as usize
}

/// The waves of a `quant_gemv_one_*` workgroup and the full chunks each takes, for rows of
/// `chunks` chunks of which `full` are full: as few chunks per wave as at most
/// [`GEMV_MAX_WAVES`] waves allow, the partial chunk (if any) a wave of its own. Unlike the
/// general GEMV's waves ([`plan_waves`]), these have no fixed work of their own (no table of
/// activation sums): a wave more only shortens the chain. Modeled MI300X (`cargo xtask profile
/// qmatmul`): `Q4_1 1x576x1536 residual` 3941 cycles on 6 waves of one chunk, 4737 on 3 of
/// two, 5689 on 2 of three; `Q4_K 1x4096x4096` 7927 on 8 waves of two, 10279 on 6 of three.
fn plan_waves_one(chunks: usize, full: usize) -> (u32, usize) {
    let partial = chunks - full;
    let cap = GEMV_MAX_WAVES as usize - partial;
    let per = full.div_ceil(cap).max(1);
    ((full.div_ceil(per) + partial).max(1) as u32, per)
}

/// The GEMV workgroup's waves and the full chunks each takes, for rows of `chunks` chunks of
/// which `full` are full (`chunks - full` is 0 or 1).
///
/// A row's partial last chunk (K not a multiple of 256) gets a wave of its own, the last (the
/// kernel's `setup`): it then runs beside the full chunks instead of after them. The full chunks
/// go one per wave while that makes at most 4 waves (one per SIMD); past that, 2 or more per
/// wave, so that the workgroup has at most 4 waves or exactly 8 (two per SIMD): with 5 to 7, some
/// SIMDs run two waves' fixed work (table, reduction) while others idle, and one chunk per wave
/// pays that work per chunk. Modeled MI300X, `Q4_1 1 x 576 x K` (`ferrocm-bench profile`):
/// K = 1536 takes 5901 cycles on 3 waves of 2 chunks against 6301 on 6 of 1; K = 2048 6021 on
/// 4 against 6477 on 8; K = 3072 7097 on 4 against 7889 on 6; K = 4096 8085 on 8 against 9657
/// on 6; K = 576 (2 full chunks and a partial one) 5129 cycles on 3 waves against 5777 on 2.
fn plan_waves(chunks: usize, full: usize) -> (u32, usize) {
    let partial = chunks - full;
    if full + partial <= 4 {
        return ((full + partial).max(1) as u32, 1);
    }
    let mut per = 2;
    loop {
        let waves = full.div_ceil(per) + partial;
        if waves <= 4 || waves == GEMV_MAX_WAVES as usize {
            return (waves as u32, per);
        }
        per += 1;
    }
}

/// `rn`'s weight and eps as `norm::rms_norm` checks them, for activations of `dtype` with `k`
/// columns.
fn check_norm(ops: &Operands<'_>, rn: &RmsNorm<'_>, dtype: DType, k: usize) -> Result<()> {
    norm::check_eps(ops.op(), rn.eps)?;
    rn.weight.map_or(Ok(()), |t| norm::check_param(ops, "norm weight", t, dtype, &[k]))
}

#[cfg(test)]
mod tests {
    use super::{GEMV_MAX_WAVES, plan_waves, plan_waves_one};

    /// The rule `plan_waves_one` documents, over every K up to 200 chunks with and without a
    /// partial one: every chunk has a wave, the partial chunk one of its own, at most 8 waves,
    /// none idle, and as few full chunks per wave as that allows.
    #[test]
    fn one_row_waves_take_every_chunk_in_at_most_8_waves_none_idle() {
        for full in 0..=200usize {
            for partial in [0, 1] {
                let (waves, per) = plan_waves_one(full + partial, full);
                let full_waves = waves as usize - partial;
                assert!(waves as usize <= GEMV_MAX_WAVES as usize && waves >= 1, "{full}+{partial}: {waves} waves");
                assert!(full_waves * per >= full, "{full}+{partial}: {full_waves} x {per} leave chunks out");
                assert!(full == 0 || (full_waves - 1) * per < full, "{full}+{partial}: an idle wave");
                // One chunk fewer per wave would take more than 8 waves.
                assert!(per == 1 || full.div_ceil(per - 1) + partial > GEMV_MAX_WAVES as usize, "{full}+{partial}: {per} per wave");
            }
        }
    }

    /// The rule `plan_waves` documents, over every K up to 64 chunks with and without a partial
    /// last chunk: every chunk has a wave, the partial chunk one of its own (the kernel's last,
    /// which takes nothing else), at most 4 waves or exactly 8, and as few full chunks per wave
    /// as that allows.
    #[test]
    fn waves_take_every_chunk_the_partial_one_alone_in_at_most_4_or_8_waves() {
        for full in 0..=64usize {
            for partial in [0, 1] {
                let chunks = full + partial;
                let (waves, per) = plan_waves(chunks, full);
                let waves = waves as usize;
                assert!(waves <= 4 || waves == 8, "{chunks} chunks: {waves} waves");
                let full_waves = waves - partial;
                assert!(full_waves * per >= full, "{chunks} chunks: {full_waves} x {per} leave full chunks out");
                // No wave of full chunks is empty (the last of them may hold fewer).
                assert!(full == 0 || (full_waves - 1) * per < full, "{chunks} chunks: an idle wave");
                if chunks <= 4 {
                    assert_eq!((waves, per), (chunks.max(1), 1));
                } else {
                    // One chunk fewer per wave would break the wave rule.
                    let fewer = full.div_ceil(per - 1).max(1) + partial;
                    assert!(per == 2 || !(fewer <= 4 || fewer == 8), "{chunks} chunks: {per} per wave, {} would do", per - 1);
                }
            }
        }
        // SmolLM2's K = 576 and 1536, a K = 4096 model's.
        assert_eq!(plan_waves(3, 2), (3, 1));
        assert_eq!(plan_waves_one(3, 2), (3, 1));
        assert_eq!(plan_waves_one(6, 6), (6, 1));
        assert_eq!(plan_waves_one(16, 16), (8, 2));
        assert_eq!(plan_waves(6, 6), (3, 2));
        assert_eq!(plan_waves(16, 16), (8, 2));
    }
}
