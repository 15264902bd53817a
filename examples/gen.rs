//! Deterministic generator of large, realistic Linkerd proxy logs (for benchmarks and tests).
//!
//! ```text
//! cargo run --release --example gen -- --size 1G --seed 1 \
//!     [--scenario gateway|healthy|mixed] [--format plain|json|mixed] \
//!     [--wrap none|timestamps|prefix] > big.log
//! # or, without cargo:
//! rustc -O --edition 2021 examples/gen.rs -o /tmp/gen && /tmp/gen --size 64M --seed 7 > x.log
//! ```
//!
//! * `--size N[K|M|G|T]` (binary multiples, default `64M`): the output is exactly that many bytes, rounded up to
//!   the end of the line that crosses the size. `--size 0` writes nothing.
//! * `--seed N` (default 1): the same seed and options always give byte-identical output.
//! * `--scenario`:
//!   - `gateway` (default): a busy multicluster gateway (linkerd-multicluster/linkerd-gateway) at `linkerd=debug`,
//!     stable-2.10 era proxy (~v2.13x, micro-second uptime, `ThreadId(NN)`). The log starts with the proxy startup
//!     sequence, then: mostly healthy h2 gateway traffic from ~500 client IPs to ~50 services (TLS peek, detection,
//!     h2 frames, endpoint `Connecting`/`Connected`, 200 responses); three destinations go through outages
//!     (`Failed to connect error=request timed out` + `Recovering`, `HTTP Balancer entering failfast after 3s`,
//!     `HTTP Balancer in failfast`, `Failed to proxy request: HTTP Balancer service in fail-fast`,
//!     `Handling error with HTTP response status=503 Service Unavailable`, `... service has recovered`);
//!     TCP health probes from 30 node IPs (10.240.0.4-33) to ports 4143 and 4181 (`Peeked bytes from TCP stream
//!     sz=0`, `port=4181 tls=None(NoClientHello) id_required=true`, `Connection closed error=identity required` /
//!     `error=Direct connections must be mutually authenticated`); kubelet probes of the admin port 4191.
//!   - `healthy`: the same traffic with no failing destination and no TCP probes: no WARN/ERROR line at all, no
//!     5xx and no `error=` field.
//!   - `mixed`: `gateway` plus some proxy JSON lines (both JSON timestamp styles), logrus lines from the control
//!     plane (text and JSON), `log`-crate events with the 4-space tail, and a few kubectl prose lines.
//! * `--format`: `plain` (default), `json` (every proxy event in the proxy JSON shape; uptime-string timestamps,
//!   or both styles in the `mixed` scenario) or `mixed` (30% of proxy events as JSON).
//! * `--wrap`: `none` (default), `timestamps` (kubectl `--timestamps`: an increasing RFC3339Nano UTC time with
//!   trailing zeros trimmed, then a space) or `prefix` (kubectl `--prefix`:
//!   `[pod/linkerd-gateway-7d9c8b6f5-x2k4q/linkerd-proxy] `; control-plane logrus lines get the destination pod's
//!   prefix). kubectl's own prose lines are never wrapped.
//!
//! Uptime is strictly increasing (every line advances it by at least 1 µs). Standard library only: this file
//! builds both as a cargo example and standalone with `rustc`.

use std::io::{self, Write};
use std::process::exit;

// ───────────────────────────── options ─────────────────────────────

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scenario {
    Gateway,
    Healthy,
    Mixed,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Plain,
    Json,
    Mixed,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wrap {
    None,
    Timestamps,
    Prefix,
}

pub struct Opts {
    pub size: u64,
    pub seed: u64,
    pub scenario: Scenario,
    pub format: Format,
    pub wrap: Wrap,
}

const USAGE: &str = "usage: gen --size N[K|M|G|T] [--seed N] [--scenario gateway|healthy|mixed] \
[--format plain|json|mixed] [--wrap none|timestamps|prefix]";

fn die(msg: &str) -> ! {
    eprintln!("gen: {msg}\n{USAGE}");
    exit(2)
}

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let t = s.trim_end_matches(['B', 'b']);
    let t = t.strip_suffix('i').unwrap_or(t);
    let (num, mul) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        't' | 'T' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        size: 64 << 20,
        seed: 1,
        scenario: Scenario::Gateway,
        format: Format::Plain,
        wrap: Wrap::None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if key == "-h" || key == "--help" {
            println!("{USAGE}");
            exit(0);
        }
        let val = match inline {
            Some(v) => v,
            None => args
                .next()
                .unwrap_or_else(|| die(&format!("missing value for {key}"))),
        };
        match key.as_str() {
            "--size" => {
                o.size = parse_size(&val).unwrap_or_else(|| die(&format!("bad size {val:?}")))
            }
            "--seed" => {
                o.seed = val
                    .parse()
                    .unwrap_or_else(|_| die(&format!("bad seed {val:?}")))
            }
            "--scenario" => {
                o.scenario = match val.as_str() {
                    "gateway" => Scenario::Gateway,
                    "healthy" => Scenario::Healthy,
                    "mixed" => Scenario::Mixed,
                    _ => die(&format!("bad scenario {val:?}")),
                }
            }
            "--format" => {
                o.format = match val.as_str() {
                    "plain" => Format::Plain,
                    "json" => Format::Json,
                    "mixed" => Format::Mixed,
                    _ => die(&format!("bad format {val:?}")),
                }
            }
            "--wrap" => {
                o.wrap = match val.as_str() {
                    "none" => Wrap::None,
                    "timestamps" => Wrap::Timestamps,
                    "prefix" => Wrap::Prefix,
                    _ => die(&format!("bad wrap {val:?}")),
                }
            }
            _ => die(&format!("unknown argument {a:?}")),
        }
    }
    o
}

// ───────────────────────────── PRNG (splitmix64) ─────────────────────────────

struct Rng(u64);

impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in `lo..=hi`.
    #[inline]
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `per_10k / 10000`.
    #[inline]
    fn chance(&mut self, per_10k: u64) -> bool {
        self.below(10_000) < per_10k
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

// ───────────────────────────── byte formatting helpers ─────────────────────────────

#[inline]
fn put_u(buf: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Right-aligned in `width` columns with `pad` (more digits if the number is larger).
#[inline]
fn put_u_pad(buf: &mut Vec<u8>, n: u64, width: usize, pad: u8) {
    let mut digits = 1;
    let mut x = n;
    while x >= 10 {
        x /= 10;
        digits += 1;
    }
    for _ in digits..width {
        buf.push(pad);
    }
    put_u(buf, n);
}

#[inline]
fn put_ip(buf: &mut Vec<u8>, ip: u32) {
    put_u(buf, (ip >> 24) as u64);
    buf.push(b'.');
    put_u(buf, ((ip >> 16) & 255) as u64);
    buf.push(b'.');
    put_u(buf, ((ip >> 8) & 255) as u64);
    buf.push(b'.');
    put_u(buf, (ip & 255) as u64);
}

#[inline]
fn put_addr(buf: &mut Vec<u8>, ip: u32, port: u16) {
    put_ip(buf, ip);
    buf.push(b':');
    put_u(buf, port as u64);
}

/// JSON string body escaping (no surrounding quotes).
#[inline]
fn put_json_esc(buf: &mut Vec<u8>, s: &[u8]) {
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0..=0x1f => b"\\u0000",
            _ => continue,
        };
        buf.extend_from_slice(&s[start..i]);
        if esc == b"\\u0000" {
            buf.extend_from_slice(b"\\u00");
            buf.push(b"0123456789abcdef"[(b >> 4) as usize]);
            buf.push(b"0123456789abcdef"[(b & 15) as usize]);
        } else {
            buf.extend_from_slice(esc);
        }
        start = i + 1;
    }
    buf.extend_from_slice(&s[start..]);
}

