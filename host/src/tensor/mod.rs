//! [`Tensor`]: a shaped, strided view of device memory with a dtype.

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::runtime::buffer::RawBuffer;
use crate::runtime::device::Device;

mod lower;
use ferrocm_device::abi::DevPtr;
pub use lower::{Operands, u32_of};
use std::sync::Arc;

/// An n-dimensional array on a device: dtype, shape, strides (in elements) and an offset into a
/// shared allocation. View operations ([`Tensor::transpose`], [`Tensor::narrow`],
/// [`Tensor::broadcast_to`], [`Tensor::reshape`]) share the allocation; ops produce new tensors.
///
/// Every tensor's shape has a product of its dimensions (zero dimensions counted as 1) that
/// fits in `usize`, checked wherever a shape is made (constructors, [`Tensor::reshape`],
/// [`Tensor::broadcast_to`]); so [`Tensor::numel`] and the product of any subset of the
/// dimensions never overflow.
///
/// ```no_run
/// use ferrocm::{Device, Tensor, DType};
/// let dev = Device::new()?;
/// let t = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
/// assert_eq!(t.shape(), &[2, 3]);
/// let tt = t.transpose(0, 1)?; // a 3x2 view, strides [1, 3]
/// assert_eq!(tt.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    device: Device,
    storage: Arc<RawBuffer>,
    dtype: DType,
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor<{}>{:?} strides {:?} offset {}", self.dtype, self.shape, self.strides, self.offset)
    }
}

/// Row-major (C order) strides of `shape` (a tensor's shape: see [`Tensor`]; for a shape whose
/// size overflows, the strides saturate at `usize::MAX`).
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1].max(1));
    }
    strides
}

/// The element count of `shape`, or [`Error::Shape`] when the product of its dimensions
/// overflows `usize` with zero dimensions counted as 1 (numpy's rule): `[0, 2^40, 2^40]` holds
/// no element but is refused, so that no product of some of a tensor's dimensions (a
/// reduction's outer or inner size, a row length) can overflow either.
pub(crate) fn numel_checked(shape: &[usize]) -> Result<usize> {
    let nonzero = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1)));
    match nonzero {
        Some(n) if !shape.contains(&0) => Ok(n),
        Some(_) => Ok(0),
        None => Err(Error::Shape { op: "tensor", message: format!("shape {shape:?} has more elements than fit in usize") }),
    }
}

/// An empty host vector with room for `n` elements, or [`Error::HostOutOfMemory`] instead of
/// aborting when the host cannot hold them (a broadcast view can have far more elements than
/// memory).
fn host_vec_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::HostOutOfMemory { bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64) })?;
    Ok(v)
}

/// `n` zeroed host elements, fallibly (as [`host_vec_with_capacity`]).
fn host_vec<T: Element>(n: usize) -> Result<Vec<T>> {
    let mut v = host_vec_with_capacity(n)?;
    v.resize(n, T::zeroed());
    Ok(v)
}

impl Tensor {
    /// A contiguous tensor of zeros.
    ///
    /// # Errors
    /// Overflowing shapes, allocation errors.
    pub fn zeros(device: &Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let t = Tensor::empty(device, shape, dtype)?;
        device.memset(&t.storage, 0, t.storage.size_bytes())?;
        Ok(t)
    }

    /// A contiguous tensor with unspecified contents (every byte pattern is a valid value, so
    /// reading it is safe, just meaningless).
    ///
    /// # Errors
    /// Overflowing shapes, allocation errors.
    pub fn empty(device: &Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let n = numel_checked(shape)?;
        let bytes = n.checked_mul(dtype.size()).ok_or(Error::AllocationOverflow { elements: n, elem_size: dtype.size() })?;
        Ok(Tensor {
            device: device.clone(),
            storage: Arc::new(device.alloc_raw(bytes as u64)?),
            dtype,
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        })
    }

