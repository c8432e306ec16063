//! Reductions over one axis or over everything: sum, mean, max, min, argmax, argmin.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, ops::reduce};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3])?;
//! assert_eq!(reduce::sum(&x, Some(1))?.to_vec::<f32>()?, vec![9.0, 12.0]);
//! assert_eq!(reduce::max(&x, Some(0))?.to_vec::<f32>()?, vec![4.0, 5.0, 6.0]);
//! assert_eq!(reduce::argmax(&x, None)?.to_vec::<i32>()?, vec![5]);
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Semantics (shared with [`reference::reduce`](crate::reference::reduce)):
//! - f32, f16 and bf16 inputs; arithmetic and accumulation in f32; the result is rounded once
//!   to the output dtype (the input dtype unless [`ReduceOptions::out_dtype`] says otherwise).
//! - NaN: sum and mean follow IEEE arithmetic; max and min return NaN when any element is NaN
//!   (numpy's `max`, IEEE 754-2019 `maximum`); argmax and argmin return the index of the first
//!   NaN when there is one (numpy).
//! - Ties: argmax and argmin return the first index of the extreme value (-0.0 and +0.0 tie).
//! - Empty reductions: sum gives 0, mean NaN; max, min, argmax and argmin are errors.
//! - Indices are i32, along the reduced axis (for `axis: None`, into the row-major flattening).
//!
//! How it runs (see `ferrocm_device::abi::reduce`): the input is viewed as `[outer][len][inner]`.
//! A contiguous axis (`inner == 1`, or everything) goes to `reduce_rows`: a power-of-two group
//! of lanes per row reading 16-byte chunks; a strided axis to `reduce_cols`: lanes along the
//! contiguous `inner`, rows combined through LDS. When that gives too few workgroups to fill
//! the GPU, the reduced length is split over workgroups writing f32 partials, and
//! `reduce_partials` combines them (deterministically: no atomics). [`plan`] shows the choice.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor, numel_checked, u32_of};
use ferrocm_device::abi::reduce::{
    self as abi, REDUCE_BLOCK, REDUCE_COLS_LDS_BYTES, REDUCE_ROWS_LDS_BYTES, ReduceColsArgs, ReducePartialsArgs, ReduceRowsArgs, flags, op,
    out_type,
};
use ferrocm_device::abi::{DevPtr, Kernel};

/// Workgroups a reduction aims for before it splits the reduced length: 4 per compute unit of
/// an MI300X (304 CUs), enough that every CU has several waves' loads in flight.
pub const TARGET_WORKGROUPS: usize = 4 * 304;

/// 16-byte chunks (row kernel) or rows (column kernel) each lane aims to reduce; below this the
/// reduction spreads over fewer lanes rather than idling them.
const UNITS_PER_LANE: usize = 8;

/// A reduction operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Arithmetic mean.
    Mean,
    /// Maximum (NaN if any element is NaN).
    Max,
    /// Minimum (NaN if any element is NaN).
    Min,
    /// Index of the first maximum (of the first NaN, if any).
    ArgMax,
    /// Index of the first minimum (of the first NaN, if any).
    ArgMin,
}

impl ReduceOp {
    fn code(self) -> u32 {
        match self {
            ReduceOp::Sum => op::SUM,
            ReduceOp::Mean => op::MEAN,
            ReduceOp::Max => op::MAX,
            ReduceOp::Min => op::MIN,
            ReduceOp::ArgMax => op::ARGMAX,
            ReduceOp::ArgMin => op::ARGMIN,
        }
    }

    /// True for argmax and argmin (i32 outputs).
    pub fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }

    fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
        }
    }
}

/// Options of [`reduce`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReduceOptions {
    /// Keep the reduced axis (axes, for `axis: None`) as size 1.
    pub keepdim: bool,
    /// Output dtype: f32, f16 or bf16 for sum/mean/max/min (default: the input's), i32 for
    /// argmax/argmin (the only choice).
    pub out_dtype: Option<DType>,
}

/// Which kernel a reduction runs and how it spreads (returned by [`plan`]; for tests, benches
/// and tuning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReducePlan {
    /// Size of the kept dimensions before the axis.
    pub outer: usize,
    /// The reduced length.
    pub len: usize,
    /// Size of the kept dimensions after the axis (1: the row kernel).
    pub inner: usize,
    /// 16-byte accesses (else element by element).
    pub vector: bool,
    /// Row kernel: lanes per row. Column kernel: column units per tile.
    pub lanes: usize,
    /// Workgroups (partials) each reduced run is split over (1: no partials pass).
    pub splits: usize,
    /// Elements of the reduced length per split.
    pub seg_len: usize,
}