/// Rust `{:?}` of a `&str` body (no surrounding quotes).
#[inline]
fn put_rust_esc(buf: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        match b {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'\n' => buf.extend_from_slice(b"\\n"),
            b'\t' => buf.extend_from_slice(b"\\t"),
            b'\r' => buf.extend_from_slice(b"\\r"),
            _ => buf.push(b),
        }
    }
}

const fn ip4(a: u32, b: u32, c: u32, d: u32) -> u32 {
    (a << 24) | (b << 16) | (c << 8) | d
}

/// Days since 1970-01-01 → (year, month, day). (H. Hinnant's civil_from_days.)
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

// ───────────────────────────── field values ─────────────────────────────

/// A field value. `S` is a Display value (raw in plain mode, a string in JSON), `Q` a `&str` recorded through
/// `record_str` (Rust-quoted in plain mode), `U`/`B` are numbers/booleans (bare in plain, native in JSON),
/// `A` is a socket address (Display), `Z3` a 3-digit zero-padded number, `P` a concatenation (Display).
#[derive(Clone, Copy)]
enum V<'a> {
    S(&'a str),
    #[allow(dead_code)]
    Q(&'a str),
    U(u64),
    B(bool),
    A(u32, u16),
    Z3(u64),
    P(&'a [V<'a>]),
}

/// Writes `v` in a "raw" context: plain mode, or inside a JSON string when `json`.
fn put_raw(buf: &mut Vec<u8>, v: &V, json: bool) {
    match *v {
        V::S(s) | V::Q(s) => {
            if json {
                put_json_esc(buf, s.as_bytes())
            } else {
                buf.extend_from_slice(s.as_bytes())
            }
        }
        V::U(n) => put_u(buf, n),
        V::B(b) => buf.extend_from_slice(if b { b"true" } else { b"false" }),
        V::A(ip, port) => put_addr(buf, ip, port),
        V::Z3(n) => put_u_pad(buf, n, 3, b'0'),
        V::P(parts) => {
            for p in parts {
                put_raw(buf, p, json)
            }
        }
    }
}

/// Writes a field value as the plain formatter (`DefaultVisitor`) would.
fn put_plain(buf: &mut Vec<u8>, v: &V) {
    match *v {
        V::Q(s) => {
            buf.push(b'"');
            put_rust_esc(buf, s.as_bytes());
            buf.push(b'"');
        }
        _ => put_raw(buf, v, false),
    }
}

/// Writes a field value as tracing-serde would (numbers/bools native, everything else a JSON string).
fn put_json(buf: &mut Vec<u8>, v: &V) {
    match *v {
        V::U(_) | V::B(_) => put_raw(buf, v, true),
        _ => {
            buf.push(b'"');
            put_raw(buf, v, true);
            buf.push(b'"');
        }
    }
}

// ───────────────────────────── emitter ─────────────────────────────

const DEBUG: usize = 1;
const INFO: usize = 2;
const WARN: usize = 3;
#[allow(dead_code)]
const ERROR: usize = 4;
const LVL_PLAIN: [&str; 5] = ["TRACE", "DEBUG", " INFO", " WARN", "ERROR"];
const LVL_JSON: [&str; 5] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"];

const PROXY_PREFIX: &[u8] = b"[pod/linkerd-gateway-7d9c8b6f5-x2k4q/linkerd-proxy] ";
const DST_PREFIX: &[u8] = b"[pod/linkerd-destination-5778b7b86-djhsq/destination] ";

/// Writes log lines into `out`. One event = `ev` … `end`, with the tracing-subscriber call order
/// (spans, target, message, fields); JSON events are assembled at `end`.
struct Em {
    out: Vec<u8>,
    rng: Rng,
    up_us: u64,
    wall0_ns: u64,
    wrap: Wrap,
    format: Format,
    mixed: bool,
    // per event
    json: bool,
    rfc: bool,
    lvl: usize,
    tid: u8,
    target: &'static str,
    nspans: u32,
    sp_name: &'static str,
    sp_nf: u32,
    body: u32,
    js: Vec<u8>,
    jf: Vec<u8>,
    // date cache for the current wall-clock second
    dsec: u64,
    dbuf: Vec<u8>,
}

impl Em {
    /// Advances the uptime by `dt` µs (at least 1, so time is strictly increasing).
    #[inline]
    fn tick(&mut self, dt: u64) {
        self.up_us += dt.max(1);
    }

    /// `YYYY-MM-DDTHH:MM:SS` for an epoch second (cached).
    fn put_datetime(&mut self, sec: u64) {
        if sec != self.dsec || self.dbuf.is_empty() {
            self.dsec = sec;
            let (y, m, d) = civil_from_days((sec / 86_400) as i64);
            let s = sec % 86_400;
            let b = &mut self.dbuf;
            b.clear();
            put_u_pad(b, y as u64, 4, b'0');
            b.push(b'-');
            put_u_pad(b, m as u64, 2, b'0');
            b.push(b'-');
            put_u_pad(b, d as u64, 2, b'0');
            b.push(b'T');
            put_u_pad(b, s / 3600, 2, b'0');
            b.push(b':');
            put_u_pad(b, s / 60 % 60, 2, b'0');
            b.push(b':');
            put_u_pad(b, s % 60, 2, b'0');
        }
        self.out.extend_from_slice(&self.dbuf);
    }

    fn wall_ns(&self) -> u64 {
        self.wall0_ns + self.up_us * 1000
    }

    /// kubectl `--timestamps` / `--prefix` wrapper for a line produced by a container.
    fn wrap_prefix(&mut self, prefix: &[u8]) {
        match self.wrap {
            Wrap::None => {}
            Wrap::Prefix => self.out.extend_from_slice(prefix),
            Wrap::Timestamps => {
                // kubelet adds a small, jittered lag; jitter < 1 µs keeps it strictly increasing.
                let ns = self.wall_ns() + 183_000 + self.rng.below(1000);
                self.put_datetime(ns / 1_000_000_000);
                let mut frac = ns % 1_000_000_000;
                if frac != 0 {
                    // Go RFC3339Nano: trailing zeros trimmed.
                    let mut w = 9;
                    while frac.is_multiple_of(10) {
                        frac /= 10;
                        w -= 1;
                    }
                    self.out.push(b'.');
                    put_u_pad(&mut self.out, frac, w, b'0');
                }
                self.out.extend_from_slice(b"Z ");
            }
        }
    }

    fn put_uptime(buf: &mut Vec<u8>, up_us: u64) {
        buf.push(b'[');
        put_u_pad(buf, up_us / 1_000_000, 6, b' ');
        buf.push(b'.');
        put_u_pad(buf, up_us % 1_000_000, 6, b'0');
        buf.extend_from_slice(b"s]");
    }

    /// Starts a proxy event.
    fn ev(&mut self, lvl: usize, tid: u8) {
        self.wrap_prefix(PROXY_PREFIX);
        self.json = match self.format {
            Format::Plain => self.mixed && self.rng.chance(400),
            Format::Json => true,
            Format::Mixed => self.rng.chance(3000),
        };
        self.lvl = lvl;
        self.tid = tid;
        self.nspans = 0;
        self.body = 0;
        if self.json {
            self.rfc = self.mixed && self.rng.chance(5000);
            self.js.clear();
            self.jf.clear();
        } else {
            Self::put_uptime(&mut self.out, self.up_us);
            self.out.push(b' ');
            self.out.extend_from_slice(LVL_PLAIN[lvl].as_bytes());
            self.out.extend_from_slice(b" ThreadId(");
            put_u_pad(&mut self.out, tid as u64, 2, b'0');
            self.out.extend_from_slice(b") ");
        }
    }

