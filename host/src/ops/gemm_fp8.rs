//! fp8 GEMM with block scales (DeepSeek-V3 / DeepGEMM style), plain and grouped for
//! mixture-of-experts layers.
//!
//! Values are E4M3FNUZ (gfx942's fp8); every 128 consecutive K values of a row of A share one f32
//! scale, and every 128 x 128 block of B (rows `n`, K) shares one:
//!
//! `C[m][n] = sum_kb a_scale[m][kb] * b_scale[n / 128][kb] * sum_{k in block kb} A[m][k] * B[n][k]`
//!
//! with `kb = k / 128`, so `a_scale` is `[M, ceil(K/128)]` and `b_scale` is
//! `[ceil(N/128), ceil(K/128)]` (any strides: the column-major scale layout DeepGEMM uses is a
//! transposed view). B is `[N, K]`, the weight layout (`y = x W^T`). C is bf16. Each 128-wide
//! block's products are summed in f32 on the matrix cores and then scaled and added to the f32
//! accumulator ("promotion"), so scales never enter the fp8 arithmetic.
//!
//! ```no_run
//! use ferrocm::{Device, Fp8E4M3Fnuz, Tensor, ops::gemm_fp8};
//! let dev = Device::new()?;
//! let (m, n, k) = (64, 256, 512);
//! let a = Tensor::from_slice(&dev, &vec![Fp8E4M3Fnuz::from_f32(1.0); m * k], &[m, k])?;
//! let a_scale = Tensor::from_slice(&dev, &vec![0.5f32; m * k / 128], &[m, k / 128])?;
//! let w = Tensor::from_slice(&dev, &vec![Fp8E4M3Fnuz::from_f32(1.0); n * k], &[n, k])?;
//! let w_scale = Tensor::from_slice(&dev, &vec![2.0f32; (n / 128) * (k / 128)], &[n / 128, k / 128])?;
//! let y = gemm_fp8::gemm_fp8_blockscaled(&a, &a_scale, &w, &w_scale)?; // [64, 256] bf16, all 512.0
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! # FNUZ, not OCP
//! gfx942's fp8 is E4M3**FNUZ** (exponent bias 8, max 240, one NaN `0x80`, no -0), while
//! checkpoints quantised for NVIDIA GPUs (and gfx950) use OCP **E4M3FN** (bias 7, max 448). The
//! same bits mean half the value here: convert weights once at load time with
//! [`Fp8E4M3Fnuz::from_e4m3fn_bits`](crate::Fp8E4M3Fnuz::from_e4m3fn_bits), which keeps the bits (so nothing is rounded)
//! and asks for the scales to be doubled.
//!
//! # Grouped forms
//! - [`gemm_fp8_grouped_contiguous`]: the tokens of all experts in one `[M, K]` A, each expert's
//!   segment padded to a multiple of 128 rows; `expert_ids[row]` names the expert (`-1` marks
//!   padding). B is `[G, N, K]`.
//! - [`gemm_fp8_grouped_masked`]: A is `[G, M, K]`, one slab per expert, of which the first
//!   `valid_rows[g]` rows are real (the decode-time layout, where M is a capacity).
//!
//! Both read the indices back to the host to check them before launching (a bad id would make the
//! kernel read another tensor's memory).

use crate::backend::MI300X_CUS;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::gemm;
use crate::ops::layout::contiguous;
use crate::ops::movement::transpose_last2;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor, u32_of};
use ferrocm_device::abi::gemm::{self as gemm_abi, GemmReduceArgs, K_TILE_BYTES, gemm_lds_bytes};
use ferrocm_device::abi::gemm_blockscaled::{self as abi, BlockScaledArgs, SCALE_BLOCK, flags, group_mode};
use ferrocm_device::abi::{DevPtr, Kernel};

const OP: &str = "gemm_fp8_blockscaled";
/// Rows per block of the contiguous layout's rule (one expert per 128 rows).
const BLOCK: usize = 128;

