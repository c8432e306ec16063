//! AITER's assembly GEMMs on the emulator against f64 CPU references: every bf16 tile size with
//! M tails and split-K atomics, and the int8 GEMMs with their scales, bias and shuffled B.

#[path = "aiter/common.rs"]
mod common;

use common::*;
use ferrocm_emu::aiter::gemm::{BF16_TILES, Bf16Tile, I8_TILES, bf16_launch, i8_launch, i8_shuffle_b};

/// A [M,K] x B[N,K]^T in f64.
fn matmul_nt(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|x| a[i * k + x] * b[j * k + x]).sum();
        }
    }
    c
}

fn bf16_case(tile: Bf16Tile, m: u32, n: u32, k: u32, split: u32, seed: u64) {
    let Some(wheel) = wheel() else { return };
    let gpu = Gpu::new(&wheel, tile.file);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let mut rng = Rng(seed);
    let (ab, av) = bf16_normal(&mut rng, mu * ku, 1.0);
    let (bb, bv) = bf16_normal(&mut rng, nu * ku, 1.0);
    let (a, b) = (gpu.upload_u16(&ab), gpu.upload_u16(&bb));
    // Zeroed, as the host code does before a split-K launch (the slices add into D).
    let d = gpu.zeros(4 * mu * nu);
    let l = bf16_launch(tile, m, n, k, split, d, a, b).unwrap();
    gpu.run(&l);
    let got: Vec<f64> = gpu.f32s(d, mu * nu).into_iter().map(|x| x as f64).collect();
    // Exact products, f32 accumulation: sqrt(K) * 2^-24 relative to the sum of |products|.
    let tol = 4.0 * (k as f64).sqrt() * (k as f64) * 2f64.powi(-24) * 4.0;
    assert_close(&format!("{} M={m} N={n} K={k} split={split}", tile.name), &got, &matmul_nt(&av, &bv, mu, nu, ku), tol);
}

#[test]
fn bf16_every_tile_smallest_case() {
    for (i, t) in BF16_TILES.iter().enumerate() {
        bf16_case(*t, t.m, t.n, 64, 1, 10 + i as u64);
    }
}

#[test]
fn bf16_m_tails() {
    // M ending inside a tile, for each tile (17 rows past the last full one or fewer than one).
    for (i, t) in BF16_TILES.iter().enumerate() {
        bf16_case(*t, t.m + 17, 128, 192, 1, 20 + i as u64);
    }
}

#[test]
fn bf16_split_k_atomics() {
    bf16_case(BF16_TILES[2], 64, 128, 512, 4, 30);
    bf16_case(BF16_TILES[0], 40, 64, 640, 10, 31);
}

#[test]
fn bf16_larger_case() {
    // A row of AITER's tuned table, scaled down in K: 150 x 256 on the 48x64 kernel, split 5.
    bf16_case(BF16_TILES[1], 150, 256, 1280, 5, 40);
}

/// int8 GEMM: C = (A B^T) * sa[m] * sb[n] + bias[n], bf16 out.
fn i8_case(tile: usize, m: u32, n: u32, k: u32, seed: u64) {
    let Some(wheel) = wheel() else { return };
    let t = I8_TILES[tile];
    let gpu = Gpu::new(&wheel, t.file);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let mut rng = Rng(seed);
    let a: Vec<i8> = (0..mu * ku).map(|_| (rng.below(255) as i32 - 127) as i8).collect();
    let b: Vec<i8> = (0..nu * ku).map(|_| (rng.below(255) as i32 - 127) as i8).collect();
    let sa: Vec<f32> = (0..mu).map(|_| (0.5 + rng.uniform()) as f32 / 1024.0).collect();
    let sb: Vec<f32> = (0..nu).map(|_| (0.5 + rng.uniform()) as f32 / 1024.0).collect();
    let bias: Vec<f32> = (0..nu).map(|_| rng.normal() as f32).collect();
    let bytes = |v: &[i8]| v.iter().map(|&x| x as u8).collect::<Vec<u8>>();
    let (aa, ba) = (gpu.upload(&bytes(&a)), gpu.upload(&bytes(&i8_shuffle_b(&b, nu, ku))));
    let (saa, sba, biasa) = (gpu.upload_f32(&sa), gpu.upload_f32(&sb), gpu.upload_f32(&bias));
    let c = gpu.zeros(2 * mu * nu);
    gpu.run(&i8_launch(t, m, n, k, c, aa, ba, saa, sba, biasa).unwrap());
    let af: Vec<f64> = a.iter().map(|&x| x as f64).collect();
    let bf: Vec<f64> = b.iter().map(|&x| x as f64).collect();
    let prod = matmul_nt(&af, &bf, mu, nu, ku);
    let want: Vec<f64> = (0..mu * nu).map(|i| prod[i] * sa[i / nu] as f64 * sb[i % nu] as f64 + bias[i % nu] as f64).collect();
    let got: Vec<f64> = gpu.u16s(c, mu * nu).into_iter().map(from_bf16).collect();
    let scale = want.iter().fold(1.0f64, |s, x| s.max(x.abs()));
    // Exact integer sums; f32 scaling; one bf16 rounding of the result.
    assert_close(&format!("{} M={m} N={n} K={k}", t.name), &got, &want, scale * 2f64.powi(-8));
}

#[test]
fn i8_every_tile_smallest_case() {
    i8_case(0, 128, 128, 128, 50);
    i8_case(1, 192, 128, 128, 51);
}

#[test]
fn i8_m_tail_and_larger_case() {
    i8_case(0, 200, 256, 512, 52);
    i8_case(1, 100, 128, 256, 53);
}
