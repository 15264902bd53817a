//! `linkerd check` (and `linkerd multicluster check`, `linkerd viz check`)
//! result lines: `√ name`, `‼ name` (a warning), `× name` (a failure), each
//! failure followed by indented detail and `see https://linkerd.io/…/checks/#…
//! for hints` lines, which the tokenizer gathers into the event.

use super::event::{Event, Level, Producer};
use std::borrow::Cow;

pub fn parse<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let (level, status, rest) = if let Some(r) = s.strip_prefix('√') {
        (Level::Info, "ok", r)
    } else if let Some(r) = s.strip_prefix('‼') {
        (Level::Warn, "warn", r)
    } else if let Some(r) = s.strip_prefix('×') {
        (Level::Error, "fail", r)
    } else {
        return None;
    };
    let name = rest.strip_prefix(' ')?.trim();
    if name.is_empty() || !name.as_bytes()[0].is_ascii_alphanumeric() && !name.starts_with('\'') {
        return None;
    }
    ev.reset(Producer::Check, s);
    ev.level = Some(level);
    ev.message = Some(Cow::Borrowed(name));
    ev.fields
        .push((Cow::Borrowed("status"), Cow::Borrowed(status)));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::with;

    #[test]
    fn check_lines() {
        let ev = with(parse, "× issuer cert is within its validity period").unwrap();
        assert_eq!(ev.level, Some(Level::Error));
        assert_eq!(ev.message(), "issuer cert is within its validity period");
        assert_eq!(ev.field("status"), Some("fail"));
        assert!(with(parse, "√ can initialize the client").is_some());
        assert!(with(parse, "‼ trust anchors are valid for at least 60 days").is_some());
        assert!(with(parse, "×").is_none());
    }
}
