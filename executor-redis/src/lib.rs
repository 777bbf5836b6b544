//! Redis storage for executor-core (in progress).
