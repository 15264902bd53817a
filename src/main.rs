fn main() {
    std::process::exit(lpa::cli::main());
}
