//! discovery fault tests under the simulator.
