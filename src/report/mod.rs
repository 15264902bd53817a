//! Rendering: JSON lines for `parse`, and the human, JSON and Markdown
//! reports of the other commands.

pub mod jsonl;
