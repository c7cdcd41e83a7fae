//! The one integration-test binary; each area is a module under `tests/it/`.

#[path = "it/common.rs"]
mod common;
#[path = "it/cost.rs"]
mod cost;
#[path = "it/harness.rs"]
mod harness;
#[path = "it/memory.rs"]
mod memory;
#[path = "it/properties.rs"]
mod properties;
#[path = "it/report.rs"]
mod report;
#[path = "it/store.rs"]
mod store;
