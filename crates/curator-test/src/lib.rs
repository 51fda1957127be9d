#![doc = include_str!("../README.md")]

mod certificates;
mod cluster;
mod config;
mod curator_java;
mod data;
mod error;
mod four_letter;
mod guard;
mod java;
mod kdc;
mod partition;
mod paths;
mod proxy;
mod reconfig;
mod sasl;
mod server;
mod session;
mod timing;
mod tls;
mod version;

pub use certificates::{
    CertificateAuthority, CertificateFiles, PemFiles, SERVER_HOSTS, TestCertificate,
    TestCertificates, WRONG_HOST,
};
pub use cluster::{TestingCluster, TestingClusterBuilder};
pub use curator_java::{CURATOR_CLASSPATH, CuratorProgram, JavaPeer, JvmOptions, NETTY_CLASSPATH};
pub use data::patterned_bytes;
pub use error::{Error, Result};
pub use four_letter::{ServerMode, four_letter_word};
pub use kdc::{DEFAULT_REALM, KerberosPrincipal, TestingKdc, TestingKdcBuilder};
pub use paths::unique_root;
pub use proxy::FaultProxy;
pub use reconfig::SuperCredentials;
pub use sasl::{ServerSasl, ZOOKEEPER_SERVICE_PRINCIPAL};
pub use server::{TestingServer, TestingServerBuilder};
pub use session::{Expiry, SessionCredentials, expire_session};
pub use timing::{Timing, eventually};
pub use tls::{ClientAuth, ServerTls};
pub use version::{
    ServerVersion, ZK_3_9_DIR_ENV, ZK_VERSION_ENV, ZooKeeperVersion, server_version,
};
