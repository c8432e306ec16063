//! Rotary position embedding (RoPE).
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, bf16, ops::rope::{self, RopeOptions}};
//! let dev = Device::new()?;
//! // q: [batch 2, seq 16, heads 8, head_dim 128]
//! let q = Tensor::from_slice(&dev, &vec![bf16::ONE; 2 * 16 * 8 * 128], &[2, 16, 8, 128])?;
//! // The second sequence continues a cache of 100 tokens.
//! let offsets = Tensor::from_slice(&dev, &[0i32, 100], &[2])?;
//! let q = rope::rope(&q, &RopeOptions { offsets: Some(&offsets), ..Default::default() })?;
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Semantics (shared with [`reference::rope`](crate::reference::rope)): `x` is
//! `[batch, seq, heads, head_dim]` (or `[seq, heads, head_dim]`, one sequence). The token at
//! index `s` of sequence `b` has position `pos = offsets[b] + s`. Pair `i < rotary_dim / 2`
//! with frequency `f_i` is rotated by `pos * f_i`: `(x, y) -> (x cos - y sin, y cos + x sin)`;
//! the pairs are `(i, i + rotary_dim / 2)` ([`RopeLayout::HalfSplit`], Hugging Face
//! `rotate_half`, the default) or `(2i, 2i + 1)` ([`RopeLayout::Interleaved`], GPT-J, Meta).
//! Elements past `rotary_dim` pass through. f32, f16, bf16; f32 arithmetic; output in the
//! input dtype.
//!
//! Where cos and sin come from ([`RopeTable`]): computed on the device (the primary design) from
//! `f_i = theta^(-2i / rotary_dim)` ([`RopeTable::Theta`], default theta 10000) or any list of
//! frequencies ([`RopeTable::Frequencies`], for NTK / YaRN / Llama-3 scaled variants), with the
//! angle formed in extended precision (about 1e-9 rad at position 10^6; positions must stay
//! below 2^24 in magnitude); or read from given tables ([`RopeTable::Cache`]). Computing them
//! moves only the frequency list (`rotary_dim / 2` f32 pairs) besides `x` read once and the
//! output written once: with 16-byte accesses each workgroup stages it in LDS (1-2% of the
//! bytes of a `[4, 512, 32, 128]` tensor); otherwise each lane reads its columns' frequencies.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::reduce::TARGET_WORKGROUPS;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::rope::{self as abi, ROPE_BLOCK, ROPE_FREQ_LDS_MAX, RopeArgs, flags, rope_freq_lds_bytes};
use ferrocm_device::abi::{DevPtr, Kernel};

/// Which elements form a rotated pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RopeLayout {
    /// `(i, i + rotary_dim / 2)`: GPT-NeoX, Hugging Face Llama (`rotate_half`).
    #[default]
    HalfSplit,
    /// `(2i, 2i + 1)`: GPT-J, Meta's reference Llama (complex multiplication).
    Interleaved,
}

/// Where the rotation angles come from.
#[derive(Clone, Copy, Debug)]
pub enum RopeTable<'a> {
    /// Computed on the device with `f_i = theta^(-2i / rotary_dim)`.
    Theta(f64),
    /// Computed on the device from these `rotary_dim / 2` frequencies (radians per position).
    Frequencies(&'a [f64]),
    /// Read from `cos` and `sin`, f32 `[positions, rotary_dim / 2]`; positions outside the
    /// tables give NaN outputs.
    Cache {
        /// cos of every (position, pair).
        cos: &'a Tensor,
        /// sin of every (position, pair).
        sin: &'a Tensor,
    },
}

/// Options of [`rope`].
#[derive(Clone, Copy, Debug)]
pub struct RopeOptions<'a> {
    /// Pair layout.
    pub layout: RopeLayout,
    /// The angles' source.
    pub table: RopeTable<'a>,
    /// Rotated elements at the start of each head vector (even; default: all of `head_dim`).
    pub rotary_dim: Option<usize>,
    /// Start position of each sequence, i32 `[batch]` (default: all 0).
    pub offsets: Option<&'a Tensor>,
}

/// theta of the original RoPE paper and most models.
pub const DEFAULT_THETA: f64 = 10_000.0;

