//! `lpa triage`: a support ticket or GitHub issue (prose with logs inside)
//! → findings and a draft reply. Evidence is taken from anywhere in the post
//! ([`extract`]) and read by the same tokenizer and rules as `explain`;
//! `linkerd check` results and tool output are evidence too, and what the
//! reporter says in their own words is weak evidence, ranked last. The
//! prose is read for context ([`context`]); [`reply`] writes the answer.

pub mod context;
pub mod extract;
mod reply;

pub use context::Context;
pub use reply::markdown;

use crate::input::wrap::{normalize, unwrap};
use crate::parse::{parse_line, Era, Event, Foreign, Producer, Record, Tokenizer};
use crate::pipeline::Accumulator;
use crate::report::explain::{Report, DEBUG_ANNOTATION};
use crate::rules::engine::Engine;
use crate::rules::unmatched::error_worded;
use extract::{Block, Kind, Piece};
use serde::Serialize;
use std::borrow::Cow;
use typed_arena::Arena;

#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    pub id: &'static str,
    pub why: String,
    /// What to run to get it, in order (none when it is not a command).
    pub how: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Triage {
    #[serde(flatten)]
    pub report: Report,
    pub context: Context,
    pub missing: Vec<Missing>,
    pub questions: Vec<String>,
}

/// A reporter's sentence as an event that only prose rules read.
fn prose_event(line: u64, sentence: &str) -> Event<'_> {
    let mut ev = Event::new(Producer::Prose, Cow::Borrowed(sentence));
    ev.line = line;
    ev.message = Some(Cow::Borrowed(sentence));
    ev.component = crate::parse::Component::Reporter;
    ev
}

/// Prose lines after an announcement within which its logs may still come.
const ANNOUNCED_WITHIN: u32 = 2;

