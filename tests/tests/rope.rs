//! Rotary position embedding on the device against the f64 reference
//! (`ferrocm::reference::rope`).
//!
//! Tolerances per element of a rotated pair `(x, y)`, `u = 2^-24`:
//! - computed angles (theta or a frequency list): `(|x| + |y|) * 4e-7`, then the output
//!   rounding (half an ulp; half the subnormal spacing below the normal range). The reference
//!   forms the angle `pos * f` in f64; the device's extended-precision angle is within ~1e-9
//!   rad for positions below 2^20, and its polynomial sin/cos within ~1.5e-7, so `4e-7` covers
//!   both plus the f32 products;
//! - a given cos/sin table: the reference uses the table's f32 values, so only the f32
//!   arithmetic remains: `(|x| + |y|) * 4u`, then the output rounding;
//! - elements past `rotary_dim` are copied: exact.
//!
//! Positions go up to about 10^6 (offsets per sequence), so a plain f32 angle (off by up to
//! 0.06 rad there) would fail.

use ferrocm::ops::rope::{self, RopeLayout, RopeOptions, RopeTable, theta_frequencies};
use ferrocm::reference::rope::{RopeShape, angle};
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::tensors::{FLOAT_DTYPES, read, rounding, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const U: f64 = 1.0 / (1u64 << 24) as f64;

#[derive(Clone, Copy, Debug)]
enum Source {
    Theta(f64),
    Custom,
    Cache,
}

#[derive(Clone, Debug)]
struct Case {
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
    rot: usize,
    layout: RopeLayout,
    source: Source,
    max_offset: i32,
    four_d: bool,
    dtype: DType,
    seed: u64,
}

fn run(c: &Case) -> Result<(), TestCaseError> {
    let mut seed = c.seed;
    let s = RopeShape { batch: c.batch, seq: c.seq, heads: c.heads, head_dim: c.head_dim, rotary_dim: c.rot };
    let n = c.batch * c.seq * c.heads * c.head_dim;
    let shape: Vec<usize> = if c.four_d { vec![c.batch, c.seq, c.heads, c.head_dim] } else { vec![c.seq, c.heads, c.head_dim] };
    let (x, xv) = tensor(&(0..n).map(|_| uniform(&mut seed) * 2.0).collect::<Vec<_>>(), &shape, c.dtype);
    let offsets: Vec<i32> = (0..c.batch).map(|_| ((uniform(&mut seed) + 1.0) / 2.0 * c.max_offset as f64) as i32).collect();
    let dev = device();
    let off_t = Tensor::from_slice(dev, &offsets, &[c.batch]).unwrap();
    let half = c.rot / 2;
    let custom: Vec<f64> = (0..half).map(|i| 0.9f64.powi(i as i32) * 0.7).collect();
    let freqs = match c.source {
        Source::Theta(t) => theta_frequencies(t, c.rot),
        Source::Custom | Source::Cache => custom.clone(),
    };
    // A table covering every position used (f32 values, as a model would store them); only
    // built for the table source (10^6 positions would take a while).
    let positions = if matches!(c.source, Source::Cache) { c.max_offset as usize + c.seq + 1 } else { 1 };
    let table: Vec<(f32, f32)> = (0..positions * half)
        .map(|k| {
            let (cs, sn) = angle((k / half) as i64, freqs[k % half]);
            (cs as f32, sn as f32)
        })
        .collect();
    let cos_t = Tensor::from_slice(dev, &table.iter().map(|t| t.0).collect::<Vec<_>>(), &[positions, half]).unwrap();
    let sin_t = Tensor::from_slice(dev, &table.iter().map(|t| t.1).collect::<Vec<_>>(), &[positions, half]).unwrap();
    let src = match c.source {
        Source::Theta(t) => RopeTable::Theta(t),
        Source::Custom => RopeTable::Frequencies(&custom),
        Source::Cache => RopeTable::Cache { cos: &cos_t, sin: &sin_t },
    };
    let opts = RopeOptions { layout: c.layout, table: src, rotary_dim: Some(c.rot), offsets: c.four_d.then_some(&off_t) };
    let y = rope::rope(&x, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(y.shape(), &shape[..]);
    let offs = c.four_d.then_some(&offsets[..]);
    let cache = matches!(c.source, Source::Cache);
    let want = reference::rope::rope(&xv, s, c.layout, offs, |pos, i| {
        if cache {
            let t = table[pos as usize * half + i];
            (t.0 as f64, t.1 as f64)
        } else {
            angle(pos, freqs[i])
        }
    });
    let got = read(&y);
    let rel = if cache { 4.0 * U } else { 4e-7 };
    for v in 0..n / c.head_dim {
        let base = v * c.head_dim;
        for j in 0..c.head_dim {
            let k = base + j;
            let tol = if j < c.rot {
                let partner = match (c.layout, j < half) {
                    (RopeLayout::HalfSplit, true) => j + half,
                    (RopeLayout::HalfSplit, false) => j - half,
                    (RopeLayout::Interleaved, _) => j ^ 1,
                };
                (xv[k].abs() + xv[base + partner].abs()) * rel + rounding(c.dtype, want[k])
            } else {
                0.0
            };
            prop_assert!((got[k] - want[k]).abs() <= tol, "[{}][{}] = {}, want {} (tol {:e}) {:?}", v, j, got[k], want[k], tol, c);
        }
    }
    Ok(())
}

fn case() -> impl Strategy<Value = Case> {
    let dims = prop::sample::select(vec![2usize, 4, 6, 8, 16, 18, 34, 64, 80, 96, 128, 256]);
    (
        (1usize..=3, 1usize..=12, 1usize..=6, dims),
        any::<bool>(),
        prop_oneof![Just(Source::Theta(10_000.0)), Just(Source::Theta(500_000.0)), Just(Source::Custom), Just(Source::Cache)],
        prop::sample::select(vec![0i32, 100, 1_000_000]),
        any::<bool>(),
        prop::sample::select(FLOAT_DTYPES.to_vec()),
        0usize..3,
        any::<u64>(),
    )
        .prop_map(|((batch, seq, heads, head_dim), interleaved, source, max_offset, four_d, dtype, partial, seed)| {
            // Full rotation, or a smaller even rotary_dim (GPT-NeoX style partial rotary).
            let rot = match partial {
                0 | 1 => head_dim,
                _ => (head_dim / 2).max(2) & !1,
            };
            let layout = if interleaved { RopeLayout::Interleaved } else { RopeLayout::HalfSplit };
            // The table would be huge for 10^6 positions: tables use smaller offsets.
            let max_offset = if matches!(source, Source::Cache) { max_offset.min(1000) } else { max_offset };
            Case { batch: if four_d { batch } else { 1 }, seq, heads, head_dim, rot, layout, source, max_offset, four_d, dtype, seed }
        })
}

proptest! {
    #![proptest_config(proptest_config(48))]

    #[test]
    fn rope_matches_the_reference(c in case()) {
        run(&c)?;
    }
}

#[test]
fn many_heads_reuse_angles_across_rows() {
    for dtype in FLOAT_DTYPES {
        for layout in [RopeLayout::HalfSplit, RopeLayout::Interleaved] {
            let c = Case {
                batch: 2,
                seq: 64,
                heads: 32,
                head_dim: 128,
                rot: 128,
                layout,
                source: Source::Theta(10_000.0),
                max_offset: 70_000,
                four_d: true,
                dtype,
                seed: 5,
            };
            run(&c).unwrap();
        }
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1.0f32; 2 * 3 * 8], &[2, 3, 8]).unwrap();
    let odd = RopeOptions { rotary_dim: Some(5), ..Default::default() };
    assert!(matches!(rope::rope(&x, &odd), Err(Error::InvalidArgument { .. })));
    let big = RopeOptions { rotary_dim: Some(10), ..Default::default() };
    assert!(matches!(rope::rope(&x, &big), Err(Error::InvalidArgument { .. })));
    let bad_theta = RopeOptions { table: RopeTable::Theta(-1.0), ..Default::default() };
    assert!(matches!(rope::rope(&x, &bad_theta), Err(Error::InvalidArgument { .. })));
    let few = [1.0; 3];
    let freqs = RopeOptions { table: RopeTable::Frequencies(&few), ..Default::default() };
    assert!(matches!(rope::rope(&x, &freqs), Err(Error::Shape { .. })));
    let off = Tensor::from_slice(dev, &[0u32, 1], &[2]).unwrap();
    let o = RopeOptions { offsets: Some(&off), ..Default::default() };
    assert!(matches!(rope::rope(&x, &o), Err(Error::DTypeMismatch { .. })));
    let off = Tensor::from_slice(dev, &[0i32, 1], &[2]).unwrap();
    let o = RopeOptions { offsets: Some(&off), ..Default::default() }; // x is 3-d: batch 1
    assert!(matches!(rope::rope(&x, &o), Err(Error::Shape { .. })));
    let cos = Tensor::from_slice(dev, &[1.0f32; 4 * 3], &[4, 3]).unwrap();
    let c = RopeOptions { table: RopeTable::Cache { cos: &cos, sin: &cos }, ..Default::default() };
    assert!(matches!(rope::rope(&x, &c), Err(Error::Shape { .. })));
    let x2 = Tensor::from_slice(dev, &[1.0f32; 8], &[8]).unwrap();
    assert!(matches!(rope::rope(&x2, &RopeOptions::default()), Err(Error::Shape { .. })));
    let xi = Tensor::from_slice(dev, &[1i32; 8], &[1, 1, 8]).unwrap();
    assert!(matches!(rope::rope(&xi, &RopeOptions::default()), Err(Error::DTypeMismatch { .. })));
    let e = Tensor::zeros(dev, &[0, 2, 8], DType::Bf16).unwrap();
    assert_eq!(rope::rope(&e, &RopeOptions::default()).unwrap().shape(), &[0, 2, 8]);
}

#[test]
fn positions_outside_the_table_give_nan() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1.0f32; 4 * 4], &[1, 4, 1, 4]).unwrap();
    let cos = Tensor::from_slice(dev, &[1.0f32; 2 * 2], &[2, 2]).unwrap();
    let sin = Tensor::from_slice(dev, &[0.0f32; 2 * 2], &[2, 2]).unwrap();
    let y = rope::rope(&x, &RopeOptions { table: RopeTable::Cache { cos: &cos, sin: &sin }, ..Default::default() }).unwrap();
    let y = y.to_vec::<f32>().unwrap();
    assert!(y[..8].iter().all(|&v| v == 1.0), "{y:?}");
    assert!(y[8..].iter().all(|v| v.is_nan()), "{y:?}");
}
