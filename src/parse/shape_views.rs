//! Where a typed view finds its text, found once per line shape
//! ([`template`](super::template)) rather than searched for in each of its
//! lines. Every line of a shape is cut at the same places and has the same
//! bytes but for its digits, and the views kept here decide by names and
//! punctuation alone (field keys, span names, `:`, `error.source=`), never
//! by a digit: so each of a shape's lines finds its view at the same place.

use super::event::Event;
use super::learnt::Generations;
use super::template::range;
use std::cell::RefCell;

/// The views kept per shape.
#[derive(Clone, Copy)]
pub(super) enum View {
    ClientAddr,
    TargetAddr,
    Endpoint,
    Error,
    /// [`Event::dst`] before its `service{…}` spelling (which it builds,
    /// not slices), and after it.
    DstSliced,
    DstLegacy,
    /// The text [`Event::tls`] reads its state from.
    Tls,
}

const VIEWS: usize = 7;

/// Shapes kept per thread before starting over: as many as the two
/// generations of [`template`](super::template)'s cache, in about a MiB.
const MAX_SHAPES: usize = 14336;

#[derive(Clone, Copy, Default)]
enum Place {
    #[default]
    Unknown,
    Absent,
    /// A range of the line (whose shape is kept: under 64 KiB).
    At(u16, u16),
    /// Not a slice of the line (a copied value): found in each line.
    Elsewhere,
}

/// Ranges of a line.
type Ranges = Box<[(u16, u16)]>;

thread_local! {
    static PLACES: RefCell<Generations<[Place; VIEWS]>> =
        const { RefCell::new(Generations::new(MAX_SHAPES, usize::MAX)) };
    /// [`Event::identities`]' places, by shape; `None` where one is not a
    /// slice of the line.
    static IDENTITIES: RefCell<Generations<Option<Ranges>>> =
        const { RefCell::new(Generations::new(MAX_SHAPES, usize::MAX)) };
}

/// Whether `ev`'s views may be kept by its shape: it was read by one, and
/// alone.
fn shaped(ev: &Event<'_>) -> bool {
    ev.shape != 0 && ev.continuation.is_none() && ev.lines == 1
}

