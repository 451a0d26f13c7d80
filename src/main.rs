use clap::Parser;

// The hub allocates a little per heartbeat at tens of thousands a second;
// mimalloc measurably beats glibc malloc there (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = match macfleet::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let _ = color_eyre::install();
    let is_tui =
        cli.command.is_none() || matches!(cli.command, Some(macfleet::cli::Command::Demo(_)));
    if !is_tui {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_env("MACFLEET_LOG")
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
            )
            .with_writer(std::io::stderr)
            .try_init();
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
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            // `macfleet get workers | head`: the reader is done, so are we.
            0
        }
        Err(e) => {
            let code = macfleet::cli::exit_code(&e);
            eprintln!("macfleet: {}", macfleet::scrub::scrub(&format!("{e:#}")));
            code
        }
    };
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}
