//! What the attention kernels cost, from the emulator's counters: exactly the MFMAs their tiles
//! need (no recomputation, only the padding of the last key block or step), 128-bit global
//! accesses of whole 64-byte lines for Q, K, V and O (the transposed V quads included), and zero
//! LDS bank conflicts (the K tile, the transposed V tile's stores and fragment reads, decode's
//! cross-wave combination) under MI300X's lane groups of each access width.
//!
//! Each test holds the device for its whole run (no other launch lands in its counts); the
//! checks are skipped on a real GPU (no counters there).

use ferrocm::emulator::Counters;
use ferrocm::ops::attention::{self, BlockTable, DecodeOptions, FlashOptions, PagedKvCache};
use ferrocm::{DType, Tensor};
use ferrocm_tests::counters::exclusive;
use ferrocm_tests::device;
use ferrocm_tests::tensors::random;

/// The counters of the last launch `f` makes, or `None` on a real GPU.
fn last_launch<T>(f: impl FnOnce() -> T) -> Option<(T, Counters)> {
    let emu = device().as_emulator()?;
    let out = f();
    Some((out, emu.last_launch().expect("a launch").counters))
}

/// Every global access 16 bytes wide and every line it touches used whole.
fn assert_wide_and_whole(c: &Counters, what: &str) {
    let g = &c.global;
    let wide = g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) * 16;
    assert_eq!(wide, g.bytes_read + g.bytes_written, "{what}: accesses narrower than 16 bytes: {:?}", g.lane_accesses_by_width);
    assert_eq!(g.partially_used_line_instructions, 0, "{what}: instructions using part of a line");
}

#[test]
fn flash_issues_exact_mfmas_moves_whole_lines_and_has_no_bank_conflicts() {
    let _device = exclusive();
    let (sq, sk, heads) = (256, 320, 2);
    for d in [32, 64, 96, 128, 256] {
        for dtype in [DType::Bf16, DType::F16] {
            let mut seed = d as u64;
            let q = random(&[1, sq, heads, d], dtype, 1.0, &mut seed).0;
            let k = random(&[1, sk, heads, d], dtype, 1.0, &mut seed).0;
            let v = random(&[1, sk, heads, d], dtype, 1.0, &mut seed).0;
            let Some((_, c)) = last_launch(|| attention::flash(&q, &k, &v, &FlashOptions::default()).unwrap()) else { return };
            let what = format!("flash {dtype} d{d}");
            // S^T = K Q^T and O^T = V^T P^T over whole 64-key blocks (sk = 5 blocks exactly).
            let name = if dtype == DType::Bf16 { "v_mfma_f32_16x16x16_bf16" } else { "v_mfma_f32_16x16x16_f16" };
            let want = 2 * heads * sq * sk * d / (16 * 16 * 16);
            assert_eq!(c.mfma.len(), 1, "{what}: {:?}", c.mfma);
            assert_eq!(c.mfma.get(name).copied().unwrap_or(0) as usize, want, "{what}: {:?}", c.mfma);
            assert_wide_and_whole(&c, &what);
            // Q, K and V read at least once, O written once.
            let g = &c.global;
            assert_eq!(g.bytes_written as usize, sq * heads * d * 2, "{what}");
            assert!(g.bytes_read as usize >= (sq + 2 * sk) * heads * d * 2, "{what}");
            assert_eq!(c.lds.bank_conflict_cycles, 0, "{what}: LDS bank conflicts in {} instructions", c.lds.conflicted_instructions);
            println!(
                "{what}: {} MFMA, {} B read, {} B LDS, {} barriers",
                want,
                g.bytes_read,
                c.lds.bytes_read + c.lds.bytes_written,
                c.barriers
            );
        }
    }
}

