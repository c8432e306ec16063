//! GEMM on the matrix cores: `C = alpha * A * B + beta * C`, then bias, activation, residual.
//!
//! Operands are tensors; transposes are views. `A` is `[..., M, K]`, `B` is `[..., K, N]`, and
//! the leading (batch) dimensions broadcast like numpy's `matmul`. The kernels read both operands
//! K-contiguous (`A` row-major, `B` as `B^T` row-major — the layout of `X * W^T` with a row-major
//! weight `W`), so `gemm(&x, &w.transpose(0, 1)?, ..)` runs without copies. Any other layout is
//! first packed into that one on the device (a strided gather), which costs one extra pass over
//! the operand.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, ops::gemm};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &vec![ferrocm::bf16::ONE; 64 * 128], &[64, 128])?;
//! let w = Tensor::from_slice(&dev, &vec![ferrocm::bf16::ONE; 256 * 128], &[256, 128])?;
//! let y = gemm::matmul(&x, &w.transpose(0, 1)?)?; // [64, 256], bf16, f32 accumulation
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Precision: f16/bf16/fp8 inputs accumulate in f32 on the matrix cores; f32 inputs use the f32
//! MFMA (exact products, f32 sums) unless [`F32Precision::Xf32`] opts into the tf32 path.
//! fp8 is gfx942's FNUZ formats ([`Fp8E4M3Fnuz`](crate::Fp8E4M3Fnuz), [`Fp8E5M2Fnuz`](crate::Fp8E5M2Fnuz)).

use crate::backend::MI300X_CUS;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::layout::{contiguous, simplify};
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::gemm::{
    self as abi, GEMV_MAX_WAVES, GEMV_ROWS, GemmArgs, GemmReduceArgs, K_TILE_BYTES, activation, flags, out_type,
};
use ferrocm_device::abi::{DevPtr, Kernel};

/// The activation fused into the epilogue (after bias, before the residual).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activation {
    /// None.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU with the exact normal CDF.
    GeluErf,
    /// GELU, tanh approximation.
    GeluTanh,
    /// `x * sigmoid(x)`.
    Silu,
}

impl Activation {
    pub(crate) fn code(self) -> u32 {
        match self {
            Activation::None => activation::NONE,
            Activation::Relu => activation::RELU,
            Activation::GeluErf => activation::GELU_ERF,
            Activation::GeluTanh => activation::GELU_TANH,
            Activation::Silu => activation::SILU,
        }
    }
}

/// How f32 GEMMs use the matrix cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum F32Precision {
    /// `v_mfma_f32_16x16x4_f32`: exact products, f32 sums (the default).
    #[default]
    Exact,
    /// `v_mfma_f32_16x16x8_xf32`: inputs truncated to tf32 (10 fraction bits) by the hardware,
    /// twice the throughput. Opt-in only.
    Xf32,
}

/// Everything besides the operands.
#[derive(Clone, Copy, Debug)]
pub struct GemmOptions<'a> {
    /// Scale of `A * B`.
    pub alpha: f32,
    /// Scale of the existing C (only with [`gemm_into`]).
    pub beta: f32,
    /// Per-column bias, `[N]` f32.
    pub bias: Option<&'a Tensor>,
    /// The fused activation.
    pub activation: Activation,
    /// Added last, `[..., M, N]` of the output dtype.
    pub residual: Option<&'a Tensor>,
    /// Output dtype (f32, f16 or bf16). Default: the input dtype for f32/f16/bf16, bf16 for fp8.
    pub out_dtype: Option<DType>,
    /// f32 inputs: exact or tf32.
    pub f32_precision: F32Precision,
    /// Run this configuration instead of [`choose_config`]'s (one of [`configs`]; for tuning
    /// sweeps and tests).
    pub config: Option<GemmConfig>,
}

impl Default for GemmOptions<'_> {
    fn default() -> Self {
        GemmOptions {
            alpha: 1.0,
            beta: 0.0,
            bias: None,
            activation: Activation::None,
            residual: None,
            out_dtype: None,
            f32_precision: F32Precision::Exact,
            config: None,
        }
    }
}

/// One kernel configuration: the output tile of a workgroup and the split of K. The set is
/// enumerable ([`configs`]) so a tuner can sweep it.
///
/// The 16x16 block (`block_m == block_n == 16`, [`GemmConfig::is_gemv`]) is the decode GEMV:
/// its `waves` split K inside the workgroup (no second pass; `splits` is 1), and it streams B
/// once per 16 rows of A without staging it in LDS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmConfig {
    /// Rows of C per workgroup.
    pub block_m: u32,
    /// Columns of C per workgroup.
    pub block_n: u32,
    /// Waves per workgroup.
    pub waves: u32,
    /// The matrix-core instruction shape the waves run.
    pub mfma: Mfma,
    /// Slices of K reduced by separate workgroups into f32 partials, then summed in split order
    /// by a second kernel that runs the epilogue (1 = one pass).
    pub splits: u32,
    /// Stream-K (128x128 blocks on 32x32 MFMAs, `splits` 1): the K-tiles of all blocks are
    /// dealt evenly to one resident round of workgroups instead of a block to each, so no round
    /// runs partly empty; a block split between workgroups is finished in the same launch by the
    /// last of them to arrive (device `kernels::gemm::stream_k`; runs: [`stream_k_run`]).
    pub stream_k: bool,
}

