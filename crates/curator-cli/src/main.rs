//! The `curator` command; everything lives in the `curator_cli` library.

fn main() -> std::process::ExitCode {
    curator_cli::main()
}
