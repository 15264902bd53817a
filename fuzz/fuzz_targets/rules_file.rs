//! Arbitrary bytes (lossy UTF-8) as a user rules file. A file that passes
//! validation is compiled into an `Engine` and run over a small fixed log:
//! valid-but-weird rules (regex captures, empty texts, tags, placeholders)
//! must not panic the engine or the report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lpa::pipeline::process_block;
use lpa::rules::engine::Engine;

/// A few lines of several producers, with connections, tags, captures.
const SAMPLE: &[u8] = br#"[ 86401.002187s] DEBUG ThreadId(01) inbound:accept{client.addr=192.168.10.21:31872}: linkerd_tls::server: Peeked bytes from TCP stream sz=0
[ 86401.002258s] DEBUG ThreadId(01) inbound:accept{client.addr=192.168.10.21:31872}: linkerd_app_inbound::require_identity: port=4143 tls=None(NoClientHello) id_required=true
[ 86401.002320s]  INFO ThreadId(01) inbound:accept{client.addr=192.168.10.21:31872}: linkerd_app_core::serve: Connection closed error=identity required
[ 86401.419118s] DEBUG ThreadId(01) inbound:accept{client.addr=172.16.30.12:50344}:server{port=4143}:direct:gateway{target=web.shop.svc.cluster.local:80 v=h2}: linkerd_proxy_api_resolve::resolve: Resolving dst=web.shop.svc.cluster.local:80 context={"ns":"linkerd-multicluster", "nodeName":"west-pool-a-3"}
[    10.105329s]  WARN ThreadId(01) outbound:proxy{addr=10.0.3.7:8080}:service{ns=shop name=orders-api port=8080}:endpoint{addr=10.42.1.17:8080}: linkerd_reconnect: Failed to connect error=connect timed out after 1s
[    12.000001s]  WARN ThreadId(02) outbound:proxy{addr=10.0.3.7:8080}: linkerd_app_core::errors::respond: request failed error=logical service orders-api.shop.svc.cluster.local:8080: service unavailable error.sources=[service unavailable]
{"timestamp":"[    13.120000s]","level":"WARN","fields":{"message":"Failed to connect","error":"Connection refused (os error 111)"},"target":"linkerd_reconnect","spans":[{"name":"outbound"},{"addr":"10.1.2.3:9090","name":"endpoint"}],"threadId":"ThreadId(1)"}
time="2024-05-01T10:00:00Z" level=error msg="failed to fetch certificate" addr=":8086" component=identity
hello from the application
thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value', src/main.rs:10:5
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
[     0.003000s]  INFO ThreadId(01) linkerd2_proxy: release 2.210.4 (abc123) by linkerd on 2023-10-02T12:00:00Z
"#;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(kb) = lpa::rules::parse_rules("fuzz.toml", &text) else {
        return;
    };
    let engine = Engine::new(kb);
    let state = process_block("fuzz", SAMPLE, 1, engine.state());
    let report = state.finish(None);
    let lay = lpa::report::human::Layout { width: 80, verbose: true };
    let _ = lpa::report::human::human(&report, &lpa::report::style::Style { color: false }, &lay);
    let _ = lpa::report::explain::markdown(&report);
});
