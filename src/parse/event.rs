//! The event model: one record per log entry, borrowing from the input buffer.
//!
//! Plain-text proxy lines are tokenized without allocating: every string is a
//! slice of the input and the small vectors live inline. JSON lines, ANSI
//! coloured lines and multi-line records fall back to owned strings (`Cow`).

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::Cell;

pub type Str<'a> = Cow<'a, str>;
pub type Fields<'a> = SmallVec<[(Str<'a>, Str<'a>); 6]>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    /// Accepts every spelling the producers use: `INFO`, `info`, `warning`,
    /// `ERR!`, `DBUG`, klog's `I`/`W`/`E`/`F`, logrus `fatal`/`panic`.
    pub fn parse(s: &str) -> Option<Level> {
        let l = match s.len() {
            1 => match s.as_bytes()[0] {
                b'I' => Level::Info,
                b'W' => Level::Warn,
                b'E' | b'F' => Level::Error,
                _ => return None,
            },
            _ => match s.to_ascii_lowercase().as_str() {
                "trace" | "trce" => Level::Trace,
                "debug" | "dbug" => Level::Debug,
                "info" => Level::Info,
                "warn" | "warning" => Level::Warn,
                "error" | "err!" | "fatal" | "panic" | "crit" => Level::Error,
                _ => return None,
            },
        };
        Some(l)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    pub const ALL: [Level; 5] = [
        Level::Trace,
        Level::Debug,
        Level::Info,
        Level::Warn,
        Level::Error,
    ];
}

/// Which program wrote the line, as told by its grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Producer {
    /// linkerd2-proxy plain text, `[uptime] LEVEL …` (v2.91 → HEAD).
    ProxyPlain,
    /// linkerd2-proxy JSON (`LINKERD2_PROXY_LOG_FORMAT=json`).
    ProxyJson,
    /// linkerd2-proxy before stable-2.7: `LEVEL [uptime] target message`.
    ProxyLegacy,
    /// The proxy's access log, apache common format.
    AccessApache,
    /// The proxy's access log, JSON.
    AccessJson,
    /// Go control plane (and proxy-init ≥ v1.4), logrus text.
    Logrus,
    /// Go control plane, logrus JSON.
    LogrusJson,
    /// client-go's klog header lines.
    Klog,
    /// The Rust policy controller (kubert: RFC 3339 then the tracing layout).
    PolicyController,
    /// proxy-init ≤ v1.3, Go stdlib `log` lines.
    ProxyInit,
    /// A Rust panic with its note and backtrace.
    RustPanic,
    /// A Go panic with its goroutine dump.
    GoPanic,
    /// A Go program's stdlib `log` line (`2006/01/02 15:04:05 msg`) without
    /// proxy-init's marks: a webhook or tap server, or any Go program.
    GoLog,
    /// Kubernetes' own output pasted beside the logs: `kubectl describe`
    /// fields (container states, reasons, exit codes) and events.
    Kube,
    /// A `linkerd check` result line: `√`, `‼` or `×` and the check's name,
    /// with its hint lines.
    Check,
    /// A sentence of a ticket's prose (made by triage, never read from a
    /// log): what the reporter says they saw.
    Prose,
    /// A line of Prometheus exposition text: the proxy's (or the service
    /// mirror's) metrics, as `/metrics` or `linkerd diagnostics
    /// proxy-metrics` prints them.
    Metrics,
}

impl Producer {
    pub fn as_str(self) -> &'static str {
        match self {
            Producer::ProxyPlain => "proxy-plain",
            Producer::ProxyJson => "proxy-json",
            Producer::ProxyLegacy => "proxy-legacy",
            Producer::AccessApache => "access-apache",
            Producer::AccessJson => "access-json",
            Producer::Logrus => "logrus",
            Producer::LogrusJson => "logrus-json",
            Producer::Klog => "klog",
            Producer::PolicyController => "policy-controller",
            Producer::ProxyInit => "proxy-init",
            Producer::RustPanic => "rust-panic",
            Producer::GoPanic => "go-panic",
            Producer::GoLog => "go-log",
            Producer::Kube => "kube",
            Producer::Check => "check",
            Producer::Prose => "prose",
            Producer::Metrics => "metrics",
        }
    }

    pub fn is_proxy(self) -> bool {
        matches!(
            self,
            Producer::ProxyPlain | Producer::ProxyJson | Producer::ProxyLegacy
        )
    }
}