    /// A span without fields.
    fn sp(&mut self, name: &'static str) {
        if self.json {
            if self.nspans > 0 {
                self.js.push(b',');
            }
            self.js.extend_from_slice(b"{\"name\":\"");
            self.js.extend_from_slice(name.as_bytes());
            self.js.extend_from_slice(b"\"}");
        } else {
            self.out.extend_from_slice(name.as_bytes());
            self.out.push(b':');
        }
        self.nspans += 1;
    }

    /// Opens a span with fields; follow with `sf`… and `spc`.
    fn spo(&mut self, name: &'static str) {
        if self.json {
            if self.nspans > 0 {
                self.js.push(b',');
            }
            self.js.push(b'{');
        } else {
            self.out.extend_from_slice(name.as_bytes());
            self.out.push(b'{');
        }
        self.sp_name = name;
        self.sp_nf = 0;
    }

    fn sf(&mut self, key: &str, v: V) {
        if self.json {
            self.js.push(b'"');
            self.js.extend_from_slice(key.as_bytes());
            self.js.extend_from_slice(b"\":");
            put_json(&mut self.js, &v);
            self.js.push(b',');
        } else {
            if self.sp_nf > 0 {
                self.out.push(b' ');
            }
            self.out.extend_from_slice(key.as_bytes());
            self.out.push(b'=');
            put_plain(&mut self.out, &v);
        }
        self.sp_nf += 1;
    }

    fn spc(&mut self) {
        if self.json {
            self.js.extend_from_slice(b"\"name\":\"");
            self.js.extend_from_slice(self.sp_name.as_bytes());
            self.js.extend_from_slice(b"\"}");
        } else {
            self.out.extend_from_slice(b"}:");
        }
        self.nspans += 1;
    }

    fn tgt(&mut self, t: &'static str) {
        if self.json {
            self.target = t;
        } else {
            if self.nspans > 0 {
                self.out.push(b' ');
            }
            self.out.extend_from_slice(t.as_bytes());
            self.out.extend_from_slice(b": ");
        }
    }

    /// The event message (a format-string message: written first, raw).
    fn msgv(&mut self, v: V) {
        if self.json {
            if self.body > 0 {
                self.jf.push(b',');
            }
            self.jf.extend_from_slice(b"\"message\":\"");
            put_raw(&mut self.jf, &v, true);
            self.jf.push(b'"');
        } else {
            if self.body > 0 {
                self.out.push(b' ');
            }
            put_raw(&mut self.out, &v, false);
        }
        self.body += 1;
    }

    fn msg(&mut self, m: &str) {
        self.msgv(V::S(m))
    }

    fn f(&mut self, key: &str, v: V) {
        if self.json {
            if self.body > 0 {
                self.jf.push(b',');
            }
            self.jf.push(b'"');
            self.jf.extend_from_slice(key.as_bytes());
            self.jf.extend_from_slice(b"\":");
            put_json(&mut self.jf, &v);
        } else {
            if self.body > 0 {
                self.out.push(b' ');
            }
            self.out.extend_from_slice(key.as_bytes());
            self.out.push(b'=');
            put_plain(&mut self.out, &v);
        }
        self.body += 1;
    }

    /// `log`-crate bridge: plain mode keeps the 4 spaces written for the skipped `log.*` fields
    /// (tracing-subscriber ≤ 0.3.19); JSON mode keeps the `log.*` keys.
    fn log_tail(&mut self, module: &str, file: &str, line: u64) {
        if self.json {
            self.f("log.target", V::S(module));
            self.f("log.module_path", V::S(module));
            self.f("log.file", V::S(file));
            self.f("log.line", V::U(line));
        } else {
            self.out.extend_from_slice(b"    ");
        }
    }

    fn end(&mut self) {
        if self.json {
            let o = &mut self.out;
            o.extend_from_slice(b"{\"timestamp\":\"");
            if self.rfc {
                let ns = self.wall0_ns + self.up_us * 1000;
                self.put_datetime(ns / 1_000_000_000);
                let o = &mut self.out;
                o.push(b'.');
                put_u_pad(o, ns % 1_000_000_000 / 1000, 6, b'0');
                o.push(b'Z');
            } else {
                Self::put_uptime(o, self.up_us);
            }
            let o = &mut self.out;
            o.extend_from_slice(b"\",\"level\":\"");
            o.extend_from_slice(LVL_JSON[self.lvl].as_bytes());
            o.extend_from_slice(b"\",\"fields\":{");
            o.extend_from_slice(&self.jf);
            o.extend_from_slice(b"},\"target\":\"");
            o.extend_from_slice(self.target.as_bytes());
            o.push(b'"');
            if self.nspans > 0 {
                o.extend_from_slice(b",\"spans\":[");
                o.extend_from_slice(&self.js);
                o.push(b']');
            }
            o.extend_from_slice(b",\"threadId\":\"ThreadId(");
            put_u(o, self.tid as u64);
            o.extend_from_slice(b")\"}");
        }
        self.out.push(b'\n');
    }

    /// `time="…"` for logrus (seconds precision).
    fn put_logrus_time(&mut self) {
        let sec = self.wall_ns() / 1_000_000_000;
        self.put_datetime(sec);
        self.out.push(b'Z');
    }
}

// ───────────────────────────── world model ─────────────────────────────

const GW_IP: u32 = ip4(10, 0, 57, 7);
const KUBELET_NODE: u32 = ip4(10, 240, 0, 9);
const GW_ID: &str =
    "linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local";
const IDENTITY_EP: u32 = ip4(10, 0, 12, 34);
const DST_EP: u32 = ip4(10, 0, 12, 41);

const APPS: &[&str] = &[
    "web",
    "api",
    "frontend",
    "checkout",
    "cart",
    "payments",
    "orders",
    "inventory",
    "catalog",
    "search",
    "users",
    "auth",
    "sessions",
    "notifications",
    "email",
    "billing",
    "invoices",
    "shipping",
    "recommendations",
    "reviews",
    "ratings",
    "ads",
    "currency",
    "emoji",
    "voting",
    "books",
    "authors",
    "ledger",
    "gateway-api",
    "reports",
    "metrics-api",
    "profile",
    "media",
    "thumbnails",
    "uploads",
    "pricing",
    "quotes",
    "tax",
    "fraud",
    "loyalty",
];
const NAMESPACES: &[&str] = &[
    "emojivoto",
    "booksapp",
    "shop",
    "payments",
    "identity",
    "media",
    "platform",
    "analytics",
    "default",
    "backoffice",
];
const PATHS_HTTP: &[&str] = &[
    "/",
    "/api/v1/items",
    "/api/v1/items/42",
    "/api/list",
    "/api/vote?choice=:doughnut:",
    "/healthz",
    "/v2/orders",
    "/v2/orders/9f1c/status",
    "/static/app.js",
    "/users/me",
    "/search?q=linkerd",
    "/metrics-summary",
];
const PATHS_GRPC: &[&str] = &[
    "/emojivoto.v1.EmojiService/ListAll",
    "/emojivoto.v1.VotingService/VoteDoughnut",
    "/shop.v1.CartService/GetCart",
    "/payments.v1.Charge/Create",
    "/grpc.health.v1.Health/Check",
    "/catalog.v1.Catalog/Search",
];

struct Svc {
    name: String,
    ns: String,
    auth: String, // host:port
    h2: bool,
    grpc: bool,
    eps: Vec<(u32, u16)>,
    failing: bool,
    err: &'static str,
    outage: bool,
    toggle_at: u64,
    ff_at: u64,
    ff_on: bool,
    reconn_at: u64,
    owner_ip: u32,
    owner_port: u16,
}

struct Client {
    ip: u32,
    id: String, // Some(ClientId("…")) rendering
}

