//! The launch plan shared by every n-ary elementwise op: broadcast the inputs to the output
//! shape, merge dimensions, pick the vector or scalar path, pack [`EltArgs`], launch.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::elementwise::{ELT_BLOCK, ELT_MAX_ELEMENTS, ELT_MAX_RANK, EltArgs, FastDivisor, elt_flags};
use ferrocm_device::abi::{DevPtr, Kernel};

/// The numpy broadcast of `shapes`: trailing axes aligned, size-1 axes stretched.
///
/// # Errors
/// [`Error::Shape`] naming the shapes when two sizes differ and neither is 1.
pub(crate) fn broadcast_shapes(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let lead = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[lead + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(Error::Shape {
                    op,
                    message: format!("shapes {shapes:?} do not broadcast (axis {} has sizes {} and {d})", lead + i, *o),
                });
            }
        }
    }
    Ok(out)
}

/// One n-ary launch: the kernel, its inputs (any strides, broadcastable to `out_shape`), and the
/// uniform parameters.
pub(crate) struct Nary<'a> {
    /// The op's name, for errors.
    pub op: &'static str,
    /// The kernel.
    pub kernel: Kernel<EltArgs>,
    /// Elements per work-item of that kernel for these dtypes (its `EPL`).
    pub epl: u32,
    /// The inputs, in kernel order.
    pub inputs: &'a [&'a Tensor],
    /// Their names, for errors.
    pub names: &'a [&'static str],
    /// The output shape (the inputs' broadcast).
    pub out_shape: &'a [usize],
    /// The output dtype.
    pub out_dtype: DType,
    /// `EltArgs::op`.
    pub code: u32,
    /// `EltArgs::type_code`.
    pub type_code: u32,
    /// `EltArgs::alpha`.
    pub alpha: f32,
    /// `EltArgs::beta`.
    pub beta: f32,
}

/// Shape and per-input strides with size-1 dimensions dropped and neighbours merged where every
/// input allows it (the output is contiguous, so it always does), outermost first.
pub(crate) fn merge_dims(shape: &[usize], strides: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut out_shape: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::new(); strides.len()];
    for (d, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        if let Some(last) = out_shape.last_mut() {
            let mergeable = strides.iter().zip(&out_strides).all(|(s, o)| *o.last().unwrap() == s[d] * size);
            if mergeable {
                *last *= size;
                for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                    *o.last_mut().unwrap() = s[d];
                }
                continue;
            }
        }
        out_shape.push(size);
        for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
            o.push(s[d]);
        }
    }
    (out_shape, out_strides)
}

fn unsupported(op: &'static str, what: String) -> Error {
    Error::Unsupported { op, what }
}