/// One configuration of the block-scaled kernels: the output block of a workgroup and the split
/// of K. Enumerable ([`configs`]) for tuning sweeps and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockScaledConfig {
    /// Rows and columns of C per workgroup: 128 (4 waves of 64x64) or 64 (one wave, for M <= 64
    /// per group: decode-time mixture of experts).
    pub block: u32,
    /// Slices of K (whole 128-wide scale blocks) reduced by separate workgroups into f32
    /// partials, then summed in split order by a second kernel (1 = one pass).
    pub splits: u32,
    /// Stream-K (128x128 blocks, one split, the plain form only): every block's scale blocks,
    /// block after block, dealt out in runs of [`stream_k_run`] to as many workgroups as the
    /// GPU holds at once; a block split between workgroups is finished by the last of them to
    /// arrive.
    pub stream_k: bool,
}

/// The split counts a configuration may use.
pub const SPLITS: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// A split reduces at least this many scale blocks, so its prologue and partial store stay small
/// next to its main loop.
const MIN_BLOCKS_PER_SPLIT: usize = 4;
/// The chooser keeps split-K partials under this many bytes.
const MAX_PARTIAL_BYTES: usize = 256 << 20;
/// K-tiles (64 fp8 values) per 128-wide scale block.
const TILES_PER_BLOCK: usize = SCALE_BLOCK as usize / K_TILE_BYTES as usize;

/// Every configuration: both blocks, each with every split count of [`SPLITS`].
pub fn configs() -> Vec<BlockScaledConfig> {
    let mut out = Vec::new();
    for block in [128, abi::SMALL_BLOCK] {
        for splits in SPLITS {
            out.push(BlockScaledConfig { block, splits, stream_k: false });
        }
    }
    out.push(BlockScaledConfig { block: 128, splits: 1, stream_k: true });
    out
}

/// The configuration for `m` rows per group (masked mode: the slab's capacity), `groups` groups
/// launched (masked mode; else 1), N and K. The rule:
/// - stream-K ([`BlockScaledConfig::stream_k`]) for one problem (`groups <= 1`, more than 64
///   rows) when its runs leave the busiest CU at most 92% of the scale blocks whole blocks give
///   it ([`stream_k_pays`]);
/// - otherwise [`split_config_for`]'s, which is also what the grouped forms run (stream-K deals
///   out one problem's blocks).
///
/// On an MI300X ([`MI300X_CUS`]); [`choose_config_for`] plans for another GPU.
pub fn choose_config(groups: usize, m: usize, n: usize, k: usize) -> BlockScaledConfig {
    choose_config_for(MI300X_CUS, groups, m, n, k)
}

/// [`choose_config`] on a GPU of `cus` compute units ([`DeviceInfo::compute_units`](crate::DeviceInfo::compute_units)):
/// what the ops run on their device.
pub fn choose_config_for(cus: usize, groups: usize, m: usize, n: usize, k: usize) -> BlockScaledConfig {
    if groups <= 1 && m > abi::SMALL_BLOCK as usize && stream_k_pays(cus, m, n, k) {
        return BlockScaledConfig { block: 128, splits: 1, stream_k: true };
    }
    split_config_for(cus, groups, m, n, k)
}

/// Whether stream-K pays for one `m x n x k` problem of 128x128 blocks on `cus` CUs: when its
/// runs ([`stream_k_run`]) leave the busiest CU at most 92% of the scale blocks that whole blocks
/// give it, a CU's workgroups counted two at a time (the two resident workgroups share the CU:
/// one alone is not twice as fast). 4096x2112x7168 (544 blocks of 56 scale blocks on 608
/// slots): whole blocks put two on 240 CUs (112 scale blocks), runs of 51 leave 102 (91%);
/// 4096x7168x2048 (1792 blocks of 16): 6 blocks (96) either way, so whole blocks.
pub fn stream_k_pays(cus: usize, m: usize, n: usize, k: usize) -> bool {
    let cus = cus.max(1);
    let blocks = m.div_ceil(128).max(1) * n.div_ceil(128).max(1);
    let units = k.div_ceil(SCALE_BLOCK as usize).max(1);
    let whole = blocks.div_ceil(cus).next_multiple_of(STREAM_K_RESIDENT) * units;
    let per = stream_k_run_for(cus, blocks, units);
    let runs = (blocks * units).div_ceil(per);
    let streamed = runs.div_ceil(cus).next_multiple_of(STREAM_K_RESIDENT) * per;
    (streamed as f64) <= STREAM_K_AT_MOST * whole as f64
}

