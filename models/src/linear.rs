//! [`Linear`]: `y = x W^T (+ bias, activation, residual)`, the one place a model's projections
//! run, so the weight representation can change without touching the models.
//!
//! A weight is either dense (a device tensor in the activation dtype, run on ferrocm's GEMM) or
//! GGML block-quantized (the file's blocks on the device, run on `ops::qmatmul`, whose GEMV
//! reads every weight byte once). Fused rows (QKV, gate/up) stay fusable when quantized: a row
//! of GGML blocks depends on that row alone, so concatenating the parts' blocks is the fused
//! matrix.

use crate::error::Result;
use ferrocm::ops::elementwise as ew;
use ferrocm::ops::gemm::{self, Activation, GemmConfig, GemmOptions};
use ferrocm::ops::norm;
use ferrocm::ops::qmatmul::{self, QKernel, QMatmulOptions, RmsNorm};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Device, Tensor};

/// What runs after the product, fused into the GEMM's epilogue.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Epilogue<'a> {
    pub activation: Activation,
    pub residual: Option<&'a Tensor>,
    pub out_dtype: Option<DType>,
}

/// A weight matrix `[out, in]` and an optional bias.
#[derive(Debug)]
pub(crate) enum Linear {
    /// A dense weight (the activation dtype) and an f32 bias.
    Dense { w: Tensor, bias: Option<Tensor> },
    /// GGML blocks `[out, in]` and an f32 bias.
    Quantized { w: QuantTensor, bias: Option<Tensor> },
}

impl Linear {
    /// A dense layer from host f32 rows `[out, in]` (several matrices' rows concatenated for a
    /// fused projection), stored in `dtype`.
    pub(crate) fn dense(device: &Device, rows: &[f32], out: usize, inp: usize, bias: Option<&[f32]>, dtype: DType) -> Result<Linear> {
        let w = upload(device, rows, &[out, inp], dtype)?;
        let bias = bias.map(|b| Tensor::from_slice(device, b, &[out])).transpose()?;
        Ok(Linear::Dense { w, bias })
    }

    /// A quantized layer from GGML blocks of `format` (`out` rows of `inp` weights, row-major;
    /// several matrices' rows concatenated for a fused projection).
    pub(crate) fn quantized(device: &Device, format: QuantFormat, blocks: &[u8], out: usize, inp: usize) -> Result<Linear> {
        Ok(Linear::Quantized { w: QuantTensor::from_blocks(device, format, [out, inp], blocks)?, bias: None })
    }

    /// Bytes of the weights (and bias) on the device.
    pub(crate) fn device_bytes(&self) -> usize {
        let t = |t: &Tensor| t.numel() * t.dtype().size();
        match self {
            Linear::Dense { w, bias } => t(w) + bias.as_ref().map_or(0, t),
            Linear::Quantized { w, bias } => w.shape()[0] * w.row_bytes() + bias.as_ref().map_or(0, t),
        }
    }

    /// The quantized weight of a layer without a bias (whose product ops beyond `qmatmul` can
    /// run, such as the fused QKV projection with its rotary epilogue), else `None`.
    pub(crate) fn quantized_weight(&self) -> Option<&QuantTensor> {
        match self {
            Linear::Quantized { w, bias: None } => Some(w),
            _ => None,
        }
    }

    /// `x [M, in] -> [M, out]`.
    pub(crate) fn forward(&self, x: &Tensor, e: Epilogue<'_>) -> Result<Tensor> {
        self.forward_normed(x, None, e)
    }

