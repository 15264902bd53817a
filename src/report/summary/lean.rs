//! Lines counted by their shape's plan, without their events. Every line of
//! a shape ([`template`](crate::parse::template)) is cut at the same
//! places and differs from the others only in its digits, and the views
//! the tables read (a destination, a client, a status, a TLS state, …)
//! are found by names and punctuation, never by a digit: so where the
//! first of a shape's lines to become an event found each view, each later
//! line has its own text of it. The plan keeps those places; the tables
//! read each line's own text there, so a line counts as its event would.
//!
//! What the tables ask of the wording (`request failed`, `fail-fast`, a
//! TLS peek) has no digit either: answered once, for the shape
//! ([`Says`]).
//!
//! The one choice a digit makes, which of its places a port is read from
//! (the first whose text reads as a port), is checked in each line: a
//! line whose port does not read where its shape's did is read whole.

use super::collect::Says;
use crate::parse::era::EraCue;
use crate::parse::learnt::Generations;
use crate::parse::template::{range, Seen};
use crate::parse::typed::{parse_tls, service_authority, status_of, sz_of, PortFrom, Tls};
use crate::parse::{Event, Level, Producer};
use crate::rules::engine::Engine;
use std::borrow::Cow;
use std::cell::RefCell;

/// What the tables read of a line: of its event, or of a line read by its
/// shape's plan.
pub(super) trait Line<'a> {
    fn producer(&self) -> Producer;
    fn lines(&self) -> u32;
    fn level(&self) -> Option<Level>;
    fn uptime(&self) -> Option<f64>;
    /// A wall-clock time: its wrapper's, or its producer's own.
    fn wall(&self) -> Option<&str>;
    fn pod(&self) -> Option<&str>;
    fn container(&self) -> Option<&str>;
    fn text(&self) -> &str;
    fn target(&self) -> &str;
    fn message(&self) -> &str;
    fn error(&self) -> Option<&str>;
    fn status(&self) -> Option<u16>;
    fn dst(&self) -> Option<Cow<'_, str>>;
    fn endpoint(&self) -> Option<&str>;
    fn client_addr(&self) -> Option<&str>;
    fn tls(&self) -> Option<Tls<'_>>;
    fn sz(&self) -> Option<u64>;
    fn port(&self) -> Option<u16>;
    fn identities(&self) -> Vec<&str>;
    fn says(&self) -> Says;
}

impl<'a> Line<'a> for Event<'a> {
    fn producer(&self) -> Producer {
        self.producer
    }
    fn lines(&self) -> u32 {
        self.lines
    }
    fn level(&self) -> Option<Level> {
        self.level
    }
    fn uptime(&self) -> Option<f64> {
        self.uptime
    }
    fn wall(&self) -> Option<&str> {
        self.wrapper.timestamp.or(self.timestamp.as_deref())
    }
    fn pod(&self) -> Option<&str> {
        self.wrapper.pod
    }
    fn container(&self) -> Option<&str> {
        self.wrapper.container
    }
    fn text(&self) -> &str {
        &self.text
    }
    fn target(&self) -> &str {
        Event::target(self)
    }
    fn message(&self) -> &str {
        Event::message(self)
    }
    fn error(&self) -> Option<&str> {
        Event::error(self)
    }
    fn status(&self) -> Option<u16> {
        Event::status(self)
    }
    fn dst(&self) -> Option<Cow<'_, str>> {
        Event::dst(self)
    }
    fn endpoint(&self) -> Option<&str> {
        Event::endpoint(self)
    }
    fn client_addr(&self) -> Option<&str> {
        Event::client_addr(self)
    }
    fn tls(&self) -> Option<Tls<'_>> {
        Event::tls(self)
    }
    fn sz(&self) -> Option<u64> {
        Event::sz(self)
    }
    fn port(&self) -> Option<u16> {
        Event::port(self)
    }
    fn identities(&self) -> Vec<&str> {
        Event::identities(self)
    }
    fn says(&self) -> Says {
        Says::of(Event::message(self), Event::error(self))
    }
}

