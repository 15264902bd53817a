//! The knowledge base: rules as data (TOML), embedded in the binary and
//! extendable with `--rules FILE`. A rule matches single events
//! ([`matching`]); matches correlate into groups ([`correlation`]) that the
//! [`verdict`] folds and ranks into findings.

mod by_shape;
pub mod command;
pub mod conns;
mod correlation;
pub mod engine;
mod expr;
mod finding;
mod fold;
mod group;
mod haystack;
pub mod load;
mod lookback;
mod matching;
pub mod metrics;
pub mod pages;
pub mod ports;
mod quiet;
pub mod schema;
pub mod snapshot;
mod stats;
pub mod unmatched;
pub mod values;
mod verdict;
pub mod window;

pub use load::{built_in, load, parse_rules, RuleError, BUILT_IN};
pub use schema::*;