    /// `rms_norm(x) [M, in] -> [M, out]` (`rms` absent: `x`): the quantized decode GEMV computes
    /// the norm in its own launch (`QMatmulOptions::rms_norm`); elsewhere `norm::rms_norm`
    /// runs first.
    pub(crate) fn forward_normed(&self, x: &Tensor, rms: Option<RmsNorm<'_>>, e: Epilogue<'_>) -> Result<Tensor> {
        match self {
            Linear::Quantized { w, bias } => {
                let opts = QMatmulOptions {
                    bias: bias.as_ref(),
                    activation: e.activation,
                    residual: e.residual,
                    out_dtype: e.out_dtype,
                    rms_norm: rms,
                    ..Default::default()
                };
                Ok(qmatmul::qmatmul(x, w, &opts)?)
            }
            Linear::Dense { w, bias } => {
                let normed;
                let x = match &rms {
                    Some(n) => {
                        normed = norm::rms_norm(x, n.weight, n.eps)?;
                        &normed
                    }
                    None => x,
                };
                let opts = GemmOptions {
                    config: config_for(x.dtype(), x.shape()[0], w.shape()[0], w.shape()[1]),
                    bias: bias.as_ref(),
                    activation: e.activation,
                    residual: e.residual,
                    out_dtype: e.out_dtype,
                    ..Default::default()
                };
                Ok(gemm::gemm(x, &w.transpose(0, 1)?, &opts)?)
            }
        }
    }
}

/// A SwiGLU MLP's input projections: `silu(x Wg^T) * (x Wu^T)`, `[M, in] -> [M, ffn]`.
#[derive(Debug)]
pub(crate) enum GateUp {
    /// Gate and up rows concatenated (`[2 ffn, in]`, dense or quantized): one product, then
    /// `silu_mul` of its halves.
    Concat(Linear),
    /// Quantized rows interleaved 8 gate / 8 up per tile of 16
    /// (`QuantTensor::interleave_halves`): the GEMV computes the gate in its epilogue, one launch
    /// for both; where the GEMM is the faster kernel (long prompts) it writes both halves and
    /// `silu_mul` reads them as strided views.
    Interleaved(QuantTensor),
}

impl GateUp {
    /// Bytes of the weights on the device.
    pub(crate) fn device_bytes(&self) -> usize {
        match self {
            GateUp::Concat(l) => l.device_bytes(),
            GateUp::Interleaved(w) => w.shape()[0] * w.row_bytes(),
        }
    }

    /// `x [M, in] -> [M, ffn]`, and whether the gate ran inside the projection's launch.
    #[cfg(test)]
    pub(crate) fn forward(&self, x: &Tensor) -> Result<(Tensor, bool)> {
        self.forward_normed(x, None)
    }

    /// `rms_norm(x) [M, in] -> [M, ffn]` (`rms` absent: `x`), and whether the gate ran inside
    /// the projection's launch.
    pub(crate) fn forward_normed(&self, x: &Tensor, rms: Option<RmsNorm<'_>>) -> Result<(Tensor, bool)> {
        match self {
            GateUp::Concat(l) => {
                let gu = l.forward_normed(x, rms, Epilogue::default())?;
                let ffn = gu.shape()[1] / 2;
                Ok((ew::silu_mul(&gu.narrow(1, 0, ffn)?, &gu.narrow(1, ffn, ffn)?)?, false))
            }
            GateUp::Interleaved(w) => {
                let (m, n, k) = (x.shape()[0], w.shape()[0], w.shape()[1]);
                if qmatmul::choose_kernel(m, n, k, x.dtype()) == QKernel::Gemv {
                    let opts = QMatmulOptions { swiglu: true, rms_norm: rms, ..Default::default() };
                    return Ok((qmatmul::qmatmul(x, w, &opts)?, true));
                }
                // [M, n] in tiles of 8 gate then 8 up columns.
                let gu = qmatmul::qmatmul(x, w, &QMatmulOptions { rms_norm: rms, ..Default::default() })?.unflatten(1, &[n / 16, 2, 8])?;
                let act = ew::silu_mul(&gu.narrow(2, 0, 1)?, &gu.narrow(2, 1, 1)?)?;
                Ok((act.reshape(&[m, n / 2])?, false))
            }
        }
    }
}

/// Rows up to which projections use the 16-row tile.
const SKINNY_ROWS: usize = 64;

/// The GEMM configuration for `x [m, k] W^T [k, n]`: the op's chooser, except that
/// `16 < m <= 64` (short prompts, small batches) also gets the 16-row kernel the chooser gives
/// 16 rows (the decode GEMV, W streamed once per 16 rows): the 128-row tile would compute up to
/// 8x the rows needed, which is what the emulator spends its time on (a 40-token prefill GEMM
/// ran 1.3x faster on the 16-row tile; on MI300X 16-row blocks also spread such products over
/// more CUs).
fn config_for(dtype: DType, m: usize, n: usize, k: usize) -> Option<GemmConfig> {
    (m > 16 && m <= SKINNY_ROWS).then(|| gemm::choose_config(dtype, 1, 16, n, k))
}

