//! The stores of the core, each an implementation of the driver contract:
//! [`MemoryStorage`](crate::MemoryStorage), and
//! [`TieredStorage`](crate::TieredStorage), which makes one store of a hot
//! and a cold one.

pub(crate) mod memory;
pub mod tiered;
