//! Every example line of the reference grammar (research note `log-format.md`,
//! section 6: P1–P46, J1–J7, A1–A5, W1–W15, C1–C18, M1–M8) with the parse the
//! note expects, checked through the public library API.
//!
//! The lines are copied here on purpose: tests never read the note at run time.
//! Single-line rows go through `normalize` + `parse_line` (and are cross-checked
//! against the `Tokenizer`); rows whose input holds `\n` are multi-line records
//! and go through the `Tokenizer`, as `lpa::pipeline::process_block` does.
//! All rows run; every mismatch is collected and reported together.

use lpa::input::wrap::normalize;
use lpa::parse::{parse_line, Event, Level, Producer, Record, Span, Tokenizer};
use std::fmt::Write as _;
use typed_arena::Arena;

use Level::*;
use Producer::{
    AccessApache, AccessJson, GoPanic, Klog, Logrus, LogrusJson, PolicyController, ProxyInit,
    ProxyJson, ProxyPlain, RustPanic,
};
use X::*;

/// One expectation about a row.
#[derive(Debug)]
enum X {
    /// No grammar matches: `parse_line` returns `None` (and the tokenizer
    /// emits an `Unparsed` record).
    Prose,
    Prod(Producer),
    Lvl(Option<Level>),
    /// Seconds of proxy uptime (`None`: the line carries none).
    Up(Option<f64>),
    /// The producer's own timestamp (`Event::timestamp`).
    Ts(Option<&'static str>),
    Thr(Option<&'static str>),
    /// Span names and fields, rendered `name{key="value" …}` (values in Rust
    /// Debug quoting, so a value holding a space or `=` cannot be confused
    /// with two fields).
    Spans(&'static [&'static str]),
    Tgt(Option<&'static str>),
    Msg(Option<&'static str>),
    /// Every field, in order.
    Fields(&'static [(&'static str, &'static str)]),
    /// The wrapper stripped before dispatch.
    Pod(Option<&'static str>),
    Container(Option<&'static str>),
    OuterTs(Option<&'static str>),
    WrapKind(Option<&'static str>),
    /// The line after `normalize` (CSI, CRLF, CSV, trailing blanks removed).
    Norm(&'static str),
    Trunc(bool),
    // Typed views.
    /// `error()`
    Er(Option<&'static str>),
    Sources(&'static [&'static str]),
    Tls(&'static str, Option<&'static str>),
    Client(Option<&'static str>),
    TargetAddr(Option<&'static str>),
    Dst(Option<&'static str>),
    Status(Option<u16>),
    Sz(Option<u64>),
    // Multi-line records.
    Lines(u32),
    Cont(Option<&'static str>),
    /// Number of records the tokenizer emits for the row.
    Records(usize),
    /// Checks on the n-th record (0-based) of a multi-line row.
    Rec(usize, &'static [X]),
    /// (inside `Rec`) the record is `Unparsed`.
    Unparsed,
    /// (inside `Rec`) the record's first line.
    Line(u64),
}

struct Row {
    id: &'static str,
    input: &'static str,
    expect: &'static [X],
}

macro_rules! rows {
    ($($id:literal : $input:expr => [$($x:expr),* $(,)?];)*) => {
        &[$(Row { id: $id, input: $input, expect: &[$($x),*] }),*]
    };
}

const NOTE_M1: &str =
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";

#[rustfmt::skip]
static ROWS: &[Row] = rows! {
    // ---------------------------------------------------------------- P
    "P1": r#"[     0.001961s]  INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.001961)), Ts(None), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd2_proxy::rt")), Msg(Some("Using single-threaded proxy runtime")), Fields(&[]), Trunc(false),
        Pod(None), Container(None), OuterTs(None), WrapKind(None)];
    "P2": r#"[     0.002955s]  INFO ThreadId(01) linkerd2_proxy: Admin interface on 0.0.0.0:4191"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.002955)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd2_proxy")), Msg(Some("Admin interface on 0.0.0.0:4191")), Fields(&[])];
    "P3": r#"[     0.002738s]  INFO ThreadId(01) linkerd2_proxy: release 2.210.4 (5a910be) by linkerd on 2023-11-22T17:01:46Z"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.002738)), Thr(Some("01")), Spans(&[]), Tgt(Some("linkerd2_proxy")),
        Msg(Some("release 2.210.4 (5a910be) by linkerd on 2023-11-22T17:01:46Z")), Fields(&[])];
    "P4": r#"[     0.005026s]  INFO ThreadId(01) linkerd2_proxy: Identity verified via linkerd-identity-headless.linkerd.svc.cluster.local:8080 (linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local)"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.005026)), Thr(Some("01")), Spans(&[]), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Identity verified via linkerd-identity-headless.linkerd.svc.cluster.local:8080 (linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local)")),
        Fields(&[])];
    "P5": r#"[     0.005384s]  WARN ThreadId(01) daemon:identity: linkerd_app_core::control: Failed to resolve control-plane component error=no record found for name: linkerd-identity-headless.linkerd.svc.cluster.local. type: SRV class: IN"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(0.005384)), Thr(Some("01")), Spans(&["daemon", "identity"]),
        Tgt(Some("linkerd_app_core::control")), Msg(Some("Failed to resolve control-plane component")),
        Fields(&[("error", "no record found for name: linkerd-identity-headless.linkerd.svc.cluster.local. type: SRV class: IN")]),
        Er(Some("no record found for name: linkerd-identity-headless.linkerd.svc.cluster.local. type: SRV class: IN")),
        Sources(&[])];
    "P6": r#"[ 11992.915758s]  WARN ThreadId(01) inbound: linkerd_app_core::serve: Server failed to accept connection error=Transport endpoint is not connected (os error 107)"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(11992.915758)), Thr(Some("01")), Spans(&["inbound"]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Server failed to accept connection")),
        Fields(&[("error", "Transport endpoint is not connected (os error 107)")]),
        Er(Some("Transport endpoint is not connected (os error 107)"))];
    "P7": r#"[ 11993.207810s]  WARN ThreadId(01) inbound: linkerd_app_core::serve: Server failed to accept connection error=Transport endpoint is not connected (os error 107)                             "# => [
        Norm("[ 11993.207810s]  WARN ThreadId(01) inbound: linkerd_app_core::serve: Server failed to accept connection error=Transport endpoint is not connected (os error 107)"),
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(11993.207810)), Thr(Some("01")), Spans(&["inbound"]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Server failed to accept connection")),
        Fields(&[("error", "Transport endpoint is not connected (os error 107)")])];
    "P8": r#"[ 11992.906251s] DEBUG ThreadId(02) daemon:admin{listen.addr=0.0.0.0:4191}:accept{client.addr=10.244.0.123:50254}: linkerd_app_core::serve: Connection closed"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(11992.906251)), Thr(Some("02")),
        Spans(&["daemon", r#"admin{listen.addr="0.0.0.0:4191"}"#, r#"accept{client.addr="10.244.0.123:50254"}"#]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")), Fields(&[]),
        Client(Some("10.244.0.123:50254"))];
    "P9": r#"[ 11994.722659s] DEBUG ThreadId(01) inbound:accept{client.addr=10.244.0.146:38382}: linkerd_app_core::serve: Connection closed reason=client: Transport endpoint is not"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(11994.722659)), Thr(Some("01")),
        Spans(&["inbound", r#"accept{client.addr="10.244.0.146:38382"}"#]), Tgt(Some("linkerd_app_core::serve")),
        Msg(Some("Connection closed")), Fields(&[("reason", "client: Transport endpoint is not")]),
        Client(Some("10.244.0.146:38382"))];
    "P10": r#"[   299.092239s]  INFO ThreadId(01) inbound:server{port=80}:rescue{client.addr=10.0.2.192:53320}: linkerd_app_core::errors::respond: Request failed error=connection closed before message completed"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(299.092239)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="80"}"#, r#"rescue{client.addr="10.0.2.192:53320"}"#]),
        Tgt(Some("linkerd_app_core::errors::respond")), Msg(Some("Request failed")),
        Fields(&[("error", "connection closed before message completed")]),
        Er(Some("connection closed before message completed")), Client(Some("10.0.2.192:53320"))];
    "P11": r#"[ 73137.020135s]  INFO ThreadId(01) outbound:proxy{addr=10.0.3.18:80}:service{ns=imodeljs name=svc-7ed19bdd port=80}: linkerd_proxy_balance_queue::worker: Unavailable; entering failfast timeout=3.0"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(73137.020135)), Thr(Some("01")),
        Spans(&["outbound", r#"proxy{addr="10.0.3.18:80"}"#, r#"service{ns="imodeljs" name="svc-7ed19bdd" port="80"}"#]),
        Tgt(Some("linkerd_proxy_balance_queue::worker")), Msg(Some("Unavailable; entering failfast")),
        Fields(&[("timeout", "3.0")]), Dst(Some("svc-7ed19bdd.imodeljs.svc.cluster.local:80"))];
    "P12": r#"[ 73137.020196s]  INFO ThreadId(01) outbound:proxy{addr=10.0.3.18:80}:rescue{client.addr=10.244.101.75:43486}: linkerd_app_core::errors::respond: HTTP/1.1 request failed error=logical service 10.0.3.18:80: route default.http: backend Service.ns.svc:80: service in fail-fast error.sources=[route default.http: backend Service.ns.svc:80: service in fail-fast, backend Service.ns.svc:80: service in fail-fast, service in fail-fast]"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(73137.020196)), Thr(Some("01")),
        Spans(&["outbound", r#"proxy{addr="10.0.3.18:80"}"#, r#"rescue{client.addr="10.244.101.75:43486"}"#]),
        Tgt(Some("linkerd_app_core::errors::respond")), Msg(Some("HTTP/1.1 request failed")),
        Fields(&[
            ("error", "logical service 10.0.3.18:80: route default.http: backend Service.ns.svc:80: service in fail-fast"),
            ("error.sources", "[route default.http: backend Service.ns.svc:80: service in fail-fast, backend Service.ns.svc:80: service in fail-fast, service in fail-fast]"),
        ]),
        Er(Some("logical service 10.0.3.18:80: route default.http: backend Service.ns.svc:80: service in fail-fast")),
        Sources(&["route default.http: backend Service.ns.svc:80: service in fail-fast", "backend Service.ns.svc:80: service in fail-fast", "service in fail-fast"]),
        Client(Some("10.244.101.75:43486")), Dst(Some("10.0.3.18:80"))];
    "P13": r#"[     0.003519s]  WARN ThreadId(01) watch{port=9997}:controller{addr=localhost:8090}:endpoint{addr=127.0.0.1:8090}: linkerd_reconnect: Failed to connect error=endpoint 127.0.0.1:8090: Connection refused (os error 111) error.sources=[Con"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(0.003519)), Thr(Some("01")),
        Spans(&[r#"watch{port="9997"}"#, r#"controller{addr="localhost:8090"}"#, r#"endpoint{addr="127.0.0.1:8090"}"#]),
        Tgt(Some("linkerd_reconnect")), Msg(Some("Failed to connect")),
        // The truncated list is kept raw.
        Fields(&[("error", "endpoint 127.0.0.1:8090: Connection refused (os error 111)"), ("error.sources", "[Con")]),
        Er(Some("endpoint 127.0.0.1:8090: Connection refused (os error 111)"))];
    "P14": r#"[  2341.879731s] DEBUG ThreadId(01) evict{target=Accept { orig_dst: OrigDstAddr(169.254.169.254:80), protocol: () }}: linkerd_cache: Awaiting idleness"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(2341.879731)), Thr(Some("01")),
        Spans(&[r#"evict{target="Accept { orig_dst: OrigDstAddr(169.254.169.254:80), protocol: () }"}"#]),
        Tgt(Some("linkerd_cache")), Msg(Some("Awaiting idleness")), Fields(&[])];
    "P15": r#"[  2341.879624s] DEBUG ThreadId(01) outbound:accept{client.addr=10.7.8.188:49772}:server{orig_dst=169.254.169.254:80}:http{v=1.x}: linkerd_proxy_http::server: The client is shutting down the connection res=Ok(())"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(2341.879624)), Thr(Some("01")),
        Spans(&["outbound", r#"accept{client.addr="10.7.8.188:49772"}"#, r#"server{orig_dst="169.254.169.254:80"}"#, r#"http{v="1.x"}"#]),
        Tgt(Some("linkerd_proxy_http::server")), Msg(Some("The client is shutting down the connection")),
        Fields(&[("res", "Ok(())")]), Client(Some("10.7.8.188:49772"))];
    "P16": r#"[  1344.287684s] DEBUG ThreadId(02) daemon:admin{listen.addr=0.0.0.0:4191}:accept{client.addr=172.60.102.79:41876}: linkerd_detect: DetectResult protocol=Some(Http1) elapsed=10.795µs"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(1344.287684)), Thr(Some("02")),
        Spans(&["daemon", r#"admin{listen.addr="0.0.0.0:4191"}"#, r#"accept{client.addr="172.60.102.79:41876"}"#]),
        Tgt(Some("linkerd_detect")), Msg(Some("DetectResult")),
        Fields(&[("protocol", "Some(Http1)"), ("elapsed", "10.795µs")])];
    "P17": r#"[   222.818805s] DEBUG ThreadId(01) inbound:accept{client.addr=172.31.82.142:52856}:server{port=80}: linkerd_app_inbound::accept: Accepted policy=ServerPolicy { protocol: Opaque([Authorization { networks: [Network { net: 0.0.0.0/0, except: [] }], authentication: Unauthenticated, meta: Default { name: "all-unauthenticated" } }]), meta: Resource { group: "", kind: "default", name: "all-unauthenticated" } }"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(222.818805)), Thr(Some("01")),
        Spans(&["inbound", r#"accept{client.addr="172.31.82.142:52856"}"#, r#"server{port="80"}"#]),
        Tgt(Some("linkerd_app_inbound::accept")), Msg(Some("Accepted")),
        Fields(&[("policy", r#"ServerPolicy { protocol: Opaque([Authorization { networks: [Network { net: 0.0.0.0/0, except: [] }], authentication: Unauthenticated, meta: Default { name: "all-unauthenticated" } }]), meta: Resource { group: "", kind: "default", name: "all-unauthenticated" } }"#)])];
    "P18": "[  5440.899754s]  WARN ThreadId(01) inbound:server{port=8086}: rustls::conn: Sending fatal alert HandshakeFailure    " => [
        Norm("[  5440.899754s]  WARN ThreadId(01) inbound:server{port=8086}: rustls::conn: Sending fatal alert HandshakeFailure"),
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(5440.899754)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="8086"}"#]), Tgt(Some("rustls::conn")),
        Msg(Some("Sending fatal alert HandshakeFailure")), Fields(&[])];
    "P19": r#"[  5440.899754s]  WARN ThreadId(01) inbound:server{port=8086}: rustls::common_state: Sending fatal alert BadCertificate"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(5440.899754)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="8086"}"#]), Tgt(Some("rustls::common_state")),
        Msg(Some("Sending fatal alert BadCertificate")), Fields(&[])];
    "P20": r#"[   159.454774599s]  WARN inbound:accept{peer.addr=10.44.0.0:60534}:source{target.addr=10.44.0.3:9995}: linkerd2_app_core::errors: Failed to proxy request: request timed out"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(159.454774599)), Thr(None),
        Spans(&["inbound", r#"accept{peer.addr="10.44.0.0:60534"}"#, r#"source{target.addr="10.44.0.3:9995"}"#]),
        Tgt(Some("linkerd2_app_core::errors")), Msg(Some("Failed to proxy request: request timed out")), Fields(&[]),
        Er(Some("request timed out")), Client(Some("10.44.0.0:60534")), TargetAddr(Some("10.44.0.3:9995"))];
    "P21": r#"[     3.005000s]  INFO linkerd2_proxy: Admin interface on 127.0.0.1:4191"# => [
        // v2.91.0: the fraction is integer nanoseconds, so 3 s + 5 µs.
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(3.000005)), Thr(None), Spans(&[]), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Admin interface on 127.0.0.1:4191")), Fields(&[])];
    "P22": r#"[    12.12345678s] DEBUG outbound:accept{peer.addr=10.1.0.5:51234}: linkerd2_proxy_transport::connect: Connecting peer.addr=10.1.2.3:8080"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(12.012345678)), Thr(None),
        Spans(&["outbound", r#"accept{peer.addr="10.1.0.5:51234"}"#]), Tgt(Some("linkerd2_proxy_transport::connect")),
        Msg(Some("Connecting")), Fields(&[("peer.addr", "10.1.2.3:8080")])];
    "P23": r#"[1234567.000000s]  INFO ThreadId(01) linkerd2_proxy: Received shutdown signal"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(1234567.0)), Thr(Some("01")), Spans(&[]), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Received shutdown signal")), Fields(&[])];
    "P24": r#"[     0.999999s] TRACE ThreadId(03) linkerd_proxy_http::server: Handling as HTTP version=Http1"# => [
        Prod(ProxyPlain), Lvl(Some(Trace)), Up(Some(0.999999)), Thr(Some("03")), Spans(&[]),
        Tgt(Some("linkerd_proxy_http::server")), Msg(Some("Handling as HTTP")), Fields(&[("version", "Http1")])];
    "P25": r#"[ 86400.000001s] DEBUG ThreadId(123) outbound:proxy{addr=10.0.0.1:80}: linkerd_app_outbound::http::logical: Allowing profile override"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(86400.000001)), Thr(Some("123")),
        Spans(&["outbound", r#"proxy{addr="10.0.0.1:80"}"#]), Tgt(Some("linkerd_app_outbound::http::logical")),
        Msg(Some("Allowing profile override")), Fields(&[]), Dst(Some("10.0.0.1:80"))];
    "P26": r#"[     0.000812s] ERROR ThreadId(01) linkerd_app::env: LINKERD2_PROXY_INBOUND_PORTS="80,abc" is not valid: ParseIntError { kind: InvalidDigit }"# => [
        Prod(ProxyPlain), Lvl(Some(Error)), Up(Some(0.000812)), Thr(Some("01")), Spans(&[]), Tgt(Some("linkerd_app::env")),
        Msg(Some(r#"LINKERD2_PROXY_INBOUND_PORTS="80,abc" is not valid: ParseIntError { kind: InvalidDigit }"#)),
        Fields(&[])];
    "P27": r#"[    10.204011s] DEBUG ThreadId(01) outbound:accept{client.addr=10.42.0.7:38870}: linkerd_app_core::serve: reason=connection reset client.addr=10.42.0.7:38870 server.addr=10.42.0.9:80"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(10.204011)), Thr(Some("01")),
        Spans(&["outbound", r#"accept{client.addr="10.42.0.7:38870"}"#]), Tgt(Some("linkerd_app_core::serve")), Msg(None),
        Fields(&[("reason", "connection reset"), ("client.addr", "10.42.0.7:38870"), ("server.addr", "10.42.0.9:80")]),
        Client(Some("10.42.0.7:38870"))];
    "P28": r#"[    10.204011s] DEBUG ThreadId(01) inbound: linkerd_app_core::serve: Connection closed reason=client 10.42.0.7:38870: connection reset by peer (os error 104) client.addr=10.42.0.7:38870 server.addr=10.42.0.9:4143"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(10.204011)), Thr(Some("01")), Spans(&["inbound"]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")),
        Fields(&[("reason", "client 10.42.0.7:38870: connection reset by peer (os error 104)"), ("client.addr", "10.42.0.7:38870"), ("server.addr", "10.42.0.9:4143")]),
        Client(Some("10.42.0.7:38870"))];
    "P29": r#"[    33.804143s]  INFO ThreadId(01) inbound:server{port=8080}:rescue{client.addr=10.244.0.9:35612}: linkerd_app_core::errors::respond: HTTP/2.0 request failed error=client 10.244.0.9:35612: server: 10.244.0.8:4143: no route found for request error.sources=[server: 10.244.0.8:4143: no route found for request, no route found for request] path="/missing""# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(33.804143)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="8080"}"#, r#"rescue{client.addr="10.244.0.9:35612"}"#]),
        Tgt(Some("linkerd_app_core::errors::respond")), Msg(Some("HTTP/2.0 request failed")),
        Fields(&[
            ("error", "client 10.244.0.9:35612: server: 10.244.0.8:4143: no route found for request"),
            ("error.sources", "[server: 10.244.0.8:4143: no route found for request, no route found for request]"),
            ("path", "/missing"),
        ]),
        Er(Some("client 10.244.0.9:35612: server: 10.244.0.8:4143: no route found for request")),
        Sources(&["server: 10.244.0.8:4143: no route found for request", "no route found for request"]),
        Client(Some("10.244.0.9:35612"))];
    "P30": r#"[    33.804143s]  INFO ThreadId(01) linkerd_app_core::errors::respond: HTTP/2.0 request failed error=client 10.244.0.9:35612: server: 10.244.0.8:4143: no route found for request; uri http://backend/missing error.sources=[no route found for request; uri http://backend/missing] uri="http://backend/missing""# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(33.804143)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd_app_core::errors::respond")), Msg(Some("HTTP/2.0 request failed")),
        Fields(&[
            ("error", "client 10.244.0.9:35612: server: 10.244.0.8:4143: no route found for request; uri http://backend/missing"),
            ("error.sources", "[no route found for request; uri http://backend/missing]"),
            ("uri", "http://backend/missing"),
        ]),
        Sources(&["no route found for request; uri http://backend/missing"])];
    "P31": r#"[     1.000001s] DEBUG ThreadId(01) linkerd_app_inbound::policy::http: Request denied path="/api/\"weird\"\\x" method="GET""# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(1.000001)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd_app_inbound::policy::http")), Msg(Some("Request denied")),
        Fields(&[("path", r#"/api/"weird"\x"#), ("method", "GET")])];
    "P32": r#"[    10.455917s]  INFO ThreadId(01) inbound:server{port=8080}:rescue{client.addr=10.244.0.1:55002}: linkerd_app_inbound::policy::http: Request denied server.group= server.kind=default server.name=all-unauthenticated route.group= route.kind=default route.name=default client.tls=None(NoClientHello) client.ip=10.244.0.1"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(10.455917)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="8080"}"#, r#"rescue{client.addr="10.244.0.1:55002"}"#]),
        Tgt(Some("linkerd_app_inbound::policy::http")), Msg(Some("Request denied")),
        Fields(&[
            ("server.group", ""), ("server.kind", "default"), ("server.name", "all-unauthenticated"),
            ("route.group", ""), ("route.kind", "default"), ("route.name", "default"),
            ("client.tls", "None(NoClientHello)"), ("client.ip", "10.244.0.1"),
        ]),
        Tls("none", Some("NoClientHello")), Client(Some("10.244.0.1:55002"))];
    "P33": r#"[     2.000000s] DEBUG outbound:forward{peer.addr=10.1.2.3:8080 peer.id=Some("we}ird: name")}: linkerd2_proxy_http::client: Building HTTP client"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(2.0)), Thr(None),
        Spans(&["outbound", r#"forward{peer.addr="10.1.2.3:8080" peer.id="Some(\"we}ird: name\")"}"#]),
        Tgt(Some("linkerd2_proxy_http::client")), Msg(Some("Building HTTP client")), Fields(&[])];
    "P34": r#"[     0.020000s] DEBUG ThreadId(01) inbound:server{port=4143}:orig-proto-upgrade:tcp.forward: linkerd_proxy_http::orig_proto: Upgrading request version=HTTP/1.1"# => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(0.02)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="4143"}"#, "orig-proto-upgrade", "tcp.forward"]),
        Tgt(Some("linkerd_proxy_http::orig_proto")), Msg(Some("Upgrading request")), Fields(&[("version", "HTTP/1.1")])];
    "P35": r#"[     0.022461s]  INFO ThreadId(02) daemon:identity: linkerd_app: Certified identity id=web.default.serviceaccount.identity.linkerd.cluster.local"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.022461)), Thr(Some("02")), Spans(&["daemon", "identity"]),
        Tgt(Some("linkerd_app")), Msg(Some("Certified identity")),
        Fields(&[("id", "web.default.serviceaccount.identity.linkerd.cluster.local")])];
    "P36": r#"[     0.030000s]  WARN ThreadId(01) linkerd_app_core::control: Failed to resolve control-plane component error=no record found"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(0.03)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd_app_core::control")), Msg(Some("Failed to resolve control-plane component")),
        Fields(&[("error", "no record found")])];
    "P37": r#"[     0.030000s] ERROR ThreadId(01) linkerd2_proxy: Initialization: failed to bind 0.0.0.0:4143"# => [
        Prod(ProxyPlain), Lvl(Some(Error)), Up(Some(0.03)), Thr(Some("01")), Spans(&[]), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Initialization: failed to bind 0.0.0.0:4143")), Fields(&[])];
    "P38": r#"Jan 15 16:34:57.892 WARN  ThreadId(01) inbound:accept{peer.addr=10.110.16.96:47812 target.addr=10.110.80.70:8558}:http{v=h2}: linkerd2_app_core::errors: Failed to proxy request: error trying to connect: Connection refused (os error 111)\\n"# => [
        Norm("Jan 15 16:34:57.892 WARN  ThreadId(01) inbound:accept{peer.addr=10.110.16.96:47812 target.addr=10.110.80.70:8558}:http{v=h2}: linkerd2_app_core::errors: Failed to proxy request: error trying to connect: Connection refused (os error 111)"),
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(None), Ts(Some("Jan 15 16:34:57.892")), Thr(Some("01")), Trunc(true),
        Spans(&["inbound", r#"accept{peer.addr="10.110.16.96:47812" target.addr="10.110.80.70:8558"}"#, r#"http{v="h2"}"#]),
        Tgt(Some("linkerd2_app_core::errors")),
        Msg(Some("Failed to proxy request: error trying to connect: Connection refused (os error 111)")), Fields(&[]),
        Er(Some("error trying to connect: Connection refused (os error 111)")),
        Client(Some("10.110.16.96:47812")), TargetAddr(Some("10.110.80.70:8558"))];
    "P39": r#"[ 0.002681s] INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.002681)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd2_proxy::rt")), Msg(Some("Using single-threaded proxy runtime")), Fields(&[])];
    "P40": r#"[     5.100000s]  WARN ThreadId(01) linkerd_app_core::errors::respond: Failed to encode error header error=invalid header value: "bad"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(5.1)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd_app_core::errors::respond")), Msg(Some("Failed to encode error header")),
        Fields(&[("error", r#"invalid header value: "bad"#)]), Er(Some(r#"invalid header value: "bad"#))];
    "P40b": r#"value""# => [Prose];
    // Without continuation mode, P40b stays its own Unparsed record.
    "P40+P40b": "[     5.100000s]  WARN ThreadId(01) linkerd_app_core::errors::respond: Failed to encode error header error=invalid header value: \"bad\nvalue\"" => [
        Records(2),
        Rec(0, &[Prod(ProxyPlain), Line(1), Lines(1), Cont(None), Fields(&[("error", r#"invalid header value: "bad"#)])]),
        Rec(1, &[Unparsed, Line(2)])];
    "P41": "\x1b[2m[     0.001234s]\x1b[0m \x1b[32m INFO\x1b[0m ThreadId(01) \x1b[1minbound\x1b[0m\x1b[2m:\x1b[0m \x1b[2mlinkerd_app_core::serve\x1b[0m\x1b[2m:\x1b[0m Connection closed \x1b[3mclient.addr\x1b[0m\x1b[2m=\x1b[0m10.0.0.1:4143" => [
        Norm("[     0.001234s]  INFO ThreadId(01) inbound: linkerd_app_core::serve: Connection closed client.addr=10.0.0.1:4143"),
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.001234)), Thr(Some("01")), Spans(&["inbound"]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")), Fields(&[("client.addr", "10.0.0.1:4143")]),
        Client(Some("10.0.0.1:4143"))];
    "P42": r#"[     9.000000s]  WARN ThreadId(01) linkerd_app_inbound::http::server: Unexpected error \x1b[31mred"# => [
        Norm(r#"[     9.000000s]  WARN ThreadId(01) linkerd_app_inbound::http::server: Unexpected error \x1b[31mred"#),
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(9.0)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd_app_inbound::http::server")), Msg(Some(r#"Unexpected error \x1b[31mred"#)), Fields(&[])];
    // The note allows either reading; the parser splits at ` error.source=`.
    "P43": r#"[    42.000000s]  WARN ThreadId(01) outbound:accept{peer.addr=10.0.0.1:1234}: linkerd2_app_core::serve: Connection closed error=error trying to connect error.source=Connection refused (os error 111)"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(42.0)), Thr(Some("01")),
        Spans(&["outbound", r#"accept{peer.addr="10.0.0.1:1234"}"#]), Tgt(Some("linkerd2_app_core::serve")),
        Msg(Some("Connection closed")),
        Fields(&[("error", "error trying to connect"), ("error.source", "Connection refused (os error 111)")]),
        Er(Some("error trying to connect")), Sources(&["Connection refused (os error 111)"]),
        Client(Some("10.0.0.1:1234"))];
    "P44": r#"[    42.000000s]  WARN ThreadId(01) outbound:accept{client.addr=10.0.0.1:1234}: linkerd_app_core::serve: Connection closed error=error trying to connect, error: Connection refused (os error 111)"# => [
        Prod(ProxyPlain), Lvl(Some(Warn)), Up(Some(42.0)), Thr(Some("01")),
        Spans(&["outbound", r#"accept{client.addr="10.0.0.1:1234"}"#]), Tgt(Some("linkerd_app_core::serve")),
        Msg(Some("Connection closed")),
        Fields(&[("error", "error trying to connect, error: Connection refused (os error 111)")]),
        Er(Some("error trying to connect")), Sources(&["Connection refused (os error 111)"]),
        Client(Some("10.0.0.1:1234"))];
    "P45": "[     1.500000s] DEBUG ThreadId(01) linkerd_stack::failfast: " => [
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(1.5)), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd_stack::failfast")), Msg(None), Fields(&[])];
    "P46": r#"[    10.000100s]  INFO ThreadId(01) inbound:server{port=8080}:rescue{client.addr=[fd00::1]:55002}: linkerd_app_core::errors::respond: Request failed error=unauthorized request on route"# => [
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(10.0001)), Thr(Some("01")),
        Spans(&["inbound", r#"server{port="8080"}"#, r#"rescue{client.addr="[fd00::1]:55002"}"#]),
        Tgt(Some("linkerd_app_core::errors::respond")), Msg(Some("Request failed")),
        Fields(&[("error", "unauthorized request on route")]), Er(Some("unauthorized request on route")),
        Client(Some("[fd00::1]:55002"))];

    // ---------------------------------------------------------------- J
    "J1": r#"{"timestamp":"[     0.002747s]","level":"INFO","fields":{"message":"Admin interface on 0.0.0.0:4191"},"target":"linkerd2_proxy","threadId":"ThreadId(1)"}"# => [
        Prod(ProxyJson), Lvl(Some(Info)), Up(Some(0.002747)), Ts(None), Thr(Some("1")), Spans(&[]),
        Tgt(Some("linkerd2_proxy")), Msg(Some("Admin interface on 0.0.0.0:4191")), Fields(&[])];
    "J2": r#"{"timestamp":"...","level":"INFO","fields":{"message":"Connection closed","error":"proxy admin server is HTTP-only"},"target":"linkerd_app_core::serve","spans":[{"name": "daemon"},{"listen_addr": "0.0.0.0:4191","name": "admin"},{"client_addr": "10.1.26.203:45330","target_addr": "10.1.4.38:4191","name": "accept"}],"threadId":"ThreadId(2)"}"# => [
        Prod(ProxyJson), Lvl(Some(Info)), Up(None), Ts(None), Thr(Some("2")),
        Spans(&["daemon", r#"admin{listen_addr="0.0.0.0:4191"}"#, r#"accept{client_addr="10.1.26.203:45330" target_addr="10.1.4.38:4191"}"#]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")),
        Fields(&[("error", "proxy admin server is HTTP-only")]), Er(Some("proxy admin server is HTTP-only")),
        Client(Some("10.1.26.203:45330")), TargetAddr(Some("10.1.4.38:4191"))];
    "J3": r#"{"timestamp":"[    12.000100s]","level":"WARN","fields":{"message":"Failed to proxy request: connection refused"},"target":"linkerd2_app_core::errors","span":{"v":"1.x","name":"http"},"spans":[{"name":"outbound"},{"peer.addr":"10.1.0.5:51234","name":"accept"},{"v":"1.x","name":"http"}],"threadId":"ThreadId(1)"}"# => [
        Prod(ProxyJson), Lvl(Some(Warn)), Up(Some(12.0001)), Thr(Some("1")),
        Spans(&["outbound", r#"accept{peer.addr="10.1.0.5:51234"}"#, r#"http{v="1.x"}"#]),
        Tgt(Some("linkerd2_app_core::errors")), Msg(Some("Failed to proxy request: connection refused")), Fields(&[]),
        Er(Some("connection refused")), Client(Some("10.1.0.5:51234"))];
    "J4": r#"{"timestamp":"2024-06-13T10:15:02.123456Z","level":"DEBUG","fields":{"message":"Connection closed"},"target":"linkerd_app_core::serve","spans":[{"name":"inbound"},{"client.addr":"10.0.0.198:60736","server.addr":"10.0.1.32:9443","name":"accept"}],"threadId":"ThreadId(1)"}"# => [
        Prod(ProxyJson), Lvl(Some(Debug)), Up(None), Ts(Some("2024-06-13T10:15:02.123456Z")), Thr(Some("1")),
        Spans(&["inbound", r#"accept{client.addr="10.0.0.198:60736" server.addr="10.0.1.32:9443"}"#]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")), Fields(&[]),
        Client(Some("10.0.0.198:60736"))];
    // Same event as J4; nested keys flatten back to dotted ones (in the
    // order the pipeline wrote them).
    "J5": r#"{"threadId":"ThreadId(1)","spans":[{"name":"inbound"},{"server":{"addr":"10.0.1.32:9443"},"name":"accept","client":{"addr":"10.0.0.198:60736"}}],"level":"DEBUG","fields":{"message":"Connection closed"},"timestamp":"2026-01-12T15:39:45.802812Z","target":"linkerd_app_core::serve"}"# => [
        Prod(ProxyJson), Lvl(Some(Debug)), Up(None), Ts(Some("2026-01-12T15:39:45.802812Z")), Thr(Some("1")),
        Spans(&["inbound", r#"accept{server.addr="10.0.1.32:9443" client.addr="10.0.0.198:60736"}"#]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")), Fields(&[]),
        Client(Some("10.0.0.198:60736"))];
    // The `log.*` keys may be dropped or kept; the parser drops them.
    "J6": r#"{"timestamp":"2025-01-01T00:00:00.000001Z","level":"WARN","fields":{"message":"Sending fatal alert BadCertificate","log.target":"rustls::common_state","log.module_path":"rustls::common_state","log.file":"/cargo/registry/src/index.crates.io-6f17d22bba15001f/rustls-0.23.12/src/common_state.rs","log.line":580},"target":"rustls::common_state","spans":[{"name":"inbound"},{"port":4143,"name":"server"}],"threadId":"ThreadId(1)"}"# => [
        Prod(ProxyJson), Lvl(Some(Warn)), Ts(Some("2025-01-01T00:00:00.000001Z")), Thr(Some("1")),
        Spans(&["inbound", r#"server{port="4143"}"#]), Tgt(Some("rustls::common_state")),
        Msg(Some("Sending fatal alert BadCertificate")), Fields(&[])];
    "J7": r#"{"timestamp":"2025-01-01T00:00:00.000001Z","level":"WARN","fields":{"message":"Unexpected error","error":"line one\nline two"},"target":"linkerd_app_inbound::http::server","threadId":"ThreadId(1)"}"# => [
        Prod(ProxyJson), Lvl(Some(Warn)), Ts(Some("2025-01-01T00:00:00.000001Z")), Thr(Some("1")), Spans(&[]),
        Tgt(Some("linkerd_app_inbound::http::server")), Msg(Some("Unexpected error")),
        Fields(&[("error", "line one\nline two")]), Er(Some("line one\nline two")), Records(1), Lines(1)];

    // ---------------------------------------------------------------- A
    "A1": r#"10.244.0.9:35612 default.ns.serviceaccount.identity.linkerd.cluster.local - [2023-03-01T12:00:00.123456789Z] "GET /api/v1/items HTTP/1.1" 200"# => [
        Prod(AccessApache), Up(None), Ts(Some("2023-03-01T12:00:00.123456789Z")), Tgt(None), Spans(&[]),
        Fields(&[
            ("client.addr", "10.244.0.9:35612"), ("client.id", "default.ns.serviceaccount.identity.linkerd.cluster.local"),
            ("method", "GET"), ("uri", "/api/v1/items"), ("version", "HTTP/1.1"), ("status", "200"),
        ]),
        Client(Some("10.244.0.9:35612")), Status(Some(200))];
    "A2": r#"10.244.0.9:35612 - - [2023-03-01T12:00:00.000000001Z] "POST http://backend:8080/submit HTTP/2.0""# => [
        Prod(AccessApache), Ts(Some("2023-03-01T12:00:00.000000001Z")),
        Fields(&[
            ("client.addr", "10.244.0.9:35612"), ("client.id", "-"), ("method", "POST"),
            ("uri", "http://backend:8080/submit"), ("version", "HTTP/2.0"),
        ]),
        Status(None)];
    "A3": r#"[fd00::9]:41000 - - [2025-05-01T08:00:00.5Z] "GET / HTTP/1.1" 503"# => [
        Prod(AccessApache), Ts(Some("2025-05-01T08:00:00.5Z")),
        Fields(&[
            ("client.addr", "[fd00::9]:41000"), ("client.id", "-"), ("method", "GET"), ("uri", "/"),
            ("version", "HTTP/1.1"), ("status", "503"),
        ]),
        Client(Some("[fd00::9]:41000")), Status(Some(503))];
    "A4": r#"{"client.addr":"10.244.0.9:35612","client.id":"default.httproute-repro.serviceaccount.identity.linkerd.cluster.local","host":"backend","method":"GET","processing_ns":"105284","request_bytes":"","response_bytes":"0","status":404,"timestamp":"2026-08-12T14:39:49.358141114Z","total_ns":"186090","trace_id":"","uri":"http://backend/missing","user_agent":"curl/8.10.1","version":"HTTP/2.0"}"# => [
        Prod(AccessJson), Lvl(None), Tgt(None), Ts(Some("2026-08-12T14:39:49.358141114Z")),
        Fields(&[
            ("client.addr", "10.244.0.9:35612"),
            ("client.id", "default.httproute-repro.serviceaccount.identity.linkerd.cluster.local"),
            ("host", "backend"), ("method", "GET"), ("processing_ns", "105284"), ("request_bytes", ""),
            ("response_bytes", "0"), ("status", "404"), ("total_ns", "186090"), ("trace_id", ""),
            ("uri", "http://backend/missing"), ("user_agent", "curl/8.10.1"), ("version", "HTTP/2.0"),
        ]),
        Client(Some("10.244.0.9:35612")), Status(Some(404))];
    "A5": r#"Invalid LINKERD2_PROXY_ACCESS_LOG="Apache2": expected either 'apache' or 'json'"# => [Prose];

    // ---------------------------------------------------------------- W
    "W1": r#"2024-06-13T10:15:02.123456789Z [     0.001961s]  INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime"# => [
        OuterTs(Some("2024-06-13T10:15:02.123456789Z")), Pod(None), Container(None),
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.001961)), Ts(None), Thr(Some("01")), Spans(&[]),
        Tgt(Some("linkerd2_proxy::rt")), Msg(Some("Using single-threaded proxy runtime")), Fields(&[])];
    "W2": r#"2024-06-13T10:15:02.1234Z [     0.001961s]  INFO ThreadId(01) linkerd2_proxy: Tap DISABLED"# => [
        OuterTs(Some("2024-06-13T10:15:02.1234Z")), Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.001961)),
        Thr(Some("01")), Tgt(Some("linkerd2_proxy")), Msg(Some("Tap DISABLED")), Fields(&[])];
    "W3": r#"2024-06-13T10:15:02Z time="2024-06-13T10:15:02Z" level=info msg="running version stable-2.14.10""# => [
        OuterTs(Some("2024-06-13T10:15:02Z")), Prod(Logrus), Lvl(Some(Info)), Ts(Some("2024-06-13T10:15:02Z")),
        Msg(Some("running version stable-2.14.10")), Fields(&[])];
    "W4": r#"[pod/web-7d9c8b6f5-x2k4q/linkerd-proxy] [     0.003148s]  INFO ThreadId(01) linkerd2_proxy: Admin interface on 0.0.0.0:4191"# => [
        Pod(Some("web-7d9c8b6f5-x2k4q")), Container(Some("linkerd-proxy")), WrapKind(Some("kubectl-prefix")), OuterTs(None),
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.003148)), Thr(Some("01")), Spans(&[]), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Admin interface on 0.0.0.0:4191")), Fields(&[])];
    "W5": r#"[pod/linkerd-destination-5778b7b86-djhsq/destination] 2024-07-02T15:17:37.104829311Z time="2024-07-02T15:17:37Z" level=info msg="starting gRPC server on :8086""# => [
        Pod(Some("linkerd-destination-5778b7b86-djhsq")), Container(Some("destination")), WrapKind(Some("kubectl-prefix")),
        OuterTs(Some("2024-07-02T15:17:37.104829311Z")),
        Prod(Logrus), Lvl(Some(Info)), Ts(Some("2024-07-02T15:17:37Z")), Msg(Some("starting gRPC server on :8086")), Fields(&[])];
    "W6": r#"foo-77b8f6cc97-8bjxj linkerd-proxy 2021-05-20T08:00:07.805841158Z [  1200.000001s] DEBUG ThreadId(01) inbound:accept{client.addr=10.1.2.3:4567}: linkerd_tls::server: Peeked bytes from TCP stream sz=517"# => [
        Pod(Some("foo-77b8f6cc97-8bjxj")), Container(Some("linkerd-proxy")), WrapKind(Some("stern")),
        OuterTs(Some("2021-05-20T08:00:07.805841158Z")),
        Prod(ProxyPlain), Lvl(Some(Debug)), Up(Some(1200.000001)), Thr(Some("01")),
        Spans(&["inbound", r#"accept{client.addr="10.1.2.3:4567"}"#]), Tgt(Some("linkerd_tls::server")),
        Msg(Some("Peeked bytes from TCP stream")), Fields(&[("sz", "517")]), Sz(Some(517)), Client(Some("10.1.2.3:4567"))];
    "W7": "\x1b[32mweb-7d9c8b6f5-x2k4q\x1b[0m \x1b[34mlinkerd-proxy\x1b[0m [     0.003148s]  INFO ThreadId(01) linkerd2_proxy: Outbound interface on 127.0.0.1:4140" => [
        Norm("web-7d9c8b6f5-x2k4q linkerd-proxy [     0.003148s]  INFO ThreadId(01) linkerd2_proxy: Outbound interface on 127.0.0.1:4140"),
        Pod(Some("web-7d9c8b6f5-x2k4q")), Container(Some("linkerd-proxy")), WrapKind(Some("stern")), OuterTs(None),
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.003148)), Thr(Some("01")), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Outbound interface on 127.0.0.1:4140")), Fields(&[])];
    // KNOWN GAP (W8): the CSV export's first field (the aggregator's own
    // timestamp `Dec 2, 2020 @ 06:45:47.043`) is dropped by `normalize`, which
    // returns only the payload `&str`, so it cannot be asserted, and
    // `Wrapper::kind` is never `csv`. Recording it needs `normalize` to return
    // wrapper data (a design change).
    "W8": r#""Dec 2, 2020 @ 06:45:47.043","[ 80905.816738s]  INFO ThreadId(01) outbound:accept{peer.addr=10.244.90.101:39120 target.addr=10.244.57.132:9092}: linkerd2_app_core::serve: Connection closed error=Service in fail-fast""# => [
        Norm("[ 80905.816738s]  INFO ThreadId(01) outbound:accept{peer.addr=10.244.90.101:39120 target.addr=10.244.57.132:9092}: linkerd2_app_core::serve: Connection closed error=Service in fail-fast"),
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(80905.816738)), Thr(Some("01")),
        Spans(&["outbound", r#"accept{peer.addr="10.244.90.101:39120" target.addr="10.244.57.132:9092"}"#]),
        Tgt(Some("linkerd2_app_core::serve")), Msg(Some("Connection closed")), Fields(&[("error", "Service in fail-fast")]),
        Er(Some("Service in fail-fast")), Client(Some("10.244.90.101:39120")), TargetAddr(Some("10.244.57.132:9092"))];
    "W9": "[     0.002984s]  INFO ThreadId(01) linkerd2_proxy: Outbound interface on 127.0.0.1:4140\r" => [
        Norm("[     0.002984s]  INFO ThreadId(01) linkerd2_proxy: Outbound interface on 127.0.0.1:4140"),
        Prod(ProxyPlain), Lvl(Some(Info)), Up(Some(0.002984)), Thr(Some("01")), Tgt(Some("linkerd2_proxy")),
        Msg(Some("Outbound interface on 127.0.0.1:4140")), Fields(&[])];
    "W10": r#"Defaulted container "linkerd-proxy" out of: linkerd-proxy, proxy-injector, linkerd-init (init)"# => [Prose];
    "W11": r#"Found 2 pods, using pod/linkerd-proxy-injector-757d76768f-h9bw2"# => [Prose];
    "W12": r#"[bogdan@admin scripts]$ k logs linkerd-destination-5694c5787c-pm27w linkerd-proxy"# => [Prose];
    "W13": r#"    ThreadId(01) outbound:proxy{addr=10.0.3.18:80}: linkerd_app_outbound::http::logical: Using balancer"# => [
        Prod(ProxyPlain), Trunc(true), Lvl(None), Up(None), Ts(None), Thr(Some("01")),
        Spans(&["outbound", r#"proxy{addr="10.0.3.18:80"}"#]), Tgt(Some("linkerd_app_outbound::http::logical")),
        Msg(Some("Using balancer")), Fields(&[]), Dst(Some("10.0.3.18:80"))];
    "W14": r#"inbound: linkerd_app_core::serve: Connection closed error=connection closed before message completed client.addr=<ip:port>"# => [
        Prod(ProxyPlain), Trunc(true), Lvl(None), Up(None), Ts(None), Thr(None), Spans(&["inbound"]),
        Tgt(Some("linkerd_app_core::serve")), Msg(Some("Connection closed")),
        Fields(&[("error", "connection closed before message completed"), ("client.addr", "<ip:port>")]),
        Er(Some("connection closed before message completed"))];
    // The note calls a `linkerd check` line prose; lpa reads it as the CLI's
    // own verdict (a warning here), since check output is evidence too.
    "W15": "‼ control plane proxies are up-to-date" => [
        Lvl(Some(Warn)), Msg(Some("control plane proxies are up-to-date")), Fields(&[("status", "warn")])];

    // ---------------------------------------------------------------- C
    "C1": r#"time="2024-07-02T15:17:37Z" level=info msg="running version edge-24.6.4""# => [
        Prod(Logrus), Ts(Some("2024-07-02T15:17:37Z")), Lvl(Some(Info)), Up(None), Thr(None), Tgt(None),
        Msg(Some("running version edge-24.6.4")), Fields(&[])];
    "C2": r#"time="2024-07-02T15:18:11Z" level=error msg="failed to start webhook admin server: http: Server closed""# => [
        Prod(Logrus), Ts(Some("2024-07-02T15:18:11Z")), Lvl(Some(Error)),
        Msg(Some("failed to start webhook admin server: http: Server closed")), Fields(&[])];
    "C3": r#"time="2021-11-10T19:30:20Z" level=info msg="Using default opaque ports: map[25:{} 587:{} 3306:{} 4444:{} 5432:{} 6379:{} 9300:{} 11211:{}]""# => [
        Prod(Logrus), Ts(Some("2021-11-10T19:30:20Z")), Lvl(Some(Info)),
        Msg(Some("Using default opaque ports: map[25:{} 587:{} 3306:{} 4444:{} 5432:{} 6379:{} 9300:{} 11211:{}]")),
        Fields(&[])];
    "C4": r#"time="2023-01-10T10:00:00Z" level=warning msg="Failed to get endpoints" addr=":8086" component=endpoints-watcher error="endpoints \"web\" not found" ns=default svc=web"# => [
        Prod(Logrus), Ts(Some("2023-01-10T10:00:00Z")), Lvl(Some(Warn)), Msg(Some("Failed to get endpoints")),
        Fields(&[("addr", ":8086"), ("component", "endpoints-watcher"), ("error", r#"endpoints "web" not found"#), ("ns", "default"), ("svc", "web")]),
        Er(Some(r#"endpoints "web" not found"#))];
    "C5": r#"{"addr":":8086","component":"endpoints-watcher","level":"info","msg":"Establishing watch on endpoint [default/web:8080]","time":"2023-01-10T10:00:00Z"}"# => [
        Prod(LogrusJson), Lvl(Some(Info)), Ts(Some("2023-01-10T10:00:00Z")), Tgt(None),
        Msg(Some("Establishing watch on endpoint [default/web:8080]")),
        Fields(&[("addr", ":8086"), ("component", "endpoints-watcher")])];
    "C6": r#"time="2023-01-10T10:00:00Z" level=debug msg="Updating service" cluster= ns=emojivoto svc=web-svc"# => [
        Prod(Logrus), Ts(Some("2023-01-10T10:00:00Z")), Lvl(Some(Debug)), Msg(Some("Updating service")),
        Fields(&[("cluster", ""), ("ns", "emojivoto"), ("svc", "web-svc")])];
    "C7": r#"I0203 21:30:23.123456       1 reflector.go:219] Starting reflector *v1.Pod (10m0s) from k8s.io/client-go/informers/factory.go:134"# => [
        Prod(Klog), Lvl(Some(Info)), Ts(Some("0203 21:30:23.123456")), Thr(Some("1")), Tgt(Some("reflector.go:219")),
        Msg(Some("Starting reflector *v1.Pod (10m0s) from k8s.io/client-go/informers/factory.go:134")), Fields(&[])];
    "C8": r#"E0203 21:30:24.000001       1 reflector.go:138] k8s.io/client-go@v0.26.1/tools/cache/reflector.go:169: Failed to watch *v1.Pod: unknown (get pods)"# => [
        Prod(Klog), Lvl(Some(Error)), Ts(Some("0203 21:30:24.000001")), Thr(Some("1")), Tgt(Some("reflector.go:138")),
        Msg(Some("k8s.io/client-go@v0.26.1/tools/cache/reflector.go:169: Failed to watch *v1.Pod: unknown (get pods)")),
        Fields(&[])];
    "C9": r#"time="2021-03-19T13:37:56Z" level=info msg="running version stable-2.10.0""# => [
        Prod(Logrus), Ts(Some("2021-03-19T13:37:56Z")), Lvl(Some(Info)), Msg(Some("running version stable-2.10.0")),
        Fields(&[])];
    "C10": r##"time="2022-02-03T21:30:23Z" level=info msg="# Generated by iptables-save v1.8.7 on Thu Feb  3 21:30:23 2022\n*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n""## => [
        Prod(Logrus), Ts(Some("2022-02-03T21:30:23Z")), Lvl(Some(Info)),
        Msg(Some("# Generated by iptables-save v1.8.7 on Thu Feb  3 21:30:23 2022\n*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n")),
        Fields(&[]), Records(1), Lines(1), Cont(None)];
    "C11": r#"time="2022-02-03T21:30:23Z" level=info msg="Will ignore port [4190 4191 4567 4568] on chain PROXY_INIT_REDIRECT""# => [
        Prod(Logrus), Ts(Some("2022-02-03T21:30:23Z")), Lvl(Some(Info)),
        Msg(Some("Will ignore port [4190 4191 4567 4568] on chain PROXY_INIT_REDIRECT")), Fields(&[])];
    "C12": r#"2020/07/15 16:22:43 < Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)"# => [
        Prod(ProxyInit), Ts(Some("2020/07/15 16:22:43")), Up(None), Tgt(None),
        Msg(Some("< Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)")), Fields(&[])];
    "C13": r#" pkts bytes target     prot opt in     out     source               destination"# => [Prose];
    "C12+C13": "2020/07/15 16:22:43 < Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)\n pkts bytes target     prot opt in     out     source               destination" => [
        Records(1), Prod(ProxyInit), Ts(Some("2020/07/15 16:22:43")), Msg(Some("< Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)")),
        Lines(2), Cont(Some("pkts bytes target     prot opt in     out     source               destination"))];
    "C14": r#"/02/25 08:33:56 Will ignore port [4190 4191] on chain PROXY_INIT_REDIRECT"# => [
        Prod(ProxyInit), Trunc(true), Ts(None), Up(None),
        Msg(Some("Will ignore port [4190 4191] on chain PROXY_INIT_REDIRECT")), Fields(&[])];
    "C15": r#"2023-07-26T09:19:35.291752Z  INFO grpc{port=8090}: linkerd_policy_controller: policy gRPC server listening addr=0.0.0.0:8090"# => [
        Prod(PolicyController), OuterTs(None), Ts(Some("2023-07-26T09:19:35.291752Z")), Up(None), Lvl(Some(Info)), Thr(None),
        Spans(&[r#"grpc{port="8090"}"#]), Tgt(Some("linkerd_policy_controller")), Msg(Some("policy gRPC server listening")),
        Fields(&[("addr", "0.0.0.0:8090")])];
    "C16": r#"2023-07-27T05:48:27.240045Z  INFO services: kubert::errors: stream failed error=failed to start watching object: HyperError: connection closed before message completed"# => [
        Prod(PolicyController), Ts(Some("2023-07-27T05:48:27.240045Z")), Lvl(Some(Info)), Thr(None), Spans(&["services"]),
        Tgt(Some("kubert::errors")), Msg(Some("stream failed")),
        Fields(&[("error", "failed to start watching object: HyperError: connection closed before message completed")]),
        Er(Some("failed to start watching object: HyperError: connection closed before message completed"))];
    "C17": r#"DEBUG status::Index: linkerd_policy_controller_k8s_status::index: Lease holder reconciling cluster index.name=linkerd-destination-74d7fdc45d-xfb8l"# => [
        Prod(PolicyController), Trunc(true), Lvl(Some(Debug)), Ts(None), Up(None), Thr(None), Spans(&["status::Index"]),
        Tgt(Some("linkerd_policy_controller_k8s_status::index")), Msg(Some("Lease holder reconciling cluster")),
        Fields(&[("index.name", "linkerd-destination-74d7fdc45d-xfb8l")])];
    "C18": r#"{"timestamp":"2026-01-14T09:17:31.519200Z","level":"INFO","fields":{"message":"Connection lost","error":"read header from client timeout"},"target":"kubert::server","spans":[{"port":"9443","name":"server"},{"client.ip":"10.0.116.146","client.port":"39514","name":"conn"}]}"# => [
        Prod(PolicyController), Ts(Some("2026-01-14T09:17:31.519200Z")), Up(None), Lvl(Some(Info)), Thr(None),
        Spans(&[r#"server{port="9443"}"#, r#"conn{client.ip="10.0.116.146" client.port="39514"}"#]),
        Tgt(Some("kubert::server")), Msg(Some("Connection lost")), Fields(&[("error", "read header from client timeout")]),
        Er(Some("read header from client timeout"))];

    // ---------------------------------------------------------------- M
    "M1": r#"thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', linkerd/app/src/lib.rs:200:14"# => [
        Prod(RustPanic), Lvl(Some(Error)), Thr(Some("main")), Up(None),
        Msg(Some("called `Option::unwrap()` on a `None` value")), Fields(&[("loc", "linkerd/app/src/lib.rs:200:14")])];
    "M2": "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace" => [Prose];
    "M1+M2": "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', linkerd/app/src/lib.rs:200:14\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace" => [
        Records(1), Prod(RustPanic), Thr(Some("main")), Msg(Some("called `Option::unwrap()` on a `None` value")),
        Fields(&[("loc", "linkerd/app/src/lib.rs:200:14")]), Lines(2), Cont(Some(NOTE_M1))];
    "M3": r#"thread 'proxy' panicked at linkerd/proxy/balance/queue/src/worker.rs:120:9:"# => [
        Prod(RustPanic), Lvl(Some(Error)), Thr(Some("proxy")), Msg(None),
        Fields(&[("loc", "linkerd/proxy/balance/queue/src/worker.rs:120:9")])];
    "M3b": "assertion failed: self.pending.is_empty()" => [Prose];
    "M3+M3b+M2": "thread 'proxy' panicked at linkerd/proxy/balance/queue/src/worker.rs:120:9:\nassertion failed: self.pending.is_empty()\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace" => [
        Records(1), Prod(RustPanic), Thr(Some("proxy")), Msg(Some("assertion failed: self.pending.is_empty()")),
        Fields(&[("loc", "linkerd/proxy/balance/queue/src/worker.rs:120:9")]), Lines(3),
        Cont(Some("assertion failed: self.pending.is_empty()\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"))];
    "M4": r#"thread 'main' (1) panicked at linkerd2-proxy/src/main.rs:60:10:"# => [
        Prod(RustPanic), Lvl(Some(Error)), Thr(Some("main")), Msg(None),
        Fields(&[("tid", "1"), ("loc", "linkerd2-proxy/src/main.rs:60:10")])];
    "M5": "   4: linkerd_app::Config::build::{{closure}}" => [Prose];
    "M5b": "             at /linkerd/app/src/lib.rs:200:14" => [Prose];
    "M1+M2+M5+M5b": "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', linkerd/app/src/lib.rs:200:14\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n   4: linkerd_app::Config::build::{{closure}}\n             at /linkerd/app/src/lib.rs:200:14" => [
        Records(1), Prod(RustPanic), Lines(4), Msg(Some("called `Option::unwrap()` on a `None` value")),
        Cont(Some("note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n4: linkerd_app::Config::build::{{closure}}\nat /linkerd/app/src/lib.rs:200:14"))];
    "M6": "Invalid configuration: LINKERD2_PROXY_IDENTITY_DIR must be set." => [Prose];
    "M7": "panic: runtime error: invalid memory address or nil pointer dereference" => [
        Prod(GoPanic), Lvl(Some(Error)), Up(None), Tgt(None)];
    "M7b": "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]" => [Prose];
    "M7d": "github.com/linkerd/linkerd2/controller/api/destination.(*endpointTranslator).Add(0xc000123400, 0xc0004a2000)" => [Prose];
    "M7e": "\t/linkerd-build/controller/api/destination/endpoint_translator.go:123 +0x1a4" => [Prose];
    "M7..M7e": "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]\ngoroutine 214 [running]:\ngithub.com/linkerd/linkerd2/controller/api/destination.(*endpointTranslator).Add(0xc000123400, 0xc0004a2000)\n\t/linkerd-build/controller/api/destination/endpoint_translator.go:123 +0x1a4" => [
        Records(1), Prod(GoPanic), Lvl(Some(Error)), Lines(5),
        Cont(Some("[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]\ngoroutine 214 [running]:\ngithub.com/linkerd/linkerd2/controller/api/destination.(*endpointTranslator).Add(0xc000123400, 0xc0004a2000)\n/linkerd-build/controller/api/destination/endpoint_translator.go:123 +0x1a4"))];
    // The same dump as the Go runtime prints it, with the blank line before
    // the goroutine stack (section 4.2): still one event.
    "M7..M7e (blank)": "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]\n\ngoroutine 214 [running]:\ngithub.com/linkerd/linkerd2/controller/api/destination.(*endpointTranslator).Add(0xc000123400, 0xc0004a2000)\n\t/linkerd-build/controller/api/destination/endpoint_translator.go:123 +0x1a4\n\n" => [
        Records(1), Prod(GoPanic), Lines(7),
        Cont(Some("[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]\n\ngoroutine 214 [running]:\ngithub.com/linkerd/linkerd2/controller/api/destination.(*endpointTranslator).Add(0xc000123400, 0xc0004a2000)\n/linkerd-build/controller/api/destination/endpoint_translator.go:123 +0x1a4"))];
    // logrus `fatal` maps to the error level (the model has five levels).
    "M8": r#"time="2024-01-01T00:00:00Z" level=fatal msg="failed to initialize identity service: open /var/run/linkerd/identity/issuer/tls.crt: no such file or directory""# => [
        Prod(Logrus), Lvl(Some(Error)), Ts(Some("2024-01-01T00:00:00Z")),
        Msg(Some("failed to initialize identity service: open /var/run/linkerd/identity/issuer/tls.crt: no such file or directory")),
        Fields(&[])];
};

fn render_span(s: &Span<'_>) -> String {
    let mut out = s.name.to_string();
    if !s.fields.is_empty() {
        out.push('{');
        for (i, (k, v)) in s.fields.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            if k.is_empty() {
                write!(out, "{v:?}").unwrap();
            } else {
                write!(out, "{k}={v:?}").unwrap();
            }
        }
        out.push('}');
    }
    out
}

struct Ctx<'f> {
    id: &'static str,
    fails: &'f mut Vec<String>,
}

impl Ctx<'_> {
    fn eq<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, got: T, want: T) {
        if got != want {
            self.fails
                .push(format!("{}: {what}: got {got:?}, want {want:?}", self.id));
        }
    }
}

fn check_event(cx: &mut Ctx, ev: &Event<'_>, x: &X) {
    match x {
        Prod(p) => cx.eq("producer", ev.producer, *p),
        Lvl(l) => cx.eq("level", ev.level, *l),
        Up(want) => {
            let ok = match (ev.uptime, want) {
                (Some(g), Some(w)) => (g - w).abs() < 1e-9,
                (None, None) => true,
                _ => false,
            };
            if !ok {
                cx.eq("uptime", ev.uptime, *want);
            }
        }
        Ts(t) => cx.eq("timestamp", ev.timestamp.as_deref(), *t),
        Thr(t) => cx.eq("thread", ev.thread.as_deref(), *t),
        Spans(want) => {
            let got: Vec<String> = ev.spans.iter().map(render_span).collect();
            cx.eq("spans", got, want.iter().map(|s| s.to_string()).collect());
        }
        Tgt(t) => cx.eq("target", ev.target.as_deref(), *t),
        Msg(m) => cx.eq("message", ev.message.as_deref(), *m),
        Fields(want) => {
            let got: Vec<(&str, &str)> = ev
                .fields
                .iter()
                .map(|(k, v)| (k.as_ref(), v.as_ref()))
                .collect();
            cx.eq("fields", got, want.to_vec());
        }
        Pod(p) => cx.eq("wrapper.pod", ev.wrapper.pod, *p),
        Container(c) => cx.eq("wrapper.container", ev.wrapper.container, *c),
        OuterTs(t) => cx.eq("wrapper.timestamp", ev.wrapper.timestamp, *t),
        WrapKind(k) => cx.eq("wrapper.kind", ev.wrapper.kind, *k),
        Trunc(t) => cx.eq("truncated_head", ev.truncated_head, *t),
        Er(e) => cx.eq("error()", ev.error(), *e),
        Sources(s) => cx.eq("error_sources()", ev.error_sources(), s.to_vec()),
        Tls(state, reason) => {
            let t = ev.tls();
            cx.eq(
                "tls()",
                t.as_ref().map(|t| (t.state.as_ref(), t.reason)),
                Some((*state, *reason)),
            );
        }
        Client(c) => cx.eq("client_addr()", ev.client_addr(), *c),
        TargetAddr(t) => cx.eq("target_addr()", ev.target_addr(), *t),
        Dst(d) => cx.eq("dst()", ev.dst().as_deref(), *d),
        Status(s) => cx.eq("status()", ev.status(), *s),
        Sz(s) => cx.eq("sz()", ev.sz(), *s),
        Lines(n) => cx.eq("lines", ev.lines, *n),
        Cont(c) => cx.eq("continuation", ev.continuation.as_deref(), *c),
        Line(n) => cx.eq("line", ev.line, *n),
        Prose | Records(_) | Rec(..) | Unparsed | Norm(_) => {
            cx.fails
                .push(format!("{}: {x:?} is not an event check", cx.id));
        }
    }
}

fn check_record(cx: &mut Ctx, rec: &Record<'_>, xs: &[X]) {
    for x in xs {
        match (x, rec) {
            (Unparsed, Record::Unparsed { .. }) => {}
            (Line(n), r) => cx.eq("record line", r.line(), *n),
            (Lines(n), r) => cx.eq("record lines", r.lines(), *n),
            (_, Record::Event(ev)) if !matches!(x, Unparsed) => check_event(cx, ev, x),
            (_, r) => cx.fails.push(format!("{}: {x:?} on {r:?}", cx.id)),
        }
    }
}

fn run_row(row: &Row, fails: &mut Vec<String>) {
    let mut cx = Ctx { id: row.id, fails };
    let arena = Arena::new();
    let lines: Vec<&str> = lpa::input::lines(row.input.as_bytes())
        .map(|raw| normalize(raw, &arena))
        .collect();
    // The tokenizer, fed exactly as `pipeline::process_block` feeds it.
    let mut recs: Vec<Record<'_>> = Vec::new();
    let mut tok = Tokenizer::new(&arena);
    for (i, l) in lines.iter().enumerate() {
        tok.push(i as u64 + 1, l, &mut |r| recs.push(r.clone()));
    }
    tok.flush(&mut |r| recs.push(r.clone()));

    // Every row's records cover its lines once, in order.
    let mut next = 1;
    for r in &recs {
        cx.eq("record starts where the previous ended", r.line(), next);
        next = r.line() + u64::from(r.lines());
    }
    cx.eq("lines covered", next - 1, lines.len() as u64);

    let single = lines.len() == 1;
    let direct = if single { parse_line(lines[0]) } else { None };
    if single {
        // `parse_line` and the tokenizer agree on a lone line.
        let tok_is_event = matches!(recs.as_slice(), [Record::Event(_)]);
        cx.eq(
            "tokenizer record is an event",
            tok_is_event,
            direct.is_some(),
        );
    }
    let first: Option<&Event<'_>> = if single {
        direct.as_ref()
    } else {
        match recs.first() {
            Some(Record::Event(e)) => Some(e),
            _ => None,
        }
    };
    let prose = row.expect.iter().any(|x| matches!(x, Prose));
    for x in row.expect {
        match x {
            Prose => {
                if let Some(ev) = &direct {
                    cx.fails.push(format!(
                        "{}: expected prose (None), parsed as {} {:?}",
                        row.id,
                        ev.producer.as_str(),
                        ev
                    ));
                }
                if !matches!(recs.as_slice(), [Record::Unparsed { .. }]) {
                    cx.fails
                        .push(format!("{}: prose must be one Unparsed record", row.id));
                }
            }
            Norm(n) => cx.eq("normalized", lines[0], *n),
            Records(n) => cx.eq("records", recs.len(), *n),
            Rec(i, xs) => match recs.get(*i) {
                Some(r) => check_record(&mut cx, r, xs),
                None => cx.fails.push(format!("{}: no record #{i}", row.id)),
            },
            _ if prose => {}
            _ => match first {
                Some(ev) => {
                    if single {
                        // Line numbers and line counts come from the tokenizer.
                        if let (Lines(_) | Cont(_), [Record::Event(t)]) = (x, recs.as_slice()) {
                            check_event(&mut cx, t, x);
                            continue;
                        }
                    }
                    check_event(&mut cx, ev, x)
                }
                None => {
                    cx.fails
                        .push(format!("{}: not parsed, cannot check {x:?}", row.id));
                }
            },
        }
    }
}

#[test]
fn every_reference_line_parses_as_documented() {
    let mut fails = Vec::new();
    for row in ROWS {
        run_row(row, &mut fails);
    }
    // Row ids are unique.
    let mut ids: Vec<&str> = ROWS.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), ROWS.len(), "duplicate row id");
    assert!(
        fails.is_empty(),
        "{} mismatches in {} rows:\n{}",
        fails.len(),
        ROWS.len(),
        fails.join("\n")
    );
}

/// Every line id of section 6 appears in the table (alone or inside a
/// multi-line row).
#[test]
fn table_covers_every_reference_line() {
    let mut want: Vec<String> = Vec::new();
    want.extend((1..=46).map(|i| format!("P{i}")));
    want.extend((1..=7).map(|i| format!("J{i}")));
    want.extend((1..=5).map(|i| format!("A{i}")));
    want.extend((1..=15).map(|i| format!("W{i}")));
    want.extend((1..=18).map(|i| format!("C{i}")));
    want.extend((1..=8).map(|i| format!("M{i}")));
    want.extend(
        ["P40b", "M3b", "M5b", "M7b", "M7c", "M7d", "M7e"]
            .iter()
            .map(|s| s.to_string()),
    );
    let covered = |id: &str| {
        ROWS.iter().any(|r| {
            r.id == id
                || r.id.split('+').any(|p| p == id)
                || (r.id == "M7..M7e" && id.starts_with("M7"))
        })
    };
    let missing: Vec<&String> = want.iter().filter(|id| !covered(id)).collect();
    assert!(missing.is_empty(), "lines without a row: {missing:?}");
}
