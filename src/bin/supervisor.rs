//! The `supervisor` binary: the CLI edge only. Parse (clap), load and validate (`model`), hand
//! to the runner, map to an exit code. Invalid input is exit 2 before anything runs.

use std::path::PathBuf;
use std::process::ExitCode;

use bugatti::model::layers::Layer;
use bugatti::model::load::{load_suite, Suite, CONFIG_FILE_NAME};
use bugatti::model::options::{RunOptions, Shard, Verbosity};
use clap::{Args, Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0        every root test passed (warnings allowed unless --strict-warnings)
  1        at least one root test failed (a step ERROR, protocol error or step timeout)
  2        invalid input: bad flags, config or test file, include cycle, unknown --skip-cmd,
           missing asset, --from-checkpoint of a checkpoint never saved; nothing was run
  3        harness error: a setup command, readiness check, the provider's start, a
           long-lived command or a [checkpoint] save / restore failed
  130/143  interrupted by SIGINT / SIGTERM (reports are still written)
Across several root tests the highest-ranked code wins: 130/143, then 2, then 3, then 1, then 0.";

#[derive(Parser, Debug)]
#[command(
    name = "supervisor",
    version,
    about = "Plain-English, agent-assisted verification of local applications",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run root tests, supervised: the main job.
    #[command(after_help = EXIT_CODES)]
    Start(RunArgs),
    /// The same as `start` (Bugatti's spelling).
    #[command(after_help = EXIT_CODES)]
    Test(RunArgs),
    /// Parse, expand and validate; print each root test's plan and effective config. Runs
    /// nothing, writes nothing. Exit 0, or 2 with every problem found.
    Check(RunArgs),
    /// Write a commented starter config and an example test into the current directory.
    Init,
    /// Check the config and tests, the provider's program, fixed ports and the artifact
    /// directory. Exit 0 when all is well, 1 when a check failed, 2 on invalid input.
    Doctor {
        /// Project config [default: ./bugatti.config.toml if present]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Test files, directories to discover in, or short names (`checkout` →
    /// `checkout.test.toml` under the project root). Default: the whole project root, or the
    /// `[supervisor] tests` globs.
    #[arg(value_name = "PATH")]
    paths: Vec<String>,
    /// Project config; its directory is the project root [default: ./bugatti.config.toml if present]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Root tests run at once [default: `[supervisor] max_parallel`, else 4]
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// Do not launch this harness command (its readiness is still checked). Repeatable.
    #[arg(long = "skip-cmd", value_name = "NAME")]
    skip_cmd: Vec<String>,
    /// Do not wait for this command's readiness. Repeatable.
    #[arg(long = "skip-readiness", value_name = "NAME")]
    skip_readiness: Vec<String>,
    /// Override `[provider] name` (claude-code, codex, command, shell)
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Default per-step timeout in seconds [default: 300]
    #[arg(long = "step-timeout", value_name = "SECS")]
    step_timeout: Option<u64>,
    /// Whole-invocation deadline in seconds; on expiry behaves like SIGTERM
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Re-run a failed root test up to N times; a pass after a failure is reported as flaky [default: 0]
    #[arg(long, value_name = "N")]
    retries: Option<u32>,
    /// After the first failed root test, start no new ones
    #[arg(long = "fail-fast")]
    fail_fast: bool,
    /// A WARN step fails its test
    #[arg(long = "strict-warnings")]
    strict_warnings: bool,
    /// Run only the K-th of N deterministic slices of the discovered root tests (1-based)
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Resume each root test from checkpoint NAME, saved by an earlier run: `[checkpoint] restore`
    /// runs after setup, then the steps up to and including NAME's are `skipped` (steps with
    /// `setup = true` still run). A checkpoint never saved is an error (exit 2)
    #[arg(long = "from-checkpoint", value_name = "NAME")]
    from_checkpoint: Option<String>,
    /// Run only root tests carrying one of these tags. Repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Also write the suite's JUnit XML there
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write the suite's JSON summary there
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Less console output
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// More console output
    #[arg(short, long)]
    verbose: bool,
}

impl RunArgs {
    fn into_options(self) -> RunOptions {
        RunOptions {
            config: self.config,
            paths: self.paths,
            jobs: self.jobs,
            skip_cmd: self.skip_cmd,
            skip_readiness: self.skip_readiness,
            provider: self.provider,
            step_timeout: self.step_timeout,
            timeout: self.timeout,
            retries: self.retries,
            fail_fast: self.fail_fast,
            strict_warnings: self.strict_warnings,
            shard: self.shard,
            from_checkpoint: self.from_checkpoint,
            tags: self.tags,
            junit: self.junit,
            json: self.json,
            verbosity: if self.quiet {
                Verbosity::Quiet
            } else if self.verbose {
                Verbosity::Verbose
            } else {
                Verbosity::Normal
            },
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Start(args) | Command::Test(args) => {
            let options = args.into_options();
            match load(&options) {
                Some(suite) => {
                    println!("supervisor: {}", suite.config_summary());
                    print_notes(&suite);
                    run_suite(suite, options)
                }
                None => ExitCode::from(2),
            }
        }
        Command::Check(args) => {
            restore_default_sigpipe();
            let options = args.into_options();
            match load(&options) {
                Some(suite) => {
                    if suite.config_path.is_none() {
                        eprintln!("note: {}", suite.config_summary());
                    }
                    print_notes(&suite);
                    print_check(&suite, options.verbosity);
                    ExitCode::SUCCESS
                }
                None => ExitCode::from(2),
            }
        }
        Command::Init => init(),
        Command::Doctor { config } => doctor(config),
    }
}

/// `check` only prints: like any Unix filter it should end quietly when its reader goes away
/// (`supervisor check | head`) instead of panicking on a broken pipe. Not for `start`, where a
/// dead agent's closed stdin must be an error to handle, not a death.
fn restore_default_sigpipe() {
    // SAFETY: resetting a signal disposition to its default touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Load and validate; on problems print them all to stderr and return None.
fn load(options: &RunOptions) -> Option<Suite> {
    match load_suite(options) {
        Ok(suite) => Some(suite),
        Err(problems) => {
            eprintln!("{problems}");
            None
        }
    }
}

fn print_notes(suite: &Suite) {
    for note in &suite.notes {
        eprintln!("note: {note}");
    }
}

fn first_line(text: &str) -> String {
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or("").trim().to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// `writeln!` into a String, which cannot fail.
macro_rules! outln {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn print_rows(out: &mut String, rows: &[(String, String, Layer)], indent: &str) {
    let kw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let vw = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(0)
        .min(60);
    for (k, v, l) in rows {
        outln!(out, "{indent}{k:kw$}  {v:vw$}  ({l})");
    }
}

/// `-q`: plans only; default: the shared config once, then what each test changes; `-v`: every
/// test's whole effective config.
fn print_check(suite: &Suite, verbosity: Verbosity) {
    let mut text = String::new();
    let out = &mut text;
    outln!(out, "project root: {}", suite.project_root.display());
    match &suite.config_path {
        Some(p) => outln!(out, "config:       {}", p.display()),
        None => outln!(
            out,
            "config:       none ({CONFIG_FILE_NAME} not found; defaults apply)"
        ),
    }
    if let Some(g) = &suite.global_config_path {
        outln!(out, "global:       {}", g.display());
    }
    outln!(
        out,
        "root tests:   {} selected of {} discovered",
        suite.tests.len(),
        suite.discovered
    );
    let base_rows = suite.base.rows();
    if verbosity == Verbosity::Normal {
        outln!(out);
        outln!(out, "effective config (before test overrides):");
        print_rows(out, &base_rows, "  ");
    }
    let mut steps = 0;
    for test in &suite.tests {
        outln!(out);
        let tags = if test.tags.is_empty() {
            String::new()
        } else {
            format!("  [tags: {}]", test.tags.join(", "))
        };
        outln!(
            out,
            "== {} — \"{}\"{tags}",
            test.rel_path.display(),
            test.name
        );
        outln!(
            out,
            "  plan ({} step{}):",
            test.plan.len(),
            if test.plan.len() == 1 { "" } else { "s" }
        );
        let pw = test
            .plan
            .iter()
            .map(|s| s.provenance().chars().count())
            .max()
            .unwrap_or(0);
        for s in &test.plan {
            let mut marks = Vec::new();
            if s.setup {
                marks.push("setup".to_string());
            }
            if s.skip {
                marks.push("skip".to_string());
            }
            if let Some(c) = &s.checkpoint {
                marks.push(format!("checkpoint: {c}"));
            }
            if let Some(t) = s.timeout_secs {
                marks.push(format!("timeout: {t}s"));
            }
            let marks = if marks.is_empty() {
                String::new()
            } else {
                format!("[{}] ", marks.join(", "))
            };
            outln!(
                out,
                "  {:>3}  {:pw$}  {marks}{}",
                s.step_id,
                s.provenance(),
                first_line(&s.instruction)
            );
        }
        steps += test.plan.len();
        match verbosity {
            Verbosity::Quiet => {}
            Verbosity::Verbose => {
                outln!(out, "  effective config:");
                print_rows(out, &test.effective.rows(), "    ");
            }
            Verbosity::Normal => {
                let own: Vec<(String, String, Layer)> = test
                    .effective
                    .rows()
                    .into_iter()
                    .filter(|r| !base_rows.contains(r))
                    .collect();
                if own.is_empty() {
                    outln!(out, "  effective config: as above");
                } else {
                    outln!(out, "  effective config: as above, except");
                    print_rows(out, &own, "    ");
                }
            }
        }
    }
    outln!(out);
    outln!(
        out,
        "ok: {} root test{}, {steps} step{}; nothing was run",
        suite.tests.len(),
        if suite.tests.len() == 1 { "" } else { "s" },
        if steps == 1 { "" } else { "s" }
    );
    // A closed stdout (`| head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
}

const STARTER_CONFIG: &str = r#"# bugatti.config.toml — see config/bugatti.config.toml in the bugatti repository for every field.

[provider]
name = "shell"                  # claude-code | codex | command | shell (shell: no model, runs `commands`)

[ports]
APP_PORT = "auto"

[commands.server]
kind = "long_lived"
cmd = "python3 -m http.server ${APP_PORT} --bind 127.0.0.1"
readiness_url = "http://127.0.0.1:${APP_PORT}/"
"#;

const STARTER_TEST: &str = r#"name = "Example"

[[steps]]
instruction = "Check that the server answers: `curl -fsS http://127.0.0.1:${APP_PORT}/ > /dev/null`"
"#;

/// Write a starter config and example test; never overwrite.
fn init() -> ExitCode {
    let files = [
        (CONFIG_FILE_NAME, STARTER_CONFIG),
        ("example.test.toml", STARTER_TEST),
    ];
    for (name, _) in &files {
        if std::path::Path::new(name).exists() {
            eprintln!("error: {name} already exists; supervisor init does not overwrite files");
            return ExitCode::from(2);
        }
    }
    for (name, text) in &files {
        if let Err(e) = std::fs::write(name, text) {
            eprintln!("error: cannot write {name}: {e}");
            return ExitCode::from(2);
        }
        println!("wrote {name}");
    }
    println!("next: `supervisor check` to see the plan, `supervisor start` to run it");
    ExitCode::SUCCESS
}

/// Check what a run will need, without running anything.
fn doctor(config: Option<PathBuf>) -> ExitCode {
    let options = RunOptions {
        config,
        ..RunOptions::default()
    };
    let Some(suite) = load(&options) else {
        println!("FAIL config and tests: see the problems above");
        return ExitCode::from(2);
    };
    println!(
        "ok   config and tests: {} root test(s) in {}",
        suite.tests.len(),
        suite.project_root.display()
    );
    let mut failed = false;
    // Every distinct provider setting (tests may override it), checked as a session starts it.
    let mut providers: Vec<_> = suite.tests.iter().map(|t| &t.effective.provider).collect();
    providers.push(&suite.base.provider);
    let claude = bugatti::actors::session_plan::claude_bin();
    let mut findings: Vec<_> = providers
        .into_iter()
        .flat_map(|p| {
            bugatti::providers::locate::check_agent_program(p, &suite.project_root, &claude)
        })
        .collect();
    findings.dedup();
    let mut seen = std::collections::BTreeSet::new();
    for finding in findings {
        if !seen.insert(finding.message.clone()) {
            continue;
        }
        if finding.ok {
            println!("ok   {}", finding.message);
        } else {
            failed = true;
            println!("FAIL {}", finding.message);
        }
    }
    for (name, port) in &suite.base.ports {
        if let bugatti::model::config::PortSpec::Fixed(n) = port.value {
            match std::net::TcpListener::bind(("127.0.0.1", n)) {
                Ok(_) => println!("ok   port {name} = {n} is free"),
                Err(e) => {
                    failed = true;
                    println!("FAIL port {name} = {n}: {e}");
                }
            }
        }
    }
    let artifacts = suite
        .project_root
        .join(&suite.base.supervisor.artifact_dir.value);
    let probe = artifacts
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(&suite.project_root)
        .to_path_buf();
    match nix::unistd::access(&probe, nix::unistd::AccessFlags::W_OK) {
        Ok(()) => println!("ok   artifacts: {} is writable", artifacts.display()),
        Err(e) => {
            failed = true;
            println!("FAIL artifacts: {} is not writable: {e}", probe.display());
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Run a validated suite under the actors; map why it ended to the exit code of SPEC §6.
fn run_suite(suite: Suite, options: RunOptions) -> ExitCode {
    ExitCode::from(bugatti::actors::run::run_suite(suite, &options).code())
}