/// The split counts a configuration may use.
pub const SPLITS: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// A split reduces at least this many K-tiles, so its prologue and partial store stay small
/// next to its main loop.
const MIN_TILES_PER_SPLIT: usize = 8;
/// The chooser keeps split-K partials under this many bytes.
const MAX_PARTIAL_BYTES: usize = 256 << 20;
/// 128x128 workgroups resident per CU (LDS and registers allow two of 4 waves).
const BLOCKS_PER_CU: usize = 2;
/// The chooser takes stream-K when whole blocks per workgroup would keep less than this share
/// of the launch's resident slots working (`blocks / (rounds * slots)`).
const STREAM_K_BELOW: f64 = 0.9;
/// Most workgroups the chooser lets share one stream-K block.
const MAX_CONTRIBUTORS: usize = 8;

impl GemmConfig {
    /// True for the decode GEMV's 16x16 block (see the type's docs).
    pub fn is_gemv(&self) -> bool {
        self.block_m == GEMV_ROWS && self.block_n == GEMV_ROWS
    }
}

/// Waves the GEMV configurations may split K over.
const GEMV_WAVES: [u32; 4] = [1, 2, 4, GEMV_MAX_WAVES];
/// A GEMV wave reduces at least this many K-tiles (64 bytes of each row), so that its loads
/// and its share of the reduction stay small next to its streaming.
const MIN_GEMV_TILES_PER_WAVE: usize = 8;

/// The MFMA instruction shape of a configuration. Both give a wave 64x64 outputs from the same
/// LDS reads and registers; 32x32 instructions do four times the work of 16x16 ones in twice the
/// cycles, so a K-tile needs half as many issue slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mfma {
    /// 16x16 output tiles (`v_mfma_f32_16x16x16_bf16` and its siblings).
    Tile16,
    /// 32x32 output tiles (`v_mfma_f32_32x32x8_bf16` and its siblings).
    Tile32,
}

impl Mfma {
    /// The instruction's `MxNxK` for inputs of `dtype` (f32 means the exact f32 path; the xf32
    /// opt-in doubles K).
    pub fn shape(self, dtype: DType) -> &'static str {
        match (self, dtype) {
            (Mfma::Tile16, DType::F32) => "16x16x4",
            (Mfma::Tile16, DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz) => "16x16x32",
            (Mfma::Tile16, _) => "16x16x16",
            (Mfma::Tile32, DType::F32) => "32x32x2",
            (Mfma::Tile32, DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz) => "32x32x16",
            (Mfma::Tile32, _) => "32x32x8",
        }
    }
}

/// The tiles every dtype has: (block_m, block_n, waves, MFMA shape). The tall-skinny tile is one
/// wave of 16 rows, so it has only the 16x16 shape.
const TILES: [(u32, u32, u32, Mfma); 3] = [(128, 128, 4, Mfma::Tile16), (128, 128, 4, Mfma::Tile32), (16, 64, 1, Mfma::Tile16)];

/// The MFMA shape [`choose_config`] uses for 128x128 tiles: modeled on MI300X (`cargo xtask
/// bench`), bf16 4096^3 runs at 987 TFLOP/s on 32x32 MFMAs against 977 on 16x16 ones.
const BLOCK_MFMA: Mfma = Mfma::Tile32;

/// Every configuration for an input dtype: the 128x128 tile (4 waves of 64x64 outputs, on 16x16
/// or on 32x32 MFMAs) and the tall-skinny 16x64 tile (one wave, for M <= 16), each with every
/// split count of [`SPLITS`] (K-tiles of 64 bytes, two LDS stages); the 128x128 stream-K
/// configuration on 32x32 MFMAs ([`GemmConfig::stream_k`]); then the decode GEMV's 16x16
/// block with 1, 2, 4 or 8 waves splitting K (one pass). The dtype does not change the set; it
/// is the argument so that a future dtype-specific tile has a place.
pub fn configs(dtype: DType) -> Vec<GemmConfig> {
    let _ = dtype;
    let mut out = Vec::new();
    for (block_m, block_n, waves, mfma) in TILES {
        for splits in SPLITS {
            out.push(GemmConfig { block_m, block_n, waves, mfma, splits, stream_k: false });
        }
    }
    out.push(GemmConfig { block_m: 128, block_n: 128, waves: 4, mfma: Mfma::Tile32, splits: 1, stream_k: true });
    for waves in GEMV_WAVES {
        out.push(GemmConfig { block_m: GEMV_ROWS, block_n: GEMV_ROWS, waves, mfma: Mfma::Tile16, splits: 1, stream_k: false });
    }
    out
}

