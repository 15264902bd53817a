//! The text of an event that the rules read: its line, or for an event
//! whose line is not contiguous text (JSON, several lines) its message and
//! fields joined; and within it, where the rules' literals are looked for.

use crate::parse::{Event, Producer};
use std::borrow::Cow;

/// The text rules' conditions read: the line, or for an event whose line
/// is not contiguous text (JSON, several lines), its message and fields.
pub(super) fn full_text<'e>(ev: &'e Event<'_>) -> Cow<'e, str> {
    if joined(ev.producer) || ev.continuation.is_some() {
        Cow::Owned(haystack(ev))
    } else {
        Cow::Borrowed(&ev.text)
    }
}

/// Are the rules' conditions read in a text joined from the event's
/// message and fields (a JSON line's)?
fn joined(producer: Producer) -> bool {
    matches!(
        producer,
        Producer::ProxyJson | Producer::LogrusJson | Producer::AccessJson
    )
}

/// Where in `full` ([`full_text`]) the rules' literals are looked for:
/// literals are about messages and fields, and the span stack, often most
/// of a debug line, need not be scanned for them.
pub(super) fn literal_text<'t>(ev: &'t Event<'_>, full: &'t str) -> &'t str {
    if ev.body.is_empty() || ev.continuation.is_some() {
        full
    } else {
        ev.body
    }
}

/// The text rules match for events whose line is not contiguous text.
fn haystack(ev: &Event<'_>) -> String {
    let mut s = String::with_capacity(ev.text.len());
    joined_pieces(ev, |p| s.push_str(p));
    s
}

/// The pieces, in order, that [`literal_text`] of the event's
/// [`full_text`] is made of: text of the event and what joins it.
pub(super) fn literal_pieces<'e>(ev: &'e Event<'_>, mut each: impl FnMut(&'e str)) {
    if !ev.body.is_empty() && ev.continuation.is_none() {
        each(ev.body);
    } else if joined(ev.producer) || ev.continuation.is_some() {
        joined_pieces(ev, each);
    } else {
        each(&ev.text);
    }
}

/// The pieces of [`haystack`].
fn joined_pieces<'e>(ev: &'e Event<'_>, mut each: impl FnMut(&'e str)) {
    let mut any = false;
    if let Some(m) = &ev.message {
        each(m);
        any = !m.is_empty();
    }
    for (k, v) in &ev.fields {
        [" ", k, "=", v].into_iter().for_each(&mut each);
        any = true;
    }
    if let Some(c) = &ev.continuation {
        each("\n");
        each(c);
        any = true;
    }
    if !any {
        each(&ev.text);
    }
}