/// The stream kernels (`flash_stream_*`: 1024 keys, runs of 8 of the 16 key blocks, so every
/// query block is split between two workgroups) issue the same MFMAs, and besides O write
/// exactly the contributors' partials (whole lines) and their counts.
#[test]
fn stream_flash_issues_exact_mfmas_and_writes_only_the_partials() {
    let _device = exclusive();
    let (sq, sk, heads) = (256, 1024, 2);
    for d in [32, 64, 96, 128, 256] {
        let dtype = DType::Bf16;
        let mut seed = d as u64;
        let q = random(&[1, sq, heads, d], dtype, 1.0, &mut seed).0;
        let k = random(&[1, sk, heads, d], dtype, 1.0, &mut seed).0;
        let v = random(&[1, sk, heads, d], dtype, 1.0, &mut seed).0;
        let blocks = heads * sq / 128;
        assert_eq!(attention::stream_run_for(304, blocks, blocks * sk / 64, sk / 64, d), Some(8));
        let Some((_, c)) = last_launch(|| attention::flash(&q, &k, &v, &FlashOptions::default()).unwrap()) else { return };
        let what = format!("stream flash d{d}");
        let want = 2 * heads * sq * sk * d / (16 * 16 * 16);
        assert_eq!(c.mfma.get("v_mfma_f32_16x16x16_bf16").copied().unwrap_or(0) as usize, want, "{what}: {:?}", c.mfma);
        let g = &c.global;
        // Each of the 2 contributors of each block stores its 4 waves' partials: the O^T
        // accumulators (d / 8 quads of 64 lanes) and one quad of statistics, 16 bytes a lane.
        let partials = blocks * 2 * 4 * (d / 8 + 1) * 64 * 16;
        // And counts itself: one 4-byte atomic add a wave.
        let counts = blocks * 2 * 4 * 4;
        assert_eq!(g.bytes_written as usize, sq * heads * d * 2 + partials + counts, "{what}");
        assert!(g.bytes_read as usize >= (sq + 2 * sk) * heads * d * 2 + partials, "{what}");
        // Only the counts' atomics (one lane each) use part of a line.
        assert_eq!(g.partially_used_line_instructions as usize, blocks * 2 * 4, "{what}: instructions using part of a line");
        assert_eq!(c.lds.bank_conflict_cycles, 0, "{what}: LDS bank conflicts in {} instructions", c.lds.conflicted_instructions);
    }
}

/// Causal attention over a longer context (200 new queries, 1100 keys) streams too: the stream
/// kernel ran (the only flash kernel with atomics, run one workgroup at a time), with the MFMAs
/// of exactly the key blocks each query block's rows reach.
#[test]
fn causal_stream_flash_issues_the_mfmas_of_its_key_blocks() {
    let _device = exclusive();
    let (sq, sk, heads, d) = (200, 1100, 3, 64);
    let mut seed = 5;
    let q = random(&[1, sq, heads, d], DType::Bf16, 1.0, &mut seed).0;
    let k = random(&[1, sk, heads, d], DType::Bf16, 1.0, &mut seed).0;
    let opts = FlashOptions { causal: true, ..Default::default() };
    let Some(emu) = ferrocm_tests::device().as_emulator() else { return };
    attention::flash(&q, &k, &k, &opts).unwrap();
    let l = emu.last_launch().expect("a launch");
    assert!(l.sequential, "the stream kernel (with atomics) ran");
    // Each wave (32 query rows) walks the key blocks its last row reaches (row i: keys up to
    // i + 900), 64 MFMAs of 16x16x16 per block at d = 64; the fourth wave of query block 1
    // (rows 224..256) has no rows.
    let blocks: usize = (0..8).map(|w| if 32 * w < sq { ((32 * w + 31).min(sq - 1) + sk - sq) / 64 + 1 } else { 0 }).sum();
    assert_eq!(blocks, 15 + 16 + 16 + 17 + 17 + 18 + 18);
    let want = heads * blocks * 2 * 64 * 32 * d / (16 * 16 * 16);
    assert_eq!(l.counters.mfma.get("v_mfma_f32_16x16x16_bf16").copied().unwrap_or(0) as usize, want, "{:?}", l.counters.mfma);
    assert_eq!(l.counters.lds.bank_conflict_cycles, 0);
}

#[test]
fn causal_and_ragged_flash_stay_conflict_free_and_wide() {
    let _device = exclusive();
    let mut seed = 11;
    let q = random(&[2, 200, 3, 64], DType::Bf16, 1.0, &mut seed).0;
    let k = random(&[2, 333, 1, 64], DType::Bf16, 1.0, &mut seed).0;
    let opts = FlashOptions { causal: true, key_lengths: Some(&[333, 150]), ..Default::default() };
    let Some((_, c)) = last_launch(|| attention::flash(&q, &k, &k, &opts).unwrap()) else { return };
    assert_wide_and_whole(&c, "causal flash");
    assert_eq!(c.lds.bank_conflict_cycles, 0);
}

