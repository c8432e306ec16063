//! Layout ops: making a strided view contiguous on the device.

use crate::error::{Error, Result};
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::contiguous::{
    CONTIGUOUS_BLOCK, COPY_STRIDED_B8, COPY_STRIDED_B16, COPY_STRIDED_B32, COPY_STRIDED_B64, CopyStridedArgs, MAX_RANK,
};

/// Most workgroups a grid-strided layout kernel is launched with (enough to fill the GPU).
const MAX_GRID: u32 = 65536;

/// Shape and strides with size-1 dimensions dropped and mergeable neighbours merged
/// (dimension i and i+1 merge when stride[i] == stride[i+1] * shape[i+1]).
pub(crate) fn simplify(shape: &[usize], strides: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (&d, &s) in shape.iter().zip(strides) {
        if d == 1 {
            continue;
        }
        if let Some(last) = out.last_mut() {
            if last.1 == s * d {
                *last = (last.0 * d, s);
                continue;
            }
        }
        out.push((d, s));
    }
    out.into_iter().unzip()
}

/// A contiguous tensor with `t`'s elements: `t` itself (sharing storage) when already
/// contiguous, else a device-side gather.
///
/// # Errors
/// [`Error::Unsupported`] for views that stay above 6 dimensions after merging; allocation and
/// launch errors.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    gather(t)
}

/// A contiguous tensor with `t`'s elements at a 16-byte aligned address, as kernels reading
/// 128 bits at a time need: `t` itself when it is one, else a device-side copy (a contiguous
/// view at an odd offset included, which [`contiguous`] returns as it is).
///
/// # Errors
/// As [`contiguous`].
pub fn contiguous_aligned(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() && t.addr() % 16 == 0 {
        return Ok(t.clone());
    }
    gather(t)
}

/// `t`'s elements into a fresh (aligned) contiguous tensor.
fn gather(t: &Tensor) -> Result<Tensor> {
    let (shape, strides) = simplify(t.shape(), t.strides());
    if shape.len() > MAX_RANK {
        return Err(Error::Unsupported {
            op: "contiguous",
            what: format!("a view of {} irreducible dimensions (at most {MAX_RANK})", shape.len()),
        });
    }
    let out = Tensor::empty(t.device(), t.shape(), t.dtype())?;
    let n = t.numel() as u64;
    if n == 0 {
        return Ok(out);
    }
    let mut ops = Operands::new("contiguous", t.device());
    let mut sh = [1u32; MAX_RANK];
    let mut st = [0u64; MAX_RANK];
    let lead = MAX_RANK - shape.len();
    for (i, (&d, &s)) in shape.iter().zip(&strides).enumerate() {
        sh[lead + i] = ops.u32("a dimension", d)?;
        st[lead + i] = s as u64;
    }
    let esize = t.dtype().size() as u64;
    let args = CopyStridedArgs {
        src: ops.input_bytes("x", t)?,
        dst: ops.output_bytes("out", &out)?,
        shape0: sh[0],
        shape1: sh[1],
        shape2: sh[2],
        shape3: sh[3],
        shape4: sh[4],
        shape5: sh[5],
        stride0: st[0],
        stride1: st[1],
        stride2: st[2],
        stride3: st[3],
        stride4: st[4],
        stride5: st[5],
        n,
    };
    let blocks = n.div_ceil(CONTIGUOUS_BLOCK as u64).min(MAX_GRID as u64) as u32;
    let cfg = LaunchConfig::linear(blocks, CONTIGUOUS_BLOCK);
    // SAFETY: every index of the view lies inside its storage (a Tensor invariant); dst holds n
    // elements of the same size.
    unsafe {
        match esize {
            1 => ops.launch(COPY_STRIDED_B8, cfg, &args)?,
            2 => ops.launch(COPY_STRIDED_B16, cfg, &args)?,
            4 => ops.launch(COPY_STRIDED_B32, cfg, &args)?,
            _ => ops.launch(COPY_STRIDED_B64, cfg, &args)?,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_merges_and_drops() {
        assert_eq!(simplify(&[2, 3, 4], &[12, 4, 1]), (vec![24], vec![1]));
        assert_eq!(simplify(&[3, 2], &[1, 3]), (vec![3, 2], vec![1, 3]));
        assert_eq!(simplify(&[1, 5, 1], &[99, 2, 7]), (vec![5], vec![2]));
    }
}
