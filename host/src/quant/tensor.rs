//! [`QuantTensor`]: a quantized weight matrix on a device, as its raw GGML blocks.

use super::QuantFormat;
use crate::error::{Error, Result};
use crate::runtime::buffer::Buffer;
use crate::runtime::device::Device;

/// A weight matrix `[N, K]` (N rows of K weights, K contiguous, as GGUF stores `[K, N]` in its
/// fastest-first notation) kept in a GGML block format on the device: row `n` is
/// `K / block_elems` blocks, rows back to back.
///
/// Get one with [`QuantTensor::from_blocks`] (raw block bytes, e.g. straight from a GGUF file's
/// tensor data) or from values with [`quantize`](super::quantize) first.
///
/// ```no_run
/// use ferrocm::{Device, quant::{QuantFormat, QuantTensor, quantize}};
/// let dev = Device::new()?;
/// let w: Vec<f32> = (0..64 * 128).map(|i| (i % 17) as f32 / 8.0 - 1.0).collect();
/// let blocks = quantize(QuantFormat::Q8_0, &w)?;
/// let q = QuantTensor::from_blocks(&dev, QuantFormat::Q8_0, [64, 128], &blocks)?;
/// assert_eq!(q.shape(), [64, 128]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
pub struct QuantTensor {
    format: QuantFormat,
    shape: [usize; 2],
    blocks: Buffer<u8>,
}

impl std::fmt::Debug for QuantTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QuantTensor<{}>{:?}", self.format, self.shape)
    }
}

impl QuantTensor {
    /// Uploads `bytes`, the blocks of a `[n, k]` matrix in `format`.
    ///
    /// # Errors
    /// [`Error::Shape`] when `k` is not a multiple of the format's block or `bytes` is not
    /// `n` rows of `k` weights; allocation errors.
    pub fn from_blocks(device: &Device, format: QuantFormat, shape: [usize; 2], bytes: &[u8]) -> Result<QuantTensor> {
        let [n, k] = shape;
        let row = format.row_bytes(k)?;
        let want = n.checked_mul(row).ok_or(Error::AllocationOverflow { elements: n, elem_size: row })?;
        if bytes.len() != want {
            return Err(Error::Shape {
                op: "quantized tensor",
                message: format!("{} bytes given; {n} rows of {k} {format} weights are {want} bytes", bytes.len()),
            });
        }
        Ok(QuantTensor { format, shape, blocks: device.from_slice(bytes)? })
    }

    /// The block format.
    pub fn format(&self) -> QuantFormat {
        self.format
    }

    /// `[N, K]`.
    pub fn shape(&self) -> [usize; 2] {
        self.shape
    }

    /// Bytes per row of K weights.
    pub fn row_bytes(&self) -> usize {
        self.blocks.len() / self.shape[0].max(1)
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.blocks.device()
    }

    /// The raw blocks on the device.
    pub fn blocks(&self) -> &Buffer<u8> {
        &self.blocks
    }

    /// The raw blocks copied back to the host.
    ///
    /// # Errors
    /// The backend's error.
    pub fn to_host_blocks(&self) -> Result<Vec<u8>> {
        self.blocks.to_vec()
    }
}
