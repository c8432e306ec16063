//! Test data for the elementwise and movement suites: random values of any dtype (with the
//! special values an op defines), views of several layouts, reading tensors back as f64, and
//! ulp-based closeness.

use ferrocm::{DType, Element, Fp8E4M3Fnuz, Fp8E5M2Fnuz, Tensor, bf16, f16};

/// A deterministic pseudo-random stream (64-bit LCG; the high bits are used).
pub struct Rng(pub u64);

impl Rng {
    /// The next value in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A value in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// An integer in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }
}

/// The special values a float op should be checked on: zeros of both signs, infinities, NaN,
/// the dtype's smallest subnormal and normal, its largest finite value, and values around 1.
pub fn specials(dtype: DType) -> Vec<f64> {
    let (min_sub, min_norm, max) = limits(dtype);
    vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, min_sub, -min_sub, min_norm, -3.0 * min_sub, max, -max, 1.0, -1.0, 0.5, 2.0]
}

/// (smallest positive subnormal, smallest positive normal, largest finite) of a float dtype.
pub fn limits(dtype: DType) -> (f64, f64, f64) {
    match dtype {
        DType::F32 => (f32::from_bits(1) as f64, f32::MIN_POSITIVE as f64, f32::MAX as f64),
        DType::F16 => (f16::from_bits(1).to_f64(), f16::MIN_POSITIVE.to_f64(), f16::MAX.to_f64()),
        DType::Bf16 => (bf16::from_bits(1).to_f64(), bf16::MIN_POSITIVE.to_f64(), bf16::MAX.to_f64()),
        DType::Fp8E4M3Fnuz => (Fp8E4M3Fnuz::MIN_SUBNORMAL_F32 as f64, Fp8E4M3Fnuz::MIN_POSITIVE_F32 as f64, 240.0),
        DType::Fp8E5M2Fnuz => (Fp8E5M2Fnuz::MIN_SUBNORMAL_F32 as f64, Fp8E5M2Fnuz::MIN_POSITIVE_F32 as f64, 57344.0),
        DType::I32 => (1.0, 1.0, i32::MAX as f64),
        d => panic!("no float limits for {d}"),
    }
}

/// Significand bits (with the implicit one) of a float dtype.
pub fn mantissa_bits(dtype: DType) -> i32 {
    match dtype {
        DType::F32 => 24,
        DType::F16 => 11,
        DType::Bf16 => 8,
        DType::Fp8E4M3Fnuz => 4,
        DType::Fp8E5M2Fnuz => 3,
        d => panic!("{d} is not a float dtype"),
    }
}

/// One ulp of `dtype` at magnitude `x` (the spacing of the binade of `x`; the subnormal spacing
/// below the normal range).
pub fn ulp(dtype: DType, x: f64) -> f64 {
    let (min_sub, min_norm, _) = limits(dtype);
    let a = x.abs();
    if !a.is_finite() || a < min_norm {
        return min_sub;
    }
    2f64.powi(a.log2().floor() as i32 - (mantissa_bits(dtype) - 1))
}

/// `v` rounded to `dtype` and back (exact for the values a `dtype` tensor holds).
///
/// Through [`Element::from_f64`], not `half`'s `from_f64`, which rounds twice (it drops the low
/// bits of the f64 before rounding, so values just above a midpoint tie).
pub fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F32 => v as f32 as f64,
        DType::F16 => <f16 as Element>::from_f64(v).to_f64(),
        DType::Bf16 => <bf16 as Element>::from_f64(v).to_f64(),
        DType::Fp8E4M3Fnuz => Fp8E4M3Fnuz::from_f64(v).to_f64(),
        DType::Fp8E5M2Fnuz => Fp8E5M2Fnuz::from_f64(v).to_f64(),
        DType::I32 => <i32 as Element>::from_f64(v) as f64,
        DType::I8 => <i8 as Element>::from_f64(v) as f64,
        DType::U32 => <u32 as Element>::from_f64(v) as f64,
    }
}

/// A contiguous tensor of `dtype` and `shape` holding `vals` rounded to the dtype.
pub fn tensor_of(dev: &ferrocm::Device, dtype: DType, shape: &[usize], vals: &[f64]) -> Tensor {
    macro_rules! make {
        ($t:ty) => {{
            let v: Vec<$t> = vals.iter().map(|&x| <$t as Element>::from_f64(x)).collect();
            Tensor::from_slice(dev, &v, shape).expect("upload")
        }};
    }
    match dtype {
        DType::F32 => make!(f32),
        DType::F16 => make!(f16),
        DType::Bf16 => make!(bf16),
        DType::Fp8E4M3Fnuz => make!(Fp8E4M3Fnuz),
        DType::Fp8E5M2Fnuz => make!(Fp8E5M2Fnuz),
        DType::I8 => make!(i8),
        DType::I32 => make!(i32),
        DType::U32 => make!(u32),
    }
}