/// The decode GEMV's configuration for K = `k` elements of `dtype`: the most waves (of 1, 2, 4,
/// 8) that still give each at least 8 K-tiles.
pub fn gemv_config(dtype: DType, k: usize) -> GemmConfig {
    let k_tiles = (k * dtype.size()).div_ceil(K_TILE_BYTES as usize);
    let waves = GEMV_WAVES.iter().copied().filter(|&w| w == 1 || k_tiles / w as usize >= MIN_GEMV_TILES_PER_WAVE).max().unwrap_or(1);
    GemmConfig { block_m: GEMV_ROWS, block_n: GEMV_ROWS, waves, mfma: Mfma::Tile16, splits: 1, stream_k: false }
}

/// The configuration chosen for `batches` products of `[m, k] x [k, n]`. The rule:
/// - `m <= 16` (decode): the GEMV ([`gemv_config`]), which streams B once with its K split over
///   the waves of each 16-column block. (Where the operands do not allow its 16-byte loads, the
///   op runs [`tiled_config`]'s 16x64 tile instead.)
/// - otherwise [`tiled_config`].
///
/// On an MI300X ([`MI300X_CUS`]); [`choose_config_for`] plans for another GPU.
pub fn choose_config(dtype: DType, batches: usize, m: usize, n: usize, k: usize) -> GemmConfig {
    choose_config_for(MI300X_CUS, dtype, batches, m, n, k)
}

/// [`choose_config`] on a GPU of `cus` compute units ([`DeviceInfo::compute_units`](crate::DeviceInfo::compute_units)):
/// what [`gemm`] runs on its device.
pub fn choose_config_for(cus: usize, dtype: DType, batches: usize, m: usize, n: usize, k: usize) -> GemmConfig {
    if m <= GEMV_ROWS as usize { gemv_config(dtype, k) } else { tiled_config_for(cus, dtype, batches, m, n, k) }
}

/// The tiled GEMM's configuration for `batches` products of `[m, k] x [k, n]`. The rule:
/// - tile: 16x64 when `m <= 16` (a 128-row tile would spend 7/8 of its MFMAs and its operand
///   traffic on padding rows), else 128x128 on 32x32 MFMAs (half the issue slots of 16x16 ones
///   for the same work);
/// - stream-K for 128x128 tiles when whole blocks per workgroup would leave less than 90% of the
///   launch's resident slots (304 CUs x 2) working, whether the last of several rounds is partly
///   empty (4096^3: 1024 blocks in rounds of 608, 84%) or one round is (2048x2048x4096: 256
///   blocks, 42%), and its runs ([`stream_k_run`]) are shorter than a block or the blocks fill
///   a round. Modeled on MI300X (`cargo xtask bench`, `cargo xtask profile`): bf16 4096^3 229
///   us in two rounds of whole blocks, 203 us stream-K; under one round stream-K replaces
///   split-K, whose reduction pass costs as much as its first one: bf16 2048x2048x4096 82 -> 54
///   us, 512x4096x4096 53 -> 28, 3072x3072x4096 141 -> 120, f16 1024^3 14 -> 7; and two full
///   rounds (4864x4096x4096) stay whole blocks: 229 us against 232.
/// - otherwise splits: doubled (up to 32) while the grid has fewer workgroups than the GPU holds
///   at the designed occupancy (304 CUs x 2 workgroups of 4 waves, or x 8 one-wave workgroups),
///   each split still covers at least 8 K-tiles, and the f32 partials stay under 256 MiB. This is
///   what lets a skinny GEMM (M = 1, N = 4096, K = 4096: 64 tiles) stream its weights from every
///   CU.
pub fn tiled_config(dtype: DType, batches: usize, m: usize, n: usize, k: usize) -> GemmConfig {
    tiled_config_for(MI300X_CUS, dtype, batches, m, n, k)
}

