//! The cycle model against AMD's measurements: every gfx942 row of AITER's tuned tables whose
//! kernel is a shipped code object the emulator runs, launched as AITER's host code launches it
//! and modeled on a chip of the row's CU count.
//!
//! Rows (from [`super::WHEEL_VERSION`]'s `aiter/configs/`):
//! - `bf16_tuned_gemm.csv`, `libtype` asm: the `bf16gemm` kernels (time `us`);
//! - `tuned_fmoe.csv`, asm `kernelName1`: the stage-1 kernel of the two-stage MoE (time `us1`)
//!   or, with `run_1stage`, the one-stage `fmoe` kernel (time `us`).
//!
//! `cu_num` 80 rows are MI308X, 304 MI300X; 256 is gfx950 (MI350) and is skipped, as are rows
//! whose kernel the emulator's launchers do not build (block-scaled fp8, named in the report).
//!
//! What the measured time covers (`aiter/test_common.py`, `run_perftest`): the profiler's device
//! time of every kernel the tuned function launches, per iteration. For a split-K bf16 GEMM that
//! includes the `out.zero_()` fill before the GEMM; for a per-tensor MoE row the two scale
//! `repeat` copies `asm_stage1` makes. Those kernels are not AITER's code objects; their count
//! is reported with each row ([`Row::extra_kernels`]).

use super::gemm::{Bf16Tile, bf16_launch};
use super::moe::{self, Activation, OneStageBuffers, Stage1, Stage1Buffers, Stage1Family};
use super::tuned::{Table, TableError};
use super::{Launch, Wheel, WheelError};
use crate::model::{Chip, ModelOptions, ModeledLaunch, ModeledLaunchError, modeled_launch};
use crate::{EmuConfig, EmuError, Emulator};

/// Mapped bytes after every buffer: AITER's kernels prefetch past the end of their inputs (see
/// the MoE suite); PyTorch's caching allocator leaves such reads inside mapped memory.
const SLACK: u64 = 64 << 10;

/// What a row launches.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A bf16 GEMM.
    Gemm {
        /// The kernel.
        tile: Bf16Tile,
        /// Rows, columns, depth.
        m: u32,
        /// Columns.
        n: u32,
        /// Depth.
        k: u32,
        /// Split-K factor.
        split: u32,
    },
    /// A two-stage MoE's stage 1.
    Stage1 {
        /// Its family.
        family: Stage1Family,
        /// Its shape.
        shape: Stage1,
        /// Sorted rows per block (`block_m`).
        block_m: u32,
    },
    /// The one-stage MoE.
    OneStage {
        /// Its shape.
        shape: Stage1,
    },
}

/// One measured row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The table.
    pub table: &'static str,
    /// 1-based line in it.
    pub line: usize,
    /// The kernel's symbol.
    pub kernel: String,
    /// CUs of the GPU it was measured on.
    pub cu_num: u32,
    /// The launch.
    pub shape: Shape,
    /// AMD's measured time, microseconds.
    pub measured_us: f64,
    /// Kernels besides AITER's the measured time includes (see the module docs).
    pub extra_kernels: u32,
    /// A short description for the report.
    pub what: String,
}

/// A row the calibration cannot use, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// The table.
    pub table: &'static str,
    /// 1-based line.
    pub line: usize,
    /// Why.
    pub why: String,
}