/// Reads the ticket, runs the engine over what it holds.
pub fn triage(name: &str, text: &[u8], engine: &Engine) -> Triage {
    let arena: Arena<String> = Arena::new();
    let lines: Vec<&str> = crate::input::lines(text)
        .map(|raw| normalize(raw, &arena))
        .collect();
    let pieces = extract::pieces(&lines);
    let mut st = engine.whole_state();
    let mut ctx = Context::default();
    let mut tok = Tokenizer::new(&arena);
    let mut prose = String::new();
    let mut source = name.to_string();
    // An announcement of logs, and the prose lines written since: a post
    // often says a word more ("`linkerd check`:") before its block.
    let mut waiting: Option<(&Piece<'_>, u32)> = None;
    let mut blocks_seen: Option<u64> = None;
    for p in &pieces {
        let src = p
            .label
            .map_or(name.to_string(), |l| format!("{name} ({l})"));
        if src != source {
            tok.flush(&mut |r: &mut Record<'_>| st.record(&source, r));
            source = src;
        }
        match p.kind {
            Kind::Line(block) => {
                waiting = None;
                count(&mut ctx, block, p, &mut blocks_seen);
                if p.continued {
                    tok.continued();
                }
                tok.push(p.line, p.text, &mut |r: &mut Record<'_>| {
                    if let Record::Unparsed { looks_like, .. } = r {
                        // Only a manifest's status fields and events are
                        // evidence; its other lines are not a log.
                        if matches!(block, Block::Kube | Block::Manifest) {
                            *looks_like = Some(Foreign::Manifest);
                        }
                    }
                    st.record(&source, r)
                });
            }
            Kind::Span => {
                tok.flush(&mut |r: &mut Record<'_>| st.record(&source, r));
                if parse_line(p.text).is_some() {
                    ctx.log_lines += 1;
                    tok.push(p.line, p.text, &mut |r: &mut Record<'_>| {
                        st.record(&source, r)
                    });
                    tok.flush(&mut |r: &mut Record<'_>| st.record(&source, r));
                } else if engine.knows(p.text) || error_worded(p.text) {
                    // Words the reporter attributes to their application
                    // are the application's output, not Linkerd's.
                    let looks_like = context::app_says(lines[p.line as usize - 1])
                        .then_some(Foreign::AppContainer);
                    st.record(
                        &source,
                        &Record::Unparsed {
                            line: p.line,
                            text: Cow::Borrowed(p.text),
                            looks_like,
                        },
                    );
                }
            }
            Kind::Prose => {
                tok.flush(&mut |r: &mut Record<'_>| st.record(&source, r));
                let inner = unwrap(p.text).rest;
                waiting = match waiting {
                    Some((w, n)) if n >= ANNOUNCED_WITHIN => {
                        missing_logs(&mut ctx, w);
                        None
                    }
                    Some((w, n)) => Some((w, n + 1)),
                    None => None,
                };
                ctx.prose_lines += 1;
                prose.push_str(inner);
                prose.push('\n');
                for s in context::sentences(inner) {
                    st.record(&source, &Record::Event(prose_event(p.line, s)));
                }
                // An error message pasted as a line of its own, without
                // fence or log head, is read for its words.
                let quoted = unwrap(p.text).wrapper.kind == Some("quote");
                if engine.knows(inner) && (quoted || !extract::sentence_like(inner)) {
                    ctx.log_lines += 1;
                    st.record(
                        &source,
                        &Record::Unparsed {
                            line: p.line,
                            text: Cow::Borrowed(inner),
                            looks_like: context::app_says(inner).then_some(Foreign::AppContainer),
                        },
                    );
                }
                if Context::announces(inner) {
                    waiting = Some((p, 0));
                }
            }
        }
    }
    tok.flush(&mut |r: &mut Record<'_>| st.record(&source, r));
    if let Some((w, _)) = waiting {
        missing_logs(&mut ctx, w);
    }
    let all = String::from_utf8_lossy(text);
    ctx.read(&prose, &all);
    let stated = ctx.version.as_deref().and_then(Era::of_linkerd_version);
    let report = st.finish(stated);
    let missing = missing(&report, &ctx);
    let questions = questions(&report, &ctx, &missing);
    Triage {
        report,
        context: ctx,
        missing,
        questions,
    }
}

fn count(ctx: &mut Context, block: Block, p: &Piece<'_>, last: &mut Option<u64>) {
    if *last != Some(p.line.saturating_sub(1)) {
        ctx.code_blocks += 1;
    }
    *last = Some(p.line);
    match block {
        Block::Manifest | Block::Kube => ctx.yaml_lines += 1,
        Block::Check => ctx.check_lines += 1,
        Block::Log | Block::Curl => ctx.log_lines += 1,
    }
}

/// The post announced logs on this line and went on with prose.
fn missing_logs(ctx: &mut Context, p: &Piece<'_>) {
    let what = p.label.map_or("logs".to_string(), |l| format!("{l} logs"));
    let s = context::clip(unwrap(p.text).rest.trim(), 120);
    if !ctx.announced_missing.iter().any(|(w, _)| *w == what) {
        ctx.announced_missing.push((what, s));
    }
}

fn missing(r: &Report, ctx: &Context) -> Vec<Missing> {
    let mut m = Vec::new();
    let s = &r.stats;
    for (what, said) in &ctx.announced_missing {
        m.push(Missing {
            id: "announced-logs",
            why: format!(
                "the post says “{said}” but the {what} are not in it: paste them inside a fenced code block (three backticks before and after)"
            ),
            how: Vec::new(),
        });
    }
    // A post that says a pod is unmeshed has no proxy log to ask for,
    // unless lpa found something only the proxy's log could confirm.
    if s.proxy_events == 0 && (!ctx.unmeshed || !r.findings.is_empty()) {
        m.push(Missing {
            id: "proxy-logs",
            why: "no linkerd-proxy log lines were posted".into(),
            how: vec!["kubectl logs -n \"$NS\" \"$POD\" -c linkerd-proxy --timestamps".into()],
        });
    } else if s.proxy_events > 0 && !s.has_debug() {
        m.push(Missing {
            id: "debug-logs",
            why: "only INFO/WARN lines were posted: connect errors and TLS details are logged at DEBUG; annotate the workload, restart it, reproduce, then collect the log".into(),
            how: vec![
                format!(
                    "kubectl annotate -n \"$NS\" deploy/\"$WORKLOAD\" '{}'",
                    DEBUG_ANNOTATION.replacen(": ", "=", 1)
                ),
                "kubectl rollout restart -n \"$NS\" deploy/\"$WORKLOAD\"".into(),
                "kubectl logs -n \"$NS\" \"$POD\" -c linkerd-proxy --timestamps".into(),
            ],
        });
        m.push(Missing {
            id: "proxy-metrics",
            why: "with INFO logs only, the proxy's metrics show the connect outcomes and fail-fast counts the logs hide".into(),
            how: vec!["linkerd diagnostics proxy-metrics -n \"$NS\" po/\"$POD\"".into()],
        });
    }
    let range = s.era.range();
    if ctx.version.is_none() && (range.min.is_none() || range.min != range.max) {
        m.push(Missing {
            id: "version",
            why: "no Linkerd version is stated and the log format does not pin it down".into(),
            how: vec!["linkerd version".into()],
        });
    }
    let failing = r.findings.iter().any(|f| !f.benign);
    if failing
        && s.proxy_events > 0
        && r.findings.iter().all(|f| !f.subjects.contains_key("dst"))
        && !ctx.components.iter().any(|c| c == "client")
        && !ctx.client_silent
    {
        m.push(Missing {
            id: "client-logs",
            why: "only the server side's logs were posted; the calling pod's proxy shows where requests go and how they fail".into(),
            how: vec!["kubectl logs -n \"$CLIENT_NS\" \"$CLIENT_POD\" -c linkerd-proxy --timestamps".into()],
        });
    }
    if ctx.multicluster && failing && !ctx.components.iter().any(|c| c == "gateway") {
        m.push(Missing {
            id: "gateway-logs",
            why: "multicluster traffic fails but the gateway's own log is not included".into(),
            how: vec!["kubectl logs -n linkerd-multicluster deploy/linkerd-gateway -c linkerd-proxy --timestamps".into()],
        });
    }
    m
}

fn questions(r: &Report, ctx: &Context, missing: &[Missing]) -> Vec<String> {
    let mut q = Vec::new();
    if let Some(f) = r.findings.iter().find(|f| !f.benign) {
        let ask = match f.id.split('.').next().unwrap_or("") {
            "connect" => "Did NetworkPolicies, namespace labels, security groups or node pools change around when this started?",
            "policy" => "Which Server / AuthorizationPolicy resources select this workload, and what identity does the client run as?",
            "identity" => "When were the trust anchor and issuer certificates last rotated, and were all proxies restarted since?",
            "discovery" => "Does the destination Service have Ready pods (`kubectl get endpointslices`)?",
            "protocol" | "config" => "Which protocol does this port speak, and is it listed in `config.linkerd.io/opaque-ports` on both the workload and the Service?",
            "multicluster" => "Is the remote gateway's address reachable from this cluster, and did its load balancer or nodes change?",
            "lifecycle" => "Which Linkerd version, CNI and container runtime do the nodes run, and did the pod's securityContext change?",
            _ => "",
        };
        if !ask.is_empty() {
            q.push(ask.to_string());
        }
    }
    for m in missing {
        let what = match m.id {
            "announced-logs" => "the logs the post mentions",
            "debug-logs" => "debug-level proxy logs",
            "proxy-metrics" => "the proxy's metrics",
            "version" => "the output of `linkerd version`",
            "client-logs" => "the client pod's linkerd-proxy logs",
            "gateway-logs" => "the gateway's linkerd-proxy logs",
            _ => "the linkerd-proxy logs",
        };
        q.push(format!("Could you share {what}? ({})", m.why));
    }
    if !ctx.tried.is_empty() && q.len() < 4 {
        q.push("Did anything change in the errors after the steps you already tried?".to_string());
    }
    q
}
