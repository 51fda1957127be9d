//! nodes fault tests under the simulator.