/// Why the calibration cannot proceed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrationError {
    /// A table could not be read.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A code object could not be loaded.
    #[error(transparent)]
    Wheel(#[from] WheelError),
    /// The emulator refused something.
    #[error(transparent)]
    Emu(#[from] EmuError),
    /// The launch or its model failed.
    #[error(transparent)]
    Model(#[from] ModeledLaunchError),
    /// A row's launch could not be built.
    #[error("{0}")]
    Launch(String),
}

fn num<T: std::str::FromStr>(t: &Table, r: &[String], c: &str) -> Option<T> {
    t.get(r, c).and_then(|v| v.trim().parse().ok())
}

/// Every gfx942 row of the tuned tables with an AITER assembly kernel, and the rows skipped.
///
/// # Errors
/// [`CalibrationError::Table`] for a missing or malformed table.
pub fn rows(wheel: &Wheel) -> Result<(Vec<Row>, Vec<Skipped>), CalibrationError> {
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    let gfx942 = |cu: u32| matches!(cu, 80 | 304);

    const GEMM: &str = "bf16_tuned_gemm.csv";
    let t = Table::read(&wheel.config(GEMM))?;
    for (i, r) in t.rows.iter().enumerate() {
        let line = i + 2;
        let cu: u32 = num(&t, r, "cu_num").unwrap_or(0);
        if !gfx942(cu) || t.get(r, "libtype") != Some("asm") {
            continue;
        }
        let name = t.get(r, "kernelName").unwrap_or_default();
        let Some(tile) = Bf16Tile::by_name(name) else {
            skipped.push(Skipped { table: GEMM, line, why: format!("{name} is not one of the wheel's bf16gemm kernels") });
            continue;
        };
        let (m, n, k, split, us) =
            (num(&t, r, "M"), num(&t, r, "N"), num(&t, r, "K"), num::<u32>(&t, r, "splitK"), num::<f64>(&t, r, "us"));
        let (Some(m), Some(n), Some(k), Some(split), Some(us)) = (m, n, k, split, us) else {
            skipped.push(Skipped { table: GEMM, line, why: "a field does not parse".into() });
            continue;
        };
        let split = split.max(1);
        rows.push(Row {
            table: GEMM,
            line,
            kernel: name.to_string(),
            cu_num: cu,
            shape: Shape::Gemm { tile, m, n, k, split },
            measured_us: us,
            extra_kernels: (split > 1) as u32,
            what: format!("bf16 GEMM {m}x{n}x{k} split {split}"),
        });
    }

    const MOE: &str = "tuned_fmoe.csv";
    let t = Table::read(&wheel.config(MOE))?;
    for (i, r) in t.rows.iter().enumerate() {
        let line = i + 2;
        let cu: u32 = num(&t, r, "cu_num").unwrap_or(0);
        let name = t.get(r, "kernelName1").unwrap_or_default();
        if !gfx942(cu) || !name.starts_with("_ZN5aiter") {
            continue;
        }
        let f = |c: &str| t.get(r, c).unwrap_or_default();
        let (Some(tokens), Some(model_dim), Some(inter_dim), Some(experts), Some(topk), Some(block_m)) = (
            num::<u32>(&t, r, "token"),
            num::<u32>(&t, r, "model_dim"),
            num::<u32>(&t, r, "inter_dim"),
            num::<u32>(&t, r, "expert"),
            num::<u32>(&t, r, "topk"),
            num::<u32>(&t, r, "block_m"),
        ) else {
            skipped.push(Skipped { table: MOE, line, why: "a size does not parse".into() });
            continue;
        };
        let activation = if f("act_type").ends_with("Gelu") { Activation::Gelu } else { Activation::Silu };
        let shape = Stage1 { tokens, model_dim, inter_dim, experts, topk, activation };
        let per_tensor = f("q_type").ends_with("per_Tensor");
        let what = format!(
            "MoE {tokens} tok, dim {model_dim}, inter {inter_dim}, {experts} experts top-{topk}, {} {}",
            f("q_dtype_a").trim_start_matches("torch."),
            f("q_type").trim_start_matches("QuantType.")
        );
        if f("run_1stage") == "1" {
            if name.contains("blockscale") {
                skipped.push(Skipped {
                    table: MOE,
                    line,
                    why: format!("{name}: block-scaled fp8 (1x128 scales), not built by the launchers"),
                });
                continue;
            }
            let Some(us) = num::<f64>(&t, r, "us") else { continue };
            rows.push(Row {
                table: MOE,
                line,
                kernel: name.to_string(),
                cu_num: cu,
                shape: Shape::OneStage { shape },
                measured_us: us,
                extra_kernels: 0,
                what,
            });
            continue;
        }
        let Some(family) = moe::Stage1Family::of_kernel(name) else {
            skipped.push(Skipped { table: MOE, line, why: format!("{name}: not a per-token fp8/int8 stage-1 family") });
            continue;
        };
        let Some(us) = num::<f64>(&t, r, "us1") else { continue };
        rows.push(Row {
            table: MOE,
            line,
            kernel: name.to_string(),
            cu_num: cu,
            shape: Shape::Stage1 { family, shape, block_m },
            measured_us: us,
            extra_kernels: 2 * per_tensor as u32,
            what,
        });
    }
    Ok((rows, skipped))
}

/// A row and its model.
#[derive(Clone, Debug)]
pub struct Calibrated {
    /// The row.
    pub row: Row,
    /// The modeled launch.
    pub modeled: ModeledLaunch,
    /// The launch's compulsory HBM bytes given to the model.
    pub hbm_bytes: u64,
}

impl Calibrated {
    /// Modeled time of AITER's kernel, microseconds.
    pub fn modeled_us(&self) -> f64 {
        self.modeled.modeled.seconds * 1e6
    }

    /// Modeled over measured.
    pub fn ratio(&self) -> f64 {
        self.modeled_us() / self.row.measured_us
    }
}

/// Experts that `tokens` random top-`topk` routings over `experts` touch, expected.
fn experts_touched(tokens: u32, topk: u32, experts: u32) -> f64 {
    experts as f64 * (1.0 - (1.0 - topk as f64 / experts as f64).powi(tokens as i32))
}

/// Builds `row`'s launch in a fresh emulator (inputs zero: the model's time does not depend on
/// the values; MoE routing random, as the tuner's) and models it on a chip of `row.cu_num` CUs
/// with `sample` workgroups.
///
/// # Errors
/// [`CalibrationError`].
pub fn model_row(wheel: &Wheel, row: &Row, sample: u64) -> Result<Calibrated, CalibrationError> {
    let chip = Chip::with_cus(row.cu_num as u64);
    let emu = Emulator::new(EmuConfig { memory_limit: 6 << 30, ..EmuConfig::default() });
    let alloc = |bytes: u64| emu.alloc(bytes + SLACK);
    let upload = |bytes: &[u8]| -> Result<u64, EmuError> {
        let a = alloc(bytes.len() as u64)?;
        emu.memory().write(a, bytes)?;
        Ok(a)
    };
    let words = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bad = |e: String| CalibrationError::Launch(format!("{}:{}: {e}", row.table, row.line));
    let (file, launch, hbm): (String, Launch, u64) = match &row.shape {
        Shape::Gemm { tile, m, n, k, split } => {
            let (a_bytes, b_bytes, d_bytes) = (2 * *m as u64 * *k as u64, 2 * *n as u64 * *k as u64, 4 * *m as u64 * *n as u64);
            let (a, b, d) = (alloc(a_bytes)?, alloc(b_bytes)?, alloc(d_bytes)?);
            let l = bf16_launch(*tile, *m, *n, *k, *split, d, a, b).map_err(|e| bad(e.to_string()))?;
            (tile.file.to_string(), l, a_bytes + b_bytes + d_bytes)
        }
        Shape::Stage1 { family, shape: s, block_m } => {
            let kernels = moe::stage1_kernels(wheel, *family)?;
            let k = kernels.iter().find(|k| k.symbol == row.kernel).ok_or_else(|| bad(format!("{} is in no stage-1 table", row.kernel)))?;
            if k.tile_m != *block_m {
                return Err(bad(format!("block_m {block_m} but {} takes {}", k.symbol, k.tile_m)));
            }
            let (ids, weights) = moe::random_routing(s.tokens, s.topk, s.experts, 1 + row.line as u64);
            let sorted = moe::sort(&ids, &weights, s.tokens, s.topk, s.experts, k.tile_m);
            let (t, d, n, e) = (s.tokens as u64, s.model_dim as u64, s.inter_dim as u64, s.experts as u64);
            let b = Stage1Buffers {
                out: alloc(2 * t * s.topk as u64 * n)?,
                x: alloc(t * d)?,
                w: alloc(e * 2 * n * d)?,
                valid: upload(&words(&sorted.valid))?,
                x_scale: alloc(4 * t)?,
                w_scale: alloc(4 * e * 2 * n)?,
                sorted_ids: upload(&words(&sorted.ids))?,
                sorted_experts: upload(&words(&sorted.experts))?,
                sorted_weights: upload(&floats(&sorted.weights))?,
            };
            let l = s.launch(k, &b).map_err(|e| bad(e.to_string()))?;
            let touched = experts_touched(s.tokens, s.topk, s.experts);
            let hbm = t * d + (touched * (2 * n * d) as f64) as u64 + 2 * t * s.topk as u64 * n;
            (k.file.clone(), l, hbm)
        }
        Shape::OneStage { shape: s } => {
            let k = moe::one_stage_kernel(wheel, &row.kernel)?.ok_or_else(|| bad(format!("{} is in no fmoe table", row.kernel)))?;
            let (ids, weights) = moe::random_routing(s.tokens, s.topk, s.experts, 1 + row.line as u64);
            let sorted = moe::sort(&ids, &weights, s.tokens, s.topk, s.experts, 32);
            let (t, d, n, e) = (s.tokens as u64, s.model_dim as u64, s.inter_dim as u64, s.experts as u64);
            let b = OneStageBuffers {
                out: alloc(2 * t * d)?,
                x: alloc(t * d)?,
                w1: alloc(e * 2 * n * d)?,
                w2: alloc(e * d * n)?,
                valid: upload(&words(&sorted.valid))?,
                x_scale: alloc(4 * t)?,
                w1_scale: alloc(4 * e * 2 * n)?,
                w2_scale: alloc(4 * e * d)?,
                sorted_ids: upload(&words(&sorted.ids))?,
                sorted_weights: upload(&floats(&sorted.weights))?,
                sorted_experts: upload(&words(&sorted.experts))?,
            };
            let l = s.one_stage_launch(&k, &b, row.cu_num).map_err(|e| bad(e.to_string()))?;
            let touched = experts_touched(s.tokens, s.topk, s.experts);
            let hbm = t * d + (touched * (3 * n * d) as f64) as u64 + 2 * t * d;
            (k.file.clone(), l, hbm)
        }
    };
    let module = emu.load(wheel.code_object(&file)?)?;
    let opts = ModelOptions { sample_workgroups: sample, chip, hbm_bytes: Some(hbm) };
    let modeled = modeled_launch(&emu, &module, &launch.kernel, &launch.params(), &opts)?;
    Ok(Calibrated { row: row.clone(), modeled, hbm_bytes: hbm })
}

/// AITER's published attention-forward throughput on MI300X, the model's second anchor:
/// 546-592 TFLOP/s for `fmha_v3_fwd` bf16, head dim 128, non-causal, sequences of 4096 and more
/// (GFX942.md, measured anchors).
pub const FMHA_ANCHOR_TFLOPS: (f64, f64) = (546.0, 592.0);

/// The attention launches the anchor is checked on: non-causal, hd128, 4096 and 8192 rows.
pub fn fmha_anchor_shapes() -> Vec<super::fmha::Attention> {
    let scale = 1.0 / (super::fmha::HEAD_DIM as f32).sqrt();
    [(4u32, 32u32, 4096u32), (2, 32, 8192)]
        .into_iter()
        .map(|(batch, heads, seq)| super::fmha::Attention {
            batch,
            heads_q: heads,
            heads_kv: heads,
            seq_q: seq,
            seq_kv: seq,
            causal: false,
            lse: false,
            scale,
        })
        .collect()
}

/// Models one attention forward launch of AITER's MI300X build (RTNE rounding, the dispatcher's
/// default) on MI300X with `sample` workgroups; returns the launch and its modeled TFLOP/s.
///
/// # Errors
/// [`CalibrationError`].
pub fn model_fmha(wheel: &Wheel, a: &super::fmha::Attention, sample: u64) -> Result<(ModeledLaunch, f64), CalibrationError> {
    use super::fmha::{Chip as Build, HEAD_DIM, Rounding};
    let emu = Emulator::new(EmuConfig { memory_limit: 6 << 30, ..EmuConfig::default() });
    let d = HEAD_DIM as u64;
    let q_bytes = 2 * (a.batch * a.heads_q * a.seq_q) as u64 * d;
    let kv_bytes = 2 * (a.batch * a.heads_kv * a.seq_kv) as u64 * d;
    let (o, q, k, v) =
        (emu.alloc(q_bytes + SLACK)?, emu.alloc(q_bytes + SLACK)?, emu.alloc(kv_bytes + SLACK)?, emu.alloc(kv_bytes + SLACK)?);
    let (file, _) = a.kernel(Build::Mi300, Rounding::Rtne);
    let launch = a.launch(Build::Mi300, Rounding::Rtne, o, q, k, v, 0);
    let module = emu.load(wheel.code_object(&file)?)?;
    let opts = ModelOptions { sample_workgroups: sample, chip: Chip::MI300X, hbm_bytes: Some(2 * q_bytes + 2 * kv_bytes) };
    let m = modeled_launch(&emu, &module, &launch.kernel, &launch.params(), &opts)?;
    let tflops = a.flops() / m.modeled.seconds / 1e12;
    Ok((m, tflops))
}