    /// A contiguous tensor holding `data` with `shape`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `data.len()` is not the shape's element count.
    pub fn from_slice<T: Element>(device: &Device, data: &[T], shape: &[usize]) -> Result<Tensor> {
        let n = numel_checked(shape)?;
        if n != data.len() {
            return Err(Error::LengthMismatch { expected: n, actual: data.len() });
        }
        let t = Tensor::empty(device, shape, T::DTYPE)?;
        device.write_bytes(&t.storage, 0, bytemuck::cast_slice(data))?;
        Ok(t)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Strides in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }
    /// Offset of the first element in elements from the start of the allocation.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements (cannot overflow: see [`Tensor`]).
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }
    /// The allocation under the view (shared by every view of it).
    pub fn storage(&self) -> &Arc<RawBuffer> {
        &self.storage
    }

    /// True when the elements are laid out row-major without gaps (size-1 dims ignored). A
    /// tensor without elements is contiguous, whatever its strides: there is nothing to lay out
    /// (`[2, 0]` used to report false, so it could not be reshaped).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    /// The device address of the first element (for alignment decisions; kernels get their
    /// pointers from [`Operands`], which also keeps the memory alive).
    pub fn addr(&self) -> u64 {
        self.storage.addr() + (self.offset * self.dtype.size()) as u64
    }

    /// The address of the first element, typed; checks the dtype. For raw launches, whose
    /// caller must keep the tensor alive until the stream has passed them; ops use [`Operands`].
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] when `T` is not the tensor's dtype.
    pub fn as_ptr<T: Element>(&self) -> Result<DevPtr<T>> {
        self.expect_dtype::<T>("as_ptr")?;
        Ok(DevPtr::from_addr(self.addr()))
    }

    pub(crate) fn expect_dtype<T: Element>(&self, op: &'static str) -> Result<()> {
        if self.dtype != T::DTYPE {
            return Err(Error::DTypeMismatch { op, what: "tensor", got: self.dtype, expected: T::DTYPE.to_string() });
        }
        Ok(())
    }

    /// Copies the elements to the host in row-major order (gathering strided views), after the
    /// work queued on the current stream (synchronous).
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`]; [`Error::HostOutOfMemory`] when the host cannot hold the
    /// elements (a broadcast view of a few bytes can have 2^40 of them); the backend's error.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.expect_dtype::<T>("to_vec")?;
        let n = self.numel();
        if n == 0 {
            return Ok(vec![]);
        }
        let esz = self.dtype.size();
        if self.is_contiguous() {
            let mut v = host_vec::<T>(n)?;
            self.device.read_bytes(&self.storage, (self.offset * esz) as u64, bytemuck::cast_slice_mut(&mut v))?;
            return Ok(v);
        }
        // Read the span the view touches once, then gather on the host. The span lies inside
        // the storage (views never step outside it), so its sum does not overflow.
        let span = 1 + self.shape.iter().zip(&self.strides).map(|(&d, &s)| (d - 1) * s).sum::<usize>();
        let mut all = host_vec::<T>(span)?;
        self.device.read_bytes(&self.storage, (self.offset * esz) as u64, bytemuck::cast_slice_mut(&mut all))?;
        let mut out = host_vec_with_capacity(n)?;
        out.extend(self.element_offsets().map(|o| all[o]));
        Ok(out)
    }

    /// The storage offset (relative to `offset`) of every element in row-major order.
    pub fn element_offsets(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.numel();
        let mut idx = vec![0usize; self.rank()];
        (0..n).map(move |k| {
            let off = idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
            if k + 1 < n {
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < self.shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
            off
        })
    }

    fn check_axis(&self, op: &'static str, axis: usize) -> Result<()> {
        if axis >= self.rank() {
            return Err(Error::InvalidArgument { op, message: format!("axis {axis} out of range for rank {}", self.rank()) });
        }
        Ok(())
    }

    /// A view with axes `a` and `b` swapped.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an axis out of range.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Tensor> {
        self.check_axis("transpose", a)?;
        self.check_axis("transpose", b)?;
        let mut t = self.clone();
        t.shape.swap(a, b);
        t.strides.swap(a, b);
        Ok(t)
    }

    /// A view of `len` entries of `axis` starting at `start`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an axis or range out of bounds.
    pub fn narrow(&self, axis: usize, start: usize, len: usize) -> Result<Tensor> {
        self.check_axis("narrow", axis)?;
        if start.checked_add(len).is_none_or(|e| e > self.shape[axis]) {
            // Not `start + len` in the message: it is what overflowed.
            return Err(Error::InvalidArgument {
                op: "narrow",
                message: format!("{len} entries from {start} are out of bounds for axis {axis} of size {}", self.shape[axis]),
            });
        }
        let mut t = self.clone();
        t.offset += start * self.strides[axis];
        t.shape[axis] = len;
        Ok(t)
    }

    /// A view with a new axis of size 1 at `axis` (`0..=rank`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an axis past the rank.
    pub fn unsqueeze(&self, axis: usize) -> Result<Tensor> {
        if axis > self.rank() {
            return Err(Error::InvalidArgument { op: "unsqueeze", message: format!("axis {axis} out of range for rank {}", self.rank()) });
        }
        let mut t = self.clone();
        // A size-1 axis is never stepped along; give it the stride a contiguous layout would.
        let stride = if axis == self.rank() { 1 } else { self.shape[axis].saturating_mul(self.strides[axis]) };
        t.shape.insert(axis, 1);
        t.strides.insert(axis, stride);
        Ok(t)
    }

    /// A view without the size-1 axis `axis`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an axis out of range or of another size.
    pub fn squeeze(&self, axis: usize) -> Result<Tensor> {
        self.check_axis("squeeze", axis)?;
        if self.shape[axis] != 1 {
            return Err(Error::InvalidArgument { op: "squeeze", message: format!("axis {axis} has size {}, not 1", self.shape[axis]) });
        }
        let mut t = self.clone();
        t.shape.remove(axis);
        t.strides.remove(axis);
        Ok(t)
    }

    /// A view broadcast to `shape` (numpy rules: align trailing axes; size-1 axes stretch with
    /// stride 0; new leading axes have stride 0).
    ///
    /// # Errors
    /// [`Error::Shape`] when the shapes are not compatible or `shape`'s size overflows `usize`
    /// (`[2^32, 2^32]`: its element count wrapped to 0, and `sum` of it returned 0).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        numel_checked(shape)?;
        if shape.len() < self.rank() {
            return Err(Error::Shape { op: "broadcast_to", message: format!("cannot broadcast {:?} to {shape:?}", self.shape) });
        }
        let lead = shape.len() - self.rank();
        let mut strides = vec![0; shape.len()];
        for (i, &d) in shape.iter().enumerate().skip(lead) {
            let (sd, ss) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if sd == d {
                ss
            } else if sd == 1 {
                0
            } else {
                return Err(Error::Shape { op: "broadcast_to", message: format!("cannot broadcast {:?} to {shape:?}", self.shape) });
            };
        }
        Ok(Tensor {
            device: self.device.clone(),
            storage: self.storage.clone(),
            dtype: self.dtype,
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// A contiguous tensor with the same elements: `self` (sharing storage) if already
    /// contiguous, else a device-side copy. See [`ops::layout::contiguous`](crate::ops::layout::contiguous).
    ///
    /// # Errors
    /// As [`ops::layout::contiguous`](crate::ops::layout::contiguous).
    pub fn contiguous(&self) -> Result<Tensor> {
        crate::ops::layout::contiguous(self)
    }

    /// The same elements with another shape; the tensor must be contiguous.
    ///
    /// # Errors
    /// [`Error::Shape`] for a different element count, [`Error::Layout`] for a strided view.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if numel_checked(shape)? != self.numel() {
            return Err(Error::Shape { op: "reshape", message: format!("{:?} and {shape:?} differ in element count", self.shape) });
        }
        if !self.is_contiguous() {
            return Err(Error::Layout { op: "reshape", message: "a strided view cannot be reshaped; make it contiguous first".into() });
        }
        Ok(Tensor {
            device: self.device.clone(),
            storage: self.storage.clone(),
            dtype: self.dtype,
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: self.offset,
        })
    }

    /// A view with axis `axis` split into `sizes` (their product must be its size), whatever
    /// the strides: the new axes step through the old one's elements row-major. Unlike
    /// [`Tensor::reshape`] this never needs a contiguous tensor, so a strided view (a narrowed
    /// head range of a fused QKV output, say) can be regrouped without a copy.
    ///
    /// ```no_run
    /// use ferrocm::{Device, Tensor, DType};
    /// let dev = Device::new()?;
    /// let qkv = Tensor::zeros(&dev, &[5, 12, 64], DType::F32)?;  // [tokens, heads, head_dim]
    /// let q = qkv.narrow(1, 0, 9)?.unflatten(1, &[3, 3])?;         // [5, 3, 3, 64], strided
    /// assert_eq!(q.strides(), &[768, 192, 64, 1]);
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an axis out of range, [`Error::Shape`] when the sizes do
    /// not multiply to the axis' size.
    pub fn unflatten(&self, axis: usize, sizes: &[usize]) -> Result<Tensor> {
        self.check_axis("unflatten", axis)?;
        if product_checked(sizes) != Some(self.shape[axis]) {
            return Err(Error::Shape {
                op: "unflatten",
                message: format!("sizes {sizes:?} do not multiply to axis {axis}'s size {}", self.shape[axis]),
            });
        }
        let mut t = self.clone();
        let inner = contiguous_strides(sizes);
        let stride = self.strides[axis];
        t.shape.splice(axis..=axis, sizes.iter().copied());
        t.strides.splice(axis..=axis, inner.iter().map(|&s| s * stride));
        Ok(t)
    }

    /// A view with axes `start..=end` merged into one (the inverse of [`Tensor::unflatten`]),
    /// without a copy: each merged axis must step exactly over the whole of the next (`stride[i]
    /// == stride[i + 1] * size[i + 1]`; axes of size 1 merge with anything), as in any
    /// contiguous tensor and in a range narrowed on an axis after `end`.
    ///
    /// ```no_run
    /// use ferrocm::{Device, Tensor, DType};
    /// let dev = Device::new()?;
    /// let qkv = Tensor::zeros(&dev, &[4, 2, 15, 64], DType::F32)?; // [batch, tokens, heads, head_dim]
    /// let k = qkv.narrow(2, 9, 3)?.flatten(0, 1)?;                  // [8, 3, 64], strided
    /// assert_eq!(k.strides(), &[960, 64, 1]);
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for axes out of range or `start > end`, [`Error::Layout`] when
    /// the strides do not allow the merge (make the tensor contiguous first).
    pub fn flatten(&self, start: usize, end: usize) -> Result<Tensor> {
        self.check_axis("flatten", end)?;
        if start > end {
            return Err(Error::InvalidArgument { op: "flatten", message: format!("start axis {start} is after end axis {end}") });
        }
        // Walk from the innermost merged axis outwards, tracking the merged axis' stride (that
        // of the innermost non-trivial axis) and the extent it has covered.
        let mut stride = self.strides[end];
        let mut covered = 1usize;
        for i in (start..=end).rev() {
            if self.shape[i] == 1 {
                continue;
            }
            if covered > 1 && self.strides[i] != stride * covered {
                return Err(Error::Layout {
                    op: "flatten",
                    message: format!("axes {start}..={end} of shape {:?} strides {:?} are not one run of memory", self.shape, self.strides),
                });
            }
            if covered == 1 {
                stride = self.strides[i];
            }
            covered *= self.shape[i];
        }
        let mut t = self.clone();
        let size = self.shape[start..=end].iter().product();
        t.shape.splice(start..=end, [size]);
        t.strides.splice(start..=end, [if covered > 1 { stride } else { 1 }]);
        Ok(t)
    }

    /// Copies `src`'s elements into this tensor's (on the device, queued on the current stream):
    /// how a slice of a larger tensor is overwritten in place, such as new positions of a KV
    /// cache (`cache.narrow(0, pos, n)?.copy_from(&k)?`). Both must be contiguous (make a strided
    /// `src` contiguous first), of the same shape, dtype and device. Writes through `&self`, as
    /// every op's output does: views share their storage.
    ///
    /// ```no_run
    /// use ferrocm::{Device, Tensor, DType};
    /// let dev = Device::new()?;
    /// let cache = Tensor::zeros(&dev, &[16, 4], DType::F32)?;
    /// let row = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 4.0], &[1, 4])?;
    /// cache.narrow(0, 3, 1)?.copy_from(&row)?;
    /// assert_eq!(cache.to_vec::<f32>()?[12..16], [1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Shape`], [`Error::DTypeMismatch`], [`Error::DeviceMismatch`], [`Error::Layout`]
    /// (a strided operand, or `src` overlapping this tensor's elements); the backend's error.
    pub fn copy_from(&self, src: &Tensor) -> Result<()> {
        const OP: &str = "Tensor::copy_from";
        if src.shape != self.shape {
            return Err(Error::Shape { op: OP, message: format!("src is {:?}, the destination {:?}", src.shape, self.shape) });
        }
        if src.dtype != self.dtype {
            return Err(Error::DTypeMismatch { op: OP, what: "src", got: src.dtype, expected: self.dtype.to_string() });
        }
        if !src.device.same_device(&self.device) {
            return Err(Error::DeviceMismatch { op: OP, operand: "src" });
        }
        if !self.is_contiguous() || !src.is_contiguous() {
            return Err(Error::Layout { op: OP, message: "both tensors must be contiguous".into() });
        }
        let (esz, n) = (self.dtype.size() as u64, self.numel() as u64);
        let (dst_off, src_off) = (self.offset as u64 * esz, src.offset as u64 * esz);
        // The same storage is fine (a cache shifting its own rows is not, when they overlap):
        // a device copy of overlapping ranges is undefined on HIP.
        if Arc::ptr_eq(&self.storage, &src.storage) && n > 0 && dst_off < src_off + n * esz && src_off < dst_off + n * esz {
            return Err(Error::Layout { op: OP, message: "src overlaps the destination".into() });
        }
        self.device.copy_device(&self.storage, dst_off, &src.storage, src_off, n * esz)
    }
}

/// The product of `sizes`, `None` on overflow.
fn product_checked(sizes: &[usize]) -> Option<usize> {
    sizes.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}
