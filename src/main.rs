// The hub allocates a little per heartbeat at tens of thousands a second;
// mimalloc measurably beats glibc malloc there (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's option setter (the bundled v3 library, pinned by Cargo.lock).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_t` (include/mimalloc.h).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Return freed memory to the OS at once. mimalloc delays the purge by 10 ms
/// and runs it on a later allocator call of the same thread; the TUI's
/// threads go idle after the initial 100,000-worker fetch, so the pages
/// that held the parsed page stayed resident (docs/tui.md, "Memory").
fn purge_at_once() {
    // SAFETY: stores an option value; mimalloc reads it on its next purge.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// The log on stderr, filtered by `MACFLEET_LOG` (default `info`), in colour
/// only on a terminal: a hub's log is usually a file. (The TUI logs nothing
/// there: the screen is its own.)
fn log_to_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MACFLEET_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .try_init();
}

fn main() {
    let cli = match macfleet::cli::options::parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    // An error ends the command with its sentence (`{e:#}` below), never a
    // backtrace, so none is captured: with `RUST_BACKTRACE=1`, as many
    // shells set, color-eyre resolved one for every error (the binary's
    // line tables read in: 155 MiB and 0.45 s for `hub unreachable`).
    // Panics still follow RUST_BACKTRACE, and name file and line either way.
    // SAFETY: no other thread exists yet (the runtime is started below).
    unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    macfleet::cli::install_error_hooks();
    let is_tui =
        cli.command.is_none() || matches!(cli.command, Some(macfleet::cli::Command::Demo(_)));
    if is_tui {
        purge_at_once();
    }
    if !is_tui {
        log_to_stderr();
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("macfleet: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = match runtime.block_on(macfleet::cli::run(cli)) {
        Ok(code) => code,
        Err(e) if macfleet::cli::is_broken_pipe(&e) => {
            // `macfleet get workers | head`: the reader is done, so are we.
            0
        }
        Err(e) if macfleet::cli::Exit::was_said(&e) => macfleet::cli::exit_code(&e),
        Err(e) => {
            let code = macfleet::cli::exit_code(&e);
            eprintln!(
                "macfleet: {}",
                macfleet::textsafe::for_terminal_lines(&format!("{e:#}"))
            );
            code
        }
    };
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}
