//! The `supervisor` binary: the CLI edge only. Parse, load, hand to the actors, map to an exit code.

fn main() -> std::process::ExitCode {
    eprintln!("supervisor: not yet wired");
    std::process::ExitCode::from(2)
}
