//! `--since`/`--until`: the part of the log to read, in wall-clock time
//! where the log has it (RFC 3339, from `kubectl logs --timestamps` or a
//! JSON producer), else in the proxy's uptime seconds (`300s`).

use crate::parse::{Event, Record};
use chrono::{DateTime, FixedOffset};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Wall(DateTime<FixedOffset>),
    Uptime(f64),
}

impl std::str::FromStr for Bound {
    type Err = String;
    fn from_str(s: &str) -> Result<Bound, String> {
        let s = s.trim();
        if let Some(n) = s.strip_suffix('s').and_then(|n| n.parse::<f64>().ok()) {
            if n.is_finite() && n >= 0.0 {
                return Ok(Bound::Uptime(n));
            }
        }
        DateTime::parse_from_rfc3339(s).map(Bound::Wall).map_err(|_| {
            format!("'{s}' is neither an RFC 3339 time (2024-05-01T10:00:00Z) nor uptime seconds (300s)")
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub since: Option<Bound>,
    pub until: Option<Bound>,
}

impl Window {
    pub fn is_set(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    /// Is the record inside the window? A record without the clock a bound
    /// is given in cannot be placed, and is left out.
    pub fn admits(&self, rec: &Record<'_>) -> bool {
        if !self.is_set() {
            return true;
        }
        let Record::Event(ev) = rec else {
            return false;
        };
        let after = |b: &Bound| at_or_after(ev, b);
        self.since.as_ref().is_none_or(|b| after(b) == Some(true))
            && self
                .until
                .as_ref()
                .is_none_or(|b| at_or_before(ev, b) == Some(true))
    }
}

fn wall(ev: &Event<'_>) -> Option<DateTime<FixedOffset>> {
    let t = ev.wrapper.timestamp.or(ev.timestamp.as_deref())?;
    DateTime::parse_from_rfc3339(t).ok()
}

fn at_or_after(ev: &Event<'_>, b: &Bound) -> Option<bool> {
    match b {
        Bound::Wall(t) => wall(ev).map(|w| w >= *t),
        Bound::Uptime(u) => ev.uptime.map(|x| x >= *u),
    }
}

fn at_or_before(ev: &Event<'_>, b: &Bound) -> Option<bool> {
    match b {
        Bound::Wall(t) => wall(ev).map(|w| w <= *t),
        Bound::Uptime(u) => ev.uptime.map(|x| x <= *u),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_both_clocks() {
        assert_eq!("300s".parse::<Bound>(), Ok(Bound::Uptime(300.0)));
        assert!(matches!(
            "2024-05-01T10:00:00Z".parse::<Bound>(),
            Ok(Bound::Wall(_))
        ));
        assert!("yesterday".parse::<Bound>().is_err());
        assert!("-5s".parse::<Bound>().is_err());
    }
}
