//! Lull on stock Linux: the adapter that gives the pure core a real clock, real processes and
//! real file descriptors.

pub mod bench;
