//! AITER's fused mixture-of-experts assembly kernels: stage 1 of the two-stage MoE
//! (`fmoe_2stages`: the gate and up projections of the tokens routed to each expert, the
//! activation, optionally the routing weight) and the token sorting both stages read.
//!
//! Facts from the wheel: `csrc/py_itfs_cu/asm_moe_2stage.cu` (`moe_stage1_g1u1`: argument
//! struct, strides, grid), `aiter/fused_moe.py` (`moe_sorting`'s buffer sizes, `asm_stage1`,
//! `torch_moe_stage1`: what stage 1 computes), `hsa/gfx942/fmoe_2stages/tune.py` (how the tuner
//! made the inputs whose times the tuned table holds: normal inputs, random router scores, weights
//! shuffled with `shuffle_weight(w, (16, 16))`), `aiter_enum.h` (activation numbers) and
//! composable_kernel's `moe_sorting_kernel.hpp` (the sorted layout, described in its header
//! comment, with `CK_TILE_REFERENCE_MOE_SORTING_MOCK_ID` set in ck_tile's `config.hpp`).

use super::tuned::{Table, TableError};
use super::{Args, Launch, Wheel};

/// Stage-1 activations (`ActivationType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `silu(gate) * up`.
    Silu = 0,
    /// `gelu(gate) * up`.
    Gelu = 1,
}

/// A stage-1 kernel family (one table next to the code objects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage1Family {
    /// fp8 (E4M3FNUZ) tokens and weights with per-token and per-row scales.
    PerTokenFp8,
    /// As [`Stage1Family::PerTokenFp8`], multiplying each output by its routing weight.
    PerTokenFp8DoWeight,
    /// int8 tokens and weights with per-token and per-row scales.
    PerTokenInt8,
}

impl Stage1Family {
    /// The family's name (its table's file stem).
    pub fn name(self) -> &'static str {
        match self {
            Stage1Family::PerTokenFp8 => "fmoe_stage1_bf16_pertokenFp8_g1u1",
            Stage1Family::PerTokenFp8DoWeight => "fmoe_stage1_bf16_pertokenFp8_doweight_g1u1",
            Stage1Family::PerTokenInt8 => "fmoe_stage1_bf16_pertokenInt8_g1u1",
        }
    }

    /// The family whose kernels are called `<name>_<tile>...`.
    pub fn of_kernel(name: &str) -> Option<Stage1Family> {
        [Stage1Family::PerTokenFp8DoWeight, Stage1Family::PerTokenFp8, Stage1Family::PerTokenInt8]
            .into_iter()
            .find(|f| name.contains(&format!("{}_", f.name())) && name.contains(f.name()))
    }
}

/// One stage-1 kernel: its block of sorted token rows and of output columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage1Kernel {
    /// The kernel's symbol.
    pub symbol: String,
    /// Code object, relative to `hsa/gfx942/`.
    pub file: String,
    /// Sorted token rows per workgroup (the sorting's block size).
    pub tile_m: u32,
    /// Output columns (of `inter_dim`) per workgroup.
    pub tile_n: u32,
}

/// Every kernel of a stage-1 family, from its table.
///
/// # Errors
/// [`TableError`] for a missing or malformed table.
pub fn stage1_kernels(wheel: &Wheel, family: Stage1Family) -> Result<Vec<Stage1Kernel>, TableError> {
    let t = Table::read(&wheel.gfx942(&format!("fmoe_2stages/{}.csv", family.name())))?;
    let mut out = Vec::new();
    for r in &t.rows {
        let field = |c: &str| t.get(r, c).unwrap_or_default().to_string();
        let num = |c: &str| field(c).parse::<u32>().unwrap_or(0);
        out.push(Stage1Kernel {
            symbol: field("knl_name"),
            file: format!("fmoe_2stages/{}", field("co_name")),
            tile_m: num("tile_m"),
            tile_n: num("tile_n"),
        });
    }
    Ok(out)
}

/// The sorted routing both MoE stages read (`moe_sorting`): the (token, k) pairs routed to each
/// expert, expert by expert, each expert's run padded to a whole number of `block_m` rows (at
/// least one block, even for an expert nobody chose).
#[derive(Clone, Debug, PartialEq)]
pub struct Sorted {
    /// Per sorted row: `token | k << 24`; padding rows `tokens | topk << 24`.
    pub ids: Vec<u32>,
    /// Per sorted row: the routing weight (0 for padding).
    pub weights: Vec<f32>,
    /// Per block of `block_m` rows: its expert.
    pub experts: Vec<u32>,
    /// `[rows in use (whole blocks), tokens]`.
    pub valid: [u32; 2],
}

