//! The runtime: claim loop, workers, heartbeats, housekeeping, shutdown (in progress).
