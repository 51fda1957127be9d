//! What the core uses of its optional features when they are compiled out: the same names,
//! doing nothing. Each stands in for the module of its feature (`crate::schema` without
//! `schema`, `crate::compression` without `compression`), so operations are written once.

#[cfg(not(feature = "compression"))]
pub(crate) mod compression;
#[cfg(not(feature = "schema"))]
pub(crate) mod schema;