struct World {
    svcs: Vec<Svc>,
    clients: Vec<Client>,
    nodes: Vec<u32>,
    failing: Vec<usize>,
    next_probe: u64,
    probe_rr: usize,
    next_admin: u64,
    probes: bool,
}

impl World {
    fn new(rng: &mut Rng, scenario: Scenario) -> World {
        // ~50 distinct services.
        let mut svcs = Vec::new();
        let mut used = std::collections::HashSet::new();
        let mut next_pod = 0u32;
        while svcs.len() < 50 {
            let app = *rng.pick(APPS);
            let ns = *rng.pick(NAMESPACES);
            if !used.insert((app, ns)) {
                continue;
            }
            let grpc = rng.chance(2500);
            let port: u16 = if grpc {
                *rng.pick(&[8080u16, 9090, 50051])
            } else {
                *rng.pick(&[80u16, 80, 80, 8080, 8000])
            };
            let tport: u16 = if grpc {
                port
            } else {
                *rng.pick(&[8080u16, 8000, 3000, 80, 5000])
            };
            let neps = rng.range(1, 6) as usize;
            let eps = (0..neps)
                .map(|_| {
                    next_pod += 1 + rng.below(40) as u32;
                    (
                        ip4(10, 0, 20 + (next_pod / 250) % 200, 2 + next_pod % 250),
                        tport,
                    )
                })
                .collect();
            let auth = format!("{app}.{ns}.svc.cluster.local:{port}");
            svcs.push(Svc {
                name: app.to_string(),
                ns: ns.to_string(),
                auth,
                h2: grpc || rng.chance(2000),
                grpc,
                eps,
                failing: false,
                err: "request timed out",
                outage: false,
                toggle_at: u64::MAX,
                ff_at: u64::MAX,
                ff_on: false,
                reconn_at: u64::MAX,
                owner_ip: 0,
                owner_port: 0,
            });
        }
        // ~500 clients: remote-cluster proxies (SNATed through 10.240.1-2.x) with their identities.
        let ids: Vec<String> = (0..60)
            .map(|_| {
                format!(
                    "{}.{}.serviceaccount.identity.linkerd.cluster.local",
                    rng.pick(APPS),
                    rng.pick(NAMESPACES)
                )
            })
            .collect();
        let clients = (0..500u32)
            .map(|i| Client {
                ip: ip4(10, 240, 1 + i / 250, 4 + i % 250),
                id: format!(
                    "Some(ClientId(\"{}\"))",
                    ids[rng.below(ids.len() as u64) as usize]
                ),
            })
            .collect::<Vec<_>>();
        let nodes = (4..34).map(|d| ip4(10, 240, 0, d)).collect();
        let mut w = World {
            svcs,
            clients,
            nodes,
            failing: Vec::new(),
            next_probe: 0,
            probe_rr: 0,
            next_admin: 0,
            probes: scenario != Scenario::Healthy,
        };
        if scenario != Scenario::Healthy {
            // Three failing destinations among the moderately popular services.
            while w.failing.len() < 3 {
                let i = rng.range(1, 24) as usize;
                if !w.failing.contains(&i) {
                    w.failing.push(i);
                }
            }
            let errs = [
                "request timed out",
                "request timed out",
                "Connection refused (os error 111)",
            ];
            for (k, &i) in w.failing.iter().enumerate() {
                let c = &w.clients[rng.below(500) as usize];
                let s = &mut w.svcs[i];
                s.failing = true;
                s.err = errs[k];
                s.owner_ip = c.ip;
                s.owner_port = rng.range(32768, 60999) as u16;
            }
        }
        w
    }

    /// Popularity-skewed service choice.
    fn pick_svc(&self, rng: &mut Rng) -> usize {
        let n = self.svcs.len() as u64;
        let k = rng.below(n) + 1;
        rng.below(k) as usize
    }
}

// ───────────────────────────── flows ─────────────────────────────

// startup
const ST_RT: u8 = 1;
const ST_ADMIN: u8 = 2;
const ST_IN: u8 = 3;
const ST_OUT: u8 = 4;
const ST_TAP: u8 = 5;
const ST_LOCALID: u8 = 6;
const ST_IDVIA: u8 = 7;
const ST_DSTVIA: u8 = 8;
const ST_ID_CONNECTING: u8 = 9;
const ST_ID_CONNECTED: u8 = 10;
const ST_CERTIFIED: u8 = 11;
const ST_DST_CONNECTING: u8 = 12;
const ST_DST_CONNECTED: u8 = 13;
// gateway connection
const G_PEEK: u8 = 20;
const G_TLS: u8 = 21;
const G_DETECT: u8 = 22;
const G_SET_R: u8 = 23;
const G_SET_W: u8 = 24;
const G_REQ: u8 = 25;
const G_GOAWAY: u8 = 26;
const G_CLOSE: u8 = 27;
const G_CLOSE_RESET: u8 = 28;
// per request (queued by G_REQ)
const R_CONNECTING: u8 = 30;
const R_CONNECTED: u8 = 31;
const R_CLIENT: u8 = 32;
const R_UPGRADE: u8 = 33;
const R_RSP_H: u8 = 34;
const R_STATUS: u8 = 35;
const R_SEND_H: u8 = 36;
const R_SEND_D: u8 = 37;
const F_FF: u8 = 40;
const F_PROXY: u8 = 41;
const F_HANDLE: u8 = 42;
const F_SEND_ERR: u8 = 43;
// TCP probes
const P_PEEK0: u8 = 50;
const P_BUFFER: u8 = 51;
const P_READING: u8 = 52;
const P_REQID: u8 = 53;
const P_CLOSE_IDREQ: u8 = 54;
const P_CLOSE_DIRECT: u8 = 55;
// kubelet → admin
const A_PEEK: u8 = 60;
const A_DETECT: u8 = 61;
const A_CLOSE: u8 = 62;
// reconnect loop of a failing endpoint
const C_CONNECTING: u8 = 70;
const C_FAILED: u8 = 71;
const C_RECOVERING: u8 = 72;

#[derive(Clone, Copy)]
struct Flow {
    ops: [u8; 40],
    n: u8,
    pc: u8,
    q: [u8; 12],
    qn: u8,
    qi: u8,
    cip: u32,
    cport: u16,
    tport: u16,
    client: u16,
    svc: u16,
    ep: u8,
    stream: u32,
    ustream: u32,
    lport: u16,
    path: u8,
    post: bool,
}

impl Flow {
    fn new() -> Flow {
        Flow {
            ops: [0; 40],
            n: 0,
            pc: 0,
            q: [0; 12],
            qn: 0,
            qi: 0,
            cip: 0,
            cport: 0,
            tport: 4143,
            client: 0,
            svc: 0,
            ep: 0,
            stream: 0,
            ustream: 0,
            lport: 0,
            path: 0,
            post: false,
        }
    }
    fn push(&mut self, op: u8) {
        self.ops[self.n as usize] = op;
        self.n += 1;
    }
    fn qpush(&mut self, op: u8) {
        self.q[self.qn as usize] = op;
        self.qn += 1;
    }
}

fn startup_flow() -> Flow {
    let mut f = Flow::new();
    for op in [
        ST_RT,
        ST_ADMIN,
        ST_IN,
        ST_OUT,
        ST_TAP,
        ST_LOCALID,
        ST_IDVIA,
        ST_DSTVIA,
        ST_ID_CONNECTING,
        ST_ID_CONNECTED,
        ST_CERTIFIED,
        ST_DST_CONNECTING,
        ST_DST_CONNECTED,
    ] {
        f.push(op);
    }
    f
}

