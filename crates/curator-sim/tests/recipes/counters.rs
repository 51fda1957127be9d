//! counters fault tests under the simulator.
