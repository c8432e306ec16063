//! The one lowering layer between ops and launches: [`Operands`] turns the tensors and buffers
//! a launch reads and writes into typed kernel pointers, after checking that they belong to the
//! op's device, have the dtype the kernel reads and fit its 32-bit limits, and keeps their
//! memory alive until the stream has passed the launch. Every op launches through it.

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::runtime::buffer::{Buffer, RawBuffer};
use crate::runtime::device::Device;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::Tensor;
use ferrocm_device::abi::{DevPtr, Kernel, KernelArgs};
use std::sync::Arc;

/// `v` as a 32-bit kernel argument, or [`Error::Unsupported`] naming the op and the quantity:
/// the one place a size becomes a `u32`.
///
/// # Errors
/// [`Error::Unsupported`] for `v >= 2^32`.
pub fn u32_of(op: &'static str, what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::Unsupported { op, what: format!("{what} = {v} (kernels take 32-bit sizes)") })
}

/// The operands of one op's launches, checked and lowered to kernel pointers.
///
/// ```no_run
/// use ferrocm::{Device, LaunchConfig, Operands, Tensor, abi::smoke::{SAXPY_F32, STREAM_BLOCK, SaxpyArgs}};
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0f32, 2.0], &[2])?;
/// let y = Tensor::from_slice(&dev, &[10.0f32, 20.0], &[2])?;
/// let mut ops = Operands::new("my_saxpy", &dev);
/// let args = SaxpyArgs { x: ops.input::<f32>("x", &x)?, y: ops.output::<f32>("y", &y)?, a: 2.0, n: 2 };
/// // SAFETY: the kernel touches x[0..2] and y[0..2], both that long.
/// unsafe { ops.launch(SAXPY_F32, LaunchConfig::for_items(2, STREAM_BLOCK), &args)? };
/// assert_eq!(y.to_vec::<f32>()?, vec![12.0, 24.0]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
pub struct Operands<'d> {
    op: &'static str,
    device: &'d Device,
    held: Vec<Arc<RawBuffer>>,
}

impl<'d> Operands<'d> {
    /// The operands of op `op` (named in errors) running on `device`.
    pub fn new(op: &'static str, device: &'d Device) -> Operands<'d> {
        Operands { op, device, held: Vec::new() }
    }

    /// The op's device.
    pub fn device(&self) -> &'d Device {
        self.device
    }

    /// The op's name.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// [`Error::DeviceMismatch`] naming `operand` unless `t` lives on the op's device.
    ///
    /// # Errors
    /// As described.
    pub fn check_device(&self, operand: &'static str, t: &Tensor) -> Result<()> {
        if !t.device().same_device(self.device) {
            return Err(Error::DeviceMismatch { op: self.op, operand });
        }
        Ok(())
    }

    /// [`Error::DTypeMismatch`] naming `operand` unless `t` is of `dtype`.
    ///
    /// # Errors
    /// As described.
    pub fn check_dtype(&self, operand: &'static str, t: &Tensor, dtype: DType) -> Result<()> {
        if t.dtype() != dtype {
            return Err(Error::DTypeMismatch { op: self.op, what: operand, got: t.dtype(), expected: dtype.to_string() });
        }
        Ok(())
    }

    fn hold(&mut self, raw: &Arc<RawBuffer>) {
        if !self.held.iter().any(|h| Arc::ptr_eq(h, raw)) {
            self.held.push(raw.clone());
        }
    }

    fn lower(&mut self, operand: &'static str, t: &Tensor) -> Result<u64> {
        self.check_device(operand, t)?;
        self.hold(t.storage());
        Ok(t.addr())
    }

    /// A tensor the launch reads, as a pointer to its first element (typed `T`, which must be
    /// its dtype).
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`], [`Error::DTypeMismatch`].
    pub fn input<T: Element>(&mut self, operand: &'static str, t: &Tensor) -> Result<DevPtr<T>> {
        self.check_dtype(operand, t, T::DTYPE)?;
        Ok(DevPtr::from_addr(self.lower(operand, t)?))
    }

    /// A tensor the launch writes; like [`Operands::input`], and refused when the view repeats
    /// elements (a broadcast, stride-0 axis), which would make the kernel's writes race.
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`], [`Error::DTypeMismatch`], [`Error::Layout`].
    pub fn output<T: Element>(&mut self, operand: &'static str, t: &Tensor) -> Result<DevPtr<T>> {
        self.check_dtype(operand, t, T::DTYPE)?;
        self.check_writable(operand, t)?;
        Ok(DevPtr::from_addr(self.lower(operand, t)?))
    }

    /// A tensor of any dtype the launch reads, as a byte pointer (for kernels generic over the
    /// element type, which get the type as an argument).
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`].
    pub fn input_bytes(&mut self, operand: &'static str, t: &Tensor) -> Result<DevPtr<u8>> {
        Ok(DevPtr::from_addr(self.lower(operand, t)?))
    }

    /// A tensor of any dtype the launch writes, as a byte pointer.
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`], [`Error::Layout`].
    pub fn output_bytes(&mut self, operand: &'static str, t: &Tensor) -> Result<DevPtr<u8>> {
        self.check_writable(operand, t)?;
        Ok(DevPtr::from_addr(self.lower(operand, t)?))
    }

    /// [`Operands::input`] for an optional operand: the null pointer (which kernels read as
    /// "absent") for `None`.
    ///
    /// # Errors
    /// As [`Operands::input`].
    pub fn optional_input<T: Element>(&mut self, operand: &'static str, t: Option<&Tensor>) -> Result<DevPtr<T>> {
        t.map_or(Ok(DevPtr::NULL), |t| self.input(operand, t))
    }

    /// A buffer the launch reads or writes (buffers are plain element arrays: no view to check).
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`].
    pub fn buffer<T: bytemuck::Pod>(&mut self, operand: &'static str, b: &Buffer<T>) -> Result<DevPtr<T>> {
        if !b.device().same_device(self.device) {
            return Err(Error::DeviceMismatch { op: self.op, operand });
        }
        self.hold(b.raw());
        Ok(b.as_ptr())
    }

    fn check_writable(&self, operand: &'static str, t: &Tensor) -> Result<()> {
        if t.shape().iter().zip(t.strides()).any(|(&d, &s)| d > 1 && s == 0) {
            return Err(Error::Layout {
                op: self.op,
                message: format!("{operand} is a broadcast view (a stride-0 axis); it cannot be written"),
            });
        }
        Ok(())
    }

    /// `v` as a 32-bit kernel argument (see [`u32_of`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`].
    pub fn u32(&self, what: &str, v: usize) -> Result<u32> {
        u32_of(self.op, what, v)
    }

    /// Launches `kernel` on the current stream of the device; every operand lowered so far is
    /// kept alive until the stream has passed the launch. Can be called several times (an op's
    /// passes share its operands).
    ///
    /// # Safety
    /// Every pointer in `args` comes from this `Operands` (or is null where the kernel allows
    /// it), and the kernel's accesses for these arguments and this launch shape stay inside
    /// those operands.
    ///
    /// # Errors
    /// The launch validation errors of [`Device::validate_launch`]; the backend's.
    pub unsafe fn launch<A: KernelArgs + 'static>(&self, kernel: Kernel<A>, cfg: LaunchConfig, args: &A) -> Result<()> {
        let stream = self.device.current_core();
        // SAFETY: the caller's contract; the operands are held.
        unsafe { self.device.launch_on(&stream, kernel, cfg, args, self.held.clone()) }
    }
}