/// [`tiled_config`] on a GPU of `cus` compute units.
pub fn tiled_config_for(cus: usize, dtype: DType, batches: usize, m: usize, n: usize, k: usize) -> GemmConfig {
    let cus = cus.max(1);
    let skinny = m <= 16;
    let (block_m, block_n, waves, mfma, per_cu) =
        if skinny { (16, 64, 1, Mfma::Tile16, 8) } else { (128, 128, 4, BLOCK_MFMA, BLOCKS_PER_CU) };
    let blocks = m.div_ceil(block_m as usize).max(1) * n.div_ceil(block_n as usize).max(1) * batches.max(1);
    let k_tiles = (k * dtype.size()).div_ceil(K_TILE_BYTES as usize);
    let slots = cus * per_cu;
    let used = blocks as f64 / (blocks.div_ceil(slots) * slots) as f64;
    if !skinny && used < STREAM_K_BELOW && (blocks >= slots || stream_k_run_for(cus, blocks, k_tiles) < k_tiles) {
        return GemmConfig { block_m, block_n, waves, mfma: Mfma::Tile32, splits: 1, stream_k: true };
    }
    let mut splits = 1usize;
    while splits * 2 <= *SPLITS.last().unwrap() as usize
        && blocks * splits < cus * per_cu
        && k_tiles / (splits * 2) >= MIN_TILES_PER_SPLIT
        && splits * 2 * batches * m * n * 4 <= MAX_PARTIAL_BYTES
    {
        splits *= 2;
    }
    GemmConfig { block_m, block_n, waves, mfma, splits: splits as u32, stream_k: false }
}

/// K-tiles per stream-K workgroup for `blocks` blocks of `k_tiles` K-tiles: an even share of
/// all of them over the resident slots (304 CUs x 2), but at least 8 (so that a run's set-up
/// and partial stay small next to its loop) and at least an eighth of a block (at most 8
/// workgroups share one: its finisher loads the others' partials one after another).
pub fn stream_k_run(blocks: usize, k_tiles: usize) -> usize {
    stream_k_run_for(MI300X_CUS, blocks, k_tiles)
}

/// [`stream_k_run`] on a GPU of `cus` compute units.
pub fn stream_k_run_for(cus: usize, blocks: usize, k_tiles: usize) -> usize {
    stream_k_share(cus.max(1) * BLOCKS_PER_CU, blocks, k_tiles, MIN_TILES_PER_SPLIT)
}

/// The units of K (K-tiles here, the block-scaled GEMM's scale blocks there) per stream-K run
/// for `blocks` blocks of `units` each over `slots` resident workgroups: an even share, at least
/// `min_run` and at least an eighth of a block (the fix-up the stream-K kernels share loads a
/// block's other contributors' partials one after another, so at most 8 share one).
pub(crate) fn stream_k_share(slots: usize, blocks: usize, units: usize, min_run: usize) -> usize {
    (blocks * units).div_ceil(slots.max(1)).max(min_run).max(units.div_ceil(MAX_CONTRIBUTORS)).max(1)
}

/// The kernel that runs configuration `cfg` on inputs of `dtype`.
fn kernel_for(dtype: DType, precision: F32Precision, cfg: &GemmConfig) -> Result<Kernel<GemmArgs>> {
    // Per input type: 128x128 on 16x16 MFMAs, on 32x32 MFMAs, stream-K on 32x32 MFMAs, the 16x64
    // tall-skinny tile and the decode GEMV.
    let [tile16, tile32, stream_k, skinny, gemv] = match (dtype, precision) {
        (DType::Bf16, _) => {
            [abi::GEMM_BF16_128X128, abi::GEMM_BF16_128X128_M32, abi::GEMM_BF16_128X128_M32_SK, abi::GEMM_BF16_16X64, abi::GEMV_BF16]
        }
        (DType::F16, _) => {
            [abi::GEMM_F16_128X128, abi::GEMM_F16_128X128_M32, abi::GEMM_F16_128X128_M32_SK, abi::GEMM_F16_16X64, abi::GEMV_F16]
        }
        (DType::F32, F32Precision::Exact) => {
            [abi::GEMM_F32_128X128, abi::GEMM_F32_128X128_M32, abi::GEMM_F32_128X128_M32_SK, abi::GEMM_F32_16X64, abi::GEMV_F32]
        }
        (DType::F32, F32Precision::Xf32) => {
            [abi::GEMM_XF32_128X128, abi::GEMM_XF32_128X128_M32, abi::GEMM_XF32_128X128_M32_SK, abi::GEMM_XF32_16X64, abi::GEMV_XF32]
        }
        (DType::Fp8E4M3Fnuz, _) => {
            [abi::GEMM_FP8_128X128, abi::GEMM_FP8_128X128_M32, abi::GEMM_FP8_128X128_M32_SK, abi::GEMM_FP8_16X64, abi::GEMV_FP8]
        }
        (DType::Fp8E5M2Fnuz, _) => {
            [abi::GEMM_BF8_128X128, abi::GEMM_BF8_128X128_M32, abi::GEMM_BF8_128X128_M32_SK, abi::GEMM_BF8_16X64, abi::GEMV_BF8]
        }
        (d, _) => {
            return Err(Error::DTypeMismatch {
                op: "gemm",
                what: "A",
                got: d,
                expected: "f32, f16, bf16, fp8e4m3fnuz or fp8e5m2fnuz".into(),
            });
        }
    };
    Ok(match (cfg.block_m, cfg.mfma) {
        _ if cfg.is_gemv() => gemv,
        _ if cfg.stream_k => stream_k,
        (16, _) => skinny,
        (_, Mfma::Tile16) => tile16,
        (_, Mfma::Tile32) => tile32,
    })
}

