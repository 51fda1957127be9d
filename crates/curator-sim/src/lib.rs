#![doc = include_str!("../README.md")]

mod connector;
mod faults;
mod simulation;

pub use connector::TurmoilConnector;
pub use faults::{Fault, FaultPlan, FaultRecord};
pub use simulation::{SimClient, SimError, SimFaults, SimReport, Simulation, SimulationBuilder};

/// The simulated time since the simulation started, when called inside one (from a host's
/// software or a client body); `None` elsewhere. A history's timestamps from it are comparable
/// across hosts.
///
/// ```
/// assert_eq!(curator_sim::elapsed(), None); // not in a simulation
/// ```
pub fn elapsed() -> Option<std::time::Duration> {
    turmoil::sim_elapsed()
}

/// The simulated ZooKeeper server's host name on the simulated network.
pub const ZK_HOST: &str = "zk";

/// The port it serves on.
pub const ZK_PORT: u16 = 2181;
