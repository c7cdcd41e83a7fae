//! The one integration-test binary; each area is a module under `tests/it/`.

#[path = "it/api.rs"]
mod api;
#[cfg(feature = "cli")]
#[path = "it/cli.rs"]
mod cli;
#[path = "it/common.rs"]
mod common;
#[path = "it/corpus.rs"]
mod corpus;
#[path = "it/cost.rs"]
mod cost;
#[path = "it/export.rs"]
mod export;
#[path = "it/harness.rs"]
mod harness;
#[path = "it/importers.rs"]
mod importers;
#[path = "it/memory.rs"]
mod memory;
#[path = "it/properties.rs"]
mod properties;
#[path = "it/report.rs"]
mod report;
#[cfg(feature = "cli")]
#[path = "it/report_cli.rs"]
mod report_cli;
#[path = "it/report_corpus.rs"]
mod report_corpus;
#[path = "it/store.rs"]
mod store;
