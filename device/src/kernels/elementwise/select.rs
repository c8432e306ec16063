//! `out = cond ? a : b` with numpy broadcasting. Values are selected as bits (no conversion), so
//! one kernel serves every dtype of a width; the condition is i8 or i32 (`type_code`), nonzero
//! meaning true.

use super::nary::{EltFn, Inputs, run};
use crate::abi::elementwise::{EltArgs, type_code};
use crate::dsl::dtype::Element;

/// The function of `where`: raw bits of input 1 where input 0 is nonzero, else of input 2.
struct Select;

impl EltFn for Select {
    #[inline(always)]
    fn apply<const N: usize>(&self, x: &Inputs<N>) -> [u32; N] {
        let mut y = [0u32; N];
        crate::unroll!(k < N => {
            y[k] = if x[0][k] != 0 { x[1][k] } else { x[2][k] };
        });
        y
    }
}

/// `cond ? a : b` with condition type `C`, `EPL` elements per work-item in groups of `E`.
#[inline(always)]
fn select<C: Element, V: Element, const EPL: usize, const E: usize>(args: &EltArgs) {
    run::<EPL, E, 3, C, V, V, V, _>(args, &Select);
}

/// The `where` kernel for values of `V`'s width (4, 2 or 1 bytes; 1-byte values travel as
/// `i8` bits). Elements per work-item: 16 over the narrowest
/// operand's bytes (an i8 condition: 16); group size: 16 over the widest's (see `nary`).
#[inline(always)]
pub fn where_<V: Element>(args: EltArgs) {
    match (args.type_code, V::BYTES) {
        (type_code::I8, 4) => select::<i8, V, 16, 4>(&args),
        (type_code::I8, 2) => select::<i8, V, 16, 8>(&args),
        (type_code::I8, _) => select::<i8, V, 16, 16>(&args),
        (type_code::I32, 4) => select::<i32, V, 4, 4>(&args),
        (type_code::I32, 2) => select::<i32, V, 8, 4>(&args),
        (type_code::I32, _) => select::<i32, V, 16, 4>(&args),
        // The host only passes the codes above.
        _ => {}
    }
}
