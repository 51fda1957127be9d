//! caches fault tests under the simulator.