/// Host f32 values as a device tensor of `dtype` (rounded to nearest even).
pub(crate) fn upload(device: &Device, values: &[f32], shape: &[usize], dtype: DType) -> Result<Tensor> {
    Ok(match dtype {
        DType::F32 => Tensor::from_slice(device, values, shape)?,
        DType::Bf16 => Tensor::from_slice(device, &values.iter().map(|&v| half::bf16::from_f32(v)).collect::<Vec<_>>(), shape)?,
        DType::F16 => Tensor::from_slice(device, &values.iter().map(|&v| half::f16::from_f32(v)).collect::<Vec<_>>(), shape)?,
        d => {
            return Err(crate::Error::InvalidArgument(format!("activation dtype {d} (f32, bf16 or f16)")));
        }
    })
}

/// A device tensor of f32, bf16 or f16 as host f32 values.
pub(crate) fn download(t: &Tensor) -> Result<Vec<f32>> {
    Ok(match t.dtype() {
        DType::F32 => t.to_vec::<f32>()?,
        DType::Bf16 => t.to_vec::<half::bf16>()?.into_iter().map(half::bf16::to_f32).collect(),
        DType::F16 => t.to_vec::<half::f16>()?.into_iter().map(half::f16::to_f32).collect(),
        d => return Err(crate::Error::InvalidArgument(format!("cannot read {d} values as floats"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocm::quant::quantize;

    /// The interleaved gate/up projection against the concatenated one, on both of its paths:
    /// the GEMV's fused gate (one decode row, a short prompt) within the f16 rounding of the
    /// concatenated path's halves, and the GEMM's (a long prompt) bit for bit, as it computes
    /// every column as the concatenated product does and gates the same rounded halves.
    #[test]
    fn interleaved_gate_up_matches_the_concatenated_projection() {
        let dev = Device::new().unwrap();
        let (ffn, k) = (512, 64);
        let vals = |seed: usize| -> Vec<f32> { (0..ffn * k).map(|i| (((i * 7919 + seed) % 2001) as f32 / 1000.0 - 1.0) * 0.2).collect() };
        let (gate, up) = (quantize(QuantFormat::Q8_0, &vals(1)).unwrap(), quantize(QuantFormat::Q8_0, &vals(2)).unwrap());
        let both = QuantTensor::interleave_halves(QuantFormat::Q8_0, k, &gate, &up).unwrap();
        let fused = GateUp::Interleaved(QuantTensor::from_blocks(&dev, QuantFormat::Q8_0, [2 * ffn, k], &both).unwrap());
        let concat = GateUp::Concat(Linear::quantized(&dev, QuantFormat::Q8_0, &[gate, up].concat(), 2 * ffn, k).unwrap());
        assert_eq!(fused.device_bytes(), concat.device_bytes());
        for m in [1usize, 20, 300] {
            let x: Vec<f32> = (0..m * k).map(|i| ((i * 31 % 17) as f32 - 8.0) / 8.0).collect();
            let x = upload(&dev, &x, &[m, k], DType::F16).unwrap();
            let (a, in_launch) = fused.forward(&x).unwrap();
            let (b, separate) = concat.forward(&x).unwrap();
            assert!(!separate);
            assert_eq!(in_launch, m <= 256, "m = {m}: the GEMV takes the gate, the GEMM does not");
            assert_eq!(a.shape(), &[m, ffn]);
            let (a, b) = (download(&a).unwrap(), download(&b).unwrap());
            for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                if in_launch {
                    // Gate from f32 products against one from f16-rounded halves: a few f16 ulps.
                    assert!((p - q).abs() <= 4e-3 * (1.0 + q.abs()), "m = {m}: [{}][{}] {p} against {q}", i / ffn, i % ffn);
                } else {
                    assert_eq!(p.to_bits(), q.to_bits(), "m = {m}: [{}][{}]", i / ffn, i % ffn);
                }
            }
        }
    }
}