fn gw_flow(rng: &mut Rng, w: &World, scenario: Scenario) -> Flow {
    let mut f = Flow::new();
    let ci = rng.below(w.clients.len() as u64) as usize;
    f.client = ci as u16;
    f.cip = w.clients[ci].ip;
    f.cport = rng.range(32768, 60999) as u16;
    f.svc = w.pick_svc(rng) as u16;
    f.stream = 0;
    f.ustream = rng.below(400) as u32 * 2 + 1;
    f.lport = rng.range(32768, 60999) as u16;
    for op in [G_PEEK, G_TLS, G_DETECT, G_SET_R, G_SET_W] {
        f.push(op);
    }
    let k = rng.below(8) + 1;
    let nreq = 1 + rng.below(k);
    for _ in 0..nreq {
        f.push(G_REQ);
    }
    if rng.chance(3000) {
        f.push(G_GOAWAY);
    }
    f.push(if scenario != Scenario::Healthy && rng.chance(150) {
        G_CLOSE_RESET
    } else {
        G_CLOSE
    });
    f
}

fn probe_flow(rng: &mut Rng, ip: u32, port: u16) -> Flow {
    let mut f = Flow::new();
    f.cip = ip;
    f.cport = rng.range(32768, 60999) as u16;
    f.tport = port;
    for op in [P_PEEK0, P_BUFFER, P_READING] {
        f.push(op);
    }
    if port == 4181 {
        f.push(P_REQID);
        f.push(P_CLOSE_IDREQ);
    } else {
        f.push(P_CLOSE_DIRECT);
    }
    f
}

fn admin_flow(rng: &mut Rng) -> Flow {
    let mut f = Flow::new();
    f.cip = KUBELET_NODE;
    f.cport = rng.range(32768, 60999) as u16;
    f.tport = 4191;
    for op in [A_PEEK, A_DETECT, A_CLOSE] {
        f.push(op);
    }
    f
}

fn reconn_flow(rng: &mut Rng, w: &World, si: usize) -> Flow {
    let s = &w.svcs[si];
    let mut f = Flow::new();
    f.cip = s.owner_ip;
    f.cport = s.owner_port;
    f.svc = si as u16;
    f.ep = rng.below(s.eps.len() as u64) as u8;
    for op in [C_CONNECTING, C_FAILED, C_RECOVERING] {
        f.push(op);
    }
    f
}

// span-context depths for gateway connections
const D_ACC: u8 = 0;
const D_DIRECT: u8 = 1;
const D_GWB: u8 = 2;
const D_HTTP: u8 = 3;
const D_SRV: u8 = 4;
#[allow(dead_code)]
const D_GWT: u8 = 5;
#[allow(dead_code)]
const D_LOG: u8 = 6;
const D_CON: u8 = 7;
const D_EP: u8 = 8;
const D_EPH2: u8 = 9;
const D_UPG: u8 = 10;

fn gw_spans(em: &mut Em, f: &Flow, w: &World, d: u8) {
    em.sp("inbound");
    em.spo("accept");
    em.sf("client.addr", V::A(f.cip, f.cport));
    em.sf("target.addr", V::A(GW_IP, f.tport));
    em.spc();
    if d == D_ACC {
        return;
    }
    em.sp("direct");
    if d == D_DIRECT {
        return;
    }
    em.sp("gateway");
    if d == D_GWB {
        return;
    }
    em.spo("http");
    em.sf("v", V::S("h2"));
    em.spc();
    if d == D_HTTP {
        return;
    }
    if d == D_SRV {
        em.spo("Connection");
        em.sf("peer", V::S("Server"));
        em.spc();
        return;
    }
    let s = &w.svcs[f.svc as usize];
    em.spo("gateway");
    em.sf("target", V::S(&s.auth));
    em.sf("v", V::S(if s.h2 { "h2" } else { "1.x" }));
    em.spc();
    if d == D_GWT {
        return;
    }
    em.spo("logical");
    em.sf("dst", V::S(&s.auth));
    em.spc();
    if d == D_LOG {
        return;
    }
    em.spo("concrete");
    em.sf("addr", V::S(&s.auth));
    em.spc();
    if d == D_CON {
        return;
    }
    let (eip, eport) = s.eps[f.ep as usize % s.eps.len()];
    em.spo("endpoint");
    em.sf("peer.addr", V::A(eip, eport));
    em.spc();
    if d == D_EP {
        return;
    }
    if d == D_EPH2 {
        em.sp("h2");
        em.spo("Connection");
        em.sf("peer", V::S("Client"));
        em.spc();
    } else {
        em.sp("orig-proto-upgrade");
    }
}

fn admin_spans(em: &mut Em, f: &Flow) {
    em.sp("daemon");
    em.spo("admin");
    em.sf("listen.addr", V::S("0.0.0.0:4191"));
    em.spc();
    em.spo("accept");
    em.sf("client.addr", V::A(f.cip, f.cport));
    em.sf("target.addr", V::A(GW_IP, f.tport));
    em.spc();
}

fn put_elapsed(em: &mut Em, key: &str) {
    let us = em.rng.range(3, 60);
    let frac = em.rng.below(1000);
    em.f(key, V::P(&[V::U(us), V::S("."), V::Z3(frac), V::S("µs")]));
}

