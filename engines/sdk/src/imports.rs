//! The host imports the SDK's wrappers call (`crate::imports::storage`, `::log`, …): the
//! component's own (the generated bindings), or, with the `test-kit` feature, the in-memory fakes
//! of [`crate::testkit`] (same functions, same types).

#[cfg(feature = "test-kit")]
pub(crate) use crate::testkit::fakes::*;

#[cfg(not(feature = "test-kit"))]
pub(crate) use crate::generated::bindings::tessera::engine::*;