/// The elements of `t` (any view) in row-major order as f64 (exact for every dtype).
pub fn read_f64(t: &Tensor) -> Vec<f64> {
    fn conv<T: Element>(t: &Tensor) -> Vec<f64> {
        t.to_vec::<T>().expect("download").into_iter().map(|x| x.to_f64()).collect()
    }
    match t.dtype() {
        DType::F32 => conv::<f32>(t),
        DType::F16 => conv::<f16>(t),
        DType::Bf16 => conv::<bf16>(t),
        DType::Fp8E4M3Fnuz => conv::<Fp8E4M3Fnuz>(t),
        DType::Fp8E5M2Fnuz => conv::<Fp8E5M2Fnuz>(t),
        DType::I8 => conv::<i8>(t),
        DType::I32 => conv::<i32>(t),
        DType::U32 => conv::<u32>(t),
    }
}

/// The raw bits of each element of `t` (any view) in row-major order.
pub fn read_bits(t: &Tensor) -> Vec<u32> {
    match t.dtype().size() {
        4 => match t.dtype() {
            DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect(),
            DType::I32 => t.to_vec::<i32>().unwrap().iter().map(|&x| x as u32).collect(),
            _ => t.to_vec::<u32>().unwrap(),
        },
        2 => match t.dtype() {
            DType::F16 => t.to_vec::<f16>().unwrap().iter().map(|x| x.to_bits() as u32).collect(),
            _ => t.to_vec::<bf16>().unwrap().iter().map(|x| x.to_bits() as u32).collect(),
        },
        _ => match t.dtype() {
            DType::I8 => t.to_vec::<i8>().unwrap().iter().map(|&x| x as u8 as u32).collect(),
            DType::Fp8E5M2Fnuz => t.to_vec::<Fp8E5M2Fnuz>().unwrap().iter().map(|x| x.0 as u32).collect(),
            _ => t.to_vec::<Fp8E4M3Fnuz>().unwrap().iter().map(|x| x.0 as u32).collect(),
        },
    }
}

/// How a test input is laid out in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Contiguous, 256-byte aligned.
    Contiguous,
    /// Contiguous but starting one element into its allocation (misaligned for 128-bit access).
    Offset,
    /// The last two axes stored transposed (a transposed view).
    Transposed,
    /// Rows padded by 3 elements (a narrowed view: rows do not merge, often misaligned).
    Padded,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 4] = [Layout::Contiguous, Layout::Offset, Layout::Transposed, Layout::Padded];
}

/// A view of `shape` and `dtype` laid out per `layout`, holding `vals` (row-major logical
/// order, rounded to the dtype); returns the view and its exact logical values.
pub fn view_of(dev: &ferrocm::Device, dtype: DType, shape: &[usize], vals: &[f64], layout: Layout) -> (Tensor, Vec<f64>) {
    let r = shape.len();
    let t = match layout {
        Layout::Transposed if r >= 2 => {
            let mut st = shape.to_vec();
            st.swap(r - 2, r - 1);
            let (rows, cols) = (shape[r - 2], shape[r - 1]);
            let batch = vals.len() / (rows * cols).max(1);
            // Storage [.., cols, rows] whose transpose is the logical tensor.
            let mut stored = vec![0.0; vals.len()];
            for b in 0..batch {
                for i in 0..rows {
                    for j in 0..cols {
                        stored[b * rows * cols + j * rows + i] = vals[b * rows * cols + i * cols + j];
                    }
                }
            }
            tensor_of(dev, dtype, &st, &stored).transpose(r - 2, r - 1).unwrap()
        }
        Layout::Padded if r >= 1 => {
            // Storage [.., c + 3]: rows 3 elements apart, innermost still contiguous.
            let c = shape[r - 1];
            let mut wide = shape.to_vec();
            wide[r - 1] = c + 3;
            let rows: usize = shape[..r - 1].iter().product();
            let mut stored = vec![f64::NAN; rows * (c + 3)]; // the padding is never read
            for i in 0..rows {
                stored[i * (c + 3)..i * (c + 3) + c].copy_from_slice(&vals[i * c..i * c + c]);
            }
            tensor_of(dev, dtype, &wide, &stored).narrow(r - 1, 0, c).unwrap()
        }
        Layout::Offset => {
            let mut stored = vec![0.0];
            stored.extend_from_slice(vals);
            let flat = tensor_of(dev, dtype, &[stored.len()], &stored).narrow(0, 1, vals.len()).unwrap();
            // A contiguous view can be reshaped in place.
            flat.reshape(shape).unwrap()
        }
        _ => tensor_of(dev, dtype, shape, vals),
    };
    let logical = read_f64(&t);
    (t, logical)
}

/// Whether `got` (a `dtype` value) matches the exact result `want` within `ulps` ulp of the dtype
/// plus `rel * |want| + abs`. NaN must meet NaN; infinities count as one ulp beyond the largest
/// finite value (so a result that rounds to the edge of the range matches either side).
pub fn close(dtype: DType, got: f64, want: f64, ulps: f64, rel: f64, abs: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    let (_, _, max) = limits(dtype);
    let edge = max + ulp(dtype, max);
    let clampv = |v: f64| if v.is_infinite() { edge.copysign(v) } else { v.clamp(-edge, edge) };
    let (g, w) = (clampv(got), clampv(want));
    if got.is_infinite() && want.is_infinite() {
        return got == want;
    }
    (g - w).abs() <= ulps * ulp(dtype, w) + rel * w.abs() + abs
}