/// Executes one op: writes exactly one line.
fn exec(em: &mut Em, w: &mut World, f: &mut Flow, op: u8, scenario: Scenario) {
    match op {
        // ── startup ──
        ST_RT..=ST_DSTVIA => {
            em.ev(INFO, 1);
            em.tgt(if op == ST_RT {
                "linkerd2_proxy::rt"
            } else {
                "linkerd2_proxy"
            });
            em.msg(match op {
                ST_RT => "Using single-threaded proxy runtime",
                ST_ADMIN => "Admin interface on 0.0.0.0:4191",
                ST_IN => "Inbound interface on 0.0.0.0:4143",
                ST_OUT => "Outbound interface on 127.0.0.1:4140",
                ST_TAP => "Tap interface on 0.0.0.0:4190",
                ST_LOCALID => "Local identity is linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local",
                ST_IDVIA => "Identity verified via linkerd-identity-headless.linkerd.svc.cluster.local:8080 (linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local)",
                _ => "Destinations resolved via linkerd-dst-headless.linkerd.svc.cluster.local:8086 (linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local)",
            });
            em.end();
        }
        ST_ID_CONNECTING | ST_ID_CONNECTED | ST_DST_CONNECTING | ST_DST_CONNECTED => {
            let id = op == ST_ID_CONNECTING || op == ST_ID_CONNECTED;
            em.ev(DEBUG, if id { 2 } else { 1 });
            if id {
                em.sp("daemon");
                em.sp("identity");
                em.spo("controller");
                em.sf(
                    "addr",
                    V::S("linkerd-identity-headless.linkerd.svc.cluster.local:8080"),
                );
                em.spc();
            } else {
                em.sp("dst");
                em.spo("controller");
                em.sf(
                    "addr",
                    V::S("linkerd-dst-headless.linkerd.svc.cluster.local:8086"),
                );
                em.spc();
            }
            let (ip, port) = if id {
                (IDENTITY_EP, 8080)
            } else {
                (DST_EP, 8086)
            };
            em.spo("endpoint");
            em.sf("peer.addr", V::A(ip, port));
            em.spc();
            em.tgt("linkerd_proxy_transport::connect");
            if op == ST_ID_CONNECTING || op == ST_DST_CONNECTING {
                em.msg("Connecting");
                em.f("peer.addr", V::A(ip, port));
            } else {
                em.msg("Connected");
                let lp = em.rng.range(32768, 60999) as u16;
                em.f("local.addr", V::A(GW_IP, lp));
                em.f("keepalive", V::S("Some(10s)"));
            }
            em.end();
        }
        ST_CERTIFIED => {
            em.ev(INFO, 2);
            em.sp("daemon");
            em.sp("identity");
            em.tgt("linkerd_app");
            em.msgv(V::P(&[V::S("Certified identity: "), V::S(GW_ID)]));
            em.end();
        }

        // ── gateway connection ──
        G_PEEK => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_ACC);
            em.tgt("linkerd_tls::server");
            em.msg("Peeked bytes from TCP stream");
            let sz = if em.rng.chance(7000) {
                517
            } else {
                em.rng.range(180, 700)
            };
            em.f("sz", V::U(sz));
            em.end();
        }
        G_TLS => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_DIRECT);
            em.tgt("linkerd_tls::server");
            em.msg("Accepted TLS connection");
            em.f("client.id", V::S(&w.clients[f.client as usize].id));
            em.f("alpn", V::S("None"));
            em.end();
        }
        G_DETECT => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_GWB);
            em.tgt("linkerd_detect");
            em.msg("DetectResult");
            em.f("protocol", V::S("Some(H2)"));
            put_elapsed(em, "elapsed");
            em.end();
        }
        G_SET_R | G_SET_W | G_GOAWAY => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_SRV);
            if op == G_SET_W {
                em.tgt("h2::codec::framed_write");
                em.msg("send");
                em.f("frame", V::S("Settings { flags: (0x0), initial_window_size: 65535, max_frame_size: 16384, max_header_list_size: 16777216 }"));
            } else if op == G_SET_R {
                em.tgt("h2::codec::framed_read");
                em.msg("received");
                em.f("frame", V::S("Settings { flags: (0x0), enable_push: 0, initial_window_size: 65535, max_frame_size: 16384 }"));
            } else {
                em.tgt("h2::codec::framed_read");
                em.msg("received");
                em.f(
                    "frame",
                    V::P(&[
                        V::S("GoAway { error_code: NO_ERROR, last_stream_id: StreamId("),
                        V::U(f.stream as u64),
                        V::S(") }"),
                    ]),
                );
            }
            em.end();
        }
        G_REQ => {
            f.stream = if f.stream == 0 { 1 } else { f.stream + 2 };
            let s = &w.svcs[f.svc as usize];
            f.post = s.grpc || em.rng.chance(2500);
            f.path = em.rng.below(if s.grpc {
                PATHS_GRPC.len()
            } else {
                PATHS_HTTP.len()
            } as u64) as u8;
            f.ep = em.rng.below(s.eps.len() as u64) as u8;
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_SRV);
            em.tgt("h2::codec::framed_read");
            em.msg("received");
            let flags = if f.post {
                "(0x4: END_HEADERS)"
            } else {
                "(0x5: END_HEADERS | END_STREAM)"
            };
            em.f(
                "frame",
                V::P(&[
                    V::S("Headers { stream_id: StreamId("),
                    V::U(f.stream as u64),
                    V::S("), flags: "),
                    V::S(flags),
                    V::S(" }"),
                ]),
            );
            em.end();
            // queue the rest of this request
            f.qn = 0;
            f.qi = 0;
            let s = &w.svcs[f.svc as usize];
            if s.failing && s.outage {
                if s.ff_on {
                    f.qpush(F_FF);
                }
                f.qpush(F_PROXY);
                f.qpush(F_HANDLE);
                f.qpush(F_SEND_ERR);
            } else {
                if (f.stream == 1 && em.rng.chance(1200)) || em.rng.chance(250) {
                    f.qpush(R_CONNECTING);
                    f.qpush(R_CONNECTED);
                }
                f.qpush(R_CLIENT);
                if !s.h2 {
                    f.qpush(R_UPGRADE);
                }
                f.qpush(R_RSP_H);
                f.qpush(R_STATUS);
                f.qpush(R_SEND_H);
                f.qpush(R_SEND_D);
            }
        }
        R_CONNECTING | R_CONNECTED => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_EP);
            em.tgt("linkerd_proxy_transport::connect");
            if op == R_CONNECTING {
                let s = &w.svcs[f.svc as usize];
                let (ip, port) = s.eps[f.ep as usize % s.eps.len()];
                em.msg("Connecting");
                em.f("peer.addr", V::A(ip, port));
            } else {
                f.lport = em.rng.range(32768, 60999) as u16;
                em.msg("Connected");
                em.f("local.addr", V::A(GW_IP, f.lport));
                em.f("keepalive", V::S("Some(10s)"));
            }
            em.end();
        }
        R_CLIENT => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_EP);
            em.tgt("linkerd_proxy_http::client");
            let s = &w.svcs[f.svc as usize];
            em.f("method", V::S(if f.post { "POST" } else { "GET" }));
            let path = if s.grpc {
                PATHS_GRPC[f.path as usize]
            } else {
                PATHS_HTTP[f.path as usize]
            };
            em.f("uri", V::P(&[V::S("http://"), V::S(&s.auth), V::S(path)]));
            em.f("version", V::S(if s.h2 { "HTTP/2.0" } else { "HTTP/1.1" }));
            em.end();
        }
        R_UPGRADE => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_UPG);
            em.tgt("linkerd_proxy_http::orig_proto");
            em.msg("Upgrading request");
            em.f("version", V::S("HTTP/1.1"));
            em.f("absolute_form", V::B(false));
            em.end();
        }
        R_RSP_H => {
            f.ustream += 2;
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_EPH2);
            em.tgt("h2::codec::framed_read");
            em.msg("received");
            em.f(
                "frame",
                V::P(&[
                    V::S("Headers { stream_id: StreamId("),
                    V::U(f.ustream as u64),
                    V::S("), flags: (0x4: END_HEADERS) }"),
                ]),
            );
            em.end();
        }
        R_STATUS => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_EP);
            em.tgt("linkerd_proxy_http::client");
            em.msg("Received response");
            let r = em.rng.below(10_000);
            let st = if r < 9300 {
                "200 OK"
            } else if r < 9500 {
                "201 Created"
            } else if r < 9700 {
                "204 No Content"
            } else if r < 9850 || scenario == Scenario::Healthy {
                "304 Not Modified"
            } else if r < 9985 {
                "404 Not Found"
            } else {
                "500 Internal Server Error"
            };
            em.f("status", V::S(st));
            em.f("version", V::S("HTTP/2.0"));
            em.end();
        }
        R_SEND_H | R_SEND_D | F_SEND_ERR => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_SRV);
            em.tgt("h2::codec::framed_write");
            em.msg("send");
            let (kind, flags) = match op {
                R_SEND_H => (
                    "Headers { stream_id: StreamId(",
                    "), flags: (0x4: END_HEADERS) }",
                ),
                R_SEND_D => (
                    "Data { stream_id: StreamId(",
                    "), flags: (0x1: END_STREAM) }",
                ),
                _ => (
                    "Headers { stream_id: StreamId(",
                    "), flags: (0x5: END_HEADERS | END_STREAM) }",
                ),
            };
            em.f(
                "frame",
                V::P(&[V::S(kind), V::U(f.stream as u64), V::S(flags)]),
            );
            em.end();
        }
        F_FF => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_CON);
            em.tgt("linkerd_stack::failfast");
            em.msg("HTTP Balancer in failfast");
            em.end();
        }
        F_PROXY => {
            em.ev(WARN, 1);
            gw_spans(em, f, w, D_HTTP);
            em.tgt("linkerd_app_core::errors");
            em.msg("Failed to proxy request: HTTP Balancer service in fail-fast");
            em.f("client.addr", V::A(f.cip, f.cport));
            em.end();
        }
        F_HANDLE => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_HTTP);
            em.tgt("linkerd_app_core::errors");
            em.msg("Handling error with HTTP response");
            em.f("status", V::S("503 Service Unavailable"));
            em.f("version", V::S("HTTP/2.0"));
            em.end();
        }
        G_CLOSE | G_CLOSE_RESET => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_ACC);
            em.tgt("linkerd_app_core::serve");
            em.msg("Connection closed");
            if op == G_CLOSE_RESET {
                em.f("reason", V::S("Connection reset by peer (os error 104)"));
            }
            em.end();
        }

        // ── TCP probes ──
        P_PEEK0 | P_BUFFER | P_READING | P_REQID => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_ACC);
            match op {
                P_PEEK0 => {
                    em.tgt("linkerd_tls::server");
                    em.msg("Peeked bytes from TCP stream");
                    em.f("sz", V::U(0));
                }
                P_BUFFER => {
                    em.tgt("linkerd_tls::server");
                    em.msg("Attempting to buffer TLS ClientHello after incomplete peek");
                }
                P_READING => {
                    em.tgt("linkerd_tls::server");
                    em.msg("Reading bytes from TCP stream");
                    em.f("buf.capacity", V::U(8192));
                }
                _ => {
                    em.tgt("linkerd_app_inbound::require_identity");
                    em.f("port", V::U(f.tport as u64));
                    em.f("tls", V::S("None(NoClientHello)"));
                    em.f("id_required", V::B(true));
                }
            }
            em.end();
        }
        P_CLOSE_IDREQ | P_CLOSE_DIRECT => {
            em.ev(INFO, 1);
            gw_spans(em, f, w, D_ACC);
            em.tgt("linkerd_app_core::serve");
            em.msg("Connection closed");
            em.f(
                "error",
                V::S(if op == P_CLOSE_IDREQ {
                    "identity required"
                } else {
                    "Direct connections must be mutually authenticated"
                }),
            );
            em.end();
        }

        // ── kubelet → admin server ──
        A_PEEK | A_DETECT | A_CLOSE => {
            em.ev(DEBUG, 2);
            admin_spans(em, f);
            match op {
                A_PEEK => {
                    em.tgt("linkerd_tls::server");
                    em.msg("Peeked bytes from TCP stream");
                    let sz = em.rng.range(110, 125);
                    em.f("sz", V::U(sz));
                }
                A_DETECT => {
                    em.tgt("linkerd_detect");
                    em.msg("DetectResult");
                    em.f("protocol", V::S("Some(Http1)"));
                    put_elapsed(em, "elapsed");
                }
                _ => {
                    em.tgt("linkerd_app_core::serve");
                    em.msg("Connection closed");
                }
            }
            em.end();
        }

        // ── failing endpoint reconnect loop ──
        C_CONNECTING | C_FAILED | C_RECOVERING => {
            em.ev(DEBUG, 1);
            gw_spans(em, f, w, D_EP);
            let s = &w.svcs[f.svc as usize];
            match op {
                C_CONNECTING => {
                    let (ip, port) = s.eps[f.ep as usize % s.eps.len()];
                    em.tgt("linkerd_proxy_transport::connect");
                    em.msg("Connecting");
                    em.f("peer.addr", V::A(ip, port));
                }
                C_FAILED => {
                    em.tgt("linkerd_reconnect::service");
                    em.msg("Failed to connect");
                    em.f("error", V::S(s.err));
                }
                _ => {
                    em.tgt("linkerd_reconnect::service");
                    em.msg("Recovering");
                }
            }
            em.end();
        }
        _ => unreachable!("op {op}"),
    }
}