/// Workgroups of the 128x128 kernels resident per CU (LDS and registers allow two).
const STREAM_K_RESIDENT: usize = 2;
/// [`stream_k_pays`]' bound: streamed over whole-block scale blocks on the busiest CU.
const STREAM_K_AT_MOST: f64 = 0.92;
/// Scale blocks a stream-K run covers at least (so that its set-up and partial stay small next
/// to its loop; as `gemm`'s 8 K-tiles).
const STREAM_K_MIN_RUN: usize = 4;

/// Scale blocks per stream-K workgroup for `blocks` 128x128 blocks of `units` scale blocks:
/// an even share over the resident slots (304 CUs x 2), at least 4 and at least an eighth of a
/// block. On an MI300X; [`stream_k_run_for`] plans for another GPU.
pub fn stream_k_run(blocks: usize, units: usize) -> usize {
    stream_k_run_for(MI300X_CUS, blocks, units)
}

/// [`stream_k_run`] on a GPU of `cus` compute units.
pub fn stream_k_run_for(cus: usize, blocks: usize, units: usize) -> usize {
    gemm::stream_k_share(cus.max(1) * STREAM_K_RESIDENT, blocks, units, STREAM_K_MIN_RUN)
}

/// The configuration without stream-K. The rule:
/// - block: 64 when `m <= 64` (decode-time shapes: a 128-row block would spend half or more of its
///   MFMAs and A traffic on padding rows, and there would be half as many workgroups), else 128;
/// - splits: doubled (up to 32) while the doubled grid still fits in what the GPU holds at once
///   (304 CUs x 2 workgroups of 4 waves, or x 8 one-wave workgroups), each split keeps at least 4
///   scale blocks, and the f32 partials stay under 256 MiB. Splitting only adds parallelism that
///   would otherwise sit idle: a grid that already takes a second round is not split, since the
///   partials' round trip and the reduction cost more than the round (measured at 4096x2112x7168,
///   544 blocks: 81.5 us one pass, 102.8 us split in two). A decode-time expert GEMM (M = 8,
///   N = 4096, K = 7168: 64 blocks) needs the splits to stream its weights from every CU.
///
/// On a GPU of `cus` compute units.
pub fn split_config_for(cus: usize, groups: usize, m: usize, n: usize, k: usize) -> BlockScaledConfig {
    let small = m <= abi::SMALL_BLOCK as usize;
    let (block, per_cu) = if small { (abi::SMALL_BLOCK as usize, 8) } else { (128, 2) };
    let blocks = m.div_ceil(block).max(1) * n.div_ceil(block).max(1) * groups.max(1);
    let scale_blocks = k.div_ceil(SCALE_BLOCK as usize);
    let mut splits = 1usize;
    while splits * 2 <= *SPLITS.last().unwrap() as usize
        && blocks * splits * 2 <= cus.max(1) * per_cu
        && scale_blocks / (splits * 2) >= MIN_BLOCKS_PER_SPLIT
        && splits * 2 * groups.max(1) * m * n * 4 <= MAX_PARTIAL_BYTES
    {
        splits *= 2;
    }
    BlockScaledConfig { block: block as u32, splits: splits as u32, stream_k: false }
}

/// Options of the block-scaled GEMMs.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockScaledOptions {
    /// Run this configuration instead of [`choose_config`]'s (one of [`configs`]).
    pub config: Option<BlockScaledConfig>,
}

/// `ceil(x / 128)`: scale blocks along a dimension of `x`.
pub fn scale_blocks(x: usize) -> usize {
    x.div_ceil(SCALE_BLOCK as usize)
}

