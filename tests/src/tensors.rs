//! Test data: tensors of a float dtype built from f64 values, and read back as f64.
//!
//! Values are rounded to the dtype once, on the host, and the suites compare against the
//! rounded values (what the device actually sees), so a test's error bound only has to cover
//! the device's arithmetic and its final rounding.

use ferrocm::{DType, Device, Element, Tensor, bf16, f16};

/// A deterministic pseudo-random stream: uniform in [-1, 1).
pub fn uniform(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// A tensor of `dtype` and `shape` holding `vals` rounded to the dtype, and the rounded values.
///
/// # Panics
/// For dtypes other than f32, f16, bf16 and the fp8 FNUZ types, or a length not matching the shape.
pub fn tensor(vals: &[f64], shape: &[usize], dtype: DType) -> (Tensor, Vec<f64>) {
    tensor_on(crate::device(), vals, shape, dtype)
}

/// [`tensor`] on device `dev`.
///
/// # Panics
/// As [`tensor`].
pub fn tensor_on(dev: &Device, vals: &[f64], shape: &[usize], dtype: DType) -> (Tensor, Vec<f64>) {
    fn make<T: Element>(dev: &Device, vals: &[f64], shape: &[usize]) -> (Tensor, Vec<f64>) {
        let v: Vec<T> = vals.iter().map(|&x| T::from_f64(x)).collect();
        let back = v.iter().map(|x| x.to_f64()).collect();
        (Tensor::from_slice(dev, &v, shape).expect("upload"), back)
    }
    match dtype {
        DType::F32 => make::<f32>(dev, vals, shape),
        DType::F16 => make::<f16>(dev, vals, shape),
        DType::Bf16 => make::<bf16>(dev, vals, shape),
        DType::Fp8E4M3Fnuz => make::<ferrocm::Fp8E4M3Fnuz>(dev, vals, shape),
        DType::Fp8E5M2Fnuz => make::<ferrocm::Fp8E5M2Fnuz>(dev, vals, shape),
        d => panic!("no test data for {d}"),
    }
}

/// `vals` rounded to `dtype` on the host, as [`tensor`] rounds them (no device work: for
/// references that round intermediate results, element by element).
///
/// # Panics
/// For dtypes other than f32, f16, bf16 and the fp8 FNUZ types.
pub fn round_to(vals: &[f64], dtype: DType) -> Vec<f64> {
    fn round<T: Element>(vals: &[f64]) -> Vec<f64> {
        vals.iter().map(|&x| T::from_f64(x).to_f64()).collect()
    }
    match dtype {
        DType::F32 => round::<f32>(vals),
        DType::F16 => round::<f16>(vals),
        DType::Bf16 => round::<bf16>(vals),
        DType::Fp8E4M3Fnuz => round::<ferrocm::Fp8E4M3Fnuz>(vals),
        DType::Fp8E5M2Fnuz => round::<ferrocm::Fp8E5M2Fnuz>(vals),
        d => panic!("no test data for {d}"),
    }
}

/// A tensor of uniform values in `[-scale, scale)`.
pub fn random(shape: &[usize], dtype: DType, scale: f64, seed: &mut u64) -> (Tensor, Vec<f64>) {
    let n = shape.iter().product();
    let vals: Vec<f64> = (0..n).map(|_| uniform(seed) * scale).collect();
    tensor(&vals, shape, dtype)
}

/// A float tensor's elements as f64 (row-major).
///
/// # Panics
/// For dtypes other than f32, f16 and bf16, or a failed read.
pub fn read(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|&x| x as f64).collect(),
        DType::F16 => t.to_vec::<f16>().unwrap().iter().map(|x| x.to_f64()).collect(),
        DType::Bf16 => t.to_vec::<bf16>().unwrap().iter().map(|x| x.to_f64()).collect(),
        d => panic!("not a float dtype: {d}"),
    }
}

/// The relative size of half an ulp of `dtype` (the error of one rounding to it).
pub fn half_ulp(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 2f64.powi(-24),
        DType::F16 => 2f64.powi(-11),
        DType::Bf16 => 2f64.powi(-8),
        d => panic!("not a float dtype: {d}"),
    }
}

/// The smallest positive normal of `dtype` (below it rounding errors are absolute).
pub fn min_normal(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f32::MIN_POSITIVE as f64,
        DType::F16 => 6.103515625e-5,
        DType::Bf16 => f32::MIN_POSITIVE as f64,
        d => panic!("not a float dtype: {d}"),
    }
}

/// The error bound of rounding `v` once to `dtype`: half an ulp, relative for normal values,
/// absolute (half the subnormal spacing) below the normal range.
pub fn rounding(dtype: DType, v: f64) -> f64 {
    half_ulp(dtype) * (v.abs() + min_normal(dtype))
}

/// The float dtypes memory-bound ops take.
pub const FLOAT_DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::Bf16];

/// True when `got` is within `tol` of `want`, or both are NaN, or both are the same infinity.
pub fn close(got: f64, want: f64, tol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= tol
}

/// The raw 16-bit values of an f16 or bf16 tensor, for bit-for-bit comparisons (NaNs compared
/// by their bits).
pub fn bits16(t: &Tensor) -> Vec<u16> {
    match t.dtype() {
        DType::F16 => t.to_vec::<f16>().unwrap().iter().map(|x| x.to_bits()).collect(),
        DType::Bf16 => t.to_vec::<bf16>().unwrap().iter().map(|x| x.to_bits()).collect(),
        d => panic!("not a 2-byte float: {d}"),
    }
}
