//! AITER's assembly GEMMs: `bf16gemm` (bf16 in, f32 out) and `i8gemm` (int8 in with per-token
//! and per-channel scales, bf16 out).
//!
//! Facts from the wheel: `csrc/py_itfs_cu/asm_gemm_a16w16.cu` (`gemm_a16w16_asm`) and
//! `asm_gemm_a8w8.cu` (`gemm_a8w8_asm`) for the argument structs, strides and grids; the tile
//! tables `hsa/gfx942/bf16gemm/bf16gemm_outf32.csv` and `hsa/gfx942/i8gemm/*.csv`;
//! `aiter/ops/shuffle.py` (`shuffle_weight`) for the int8 GEMM's B layout.

use super::{Args, Launch, symbol};

/// One bf16 GEMM kernel: its tile of the output (`bf16gemm_outf32.csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bf16Tile {
    /// Kernel name (the symbol is [`symbol`] of it).
    pub name: &'static str,
    /// Code object, relative to `hsa/gfx942/`.
    pub file: &'static str,
    /// Output rows per workgroup.
    pub m: u32,
    /// Output columns per workgroup.
    pub n: u32,
}

/// The four bf16 GEMM kernels of the wheel (all "tn": A and B both K-contiguous, prefetch 3).
pub const BF16_TILES: [Bf16Tile; 4] = [
    Bf16Tile { name: "bf16gemm_outf32_tn_32x64_pf3", file: "bf16gemm/bf16gemm_outf32_tn_32x64_pf3.co", m: 32, n: 64 },
    Bf16Tile { name: "bf16gemm_outf32_tn_48x64_pf3", file: "bf16gemm/bf16gemm_outf32_tn_48x64_pf3.co", m: 48, n: 64 },
    Bf16Tile { name: "bf16gemm_outf32_tn_64x64_pf3", file: "bf16gemm/bf16gemm_outf32_tn_64x64_pf3.co", m: 64, n: 64 },
    Bf16Tile { name: "bf16gemm_outf32_tn_96x64_pf3", file: "bf16gemm/bf16gemm_outf32_tn_96x64_pf3.co", m: 96, n: 64 },
];

impl Bf16Tile {
    /// The tile whose kernel symbol or name is `name`.
    pub fn by_name(name: &str) -> Option<Bf16Tile> {
        BF16_TILES.iter().copied().find(|t| t.name == name || symbol(t.name) == name)
    }
}

/// The K granule of the bf16 GEMMs: `gemm_a16w16_asm` refuses K not divisible by 64.
pub const BF16_K_GRANULE: u32 = 64;

/// Why a GEMM shape cannot run on a kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kernel} cannot run M={m} N={n} K={k} split {split}: {why}")]
pub struct ShapeError {
    /// The kernel.
    pub kernel: &'static str,
    /// Rows.
    pub m: u32,
    /// Columns.
    pub n: u32,
    /// Depth.
    pub k: u32,
    /// Split-K factor.
    pub split: u32,
    /// The rule broken.
    pub why: &'static str,
}

/// `D[M,N] (f32) = A[M,K] (bf16, rows K-contiguous) x B[N,K]^T (bf16, rows K-contiguous)`, as
/// `gemm_a16w16_asm` launches it: a workgroup of 256 (4 waves) per `tile.m x tile.n` block of D
/// (x over N, y over M; M may end in a partial tile), and `split` workgroups along z each taking a
/// K/split slice and adding its partial sums into D with atomics (so D must hold zeros first,
/// which the host code ensures with `out.zero_()`). Strides are in bytes; the host sets only the
/// A, B and C strides (C's stands for D's; alpha 1, beta 0, no C).
///
/// # Errors
/// [`ShapeError`] for N not a multiple of the tile's N, K not a multiple of 64, a zero size or
/// split, or K not divisible into `split` slices of whole 64-granules.
pub fn bf16_launch(tile: Bf16Tile, m: u32, n: u32, k: u32, split: u32, d: u64, a: u64, b: u64) -> Result<Launch, ShapeError> {
    let err = |why| ShapeError { kernel: tile.name, m, n, k, split, why };
    if m == 0 || n == 0 || k == 0 || split == 0 {
        return Err(err("a size or the split is zero"));
    }
    if n % tile.n != 0 {
        return Err(err("N must be a multiple of the tile's N (the host code only picks such tiles)"));
    }
    if k % BF16_K_GRANULE != 0 {
        return Err(err("K must be a multiple of 64 (gemm_a16w16_asm checks it)"));
    }
    if (k / BF16_K_GRANULE) % split != 0 {
        return Err(err("K/64 must divide into the split's slices"));
    }
    let kernargs = Args::new()
        .ptr(d) // D
        .ptr(0) // C: unused (beta 0)
        .ptr(a)
        .ptr(b)
        .f32(1.0) // alpha
        .f32(0.0) // beta
        .u32(0) // stride_D0, D1: not set by the host code
        .u32(0)
        .u32(n * 4) // stride_C0: D's row stride
        .u32(0)
        .u32(k * 2) // stride_A0
        .u32(0)
        .u32(k * 2) // stride_B0
        .u32(0)
        .u32(m)
        .u32(n)
        .u32(k)
        .u32(split)
        .bytes();
    Ok(Launch { kernel: symbol(tile.name), grid: [n / tile.n, m.div_ceil(tile.m), split], block: [256, 1, 1], kernargs })
}

