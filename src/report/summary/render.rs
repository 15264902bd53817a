//! The summary for a terminal (tables that fit its width) and as Markdown.

use super::doc::folded_note;
use super::{cut_note, Summary};
use crate::report::metrics_summary;
use crate::report::style::Style;
use crate::report::table::{field, fit, heading, num, table};
use comfy_table::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Every `per` columns summed into one.
fn coarser(v: &[u64], per: usize) -> Vec<u64> {
    v.chunks(per.max(1)).map(|c| c.iter().sum()).collect()
}

fn sparkline(v: &[u64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = v.iter().copied().max().unwrap_or(0).max(1);
    v.iter()
        .map(|&x| {
            if x == 0 {
                ' '
            } else {
                BARS[((x * 7) / max) as usize]
            }
        })
        .collect()
}

/// `a 3, b 1`, in the order given.
fn pairs(v: &[(String, u64)]) -> String {
    v.iter()
        .map(|(k, c)| format!("{k} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn join_counts<K: std::fmt::Display>(m: &BTreeMap<K, u64>, n: usize) -> String {
    let mut v: Vec<(&K, &u64)> = m.iter().collect();
    v.sort_by_key(|(_, c)| std::cmp::Reverse(**c));
    v.iter()
        .take(n)
        .map(|(k, c)| format!("{k} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary in tables of at most `width` columns.
pub fn human(s: &Summary, n: usize, st: &Style, width: usize) -> String {
    let d = s.doc(n);
    let mut o = String::new();
    let ov = &d.overview;
    let _ = writeln!(o, "{}", st.bold("Overview"));
    let mut t = table(
        width,
        &["source", "lines", "events", "unparsed", "warn", "error"],
    );
    for (name, x) in ov.sources {
        t.add_row(vec![
            Cell::new(name),
            num(x.lines),
            num(x.events),
            num(x.unparsed),
            num(x.warnings),
            num(x.errors),
        ]);
    }
    if ov.sources.len() > 1 {
        let w: u64 = ov.sources.values().map(|x| x.warnings).sum();
        let e: u64 = ov.sources.values().map(|x| x.errors).sum();
        t.add_row(vec![
            Cell::new("(all)"),
            num(ov.lines),
            num(ov.events),
            num(ov.unparsed),
            num(w),
            num(e),
        ]);
    }
    let _ = writeln!(o, "{}", fit(&t));
    if ov.cut_lines > 0 {
        o.push_str(&field("cut:", &cut_note(ov.cut_lines), width));
    }
    if !ov.folded.is_empty() {
        let note = format!("{} — {}", join_counts(&ov.folded, 20), folded_note());
        o.push_str(&field("folded:", &note, width));
    }
    o.push_str(&field("producers:", &join_counts(ov.producers, 12), width));
    o.push_str(&field("levels:", &join_counts(ov.levels, 5), width));
    if let Some(e) = ov.era {
        o.push_str(&field("format:", &format!("Linkerd {e}"), width));
    }
    if !ov.pods.is_empty() {
        o.push_str(&field("pods:", &join_counts(ov.pods, 8), width));
    }
    if !ov.containers.is_empty() {
        o.push_str(&field("containers:", &join_counts(ov.containers, 8), width));
    }
    if let Some((a, b)) = ov.uptime {
        o.push_str(&field("uptime:", &format!("{a:.3}s → {b:.3}s"), width));
    }
    if let Some((a, b)) = &ov.wall_clock {
        o.push_str(&field("time:", &format!("{a} → {b}"), width));
    }
    if !d.error_kinds.is_empty() {
        o.push_str(&heading(st, "Error kinds", width));
        let mut t = table(
            width,
            &[
                "count",
                "level",
                "message (addresses, numbers masked)",
                "first",
                "last",
            ],
        );
        for r in &d.error_kinds {
            t.add_row(vec![
                num(r.kind.count),
                Cell::new(r.kind.level.map_or("-", |l| l.as_str())),
                Cell::new(r.template),
                num(r.kind.first_line),
                num(r.kind.last_line),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    if !d.destinations.is_empty() {
        o.push_str(&heading(st, "Destinations", width));
        let mut t = table(
            width,
            &[
                "destination",
                "events",
                "failed",
                "fail-fast",
                "connect errors",
                "failing endpoints",
                "statuses",
            ],
        );
        for r in &d.destinations {
            t.add_row(vec![
                Cell::new(r.dst),
                num(r.dest.events),
                num(r.dest.requests_failed),
                num(r.dest.failfast),
                Cell::new(join_counts(&r.dest.connect_errors, 5)),
                Cell::new(join_counts(&r.dest.endpoints, 6)),
                Cell::new(join_counts(&r.dest.statuses, 5)),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    if !d.client_subnets.is_empty() {
        o.push_str(&heading(st, "Clients by subnet", width));
        let mut t = table(
            width,
            &["subnet", "IPs", "events", "errors", "closed with error"],
        );
        for r in &d.client_subnets {
            t.add_row(vec![
                Cell::new(&r.subnet),
                num(r.ips),
                num(r.events),
                num(r.errors),
                num(r.closes_with_error),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
        let mut t = table(
            width,
            &["client IP", "events", "errors", "closed with error"],
        );
        for r in &d.clients {
            t.add_row(vec![
                Cell::new(r.ip),
                num(r.peer.events),
                num(r.peer.errors),
                num(r.peer.closes_with_error),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    if !d.endpoints.is_empty() {
        o.push_str(&field("endpoints:", &pairs(&d.endpoints), width));
    }
    if !d.tls.is_empty() {
        o.push_str(&heading(st, "TLS at accept, by port", width));
        let mut t = table(width, &["port", "states"]);
        for (port, states) in d.tls {
            t.add_row(vec![Cell::new(port), Cell::new(join_counts(states, 8))]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    if !d.identities.is_empty() {
        o.push_str(&field("identities:", &pairs(&d.identities), width));
    }
    if !d.http_statuses.is_empty() {
        o.push_str(&field(
            "HTTP statuses:",
            &join_counts(d.http_statuses, 12),
            width,
        ));
    }
    let tl = &d.timeline;
    if tl.events.len() > 1 {
        // Two bars' frame and their 10-column labels take 12 columns.
        let per = tl.events.len().div_ceil(width.saturating_sub(12).max(1));
        let scale = format!(
            "({} clock, {}s per column)",
            tl.clock,
            tl.bucket_seconds.saturating_mul(per as i64)
        );
        let sep = if 10 + scale.chars().count() > width {
            "\n"
        } else {
            " "
        };
        let _ = writeln!(o, "\n{}{sep}{scale}", st.bold("Over time"));
        let _ = writeln!(o, "  events  |{}|", sparkline(&coarser(&tl.events, per)));
        let _ = writeln!(
            o,
            "  warn+err|{}|",
            st.red(&sparkline(&coarser(&tl.warnings_and_errors, per)))
        );
    }
    if let Some(m) = &d.metrics {
        metrics_summary::human(&mut o, m, st, width);
    }
    if !d.unknown.is_empty() {
        o.push_str(&heading(
            st,
            "Lines no rule knows (warnings, errors and unparsed text)",
            width,
        ));
        let mut t = table(width, &["count", "template", "first", "source"]);
        for r in &d.unknown {
            t.add_row(vec![
                num(r.kind.count),
                Cell::new(r.template),
                num(r.kind.first_line),
                Cell::new(&r.kind.source),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    o
}

pub fn markdown(s: &Summary, n: usize) -> String {
    let d = s.doc(n);
    let mut o = String::new();
    let ov = &d.overview;
    let _ = writeln!(o, "## Log summary\n\n| source | lines | events | unparsed | warn | error |\n|---|---:|---:|---:|---:|---:|");
    for (name, x) in ov.sources {
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | {} | {} |",
            x.lines, x.events, x.unparsed, x.warnings, x.errors
        );
    }
    let _ = writeln!(
        o,
        "\nProducers: {}. Levels: {}.",
        join_counts(ov.producers, 12),
        join_counts(ov.levels, 5)
    );
    if let Some(e) = ov.era {
        let _ = writeln!(o, "Log format of Linkerd {e}.");
    }
    if ov.cut_lines > 0 {
        let _ = writeln!(o, "\n{}.", cut_note(ov.cut_lines));
    }
    if !ov.folded.is_empty() {
        let _ = writeln!(
            o,
            "\nFolded: {} — {}.",
            join_counts(&ov.folded, 20),
            folded_note()
        );
    }
    if !d.error_kinds.is_empty() {
        let _ = writeln!(
            o,
            "\n### Error kinds\n\n| count | message | first line |\n|---:|---|---:|"
        );
        for r in &d.error_kinds {
            let _ = writeln!(
                o,
                "| {} | `{}` | {} |",
                r.kind.count,
                r.template.replace('|', "\\|"),
                r.kind.first_line
            );
        }
    }
    if !d.destinations.is_empty() {
        let _ = writeln!(o, "\n### Destinations\n\n| destination | failed | fail-fast | connect errors | failing endpoints |\n|---|---:|---:|---|---|");
        for r in &d.destinations {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                r.dst,
                r.dest.requests_failed,
                r.dest.failfast,
                join_counts(&r.dest.connect_errors, 5),
                join_counts(&r.dest.endpoints, 6)
            );
        }
    }
    if !d.client_subnets.is_empty() {
        let _ = writeln!(o, "\n### Clients by subnet\n\n| subnet | IPs | events | closed with error |\n|---|---:|---:|---:|");
        for r in &d.client_subnets {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                r.subnet, r.ips, r.events, r.closes_with_error
            );
        }
    }
    if !d.tls.is_empty() {
        let _ = writeln!(o, "\n### TLS at accept\n\n| port | states |\n|---|---|");
        for (p, states) in d.tls {
            let _ = writeln!(o, "| {p} | {} |", join_counts(states, 8));
        }
    }
    if let Some(m) = &d.metrics {
        metrics_summary::markdown(&mut o, m);
    }
    o
}
