//! Benchmark inputs: normally distributed values (zeros or constants let a real GPU's clocks rise
//! and flatter its numbers; GFX942.md, benchmark conventions), from a small seeded generator so
//! runs are reproducible.

use ferrocm::{DType, Device, Error, Fp8E4M3Fnuz, Fp8E5M2Fnuz, Result, Tensor, bf16, f16};

/// A seeded generator of standard normal values (xorshift64* and Box-Muller).
pub struct Normal {
    state: u64,
    spare: Option<f64>,
}

impl Normal {
    /// A generator; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Normal {
        Normal { state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, spare: None }
    }

    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let x = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // 53 random bits in (0, 1].
        ((x >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// The next standard normal value.
    pub fn sample(&mut self) -> f64 {
        if let Some(s) = self.spare.take() {
            return s;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * v;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }

    /// `n` values `sigma * N(0, 1)` converted to `T`.
    pub fn vec<T: ferrocm::Element>(&mut self, n: usize, sigma: f64) -> Vec<T> {
        (0..n).map(|_| T::from_f64(sigma * self.sample())).collect()
    }

    /// A `shape` tensor of float type `dtype` on `dev` holding `sigma * N(0, 1)` values.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for integer dtypes; allocation errors.
    pub fn tensor(&mut self, dev: &Device, dtype: DType, shape: &[usize], sigma: f64) -> Result<Tensor> {
        let n = shape.iter().product();
        match dtype {
            DType::F32 => Tensor::from_slice(dev, &self.vec::<f32>(n, sigma), shape),
            DType::F16 => Tensor::from_slice(dev, &self.vec::<f16>(n, sigma), shape),
            DType::Bf16 => Tensor::from_slice(dev, &self.vec::<bf16>(n, sigma), shape),
            DType::Fp8E4M3Fnuz => Tensor::from_slice(dev, &self.vec::<Fp8E4M3Fnuz>(n, sigma), shape),
            DType::Fp8E5M2Fnuz => Tensor::from_slice(dev, &self.vec::<Fp8E5M2Fnuz>(n, sigma), shape),
            d => Err(Error::Unsupported { op: "benchmark data", what: format!("normally distributed {d} values") }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_values_have_unit_variance() {
        let mut g = Normal::new(7);
        let xs: Vec<f64> = (0..100_000).map(|_| g.sample()).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / xs.len() as f64;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
    }
}