/// `C = A * B^T` with block scales: A `[M, K]`, `a_scale` `[M, ceil(K/128)]`, B `[N, K]`,
/// `b_scale` `[ceil(N/128), ceil(K/128)]`; returns `[M, N]` bf16.
///
/// # Errors
/// [`Error::DTypeMismatch`] unless A and B are E4M3FNUZ and the scales f32; [`Error::Shape`]
/// for inconsistent shapes; [`Error::Unsupported`] for rows too long to address with 32-bit
/// offsets; allocation and launch errors.
pub fn gemm_fp8_blockscaled(a: &Tensor, a_scale: &Tensor, b: &Tensor, b_scale: &Tensor) -> Result<Tensor> {
    gemm_fp8_blockscaled_with(a, a_scale, b, b_scale, &BlockScaledOptions::default())
}

/// [`gemm_fp8_blockscaled`] with options (a forced configuration).
///
/// # Errors
/// As [`gemm_fp8_blockscaled`]; [`Error::InvalidArgument`] for a configuration not in [`configs`].
pub fn gemm_fp8_blockscaled_with(a: &Tensor, a_scale: &Tensor, b: &Tensor, b_scale: &Tensor, opts: &BlockScaledOptions) -> Result<Tensor> {
    rank(a, 2, "A")?;
    rank(b, 2, "B")?;
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[0]);
    let (b3, bs3) = (b.unsqueeze(0)?, b_scale.unsqueeze(0)?);
    let c = Tensor::empty(a.device(), &[m, n], DType::Bf16)?;
    let p = Problem { groups: 1, m, n, k };
    p.launch(group_mode::NONE, a, a_scale, &b3, &bs3, None, &c, opts)?;
    Ok(c)
}

/// Grouped (mixture-of-experts) block-scaled GEMM, contiguous layout: row `r` of A `[M, K]` is
/// multiplied by expert `expert_ids[r]`'s B (`[G, N, K]`, scales `[G, ceil(N/128), ceil(K/128)]`);
/// returns `[M, N]` bf16.
///
/// Layout rule (DeepGEMM's): experts' segments are aligned to 128 rows, padding at the end of a
/// segment. Every 128-row block `[128 i, 128 i + 128)` holds rows of one expert followed by
/// padding (`-1`), or only padding. Padding rows of C are 0 in blocks of only padding; in an
/// expert's last block they hold that expert's product of whatever A has in those rows.
///
/// # Errors
/// As [`gemm_fp8_blockscaled`]; [`Error::InvalidArgument`] for an id outside `-1..G` or a block
/// that breaks the layout rule (named in the message), [`Error::DTypeMismatch`] unless
/// `expert_ids` is i32 `[M]`.
pub fn gemm_fp8_grouped_contiguous(a: &Tensor, a_scale: &Tensor, b: &Tensor, b_scale: &Tensor, expert_ids: &Tensor) -> Result<Tensor> {
    gemm_fp8_grouped_contiguous_with(a, a_scale, b, b_scale, expert_ids, &BlockScaledOptions::default())
}

/// [`gemm_fp8_grouped_contiguous`] with options (a forced configuration).
///
/// # Errors
/// As [`gemm_fp8_grouped_contiguous`]; [`Error::InvalidArgument`] for a configuration not in
/// [`configs`].
pub fn gemm_fp8_grouped_contiguous_with(
    a: &Tensor,
    a_scale: &Tensor,
    b: &Tensor,
    b_scale: &Tensor,
    expert_ids: &Tensor,
    opts: &BlockScaledOptions,
) -> Result<Tensor> {
    rank(a, 2, "A")?;
    rank(b, 3, "B")?;
    let (m, k) = (a.shape()[0], a.shape()[1]);
    let (groups, n) = (b.shape()[0], b.shape()[1]);
    index_tensor(expert_ids, &[m], "expert_ids")?;
    let ids = expert_ids.to_vec::<i32>()?;
    check_contiguous_ids(&ids, groups)?;
    let c = Tensor::zeros(a.device(), &[m, n], DType::Bf16)?;
    let ids = contiguous(expert_ids)?;
    let p = Problem { groups, m, n, k };
    p.launch(group_mode::CONTIGUOUS, a, a_scale, b, b_scale, Some(&ids), &c, opts)?;
    Ok(c)
}