/// Which program printed a line, decided from the line's own marks (its
/// grammar, target, logrus fields, the container named by a prefix), never
/// from the wording of its message.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    Proxy,
    ProxyInit,
    Cni,
    Destination,
    Identity,
    Policy,
    ServiceMirror,
    Injector,
    Viz,
    /// A Linkerd Go controller whose line does not say which one.
    ControlPlane,
    /// Kubernetes itself: `kubectl describe` and events.
    Kubernetes,
    /// The `linkerd` CLI (`linkerd check`).
    Cli,
    /// The person who wrote a ticket, in their own words.
    Reporter,
    /// An application container's own output.
    Application,
    /// No mark tells: unparsed text, or a Go `log` line of any program.
    #[default]
    Unknown,
}

impl Component {
    pub const ALL: [Component; 15] = [
        Component::Proxy,
        Component::ProxyInit,
        Component::Cni,
        Component::Destination,
        Component::Identity,
        Component::Policy,
        Component::ServiceMirror,
        Component::Injector,
        Component::Viz,
        Component::ControlPlane,
        Component::Kubernetes,
        Component::Cli,
        Component::Reporter,
        Component::Application,
        Component::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Component::Proxy => "proxy",
            Component::ProxyInit => "proxy-init",
            Component::Cni => "cni",
            Component::Destination => "destination",
            Component::Identity => "identity",
            Component::Policy => "policy",
            Component::ServiceMirror => "service-mirror",
            Component::Injector => "injector",
            Component::Viz => "viz",
            Component::ControlPlane => "control-plane",
            Component::Kubernetes => "kubernetes",
            Component::Cli => "linkerd-cli",
            Component::Reporter => "reporter",
            Component::Application => "application",
            Component::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The Go controllers of the control plane (a line of `ControlPlane`
    /// may be any of them).
    pub fn is_go_controller(self) -> bool {
        matches!(
            self,
            Component::Destination
                | Component::Identity
                | Component::ServiceMirror
                | Component::Injector
                | Component::Viz
                | Component::ControlPlane
        )
    }

    /// Does the line carry a mark of a Linkerd component?
    pub fn is_linkerd(self) -> bool {
        !matches!(
            self,
            Component::Kubernetes
                | Component::Application
                | Component::Unknown
                | Component::Reporter
        )
    }

    /// Is the line evidence of what happened (a program's output, not a
    /// person's words, and tied to a component or to Kubernetes)?
    pub fn is_attributed(self) -> bool {
        self.is_linkerd() || self == Component::Kubernetes
    }
}

/// What a line that no Linkerd grammar reads looks like, when its shape is
/// a well-known one: said to the user, and kept from Linkerd's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Foreign {
    /// A line from a container that is not Linkerd's (`--prefix`, stern).
    AppContainer,
    NginxError,
    /// nginx or Apache combined/common access log.
    HttpAccess,
    EnvoyAccess,
    JavaTrace,
    PythonTrace,
    Syslog,
    /// A Kubernetes manifest, `kubectl get`/`describe` output or YAML: not
    /// a log (its status fields and events are read as events).
    Manifest,
}

impl Foreign {
    pub fn as_str(self) -> &'static str {
        match self {
            Foreign::AppContainer => "application container output",
            Foreign::NginxError => "an nginx error log",
            Foreign::HttpAccess => "an HTTP server access log (nginx/Apache)",
            Foreign::EnvoyAccess => "an Envoy access log",
            Foreign::JavaTrace => "a Java stack trace",
            Foreign::PythonTrace => "a Python traceback",
            Foreign::Syslog => "a syslog or journal excerpt",
            Foreign::Manifest => "Kubernetes output or a manifest",
        }
    }
}

/// Log eras, as far as the format tells them apart. Advice depends on them
/// (`linkerd endpoints` before 2.10, `linkerd diagnostics policy` from 2.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Era {
    #[serde(rename = "2.7-2.9")]
    Upto2_9,
    #[serde(rename = "2.10-2.11")]
    V2_10,
    #[serde(rename = "2.12-2.14")]
    V2_12,
    #[serde(rename = "2.15+")]
    V2_15,
}

