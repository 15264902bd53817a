//! Results do not depend on where the input is cut into blocks: every
//! corpus scenario gives the same report read whole and read in blocks of a
//! few hundred bytes, where most connections start in one block and fail in
//! another (their tags and destinations must carry across); nor on
//! whether a file is read in place or through buffers.

mod common;

use lpa::input::Source;
use lpa::pipeline::Options;
use lpa::rules::{self, engine::Engine};
use std::path::PathBuf;

fn report_of(name: &str, data: &[u8], block_size: usize, engine: &Engine) -> String {
    let mut sources = vec![Source::from_reader(
        name,
        std::io::Cursor::new(data.to_vec()),
    )];
    let opts = Options {
        block_size,
        threads: 2,
        progress: false,
        ..Options::blocks_of(block_size)
    };
    let r = lpa::cli::analyze(&mut sources, &opts, engine).unwrap();
    serde_json::to_string_pretty(&r).unwrap()
}

/// The report of the file at `path`, read in place ([`Options::in_place`]).
fn report_in_place(path: &PathBuf, block_size: usize, engine: &Engine) -> String {
    let mut sources = lpa::input::open_all(std::slice::from_ref(path)).unwrap();
    let opts = Options {
        threads: 2,
        progress: false,
        ..Options::blocks_of(block_size)
    };
    assert!(opts.in_place);
    let r = lpa::cli::analyze(&mut sources, &opts, engine).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    serde_json::to_string_pretty(&r)
        .unwrap()
        .replace(&*path.to_string_lossy(), &name)
}

fn report(path: &PathBuf, block_size: usize, engine: &Engine) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    report_of(&name, &std::fs::read(path).unwrap(), block_size, engine)
}

fn engine() -> Engine {
    Engine::new(rules::load(&[]).unwrap())
}

/// An error line that names only its client connection takes the
/// destination and endpoint from the connection's earlier line, also when
/// that line is in an earlier block, and in any format: a JSON line's spans
/// are spelt unlike the plain format's, and must not be skipped by the
/// plain spellings.
#[test]
fn a_connection_keeps_its_destination_across_blocks() {
    let plain = "[     1.000000s] DEBUG ThreadId(01) outbound:accept{client.addr=10.0.0.9:40000}:proxy{addr=10.96.0.10:80}:logical{dst=web.default.svc.cluster.local:80}:concrete{addr=web.default.svc.cluster.local:80}:endpoint{addr=10.1.2.3:8080}: linkerd_proxy_transport::connect: Connecting";
    let json = r#"{"timestamp":"[     1.000000s]","level":"DEBUG","fields":{"message":"Connecting"},"target":"linkerd_proxy_transport::connect","spans":[{"name":"outbound"},{"client.addr":"10.0.0.9:40000","name":"accept"},{"dst":"web.default.svc.cluster.local:80","name":"logical"},{"addr":"10.1.2.3:8080","name":"endpoint"}],"threadId":"ThreadId(1)"}"#;
    let engine = engine();
    for first in [plain, json] {
        let mut log = format!("{first}\n");
        for i in 0..40 {
            log += &format!(
                "[     1.{i:06}s]  INFO ThreadId(01) linkerd2_proxy::rt: filler line {i}\n"
            );
            log += &format!("[     1.{i:06}s] DEBUG ThreadId(01) inbound:accept{{client.addr=10.0.0.7:{i} target.addr=10.0.0.1:4143}}: linkerd_app_core::serve: Connection closed\n");
        }
        log += "[     2.000000s]  WARN ThreadId(01) outbound:accept{client.addr=10.0.0.9:40000}: linkerd_app_core::errors::respond: Failed to proxy request: error trying to connect: Connection refused (os error 111)\n";
        let whole = report_of("ctx.log", log.as_bytes(), 1 << 30, &engine);
        assert!(
            whole.contains("\"web.default.svc.cluster.local:80\""),
            "{whole}"
        );
        assert!(whole.contains("\"10.1.2.3:8080\""), "{whole}");
        for size in [200, 1000] {
            assert_eq!(
                report_of("ctx.log", log.as_bytes(), size, &engine),
                whole,
                "blocks of {size}"
            );
        }
    }
}

/// Metrics snapshots (with and beside logs) are assembled the same way
/// whatever the cut: a block's samples before any `# POD` header continue
/// the snapshot the block before left open.
#[test]
fn metrics_reports_do_not_depend_on_block_boundaries() {
    let engine = &engine();
    let files = common::files("corpus/metrics", "prom");
    assert!(files.len() > 10);
    for f in &files {
        // The snapshot after its log, as one stream.
        let log = f.with_extension("log");
        let mut data = std::fs::read(&log).unwrap_or_default();
        data.extend(std::fs::read(f).unwrap());
        let whole = report_of("m", &data, 1 << 30, engine);
        for size in [300, 2000] {
            assert_eq!(
                report_of("m", &data, size, engine),
                whole,
                "{} in blocks of {size}",
                f.display()
            );
        }
    }
}

#[test]
fn reports_do_not_depend_on_block_boundaries() {
    let engine = &engine();
    let logs = common::files("corpus/scenarios", "log");
    assert!(logs.len() > 20);
    let mut differ = Vec::new();
    for log in &logs {
        let whole = report(log, 1 << 30, engine);
        for size in [300, 2000] {
            if report(log, size, engine) != whole {
                differ.push(format!("{} (blocks of {size} bytes)", log.display()));
            }
            if report_in_place(log, size, engine) != whole {
                differ.push(format!(
                    "{} (read in place, blocks of {size})",
                    log.display()
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "reports differ from the whole-input report: {differ:#?}"
    );
}

/// Renders nothing, and panics on the record it is told to.
struct PanicsAt(u64, u64, lpa::pipeline::Chunks);

impl lpa::pipeline::Accumulator for PanicsAt {
    fn record(&mut self, _source: &str, _rec: &lpa::parse::Record<'_>) {
        self.0 += 1;
        assert_ne!(self.0, self.1, "told to panic");
    }
}

impl lpa::pipeline::Render for PanicsAt {
    fn output(&mut self) -> &mut lpa::pipeline::Chunks {
        &mut self.2
    }
}

/// A worker that panics while rendering its block ends the run with the
/// panic, on one thread or several, instead of the writer waiting for ever
/// for the blocks after it.
#[test]
fn a_panicking_renderer_ends_the_stream() {
    let data = "INFO x\n".repeat(4000);
    for threads in [1, 2] {
        let (done_tx, done) = std::sync::mpsc::channel();
        let data = data.clone();
        std::thread::spawn(move || {
            let mut sources = vec![Source::from_reader("t", std::io::Cursor::new(data))];
            let opts = Options {
                threads,
                ..Options::blocks_of(1 << 10)
            };
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                lpa::pipeline::stream(&mut sources, &opts, |c| PanicsAt(0, 3, c), |_| Ok(()))
            }));
            let _ = done_tx.send(run.is_err());
        });
        let panicked = done.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(panicked, Ok(true), "{threads} threads");
    }
}