/// A range of a line of the shape.
type R = (u16, u16);

enum Dst {
    At(Option<R>),
    /// A `service` span's name, namespace and port, joined.
    Service(R, R, R),
}

/// Where a shape's lines have what the tables read.
struct Plan {
    /// The engine whose era wording `cues` is.
    engine: u64,
    message: Option<R>,
    error: Option<R>,
    status: Option<R>,
    dst: Dst,
    endpoint: Option<R>,
    client: Option<R>,
    tls: Option<R>,
    sz: Option<R>,
    /// Where the port is read and how: `None` when it is read nowhere.
    port: Option<(PortFrom, R)>,
    identities: Box<[R]>,
    says: Says,
    cues: Box<[EraCue]>,
}

/// Shapes kept per thread before starting over: seven eighths of a power
/// of two, as [`template`](crate::parse::template)'s generations.
const MAX_PLANS: usize = 7168;

thread_local! {
    /// By shape id: its plan, or `None` for a shape whose lines are read
    /// whole.
    static PLANS: RefCell<Generations<Option<Plan>>> =
        const { RefCell::new(Generations::new(MAX_PLANS, usize::MAX)) };
}

/// Makes the plan of `ev`'s shape, when it has none yet.
pub(super) fn learn(engine: &Engine, ev: &Event<'_>) {
    if ev.shape == 0 || !engine.tells_by_shape() {
        return;
    }
    let id = engine.id();
    let ours = |p: &Option<Plan>| p.as_ref().is_none_or(|p| p.engine == id);
    let known = PLANS.with(|p| p.borrow_mut().find(ev.shape, ours, |_| 0).is_some());
    if !known {
        let plan = plan(engine, ev);
        PLANS.with(|p| {
            p.borrow_mut().keep(ev.shape, plan, 0);
        });
    }
}

/// The plan of `ev`'s shape: `None` when its lines are read whole (a
/// loud line, whose unknown wording is searched for by each line's digits;
/// a line joined to others, or with a wrapper or a wall clock; a view
/// that is not a slice of the line).
fn plan(engine: &Engine, ev: &Event<'_>) -> Option<Plan> {
    let simple = ev.continuation.is_none()
        && ev.lines == 1
        && ev.metric.is_none()
        && !ev.cut
        && !ev.truncated_head
        && ev.wrapper.timestamp.is_none()
        && ev.wrapper.pod.is_none()
        && ev.wrapper.container.is_none()
        && ev.timestamp.is_none()
        && ev.level.is_none_or(|l| l < Level::Warn);
    if !simple {
        return None;
    }
    let mut cues = Vec::new();
    if engine.era_by_shape(ev, &mut cues)? {
        // Its wording bounds the era: each line's own cue is read.
        return None;
    }
    let text: &str = &ev.text;
    // Where a view is, when it is a slice of the line.
    let at = |v: Option<&str>| match v {
        None => Some(None),
        Some(v) => range(text, v).map(Some),
    };
    let dst = match ev.dst() {
        Some(Cow::Owned(_)) => {
            let svc = ev.span("service")?;
            let f = |k| range(text, svc.field(k)?);
            Dst::Service(f("name")?, f("ns")?, f("port")?)
        }
        d => Dst::At(at(d.as_deref())?),
    };
    let tls = ev.tls().is_some().then(|| ev.tls_text()).flatten();
    let port = match PortFrom::ALL
        .iter()
        .find_map(|f| Some((*f, ev.port_text(*f)?)))
    {
        None => None,
        // Where it does not read, a later place would be read: in a line
        // where it does, this one.
        Some((f, t)) => Some((f, range(text, t).filter(|_| f.read(t).is_some())?)),
    };
    let identities = ev.identities();
    Some(Plan {
        engine: engine.id(),
        message: at(ev.message.as_deref())?,
        error: at(ev.error())?,
        status: at(ev.status_text())?,
        dst,
        endpoint: at(ev.endpoint())?,
        client: at(ev.client_addr())?,
        tls: at(tls)?,
        sz: at(ev.field("sz"))?,
        port,
        identities: identities
            .iter()
            .map(|i| range(text, i))
            .collect::<Option<_>>()?,
        says: Says::of(ev.message(), ev.error()),
        cues: cues.into(),
    })
}