/// Sorts `topk_ids[token][k]` (with `weights` alike) for `experts` experts into blocks of
/// `block_m`. The buffers have `moe_sorting`'s allocated sizes: `tokens * topk + experts *
/// block_m - topk` rows and that over `block_m` blocks; rows and blocks past the valid ones are
/// filled as padding (rows) and expert 0 (blocks): `torch.empty` leaves them undefined there, and
/// the kernels skip every block past `valid[0]`.
///
/// # Panics
/// If an id is not below `experts`, or the shapes disagree.
pub fn sort(topk_ids: &[u32], weights: &[f32], tokens: u32, topk: u32, experts: u32, block_m: u32) -> Sorted {
    assert_eq!(topk_ids.len(), (tokens * topk) as usize);
    assert_eq!(weights.len(), topk_ids.len());
    let cap = (tokens * topk + experts * block_m - topk) as usize;
    let blocks = cap.div_ceil(block_m as usize);
    let pad = tokens | topk << 24;
    let mut ids = vec![pad; cap];
    let mut ws = vec![0f32; cap];
    let mut exps = vec![0u32; blocks];
    let mut row = 0usize;
    for e in 0..experts {
        let start = row;
        for (i, &id) in topk_ids.iter().enumerate() {
            assert!(id < experts, "expert id {id} of {experts}");
            if id == e {
                ids[row] = (i as u32 / topk) | (i as u32 % topk) << 24;
                ws[row] = weights[i];
                row += 1;
            }
        }
        let n = (row - start).div_ceil(block_m as usize).max(1) * block_m as usize;
        for b in start / block_m as usize..(start + n) / block_m as usize {
            exps[b] = e;
        }
        row = start + n;
    }
    Sorted { ids, weights: ws, experts: exps, valid: [row as u32, tokens] }
}

/// Random routing as AITER's tuner makes it (`torch.randn` router scores, top-k of their
/// softmax, renormalised): each token picks `topk` distinct experts uniformly, weights
/// positive and summing to 1. `seed` makes it reproducible (xorshift64*).
pub fn random_routing(tokens: u32, topk: u32, experts: u32, seed: u64) -> (Vec<u32>, Vec<f32>) {
    let mut s = seed.max(1);
    let mut next = move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut ids = Vec::with_capacity((tokens * topk) as usize);
    let mut ws = Vec::with_capacity(ids.capacity());
    for _ in 0..tokens {
        let mut chosen: Vec<u32> = Vec::with_capacity(topk as usize);
        while chosen.len() < topk as usize {
            let e = (next() % experts as u64) as u32;
            if !chosen.contains(&e) {
                chosen.push(e);
            }
        }
        let raw: Vec<f32> = (0..topk).map(|_| 0.5 + (next() >> 40) as f32 / (1u64 << 24) as f32).collect();
        let sum: f32 = raw.iter().sum();
        ids.extend(chosen);
        ws.extend(raw.iter().map(|w| w / sum));
    }
    (ids, ws)
}

/// The layout the stage-1 kernels take the weights in: `shuffle_weight(w, (16, 16))` of
/// `aiter/ops/shuffle.py` for 1-byte types: each `[N, K]` matrix viewed as
/// `[N/16][16][K/32][2][16]` and stored as `[N/16][K/32][2][16][16]`.
pub fn shuffle_16x16(w: &[u8], n: usize, k: usize) -> Vec<u8> {
    assert!(n % 16 == 0 && k % 32 == 0 && w.len() % (n * k) == 0, "[{n}, {k}] is not in 16x32 blocks");
    let mut out = Vec::with_capacity(w.len());
    for m in w.chunks(n * k) {
        for n0 in 0..n / 16 {
            for k0 in 0..k / 32 {
                for k1 in 0..2 {
                    for n1 in 0..16 {
                        let at = (n0 * 16 + n1) * k + k0 * 32 + k1 * 16;
                        out.extend_from_slice(&m[at..at + 16]);
                    }
                }
            }
        }
    }
    out
}

/// The shape of one stage-1 launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage1 {
    /// Tokens.
    pub tokens: u32,
    /// Hidden size (the GEMM's K).
    pub model_dim: u32,
    /// Intermediate size: the output columns (gate and up each have this many rows).
    pub inter_dim: u32,
    /// Experts.
    pub experts: u32,
    /// Experts per token.
    pub topk: u32,
    /// Activation.
    pub activation: Activation,
}

