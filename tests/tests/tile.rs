//! The tile layer end to end on the int8 matrix core (the smoke kernel `mfma_tile_32x32_i8`):
//! global tiles, swizzled LDS stages, the K-loop pipeline with a zero-filled last K-tile and either
//! producer (loads straight into LDS when K is a multiple of 4, through registers otherwise), a
//! 32x32 register tile and its accumulator layout, against an exact integer reference, with no
//! LDS bank conflicts.

use ferrocm::LaunchConfig;
use ferrocm::abi::smoke::{MFMA_TILE_32X32_I8, MfmaTileI8Args, TILE_I8, TILE_I8_LDS_BYTES};
use ferrocm_tests::counters::{exclusive, measure};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

/// `C = A * B^T` on the device, with A and B `32 x k` row-major.
fn run(a: &[i8], b: &[i8], k: usize) -> Vec<i32> {
    let dev = device();
    let n = TILE_I8 as usize;
    let (da, db) = (dev.from_slice(a).unwrap(), dev.from_slice(b).unwrap());
    let c = dev.alloc::<i32>(n * n).unwrap();
    let args = MfmaTileI8Args { a: da.as_ptr(), b: db.as_ptr(), c: c.as_ptr(), k: k as u32 };
    let cfg = LaunchConfig::linear(1, 64).with_lds(TILE_I8_LDS_BYTES);
    // SAFETY: A and B hold 32 x k bytes, C 32 x 32 i32.
    unsafe { dev.launch(MFMA_TILE_32X32_I8, cfg, &args).unwrap() };
    c.to_vec().unwrap()
}

/// The exact product, wrapped to i32 like the hardware's accumulation.
fn reference(a: &[i8], b: &[i8], k: usize) -> Vec<i32> {
    let n = TILE_I8 as usize;
    let mut c = vec![0i32; n * n];
    for i in 0..n {
        for j in 0..n {
            let s: i64 = (0..k).map(|p| a[i * k + p] as i64 * b[j * k + p] as i64).sum();
            c[i * n + j] = s as i32;
        }
    }
    c
}

fn bytes(n: usize, seed: &mut u64) -> Vec<i8> {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (*seed >> 56) as i8
        })
        .collect()
}

proptest! {
    #![proptest_config(proptest_config(8))]

    /// Any K: several full K-tiles (64 bytes), a partial one, or less than one.
    #[test]
    fn int8_tile_product_is_exact(k in 1usize..400, seed in any::<u64>()) {
        // The counter test below reads the device's totals: no launch of ours may land in them.
        let _device = exclusive();
        let mut seed = seed;
        let n = TILE_I8 as usize;
        let (a, b) = (bytes(n * k, &mut seed), bytes(n * k, &mut seed));
        prop_assert_eq!(run(&a, &b, k), reference(&a, &b, k));
    }
}

#[test]
fn int8_extremes_and_no_bank_conflicts() {
    let _device = exclusive();
    let (n, k) = (TILE_I8 as usize, 256);
    // -128 * -128 summed 256 times is 2^22: exact; a row of -128 against 127 gives -8323072.
    let a: Vec<i8> = (0..n * k).map(|i| if i / k % 2 == 0 { -128 } else { 127 }).collect();
    let b: Vec<i8> = (0..n * k).map(|i| if i / k % 3 == 0 { -128 } else { 127 }).collect();
    let Some((got, c)) = measure(|| run(&a, &b, k)) else {
        assert_eq!(run(&a, &b, k), reference(&a, &b, k));
        return;
    };
    assert_eq!(got, reference(&a, &b, k));
    assert_eq!(c.mfma.get("v_mfma_i32_32x32x16_i8").copied(), Some((k / 16) as u64), "{:?}", c.mfma);
    assert_eq!(c.lds.bank_conflict_cycles, 0, "LDS bank conflicts");
    // K = 256 is a multiple of 4: both operands went straight into LDS, 4 bytes per lane, once
    // each; C is stored one i32 per lane.
    let dwords = c.global.lane_accesses_by_width.get(&4).copied().unwrap_or(0);
    assert_eq!(dwords as usize, 2 * n * k / 4 + n * n, "{:?}", c.global.lane_accesses_by_width);
}

#[test]
fn both_producers_at_the_edges() {
    let _device = exclusive();
    let n = TILE_I8 as usize;
    let mut seed = 3;
    // Direct: whole K-tiles, a partial one (K % 64 != 0), less than one. Staged: K % 4 != 0.
    for k in [64, 128, 196, 4, 60, 1, 63, 65, 333] {
        let (a, b) = (bytes(n * k, &mut seed), bytes(n * k, &mut seed));
        assert_eq!(run(&a, &b, k), reference(&a, &b, k), "k = {k}");
    }
}
