//! lpa — the Linkerd proxy log analyzer.
//!
//! Data flows one way: bytes ([`input`]) → lines → events ([`parse`]) →
//! findings and aggregates ([`rules`], [`report`]) → output.

pub mod cli;
pub mod follow;
pub mod input;
pub mod pager;
pub mod parse;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod rules;
pub mod shell;
pub mod triage;