/// A line read by its shape's plan.
pub(super) struct Planned<'p, 'a> {
    plan: &'p Plan,
    seen: &'p Seen<'a>,
    uptime: Option<f64>,
    port: Option<u16>,
}

impl Planned<'_, '_> {
    fn at(&self, r: R) -> &str {
        &self.seen.line[usize::from(r.0)..usize::from(r.1)]
    }

    fn get(&self, r: Option<R>) -> Option<&str> {
        r.map(|r| self.at(r))
    }
}

impl<'a> Line<'a> for Planned<'_, 'a> {
    fn producer(&self) -> Producer {
        self.seen.producer
    }
    fn lines(&self) -> u32 {
        1
    }
    fn level(&self) -> Option<Level> {
        self.seen.level
    }
    fn uptime(&self) -> Option<f64> {
        self.uptime
    }
    fn wall(&self) -> Option<&str> {
        None
    }
    fn pod(&self) -> Option<&str> {
        None
    }
    fn container(&self) -> Option<&str> {
        None
    }
    fn text(&self) -> &str {
        self.seen.line
    }
    fn target(&self) -> &str {
        self.seen.target
    }
    fn message(&self) -> &str {
        self.get(self.plan.message).unwrap_or("")
    }
    fn error(&self) -> Option<&str> {
        self.get(self.plan.error)
    }
    fn status(&self) -> Option<u16> {
        self.get(self.plan.status).and_then(status_of)
    }
    fn dst(&self) -> Option<Cow<'_, str>> {
        match self.plan.dst {
            Dst::At(r) => self.get(r).map(Cow::Borrowed),
            Dst::Service(name, ns, port) => Some(Cow::Owned(service_authority(
                self.at(name),
                self.at(ns),
                self.at(port),
            ))),
        }
    }
    fn endpoint(&self) -> Option<&str> {
        self.get(self.plan.endpoint)
    }
    fn client_addr(&self) -> Option<&str> {
        self.get(self.plan.client)
    }
    fn tls(&self) -> Option<Tls<'_>> {
        self.get(self.plan.tls).map(parse_tls)
    }
    fn sz(&self) -> Option<u64> {
        self.get(self.plan.sz).and_then(sz_of)
    }
    fn port(&self) -> Option<u16> {
        self.port
    }
    fn identities(&self) -> Vec<&str> {
        self.plan.identities.iter().map(|r| self.at(*r)).collect()
    }
    fn says(&self) -> Says {
        self.plan.says
    }
}

/// Runs `count` on `seen` read by its shape's plan, with the era cues of
/// its shape's wording: `None` when it has none, or the line's clock or
/// port does not read where its shape's did (the line is then read whole).
pub(super) fn read<T>(
    engine: &Engine,
    seen: &Seen<'_>,
    count: impl FnOnce(&Planned<'_, '_>, &[EraCue]) -> T,
) -> Option<T> {
    if seen.cut || !engine.tells_by_shape() {
        return None;
    }
    let uptime = seen.uptime()?;
    PLANS.with(|p| {
        let p = p.borrow();
        let plan = p
            .young(seen.id)?
            .as_ref()
            .filter(|p| p.engine == engine.id())?;
        let mut line = Planned {
            plan,
            seen,
            uptime,
            port: None,
        };
        if let Some((from, r)) = plan.port {
            line.port = Some(from.read(line.at(r))?);
        }
        Some(count(&line, &plan.cues))
    })
}
