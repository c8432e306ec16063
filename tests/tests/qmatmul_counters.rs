//! What the quantized prefill GEMM (`quant_gemm_*`) costs, from the emulator's counters: exactly
//! one MFMA per 16x16x16 product block of the padded shape (nothing recomputed), every global
//! access 128 bits wide in whole 64-byte lines (activations, the weight's chunks, the output),
//! the weight read once per 128-row block of activations, and the LDS bank conflicts of the
//! dequantized weight stores, the operand tiles' fragment reads and the epilogue's strips.
//!
//! The test reads the device's counters, so it holds a lock for its whole run. The counter checks
//! are skipped on a real GPU (no counters there).

use ferrocm::ops::qmatmul::{self, QKernel, QMatmulOptions};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Tensor};
use ferrocm_tests::counters::{exclusive, measure};
use ferrocm_tests::device;
use ferrocm_tests::quant::random_blocks;
use ferrocm_tests::tensors::random;

#[test]
fn prefill_gemm_issues_exact_mfmas_loads_128_bits_and_reports_bank_conflicts() {
    let _device = exclusive();
    let dev = device();
    // Two 128-row blocks of M, two 64-row blocks of N, K two chunks of 256.
    let (m, n, k) = (256, 128, 512);
    for format in QuantFormat::ALL {
        let blocks = random_blocks(format, n, k, 0.05, 11);
        let w = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
        for dtype in [DType::Bf16, DType::F16] {
            let mut seed = 3;
            let (x, _): (Tensor, _) = random(&[m, k], dtype, 1.0, &mut seed);
            let opts = QMatmulOptions { out_dtype: Some(DType::F32), kernel: QKernel::Gemm, ..Default::default() };
            let Some((_, c)) = measure(|| qmatmul::qmatmul(&x, &w, &opts).unwrap()) else { return };
            let g = &c.global;
            let wide = g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) * 16;
            println!(
                "{format:<5} {dtype:<5} MFMA {:?}  read {:>8} written {:>7} (16B {:>8})  partial-line instr {}  LDS conflict cycles {} ({} of {} instr)",
                c.mfma,
                g.bytes_read,
                g.bytes_written,
                wide,
                g.partially_used_line_instructions,
                c.lds.bank_conflict_cycles,
                c.lds.conflicted_instructions,
                c.lds.instructions
            );
            let name = if dtype == DType::Bf16 { "v_mfma_f32_16x16x16_bf16" } else { "v_mfma_f32_16x16x16_f16" };
            assert_eq!(c.mfma.len(), 1, "{format} {dtype}: {:?}", c.mfma);
            assert_eq!(c.mfma.get(name).copied().unwrap_or(0) as usize, m * n * k / (16 * 16 * 16), "{format} {dtype}: {:?}", c.mfma);
            // Everything moves in 16-byte accesses except the layout's planes narrower than a
            // piece: the fifth bits of Q5_* (8 bytes per row and part of a chunk) and Q6_K's f16
            // scale (2 bytes per row and chunk, half a line per tile: its loads are the only
            // partially used lines).
            let narrow: Vec<u32> = g.lane_accesses_by_width.keys().copied().filter(|&w| w != 16).collect();
            let (allowed, partial_ok): (&[u32], bool) = match format {
                QuantFormat::Q5_0 | QuantFormat::Q5_1 | QuantFormat::Q5K => (&[8], false),
                QuantFormat::Q6K => (&[2], true),
                _ => (&[], false),
            };
            assert_eq!(narrow, allowed, "{format} {dtype}: access widths {:?}", g.lane_accesses_by_width);
            if !partial_ok {
                assert_eq!(g.partially_used_line_instructions, 0, "{format} {dtype}");
            }
            // The activations once per 64-wide block of N (x's rows are all 16-byte loads), the
            // output once.
            assert!(wide >= (2 * m * k * 2 + m * n * 4) as u64, "{format} {dtype}: {wide} bytes in 16-byte accesses");
            assert_eq!(g.bytes_written, (m * n * 4) as u64, "{format} {dtype}");
            // The dequantized weight stores, fragment reads and epilogue strips are free of bank
            // conflicts under the MI300X lane phases.
            assert_eq!(c.lds.bank_conflict_cycles, 0, "{format} {dtype}: LDS bank conflicts");
        }
    }
}

