//! What the GEMM kernels cost, from the emulator's counters: the MFMA instructions they issue
//! (exactly the products' count for the shape, on the configured instruction), 128-bit global
//! accesses in whole 64-byte lines, zero LDS bank conflicts (operand tiles, fragment reads and
//! the epilogue's strips, under the measured MI300X lane groups of each access width), for the
//! plain kernels on both MFMA shapes, stream-K and the fp8 block-scaled one, the decode GEMV's
//! traffic and MFMAs, and the split-K reduction's traffic.
//!
//! The tests read the device's counters, so each holds a lock for its whole run (no other launch
//! lands in its counts). The counter checks are skipped on a real GPU (no counters there).

use ferrocm::ops::gemm::{self, GemmConfig, GemmOptions, Mfma};
use ferrocm::ops::gemm_fp8;
use ferrocm::{DType, Tensor};
use ferrocm_tests::counters::{exclusive, measure};
use ferrocm_tests::device;
use ferrocm_tests::tensors::random;

fn input(rows: usize, cols: usize, dtype: DType, seed: u64) -> Tensor {
    let mut seed = seed;
    random(&[rows, cols], dtype, 1.0, &mut seed).0
}

#[test]
fn block_tiles_issue_exact_mfmas_load_128_bits_and_have_no_bank_conflicts() {
    let _device = exclusive();
    let (m, n, k) = (256, 256, 512);
    for dtype in [DType::Bf16, DType::F16, DType::F32, DType::Fp8E4M3Fnuz] {
        let a = input(m, k, dtype, 1);
        let b = input(n, k, dtype, 2).transpose(0, 1).unwrap();
        // Whole blocks on both MFMA shapes, and stream-K (here workgroups share each block).
        for config in gemm::configs(dtype).into_iter().filter(|c| c.block_m == 128 && c.splits == 1) {
            let mfma = config.mfma;
            let opts = GemmOptions { config: Some(config), ..Default::default() };
            let Some((_, c)) = measure(|| gemm::gemm(&a, &b, &opts).unwrap()) else { return };
            let shape = mfma.shape(dtype);
            let g = &c.global;
            let wide = g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) * 16;
            println!(
                "{dtype:<12} {shape:<9} MFMA {:?}  bytes {:>8} (16B {:>8})  partial-line instr {}  LDS conflict cycles {}",
                c.mfma,
                g.bytes_read + g.bytes_written,
                wide,
                g.partially_used_line_instructions,
                c.lds.bank_conflict_cycles
            );
            // One instruction per MxNxK product block: nothing recomputed, nothing padded.
            let dims: Vec<usize> = shape.split('x').map(|d| d.parse().unwrap()).collect();
            let name = c.mfma.keys().next().copied().unwrap_or("none");
            assert_eq!(c.mfma.len(), 1, "{dtype} {shape}: {:?}", c.mfma);
            assert!(name.contains(shape), "{dtype} {shape}: ran {name}");
            assert_eq!(c.mfma[name] as usize, m * n * k / (dims[0] * dims[1] * dims[2]), "{dtype} {shape}");
            // Stream-K's per-wave counts of a block's contributors are the only narrower
            // accesses: each contributor's wave reads its count (all lanes, one word) and may add
            // itself once (one lane; an atomic reads and writes its word).
            // (A workgroup contributes to at most two shared blocks.)
            let contributions = if config.stream_k {
                let (blocks, k_tiles) = ((m / 128) * (n / 128), (k * dtype.size()).div_ceil(64));
                2 * (blocks * k_tiles).div_ceil(gemm::stream_k_run(blocks, k_tiles))
            } else {
                0
            };
            let all = g.bytes_read + g.bytes_written;
            let narrow = (contributions * 4 * (64 + 2) * 4) as u64;
            assert!(wide <= all && all - wide <= narrow, "{dtype} {shape}: {} bytes in accesses narrower than 16", all - wide);
            assert!(g.partially_used_line_instructions <= (contributions * 4 * 2) as u64, "{dtype} {shape}");
            assert_eq!(c.lds.bank_conflict_cycles, 0, "{dtype} {shape}: LDS bank conflicts");
        }
    }
}

