//! The `tessera` binary: see `cli` for its commands.

fn main() -> std::process::ExitCode {
    tessera_host::cli::main()
}
