//! Side by side with AMD's hand-written assembly: AITER's kernels (`ferrocm_emu::aiter`) at the
//! shapes where ours run too, modeled in the same run by the same cycle model, so "ours vs
//! AMD's" is a ratio of two modeled times (neither is a measurement).
//!
//! A pairing names our registry case and AITER's launch at the same shape. Adding one is one
//! entry in [`pairings`]; an AITER launch with no ferrocm op yet names `None` (its row reports
//! AITER's modeled time alone).

use crate::run::CaseReport;
use ferrocm_emu::aiter::calibrate::model_fmha;
use ferrocm_emu::aiter::fmha::{Attention, HEAD_DIM};
use ferrocm_emu::aiter::gemm::{BF16_TILES, bf16_launch};
use ferrocm_emu::aiter::{Launch, Wheel};
use ferrocm_emu::model::{Chip, ModelOptions, modeled_launch};
use ferrocm_emu::{EmuConfig, Emulator};

/// An AITER launch to model.
#[derive(Clone, Debug)]
pub enum AiterLaunch {
    /// `bf16gemm` (f32 out) at M x N x K: every shipped tile, split-K chosen to fill the CUs
    /// where the tiles alone do not; the fastest modeled one is reported.
    Bf16Gemm {
        /// Rows.
        m: u32,
        /// Columns.
        n: u32,
        /// Depth.
        k: u32,
    },
    /// `fmha_v3_fwd` (MI300X build, RTNE).
    Fmha(Attention),
}

/// One pairing: our registry case (by name) and AITER's launch at its shape.
#[derive(Clone, Debug)]
pub struct Pairing {
    /// Our case's name (`op shape`), or `None` where ferrocm has no such op yet.
    pub ours: Option<&'static str>,
    /// AITER's launch.
    pub aiter: AiterLaunch,
    /// What differs between the two beyond the code (output type, layout).
    pub note: &'static str,
}

/// Every pairing, in report order.
pub fn pairings() -> Vec<Pairing> {
    // AITER's hd128 forward at the registry's prefill shape (1 x 32 heads x 4096 tokens).
    let fmha = |ours: &'static str, causal: bool| Pairing {
        ours: Some(ours),
        aiter: AiterLaunch::Fmha(Attention {
            batch: 1,
            heads_q: 32,
            heads_kv: 32,
            seq_q: 4096,
            seq_kv: 4096,
            causal,
            lse: false,
            scale: 1.0 / (HEAD_DIM as f32).sqrt(),
        }),
        note: "AITER rounds to nearest even (RTNE build)",
    };
    vec![
        Pairing {
            ours: Some("gemm bf16 4096x4096x4096"),
            aiter: AiterLaunch::Bf16Gemm { m: 4096, n: 4096, k: 4096 },
            note: "AITER writes f32 (ours bf16)",
        },
        Pairing {
            ours: Some("gemm bf16 1x4096x4096"),
            aiter: AiterLaunch::Bf16Gemm { m: 1, n: 4096, k: 4096 },
            note: "AITER writes f32 (ours bf16)",
        },
        // Attention forward at the registry's shapes (both BSHD, bf16 out, no LSE).
        fmha("attention_prefill bf16 b1 h32 s4096 d128", false),
        fmha("attention_prefill bf16 b1 h32 s4096 d128 causal", true),
    ]
}

/// One side-by-side row.
#[derive(Clone, Debug)]
pub struct SideBySide {
    /// The shape.
    pub shape: String,
    /// Our case and its modeled time, seconds (when it ran in this report).
    pub ours: Option<(String, f64)>,
    /// AITER's kernel and its modeled time, seconds.
    pub aiter: (String, f64),
    /// The pairing's note.
    pub note: &'static str,
}