impl ReducePlan {
    /// The longest chain of sequential f32 additions any output goes through (each lane's own
    /// elements, then the combining tree), for error bounds: sums are exact to within
    /// `chain * 2^-24 * sum |x|`.
    pub fn max_chain(&self) -> usize {
        let per_lane = if self.inner == 1 {
            let v = if self.vector { 8 } else { 1 };
            self.seg_len.div_ceil(v).div_ceil(self.lanes) * v
        } else {
            self.seg_len.div_ceil(REDUCE_BLOCK as usize / self.lanes)
        };
        per_lane + 2 * (REDUCE_BLOCK as usize).ilog2() as usize + self.splits
    }
}

/// `[outer][len][inner]` of `shape` reduced over `axis` (everything for `None`, `axis` in
/// range). Checked: [`plan`] takes any shape, and a wrapped product (`[2^32, 2^32]` is 0 mod
/// 2^64) made `sum` return 0 and `mean` NaN.
fn canonical(shape: &[usize], axis: Option<usize>) -> Result<(usize, usize, usize)> {
    numel_checked(shape)?;
    // Every product of some of the dimensions fits now (zeros counted as 1 above).
    Ok(match axis {
        None => (1, shape.iter().product(), 1),
        Some(a) => (shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product()),
    })
}

/// The plan [`reduce`] uses for a contiguous input of `shape` and `dtype` at `base_addr`
/// reduced over `axis`, writing outputs of `out_bytes` bytes each.
///
/// # Errors
/// [`Error::InvalidArgument`] for an axis out of range or `out_bytes` not a power of two up
/// to 16; [`Error::Shape`] for a shape whose size overflows `usize`. An empty reduction gets a
/// plan of one lane and one split (nothing runs for it).
pub fn plan(shape: &[usize], dtype: DType, axis: Option<usize>, base_addr: u64, out_bytes: usize) -> Result<ReducePlan> {
    if let Some(a) = axis {
        if a >= shape.len() {
            return Err(Error::InvalidArgument { op: "reduce", message: format!("axis {a} out of range for rank {}", shape.len()) });
        }
    }
    let (outer, len, inner) = canonical(shape, axis)?;
    if !out_bytes.is_power_of_two() || out_bytes > 16 {
        return Err(Error::InvalidArgument { op: "reduce", message: format!("outputs of {out_bytes} bytes (1, 2, 4, 8 or 16)") });
    }
    if outer == 0 || len == 0 || inner == 0 {
        // Nothing to launch ([`reduce`] returns before planning); the divisions below would
        // divide by the empty sizes.
        return Ok(ReducePlan { outer, len, inner, vector: false, lanes: 1, splits: 1, seg_len: len.max(1) });
    }
    let esize = dtype.size();
    let per_chunk = 16 / esize;
    let block = REDUCE_BLOCK as usize;
    if inner == 1 {
        let rows = outer;
        let vector = base_addr % 16 == 0 && (rows == 1 || (len * esize) % 16 == 0);
        let units = if vector { len.div_ceil(per_chunk) } else { len };
        // A group reads at least 64 contiguous bytes per instruction (one full line).
        let min_lanes = if vector { 4 } else { 64 / esize };
        let mut lanes = units.div_ceil(UNITS_PER_LANE).next_power_of_two().clamp(min_lanes, block);
        // With rows to spare, take enough rows per workgroup that the staged results leave as
        // whole 64-byte lines.
        let full_line_lanes = block / (64 / out_bytes);
        if lanes > full_line_lanes && rows.div_ceil(block / full_line_lanes) >= TARGET_WORKGROUPS {
            lanes = full_line_lanes.max(min_lanes);
        }
        let groups = rows.div_ceil(block / lanes);
        let mut splits = 1;
        let mut seg_len = len.max(1);
        if groups < TARGET_WORKGROUPS && units > 2 * block * UNITS_PER_LANE {
            lanes = block;
            let want = TARGET_WORKGROUPS.div_ceil(rows).min(units.div_ceil(block * UNITS_PER_LANE));
            // Segments start on 16-byte chunks and keep 4 chunks per lane in flight.
            let quantum = 8 * 4 * block;
            seg_len = len.div_ceil(want).div_ceil(quantum) * quantum;
            splits = len.div_ceil(seg_len);
        }
        Ok(ReducePlan { outer, len, inner, vector, lanes, splits, seg_len })
    } else {
        let vector = base_addr % 16 == 0 && (inner * esize) % 16 == 0;
        let units = if vector { inner / per_chunk } else { inner };
        let tile_cols = units.min(64);
        let ty = block / tile_cols;
        let base = outer * units.div_ceil(tile_cols);
        let mut splits = 1;
        let mut seg_len = len.max(1);
        if base < TARGET_WORKGROUPS && len > 2 * ty * UNITS_PER_LANE {
            let want = TARGET_WORKGROUPS.div_ceil(base).min(len.div_ceil(ty * UNITS_PER_LANE));
            seg_len = len.div_ceil(want);
            splits = len.div_ceil(seg_len);
        }
        Ok(ReducePlan { outer, len, inner, vector, lanes: tile_cols, splits, seg_len })
    }
}