/// Runs the launch and returns the new contiguous output.
pub(crate) fn run(l: &Nary<'_>) -> Result<Tensor> {
    let first = l.inputs.first().expect("every elementwise op has an input");
    let dev = first.device();
    let mut ops = Operands::new(l.op, dev);
    for (t, name) in l.inputs.iter().zip(l.names) {
        ops.check_device(name, t)?;
    }
    let out = Tensor::empty(dev, l.out_shape, l.out_dtype)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    if n as u64 > ELT_MAX_ELEMENTS {
        return Err(unsupported(l.op, format!("{n} elements (at most {ELT_MAX_ELEMENTS}: the kernels index with 32 bits)")));
    }
    let views: Vec<Tensor> = l.inputs.iter().map(|t| t.broadcast_to(l.out_shape)).collect::<Result<_>>()?;
    let strides: Vec<Vec<usize>> = views.iter().map(|v| v.strides().to_vec()).collect();
    let (mut shape, mut strides) = merge_dims(l.out_shape, &strides);
    if shape.is_empty() {
        shape.push(1);
        strides.iter_mut().for_each(|s| s.push(0));
    }
    if shape.len() > ELT_MAX_RANK {
        return Err(unsupported(l.op, format!("{} dimensions that do not merge (at most {ELT_MAX_RANK})", shape.len())));
    }
    // Innermost first, as the kernels index.
    shape.reverse();
    strides.iter_mut().for_each(|s| s.reverse());
    let rank = shape.len();

    // Offsets are 32-bit element counts in the kernels.
    for (t, s) in l.inputs.iter().zip(&strides) {
        let span: u128 = shape.iter().zip(s).map(|(&d, &st)| (d as u128 - 1) * st as u128).sum();
        if span > u32::MAX as u128 {
            return Err(unsupported(
                l.op,
                format!("a view of {:?} with strides {:?} spanning more than 2^32 elements", t.shape(), t.strides()),
            ));
        }
    }

    // Path choice (see the device's `nary` module): vector when no group of E elements crosses
    // a row and no input is innermost-contiguous but misaligned (which would turn its wide loads
    // into per-element ones). E is 16 over the widest operand's bytes.
    let widest = views.iter().map(|v| v.dtype().size()).chain([l.out_dtype.size()]).max().unwrap_or(1);
    let group = EltArgs::group_elements(widest as u32) as usize;
    let mut flags = 0u32;
    let mut vector = rank == 1 || shape[0] % group == 0;
    let vec_bits = [elt_flags::IN0_VEC, elt_flags::IN1_VEC, elt_flags::IN2_VEC];
    for (k, (v, s)) in views.iter().zip(&strides).enumerate() {
        let esize = v.dtype().size();
        let addr = v.addr();
        // Each group of this input is one access of `group * esize` bytes (16 for the widest).
        let need = group * esize;
        let aligned = addr.is_multiple_of(need as u64) && s[1..].iter().all(|&st| (st * esize).is_multiple_of(need));
        if s[0] == 1 && aligned {
            flags |= vec_bits[k];
        } else if s[0] == 1 {
            vector = false;
        }
    }
    if vector {
        flags |= elt_flags::VECTOR;
    }

    let mut size = [1u32; ELT_MAX_RANK - 1];
    let mut magic = [0u32; ELT_MAX_RANK - 1];
    let mut shifts = 0u32;
    for d in 0..rank.saturating_sub(1) {
        let fd = FastDivisor::new(shape[d] as u32); // < 2^32: n fits 32 bits
        size[d] = fd.d;
        magic[d] = fd.magic;
        shifts |= fd.shift << (6 * d);
    }
    let mut st = [[0u32; ELT_MAX_RANK]; 3];
    let mut ptr = [DevPtr::<u8>::NULL; 3];
    for (k, (v, s)) in views.iter().zip(&strides).enumerate() {
        for d in 0..rank {
            st[k][d] = s[d] as u32; // bounded by the span check
        }
        ptr[k] = ops.input_bytes(l.names[k], v)?;
    }
    let args = EltArgs {
        in0: ptr[0],
        in1: ptr[1],
        in2: ptr[2],
        out: ops.output_bytes("out", &out)?,
        n: n as u32,
        rank: rank as u32,
        size0: size[0],
        size1: size[1],
        size2: size[2],
        size3: size[3],
        size4: size[4],
        magic0: magic[0],
        magic1: magic[1],
        magic2: magic[2],
        magic3: magic[3],
        magic4: magic[4],
        shifts,
        in0_s0: st[0][0],
        in0_s1: st[0][1],
        in0_s2: st[0][2],
        in0_s3: st[0][3],
        in0_s4: st[0][4],
        in0_s5: st[0][5],
        in1_s0: st[1][0],
        in1_s1: st[1][1],
        in1_s2: st[1][2],
        in1_s3: st[1][3],
        in1_s4: st[1][4],
        in1_s5: st[1][5],
        in2_s0: st[2][0],
        in2_s1: st[2][1],
        in2_s2: st[2][2],
        in2_s3: st[2][3],
        in2_s4: st[2][4],
        in2_s5: st[2][5],
        op: l.code,
        type_code: l.type_code,
        flags,
        alpha: l.alpha,
        beta: l.beta,
    };
    let per_group = ELT_BLOCK as u64 * l.epl as u64;
    let groups = (n as u64).div_ceil(per_group) as u32;
    // SAFETY: every input view lies inside its storage (a Tensor invariant) and its broadcast
    // offsets were bounded above; the output holds n elements of the kernel's output type and
    // is a fresh, 256-byte aligned allocation; INk_VEC flags were set only for aligned inputs.
    unsafe { ops.launch(l.kernel, LaunchConfig::linear(groups, ELT_BLOCK), &args)? };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_follows_numpy() {
        assert_eq!(broadcast_shapes("t", &[&[3, 1, 5], &[4, 1]]).unwrap(), vec![3, 4, 5]);
        assert_eq!(broadcast_shapes("t", &[&[], &[2]]).unwrap(), vec![2]);
        assert!(broadcast_shapes("t", &[&[3], &[4]]).is_err());
    }

    #[test]
    fn merge_dims_merges_where_all_inputs_allow() {
        // [2,3,4] contiguous plus a [4] bias broadcast: the bias blocks merging 4 with 3.
        let (s, st) = merge_dims(&[2, 3, 4], &[vec![12, 4, 1], vec![0, 0, 1]]);
        assert_eq!(s, vec![6, 4]);
        assert_eq!(st, vec![vec![4, 1], vec![0, 1]]);
        // Everything contiguous merges to one dimension; size-1 dimensions vanish.
        let (s, st) = merge_dims(&[2, 1, 3], &[vec![3, 3, 1]]);
        assert_eq!((s, st), (vec![6], vec![vec![1]]));
    }

    #[test]
    fn fast_divisor_is_exact() {
        for d in [1u32, 2, 3, 5, 7, 10, 64, 100, 641, 65535, 1 << 20, 0x7fff_ffff, 0x8000_0001, u32::MAX] {
            let fd = FastDivisor::new(d);
            for n in [0u32, 1, 2, d - 1, d, d.wrapping_add(1), 12345, 0x7fff_ffff, 0x8000_0000, u32::MAX - 1, u32::MAX] {
                assert_eq!(fd.div(n), n / d, "{n} / {d}");
            }
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let d = (x >> (x % 31)).max(1);
            let fd = FastDivisor::new(d);
            assert_eq!(fd.div(x.rotate_left(7)), x.rotate_left(7) / d);
        }
    }
}