#[test]
fn the_gemv_reads_b_once_in_16_byte_pieces_with_exact_mfmas() {
    let _device = exclusive();
    for (dtype, m, n, k) in
        [(DType::Bf16, 1, 1024, 2048), (DType::F16, 16, 528, 576), (DType::F32, 3, 64, 1000), (DType::Fp8E4M3Fnuz, 2, 256, 528)]
    {
        let x = input(m, k, dtype, 11);
        let wt = input(n, k, dtype, 12).transpose(0, 1).unwrap();
        let cfg = gemm::choose_config(dtype, 1, m, n, k);
        assert!(cfg.is_gemv(), "{cfg:?}");
        let opts = GemmOptions { out_dtype: Some(DType::F32), ..Default::default() };
        let Some((_, c)) = measure(|| gemm::gemm(&x, &wt, &opts).unwrap()) else { return };
        let g = &c.global;
        let eb = dtype.size();
        let wide = g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) as usize * 16;
        println!(
            "{dtype:<12} {m}x{n}x{k} waves {}  MFMA {:?}  read {} (16B {wide})  written {}  partial-line instr {}  LDS conflict cycles {}",
            cfg.waves, c.mfma, g.bytes_read, g.bytes_written, g.partially_used_line_instructions, c.lds.bank_conflict_cycles
        );
        // One launch, one MFMA per 16x16 block and MFMA-deep slice of K (ragged K rounds up to
        // whole K-tiles of 64 bytes).
        let shape = Mfma::Tile16.shape(dtype);
        let depth: usize = shape.split('x').nth(2).unwrap().parse().unwrap();
        let k_tiles = (k * eb).div_ceil(64);
        let name = c.mfma.keys().next().copied().unwrap_or("none");
        assert_eq!(c.mfma.len(), 1, "{dtype}: {:?}", c.mfma);
        assert!(name.contains(shape), "{dtype}: ran {name}");
        assert_eq!(c.mfma[name] as usize, n.div_ceil(16) * m.div_ceil(16) * k_tiles * 64 / (depth * eb), "{dtype}");
        // B once, A once per 16 columns, all in 16-byte pieces; C (f32) once.
        assert_eq!(g.bytes_read as usize, n * k * eb + n.div_ceil(16) * m * k * eb, "{dtype}");
        assert_eq!(wide, g.bytes_read as usize, "{dtype}: loads narrower than 16 bytes");
        assert_eq!(g.bytes_written as usize, m * n * 4, "{dtype}");
        assert_eq!(c.lds.bank_conflict_cycles, 0, "{dtype}: LDS bank conflicts");
    }
}

