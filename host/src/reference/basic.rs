//! References of the first kernels (fill, copy, saxpy, the 32x32 MFMA tile).

use crate::dtype::Element;

/// `n` copies of `value`.
pub fn fill<T: Copy>(n: usize, value: T) -> Vec<T> {
    vec![value; n]
}

/// `y[i] = a * x[i] + y[i]`, the product rounded to f32 before the add (as the kernel does).
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn saxpy(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    assert_eq!(x.len(), y.len(), "saxpy: x and y lengths differ");
    x.iter().zip(y).map(|(&x, &y)| a * x + y).collect()
}

/// `C = A * B` for row-major A (m x k) and B (k x n), accumulated in f64.
///
/// # Panics
/// If the slices do not hold m*k and k*n elements.
pub fn matmul<T: Element>(a: &[T], b: &[T], m: usize, n: usize, k: usize) -> Vec<f64> {
    super::assert_holds("matmul: A (m x k)", a.len(), &[m, k]);
    super::assert_holds("matmul: B (k x n)", b.len(), &[k, n]);
    let b64: Vec<f64> = b.iter().map(|x| x.to_f64()).collect();
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        let row = &mut c[i * n..i * n + n];
        for p in 0..k {
            let av = a[i * k + p].to_f64();
            for (cj, bj) in row.iter_mut().zip(&b64[p * n..p * n + n]) {
                *cj += av * bj;
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_of_small_known_matrices() {
        let a = [1.0f32, 2.0, 3.0, 4.0]; // [[1,2],[3,4]]
        let b = [5.0f32, 6.0, 7.0, 8.0];
        assert_eq!(matmul(&a, &b, 2, 2, 2), vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn saxpy_rounds_the_product_first() {
        // 3 * (1/3 in f32) rounds to 1.0 exactly in f32 before adding.
        let third = 1.0f32 / 3.0;
        assert_eq!(saxpy(3.0, &[third], &[0.0]), vec![3.0 * third]);
    }
}