fn out_code(d: DType) -> Result<u32> {
    match d {
        DType::F32 => Ok(out_type::F32),
        DType::F16 => Ok(out_type::F16),
        DType::Bf16 => Ok(out_type::BF16),
        d => Err(Error::DTypeMismatch { op: "gemm", what: "output", got: d, expected: "f32, f16 or bf16".into() }),
    }
}

/// numpy broadcast of two batch shapes.
fn broadcast_batch(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Shape { op: "gemm", message: format!("batch dimensions {a:?} and {b:?} do not broadcast") });
        };
    }
    Ok(out)
}

/// An operand as the kernel reads it: rows of K contiguous elements.
struct Packed {
    t: Tensor,
    ld: usize,
    batch_stride: usize,
}

/// `x` viewed as `[batch..., rows, K]` (the last dimension K) made K-contiguous, with its batch
/// dimensions broadcast to `batch` and collapsed to one stride (materialised if they cannot be).
fn pack(x: &Tensor, batch: &[usize]) -> Result<Packed> {
    let r = x.rank();
    let (rows, k) = (x.shape()[r - 2], x.shape()[r - 1]);
    let mut full: Vec<usize> = batch.to_vec();
    full.extend([rows, k]);
    let mut t = x.broadcast_to(&full)?;
    let k_ok = k <= 1 || t.strides()[full.len() - 1] == 1;
    let (bshape, bstrides) = simplify(&full[..batch.len()], &t.strides()[..batch.len()]);
    let batch_ok = bshape.len() <= 1 || bstrides.iter().all(|&s| s == 0);
    if !k_ok || !batch_ok {
        t = contiguous(&t)?;
    }
    let n = full.len();
    let ld = if rows <= 1 { k.max(1) } else { t.strides()[n - 2] };
    let (_, bstrides) = simplify(&full[..batch.len()], &t.strides()[..batch.len()]);
    let batch_stride = bstrides.first().copied().unwrap_or(0);
    Ok(Packed { t, ld, batch_stride })
}

/// `t` (`[batch..., rows, k]`, K-contiguous) copied into fresh rows of `kp >= k` elements, zeros
/// past `k`: 16-byte aligned rows for the GEMV.
fn pad_rows(t: &Tensor, batch: &[usize], k: usize, kp: usize) -> Result<Packed> {
    let r = t.rank();
    let padded = if kp == k {
        crate::ops::layout::contiguous_aligned(t)?
    } else {
        let mut shape = t.shape().to_vec();
        shape[r - 1] = kp - k;
        let zeros = Tensor::zeros(t.device(), &shape, t.dtype())?;
        crate::ops::movement::concat(&[t, &zeros], r - 1)?
    };
    pack(&padded, batch)
}

/// `A * B` with default options (output in the input dtype; bf16 for fp8 inputs).
///
/// # Errors
/// As [`gemm`].
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    gemm(a, b, &GemmOptions::default())
}

/// `alpha * A * B` (+ bias, activation, residual) into a new tensor `[batch..., M, N]`.
///
/// # Errors
/// [`Error::Shape`] for mismatched inner dimensions or batch shapes, [`Error::DTypeMismatch`] for
/// unsupported or mixed dtypes, bias/residual of the wrong shape or dtype; allocation and
/// launch errors.
pub fn gemm(a: &Tensor, b: &Tensor, opts: &GemmOptions<'_>) -> Result<Tensor> {
    if opts.beta != 0.0 {
        return Err(Error::InvalidArgument { op: "gemm", message: "beta != 0 needs an existing C: use gemm_into".into() });
    }
    let (batch, m, n, _) = shapes(a, b)?;
    let out_dtype = opts.out_dtype.unwrap_or(default_out(a.dtype()));
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let c = Tensor::empty(a.device(), &shape, out_dtype)?;
    run(a, b, &c, opts)?;
    Ok(c)
}

