//! The `tessera` binary: see `cli` for its commands.

/// mimalloc instead of glibc's malloc: a profile of the intention benchmark spent about a
/// quarter of its CPU in glibc's malloc and free (SQLite page caches, JSON, HTTP buffers).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    tessera_host::cli::main()
}
