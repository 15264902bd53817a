//! Tables for a terminal: as wide as the terminal at most. Columns wrap
//! their cells to fit; when even that cannot fit (many columns, a narrow
//! terminal), each row is shown as `header  value` lines instead, the way
//! `psql \x` does.

use super::style::Style;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, ContentArrangement, Table};

/// A table to be laid out in `width` columns.
pub fn table(width: usize, header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    t.set_header(header.iter().map(Cell::new));
    t
}

/// `label value`, the value wrapped in `width` columns under itself.
pub fn field(label: &str, value: &str, width: usize) -> String {
    let indent = label.chars().count().max(10) + 1;
    let mut o = String::new();
    for (i, l) in words(value, width.saturating_sub(indent))
        .iter()
        .enumerate()
    {
        let label = if i == 0 { label } else { "" };
        o.push_str(format!("{label:<indent$}{l}").trim_end());
        o.push('\n');
    }
    o
}

/// A table's heading, bold, after a blank line, wrapped in `width`.
pub fn heading(st: &Style, text: &str, width: usize) -> String {
    let mut o = String::from("\n");
    for l in words(text, width) {
        o.push_str(&st.bold(&l));
        o.push('\n');
    }
    o
}

/// A count, right-aligned.
pub fn num(n: u64) -> Cell {
    Cell::new(n).set_alignment(CellAlignment::Right)
}

/// The table in its width: as a grid when it fits with its words whole,
/// else row by row.
pub fn fit(t: &Table) -> String {
    let width = usize::from(t.width().unwrap_or(80));
    let grid = t.to_string();
    let fits = grid.lines().all(|l| l.chars().count() <= width);
    if fits && intact(t, &grid, width / 2) {
        return grid;
    }
    vertical(t, width)
}

/// Does the grid show every word of up to `max` characters on one line?
/// Columns squeezed so far that `destination` or an address breaks in
/// pieces read worse than rows.
fn intact(t: &Table, grid: &str, max: usize) -> bool {
    let header = t.header().into_iter().flat_map(|h| h.cell_iter());
    let cells = t.row_iter().flat_map(|r| r.cell_iter());
    header.chain(cells).all(|c| {
        c.content()
            .split_whitespace()
            .all(|w| w.chars().count() > max || grid.contains(w))
    })
}

fn vertical(t: &Table, width: usize) -> String {
    let header: Vec<String> = t
        .header()
        .map(|h| h.cell_iter().map(Cell::content).collect())
        .unwrap_or_default();
    let key = header.iter().map(|h| h.chars().count()).max().unwrap_or(0);
    // A value beside its header when that leaves it room; else below it.
    let beside = key + 2 <= width / 2;
    let mut o = String::new();
    for (i, row) in t.row_iter().enumerate() {
        if i > 0 {
            o.push_str(&"─".repeat(width.min(key + 20)));
            o.push('\n');
        }
        for (h, cell) in header.iter().zip(row.cell_iter()) {
            let value = cell
                .content()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if beside {
                let lines = words(&value, width - key - 2);
                for (j, l) in lines.iter().enumerate() {
                    let label = if j == 0 { h.as_str() } else { "" };
                    o.push_str(format!("{label:<key$}  {l}").trim_end());
                    o.push('\n');
                }
            } else {
                o.push_str(h);
                o.push('\n');
                for l in words(&value, width - 2) {
                    o.push_str(&format!("  {l}\n"));
                }
            }
        }
    }
    o.trim_end_matches('\n').to_string()
}

/// Words in lines of at most `width` characters; a longer word is cut.
pub fn words(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = vec![String::new()];
    for w in s.split_whitespace() {
        let mut w: Vec<char> = w.chars().collect();
        let line = out.last_mut().expect("one line at least");
        let len = line.chars().count();
        if len > 0 && len + 1 + w.len() <= width {
            line.push(' ');
            line.extend(w);
            continue;
        }
        if len > 0 {
            out.push(String::new());
        }
        while w.len() > width {
            let rest = w.split_off(width);
            *out.last_mut().expect("a line") = w.into_iter().collect();
            out.push(String::new());
            w = rest;
        }
        *out.last_mut().expect("a line") = w.into_iter().collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(width: usize) -> Table {
        let mut t = table(
            width,
            &["destination", "events", "connect errors", "statuses"],
        );
        t.add_row(vec![
            Cell::new("orders-api.shop.svc.cluster.local:8080"),
            num(12),
            Cell::new("timeout 7, refused 2"),
            Cell::new("503 4, 504 1"),
        ]);
        t.add_row(vec![
            Cell::new("web.shop.svc.cluster.local:80"),
            num(3),
            Cell::new(""),
            Cell::new(""),
        ]);
        t
    }

    #[test]
    fn every_line_fits_from_wide_to_narrow() {
        for width in [200, 80, 60, 40, 30, 20] {
            let s = fit(&sample(width));
            for l in s.lines() {
                assert!(l.chars().count() <= width, "{width}: {l:?}\n{s}");
            }
            for v in ["orders-api", "timeout", "503"] {
                assert!(s.contains(v), "{width}: {v}\n{s}");
            }
        }
    }

    #[test]
    fn a_wide_terminal_gets_a_grid_and_a_narrow_one_rows() {
        assert!(fit(&sample(120)).starts_with('┌'));
        // 60 columns could hold a grid only by cutting the destination.
        let narrow = fit(&sample(60));
        assert!(narrow.starts_with("destination"), "{narrow}");
        assert!(narrow.contains("events"), "{narrow}");
    }

    #[test]
    fn fields_wrap_under_their_value() {
        assert_eq!(
            field("levels:", "debug 38, info 6", 80),
            "levels:    debug 38, info 6\n"
        );
        assert_eq!(
            field("endpoints:", "10.42.7.15:8080 7, 10.42.7.16:8080 6", 30),
            "endpoints: 10.42.7.15:8080 7,\n           10.42.7.16:8080 6\n"
        );
    }

    #[test]
    fn long_words_are_cut_to_the_width() {
        assert_eq!(words("abcdefgh ij", 3), ["abc", "def", "gh", "ij"]);
        assert_eq!(words("ab cd ef", 5), ["ab cd", "ef"]);
        assert_eq!(words("", 5), [""]);
    }
}