/// One int8 GEMM kernel (`i8gemm_bf16_perTokenI8.csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct I8Tile {
    /// Kernel name.
    pub name: &'static str,
    /// Code object, relative to `hsa/gfx942/`.
    pub file: &'static str,
    /// Output rows per workgroup.
    pub m: u32,
    /// Output columns per workgroup.
    pub n: u32,
}

/// The two int8 GEMM kernels of the wheel (B pre-shuffled, no split-K variant).
pub const I8_TILES: [I8Tile; 2] = [
    I8Tile {
        name: "I8gemm_bf16_perTokenI8_BpreShuffle_128x128",
        file: "i8gemm/I8gemm_bf16_perTokenI8_BpreShuffle_128x128.co",
        m: 128,
        n: 128,
    },
    I8Tile {
        name: "I8gemm_bf16_perTokenI8_BpreShuffle_192x128",
        file: "i8gemm/I8gemm_bf16_perTokenI8_BpreShuffle_192x128.co",
        m: 192,
        n: 128,
    },
];

/// The layout `gemm_a8w8_asm` expects B in: `shuffle_weight(B, layout=(32, 16))` of
/// `aiter/ops/shuffle.py` for int8, i.e. B `[N, K]` viewed as `[N/32][32][K/32][2][16]` and
/// stored as `[N/32][K/32][2][32][16]`.
pub const I8_SHUFFLE: (usize, usize) = (32, 16);

/// Shuffles a row-major int8 `B[N, K]` (N a multiple of 32, K of 32) into [`I8_SHUFFLE`] order.
pub fn i8_shuffle_b(b: &[i8], n: usize, k: usize) -> Vec<i8> {
    let (bn, bk, kp) = (I8_SHUFFLE.0, 2 * I8_SHUFFLE.1, 16);
    assert!(n % bn == 0 && k % bk == 0 && b.len() == n * k, "B [{n}, {k}] is not in 32x32 blocks");
    let mut out = Vec::with_capacity(b.len());
    for n0 in 0..n / bn {
        for k0 in 0..k / bk {
            for k1 in 0..bk / kp {
                for n1 in 0..bn {
                    let row = (n0 * bn + n1) * k + k0 * bk + k1 * kp;
                    out.extend_from_slice(&b[row..row + kp]);
                }
            }
        }
    }
    out
}

/// `C[M,N] (bf16) = (A[M,K] x B[N,K]^T) * sa[M] * sb[N] + bias[N]` with int8 A and B (B in
/// [`i8_shuffle_b`] order), f32 scales and bias, as `gemm_a8w8_asm` launches it: 256 work-items
/// per `tile.m x tile.n` block (x over N, y over M, M may end in a partial tile), no split.
///
/// # Errors
/// [`ShapeError`] for N not a multiple of the tile's N, K not a multiple of 128 (the kernels'
/// K step; the host rounds split slices to it) or a zero size.
#[allow(clippy::too_many_arguments)]
pub fn i8_launch(tile: I8Tile, m: u32, n: u32, k: u32, c: u64, a: u64, b: u64, sa: u64, sb: u64, bias: u64) -> Result<Launch, ShapeError> {
    let err = |why| ShapeError { kernel: tile.name, m, n, k, split: 1, why };
    if m == 0 || n == 0 || k == 0 {
        return Err(err("a size is zero"));
    }
    if n % tile.n != 0 {
        return Err(err("N must be a multiple of the tile's N"));
    }
    if k % 128 != 0 {
        return Err(err("K must be a multiple of 128"));
    }
    let kernargs = Args::new().ptr(c).ptr(a).ptr(b).ptr(sa).ptr(sb).ptr(bias).u32(m).u32(n).u32(k).u32(k).u32(k).u32(n * 2).u32(1).bytes();
    Ok(Launch { kernel: symbol(tile.name), grid: [n / tile.n, m.div_ceil(tile.m), 1], block: [256, 1, 1], kernargs })
}