/// Device addresses of a stage-1 launch's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage1Buffers {
    /// Output `[tokens, topk, inter_dim]` bf16.
    pub out: u64,
    /// Tokens `[tokens, model_dim]`, 1 byte each.
    pub x: u64,
    /// Weights `[experts, 2 * inter_dim, model_dim]` (gate rows, then up rows), shuffled.
    pub w: u64,
    /// `Sorted::valid`.
    pub valid: u64,
    /// Per-token scales `[tokens]` f32.
    pub x_scale: u64,
    /// Per-row weight scales `[experts, 2 * inter_dim]` f32.
    pub w_scale: u64,
    /// `Sorted::ids`.
    pub sorted_ids: u64,
    /// `Sorted::experts`.
    pub sorted_experts: u64,
    /// `Sorted::weights` (read by the do-weight kernels; 0 otherwise).
    pub sorted_weights: u64,
}

/// Why a stage-1 launch cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kernel}: {why}")]
pub struct Stage1Error {
    /// The kernel.
    pub kernel: String,
    /// The rule broken.
    pub why: String,
}

impl Stage1 {
    /// Blocks of the sorted rows the host launches over (`sorted_expert_ids.size(0)`).
    pub fn blocks(&self, block_m: u32) -> u32 {
        (self.tokens * self.topk + self.experts * block_m - self.topk).div_ceil(block_m)
    }

    /// The launch `moe_stage1_g1u1` makes (no K split): 256 work-items per `tile_n` output
    /// columns (x) of one block of sorted rows (y).
    ///
    /// # Errors
    /// [`Stage1Error`] when `inter_dim` is not a multiple of the kernel's `tile_n` (the host
    /// code checks it).
    pub fn launch(&self, k: &Stage1Kernel, b: &Stage1Buffers) -> Result<Launch, Stage1Error> {
        if self.inter_dim % k.tile_n != 0 {
            return Err(Stage1Error {
                kernel: k.symbol.clone(),
                why: format!("inter_dim {} is not a multiple of {}", self.inter_dim, k.tile_n),
            });
        }
        let (dim, inter) = (self.model_dim, self.inter_dim);
        let kernargs = Args::new()
            .ptr(b.out)
            .ptr(b.x)
            .ptr(b.w)
            .ptr(b.valid)
            .ptr(b.x_scale)
            .ptr(b.w_scale)
            .ptr(0) // smooth-quant scales: not set by the host code
            .ptr(b.sorted_ids)
            .ptr(b.sorted_experts)
            .u32(dim)
            .u32(inter)
            .u32(self.tokens)
            .u32(self.experts)
            .u32(dim) // token row stride, bytes
            .u32(dim) // weight row stride, bytes
            .u32(self.topk * inter * 2) // output token stride, bytes (bf16)
            .u32(dim * inter * 2) // weight expert stride: gate and up rows
            .u32(2 * inter * 4) // weight-scale expert stride
            .u32(inter * 4) // smooth-scale expert stride
            .u32(self.topk)
            .u32(0) // K split (log2): none
            .u32(self.activation as u32)
            .ptr(b.sorted_weights)
            .bytes();
        Ok(Launch { kernel: k.symbol.clone(), grid: [inter.div_ceil(k.tile_n), self.blocks(k.tile_m), 1], block: [256, 1, 1], kernargs })
    }
}

// ---- the one-stage fused MoE (`fmoe`) -------------------------------------------------------
//
// Facts from the wheel: `csrc/py_itfs_cu/asm_fmoe.cu` (`FMoeKernel::launch_kernel`: argument
// struct, strides, persistent and per-block grids; `fmoe_g1u1`: which table per input type), the
// kernel tables `hsa/gfx942/fmoe/{silu,gelu}/*.csv` (`subGU_n` output columns per workgroup,
// `ps` persistent, `tg_num_perCU` workgroups per CU when persistent).

/// One one-stage kernel (a row of its table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OneStageKernel {
    /// The kernel's symbol.
    pub symbol: String,
    /// Code object, relative to `hsa/gfx942/`.
    pub file: String,
    /// Intermediate columns per workgroup (`subGU_n`).
    pub sub_gu: u32,
    /// Persistent: a fixed grid of `tg_per_cu` workgroups per CU walking all the blocks.
    pub persistent: bool,
    /// Workgroups per CU of a persistent launch.
    pub tg_per_cu: u32,
}

