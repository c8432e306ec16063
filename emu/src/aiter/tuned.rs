//! AITER's tuned-config tables (filled in below).