/// Sum over `axis` (everything for `None`), in the input dtype.
///
/// # Errors
/// As [`reduce`].
pub fn sum(x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce(x, ReduceOp::Sum, axis, &ReduceOptions::default())
}

/// Mean over `axis` (everything for `None`), in the input dtype.
///
/// # Errors
/// As [`reduce`].
pub fn mean(x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce(x, ReduceOp::Mean, axis, &ReduceOptions::default())
}

/// Maximum over `axis` (everything for `None`); NaN where any element is NaN.
///
/// # Errors
/// As [`reduce`]; an empty reduced axis is an error.
pub fn max(x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce(x, ReduceOp::Max, axis, &ReduceOptions::default())
}

/// Minimum over `axis` (everything for `None`); NaN where any element is NaN.
///
/// # Errors
/// As [`reduce`]; an empty reduced axis is an error.
pub fn min(x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce(x, ReduceOp::Min, axis, &ReduceOptions::default())
}

/// i32 index of the first maximum along `axis` (of the first NaN if any; into the flattened
/// tensor for `None`).
///
/// # Errors
/// As [`reduce`]; an empty reduced axis is an error.
pub fn argmax(x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce(x, ReduceOp::ArgMax, axis, &ReduceOptions::default())
}

/// i32 index of the first minimum along `axis` (of the first NaN if any; into the flattened
/// tensor for `None`).
///
/// # Errors
/// As [`reduce`]; an empty reduced axis is an error.
pub fn argmin(x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce(x, ReduceOp::ArgMin, axis, &ReduceOptions::default())
}

fn kernels(dtype: DType) -> Result<(Kernel<ReduceRowsArgs>, Kernel<ReduceColsArgs>)> {
    match dtype {
        DType::F32 => Ok((abi::REDUCE_ROWS_F32, abi::REDUCE_COLS_F32)),
        DType::F16 => Ok((abi::REDUCE_ROWS_F16, abi::REDUCE_COLS_F16)),
        DType::Bf16 => Ok((abi::REDUCE_ROWS_BF16, abi::REDUCE_COLS_BF16)),
        d => Err(Error::DTypeMismatch { op: "reduce", what: "input", got: d, expected: "f32, f16 or bf16".into() }),
    }
}

fn out_code(op: ReduceOp, want: Option<DType>, input: DType) -> Result<(DType, u32)> {
    if op.is_arg() {
        return match want {
            None | Some(DType::I32) => Ok((DType::I32, out_type::I32)),
            Some(d) => Err(Error::DTypeMismatch { op: op.name(), what: "output", got: d, expected: "i32".into() }),
        };
    }
    match want.unwrap_or(input) {
        DType::F32 => Ok((DType::F32, out_type::F32)),
        DType::F16 => Ok((DType::F16, out_type::F16)),
        DType::Bf16 => Ok((DType::Bf16, out_type::BF16)),
        d => Err(Error::DTypeMismatch { op: op.name(), what: "output", got: d, expected: "f32, f16 or bf16".into() }),
    }
}

/// The output shape of reducing `shape` over `axis`.
fn out_shape(shape: &[usize], axis: Option<usize>, keepdim: bool) -> Vec<usize> {
    match (axis, keepdim) {
        (None, false) => vec![],
        (None, true) => vec![1; shape.len()],
        (Some(a), false) => shape.iter().enumerate().filter(|&(i, _)| i != a).map(|(_, &d)| d).collect(),
        (Some(a), true) => shape.iter().enumerate().map(|(i, &d)| if i == a { 1 } else { d }).collect(),
    }
}

