//! Prints the built-in rules' literals, one per line, for `rg -F -f` in
//! benches/compare.sh: the literal search a grep over the same vocabulary
//! would do.

fn main() {
    let kb = lpa::rules::load::built_in().unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
    let mut seen = std::collections::BTreeSet::new();
    for r in &kb.rules {
        seen.extend(r.text.iter().cloned());
    }
    for t in seen {
        println!("{t}");
    }
}