impl Era {
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Upto2_9 => "2.7-2.9",
            Era::V2_10 => "2.10-2.11",
            Era::V2_12 => "2.12-2.14",
            Era::V2_15 => "2.15+",
        }
    }

    /// The era of a Linkerd release (`2.10`, `stable-2.14.1`, `edge-24.5.1`).
    pub fn of_linkerd_version(v: &str) -> Option<Era> {
        let v = v.trim().trim_start_matches('v');
        if let Some(rest) = v.strip_prefix("edge-") {
            let year: u32 = rest.split('.').next()?.parse().ok()?;
            // edge-24.2 shipped 2.15; every edge release since is 2.15+.
            return Some(if year >= 24 {
                Era::V2_15
            } else if year >= 22 {
                Era::V2_12
            } else if year >= 21 {
                Era::V2_10
            } else {
                Era::Upto2_9
            });
        }
        let v = v.strip_prefix("stable-").unwrap_or(v);
        let mut it = v.split('.');
        let major: u32 = it.next()?.parse().ok()?;
        let minor: u32 = it
            .next()?
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .ok()?;
        if major != 2 {
            return None;
        }
        Some(Self::of_minor(minor))
    }

    fn of_minor(minor: u32) -> Era {
        match minor {
            0..=9 => Era::Upto2_9,
            10 | 11 => Era::V2_10,
            12..=14 => Era::V2_12,
            _ => Era::V2_15,
        }
    }

    /// The era of a proxy release (`2.210.4` from the proxy's startup banner).
    pub fn of_proxy_version(v: &str) -> Option<Era> {
        let mut it = v.split('.');
        if it.next()? != "2" {
            return None;
        }
        let minor: u32 = it.next()?.parse().ok()?;
        Some(match minor {
            0..=127 => Era::Upto2_9,
            128..=169 => Era::V2_10,
            170..=219 => Era::V2_12,
            _ => Era::V2_15,
        })
    }
}

/// What was stripped from the front of the line before tokenizing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wrapper<'a> {
    /// `kubectl logs --timestamps` (or stern `--timestamps`) RFC 3339 time.
    pub timestamp: Option<&'a str>,
    pub pod: Option<&'a str>,
    pub container: Option<&'a str>,
    /// `kubectl --prefix`, `stern`, `csv` (aggregator export), `quote` (`> `).
    pub kind: Option<&'static str>,
    /// Text before the record on the same line that no known wrapper
    /// explains (a shell prompt, a `Message:` field, an export's timestamp,
    /// a version label), kept rather than lost.
    pub lead: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span<'a> {
    pub name: Str<'a>,
    pub fields: SmallVec<[(Str<'a>, Str<'a>); 2]>,
}

impl<'a> Span<'a> {
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }
}

/// One log entry.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// 1-based number of the first physical line in its source.
    pub line: u64,
    /// Physical lines the event covers (panics and init output span several).
    pub lines: u32,
    pub producer: Producer,
    /// Which program printed it (`component::of`).
    pub component: Component,
    pub wrapper: Wrapper<'a>,
    /// Seconds since the proxy started.
    pub uptime: Option<f64>,
    /// Wall-clock time written by the producer itself (JSON, logrus, kubert).
    pub timestamp: Option<Str<'a>>,
    pub level: Option<Level>,
    pub thread: Option<Str<'a>>,
    pub spans: SmallVec<[Span<'a>; 12]>,
    pub target: Option<Str<'a>>,
    pub message: Option<Str<'a>>,
    pub fields: Fields<'a>,
    /// The line as the producer wrote it (wrappers stripped): evidence text.
    pub text: Str<'a>,
    /// The message and fields of a tracing line (after the target), the part
    /// rules read; empty for producers whose whole text is the body.
    pub body: &'a str,
    /// The head of the line was lost in the copy (`ThreadId(01) …` with no
    /// uptime or level); the rest was recovered leniently.
    pub truncated_head: bool,
    /// The line visibly ends mid-record (an unclosed bracket or quote): a
    /// hard-wrapped copy whose next physical line may continue it.
    pub cut: bool,
    /// Continuation lines of a multi-line event, joined with `\n`.
    pub continuation: Option<String>,
    /// A line of exposition text: what it declares or samples (a sample's
    /// labels are its fields).
    pub metric: Option<Metric<'a>>,
    /// Which span names it holds, made at the first look-up.
    pub span_names: SpanNames,
    /// The id of the line shape it was read by
    /// ([`template`](super::template)), the same in every thread; 0 when
    /// it was read without one.
    pub shape: u64,
}

/// The span names an event holds, as one bit per name's hash, and the span
/// count they were taken at (spans pushed since make them stale): a look-up
/// of a span the event lacks, most of them, ends without comparing names.
#[derive(Debug, Clone, Default)]
pub struct SpanNames(Cell<(u64, usize)>);

/// Set in a mask that was made.
const MADE: u64 = 1 << 63;

const fn name_bit(name: &str) -> u64 {
    let b = name.as_bytes();
    let (mut h, mut i) = (0xcbf2_9ce4_8422_2325u64, 0);
    while i < b.len() {
        h = (h ^ b[i] as u64).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    1 << (h % 63)
}

/// Span names looked up together, with their bits made at compile time
/// ([`span_names!`](crate::span_names)).
pub struct Names {
    pub list: &'static [&'static str],
    pub mask: u64,
}

impl Names {
    pub const fn new(list: &'static [&'static str]) -> Names {
        let (mut mask, mut i) = (0, 0);
        while i < list.len() {
            mask |= name_bit(list[i]);
            i += 1;
        }
        Names { list, mask }
    }
}

