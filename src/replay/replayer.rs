//! Running a recorded step again (placeholder until written).
