//! Rendering: JSON lines for `parse`, and the human, JSON and Markdown
//! reports of the other commands.

pub mod anonymize;
pub mod evidence;
pub mod explain;
pub mod human;
pub mod jsonl;
pub mod metrics_summary;
pub mod plural;
pub mod style;
pub mod summary;
pub mod table;
pub mod text;
