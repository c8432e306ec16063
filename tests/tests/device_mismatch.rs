//! Every operand of every op that takes more than one is refused when it lives on another
//! device, with [`Error::DeviceMismatch`] naming it, before anything runs: a foreign address
//! means nothing (or another tensor) on the op's device.
//!
//! Table-driven: each row is an op and the operands it takes besides the first (whose device
//! the op runs on); each operand is swapped in turn for an equal tensor of a second device.

use ferrocm::ops::gemm::{self, GemmOptions};
use ferrocm::ops::rope::{self, RopeOptions, RopeTable};
use ferrocm::ops::{basic, elementwise as ew, gemm_fp8, movement, norm};
use ferrocm::{DType, Device, Error, Fp8E4M3Fnuz, Result, Tensor};
use ferrocm_tests::device;

/// The tensors one row's op needs, all on `dev`.
struct Operands {
    f32_4x8: Tensor,
    f32_8x4: Tensor,
    f32_8: Tensor,
    f32_4: Tensor,
    cond: Tensor,
    ids: Tensor,
    rope_x: Tensor,
    rope_table: Tensor,
    rope_offsets: Tensor,
    fp8_a: Tensor,
    fp8_b: Tensor,
    scale_a: Tensor,
    scale_b: Tensor,
    grouped_ids: Tensor,
    valid_rows: Tensor,
    fp8_a_masked: Tensor,
    scale_a_masked: Tensor,
}

fn operands(dev: &Device) -> Operands {
    let t = |v: Vec<f32>, s: &[usize]| Tensor::from_slice(dev, &v, s).unwrap();
    let fp8 = |n: usize, s: &[usize]| Tensor::from_slice(dev, &vec![Fp8E4M3Fnuz::from_f32(0.5); n], s).unwrap();
    Operands {
        f32_4x8: t(vec![1.0; 32], &[4, 8]),
        f32_8x4: t(vec![1.0; 32], &[8, 4]),
        f32_8: t(vec![1.0; 8], &[8]),
        f32_4: t(vec![1.0; 4], &[4]),
        cond: Tensor::from_slice(dev, &[1i8; 8], &[8]).unwrap(),
        ids: Tensor::from_slice(dev, &[0i32, 3, 1], &[3]).unwrap(),
        rope_x: t(vec![1.0; 2 * 3 * 8], &[2, 3, 8]),
        rope_table: t(vec![0.5; 4 * 4], &[4, 4]),
        rope_offsets: Tensor::from_slice(dev, &[0i32], &[1]).unwrap(),
        fp8_a: fp8(128 * 128, &[128, 128]),
        fp8_b: fp8(128 * 128, &[1, 128, 128]),
        scale_a: t(vec![1.0; 128], &[128, 1]),
        scale_b: t(vec![1.0; 1], &[1, 1, 1]),
        grouped_ids: Tensor::from_slice(dev, &vec![0i32; 128], &[128]).unwrap(),
        valid_rows: Tensor::from_slice(dev, &[128i32], &[1]).unwrap(),
        fp8_a_masked: fp8(128 * 128, &[1, 128, 128]),
        scale_a_masked: t(vec![1.0; 128], &[1, 128, 1]),
    }
}

/// One op: its name, the operands it can be handed from elsewhere, and a call that takes the
/// operand at position `i` from `foreign` (every other from `local`).
struct Row {
    op: &'static str,
    operands: &'static [&'static str],
    call: fn(l: &Operands, f: &Operands, foreign: usize) -> Result<()>,
}

/// `f` when `pos == foreign`, else `l`.
fn pick<'a>(pos: usize, foreign: usize, l: &'a Tensor, f: &'a Tensor) -> &'a Tensor {
    if pos == foreign { f } else { l }
}

