// jemalloc, the default feature `jemalloc` (why: Cargo.toml). Here, not in the
// library, whose benchmark counts allocations with an allocator of its own.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    std::process::exit(lpa::cli::main());
}