/// Finds the one-stage kernel `symbol` in the tables under `fmoe/`.
///
/// # Errors
/// [`TableError`] for an unreadable table; `Ok(None)` when no table lists the symbol.
pub fn one_stage_kernel(wheel: &Wheel, symbol: &str) -> Result<Option<OneStageKernel>, TableError> {
    for act in ["silu", "gelu"] {
        let dir = wheel.gfx942(&format!("fmoe/{act}"));
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut tables: Vec<std::path::PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "csv")).collect();
        tables.sort();
        for p in tables {
            let t = Table::read(&p)?;
            for r in &t.rows {
                if t.get(r, "knl_name") == Some(symbol) {
                    let num = |c: &str| t.get(r, c).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
                    return Ok(Some(OneStageKernel {
                        symbol: symbol.to_string(),
                        file: format!("fmoe/{act}/{}", t.get(r, "knl_file").unwrap_or_default()),
                        sub_gu: num("subGU_n"),
                        persistent: num("ps") == 1,
                        tg_per_cu: num("tg_num_perCU"),
                    }));
                }
            }
        }
    }
    Ok(None)
}

/// Device addresses of a one-stage launch's buffers (per-token fp8 or int8, gate and up fused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneStageBuffers {
    /// Output `[tokens, model_dim]` bf16, zeroed first (the experts of a token add into it).
    pub out: u64,
    /// Tokens `[tokens, model_dim]`, 1 byte each.
    pub x: u64,
    /// Gate and up weights `[experts, 2 * inter_dim, model_dim]`, shuffled.
    pub w1: u64,
    /// Down weights `[experts, model_dim, inter_dim]`, shuffled.
    pub w2: u64,
    /// `Sorted::valid`.
    pub valid: u64,
    /// Per-token scales `[tokens]` f32.
    pub x_scale: u64,
    /// Gate/up row scales `[experts, 2 * inter_dim]` f32.
    pub w1_scale: u64,
    /// Down row scales `[experts, model_dim]` f32.
    pub w2_scale: u64,
    /// `Sorted::ids`.
    pub sorted_ids: u64,
    /// `Sorted::weights`.
    pub sorted_weights: u64,
    /// `Sorted::experts`.
    pub sorted_experts: u64,
}

impl Stage1 {
    /// The launch `fmoe_g1u1` makes of a one-stage kernel with these shapes (1-byte tokens and
    /// weights, bf16 out) on a GPU of `cu_num` CUs: persistent kernels get `tg_per_cu * cu_num`
    /// workgroups that divide the blocks among themselves, the others one workgroup per
    /// `sub_gu` intermediate columns (x) of each block of 32 sorted rows (y).
    ///
    /// # Errors
    /// [`Stage1Error`] when `inter_dim` is not a multiple of the kernel's `sub_gu`.
    pub fn one_stage_launch(&self, k: &OneStageKernel, b: &OneStageBuffers, cu_num: u32) -> Result<Launch, Stage1Error> {
        if k.sub_gu == 0 || self.inter_dim % k.sub_gu != 0 {
            return Err(Stage1Error {
                kernel: k.symbol.clone(),
                why: format!("inter_dim {} is not a multiple of {}", self.inter_dim, k.sub_gu),
            });
        }
        let (dim, inter) = (self.model_dim, self.inter_dim);
        let deno = inter.div_ceil(k.sub_gu);
        let persistent_tgs = if k.persistent { k.tg_per_cu * cu_num } else { 0 };
        let total_tgs = persistent_tgs / deno * deno;
        let kernargs = Args::new()
            .ptr(b.out)
            .ptr(b.x)
            .ptr(b.w1)
            .ptr(b.valid)
            .ptr(b.w2)
            .ptr(b.x_scale)
            .ptr(b.w1_scale)
            .ptr(b.w2_scale)
            .ptr(0) // smooth-quant scales: none for these kernels
            .ptr(b.sorted_ids)
            .ptr(b.sorted_weights)
            .ptr(b.sorted_experts)
            .u32(dim)
            .u32(inter)
            .u32(self.tokens)
            .u32(self.experts)
            .u32(dim) // token row stride
            .u32(dim) // gate/up row stride
            .u32(inter) // down row stride
            .u32(dim * 2) // output row stride (bf16)
            .u32(dim * inter * 2) // gate/up expert stride (gate and up rows)
            .u32(inter * dim) // down expert stride
            .u32(2 * inter * 4) // gate/up scale expert stride
            .u32(dim * 4) // down scale expert stride
            .u32(inter * 4) // smooth-scale expert stride
            .u32(self.topk)
            .u32(total_tgs)
            .u32(deno)
            .bytes();
        let grid = if persistent_tgs != 0 && total_tgs > 0 { [persistent_tgs, 1, 1] } else { [deno, self.blocks(32), 1] };
        Ok(Launch { kernel: k.symbol.clone(), grid, block: [256, 1, 1], kernargs })
    }
}