/// `C = alpha * A * B + beta * C` (+ bias, activation, residual) into the existing tensor `c`
/// (`[batch..., M, N]`, contiguous, not sharing storage with A, B or the residual).
///
/// # Errors
/// As [`gemm`], and [`Error::Layout`] for a non-contiguous or aliasing C.
pub fn gemm_into(a: &Tensor, b: &Tensor, c: &Tensor, opts: &GemmOptions<'_>) -> Result<()> {
    let (batch, m, n, _) = shapes(a, b)?;
    let mut shape = batch;
    shape.extend([m, n]);
    if c.shape() != shape.as_slice() {
        return Err(Error::Shape { op: "gemm", message: format!("C is {:?}, the product is {shape:?}", c.shape()) });
    }
    if !c.is_contiguous() {
        return Err(Error::Layout { op: "gemm", message: "C must be contiguous".into() });
    }
    if let Some(d) = opts.out_dtype {
        if d != c.dtype() {
            return Err(Error::DTypeMismatch { op: "gemm", what: "C", got: c.dtype(), expected: d.to_string() });
        }
    }
    for (what, t) in [("A", Some(a)), ("B", Some(b)), ("residual", opts.residual)] {
        if let Some(t) = t {
            if std::sync::Arc::ptr_eq(t.storage(), c.storage()) {
                return Err(Error::Layout { op: "gemm", message: format!("C shares storage with {what}") });
            }
        }
    }
    run(a, b, c, opts)
}

fn default_out(d: DType) -> DType {
    match d {
        DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz => DType::Bf16,
        d => d,
    }
}

/// (broadcast batch, M, N, K) after checking ranks, inner dimensions and dtypes.
fn shapes(a: &Tensor, b: &Tensor) -> Result<(Vec<usize>, usize, usize, usize)> {
    if a.rank() < 2 || b.rank() < 2 {
        return Err(Error::Shape {
            op: "gemm",
            message: format!("operands must be at least 2-D, got {:?} and {:?}", a.shape(), b.shape()),
        });
    }
    if !a.device().same_device(b.device()) {
        return Err(Error::DeviceMismatch { op: "gemm", operand: "B" });
    }
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch { op: "gemm", what: "B", got: b.dtype(), expected: a.dtype().to_string() });
    }
    let (ra, rb) = (a.rank(), b.rank());
    let (m, ka) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let (kb, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
    if ka != kb {
        return Err(Error::Shape { op: "gemm", message: format!("inner dimensions differ: A is {:?}, B is {:?}", a.shape(), b.shape()) });
    }
    let batch = broadcast_batch(&a.shape()[..ra - 2], &b.shape()[..rb - 2])?;
    Ok((batch, m, n, ka))
}