const ROWS: &[Row] = &[
    Row { op: "add", operands: &["b"], call: |l, f, i| ew::add(&l.f32_8, pick(0, i, &l.f32_8, &f.f32_8)).map(drop) },
    Row {
        op: "where",
        operands: &["a", "b"],
        call: |l, f, i| ew::where_(&l.cond, pick(0, i, &l.f32_8, &f.f32_8), pick(1, i, &l.f32_8, &f.f32_8)).map(drop),
    },
    Row {
        op: "gemm",
        operands: &["B", "bias", "residual"],
        call: |l, f, i| {
            let (res_l, res_f) = (l.f32_4x8.narrow(1, 0, 4).unwrap(), f.f32_4x8.narrow(1, 0, 4).unwrap());
            let opts = GemmOptions {
                bias: Some(pick(1, i, &l.f32_4, &f.f32_4)),
                residual: Some(pick(2, i, &res_l, &res_f)),
                ..Default::default()
            };
            gemm::gemm(&l.f32_4x8, pick(0, i, &l.f32_8x4, &f.f32_8x4), &opts).map(drop)
        },
    },
    Row {
        op: "gemm_into",
        operands: &["B", "C"],
        call: |l, f, i| {
            let c_l = Tensor::zeros(l.f32_4.device(), &[4, 4], DType::F32).unwrap();
            let c_f = Tensor::zeros(f.f32_4.device(), &[4, 4], DType::F32).unwrap();
            gemm::gemm_into(&l.f32_4x8, pick(0, i, &l.f32_8x4, &f.f32_8x4), pick(1, i, &c_l, &c_f), &GemmOptions::default())
        },
    },
    Row {
        op: "gemm_fp8_blockscaled",
        operands: &["a_scale", "B", "b_scale"],
        call: |l, f, i| {
            let b = |t: &Tensor| t.squeeze(0).unwrap();
            let sb = |t: &Tensor| t.squeeze(0).unwrap();
            gemm_fp8::gemm_fp8_blockscaled(
                &l.fp8_a,
                pick(0, i, &l.scale_a, &f.scale_a),
                &b(pick(1, i, &l.fp8_b, &f.fp8_b)),
                &sb(pick(2, i, &l.scale_b, &f.scale_b)),
            )
            .map(drop)
        },
    },
    Row {
        op: "gemm_fp8_grouped_contiguous",
        operands: &["a_scale", "B", "b_scale", "expert_ids"],
        call: |l, f, i| {
            gemm_fp8::gemm_fp8_grouped_contiguous(
                &l.fp8_a,
                pick(0, i, &l.scale_a, &f.scale_a),
                pick(1, i, &l.fp8_b, &f.fp8_b),
                pick(2, i, &l.scale_b, &f.scale_b),
                pick(3, i, &l.grouped_ids, &f.grouped_ids),
            )
            .map(drop)
        },
    },
    Row {
        op: "gemm_fp8_grouped_masked",
        operands: &["a_scale", "B", "b_scale", "valid_rows"],
        call: |l, f, i| {
            gemm_fp8::gemm_fp8_grouped_masked(
                &l.fp8_a_masked,
                pick(0, i, &l.scale_a_masked, &f.scale_a_masked),
                pick(1, i, &l.fp8_b, &f.fp8_b),
                pick(2, i, &l.scale_b, &f.scale_b),
                pick(3, i, &l.valid_rows, &f.valid_rows),
            )
            .map(drop)
        },
    },
    Row {
        op: "add_layer_norm",
        operands: &["residual", "weight", "bias"],
        call: |l, f, i| {
            norm::add_layer_norm(
                &l.f32_4x8,
                pick(0, i, &l.f32_4x8, &f.f32_4x8),
                Some(pick(1, i, &l.f32_8, &f.f32_8)),
                Some(pick(2, i, &l.f32_8, &f.f32_8)),
                1e-5,
            )
            .map(drop)
        },
    },
    Row {
        op: "add_rms_norm",
        operands: &["residual", "weight"],
        call: |l, f, i| {
            norm::add_rms_norm(&l.f32_4x8, pick(0, i, &l.f32_4x8, &f.f32_4x8), Some(pick(1, i, &l.f32_8, &f.f32_8)), 1e-5).map(drop)
        },
    },
    Row {
        op: "rope",
        operands: &["cos table", "sin table", "offsets"],
        call: |l, f, i| {
            let opts = RopeOptions {
                table: RopeTable::Cache { cos: pick(0, i, &l.rope_table, &f.rope_table), sin: pick(1, i, &l.rope_table, &f.rope_table) },
                offsets: Some(pick(2, i, &l.rope_offsets, &f.rope_offsets)),
                ..Default::default()
            };
            rope::rope(&l.rope_x.unsqueeze(0).unwrap(), &opts).map(drop)
        },
    },
    Row {
        op: "index_select",
        operands: &["indices"],
        call: |l, f, i| movement::index_select(&l.f32_4x8, 1, pick(0, i, &l.ids, &f.ids)).map(drop),
    },
    Row { op: "embedding", operands: &["indices"], call: |l, f, i| movement::embedding(&l.f32_4x8, pick(0, i, &l.ids, &f.ids)).map(drop) },
    Row {
        op: "concat",
        operands: &["input"],
        call: |l, f, i| movement::concat(&[&l.f32_4x8, pick(0, i, &l.f32_4x8, &f.f32_4x8)], 0).map(drop),
    },
];

