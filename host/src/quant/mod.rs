//! GGML block-quantized weights: the formats ([`QuantFormat`]), weights on a device
//! ([`QuantTensor`], in ferrocm's device layout), and a CPU quantizer for test data
//! ([`quantize`]). Their f64 dequantization is [`reference::quant`](crate::reference::quant);
//! the device ops on them are [`ops::qmatmul`](crate::ops::qmatmul).

mod format;
mod layout;
mod quantize;
mod tensor;

pub use format::{QuantFormat, k_scale_min};
pub use quantize::quantize;
pub use tensor::QuantTensor;
