#![doc = include_str!("../README.md")]

mod connector;
mod faults;
mod simulation;

pub use connector::TurmoilConnector;
pub use faults::{Fault, FaultPlan, FaultRecord};
pub use simulation::{SimClient, SimError, SimReport, Simulation, SimulationBuilder};

/// The simulated ZooKeeper server's host name on the simulated network.
pub const ZK_HOST: &str = "zk";

/// The port it serves on.
pub const ZK_PORT: u16 = 2181;
