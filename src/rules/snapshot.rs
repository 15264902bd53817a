//! Metrics snapshots assembled from exposition lines read in parallel
//! blocks: a `# POD name (i of n)` header starts a pod's snapshot, `# EOF`
//! ends one, a new input starts another. What a block holds before its
//! first header continues the snapshot the block before left open, so
//! snapshots come out the same however the input is cut. Of each pod only
//! the first and the latest snapshot are kept (the latest decides, the first
//! tells what grew), so memory stays flat however many are read.

/// Pods (or unnamed proxies) whose snapshots are kept.
pub const MAX_PODS: usize = 256;
/// Bytes (estimated by `Reduce::weight`) of the snapshots kept: a pod's
/// reduced snapshot can hold thousands of series, so many pods are bounded
/// by their size as well as their number.
pub const MAX_KEPT_BYTES: usize = 16 << 20;

/// What a snapshot reduces its samples to; merging adds a later part of the
/// same snapshot.
pub trait Reduce: Default {
    fn merge(&mut self, later: Self);
    /// About the bytes it holds, for `MAX_KEPT_BYTES`.
    fn weight(&self) -> usize;
}

/// One line of a snapshot kept as evidence: where it is and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub line: u64,
    pub text: String,
    pub value: f64,
}

/// The snapshot's own clock, from the process metrics.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    pub start: Option<Line>,
    pub uptime: Option<Line>,
    /// `process_clock_time_seconds` (2.17+).
    pub clock: Option<Line>,
}

impl Clock {
    fn see(&mut self, name: &str, line: u64, text: &str, value: f64) {
        let slot = match name {
            "process_start_time_seconds" => &mut self.start,
            "process_uptime_seconds_total" => &mut self.uptime,
            "process_clock_time_seconds" => &mut self.clock,
            _ => return,
        };
        *slot = Some(Line {
            line,
            text: text.to_string(),
            value,
        });
    }

    fn merge(&mut self, later: Clock) {
        for (a, b) in [
            (&mut self.start, later.start),
            (&mut self.uptime, later.uptime),
            (&mut self.clock, later.clock),
        ] {
            if b.is_some() {
                *a = b;
            }
        }
    }

