//! What the engine remembers per connection: its tags, and the destination,
//! endpoint and port its lines named, for later lines that name none.

use crate::parse::Event;
use std::collections::HashMap;

/// Connections remembered per table half.
const MAX_CONNS: usize = 4096;

/// A fixed hasher: iteration order, and so which entries a full table
/// drops while blocks are merged, must not change from run to run. Keys are
/// addresses hashed for every tagged line and on every merge: FxHash reads
/// them eight bytes at a step (FNV-1a, a byte at a step, was a seventh of
/// the merging thread's time on a gateway's log).
type Fixed = rustc_hash::FxBuildHasher;

/// The connections seen most recently, in two halves: when the newer half
/// fills, the older one is dropped and the newer takes its place, so memory
/// stays bounded and a connection still in use is not forgotten with the rest.
#[derive(Debug, Clone)]
pub struct Recent<V> {
    new: HashMap<String, V, Fixed>,
    old: HashMap<String, V, Fixed>,
}

impl<V> Default for Recent<V> {
    fn default() -> Self {
        Recent {
            new: HashMap::default(),
            old: HashMap::default(),
        }
    }
}

impl<V: Default> Recent<V> {
    /// The entry of `key`; looking it up counts as a use, so an entry in
    /// the older half moves to the newer.
    pub fn get(&mut self, key: &str) -> Option<&V> {
        if !self.new.contains_key(key) {
            let v = self.old.remove(key)?;
            self.insert(key.to_string(), v);
        }
        self.new.get(key)
    }

    /// Changes the entry of `key` (made empty if new) with `f`.
    pub fn update<K: AsRef<str> + Into<String>>(&mut self, key: K, f: impl FnOnce(&mut V)) {
        if let Some(v) = self.new.get_mut(key.as_ref()) {
            f(v);
            return;
        }
        let mut v = self.old.remove(key.as_ref()).unwrap_or_default();
        f(&mut v);
        self.insert(key.into(), v);
    }

    fn insert(&mut self, key: String, v: V) {
        if self.new.len() >= MAX_CONNS {
            self.old = std::mem::take(&mut self.new);
        }
        self.new.insert(key, v);
    }

    /// Folds a later table into this one, older entries first (its keys
    /// moved, not copied).
    pub fn absorb(&mut self, later: Recent<V>, mut f: impl FnMut(&mut V, V)) {
        for (k, v) in later.old.into_iter().chain(later.new) {
            self.update(k, |x| f(x, v));
        }
    }
}

/// What a connection's lines said of where it goes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ConnCtx {
    pub dst: Option<String>,
    pub peer: Option<String>,
    pub port: Option<u16>,
}

impl ConnCtx {
    /// Takes what `later` knows, keeping what it does not say.
    pub fn absorb(&mut self, later: ConnCtx) {
        if later.dst.is_some() {
            self.dst = later.dst;
        }
        if later.peer.is_some() {
            self.peer = later.peer;
        }
        if later.port.is_some() {
            self.port = later.port;
        }
    }
}

/// Which of the context's parts an event did not name itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Missing {
    pub dst: bool,
    pub peer: bool,
    pub port: bool,
}

impl Missing {
    pub fn of(ev: &Event<'_>) -> Missing {
        Missing {
            dst: ev.dst().is_none(),
            peer: ev.endpoint().is_none(),
            port: ev.port().is_none(),
        }
    }

    /// What is still missing once `ctx` has filled its part.
    pub fn without(self, ctx: &ConnCtx) -> Missing {
        Missing {
            dst: self.dst && ctx.dst.is_none(),
            peer: self.peer && ctx.peer.is_none(),
            port: self.port && ctx.port.is_none(),
        }
    }

    pub fn any(self) -> bool {
        self.dst || self.peer || self.port
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_in_the_older_half_survives_the_rotation_it_causes() {
        let mut r: Recent<u32> = Recent::default();
        r.update("old", |v| *v = 7);
        for i in 0..MAX_CONNS - 1 {
            r.update(format!("c{i}"), |_| {});
        }
        // The newer half is full; "old" is still in it. One more rotates.
        r.update("rotate", |_| {});
        for i in 0..MAX_CONNS - 1 {
            r.update(format!("d{i}"), |_| {});
        }
        // "old" is in the older half and the newer is full again.
        r.update("old", |v| *v += 1);
        assert_eq!(r.get("old"), Some(&8));
    }

    #[test]
    fn a_full_half_drops_the_older_one_only() {
        let mut r: Recent<u32> = Recent::default();
        r.update("busy", |v| *v = 1);
        for i in 0..MAX_CONNS {
            r.update(format!("c{i}"), |v| *v = 2);
            // A connection in use moves to the newer half.
            assert_eq!(r.get("busy"), Some(&1));
        }
        r.update("one more", |v| *v = 3);
        assert_eq!(r.get("busy"), Some(&1));
        assert_eq!(r.get("one more"), Some(&3));
        assert!(r.new.len() + r.old.len() <= 2 * MAX_CONNS);
        for i in 0..MAX_CONNS {
            r.update(format!("d{i}"), |_| {});
        }
        assert_eq!(r.get("c0"), None, "the older half is dropped");
    }
}
