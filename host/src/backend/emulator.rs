//! The emulator backend: kernels run on the CPU in the gfx942 emulator (`ferrocm-emu`).

use super::{Backend, DeviceInfo, Launch};
use crate::error::{Error, Result};

/// A device backed by the gfx942 emulator.
#[derive(Debug)]
pub struct EmulatorDevice {
    info: DeviceInfo,
}

impl EmulatorDevice {
    /// Loads `code_object` into a new emulated gfx942.
    ///
    /// # Errors
    /// Until the emulator's execution engine lands this always reports the backend unavailable.
    pub(crate) fn open(_code_object: &[u8]) -> Result<EmulatorDevice> {
        Err(Error::BackendUnavailable {
            backend: "emulator",
            reason: "the gfx942 emulator's execution engine is not implemented yet".into(),
        })
    }
}

impl Backend for EmulatorDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn alloc(&self, _bytes: u64) -> Result<u64> {
        unreachable!("an EmulatorDevice cannot be constructed yet")
    }
    fn free(&self, _addr: u64) {}
    fn write(&self, _dst: u64, _src: &[u8]) -> Result<()> {
        unreachable!("an EmulatorDevice cannot be constructed yet")
    }
    fn read(&self, _src: u64, _dst: &mut [u8]) -> Result<()> {
        unreachable!("an EmulatorDevice cannot be constructed yet")
    }
    fn copy(&self, _dst: u64, _src: u64, _bytes: u64) -> Result<()> {
        unreachable!("an EmulatorDevice cannot be constructed yet")
    }
    fn launch(&self, _launch: &Launch<'_>) -> Result<()> {
        unreachable!("an EmulatorDevice cannot be constructed yet")
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn as_emulator(&self) -> Option<&EmulatorDevice> {
        Some(self)
    }
}