/// Grouped (mixture-of-experts) block-scaled GEMM, masked layout: A `[G, M, K]` (scales
/// `[G, M, ceil(K/128)]`) times B `[G, N, K]` (scales `[G, ceil(N/128), ceil(K/128)]`), of which
/// only the first `valid_rows[g]` rows of each slab are computed; returns `[G, M, N]` bf16 with
/// the rows past `valid_rows[g]` zero.
///
/// # Errors
/// As [`gemm_fp8_blockscaled`]; [`Error::InvalidArgument`] for a count outside `0..=M`,
/// [`Error::DTypeMismatch`] unless `valid_rows` is i32 `[G]`.
pub fn gemm_fp8_grouped_masked(a: &Tensor, a_scale: &Tensor, b: &Tensor, b_scale: &Tensor, valid_rows: &Tensor) -> Result<Tensor> {
    gemm_fp8_grouped_masked_with(a, a_scale, b, b_scale, valid_rows, &BlockScaledOptions::default())
}

/// [`gemm_fp8_grouped_masked`] with options (a forced configuration).
///
/// # Errors
/// As [`gemm_fp8_grouped_masked`]; [`Error::InvalidArgument`] for a configuration not in
/// [`configs`].
pub fn gemm_fp8_grouped_masked_with(
    a: &Tensor,
    a_scale: &Tensor,
    b: &Tensor,
    b_scale: &Tensor,
    valid_rows: &Tensor,
    opts: &BlockScaledOptions,
) -> Result<Tensor> {
    rank(a, 3, "A")?;
    rank(b, 3, "B")?;
    let (groups, m, k) = (a.shape()[0], a.shape()[1], a.shape()[2]);
    let n = b.shape()[1];
    if b.shape()[0] != groups {
        return Err(shape(format!("A has {groups} groups, B {:?} has {}", b.shape(), b.shape()[0])));
    }
    index_tensor(valid_rows, &[groups], "valid_rows")?;
    let counts = valid_rows.to_vec::<i32>()?;
    if let Some((g, &c)) = counts.iter().enumerate().find(|(_, c)| **c < 0 || **c as usize > m) {
        return Err(Error::InvalidArgument { op: OP, message: format!("valid_rows[{g}] = {c} is outside 0..={m}") });
    }
    let c = Tensor::zeros(a.device(), &[groups, m, n], DType::Bf16)?;
    let counts = contiguous(valid_rows)?;
    let p = Problem { groups, m, n, k };
    p.launch(group_mode::MASKED, a, a_scale, b, b_scale, Some(&counts), &c, opts)?;
    Ok(c)
}

