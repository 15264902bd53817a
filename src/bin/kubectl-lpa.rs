//! `kubectl lpa …`: the same program under the name kubectl looks for plugins.
fn main() {
    std::process::exit(lpa::cli::main());
}
