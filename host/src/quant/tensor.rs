//! [`QuantTensor`]: a quantized weight matrix on a device, its GGML blocks in ferrocm's device
//! layout.

use super::{QuantFormat, layout};
use crate::error::{Error, Result};
use crate::runtime::buffer::Buffer;
use crate::runtime::device::Device;

/// A weight matrix `[N, K]` (N rows of K weights, K contiguous, as GGUF stores `[K, N]` in its
/// fastest-first notation) kept in a GGML block format on the device.
///
/// The device holds the blocks' bytes permuted into ferrocm's device layout
/// ([`abi::quant`](crate::abi::quant): tiles of 16 rows, each field of the blocks in its own plane
/// of 16-byte pieces), the same bytes per row as GGML's (plus zero rows up to a multiple of 16),
/// so that the kernels read every byte once in full 128-bit, full-line accesses whatever the
/// block size. The permutation runs on the host when the tensor is made;
/// [`QuantTensor::to_host_blocks`] gives GGML's bytes back.
///
/// Get one with [`QuantTensor::from_blocks`] (GGML block bytes, e.g. straight from a GGUF file's
/// tensor data) or from values with [`quantize`](super::quantize) first. Use it with
/// [`ops::qmatmul`](crate::ops::qmatmul).
///
/// ```no_run
/// use ferrocm::{Device, quant::{QuantFormat, QuantTensor, quantize}};
/// let dev = Device::new()?;
/// let w: Vec<f32> = (0..64 * 128).map(|i| (i % 17) as f32 / 8.0 - 1.0).collect();
/// let blocks = quantize(QuantFormat::Q8_0, &w)?;
/// let q = QuantTensor::from_blocks(&dev, QuantFormat::Q8_0, [64, 128], &blocks)?;
/// assert_eq!(q.shape(), [64, 128]);
/// assert_eq!(q.to_host_blocks()?, blocks);
/// # Ok::<(), ferrocm::Error>(())
/// ```
pub struct QuantTensor {
    format: QuantFormat,
    shape: [usize; 2],
    data: Buffer<u8>,
}

impl std::fmt::Debug for QuantTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QuantTensor<{}>{:?}", self.format, self.shape)
    }
}

impl QuantTensor {
    /// Uploads `bytes`, the GGML blocks of a `[n, k]` matrix in `format` (row after row).
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
        // The padded size cannot overflow: it is at most 15 rows more than `want`.
        n.div_ceil(16).checked_mul(16 * row).ok_or(Error::AllocationOverflow { elements: n, elem_size: row })?;
        let dev_bytes = layout::to_device(format, n, k, bytes);
        Ok(QuantTensor { format, shape, data: device.from_slice(&dev_bytes)? })
    }

    /// The GGML rows of a gate matrix and an up matrix (`[f, k]` each, in `format`) in the order
    /// [`QMatmulOptions::swiglu`](crate::ops::qmatmul::QMatmulOptions::swiglu) reads them:
    /// per tile of 16 rows, 8 gate rows then the same 8 up rows. Give the result to
    /// [`QuantTensor::from_blocks`] as a `[2 f, k]` matrix.
    ///
    /// ```no_run
    /// use ferrocm::{Device, quant::{QuantFormat, QuantTensor, quantize}};
    /// let dev = Device::new()?;
    /// let gate = quantize(QuantFormat::Q8_0, &vec![0.5f32; 64 * 96])?;   // [64, 96]
    /// let up = quantize(QuantFormat::Q8_0, &vec![0.25f32; 64 * 96])?;
    /// let both = QuantTensor::interleave_halves(QuantFormat::Q8_0, 96, &gate, &up)?;
    /// let w = QuantTensor::from_blocks(&dev, QuantFormat::Q8_0, [128, 96], &both)?;
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Shape`] when `k` is not a multiple of the format's block, or `gate` and `up` are
    /// not the same whole number of rows, a multiple of 8.
    pub fn interleave_halves(format: QuantFormat, k: usize, gate: &[u8], up: &[u8]) -> Result<Vec<u8>> {
        let row = format.row_bytes(k)?;
        if row == 0 || gate.len() != up.len() || gate.len() % (8 * row) != 0 {
            return Err(Error::Shape {
                op: "interleave_halves",
                message: format!(
                    "gate ({} bytes) and up ({} bytes) must be the same multiple of 8 rows of {row} bytes",
                    gate.len(),
                    up.len()
                ),
            });
        }
        let mut out = Vec::with_capacity(2 * gate.len());
        for (g, u) in gate.chunks(8 * row).zip(up.chunks(8 * row)) {
            out.extend_from_slice(g);
            out.extend_from_slice(u);
        }
        Ok(out)
    }

    /// The block format.
    pub fn format(&self) -> QuantFormat {
        self.format
    }

    /// `[N, K]`.
    pub fn shape(&self) -> [usize; 2] {
        self.shape
    }

    /// GGML bytes per row of K weights.
    pub fn row_bytes(&self) -> usize {
        self.format.block_bytes() * (self.shape[1] / self.format.block_elems())
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.data.device()
    }

    /// The device layout's bytes (what the kernels read; see the type's notes).
    pub fn device_bytes(&self) -> &Buffer<u8> {
        &self.data
    }

    /// The GGML blocks, copied back to the host (row after row, as given to
    /// [`QuantTensor::from_blocks`]).
    ///
    /// # Errors
    /// The backend's error.
    pub fn to_host_blocks(&self) -> Result<Vec<u8>> {
        let [n, k] = self.shape;
        Ok(layout::to_ggml(self.format, n, k, &self.data.to_vec()?))
    }
}
