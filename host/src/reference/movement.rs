//! References of the data-movement ops: index_select, transpose of the last two axes, concat.

/// `out[.., j, ..] = x[.., idx[j], ..]` for row-major `x` of `shape` along `axis`, or the first
/// position whose index is outside `0..shape[axis]`.
///
/// # Panics
/// If `axis` is out of range or `x` does not hold `shape`'s elements.
pub fn index_select<T: Copy>(x: &[T], shape: &[usize], axis: usize, idx: &[i32]) -> Result<Vec<T>, usize> {
    super::assert_holds("index_select: x", x.len(), shape);
    assert!(axis < shape.len(), "index_select: axis {axis} out of range for rank {}", shape.len());
    let pre: usize = shape[..axis].iter().product();
    let size = shape[axis];
    let post: usize = shape[axis + 1..].iter().product();
    if let Some(p) = idx.iter().position(|&i| i < 0 || i as usize >= size) {
        return Err(p);
    }
    let mut out = Vec::with_capacity(pre * idx.len() * post);
    for p in 0..pre {
        for &i in idx {
            let start = (p * size + i as usize) * post;
            out.extend_from_slice(&x[start..start + post]);
        }
    }
    Ok(out)
}

/// `[.., R, C] -> [.., C, R]` of row-major `x` with `shape` (rank >= 2).
///
/// # Panics
/// If the rank is below 2 or `x` does not hold `shape`'s elements.
pub fn transpose_last2<T: Copy>(x: &[T], shape: &[usize]) -> Vec<T> {
    let r = shape.len();
    assert!(r >= 2, "transpose_last2: rank below 2");
    super::assert_holds("transpose_last2: x", x.len(), shape);
    let (rows, cols) = (shape[r - 2], shape[r - 1]);
    let batch = x.len() / (rows * cols).max(1);
    let mut out = Vec::with_capacity(x.len());
    for b in 0..batch {
        for c in 0..cols {
            for rr in 0..rows {
                out.push(x[b * rows * cols + rr * cols + c]);
            }
        }
    }
    out
}

/// Row-major `parts` (each `(data, shape)`) joined along `axis`.
///
/// # Panics
/// If there are no parts, `axis` is out of range, a part's data does not hold its shape, or the
/// shapes disagree outside `axis`.
pub fn concat<T: Copy>(parts: &[(&[T], &[usize])], axis: usize) -> Vec<T> {
    assert!(!parts.is_empty(), "concat: no parts");
    let shape0 = parts[0].1;
    assert!(axis < shape0.len(), "concat: axis {axis} out of range for rank {}", shape0.len());
    for (i, (data, shape)) in parts.iter().enumerate() {
        super::assert_holds("concat: a part", data.len(), shape);
        let agree = shape.len() == shape0.len() && (0..shape.len()).all(|d| d == axis || shape[d] == shape0[d]);
        assert!(agree, "concat: part {i} is {shape:?}, part 0 is {shape0:?}: they must agree outside axis {axis}");
    }
    let outer: usize = shape0[..axis].iter().product();
    let inner: usize = shape0[axis + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for (data, shape) in parts {
            assert_eq!(shape.len(), shape0.len(), "concat: ranks differ");
            let block = shape[axis] * inner;
            out.extend_from_slice(&data[o * block..(o + 1) * block]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cases() {
        assert_eq!(index_select(&[1, 2, 3, 4, 5, 6], &[3, 2], 0, &[2, 0]), Ok(vec![5, 6, 1, 2]));
        assert_eq!(index_select(&[1, 2, 3, 4, 5, 6], &[3, 2], 1, &[1]), Ok(vec![2, 4, 6]));
        assert_eq!(index_select(&[1, 2], &[2], 0, &[0, -1]), Err(1));
        assert_eq!(transpose_last2(&[1, 2, 3, 4, 5, 6], &[2, 3]), vec![1, 4, 2, 5, 3, 6]);
        let (a, b) = ([1, 2, 3, 4], [5, 6]);
        assert_eq!(concat(&[(&a[..], &[2, 2][..]), (&b[..], &[2, 1][..])], 1), vec![1, 2, 5, 3, 4, 6]);
    }
}
