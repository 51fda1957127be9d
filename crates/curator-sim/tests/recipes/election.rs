//! election fault tests under the simulator.