#[test]
fn split_k_agrees_with_one_pass_and_its_reduction_streams() {
    let _device = exclusive();
    let (m, n, k) = (3, 1024, 2048);
    let x = input(m, k, DType::Bf16, 3);
    let wt = input(n, k, DType::Bf16, 4).transpose(0, 1).unwrap();
    let cfg = gemm::tiled_config(DType::Bf16, 1, m, n, k);
    assert!(cfg.splits > 1 && cfg.block_m == 16, "{cfg:?}");
    let opts = GemmOptions { config: Some(GemmConfig { splits: 1, ..cfg }), out_dtype: Some(DType::F32), ..Default::default() };
    let one_pass = gemm::gemm(&x, &wt, &opts).unwrap().to_vec::<f32>().unwrap();
    let split_opts = GemmOptions { config: Some(cfg), out_dtype: Some(DType::F32), ..Default::default() };
    let split = match measure(|| gemm::gemm(&x, &wt, &split_opts).unwrap()) {
        Some((split, c)) => {
            // Both launches: the operands once, each partial written once and read once, and C.
            let g = &c.global;
            let partials = cfg.splits as usize * m * n * 4;
            assert_eq!(g.bytes_written as usize, partials + m * n * 4);
            assert!(g.bytes_read as usize >= partials + (n * k) * 2, "{} bytes read", g.bytes_read);
            assert_eq!(g.partially_used_line_instructions, 0);
            // The reduction was the last launch: it read each partial once, in whole 64-byte
            // lines, and wrote C once.
            let r = device().as_emulator().unwrap().last_launch().unwrap().counters.global;
            assert_eq!(r.bytes_read as usize, partials);
            assert_eq!(r.bytes_written as usize, m * n * 4);
            assert_eq!(r.partially_used_line_instructions, 0);
            split
        }
        None => gemm::gemm(&x, &wt, &split_opts).unwrap(),
    };
    // The same sums in another order: equal up to f32 rounding (|x| <= 2048 * 1 here).
    for (a, b) in one_pass.iter().zip(split.to_vec::<f32>().unwrap()) {
        assert!((a - b).abs() <= 2048.0 * 2f32.powi(-20), "{a} vs {b}");
    }
}

#[test]
fn fp8_block_scaled_issues_exact_mfmas_and_has_no_bank_conflicts() {
    let _device = exclusive();
    let (m, n, k) = (256, 256, 1024);
    let a = input(m, k, DType::Fp8E4M3Fnuz, 5);
    let b = input(n, k, DType::Fp8E4M3Fnuz, 6);
    let (kb, nb) = (gemm_fp8::scale_blocks(k), gemm_fp8::scale_blocks(n));
    let sa = input(m, kb, DType::F32, 7);
    let sb = input(nb, kb, DType::F32, 8);
    // Whole blocks, and stream-K: 4 blocks of 8 scale blocks in runs of 4, each block shared by
    // two workgroups.
    let mut whole_wide = None;
    for stream_k in [false, true] {
        let opts = gemm_fp8::BlockScaledOptions { config: Some(gemm_fp8::BlockScaledConfig { block: 128, splits: 1, stream_k }) };
        let Some((_, c)) = measure(|| gemm_fp8::gemm_fp8_blockscaled_with(&a, &sa, &b, &sb, &opts).unwrap()) else { return };
        let name = "v_mfma_f32_16x16x32_fp8_fp8";
        println!("fp8 block-scaled (stream-K {stream_k}) MFMA {:?}  LDS conflict cycles {}", c.mfma, c.lds.bank_conflict_cycles);
        assert_eq!(c.mfma.get(name).copied().unwrap_or(0) as usize, m * n * k / (16 * 16 * 32), "{:?}", c.mfma);
        assert_eq!(c.mfma.len(), 1, "{:?}", c.mfma);
        assert_eq!(c.lds.bank_conflict_cycles, 0, "LDS bank conflicts");
        // The operand tiles and C move in 16-byte accesses; only the scales (a 4-byte B scale
        // per K block, A's per-row column), the host-side scale transposition and stream-K's
        // per-wave counts may be narrower.
        let g = &c.global;
        let wide = g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) * 16;
        let operands = (m * k + n * k) as u64 * 2 + (m * n * 2) as u64;
        assert!(wide >= operands, "{wide} bytes in 16-byte accesses, operands and C alone are {operands}");
        match whole_wide {
            None => whole_wide = Some(wide),
            // Stream-K moves exactly the partials more: per shared block, one contributor's f32
            // partial stored and loaded once.
            Some(w) => {
                let blocks = (m / 128) * (n / 128);
                assert_eq!(gemm_fp8::stream_k_run(blocks, kb), 4);
                assert_eq!(wide - w, (blocks * 128 * 128 * 4 * 2) as u64, "stream-K's 16-byte traffic past the whole-block kernel's");
            }
        }
    }
}
