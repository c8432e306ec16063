//! AITER's fused mixture-of-experts assembly kernels (filled in below).
