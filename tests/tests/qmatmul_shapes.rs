//! The quantized GEMV under the emulator's own launch shapes (`LaunchShapes::Emulator`: grids
//! sized for its CPU threads, up to 16 tiles of output rows a workgroup) against the GPU's
//! (one workgroup per MI300X compute unit, one tile each for the decode shapes): the same
//! output bits, so the CLI's faster emulator runs compute exactly what a GPU's launches would.
//! Every case also checks that the two launches' grids differ where the tiles outnumber the
//! emulator's workgroups, so it compares two different shapes, not one shape twice. One 16-bit
//! activation row runs the one-row kernel too (`QKernel::GemvOne`: a workgroup per tile up to
//! one per unit of the launch shape, tiles `x, x + grid, ..` each).
//!
//! Cases: every format; f16, bf16 and f32 activations; one or two blocks of 16 rows; ragged N
//! up to 63 tiles; K with and without a partial last chunk; the plain product with a random
//! epilogue (bias, activation, residual, output dtype), the fused RMSNorm, SwiGLU, and the QKV
//! projection with its rotary embedding and KV-cache write.

use ferrocm::emulator::LaunchShapes;
use ferrocm::ops::attention::{self, PagedKvCache, RopeKv};
use ferrocm::ops::gemm::Activation;
use ferrocm::ops::qmatmul::{self, QKernel, QMatmulOptions, RmsNorm};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Device, Tensor};
use ferrocm_tests::attention::rope_tables_on;
use ferrocm_tests::proptest_config;
use ferrocm_tests::quant::random_blocks;
use ferrocm_tests::tensors::{bits16, tensor_on, uniform};
use proptest::prelude::*;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Two emulator devices: the GPU's launch shapes (the default) and the emulator's own.
fn devices() -> &'static (Device, Device) {
    static DEVS: OnceLock<(Device, Device)> = OnceLock::new();
    DEVS.get_or_init(|| {
        let gpu = Device::emulator().expect("the emulator");
        let own = Device::emulator().expect("the emulator");
        own.as_emulator().expect("an emulator device").set_launch_shapes(LaunchShapes::Emulator);
        (gpu, own)
    })
}

/// Held by each case from its first launch to its check of the last launches' grids: the
/// tests of this file share the two devices and run in parallel.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A float tensor's raw bits, widened to 32 (NaNs compared by their bits).
fn bits(t: &Tensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect(),
        _ => bits16(t).into_iter().map(u32::from).collect(),
    }
}

fn random_vals(n: usize, scale: f64, seed: &mut u64) -> Vec<f64> {
    (0..n).map(|_| uniform(seed) * scale).collect()
}

/// The workgroups of `dev`'s last launch.
fn last_grid(dev: &Device) -> u64 {
    dev.as_emulator().unwrap().last_launch().expect("a launch").grid_workgroups
}

/// The GEMV's workgroups along N for `tiles` tiles on `units` compute units (its plan: at most
/// one workgroup per unit, at most 16 tiles each).
fn planned_groups(tiles: usize, units: usize) -> usize {
    tiles.min(units.max(tiles.div_ceil(16))).max(1)
}

/// Asserts that the last launches on the two devices had different grids when the plans say
/// they should (more tiles than the emulator's workgroups) and equal ones otherwise.
fn check_grids(tiles: usize, row_blocks: usize) -> Result<(), TestCaseError> {
    let (gpu, own) = devices();
    let own_units = own.as_emulator().unwrap().shape_units() as usize;
    prop_assert_eq!(own_units, (own.as_emulator().unwrap().threads() * 4).min(304));
    let (g, o) = (last_grid(gpu), last_grid(own));
    prop_assert_eq!(g, (planned_groups(tiles, 304) * row_blocks) as u64);
    prop_assert_eq!(o, (planned_groups(tiles, own_units) * row_blocks) as u64);
    Ok(())
}

