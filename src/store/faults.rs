//! Simulated I/O faults.
