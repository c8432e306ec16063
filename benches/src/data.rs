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

    /// GGML blocks of `n` rows of `k` weights in `format`: random codes (every bit pattern of
    /// the code fields is a valid block) and f16 scales (and minimums) of `sigma * N(0, 1)`
    /// magnitude, as a quantized weight's bytes look to a kernel.
    pub fn quant_blocks(&mut self, format: ferrocm::quant::QuantFormat, n: usize, k: usize, sigma: f64) -> Result<Vec<u8>> {
        use ferrocm::quant::QuantFormat;
        let bytes = n * format.row_bytes(k)?;
        let mut out = Vec::with_capacity(bytes + 8);
        while out.len() < bytes {
            self.uniform();
            out.extend_from_slice(&self.state.to_le_bytes());
        }
        out.truncate(bytes);
        let scales: &[usize] = match format {
            QuantFormat::Q4_0 | QuantFormat::Q5_0 | QuantFormat::Q8_0 => &[0],
            QuantFormat::Q6K => &[208],
            _ => &[0, 2],
        };
        for block in out.chunks_exact_mut(format.block_bytes()) {
            for &at in scales {
                block[at..at + 2].copy_from_slice(&f16::from_f64(sigma * self.sample()).to_le_bytes());
            }
        }
        Ok(out)
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