/// Balancer state transitions of a failing service (one line).
fn ff_transition(em: &mut Em, w: &World, si: usize, entering: bool) {
    let s = &w.svcs[si];
    let mut f = Flow::new();
    f.cip = s.owner_ip;
    f.cport = s.owner_port;
    f.svc = si as u16;
    if entering {
        em.ev(WARN, 1);
        gw_spans(em, &f, w, D_CON);
        em.tgt("linkerd_stack::failfast");
        em.msg("HTTP Balancer entering failfast after 3s");
    } else {
        em.ev(INFO, 1);
        gw_spans(em, &f, w, D_CON);
        em.tgt("linkerd_stack::failfast");
        em.msg("HTTP Balancer service has recovered");
    }
    em.end();
}

// ───────────────────────────── non-proxy lines (mixed scenario) ─────────────────────────────

/// The destination controller's watch message: `Establishing|Stopping watch on endpoint [ns/name:port]`.
fn put_watch_msg(em: &mut Em, ns: &str, name: &str, port: &str) {
    let start = if em.rng.chance(5000) {
        "Establishing"
    } else {
        "Stopping"
    };
    for part in [start, " watch on endpoint [", ns, "/", name, ":", port, "]"] {
        em.out.extend_from_slice(part.as_bytes());
    }
}

fn logrus_line(em: &mut Em, w: &World) {
    em.wrap_prefix(DST_PREFIX);
    let s = &w.svcs[em.rng.below(w.svcs.len() as u64) as usize];
    let port = s.auth.rsplit(':').next().unwrap_or("80");
    let r = em.rng.below(100);
    if r < 15 {
        // logrus JSON formatter: keys sorted
        em.out.extend_from_slice(b"{\"addr\":\":8086\",\"component\":\"endpoints-watcher\",\"level\":\"info\",\"msg\":\"");
        put_watch_msg(em, &s.ns, &s.name, port);
        em.out.extend_from_slice(b"\",\"time\":\"");
        em.put_logrus_time();
        em.out.extend_from_slice(b"\"}\n");
        return;
    }
    em.out.extend_from_slice(b"time=\"");
    em.put_logrus_time();
    em.out.push(b'"');
    if r < 80 {
        em.out.extend_from_slice(b" level=info msg=\"");
        put_watch_msg(em, &s.ns, &s.name, port);
        em.out
            .extend_from_slice(b"\" addr=\":8086\" component=endpoints-watcher\n");
    } else if r < 95 {
        em.out
            .extend_from_slice(b" level=info msg=\"Updating service ");
        em.out.extend_from_slice(s.name.as_bytes());
        em.out.extend_from_slice(b"-remote\" cluster=remote ns=");
        em.out.extend_from_slice(s.ns.as_bytes());
        em.out.extend_from_slice(b" svc=");
        em.out.extend_from_slice(s.name.as_bytes());
        em.out.extend_from_slice(b"-remote\n");
    } else {
        em.out.extend_from_slice(b" level=warning msg=\"Failed to get endpoints\" addr=\":8086\" component=endpoints-watcher error=\"endpoints \\\"");
        em.out.extend_from_slice(s.name.as_bytes());
        em.out.extend_from_slice(b"\\\" not found\" ns=");
        em.out.extend_from_slice(s.ns.as_bytes());
        em.out.extend_from_slice(b" svc=");
        em.out.extend_from_slice(s.name.as_bytes());
        em.out.push(b'\n');
    }
}

const PROSE: &[&str] = &[
    "Found 2 pods, using pod/linkerd-gateway-7d9c8b6f5-x2k4q",
    "error: a container name must be specified for pod linkerd-gateway-7d9c8b6f5-x2k4q, choose one of: [linkerd-proxy pause] or one of the init containers: [linkerd-init]",
    "$ kubectl -n linkerd-multicluster logs deploy/linkerd-gateway -c linkerd-proxy -f",
    "rpc error: code = Unavailable desc = error reading from server: EOF",
];

fn prose_line(em: &mut Em, i: usize) {
    // kubectl's own stderr: never wrapped
    em.out.extend_from_slice(PROSE[i % PROSE.len()].as_bytes());
    em.out.push(b'\n');
}