#[test]
fn decode_issues_exact_mfmas_streams_whole_lines_and_has_no_bank_conflicts() {
    let _device = exclusive();
    let dev = device();
    let (batch, kv_heads, group, ctx): (usize, usize, usize, usize) = (2, 2, 4, 200);
    for d in [32, 64, 128, 256] {
        let cache = PagedKvCache::new(dev, 1, batch * ctx.div_ceil(16), 16, kv_heads, d, DType::Bf16).unwrap();
        let pages: Vec<Vec<u32>> = (0..batch).map(|b| (0..ctx.div_ceil(16)).map(|i| (b * ctx.div_ceil(16) + i) as u32).collect()).collect();
        let table = BlockTable::new(dev, &pages, &[ctx, ctx - 37]).unwrap();
        let mut seed = 3;
        let q = random(&[batch, 1, kv_heads * group, d], DType::Bf16, 1.0, &mut seed).0;
        for splits in [1, 3] {
            let opts = DecodeOptions { splits: Some(splits), ..Default::default() };
            let Some((_, c)) = last_launch(|| attention::decode(&q, &cache, 0, &table, &opts).unwrap()) else { return };
            let what = format!("decode d{d} splits {splits}");
            if splits > 1 {
                // The last launch is the combination: each split's f32 rows read and the output
                // written in 16-byte accesses (only the splits' log-sum-exps are 4 bytes).
                let out_rows = batch * kv_heads * group;
                let wide = c.global.lane_accesses_by_width.get(&16).copied().unwrap_or(0) as usize * 16;
                assert_eq!(wide, splits * out_rows * d * 4 + out_rows * d * 2, "{what}: {:?}", c.global.lane_accesses_by_width);
                continue;
            }
            // One 16-column tile per (sequence, kv head): per 32-key step 8 d / 32 MFMAs for
            // the scores and as many for P V.
            let steps: usize = [ctx, ctx - 37].iter().map(|n| n.div_ceil(32)).sum();
            let want = kv_heads * steps * 8 * d / 32;
            assert_eq!(c.mfma.get("v_mfma_f32_16x16x16_bf16").copied().unwrap_or(0) as usize, want, "{what}: {:?}", c.mfma);
            assert_wide_and_whole(&c, &what);
            assert_eq!(c.lds.bank_conflict_cycles, 0, "{what}: LDS bank conflicts in {} instructions", c.lds.conflicted_instructions);
        }
    }
}

#[test]
fn write_kv_moves_16_bytes_per_access() {
    let _device = exclusive();
    let dev = device();
    let cache = PagedKvCache::new(dev, 1, 8, 16, 2, 128, DType::F16).unwrap();
    let mut seed = 1;
    let k = random(&[20, 2, 128], DType::F16, 1.0, &mut seed).0;
    let slots: Vec<i32> = (0..20).map(|t| (t * 5 % 128) as i32).collect();
    let slots = Tensor::from_slice(dev, &slots, &[20]).unwrap();
    let Some(((), c)) = last_launch(|| attention::write_kv(&cache, 0, &k, &k, &slots).unwrap()) else { return };
    let g = &c.global;
    // Every K and V byte read and written once in 16-byte accesses; the slots are 4-byte loads.
    assert_eq!(g.bytes_written as usize, 2 * 20 * 2 * 128 * 2);
    assert_eq!(g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) as usize * 16, 2 * 2 * 20 * 2 * 128 * 2);
}

#[test]
fn rope_write_kv_moves_16_bytes_per_access() {
    let _device = exclusive();
    let dev = device();
    // SmolLM2's heads (9 query, 3 key/value, head dim 64), 4 tokens, the whole head rotated.
    let (tokens, h, kvh, d) = (4usize, 9usize, 3usize, 64usize);
    let cache = PagedKvCache::new(dev, 1, 8, 16, kvh, d, DType::F16).unwrap();
    let mut seed = 2;
    let qkv = random(&[1, tokens, h + 2 * kvh, d], DType::F16, 1.0, &mut seed).0;
    let table = random(&[64, d / 2], DType::F32, 1.0, &mut seed).0;
    let offsets = Tensor::from_slice(dev, &[7i32], &[1]).unwrap();
    let slots = Tensor::from_slice(dev, &[3i32, 40, 41, 100], &[tokens]).unwrap();
    let rope = attention::RopeKv { cos: &table, sin: &table, offsets: &offsets };
    let Some((_, c)) = last_launch(|| attention::rope_write_kv(&qkv, h, &rope, &cache, 0, &slots).unwrap()) else { return };
    let g = &c.global;
    // Per token: every head read and written once (queries to q, keys and values to the cache),
    // the rotated heads' cos and sin read, all in 16-byte accesses; the 4-byte loads are the
    // token's slot, read by every chunk beside its row (only key/value chunks use it: loading
    // it with the row keeps it off the chain position -> cos/sin -> store), and the position of
    // each rotated chunk.
    let chunks = |heads: usize| tokens * heads * d / 8;
    let wide = 2 * chunks(h + 2 * kvh) + 2 * chunks(h + kvh);
    assert_eq!(g.lane_accesses_by_width.get(&16).copied().unwrap_or(0) as usize, wide, "{:?}", g.lane_accesses_by_width);
    assert_eq!(g.lane_accesses_by_width.get(&4).copied().unwrap_or(0) as usize, chunks(h + 2 * kvh) + chunks(h + kvh));
    assert_eq!(g.bytes_written as usize, tokens * (h + 2 * kvh) * d * 2);
}