/// The contiguous layout rule (see [`gemm_fp8_grouped_contiguous`]).
fn check_contiguous_ids(ids: &[i32], groups: usize) -> Result<()> {
    if let Some((r, &id)) = ids.iter().enumerate().find(|(_, id)| **id < -1 || **id >= groups as i32) {
        return Err(Error::InvalidArgument { op: OP, message: format!("expert_ids[{r}] = {id} is outside -1..{groups}") });
    }
    for (blk, rows) in ids.chunks(BLOCK).enumerate() {
        let first = rows[0];
        let r0 = blk * BLOCK;
        // One expert, then padding: once a row is padding, the rest of the block is too.
        let mut padding = first < 0;
        for (i, &id) in rows.iter().enumerate().skip(1) {
            if id < 0 {
                padding = true;
            } else if padding || id != first {
                return Err(Error::InvalidArgument {
                    op: OP,
                    message: format!(
                        "expert_ids[{}] = {id} breaks the contiguous layout: rows {r0}..{} must be one expert's rows \
                         followed by padding (-1), each expert's segment padded to a multiple of {BLOCK} rows",
                        r0 + i,
                        r0 + rows.len()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Sizes shared by the three forms (`m`: rows of A, per group in masked mode).
struct Problem {
    groups: usize,
    m: usize,
    n: usize,
    k: usize,
}

impl Problem {
    /// Checks every operand against the problem and launches. `a`, `a_scale` have a leading
    /// group dimension in masked mode; `b` and `b_scale` always do.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        mode: u32,
        a: &Tensor,
        a_scale: &Tensor,
        b: &Tensor,
        b_scale: &Tensor,
        info: Option<&Tensor>,
        c: &Tensor,
        opts: &BlockScaledOptions,
    ) -> Result<()> {
        let (g, m, n, k) = (self.groups, self.m, self.n, self.k);
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        for (what, t) in [("A", a), ("B", b)] {
            if t.dtype() != DType::Fp8E4M3Fnuz {
                return Err(Error::DTypeMismatch { op: OP, what, got: t.dtype(), expected: "fp8e4m3fnuz".into() });
            }
        }
        for (what, t) in [("a_scale", a_scale), ("b_scale", b_scale)] {
            if t.dtype() != DType::F32 {
                return Err(Error::DTypeMismatch { op: OP, what, got: t.dtype(), expected: "f32".into() });
            }
        }
        let mut ops = Operands::new(OP, c.device());
        for (what, t) in [("A", a), ("a_scale", a_scale), ("B", b), ("b_scale", b_scale)] {
            ops.check_device(what, t)?;
        }
        if let Some(t) = info {
            ops.check_device(if mode == group_mode::MASKED { "valid_rows" } else { "expert_ids" }, t)?;
        }
        let masked = mode == group_mode::MASKED;
        let want = |lead: bool, rows: usize, cols: usize| if lead { vec![g, rows, cols] } else { vec![rows, cols] };
        expect(a, &want(masked, m, k), "A")?;
        expect(a_scale, &want(masked, m, kb), "a_scale")?;
        expect(b, &[g, n, k], "B")?;
        expect(b_scale, &[g, nb, kb], "b_scale")?;
        if m == 0 || n == 0 || g == 0 {
            return Ok(());
        }

        let cfg = match opts.config {
            Some(cfg) => {
                if !configs().contains(&cfg) {
                    return Err(Error::InvalidArgument { op: OP, message: format!("{cfg:?} is not one of gemm_fp8::configs()") });
                }
                cfg
            }
            None => {
                let cus = a.device().info().compute_units as usize;
                // (Stream-K deals out one problem's blocks: the grouped forms split instead.)
                if mode == group_mode::NONE {
                    choose_config_for(cus, 1, m, n, k)
                } else {
                    split_config_for(cus, if masked { g } else { 1 }, m, n, k)
                }
            }
        };
        if cfg.stream_k && mode != group_mode::NONE {
            return Err(Error::InvalidArgument {
                op: OP,
                message: format!("{cfg:?}: stream-K runs the plain form only, not a grouped one"),
            });
        }
        let block = cfg.block as usize;

        // Operands: rows K-contiguous (else copied so).
        let a = k_contiguous(a)?;
        let b = k_contiguous(b)?;
        let (lda, ldb) = (row_stride(&a), row_stride(&b));
        for (what, ld) in [("A", lda), ("B", ldb)] {
            // A block's rows must be addressable by the kernel's 32-bit buffer offsets.
            if (block - 1) as u64 * ld as u64 + k as u64 > u32::MAX as u64 {
                return Err(Error::Unsupported {
                    op: OP,
                    what: format!("{what} rows of {ld} bytes ({block} of them must span under 4 GiB)"),
                });
            }
        }
        // A's scales with each K block's rows contiguous (DeepGEMM's layout, read in place, 4 rows
        // per 16-byte load); other layouts are transposed into it by the LDS-tiled transpose
        // (M x K/128 values: small next to A; the strided gather took 5.0 us for the row-major
        // [4096, 56] of 4096x2112x7168).
        let sa_r = a_scale.rank();
        let a_scale = if m <= 1 || a_scale.strides()[sa_r - 2] == 1 {
            a_scale.clone()
        } else {
            transpose_last2(a_scale)?.transpose(sa_r - 2, sa_r - 1)?
        };
        let group_stride = |t: &Tensor| if t.shape()[0] <= 1 { 0 } else { t.strides()[0] as u64 };
        let stride_u32 = |what: &str, s: usize| u32_of(OP, what, s);
        // Whole scale blocks per split; none left empty.
        let k_blocks = scale_blocks(k).max(1);
        let per_split = k_blocks.div_ceil(cfg.splits as usize);
        let splits = k_blocks.div_ceil(per_split);
        let c_elems = if masked { g * m * n } else { m * n };

        let mut args = BlockScaledArgs {
            a: ops.input("A", &a)?,
            b: ops.input("B", &b)?,
            c: ops.output("C", c)?,
            a_scale: ops.input("a_scale", &a_scale)?,
            b_scale: ops.input("b_scale", b_scale)?,
            group_info: ops.optional_input("group info", info)?,
            a_group_stride: if masked { group_stride(&a) } else { 0 },
            b_group_stride: group_stride(&b),
            c_group_stride: if masked { (m * n) as u64 } else { 0 },
            split_stride_c: 0,
            sa_group_stride: if masked { group_stride(&a_scale) } else { 0 },
            sb_group_stride: group_stride(b_scale),
            m: dim(m)?,
            n: dim(n)?,
            k: dim(k)?,
            lda: dim(lda)?,
            ldb: dim(ldb)?,
            ldc: dim(n)?,
            sa_kb_stride: stride_u32("a_scale column", a_scale.strides()[sa_r - 1])?,
            sb_nb_stride: stride_u32("b_scale row", b_scale.strides()[1])?,
            sb_kb_stride: stride_u32("b_scale column", b_scale.strides()[2])?,
            group_mode: mode,
            flags: flags::VECTOR_OK,
            k_tiles_per_split: dim(per_split * TILES_PER_BLOCK)?,
            splits: dim(splits)?,
            workspace: DevPtr::NULL,
            counters: DevPtr::NULL,
            sk_per: 0,
            sk_total: 0,
        };
        let (kernel, threads): (Kernel<BlockScaledArgs>, u32) = match (block == 128, splits > 1) {
            (true, false) => (abi::GEMM_FP8_BLOCKSCALED_128X128, 256),
            (true, true) => (abi::GEMM_FP8_BLOCKSCALED_128X128_SPLITK, 256),
            (false, false) => (abi::GEMM_FP8_BLOCKSCALED_64X64, 64),
            (false, true) => (abi::GEMM_FP8_BLOCKSCALED_64X64_SPLITK, 64),
        };
        let grid = [dim(n.div_ceil(block))?, dim(m.div_ceil(block))?, dim(if masked { g } else { 1 } * splits)?];
        let launch = LaunchConfig { grid, block: [threads, 1, 1], dynamic_lds_bytes: gemm_lds_bytes(cfg.block, cfg.block) };
        let dev = c.device();
        if cfg.stream_k {
            // Every block's scale blocks, block after block, in runs of `per`: one run per
            // workgroup, as many workgroups as the GPU holds at once (fewer for a small
            // problem: `stream_k_run_for`).
            let blocks = m.div_ceil(BLOCK) * n.div_ceil(BLOCK);
            let total = blocks * k_blocks;
            let per = stream_k_run_for(dev.info().compute_units as usize, blocks, k_blocks);
            let workgroups = total.div_ceil(per);
            let slots = workgroups * gemm_abi::SK_SLOTS_PER_WORKGROUP as usize;
            let workspace = dev.alloc::<f32>(slots * BLOCK * BLOCK)?;
            // (One count per block and wave of the 128x128 launch.)
            let counters = dev.zeros::<u32>(blocks * (launch.block[0] / 64) as usize)?;
            args.workspace = ops.buffer("stream-K partials", &workspace)?;
            args.counters = ops.buffer("stream-K counters", &counters)?;
            args.sk_per = dim(per)?;
            args.sk_total = dim(total)?;
            let launch = LaunchConfig { grid: [dim(workgroups)?, 1, 1], ..launch };
            // SAFETY: as for the one-pass kernel below (one problem: no group indices); the
            // workspace holds every workgroup's slots and the counters (zeroed on this stream
            // before the launch) one u32 per block and wave.
            return unsafe { ops.launch(abi::GEMM_FP8_BLOCKSCALED_128X128_SK, launch, &args) };
        }
        if splits == 1 {
            // SAFETY: every tensor's dtype and shape were checked against the problem; A and B
            // are K-contiguous with their row strides passed, A's scales with theirs; the group
            // indices were checked on the host (ids in -1..G, each 128-row block one expert;
            // counts in 0..=M); C is a fresh contiguous bf16 tensor of the output shape.
            return unsafe { ops.launch(kernel, launch, &args) };
        }

        // Split-K: f32 partials laid out like C per split, zeroed (blocks of padding rows and
        // rows past a masked group's count are never written and must add up to C's zeros),
        // then the reduction adds them in split order and rounds to bf16.
        let partial = Tensor::zeros(dev, &[splits * c_elems], DType::F32)?;
        let partial_ptr = ops.output::<f32>("split-K partials", &partial)?;
        let c_ptr = ops.output_bytes("C", c)?;
        args.c = partial_ptr.cast();
        args.split_stride_c = c_elems as u64;
        // SAFETY: as above; the partials hold every split's C-shaped f32 results.
        unsafe { ops.launch(kernel, launch, &args)? };
        let c_addr = c_ptr.addr();
        let rows = c_elems / n;
        let red = GemmReduceArgs {
            partial: partial_ptr,
            c: c_ptr,
            bias: DevPtr::NULL,
            residual: DevPtr::NULL,
            split_stride: c_elems as u64,
            batch_stride_r: 0,
            rows: dim(rows)?,
            m: dim(rows)?,
            n: dim(n)?,
            ldr: 0,
            splits: dim(splits)?,
            alpha: 1.0,
            beta: 0.0,
            out_type: gemm_abi::out_type::BF16,
            activation: gemm_abi::activation::NONE,
            flags: if c_addr % 16 == 0 && n % 4 == 0 { gemm_abi::flags::VECTOR_OK } else { 0 },
        };
        let items = rows * n.div_ceil(gemm_abi::REDUCE_COLS as usize);
        let launch = LaunchConfig {
            grid: [dim(items.div_ceil(gemm_abi::REDUCE_THREADS as usize))?, 1, 1],
            block: [gemm_abi::REDUCE_THREADS, 1, 1],
            dynamic_lds_bytes: 0,
        };
        // SAFETY: the partials were written by the launch above (work on a stream runs in
        // order) and hold `splits` C-shaped f32 arrays; C is `rows x n` contiguous bf16.
        unsafe { ops.launch(gemm_abi::GEMM_SPLITK_REDUCE, launch, &red) }
    }
}

fn shape(message: String) -> Error {
    Error::Shape { op: OP, message }
}

fn rank(t: &Tensor, r: usize, what: &str) -> Result<()> {
    if t.rank() != r {
        return Err(shape(format!("{what} must be {r}-D, got {:?}", t.shape())));
    }
    Ok(())
}

fn expect(t: &Tensor, want: &[usize], what: &str) -> Result<()> {
    if t.shape() != want {
        return Err(shape(format!("{what} is {:?}, expected {want:?}", t.shape())));
    }
    Ok(())
}

/// An i32 index tensor of `want` shape.
fn index_tensor(t: &Tensor, want: &[usize], what: &'static str) -> Result<()> {
    if t.dtype() != DType::I32 {
        return Err(Error::DTypeMismatch { op: OP, what, got: t.dtype(), expected: "i32".into() });
    }
    expect(t, want, what)
}

/// `t` with unit stride along K (its last dimension), copied if needed.
fn k_contiguous(t: &Tensor) -> Result<Tensor> {
    let r = t.rank();
    if t.shape()[r - 1] <= 1 || t.strides()[r - 1] == 1 { Ok(t.clone()) } else { contiguous(t) }
}

/// Elements between rows (K for a single row, whose stride is arbitrary).
fn row_stride(t: &Tensor) -> usize {
    let r = t.rank();
    if t.shape()[r - 2] <= 1 { t.shape()[r - 1].max(1) } else { t.strides()[r - 2] }
}

fn dim(v: usize) -> Result<u32> {
    u32_of(OP, "a dimension", v)
}
