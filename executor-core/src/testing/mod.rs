//! The storage conformance suite (in progress).