    /// The proxy's notion of now (UNIX seconds), and the lines that tell it.
    pub fn now(&self) -> Option<(f64, Vec<&Line>)> {
        if let Some(c) = &self.clock {
            return Some((c.value, vec![c]));
        }
        match (&self.start, &self.uptime) {
            (Some(s), Some(u)) => Some((s.value + u.value, vec![s, u])),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Snapshot<D> {
    pub source: String,
    /// The pod a `# POD` header named.
    pub pod: Option<String>,
    /// Its first line.
    pub line: u64,
    pub clock: Clock,
    pub samples: u64,
    pub data: D,
}

impl<D: Reduce> Snapshot<D> {
    fn new(source: &str, line: u64, pod: Option<&str>) -> Self {
        Snapshot {
            source: source.to_string(),
            pod: pod.map(str::to_string),
            line,
            clock: Clock::default(),
            samples: 0,
            data: D::default(),
        }
    }

    fn merge(&mut self, later: Snapshot<D>) {
        self.clock.merge(later.clock);
        self.samples += later.samples;
        self.data.merge(later.data);
    }

    /// Snapshots of one proxy process share this key: its pod, and its
    /// start time (a restart resets every counter).
    fn key(&self) -> String {
        let start = self.clock.start.as_ref().map(|s| s.value.to_bits());
        match (&self.pod, start) {
            (None, None) => format!("{} {}", self.source, self.line),
            (p, s) => format!("{} {s:?}", p.as_deref().unwrap_or("")),
        }
    }

    /// The name a finding's sources cite: the input, and the pod.
    pub fn proxy(&self) -> String {
        match &self.pod {
            Some(p) => format!("{} {p}", self.source),
            None => self.source.clone(),
        }
    }
}

/// The snapshots of one proxy: the first and, when there were more, the
/// latest.
#[derive(Debug, Clone)]
pub struct Pod<D> {
    pub first: Snapshot<D>,
    pub latest: Option<Snapshot<D>>,
}

impl<D> Pod<D> {
    /// The snapshot that decides, and the earlier one deltas start from.
    pub fn now_and_before(&self) -> (&Snapshot<D>, Option<&Snapshot<D>>) {
        match &self.latest {
            Some(l) => (l, Some(&self.first)),
            None => (&self.first, None),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Snapshots<D> {
    /// Samples before any header in this state: the rest of the snapshot
    /// the state before left open.
    head: Option<Snapshot<D>>,
    /// A header or `# EOF` was seen: `head` ended there.
    cut: bool,
    open: Option<Snapshot<D>>,
    pods: Vec<(String, Pod<D>)>,
    /// The weight of the snapshots in `pods`.
    kept: usize,
    /// Snapshots not kept: of pods past `MAX_PODS` or `MAX_KEPT_BYTES`.
    pub dropped: u64,
}

impl<D> Default for Snapshots<D> {
    fn default() -> Self {
        Snapshots {
            head: None,
            cut: false,
            open: None,
            pods: Vec::new(),
            kept: 0,
            dropped: 0,
        }
    }
}

impl<D: Reduce> Snapshots<D> {
    /// The snapshot a sample line belongs to, its clock updated.
    pub fn sample(
        &mut self,
        source: &str,
        line: u64,
        name: &str,
        value: f64,
        text: &str,
    ) -> &mut D {
        let same = |s: &Option<Snapshot<D>>| s.as_ref().is_some_and(|s| s.source == source);
        if self.open.is_some() && !same(&self.open) {
            self.end();
        }
        let snap = if self.open.is_some() || self.cut {
            self.open
                .get_or_insert_with(|| Snapshot::new(source, line, None))
        } else {
            self.head
                .get_or_insert_with(|| Snapshot::new(source, line, None))
        };
        snap.samples += 1;
        snap.clock.see(name, line, text, value);
        &mut snap.data
    }

    /// A `# POD` header: the pod's snapshot starts here.
    pub fn header(&mut self, source: &str, line: u64, pod: &str) {
        self.end();
        self.open = Some(Snapshot::new(source, line, Some(pod)));
    }

    /// `# EOF`: the open snapshot is complete.
    pub fn end(&mut self) {
        self.cut = true;
        self.close();
    }

    fn close(&mut self) {
        if let Some(s) = self.open.take() {
            self.keep(s);
        }
    }

    /// Keeps a complete snapshot: the first and latest of its pod.
    fn keep(&mut self, s: Snapshot<D>) {
        if s.samples == 0 {
            return;
        }
        let key = s.key();
        let w = s.data.weight();
        if let Some((_, p)) = self.pods.iter_mut().find(|(k, _)| *k == key) {
            // A pod's later snapshot replaces its latest: the latest decides.
            let old = p.latest.as_ref().map_or(0, |l| l.data.weight());
            if self.kept - old + w > MAX_KEPT_BYTES {
                self.dropped += 1;
                return;
            }
            self.kept = self.kept - old + w;
            p.latest = Some(s);
        } else if self.pods.len() < MAX_PODS && self.kept + w <= MAX_KEPT_BYTES {
            self.kept += w;
            self.pods.push((
                key,
                Pod {
                    first: s,
                    latest: None,
                },
            ));
        } else {
            self.dropped += 1;
        }
    }

    /// Folds the state of the next block of input into this one.
    pub fn merge(&mut self, later: Snapshots<D>) {
        if let Some(h) = later.head {
            match self.open.as_mut() {
                Some(o) if o.source == h.source => o.merge(h),
                _ => {
                    self.close();
                    self.open = Some(h);
                }
            }
        }
        if later.cut {
            self.close();
            for (_, p) in later.pods {
                self.keep(p.first);
                if let Some(l) = p.latest {
                    self.keep(l);
                }
            }
            self.open = later.open;
        }
        self.dropped += later.dropped;
    }

    /// Every pod's snapshots, in input order of their first, and the number
    /// of snapshots not kept.
    pub fn finish(mut self) -> (Vec<Pod<D>>, u64) {
        let mut out = Snapshots::default();
        if let Some(h) = self.head.take() {
            out.keep(h);
        }
        self.close();
        out.dropped = self.dropped;
        for (_, p) in self.pods {
            out.keep(p.first);
            if let Some(l) = p.latest {
                out.keep(l);
            }
        }
        let dropped = out.dropped;
        (out.pods.into_iter().map(|(_, p)| p).collect(), dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Clone, PartialEq)]
    struct Lines(Vec<u64>);

    impl Reduce for Lines {
        fn merge(&mut self, later: Self) {
            self.0.extend(later.0);
        }

        fn weight(&self) -> usize {
            self.0.len() * 8
        }
    }

    enum L {
        Sample(&'static str, f64),
        Pod(&'static str),
        Eof,
    }

    /// Per snapshot: its pod, its lines, the lines of the one before it.
    type Read = Vec<(Option<String>, Vec<u64>, Option<Vec<u64>>)>;

    fn read(lines: &[L], cuts: &[usize]) -> Read {
        let mut total: Snapshots<Lines> = Snapshots::default();
        let mut st = Snapshots::default();
        for (i, l) in lines.iter().enumerate() {
            if cuts.contains(&i) {
                total.merge(std::mem::take(&mut st));
            }
            let n = i as u64 + 1;
            match l {
                L::Sample(name, v) => st.sample("f", n, name, *v, "").0.push(n),
                L::Pod(p) => st.header("f", n, p),
                L::Eof => st.end(),
            }
        }
        total.merge(st);
        total
            .finish()
            .0
            .into_iter()
            .map(|p| {
                (
                    p.first.pod.clone(),
                    p.first.data.0.clone(),
                    p.latest.map(|l| l.data.0),
                )
            })
            .collect()
    }

    #[test]
    fn snapshots_do_not_depend_on_where_blocks_are_cut() {
        use L::*;
        let lines = [
            Sample("a_total", 1.0),
            Sample("process_start_time_seconds", 5.0),
            Eof,
            Sample("a_total", 2.0),
            Pod("web-1"),
            Sample("a_total", 3.0),
            Sample("process_start_time_seconds", 7.0),
            Pod("web-2"),
            Sample("a_total", 4.0),
            Pod("web-1"),
            Sample("a_total", 5.0),
            Sample("process_start_time_seconds", 7.0),
            Eof,
        ];
        let whole = read(&lines, &[]);
        assert_eq!(whole.len(), 4, "{whole:?}");
        assert_eq!(whole[2].0.as_deref(), Some("web-1"));
        assert_eq!(whole[2].2, Some(vec![11, 12]), "the latest web-1 snapshot");
        for cut in 1..lines.len() {
            assert_eq!(read(&lines, &[cut]), whole, "cut at {cut}");
            for cut2 in cut + 1..lines.len() {
                assert_eq!(read(&lines, &[cut, cut2]), whole, "cuts at {cut}, {cut2}");
            }
        }
    }
}
