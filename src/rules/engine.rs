//! The rule engine's public face: the compiled rules ([`Engine`]), the
//! state a pass over the input builds ([`State`]), and what it concludes
//! ([`Finding`]).

pub use super::correlation::{EraSampler, State, Stats, Wording, MAX_EVIDENCE};
pub use super::finding::{Command, Consequence, Evidence, Finding, Seen};
pub use super::matching::Engine;
pub use super::unmatched::{template, Entry as UnmatchedEntry};
