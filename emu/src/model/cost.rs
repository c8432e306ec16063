//! What one traced instruction asks of the CU: which issue port, which pipe, for how long.

use super::machine::*;
use crate::exec::{Class, Event};
use crate::isa::Op;

/// How an instruction is issued and what it occupies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Scalar ALU: one issue turn.
    Salu,
    /// Vector ALU: holds the SIMD's VALU for this many cycles.
    Valu(u64),
    /// Matrix core: holds the SIMD's matrix core for this many cycles (VALU stays free).
    Mfma(u64),
    /// Scalar memory (lgkmcnt).
    Smem,
    /// Vector memory (vmcnt): bytes through the CU's memory path (whole lines).
    Vmem(u64),
    /// LDS (lgkmcnt): cycles of the CU's LDS pipe.
    Lds(u64),
    /// A branch; `true` when taken.
    Branch(bool),
    /// `s_waitcnt`: continue once at most these many instructions are outstanding.
    Wait {
        /// vmcnt threshold.
        vm: usize,
        /// lgkmcnt threshold.
        lgkm: usize,
    },
    /// `s_barrier`.
    Barrier,
    /// Idle the wave this many cycles (`s_nop`, `s_sleep`).
    Idle(u64),
    /// End of the wave.
    End,
    /// Other program control: one issue turn, no pipe.
    Other,
}

/// Why an instruction could not be costed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCost(pub String);

/// The cost of `e`.
///
/// # Errors
/// An MFMA whose shape the model cannot read from its mnemonic.
pub fn cost(e: &Event) -> Result<Cost, UnknownCost> {
    Ok(match e.class {
        Class::Salu => Cost::Salu,
        Class::Valu => Cost::Valu(VALU_CYCLES * valu_factor(e.op)),
        Class::Mfma => Cost::Mfma(mfma_cycles(e.op.name()).ok_or_else(|| UnknownCost(format!("MFMA shape of {}", e.op.name())))?),
        Class::Smem => Cost::Smem,
        Class::Vmem => Cost::Vmem(e.lines() as u64 * LINE_BYTES),
        Class::Ds => Cost::Lds(lds_cycles(e.bytes() as u64, e.conflict_cycles() as u64)),
        Class::Branch => Cost::Branch(e.taken()),
        Class::Other => match e.op {
            Op::SWaitcnt => {
                let imm = e.imm();
                // gfx9 layout: vmcnt in bits 3:0 and 15:14, lgkmcnt in 11:8 (CDNA3 ISA guide, S_WAITCNT).
                let vm = (imm & 0xf) | ((imm >> 14) & 3) << 4;
                let lgkm = (imm >> 8) & 0xf;
                Cost::Wait { vm: vm as usize, lgkm: lgkm as usize }
            }
            Op::SBarrier => Cost::Barrier,
            // s_nop N: N + 1 wait states, one issue turn each.
            Op::SNop => Cost::Idle(ISSUE_PERIOD * ((e.imm() & 0xf) as u64 + 1)),
            Op::SSleep => Cost::Idle(SLEEP_UNIT_CYCLES * (e.imm() & 0x7f) as u64),
            Op::SEndpgm | Op::SEndpgmSaved => Cost::End,
            _ => Cost::Other,
        },
    })
}

/// LDS pipe cycles of one DS instruction: its bytes at 128 per clock (one clock per 32-lane
/// phase of dwords), at least the two phases of a b32 access (lane permutes move no LDS memory
/// but use the same crossbar for both halves of the wave), plus the bank-conflict replays.
pub fn lds_cycles(bytes: u64, conflicts: u64) -> u64 {
    bytes.div_ceil(LDS_BYTES_PER_CLOCK).max(2) + conflicts
}

/// Rate of a VALU op relative to a full-rate one (see the constants' sources).
fn valu_factor(op: Op) -> u64 {
    let name = op.name();
    const TRANS: [&str; 7] = ["v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_"];
    const QUARTER: [&str; 6] = ["v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_mad_u64_u32", "v_mad_i64_i32", "v_mul_lo_i32"];
    if TRANS.iter().any(|p| name.starts_with(p)) {
        TRANS_FACTOR
    } else if QUARTER.contains(&name) {
        QUARTER_RATE_FACTOR
    } else {
        1
    }
}

/// FLOPs of one MFMA and the input type, from the mnemonic
/// (`v_mfma_<out>_<M>x<N>x<K>[_<blocks>b]_<in>`).
pub fn mfma_flops(name: &str) -> Option<(f64, MathKind)> {
    let rest = name.strip_prefix("v_mfma_")?;
    let mut parts = rest.split('_');
    let out = parts.next()?;
    let shape = parts.next()?;
    let dims: Vec<u64> = shape.split('x').map(|d| d.parse().ok()).collect::<Option<_>>()?;
    let [m, n, k] = dims[..] else { return None };
    let mut blocks = 1u64;
    let mut input = None;
    for p in parts {
        if let Some(b) = p.strip_suffix('b').and_then(|b| b.parse().ok()) {
            blocks = b;
        } else if input.is_none() {
            input = Some(p);
        }
    }
    let kind = match (out, input?) {
        (_, "f16" | "bf16") => MathKind::F16,
        (_, "fp8" | "bf8" | "i8") => MathKind::Fp8,
        (_, "xf32") => MathKind::Xf32,
        ("f64", _) => MathKind::F64,
        (_, "f32") => MathKind::F32,
        _ => return None,
    };
    Some(((2 * m * n * k * blocks) as f64, kind))
}

/// Cycles an MFMA holds its SIMD's matrix core: its FLOPs at a quarter of the CU's dense rate for
/// its input type. Exact for every row of GFX942.md's MFMA table (tested); for the multi-block
/// 4x4 shapes, which no ferrocm kernel uses, it assumes the same rate.
pub fn mfma_cycles(name: &str) -> Option<u64> {
    let (flops, kind) = mfma_flops(name)?;
    let per_cu = peak_flops(kind) / (CUS as f64 * CLOCK_MHZ * 1e6);
    Some((flops / (per_cu / SIMDS as f64)).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mfma_cycles_match_the_data_sheet_table() {
        // GFX942.md, "MFMA instructions": cycles column.
        for (name, cycles) in [
            ("v_mfma_f32_32x32x8_f16", 32),
            ("v_mfma_f32_16x16x16_f16", 16),
            ("v_mfma_f32_32x32x8_bf16", 32),
            ("v_mfma_f32_16x16x16_bf16", 16),
            ("v_mfma_f32_16x16x32_fp8_fp8", 16),
            ("v_mfma_f32_16x16x32_bf8_fp8", 16),
            ("v_mfma_f32_32x32x16_fp8_fp8", 32),
            ("v_mfma_f32_32x32x2_f32", 64),
            ("v_mfma_f32_16x16x4_f32", 32),
            ("v_mfma_f32_16x16x8_xf32", 16),
        ] {
            assert_eq!(mfma_cycles(name), Some(cycles), "{name}");
        }
        assert_eq!(mfma_flops("v_mfma_f32_32x32x4_2b_f16"), Some((16384.0, MathKind::F16)));
        assert_eq!(mfma_cycles("v_mfma_nonsense"), None);
    }

    #[test]
    fn lds_cycles_count_phases_and_replays() {
        assert_eq!(lds_cycles(1024, 0), 8); // ds_read_b128, 64 lanes
        assert_eq!(lds_cycles(1024, 8), 16); // 2-way conflicted: one replay per phase
        assert_eq!(lds_cycles(256, 0), 2); // ds_read_b32
        assert_eq!(lds_cycles(0, 0), 2); // ds_bpermute_b32
    }
}
