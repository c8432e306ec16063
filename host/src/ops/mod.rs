//! Safe tensor operations: validate, pick a kernel, launch. Each op has its CPU definition in
//! [`reference`](crate::reference) and a proptest suite comparing the two on a device.

pub mod basic;