impl Default for RopeOptions<'_> {
    fn default() -> Self {
        RopeOptions { layout: RopeLayout::HalfSplit, table: RopeTable::Theta(DEFAULT_THETA), rotary_dim: None, offsets: None }
    }
}

/// The frequencies `theta^(-2i / rotary_dim)`, `i < rotary_dim / 2`.
pub fn theta_frequencies(theta: f64, rotary_dim: usize) -> Vec<f64> {
    (0..rotary_dim / 2).map(|i| theta.powf(-((2 * i) as f64) / rotary_dim as f64)).collect()
}

fn kernel(d: DType) -> Result<Kernel<RopeArgs>> {
    match d {
        DType::F32 => Ok(abi::ROPE_F32),
        DType::F16 => Ok(abi::ROPE_F16),
        DType::Bf16 => Ok(abi::ROPE_BF16),
        d => Err(Error::DTypeMismatch { op: "rope", what: "input", got: d, expected: "f32, f16 or bf16".into() }),
    }
}

/// Rotates `x` (see the module docs) into a new tensor.
///
/// # Errors
/// [`Error::DTypeMismatch`] for dtypes other than f32/f16/bf16, offsets not i32, tables not
/// f32; [`Error::Shape`] for `x` not 3-d or 4-d, offsets not `[batch]`, tables not
/// `[positions, rotary_dim / 2]`, a frequency list of another length; [`Error::InvalidArgument`]
/// for an odd or oversized `rotary_dim`, a non-positive or non-finite theta;
/// [`Error::Unsupported`] for sizes of 2^32 or more; allocation and launch errors.
pub fn rope(x: &Tensor, opts: &RopeOptions<'_>) -> Result<Tensor> {
    const OP: &str = "rope";
    let k = kernel(x.dtype())?;
    let (batch, seq, heads, d) = match *x.shape() {
        [s, h, d] => (1, s, h, d),
        [b, s, h, d] => (b, s, h, d),
        _ => {
            return Err(Error::Shape {
                op: OP,
                message: format!("x is {:?}; expected [batch, seq, heads, head_dim] or [seq, heads, head_dim]", x.shape()),
            });
        }
    };
    let rot = opts.rotary_dim.unwrap_or(d);
    if rot == 0 || rot % 2 != 0 || rot > d {
        return Err(Error::InvalidArgument {
            op: OP,
            message: format!("rotary_dim = {rot} (must be even, positive and <= head_dim = {d})"),
        });
    }
    let dev = x.device();
    let mut ops = Operands::new(OP, dev);
    let u32_of = |what: &str, v: usize| crate::tensor::u32_of(OP, what, v);
    let half = rot / 2;
    let mut fl = if opts.layout == RopeLayout::HalfSplit { flags::HALF_SPLIT } else { 0 };

    // Angles: a (hi, lo) frequency table, or the caller's cos/sin tables.
    let (mut freq_buf, mut cos, mut sin, mut cache_rows) = (None, None, None, 0);
    match opts.table {
        RopeTable::Theta(theta) if !(theta > 0.0 && theta.is_finite()) => {
            return Err(Error::InvalidArgument { op: OP, message: format!("theta = {theta} (must be positive and finite)") });
        }
        RopeTable::Theta(theta) => freq_buf = Some(theta_frequencies(theta, rot)),
        RopeTable::Frequencies(f) if f.len() != half => {
            return Err(Error::Shape { op: OP, message: format!("{} frequencies given, rotary_dim / 2 = {half} needed", f.len()) });
        }
        RopeTable::Frequencies(f) => freq_buf = Some(f.to_vec()),
        RopeTable::Cache { cos: c, sin: s } => {
            for (what, t) in [("cos table", c), ("sin table", s)] {
                if t.dtype() != DType::F32 {
                    return Err(Error::DTypeMismatch { op: OP, what, got: t.dtype(), expected: "f32".into() });
                }
                if t.rank() != 2 || t.shape()[1] != half || t.shape() != c.shape() {
                    return Err(Error::Shape {
                        op: OP,
                        message: format!("{what} is {:?}; expected [positions, {half}] like the cos table", t.shape()),
                    });
                }
                ops.check_device(what, t)?;
            }
            cache_rows = u32_of("table rows", c.shape()[0])?;
            cos = Some(c.contiguous()?);
            sin = Some(s.contiguous()?);
            fl |= flags::CACHE;
        }
    }
    let offsets = match opts.offsets {
        Some(o) => {
            if o.dtype() != DType::I32 {
                return Err(Error::DTypeMismatch { op: OP, what: "offsets", got: o.dtype(), expected: "i32".into() });
            }
            if o.shape() != [batch] {
                return Err(Error::Shape { op: OP, message: format!("offsets are {:?}, expected [{batch}]", o.shape()) });
            }
            ops.check_device("offsets", o)?;
            fl |= flags::OFFSETS;
            Some(o.contiguous()?)
        }
        None => None,
    };
    let out = Tensor::empty(dev, x.shape(), x.dtype())?;
    let rows = batch * seq * heads;
    if rows == 0 || d == 0 {
        return Ok(out);
    }
    let x = x.contiguous()?;
    let freqs = match &freq_buf {
        Some(f) => {
            let pairs: Vec<f32> = f
                .iter()
                .flat_map(|&v| {
                    let hi = v as f32;
                    [hi, (v - hi as f64) as f32]
                })
                .collect();
            Some(dev.from_slice(&pairs)?)
        }
        None => None,
    };

    let v = 16 / x.dtype().size();
    let vector =
        x.addr() % 16 == 0 && out.addr() % 16 == 0 && d % v == 0 && if fl & flags::HALF_SPLIT != 0 { half % v == 0 } else { rot % v == 0 };
    if vector {
        fl |= flags::VECTOR_OK;
    }
    let rotated = if !vector {
        half
    } else if fl & flags::HALF_SPLIT != 0 {
        half / v
    } else {
        rot / v
    };
    let units = rotated + if vector { (d - rot) / v } else { d - rot };
    // With 16-byte accesses a workgroup stages the frequencies in LDS once: read per lane, a
    // unit's table (up to 64 bytes) costs as much as the lane's reads and writes of one head
    // vector (two 16-byte chunks each way).
    let pairs = if fl & flags::HALF_SPLIT != 0 { v } else { v / 2 };
    let freq_lds = rope_freq_lds_bytes(u32_of("rotated units", rotated)?, pairs as u32);
    let aligned = freqs.as_ref().is_some_and(|f| f.as_ptr().addr() % 16 == 0);
    let lds = if vector && aligned && freq_lds <= ROPE_FREQ_LDS_MAX {
        fl |= flags::FREQS_LDS;
        freq_lds
    } else {
        0
    };
    let tile_cols = units.min(ROPE_BLOCK as usize);
    let ty = ROPE_BLOCK as usize / tile_cols;
    // Each lane walks several consecutive head vectors (cos/sin reuse) while the grid still
    // has TARGET_WORKGROUPS workgroups.
    let per_lane = rows.div_ceil(ty * TARGET_WORKGROUPS).max(1);
    let grid = rows.div_ceil(ty * per_lane);
    let args = RopeArgs {
        x: ops.input_bytes("x", &x)?,
        out: ops.output_bytes("out", &out)?,
        offsets: ops.optional_input("offsets", offsets.as_ref())?,
        freqs: freqs.as_ref().map_or(Ok(DevPtr::NULL), |f| ops.buffer("frequencies", f))?,
        cos: ops.optional_input("cos table", cos.as_ref())?,
        sin: ops.optional_input("sin table", sin.as_ref())?,
        batch: u32_of("batch", batch)?,
        seq: u32_of("seq", seq)?,
        heads: u32_of("heads", heads)?,
        head_dim: u32_of("head_dim", d)?,
        rot_dim: u32_of("rotary_dim", rot)?,
        cache_rows,
        tile_cols: tile_cols as u32,
        rows_per_lane: u32_of("rows per lane", per_lane)?,
        flags: fl,
    };
    u32_of("head vectors", rows)?;
    // SAFETY: x and out are contiguous [batch][seq][heads][head_dim] of the kernel's dtype;
    // offsets hold batch i32; freqs rotary_dim / 2 pairs; the tables [cache_rows][rot / 2].
    unsafe { ops.launch(k, LaunchConfig::linear(u32_of("workgroups", grid)?, ROPE_BLOCK).with_lds(lds), &args)? };
    Ok(out)
}