impl<'a> Event<'a> {
    /// `find(self)`, found where the first line of the event's shape found
    /// it when that line was read alone (not joined to another).
    pub(super) fn by_shape<'s>(
        &'s self,
        view: View,
        find: impl FnOnce(&'s Self) -> Option<&'s str>,
    ) -> Option<&'s str> {
        if !shaped(self) {
            return find(self);
        }
        let text: &str = &self.text;
        let known = PLACES.with(|p| p.borrow().young(self.shape).map(|v| v[view as usize]));
        match known.unwrap_or_default() {
            Place::Absent => return None,
            Place::At(s, e) => {
                if let Some(t) = text.get(s as usize..e as usize) {
                    return Some(t);
                }
            }
            Place::Elsewhere | Place::Unknown => {}
        }
        let found = find(self);
        let place = match found {
            None => Place::Absent,
            Some(f) => range(text, f).map_or(Place::Elsewhere, |(s, e)| Place::At(s, e)),
        };
        PLACES.with(|p| {
            let mut p = p.borrow_mut();
            let mut places = p.find(self.shape, |_| true, |_| 0).copied();
            let places = places.get_or_insert_default();
            places[view as usize] = place;
            p.keep(self.shape, *places, 0);
        });
        found
    }

    /// [`Event::identities`]' `find(self)`, found where the first line of
    /// the event's shape found them.
    pub(super) fn identities_by_shape<'s>(
        &'s self,
        find: impl FnOnce(&'s Self) -> Vec<&'s str>,
    ) -> Vec<&'s str> {
        if !shaped(self) {
            return find(self);
        }
        let text: &str = &self.text;
        let known = IDENTITIES.with(|p| {
            let mut p = p.borrow_mut();
            let places = p.find(self.shape, |_| true, |_| 0)?.as_ref()?;
            places
                .iter()
                .map(|&(s, e)| text.get(usize::from(s)..usize::from(e)))
                .collect::<Option<Vec<_>>>()
        });
        if let Some(found) = known {
            return found;
        }
        let found = find(self);
        let places = found.iter().map(|f| range(text, f)).collect();
        IDENTITIES.with(|p| {
            p.borrow_mut().keep(self.shape, places, 0);
        });
        found
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_line;

    /// Each line of a shape, its first and the later ones, finds every
    /// view where a search of the line itself finds it.
    #[test]
    fn a_shapes_lines_find_their_views_where_a_search_does() {
        let lines = [
            "[    12.001000s]  WARN ThreadId(01) inbound:accept{client.addr=10.2.0.7:51234 target.addr=10.2.0.9:8080}:server{port=8080}: linkerd_app_core::errors: Failed to proxy request: connection closed error.source=broken pipe",
            "[   912.001000s]  WARN ThreadId(02) inbound:accept{client.addr=10.12.0.71:1234 target.addr=10.2.0.99:80}:server{port=80}: linkerd_app_core::errors: Failed to proxy request: connection closed error.source=broken pipe",
            "[     1.000000s] DEBUG ThreadId(01) outbound:proxy{addr=10.96.0.1:443}:service{ns=web name=api port=443}:endpoint{addr=10.1.0.4:443}: linkerd_proxy_transport::connect: Connecting peer.addr=10.1.0.4:443 error=connect timed out after 1s",
            "[    31.000000s] DEBUG ThreadId(03) outbound:proxy{addr=10.96.0.17:8443}:service{ns=web name=api port=8443}:endpoint{addr=10.1.0.45:8443}: linkerd_proxy_transport::connect: Connecting peer.addr=10.1.0.45:8443 error=connect timed out after 10s",
            "[     2.000000s]  INFO ThreadId(01) outbound:proxy{addr=10.96.0.1:80}:logical{dst=web.ns.svc.cluster.local:80}:concrete{addr=web.ns.svc.cluster.local:80}: linkerd_app_core::serve: Connection closed",
            "[    22.000000s]  INFO ThreadId(01) outbound:proxy{addr=10.96.0.12:81}:logical{dst=web.ns.svc.cluster.local:81}:concrete{addr=web.ns.svc.cluster.local:81}: linkerd_app_core::serve: Connection closed",
            r#"[     5.000000s] DEBUG ThreadId(01) inbound:accept{client.addr=10.0.0.5:4000 server.id=api1.ns.serviceaccount.identity.linkerd.cluster.local}:server{port=8080}:tls{tls=Some(Established { client_id: Some(ClientId(Name("web1.ns.serviceaccount.identity.linkerd.cluster.local"))), negotiated_protocol: None })}: linkerd_app_inbound: Accepted"#,
            r#"[    55.000000s] DEBUG ThreadId(02) inbound:accept{client.addr=10.0.0.55:400 server.id=api2.ns.serviceaccount.identity.linkerd.cluster.local}:server{port=8081}:tls{tls=Some(Established { client_id: Some(ClientId(Name("web2.ns.serviceaccount.identity.linkerd.cluster.local"))), negotiated_protocol: None })}: linkerd_app_inbound: Accepted"#,
            r#"{"timestamp":"[     3.000000s]","level":"WARN","fields":{"message":"Failed to proxy request: timed out","client.addr":"10.0.0.1:5000"},"target":"linkerd_app_core::errors","spans":[{"name":"outbound"},{"name":"proxy","addr":"10.96.0.3:80"}],"threadId":"ThreadId(1)"}"#,
            r#"{"timestamp":"[    33.000000s]","level":"WARN","fields":{"message":"Failed to proxy request: timed out","client.addr":"10.0.0.12:5"},"target":"linkerd_app_core::errors","spans":[{"name":"outbound"},{"name":"proxy","addr":"10.96.0.31:8080"}],"threadId":"ThreadId(2)"}"#,
        ];
        let client_id = |l: &&str| {
            parse_line(l)
                .unwrap()
                .tls()
                .and_then(|t| t.client_id)
                .is_some()
        };
        assert!(lines.iter().any(client_id));
        assert!(lines
            .iter()
            .any(|l| parse_line(l).unwrap().identities().len() == 2));
        for l in lines.iter().chain(lines.iter()) {
            let ev = parse_line(l).unwrap();
            assert_ne!(ev.shape, 0, "{l}");
            // The same event, not of a shape: each view searched for.
            let mut alone = ev.clone();
            alone.shape = 0;
            assert_eq!(ev.error(), alone.error(), "{l}");
            assert_eq!(ev.client_addr(), alone.client_addr(), "{l}");
            assert_eq!(ev.target_addr(), alone.target_addr(), "{l}");
            assert_eq!(ev.endpoint(), alone.endpoint(), "{l}");
            assert_eq!(ev.dst(), alone.dst(), "{l}");
            assert_eq!(ev.tls(), alone.tls(), "{l}");
            assert_eq!(ev.identities(), alone.identities(), "{l}");
        }
    }
}
