//! queues fault tests under the simulator.
