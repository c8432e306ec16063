//! GGML block-quantized weights: the formats ([`QuantFormat`]), weights on a device
//! ([`QuantTensor`]), and a CPU quantizer for test data ([`quantize`]). Their f64 dequantization
//! is [`reference::quant`](crate::reference::quant).

mod format;
mod quantize;
mod tensor;

pub use format::{QuantFormat, k_scale_min};
pub use quantize::quantize;
pub use tensor::QuantTensor;
