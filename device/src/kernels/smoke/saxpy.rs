//! `y = a*x + y` in f32.

use crate::abi::smoke::SaxpyArgs;
use crate::dsl::ids::global_id_x;

/// One element per work-item: the product is rounded before the add (no contraction to FMA), so
/// the result equals the CPU reference bit for bit.
#[inline(always)]
pub fn saxpy_f32(args: SaxpyArgs) {
    let i = global_id_x();
    if i < args.n {
        let i = i as usize;
        // SAFETY: i < n; x and y hold n elements (host-checked).
        unsafe {
            let v = args.a * args.x.add(i).read() + args.y.add(i).read();
            args.y.add(i).write(v);
        }
    }
}