fn run(a: &Tensor, b: &Tensor, c: &Tensor, opts: &GemmOptions<'_>) -> Result<()> {
    let (batch, m, n, k) = shapes(a, b)?;
    let oc = out_code(c.dtype())?;
    let dev = a.device();
    // The plan is the device's: its compute units (304 on MI300X and on the emulator).
    let cus = dev.info().compute_units as usize;
    // Every operand on A's device before anything runs (packing launches copies).
    let mut ops = Operands::new("gemm", dev);
    ops.check_device("C", c)?;
    if let Some(bias) = opts.bias {
        ops.check_device("bias", bias)?;
    }
    if let Some(r) = opts.residual {
        ops.check_device("residual", r)?;
    }
    let batches: usize = batch.iter().product();
    if m == 0 || n == 0 || batches == 0 {
        return Ok(());
    }
    let eb = a.dtype().size();

    let pa = pack(a, &batch)?;
    // B is [.., K, N]; the kernel reads B^T = [.., N, K] K-contiguous.
    let bt = b.transpose(b.rank() - 2, b.rank() - 1)?;
    let pb = pack(&bt, &batch)?;

    let mut fl = 0u32;
    // The packed copies made here are temporaries: `ops` holds them until the stream has
    // passed the launches that read them.
    let bias_ptr = match opts.bias {
        Some(bias) => {
            if bias.shape() != [n] || bias.dtype() != DType::F32 {
                return Err(Error::Shape {
                    op: "gemm",
                    message: format!("bias must be [{n}] f32, got {:?} {}", bias.shape(), bias.dtype()),
                });
            }
            fl |= flags::BIAS;
            ops.input::<f32>("bias", &contiguous(bias)?)?
        }
        None => DevPtr::NULL,
    };
    let (res_ptr, ldr, rstride) = match opts.residual {
        Some(r) => {
            let mut want = batch.clone();
            want.extend([m, n]);
            if r.dtype() != c.dtype() {
                return Err(Error::DTypeMismatch { op: "gemm", what: "residual", got: r.dtype(), expected: c.dtype().to_string() });
            }
            let p = pack(&r.broadcast_to(&want)?, &batch)?;
            fl |= flags::RESIDUAL;
            (ops.input_bytes("residual", &p.t)?, p.ld, p.batch_stride)
        }
        None => (DevPtr::NULL, 0, 0),
    };
    if opts.beta != 0.0 {
        fl |= flags::BETA;
    }
    let aligned = |p: &Packed| p.t.addr() % 16 == 0 && (p.ld * eb) % 16 == 0 && (p.batch_stride * eb) % 16 == 0;
    let mut cfg = match opts.config {
        Some(cfg) => {
            if !configs(a.dtype()).contains(&cfg) {
                return Err(Error::InvalidArgument { op: "gemm", message: format!("{cfg:?} is not one of gemm::configs({})", a.dtype()) });
            }
            cfg
        }
        None => choose_config_for(cus, a.dtype(), batches, m, n, k),
    };
    // The GEMV reads whole 16-byte pieces of rows. Where the operands do not allow that, the
    // chooser's pick becomes the tiled GEMM (copying B, the weight, would cost more than the
    // GEMV saves); a requested GEMV gets aligned copies with rows padded by zeros.
    let (mut pa, mut pb, mut k) = (pa, pb, k);
    if cfg.is_gemv() && !(aligned(&pa) && aligned(&pb)) {
        if opts.config.is_none() {
            cfg = tiled_config_for(cus, a.dtype(), batches, m, n, k);
        } else {
            let kp = k.next_multiple_of(16 / eb);
            pa = pad_rows(&pa.t, &batch, k, kp)?;
            pb = pad_rows(&pb.t, &batch, k, kp)?;
            k = kp;
        }
    }
    if aligned(&pa) && aligned(&pb) {
        fl |= flags::VECTOR_OK;
    }
    let kernel = kernel_for(a.dtype(), opts.f32_precision, &cfg)?;
    // The kernel addresses one block's rows of an operand through a buffer resource, whose
    // range and offsets are 32-bit: up to 128 rows of `ld` elements and K more must fit (the
    // GEMV's offsets past the range add 2^31, so its rows must stay under 2 GiB).
    let (limit, room) = if cfg.is_gemv() { ((1u128 << 31) - 64, "2 GiB") } else { (u32::MAX as u128, "4 GiB") };
    for (what, p, rows, block) in [("A", &pa, m, cfg.block_m), ("B", &pb, n, cfg.block_n)] {
        let span = (rows.min(block as usize).max(1) - 1) as u128 * (p.ld * eb) as u128 + (k * eb) as u128;
        if span > limit {
            return Err(Error::Unsupported {
                op: "gemm",
                what: format!("{what}'s rows of one {block}-row block span {span} bytes (the kernel addresses at most {room} per block)"),
            });
        }
    }
    let k_tiles = (k * eb).div_ceil(K_TILE_BYTES as usize).max(1);
    // Every split gets the same number of K-tiles; none is left empty.
    let per_split = k_tiles.div_ceil(cfg.splits as usize);
    let splits = k_tiles.div_ceil(per_split);
    let c_ptr = ops.output_bytes("C", c)?;
    let mut args = GemmArgs {
        a: ops.input_bytes("A", &pa.t)?,
        b: ops.input_bytes("B", &pb.t)?,
        c: c_ptr,
        bias: bias_ptr,
        residual: res_ptr,
        workspace: DevPtr::NULL,
        counters: DevPtr::NULL,
        batch_stride_a: pa.batch_stride as u64,
        batch_stride_b: pb.batch_stride as u64,
        batch_stride_c: (m * n) as u64,
        batch_stride_r: rstride as u64,
        split_stride_c: 0,
        m: ops.u32("M", m)?,
        n: ops.u32("N", n)?,
        k: ops.u32("K", k)?,
        lda: ops.u32("lda", pa.ld)?,
        ldb: ops.u32("ldb", pb.ld)?,
        ldc: ops.u32("N", n)?,
        ldr: ops.u32("ldr", ldr)?,
        alpha: opts.alpha,
        beta: opts.beta,
        out_type: oc,
        activation: opts.activation.code(),
        flags: fl,
        k_tiles_per_split: ops.u32("K tiles", per_split)?,
        splits: ops.u32("splits", splits)?,
        sk_per: 0,
        sk_total: 0,
    };
    if cfg.is_gemv() {
        // One pass: the waves of a workgroup split K, each `k_tiles_per_split` K-tiles.
        args.k_tiles_per_split = ops.u32("K tiles", k_tiles.div_ceil(cfg.waves as usize))?;
        args.splits = 1;
        let grid = [
            ops.u32("N blocks", n.div_ceil(GEMV_ROWS as usize))?,
            ops.u32("M blocks", m.div_ceil(GEMV_ROWS as usize))?,
            ops.u32("batches", batches)?,
        ];
        let launch = LaunchConfig { grid, block: [cfg.waves * 64, 1, 1], dynamic_lds_bytes: abi::gemv_lds_bytes(cfg.waves) };
        // SAFETY: as for the tiled kernel below; the operands are 16-byte aligned with 16-byte
        // row and batch strides (VECTOR_OK, which the GEMV needs).
        return unsafe { ops.launch(kernel, launch, &args) };
    }
    let grid = [
        ops.u32("N blocks", n.div_ceil(cfg.block_n as usize))?,
        ops.u32("M blocks", m.div_ceil(cfg.block_m as usize))?,
        ops.u32("batch x splits", batches * splits)?,
    ];
    let launch = LaunchConfig { grid, block: [cfg.waves * 64, 1, 1], dynamic_lds_bytes: abi::gemm_lds_bytes(cfg.block_m, cfg.block_n) };
    if cfg.stream_k {
        // Every block's K-tiles, block after block, in runs of `per`: one run per workgroup, as
        // many workgroups as the GPU holds at once (fewer for a small problem: `stream_k_run`).
        let (bm, bn) = (cfg.block_m as usize, cfg.block_n as usize);
        let blocks = batches * m.div_ceil(bm) * n.div_ceil(bn);
        let total = blocks * k_tiles;
        let per = stream_k_run_for(cus, blocks, k_tiles);
        let workgroups = total.div_ceil(per);
        let slots = workgroups * abi::SK_SLOTS_PER_WORKGROUP as usize;
        let workspace = dev.alloc::<f32>(slots * bm * bn)?;
        let counters = dev.zeros::<u32>(blocks * cfg.waves as usize)?;
        args.workspace = ops.buffer("stream-K partials", &workspace)?;
        args.counters = ops.buffer("stream-K counters", &counters)?;
        args.sk_per = ops.u32("K-tiles per stream-K workgroup", per)?;
        args.sk_total = ops.u32("K-tiles of all blocks", total)?;
        let launch = LaunchConfig { grid: [ops.u32("stream-K workgroups", workgroups)?, 1, 1], ..launch };
        // SAFETY: as for the one-pass kernel below; the workspace holds every workgroup's slots
        // and the counters (zeroed on this stream before the launch) one u32 per block and wave.
        return unsafe { ops.launch(kernel, launch, &args) };
    }
    if splits == 1 {
        // SAFETY: A and B are K-contiguous views of `[batch][rows][ld]` inside their storage (the
        // kernel clamps rows and reads at most K elements per row); C, residual and bias were
        // shaped and typed above.
        return unsafe { ops.launch(kernel, launch, &args) };
    }

    // Split-K: f32 partials `[split][batch][M][N]`, then the reduction runs the epilogue.
    let elems = batches * m * n;
    let partial = dev.alloc::<f32>(splits * elems)?;
    let partial_ptr = ops.buffer("split-K partials", &partial)?;
    args.c = partial_ptr.cast();
    args.split_stride_c = elems as u64;
    args.flags = (fl & flags::VECTOR_OK) | flags::PARTIAL;
    // SAFETY: as above; the partials buffer holds every split's `[batch][M][N]` f32 results.
    unsafe { ops.launch(kernel, launch, &args)? };

    let red = GemmReduceArgs {
        partial: partial_ptr,
        c: c_ptr,
        bias: bias_ptr,
        residual: res_ptr,
        split_stride: elems as u64,
        batch_stride_r: rstride as u64,
        rows: ops.u32("batch x M", batches * m)?,
        m: ops.u32("M", m)?,
        n: ops.u32("N", n)?,
        ldr: ops.u32("ldr", ldr)?,
        splits: splits as u32,
        alpha: opts.alpha,
        beta: opts.beta,
        out_type: oc,
        activation: opts.activation.code(),
        flags: fl & (flags::BIAS | flags::RESIDUAL | flags::BETA),
    };
    // SAFETY: the partials were written by the launch above (work on a stream runs in order);
    // C, bias and residual as for the one-pass kernel.
    unsafe { reduce_splits(&mut ops, red) }
}