/// The decode GEMV with the RMSNorm fused (SmolLM2's 576 x 576 projection: 3 waves a
/// workgroup; one token, whose row all 2 waves of a group share, and 3 tokens, a wave each):
/// one launch (a workgroup per tile), nothing written but the output (the normalised rows
/// stay in LDS), no more bytes read than the plain GEMV's plus each workgroup's rows and norm
/// weight once, and no more LDS bank conflict cycles than the plain GEMV: the staged rows'
/// writes and reads add none. (What both have, a few cycles per workgroup, is in the tables
/// of activation sums and the waves' reduction: left as they are.)
#[test]
fn the_fused_norm_writes_only_the_output_and_adds_no_bank_conflicts() {
    use ferrocm::ops::qmatmul::RmsNorm;
    let _device = exclusive();
    let dev = device();
    let (n, k) = (576, 576);
    let format = QuantFormat::Q4_1;
    let blocks = random_blocks(format, n, k, 0.05, 12);
    let w = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
    for m in [1, 3] {
        let mut seed = 5;
        let (x, _): (Tensor, _) = random(&[m, k], DType::Bf16, 1.0, &mut seed);
        let (g, _): (Tensor, _) = random(&[k], DType::Bf16, 1.0, &mut seed);
        // (The general GEMV, as the fused one: `Auto` takes the one-row kernel for one plain row.)
        let plain = QMatmulOptions { out_dtype: Some(DType::F32), kernel: QKernel::Gemv, ..Default::default() };
        let Some((_, p)) = measure(|| qmatmul::qmatmul(&x, &w, &plain).unwrap()) else { return };
        let opts = QMatmulOptions { rms_norm: Some(RmsNorm { weight: Some(&g), eps: 1e-5 }), ..plain };
        let Some((_, c)) = measure(|| qmatmul::qmatmul(&x, &w, &opts).unwrap()) else { return };
        let gl = &c.global;
        println!(
            "m={m}: fused: read {} written {} LDS {} instr, {} conflict cycles; plain: read {} LDS {} instr, {} conflict cycles",
            gl.bytes_read,
            gl.bytes_written,
            c.lds.instructions,
            c.lds.bank_conflict_cycles,
            p.global.bytes_read,
            p.lds.instructions,
            p.lds.bank_conflict_cycles
        );
        assert_eq!(c.workgroups, n.div_ceil(16) as u64, "m={m}: one launch, a workgroup per tile");
        assert_eq!(gl.bytes_written, (m * n * 4) as u64, "m={m}: only the output is written");
        // Each workgroup reads its rows and the norm's weight once more, for the norm.
        let extra = c.workgroups * ((m * k + k) * 2) as u64;
        assert!(
            gl.bytes_read <= p.global.bytes_read + extra,
            "m={m}: read {} against the plain GEMV's {} + {extra}",
            gl.bytes_read,
            p.global.bytes_read
        );
        assert!(c.lds.bank_conflict_cycles <= p.lds.bank_conflict_cycles, "m={m}: LDS bank conflicts beyond the plain GEMV's");
    }
}

/// The one-row decode GEMV (`quant_gemv_one_*`, SmolLM2's down projection: 576 x 1536, f16, the
/// residual added): a workgroup per tile, the weight read whole and besides it only the row
/// (per lane) and the residual, only the output written, and no LDS bank conflicts in the
/// waves' meeting.
#[test]
fn the_one_row_gemv_reads_the_weight_once_and_writes_only_the_output() {
    let _device = exclusive();
    let dev = device();
    let (n, k) = (576, 1536);
    for format in [QuantFormat::Q4_1, QuantFormat::Q4K, QuantFormat::Q6K] {
        let blocks = random_blocks(format, n, k, 0.05, 13);
        let w = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
        let mut seed = 7;
        let (x, _): (Tensor, _) = random(&[1, k], DType::F16, 1.0, &mut seed);
        let (r, _): (Tensor, _) = random(&[1, n], DType::F16, 1.0, &mut seed);
        let opts = QMatmulOptions { residual: Some(&r), kernel: QKernel::GemvOne, ..Default::default() };
        let Some((_, c)) = measure(|| qmatmul::qmatmul(&x, &w, &opts).unwrap()) else { return };
        let general = QMatmulOptions { kernel: QKernel::Gemv, ..opts };
        let Some((_, p)) = measure(|| qmatmul::qmatmul(&x, &w, &general).unwrap()) else { return };
        let g = &c.global;
        let tiles = n.div_ceil(16) as u64;
        println!(
            "{format}: {} workgroups, read {} (general GEMV {}; W {}), written {}, widths {:?}, LDS {} instr {} conflict cycles",
            c.workgroups,
            g.bytes_read,
            p.global.bytes_read,
            w.device_bytes().len(),
            g.bytes_written,
            g.lane_accesses_by_width,
            c.lds.instructions,
            c.lds.bank_conflict_cycles
        );
        assert_eq!(c.workgroups, tiles, "{format}: a workgroup per tile");
        let wb = w.device_bytes().len() as u64;
        assert!(g.bytes_read >= wb, "{format}: W read whole");
        // Beside W: per tile, the row's K values by each of a piece's 16 lanes (every lane
        // reads row 0, so that the MFMAs' rows repeat it: one broadcast per instruction, which
        // the counters count per lane), at most twice (a wave's loads of its next chunk go out
        // before its last is added, clamped to that chunk), and one 16-bit residual read per
        // lane of at most 8 waves.
        let others = tiles * (2 * 16 * k as u64 * 2 + 8 * 64 * 2);
        assert!(g.bytes_read <= wb + others, "{format}: read {} against W's {wb} and the row's {others}", g.bytes_read);
        assert_eq!(g.bytes_written, (n * 2) as u64, "{format}: only the output is written");
        assert_eq!(c.lds.bank_conflict_cycles, 0, "{format}: LDS bank conflicts");
    }
}
