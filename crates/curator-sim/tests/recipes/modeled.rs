//! modeled fault tests under the simulator.