fn rustls_line(em: &mut Em, w: &World) {
    let mut f = Flow::new();
    f.cip = *em.rng.pick(&w.nodes);
    f.cport = em.rng.range(32768, 60999) as u16;
    em.ev(WARN, 1);
    gw_spans(em, &f, w, D_ACC);
    em.tgt("rustls::session");
    em.msg("Sending fatal alert BadCertificate");
    em.log_tail(
        "rustls::session",
        "/usr/local/cargo/registry/src/github.com-1ecc6299db9ec823/rustls-0.19.1/src/session.rs",
        880,
    );
    em.end();
}

// ───────────────────────────── main loop ─────────────────────────────

fn main() {
    let o = parse_args();
    let stdout = io::stdout();
    let mut sink = io::BufWriter::with_capacity(4 << 20, stdout.lock());
    match generate(&o, &mut sink).and_then(|()| sink.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            eprintln!("gen: write error: {e}");
            exit(1);
        }
    }
}

/// Writes the log `o` describes to `sink` (the tests read it from memory).
pub fn generate(o: &Opts, sink: &mut dyn Write) -> io::Result<()> {
    let mut seeder = Rng(o.seed ^ 0x6c70_615f_6765_6e00);
    let mut wrng = Rng(seeder.next());
    let em_rng = Rng(seeder.next());
    let mut w = World::new(&mut wrng, o.scenario);
    let wall0_ns =
        (1_718_273_561 + wrng.below(12 * 3600)) * 1_000_000_000 + wrng.below(1_000_000_000);
    let mut em = Em {
        out: Vec::with_capacity(2 << 20),
        rng: em_rng,
        up_us: 0,
        wall0_ns,
        wrap: o.wrap,
        format: o.format,
        mixed: o.scenario == Scenario::Mixed,
        json: false,
        rfc: false,
        lvl: DEBUG,
        tid: 1,
        target: "",
        nspans: 0,
        sp_name: "",
        sp_nf: 0,
        body: 0,
        js: Vec::with_capacity(1024),
        jf: Vec::with_capacity(1024),
        dsec: 0,
        dbuf: Vec::with_capacity(32),
    };
    em.up_us = 1_700 + em.rng.below(400);

    let mut flushed: u64 = 0;
    let size = o.size;
    let scenario = o.scenario;

    let mut write_out = |em: &mut Em, flushed: &mut u64| -> io::Result<()> {
        sink.write_all(&em.out)?;
        *flushed += em.out.len() as u64;
        em.out.clear();
        Ok(())
    };

    let mut startup = Some(startup_flow());
    let mut pool: Vec<Flow> = Vec::with_capacity(64);
    let pool_target = 24;
    let mut prelude = if scenario == Scenario::Mixed { 2 } else { 0 };

    if size == 0 {
        return Ok(());
    }
    loop {
        // ── one line per iteration ──
        if prelude > 0 {
            // mixed: a kubectl prose line and the proxy-identity wrapper's logrus line come first
            if prelude == 2 {
                prose_line(&mut em, 0);
            } else {
                em.wrap_prefix(PROXY_PREFIX);
                em.out.extend_from_slice(b"time=\"");
                em.put_logrus_time();
                em.out
                    .extend_from_slice(b"\" level=info msg=\"running version stable-2.10.2\"\n");
            }
            prelude -= 1;
            let dt = em.rng.range(40, 300);
            em.tick(dt);
        } else if let Some(f) = startup.as_mut() {
            let op = f.ops[f.pc as usize];
            f.pc += 1;
            let dt = if op == ST_CERTIFIED {
                em.rng.range(8_000, 30_000)
            } else {
                em.rng.range(3, 400)
            };
            em.tick(dt);
            exec(&mut em, &mut w, f, op, scenario);
            if f.pc >= f.n {
                startup = None;
                let t = em.up_us;
                w.next_probe = t + em.rng.range(1_000, 100_000);
                w.next_admin = t + em.rng.range(100_000, 2_000_000);
                for (k, &si) in w.failing.iter().enumerate() {
                    let s = &mut w.svcs[si];
                    s.outage = false;
                    // the first failing destination is already down when traffic starts
                    s.toggle_at = if k == 0 {
                        t
                    } else {
                        t + em.rng.range(5_000_000, 60_000_000)
                    };
                }
            }
        } else {
            // time advance: bursty (70% within a burst, 30% gaps)
            let dt = if em.rng.chance(7000) {
                em.rng.range(1, 60)
            } else {
                em.rng.range(100, 2000)
            };
            em.tick(dt);
            let now = em.up_us;

            // scheduled spawns (emit nothing themselves)
            if w.probes {
                while w.next_probe <= now {
                    let pair = w.probe_rr;
                    w.probe_rr = (w.probe_rr + 1) % (w.nodes.len() * 2);
                    let ip = w.nodes[pair / 2];
                    let port = if pair & 1 == 0 { 4143 } else { 4181 };
                    pool.push(probe_flow(&mut em.rng, ip, port));
                    // every node probes both ports every 10s
                    w.next_probe +=
                        10_000_000 / (w.nodes.len() as u64 * 2) - 40_000 + em.rng.below(80_000);
                }
            }
            while w.next_admin <= now {
                pool.push(admin_flow(&mut em.rng));
                w.next_admin += 5_000_000 - 50_000 + em.rng.below(100_000);
            }
            let mut transition: Option<(usize, bool)> = None;
            for k in 0..w.failing.len() {
                let si = w.failing[k];
                let s = &mut w.svcs[si];
                if now >= s.toggle_at {
                    s.outage = !s.outage;
                    if s.outage {
                        s.ff_at = now + if k == 0 { 20_000 } else { 3_000_000 };
                        s.reconn_at = now + em.rng.range(1_000, 50_000);
                        s.toggle_at = now + em.rng.range(60_000_000, 400_000_000);
                    } else {
                        s.toggle_at = now + em.rng.range(30_000_000, 300_000_000);
                    }
                }
                if s.outage && !s.ff_on && now >= s.ff_at && transition.is_none() {
                    s.ff_on = true;
                    transition = Some((si, true));
                } else if !s.outage && s.ff_on && transition.is_none() {
                    s.ff_on = false;
                    transition = Some((si, false));
                }
                if s.outage && now >= s.reconn_at {
                    s.reconn_at = now + em.rng.range(100_000, 1_000_000);
                    let f = reconn_flow(&mut em.rng, &w, si);
                    pool.push(f);
                }
            }
            while pool.len() < pool_target {
                let f = gw_flow(&mut em.rng, &w, scenario);
                pool.push(f);
            }

            if let Some((si, entering)) = transition {
                ff_transition(&mut em, &w, si, entering);
            } else if scenario == Scenario::Mixed && em.rng.chance(60) {
                let r = em.rng.below(100);
                if r < 80 {
                    logrus_line(&mut em, &w);
                } else if r < 97 {
                    rustls_line(&mut em, &w);
                } else {
                    let i = em.rng.below(PROSE.len() as u64) as usize;
                    prose_line(&mut em, i);
                }
            } else {
                let i = em.rng.below(pool.len() as u64) as usize;
                let mut f = pool[i];
                let op = if f.qi < f.qn {
                    f.qi += 1;
                    f.q[f.qi as usize - 1]
                } else {
                    f.pc += 1;
                    f.ops[f.pc as usize - 1]
                };
                exec(&mut em, &mut w, &mut f, op, scenario);
                if f.qi >= f.qn && f.pc >= f.n {
                    pool.swap_remove(i);
                } else {
                    pool[i] = f;
                }
            }
        }

        // ── size accounting: stop at the end of the line that reaches `size` ──
        let total = flushed + em.out.len() as u64;
        if total >= size {
            break;
        }
        if em.out.len() >= 1 << 20 {
            write_out(&mut em, &mut flushed)?;
        }
    }
    write_out(&mut em, &mut flushed)
}
