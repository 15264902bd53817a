// jemalloc, the default feature `jemalloc` (why: Cargo.toml). Here, not in the
// library, whose benchmark counts allocations with an allocator of its own.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: one arena for every thread, not
/// four a core. The workers' small allocations are served from each
/// thread's cache either way (the same time in interleaved runs), and one
/// arena's freed pages are reused by every thread: 3-5 MiB less peak RSS
/// (the mixed 4 GiB log: 62 -> 58 MiB under a 64 MiB bound).
#[cfg(feature = "jemalloc")]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: Option<&std::ffi::c_char> =
    // SAFETY: the first byte of a C string literal, which lives for ever.
    Some(unsafe { &*c"narenas:1".as_ptr() });

fn main() {
    std::process::exit(lpa::cli::main());
}
