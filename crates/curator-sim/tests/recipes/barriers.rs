//! barriers fault tests under the simulator.
