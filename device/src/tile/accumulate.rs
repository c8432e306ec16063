//! The plain consumer of a K loop: every K-tile's fragments multiplied into one register tile.

use super::lds::LdsTile;
use super::mma::MmaInput;
use super::pipeline::Consumer;
use super::reg::{RegTile, Source};
use core::marker::PhantomData;

/// A wave's accumulators `acc` over the K loop, for inputs `E`; its fragments come from rows
/// `a_row..` of A's LDS tile and `b_row..` of B's.
pub struct Accumulate<E: MmaInput, W: RegTile> {
    /// The accumulators.
    pub acc: W,
    frags: W::Frags,
    a_row: usize,
    b_row: usize,
    lane: usize,
    _e: PhantomData<E>,
}

impl<E: MmaInput, W: RegTile> Accumulate<E, W> {
    /// Zeroed accumulators for the wave whose output block starts at A row `a_row` and B row
    /// `b_row` of the LDS tiles.
    #[inline(always)]
    pub fn new(a_row: usize, b_row: usize, lane: usize) -> Self {
        Accumulate { acc: W::zero(), frags: W::frags(), a_row, b_row, lane, _e: PhantomData }
    }
}

impl<E: MmaInput, W: RegTile> Consumer for Accumulate<E, W> {
    const IGNORES_LAST: bool = true;

    #[inline(always)]
    unsafe fn read(&mut self, g: usize, slot: usize, a: LdsTile, b: LdsTile, stage: usize) {
        let src = Source { a, b, stage, a_row: self.a_row, b_row: self.b_row, lane: self.lane };
        // SAFETY: caller.
        unsafe { W::read(&mut self.frags, g, slot, src) };
    }

    #[inline(always)]
    fn mma(&mut self, g: usize, slot: usize, _j: usize, _kt: u32, _last: bool) {
        self.acc.mma::<E>(&self.frags, g, slot);
    }
}
