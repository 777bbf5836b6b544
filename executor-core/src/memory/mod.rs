//! `MemoryStorage`: the embedded, non-durable default (in progress).