/// Reduces `x` over `axis` (everything for `None`) with `op`.
///
/// # Errors
/// [`Error::DTypeMismatch`] for inputs other than f32/f16/bf16 or a bad `out_dtype`;
/// [`Error::InvalidArgument`] for an axis out of range or an empty max/min/argmax/argmin;
/// [`Error::Unsupported`] for dimensions of 2^32 or more; allocation and launch errors.
pub fn reduce(x: &Tensor, op: ReduceOp, axis: Option<usize>, opts: &ReduceOptions) -> Result<Tensor> {
    let (rows_k, cols_k) = kernels(x.dtype())?;
    let (out_dtype, oc) = out_code(op, opts.out_dtype, x.dtype())?;
    if let Some(a) = axis {
        if a >= x.rank() {
            return Err(Error::InvalidArgument { op: op.name(), message: format!("axis {a} out of range for rank {}", x.rank()) });
        }
    }
    let shape = out_shape(x.shape(), axis, opts.keepdim);
    let (outer, len, inner) = canonical(x.shape(), axis)?;
    let dev = x.device();
    let n_out = outer * inner;
    if n_out == 0 {
        return Tensor::empty(dev, &shape, out_dtype);
    }
    if len == 0 {
        return match op {
            ReduceOp::Sum => Tensor::zeros(dev, &shape, out_dtype),
            ReduceOp::Mean => match out_dtype {
                DType::F32 => Tensor::from_slice(dev, &vec![f32::NAN; n_out], &shape),
                DType::F16 => Tensor::from_slice(dev, &vec![half::f16::NAN; n_out], &shape),
                _ => Tensor::from_slice(dev, &vec![half::bf16::NAN; n_out], &shape),
            },
            _ => Err(Error::InvalidArgument { op: op.name(), message: "the reduced axis is empty (no element to pick)".into() }),
        };
    }
    let (outer_u, len_u, inner_u) =
        (u32_of(op.name(), "outer size", outer)?, u32_of(op.name(), "reduced length", len)?, u32_of(op.name(), "inner size", inner)?);
    if op.is_arg() && len > i32::MAX as usize {
        return Err(Error::Unsupported { op: op.name(), what: format!("indices of a length-{len} axis (i32 outputs)") });
    }
    let x = x.contiguous()?;
    let out = Tensor::empty(dev, &shape, out_dtype)?;
    let p = plan(x.shape(), x.dtype(), axis, x.addr(), out_dtype.size())?;
    let mut ops = Operands::new(op.name(), dev);
    let mean_div = len as f32;
    let partial = p.splits > 1;
    let fl = if p.vector { flags::VECTOR_OK } else { 0 } | if partial { flags::PARTIAL } else { 0 };
    let (part_val, part_idx) = if partial {
        let n = n_out * p.splits;
        (Some(dev.alloc::<f32>(n)?), if op.is_arg() { Some(dev.alloc::<u32>(n)?) } else { None })
    } else {
        (None, None)
    };
    let pv = part_val.as_ref().map_or(Ok(DevPtr::NULL), |b| ops.buffer("partial values", b))?;
    let pi = part_idx.as_ref().map_or(Ok(DevPtr::NULL), |b| ops.buffer("partial indices", b))?;
    let (x_ptr, out_ptr) = (ops.input_bytes("x", &x)?, ops.output_bytes("out", &out)?);
    let name = op.name();
    let splits = u32_of(name, "splits", p.splits)?;
    if inner == 1 {
        let groups = outer.div_ceil(REDUCE_BLOCK as usize / p.lanes);
        let args = ReduceRowsArgs {
            x: x_ptr,
            out: out_ptr,
            part_val: pv,
            part_idx: pi,
            rows: outer_u,
            len: len_u,
            lanes: p.lanes as u32,
            seg_len: u32_of(name, "segment", p.seg_len)?,
            splits,
            op: op.code(),
            out_type: oc,
            flags: fl,
            mean_div,
        };
        let cfg = LaunchConfig::linear(u32_of(name, "workgroups", groups * p.splits)?, REDUCE_BLOCK).with_lds(REDUCE_ROWS_LDS_BYTES);
        // SAFETY: x is contiguous `rows * len`; out holds `rows` results; the partials hold
        // rows * splits entries.
        unsafe { ops.launch(rows_k, cfg, &args)? };
    } else {
        let units = if p.vector { inner / (16 / x.dtype().size()) } else { inner };
        let tiles = units.div_ceil(p.lanes);
        let args = ReduceColsArgs {
            x: x_ptr,
            out: out_ptr,
            part_val: pv,
            part_idx: pi,
            outer: outer_u,
            len: len_u,
            inner: inner_u,
            tile_cols: p.lanes as u32,
            seg_len: u32_of(name, "segment", p.seg_len)?,
            splits,
            op: op.code(),
            out_type: oc,
            flags: fl,
            mean_div,
        };
        let cfg = LaunchConfig {
            grid: [u32_of(name, "workgroups", outer * tiles)?, splits, 1],
            block: [REDUCE_BLOCK, 1, 1],
            dynamic_lds_bytes: REDUCE_COLS_LDS_BYTES,
        };
        // SAFETY: x is contiguous `[outer][len][inner]`; out holds outer * inner results; the
        // partials hold splits * outer * inner entries.
        unsafe { ops.launch(cols_k, cfg, &args)? };
    }
    if partial {
        let n_out_u = u32_of(name, "outputs", n_out)?;
        let (lanes, stride_out, stride_part) = if inner == 1 { (64, splits, 1) } else { (1, 1, n_out_u) };
        let args = ReducePartialsArgs {
            part_val: pv,
            part_idx: pi,
            out: out_ptr,
            outputs: n_out_u,
            parts: splits,
            lanes,
            stride_out,
            stride_part,
            op: op.code(),
            out_type: oc,
            mean_div,
        };
        let per_wg = REDUCE_BLOCK / lanes;
        // SAFETY: the partials were written above with this layout; out holds n_out results.
        unsafe { ops.launch(abi::REDUCE_PARTIALS, LaunchConfig::linear(n_out_u.div_ceil(per_wg), REDUCE_BLOCK), &args)? };
    }
    // The partial buffers go back to the pool once the stream has passed the launches.
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_split_long_rows_and_stage_short_ones() {
        let p = plan(&[1 << 24], DType::F32, None, 0, 4).unwrap();
        assert_eq!((p.inner, p.lanes, p.vector), (1, 256, true));
        assert!(p.splits > 100 && p.seg_len % (8 * 4 * 256) == 0 && p.splits * p.seg_len >= 1 << 24);
        // Rows to spare (4096 workgroups of 16 rows): lanes shrink so a workgroup's staged
        // results fill 64-byte lines.
        let p = plan(&[1 << 16, 1024], DType::F32, Some(1), 0, 4).unwrap();
        assert_eq!((p.splits, p.lanes), (1, 16));
        // Staging would leave 512 workgroups, under TARGET_WORKGROUPS: one row per workgroup.
        let p = plan(&[8192, 8192], DType::F32, Some(1), 0, 4).unwrap();
        assert_eq!((p.splits, p.lanes), (1, 256));
        let p = plan(&[8192, 8192], DType::Bf16, Some(0), 0, 2).unwrap();
        assert_eq!((p.outer, p.len, p.inner, p.lanes), (1, 8192, 8192, 64));
        assert!(p.splits > 1);
        let p = plan(&[7, 3, 5], DType::F16, Some(1), 2, 2).unwrap();
        assert_eq!((p.outer, p.len, p.inner, p.vector, p.lanes, p.splits), (7, 3, 5, false, 5, 1));
    }

    #[test]
    fn plans_of_overflowing_shapes_are_errors() {
        // The outer, reduced and inner sizes multiplied with wrap-around: 2^32 * 2^32 = 0.
        assert!(matches!(plan(&[1 << 32, 1 << 32], DType::F32, None, 0, 4), Err(Error::Shape { .. })));
        assert!(matches!(plan(&[0, 1 << 40, 1 << 40], DType::F32, Some(0), 0, 4), Err(Error::Shape { .. })));
        assert!(matches!(plan(&[usize::MAX, 2], DType::F32, Some(1), 0, 4), Err(Error::Shape { .. })));
        // Empty shapes and odd output sizes divided by zero.
        assert_eq!(plan(&[0, 1 << 20], DType::F32, Some(1), 0, 4).unwrap().outer, 0);
        assert_eq!(plan(&[3, 0], DType::F32, Some(0), 0, 4).unwrap().splits, 1);
        assert_eq!(plan(&[3, 0, 5], DType::F32, Some(1), 0, 4).unwrap().len, 0);
        for out_bytes in [0, 3, 128] {
            assert!(matches!(plan(&[8, 8], DType::F32, Some(1), 0, out_bytes), Err(Error::InvalidArgument { .. })));
        }
    }

    #[test]
    fn output_shapes() {
        assert_eq!(out_shape(&[2, 3, 4], Some(1), false), vec![2, 4]);
        assert_eq!(out_shape(&[2, 3, 4], Some(1), true), vec![2, 1, 4]);
        assert_eq!(out_shape(&[2, 3, 4], None, false), Vec::<usize>::new());
        assert_eq!(out_shape(&[2, 3, 4], None, true), vec![1, 1, 1]);
    }
}