#[test]
fn every_foreign_operand_of_every_op_is_refused_by_name() {
    let home = device();
    let other = Device::new().expect("a second device");
    assert!(!home.same_device(&other));
    let (l, f) = (operands(home), operands(&other));
    let mut checked = 0;
    for row in ROWS {
        for (i, &name) in row.operands.iter().enumerate() {
            match (row.call)(&l, &f, i) {
                Err(Error::DeviceMismatch { operand, .. }) => {
                    assert_eq!(operand, name, "{}: operand {i} from another device named {operand:?}", row.op);
                    checked += 1;
                }
                other => panic!("{}: operand {name} from another device gave {other:?}", row.op),
            }
        }
        // All local: the same call works (so the refusal above was about the device only).
        if let Err(e) = (row.call)(&l, &f, usize::MAX) {
            panic!("{}: all-local call failed: {e}", row.op);
        }
    }
    assert!(checked >= 24, "{checked} operands checked");
}

#[test]
fn buffer_ops_refuse_foreign_buffers() {
    let home = device();
    let other = Device::new().unwrap();
    let x = home.from_slice(&[1.0f32; 16]).unwrap();
    let mut y = home.from_slice(&[2.0f32; 16]).unwrap();
    let x_far = other.from_slice(&[1.0f32; 16]).unwrap();
    let mut y_far = other.from_slice(&[2.0f32; 16]).unwrap();
    assert!(matches!(basic::saxpy(2.0, &x_far, &mut y), Err(Error::DeviceMismatch { operand: "x", .. })));
    assert!(matches!(basic::saxpy(2.0, &x, &mut y_far), Err(Error::DeviceMismatch { operand: "x", .. })));
    assert_eq!(y.to_vec().unwrap(), vec![2.0; 16], "a refused op must not have written anything");
    assert!(matches!(y.copy_from(&x_far), Err(Error::DeviceMismatch { .. })));
    let a = home.from_slice(&[half::f16::ONE; 32 * 8]).unwrap();
    let b_far = other.from_slice(&[half::f16::ONE; 32 * 8]).unwrap();
    assert!(matches!(basic::mfma_tile_32x32_f16(&a, &b_far, 8), Err(Error::DeviceMismatch { operand: "B", .. })));
    let mut w = home.from_slice(&[0u32; 8]).unwrap();
    let w_far = other.from_slice(&[0u32; 8]).unwrap();
    assert!(matches!(basic::copy_u32(&w_far, &mut w), Err(Error::DeviceMismatch { .. })));
}

/// The case the runtime issue found: `gemm_into` with a C of another device used to return Ok
/// and write through a foreign address into whatever lived there on the op's device.
#[test]
fn gemm_into_a_foreign_c_writes_nothing_anywhere() {
    let home = device();
    let other = Device::new().unwrap();
    let a = Tensor::from_slice(home, &[1.0f32; 64], &[8, 8]).unwrap();
    let canary = Tensor::from_slice(home, &[7.0f32; 64], &[8, 8]).unwrap();
    let c_far = Tensor::from_slice(&other, &[3.0f32; 64], &[8, 8]).unwrap();
    let err = gemm::gemm_into(&a, &a, &c_far, &GemmOptions::default()).unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { operand: "C", .. }), "{err}");
    assert_eq!(canary.to_vec::<f32>().unwrap(), vec![7.0; 64]);
    assert_eq!(c_far.to_vec::<f32>().unwrap(), vec![3.0; 64]);
}