/// Models every pairing's AITER launch (those whose case is in `done` or that have no case) and
/// pairs it with our modeled time. `Err` with the reason when the wheel is not here.
///
/// # Errors
/// A message: the wheel is missing, or a launch failed.
pub fn side_by_side(done: &[CaseReport], filter: &Option<String>) -> Result<Vec<SideBySide>, String> {
    let wheel = Wheel::locate().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for p in pairings() {
        let ours = p
            .ours
            .and_then(|name| done.iter().find(|c| format!("{} {}", c.op, c.shape) == name))
            .map(|c| (format!("{} {}", c.op, c.shape), c.modeled_s));
        if p.ours.is_some() && ours.is_none() {
            continue; // our case was filtered out of this report
        }
        if p.ours.is_none() && filter.as_ref().is_some_and(|f| !"attention fmha".contains(f.as_str())) {
            continue;
        }
        let (shape, aiter) = match &p.aiter {
            AiterLaunch::Bf16Gemm { m, n, k } => (format!("bf16 {m}x{n}x{k}"), best_bf16(&wheel, *m, *n, *k)?),
            AiterLaunch::Fmha(a) => {
                let (m, _) = model_fmha(&wheel, a, 16).map_err(|e| e.to_string())?;
                (
                    format!(
                        "attention fwd bf16 b{} h{} s{} d{}{}",
                        a.batch,
                        a.heads_q,
                        a.seq_q,
                        HEAD_DIM,
                        if a.causal { " causal" } else { "" }
                    ),
                    (format!("fmha_fwd_hd128_bf16{}_rtne", if a.causal { "_causal" } else { "" }), m.modeled.seconds),
                )
            }
        };
        rows.push(SideBySide { shape, ours, aiter, note: p.note });
    }
    Ok(rows)
}

/// Models every bf16 tile that takes the shape and returns the fastest (kernel with split,
/// modeled seconds). Split-K: 1, or for grids below one workgroup per CU the largest split that
/// fills the CUs and divides K into 64-granules (AITER's host code also splits small grids).
fn best_bf16(wheel: &Wheel, m: u32, n: u32, k: u32) -> Result<(String, f64), String> {
    let chip = Chip::MI300X;
    let mut best: Option<(String, f64)> = None;
    for tile in BF16_TILES.iter().filter(|t| n % t.n == 0) {
        let tiles = (n / tile.n) as u64 * m.div_ceil(tile.m) as u64;
        let granules = k / 64;
        let split = if tiles >= chip.cus {
            1
        } else {
            (1..=granules.min(64)).rev().find(|s| granules % s == 0 && tiles * *s as u64 <= chip.cus).unwrap_or(1)
        };
        let emu = Emulator::new(EmuConfig { memory_limit: 4 << 30, ..EmuConfig::default() });
        let (ab, bb, db) = (2 * m as u64 * k as u64, 2 * n as u64 * k as u64, 4 * m as u64 * n as u64);
        let alloc = |b: u64| emu.alloc(b + (64 << 10)).map_err(|e| e.to_string());
        let (a, b, d) = (alloc(ab)?, alloc(bb)?, alloc(db)?);
        let l: Launch = bf16_launch(*tile, m, n, k, split, d, a, b).map_err(|e| e.to_string())?;
        let module = emu.load(wheel.code_object(tile.file).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let opts = ModelOptions { sample_workgroups: 8, chip, hbm_bytes: Some(ab + bb + db) };
        let r = modeled_launch(&emu, &module, &l.kernel, &l.params(), &opts).map_err(|e| e.to_string())?;
        let s = r.modeled.seconds;
        if best.as_ref().is_none_or(|(_, t)| s < *t) {
            best = Some((format!("{} split {split}", tile.name), s));
        }
    }
    best.ok_or_else(|| format!("no bf16gemm tile takes N={n}"))
}

/// The side-by-side section of the markdown report.
pub fn markdown(rows: &Result<Vec<SideBySide>, String>) -> String {
    let mut s = String::from(
        "\n## Side by side with AMD's hand-written assembly (AITER, modeled)\n\n\
         AITER's shipped gfx942 kernels (PyPI `amd-aiter`) at our shapes, emulated and modeled in this run by the \
         same cycle model: the ratio compares two modeled MI300X times.\n\n",
    );
    match rows {
        Err(e) => s += &format!("Not available: {e}.\n"),
        Ok(rows) => {
            s += "| shape | ours (modeled) | AITER kernel | AITER (modeled) | ours / AITER time | note |\n|---|---:|---|---:|---:|---|\n";
            for r in rows {
                let (ours, ratio) = match &r.ours {
                    Some((_, t)) => (format!("{:.1} µs", t * 1e6), format!("{:.2}", t / r.aiter.1)),
                    None => ("-".into(), "-".into()),
                };
                s += &format!("| {} | {} | {} | {:.1} µs | {} | {} |\n", r.shape, ours, r.aiter.0, r.aiter.1 * 1e6, ratio, r.note);
            }
        }
    }
    s
}