#[derive(Clone, Debug)]
struct Case {
    format: QuantFormat,
    m: usize,
    n: usize,
    blocks: usize,
    x_dtype: DType,
    out: DType,
    bias: bool,
    activation: Activation,
    residual: bool,
    /// RMSNorm of x first (with a weight).
    norm: bool,
    swiglu: bool,
    seed: u64,
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    // The general GEMV, and for one 16-bit activation row the one-row kernel too.
    let one = c.m == 1 && matches!(c.x_dtype, DType::F16 | DType::Bf16);
    for kernel in [Some(QKernel::Gemv), one.then_some(QKernel::GemvOne)].into_iter().flatten() {
        check_kernel(c, kernel)?;
    }
    Ok(())
}

fn check_kernel(c: &Case, kernel: QKernel) -> Result<(), TestCaseError> {
    let _serial = serial();
    let (gpu, own) = devices();
    let k = c.blocks * c.format.block_elems();
    let n = if c.swiglu { 16 * c.n.div_ceil(16) } else { c.n };
    let cols = if c.swiglu { n / 2 } else { n };
    let blocks = random_blocks(c.format, n, k, 0.05, c.seed);
    let mut seed = c.seed;
    let x = random_vals(c.m * k, 1.0, &mut seed);
    let bias = random_vals(n, 0.5, &mut seed);
    let res = random_vals(c.m * cols, 0.5, &mut seed);
    let norm_w = random_vals(k, 1.5, &mut seed);
    let mut outs = Vec::new();
    for dev in [gpu, own] {
        let w = QuantTensor::from_blocks(dev, c.format, [n, k], &blocks).unwrap();
        let x = tensor_on(dev, &x, &[c.m, k], c.x_dtype).0;
        let bias = tensor_on(dev, &bias, &[n], DType::F32).0;
        let res = tensor_on(dev, &res, &[c.m, cols], c.out).0;
        let norm_w = tensor_on(dev, &norm_w, &[k], c.x_dtype).0;
        let opts = QMatmulOptions {
            bias: (c.bias && !c.swiglu).then_some(&bias),
            activation: if c.swiglu { Activation::None } else { c.activation },
            residual: (c.residual && !c.swiglu).then_some(&res),
            out_dtype: Some(c.out),
            kernel,
            rms_norm: c.norm.then_some(RmsNorm { weight: Some(&norm_w), eps: 1e-5 }),
            swiglu: c.swiglu,
        };
        let y = qmatmul::qmatmul(&x, &w, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        outs.push(bits(&y));
    }
    prop_assert!(outs[0] == outs[1], "{:?}: outputs differ between the launch shapes ({:?})", kernel, c);
    if kernel == QKernel::GemvOne { check_one_row_grids(n.div_ceil(16)) } else { check_grids(n.div_ceil(16), c.m.div_ceil(16)) }
}

/// Asserts the one-row kernel's grids: a workgroup per tile up to one per unit of the launch
/// shape (the GPU's 304, the emulator's few), each taking tiles `x, x + grid, ..`.
fn check_one_row_grids(tiles: usize) -> Result<(), TestCaseError> {
    let (gpu, own) = devices();
    let own_units = own.as_emulator().unwrap().shape_units() as usize;
    prop_assert_eq!((last_grid(gpu), last_grid(own)), (tiles.min(304) as u64, tiles.min(own_units) as u64), "one-row grids");
    Ok(())
}

fn format() -> impl Strategy<Value = QuantFormat> {
    prop::sample::select(QuantFormat::ALL.to_vec())
}

fn case() -> impl Strategy<Value = Case> {
    (
        format(),
        // One row a third of the time: the one-row kernel's cases.
        prop_oneof![2 => Just(1usize), 3 => 1usize..=16, 1 => 17usize..=20],
        1usize..=1000,
        1usize..=3,
        prop::sample::select(vec![DType::F16, DType::Bf16, DType::F32]),
        prop::sample::select(vec![DType::F16, DType::Bf16, DType::F32]),
        (any::<bool>(), prop::sample::select(vec![Activation::None, Activation::Silu, Activation::GeluTanh]), any::<bool>()),
        prop_oneof![2 => Just((false, false)), 1 => Just((true, false)), 1 => Just((false, true))],
        any::<u64>(),
    )
        .prop_map(|(format, m, n, kb, x_dtype, out, (bias, activation, residual), (norm, swiglu), seed)| {
            // K: whole chunks with a partial one for the 32-weight formats (18 blocks is
            // SmolLM2's 576), one or two super-blocks for the k-quants.
            let blocks = if format.block_elems() == 32 { [3, 8, 18][kb - 1] } else { kb.min(2) };
            // The fused norm takes f16 and bf16 activations (f32 ones are normed first, by
            // another launch, on both devices alike).
            Case { format, m, n, blocks, x_dtype, out, bias, activation, residual, norm, swiglu, seed }
        })
}

proptest! {
    #![proptest_config(proptest_config(32))]
    #[test]
    fn the_emulators_launch_shapes_give_the_gpus_bits(c in case()) {
        check(&c)?;
    }
}

#[test]
fn smollm2_decode_projections() {
    // The decode step's GEMVs: the normed QKV (960 rows) and gate/up with SwiGLU (2 x 1536),
    // o_proj (576) with the residual, the down projection (576 x 1536), the Q8_0 LM head
    // (49152 rows: 16 tiles a workgroup under both shapes).
    let base = Case {
        format: QuantFormat::Q4_1,
        m: 1,
        n: 960,
        blocks: 18,
        x_dtype: DType::F16,
        out: DType::F16,
        bias: false,
        activation: Activation::None,
        residual: false,
        norm: true,
        swiglu: false,
        seed: 7,
    };
    for c in [
        base.clone(),
        Case { n: 3072, swiglu: true, ..base.clone() },
        Case { n: 576, norm: false, residual: true, ..base.clone() },
        Case { n: 576, blocks: 48, norm: false, residual: true, ..base.clone() },
        Case { format: QuantFormat::Q8_0, n: 49152, norm: true, out: DType::F32, ..base.clone() },
    ] {
        check(&c).unwrap();
    }
}

#[test]
fn the_rotary_epilogue_and_cache_write_give_the_gpus_bits() {
    // SmolLM2's QKV (9 query heads over 3, head dim 64, K = 576) for one token and a batch of
    // 3, and 40 query heads over 8 of 128 (6 K-tiles of 16 rows per head: 112 tiles).
    for (heads, kv_heads, d, batch) in [(9, 3, 64, 1), (9, 3, 64, 3), (40, 8, 128, 2)] {
        let _serial = serial();
        let (gpu, own) = devices();
        let format = QuantFormat::Q4_1;
        let (n, k) = ((heads + 2 * kv_heads) * d, 576);
        let blocks = random_blocks(format, n, k, 0.05, 3);
        let mut seed = 5;
        let x = random_vals(batch * k, 1.0, &mut seed);
        let norm_w = random_vals(k, 1.5, &mut seed);
        let mut outs = Vec::new();
        for dev in [gpu, own] {
            let w = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
            let x = tensor_on(dev, &x, &[batch, k], DType::F16).0;
            let norm_w = tensor_on(dev, &norm_w, &[k], DType::F16).0;
            let (cos, sin) = rope_tables_on(dev, 40, d / 2);
            let offsets = Tensor::from_slice(dev, &(0..batch as i32).map(|b| 3 + 11 * b).collect::<Vec<_>>(), &[batch]).unwrap();
            let slots = Tensor::from_slice(dev, &(0..batch as i32).map(|b| 47 - 5 * b).collect::<Vec<_>>(), &[batch]).unwrap();
            let cache = PagedKvCache::new(dev, 1, 4, 16, kv_heads, d, DType::F16).unwrap();
            let rope = RopeKv { cos: &cos, sin: &sin, offsets: &offsets };
            let rms = Some(RmsNorm { weight: Some(&norm_w), eps: 1e-5 });
            let q = attention::qkv_rope_write_kv(&x, &w, rms, heads, &rope, &cache, 0, &slots).unwrap();
            let (kc, vc) = cache.layer(0).unwrap();
            outs.push((bits(&q), bits(kc), bits(vc)));
        }
        assert!(outs[0] == outs[1], "heads {heads}/{kv_heads} d {d} batch {batch}: outputs differ between the launch shapes");
        assert!(outs[0].1.iter().any(|&b| b != 0), "nothing was written to the cache");
        if batch == 1 {
            // One token: the one-row kernel.
            check_one_row_grids(n.div_ceil(16)).unwrap();
        } else {
            check_grids(n.div_ceil(16), 1).unwrap();
        }
    }
}