/// `span_names!["a", "b"]`: a `&'static Names`.
#[macro_export]
macro_rules! span_names {
    ($($n:literal),+ $(,)?) => {{
        const N: $crate::parse::event::Names = $crate::parse::event::Names::new(&[$($n),+]);
        &N
    }};
}

/// What a line of Prometheus exposition text holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric<'a> {
    Sample {
        name: &'a str,
        value: f64,
        /// Milliseconds since the epoch (seconds in OpenMetrics), when given.
        timestamp: Option<f64>,
    },
    /// `# HELP name text` (the text is the event's message).
    Help {
        name: &'a str,
    },
    Type {
        name: &'a str,
        kind: &'a str,
    },
    Unit {
        name: &'a str,
    },
    /// `# EOF`: the end of an OpenMetrics scrape.
    Eof,
    /// `# POD name (i of n)`: `linkerd diagnostics proxy-metrics` starts a
    /// pod's scrape.
    Pod {
        name: &'a str,
        index: u32,
        of: u32,
    },
    /// A bare `#` of the same framing.
    Frame,
}

impl<'a> Event<'a> {
    pub fn new(producer: Producer, text: Str<'a>) -> Self {
        Event {
            line: 0,
            lines: 1,
            producer,
            component: Component::Unknown,
            wrapper: Wrapper::default(),
            uptime: None,
            timestamp: None,
            level: None,
            thread: None,
            spans: SmallVec::new(),
            target: None,
            message: None,
            fields: SmallVec::new(),
            text,
            body: "",
            truncated_head: false,
            cut: false,
            continuation: None,
            metric: None,
            span_names: SpanNames::default(),
            shape: 0,
        }
    }

    /// Makes this event a fresh one over `text`, in place: the tokenizer
    /// reuses one event for every line instead of moving a new one (about
    /// 2 KB with its inline spans) through each call.
    pub fn reset(&mut self, producer: Producer, text: &'a str) {
        self.line = 0;
        self.lines = 1;
        self.producer = producer;
        self.component = Component::Unknown;
        self.wrapper = Wrapper::default();
        self.uptime = None;
        self.timestamp = None;
        self.level = None;
        self.thread = None;
        self.spans.clear();
        self.target = None;
        self.message = None;
        self.fields.clear();
        self.text = Cow::Borrowed(text);
        self.body = "";
        self.truncated_head = false;
        self.cut = false;
        self.continuation = None;
        self.metric = None;
        self.span_names = SpanNames::default();
        self.shape = 0;
    }

    fn span_mask(&self) -> u64 {
        let (mask, n) = self.span_names.0.get();
        if mask & MADE != 0 && n == self.spans.len() {
            return mask;
        }
        let mask = self.spans.iter().fold(MADE, |m, s| m | name_bit(&s.name));
        self.span_names.0.set((mask, self.spans.len()));
        mask
    }

    /// Might a span of one of these names be here? False is sure.
    pub fn may_have_span(&self, names: &Names) -> bool {
        self.span_mask() & names.mask != 0
    }

    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// The first span field with this key, innermost span first.
    pub fn span_field(&self, key: &str) -> Option<&str> {
        self.spans.iter().rev().find_map(|s| s.field(key))
    }

    pub fn span(&self, name: &str) -> Option<&Span<'a>> {
        if self.span_mask() & name_bit(name) == 0 {
            return None;
        }
        self.spans.iter().rev().find(|s| s.name == name)
    }

    pub fn has_span(&self, name: &str) -> bool {
        self.span_mask() & name_bit(name) != 0 && self.spans.iter().any(|s| s.name == name)
    }

    pub fn message(&self) -> &str {
        self.message.as_deref().unwrap_or("")
    }

    pub fn target(&self) -> &str {
        self.target.as_deref().unwrap_or("")
    }
}

impl Default for Event<'_> {
    fn default() -> Self {
        Event::new(Producer::ProxyPlain, Cow::Borrowed(""))
    }
}

/// One unit of output: an event or a line no grammar matched.
#[derive(Debug, Clone)]
// The tokenizer keeps one record slot and lends it for every line; boxing
// the event would cost a heap allocation per line.
#[allow(clippy::large_enum_variant)]
pub enum Record<'a> {
    Event(Event<'a>),
    Unparsed {
        line: u64,
        text: Str<'a>,
        /// The shape the line has when it is another program's output.
        looks_like: Option<Foreign>,
    },
}

impl<'a> Record<'a> {
    pub fn line(&self) -> u64 {
        match self {
            Record::Event(e) => e.line,
            Record::Unparsed { line, .. } => *line,
        }
    }

    pub fn lines(&self) -> u32 {
        match self {
            Record::Event(e) => e.lines,
            Record::Unparsed { .. } => 1,
        }
    }
}
