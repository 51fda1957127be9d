//! `curator ui`'s dashboard: the annotated tree ([`tree`]), kept current ([`live`]) and served
//! ([`server`]) with axum.
//!
//! Why axum: it is tokio's own HTTP framework (the tokio team keeps it, on hyper), so it adds
//! no second runtime or HTTP stack, and it has server-sent events, state and graceful shutdown
//! built in; it is built here with HTTP/1 only.

pub(crate) mod live;
pub(crate) mod server;
pub(crate) mod tree;