/// The split-K second pass (`gemm_splitk_reduce`) over `red`'s `rows x n` outputs: 4 columns
/// per work-item (16-byte partial loads and 16- or 8-byte C stores), with `VECTOR_OK` added
/// when C's base is 16-byte aligned and N a multiple of 4. Shared by the dense GEMM and the
/// quantized prefill GEMM's split K.
///
/// # Safety
/// `red`'s pointers hold its shapes (partials `[splits][rows][n]` f32, C and the residual of
/// `out_type`, the bias N f32), the partials written by earlier work on the stream.
pub(crate) unsafe fn reduce_splits(ops: &mut Operands<'_>, mut red: GemmReduceArgs) -> Result<()> {
    let items = red.rows as usize * (red.n as usize).div_ceil(abi::REDUCE_COLS as usize);
    if red.c.addr() % 16 == 0 && red.n % 4 == 0 {
        red.flags |= flags::VECTOR_OK;
    }
    ops.u32("reduction work-items", items)?;
    let launch = LaunchConfig {
        grid: [ops.u32("reduction workgroups", items.div_ceil(abi::REDUCE_THREADS as usize))?, 1, 1],
        block: [abi::REDUCE_THREADS, 1, 1],
        dynamic_lds_bytes: 0,
    };
    // SAFETY: caller.
    unsafe { ops.launch(abi::GEMM_SPLITK_REDUCE, launch, &red) }
}
