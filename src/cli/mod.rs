//! The command line: commands, flags and exit codes (README, `--help`).

pub mod agents;
pub mod context;
pub mod demo;
pub mod get;
pub mod options;
pub mod rollout;
pub mod tls_init;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use color_eyre::eyre::{Result, eyre};

use crate::client::{Client, ClientError, ClientOptions};

/// Exit codes, as the README lists them.
/// `GET /v1/config` for a command that reads or edits the list: a
/// document the hub says does not validate (`Macfleet-Config-Invalid`) is
/// the file as it stands on the hub's disk, not what workers are told, so
/// it is refused with a sentence naming it, never read as the list in force
/// nor edited over unseen.
pub async fn hub_document(client: &crate::client::Client) -> Result<crate::client::ConfigDoc> {
    let doc = client.config().await?;
    if let Some(i) = &doc.invalid {
        let at = i.place().map(|p| format!(" ({p})")).unwrap_or_default();
        return Err(color_eyre::eyre::eyre!(Exit::new(
            exit::ERROR,
            format!(
                "the hub's file does not validate{at}: {}; workers keep the last accepted list (the hub's /v1/health says which). Fix the file on the hub, or open it with e in macfleet's TUI",
                crate::textsafe::for_terminal(&i.message)
            )
        )));
    }
    Ok(doc)
}

pub mod exit {
    pub const OK: i32 = 0;
    pub const ERROR: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const CONFLICT: i32 = 3;
    pub const VALIDATION: i32 = 4;
    pub const UNREACHABLE: i32 = 5;
    pub const NOT_ALLOWED: i32 = 6;
    /// `agents rollout status`: the guard halted the rollout.
    pub const HALTED: i32 = 7;
}

/// An error that knows its exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    pub fn new(code: i32, message: impl Into<String>) -> Exit {
        Exit {
            code,
            message: message.into(),
        }
    }

    /// An error already said on stderr (a refused write's `not written:
    /// <why>` above its diff): the command ends with `code` and prints
    /// nothing more, so the sentence is read once.
    pub fn said(code: i32) -> Exit {
        Exit::new(code, "")
    }

    /// Whether `e` was already said (see [`Exit::said`]).
    pub fn was_said(e: &color_eyre::Report) -> bool {
        e.downcast_ref::<Exit>()
            .is_some_and(|x| x.message.is_empty())
    }
}

/// color-eyre's report and panic hooks, installed once per process. A
/// second `color_eyre::install()` fails, and its error is itself a report
/// whose backtrace is resolved on the spot: with this crate's debug info
/// that cost the TUI ~0.3 s at every start.
pub fn install_error_hooks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = color_eyre::install();
    });
}

/// Whether an error is stdout's reader going away (`macfleet get … | head`):
/// the command then ends quietly, as `cat` does. serde_json wraps the
/// `io::Error` in its own type, so both are asked.
pub fn is_broken_pipe(e: &color_eyre::Report) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                c.downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            })
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// The exit code for an error: typed errors carry theirs, the rest are 1.
pub fn exit_code(e: &color_eyre::Report) -> i32 {
    if let Some(x) = e.downcast_ref::<Exit>() {
        return x.code;
    }
    if let Some(c) = e.downcast_ref::<ClientError>() {
        return c.exit_code();
    }
    if e.downcast_ref::<crate::agents_doc::DocError>().is_some() {
        return exit::VALIDATION;
    }
    // `--scenario nosuch`: a name that is not one of the list it gives.
    if let Some(crate::sim::scenario::ScenarioError::Unknown { .. }) = e.downcast_ref() {
        return exit::USAGE;
    }
    exit::ERROR
}

#[derive(Debug, Parser)]
#[command(
    name = "macfleet",
    version,
    about = "The fleet of coding-agent workers at a glance, and the one list they follow",
    long_about = None
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(flatten)]
    pub tui: TuiFlags,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Hub URL (overrides --context, MAC_HUB_URL and the current context).
    #[arg(long, value_name = "URL")]
    pub hub: Option<String>,
    /// Context name in $XDG_CONFIG_HOME/macfleet/config.toml (overrides
    /// MAC_HUB_URL and the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// A dashboard: no key, path or request can write.
    #[arg(long)]
    pub read_only: bool,
    /// Set from [`TuiFlags`] of `macfleet` or `macfleet demo`.
    #[arg(skip)]
    pub ascii: bool,
    /// Set from [`TuiFlags`] of `macfleet` or `macfleet demo`.
    #[arg(skip)]
    pub mouse: bool,
    /// Which part of macfleet talks to the hub (`tui`, `agents`, `get`,
    /// `sim`): named in the `User-Agent`, so History tells the TUI's writes
    /// from the command line's.
    #[arg(skip)]
    pub part: &'static str,
    /// Log file (default under $XDG_STATE_HOME/macfleet/).
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// Allow sending a token over plain HTTP to a non-loopback host.
    #[arg(long)]
    pub allow_plaintext: bool,
    /// Extra CA certificate (PEM) to trust for the hub's HTTPS (overrides
    /// the context's ca_cert).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

/// The TUI's own flags: on `macfleet` and `macfleet demo` only.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct TuiFlags {
    /// Borders and marks without box-drawing glyphs.
    #[arg(long)]
    pub ascii: bool,
    /// Capture the mouse (off by default: it costs SSH traffic).
    #[arg(long)]
    pub mouse: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// An embedded hub on loopback, a simulated fleet on it, and the TUI.
    Demo(DemoArgs),
    /// The reference hub (boxed: its flags are the largest).
    Hub(Box<HubArgs>),
    /// A simulated fleet heartbeating to a hub.
    Sim(SimArgs),
    /// One snapshot, for scripts and for people without a TTY.
    Get(GetArgs),
    /// Scripted, format-preserving edits of MAC_CODING_AGENTS.
    Agents(agents::AgentsArgs),
    /// Hubs by name, in $XDG_CONFIG_HOME/macfleet/config.toml.
    Context(context::ContextArgs),
    /// Shell completions, from the same definitions as --help.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// The manual page (roff), from the same definitions as --help.
    Man,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Simulated workers.
    #[arg(long, default_value_t = 40)]
    pub workers: usize,
    /// Scenario name (steady, quota-cap, aug19, bad-order, good-order) or a scenario
    /// file.
    #[arg(long, default_value = "quota-cap")]
    pub scenario: String,
    /// Heartbeat interval of the embedded hub, in seconds.
    #[arg(long, default_value_t = 5)]
    pub interval: u64,
    /// No TUI: run the hub and the fleet until Ctrl-C, printing the hub's
    /// URL and the path of a file (mode 0600) that holds a session token;
    /// the token itself is never printed.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub tui: TuiFlags,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HubArgs {
    #[command(subcommand)]
    pub command: Option<HubCommand>,
    /// The TOML config document (holds MAC_CODING_AGENTS).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The tokens file (names, roles, sha256 hashes); SIGHUP rereads it.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// The address to listen on (beyond loopback: with TLS or --allow-plaintext).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,
    /// The hub's name, shown to clients.
    #[arg(long, default_value = "macfleet-hub")]
    pub name: String,
    /// The database for history and failovers (default: beside the config).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Heartbeat interval told to workers, in seconds.
    #[arg(long, default_value_t = 10)]
    pub heartbeat_interval: u64,
    /// Most heartbeats a second the hub paces its fleet to: past
    /// workers / N seconds the interval it tells grows to that (plus up to
    /// 10% jitter), and each worker's thresholds follow what it was told.
    #[arg(long, value_name = "N", default_value_t = crate::hub::pacing::DEFAULT_MAX_HEARTBEATS_PER_SECOND)]
    pub max_heartbeats_per_second: u64,
    /// PEM certificate chain: serve HTTPS (needed beyond loopback).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Most workers the hub holds (a new worker past it is refused with 503
    /// fleet_full); default: as many of the largest shape (9 KiB each) as
    /// fit in --memory-budget.
    #[arg(long, value_name = "N")]
    pub max_workers: Option<usize>,
    /// Memory the hub may grow by for the workers it holds: 512MiB, 2GiB
    /// (1024-based); sets --max-workers' default to (SIZE - 64 MiB) / 9 KiB
    /// (283,989 at 2.5 GiB).
    #[arg(long, value_name = "SIZE", default_value = "2560MiB", value_parser = crate::hub::parse_size)]
    pub memory_budget: u64,
    /// Most client connections open at once (also kept below the
    /// descriptor limit).
    #[arg(long, value_name = "N", default_value_t = crate::hub::serve::Limits::default().max_connections)]
    pub max_connections: usize,
    /// How long a worker's failover holds that rung off when its headroom
    /// is judged (unless it has run the rung since): 90s, 30m, 1h, 2d.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_window)]
    pub held_off_window: Duration,
    /// A directory the config may be a symlink into, beside the config's
    /// own (repeatable); a link to a file anywhere else is not followed:
    /// the hub neither serves nor writes it, and says why in /v1/health.
    #[arg(long, value_name = "DIR")]
    pub config_link_dir: Vec<PathBuf>,
}

/// A duration as `--held-off-window` takes it: a whole number with `s`,
/// `m`, `h` or `d` (seconds without a unit), at least 1 s, at most 30 days.
pub fn parse_window(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (like 90s, 30m, 1h, 2d)"))?;
    let per = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{s:?}: the unit is s, m, h or d")),
    };
    let secs = n.saturating_mul(per);
    if secs == 0 || secs > 30 * 86_400 {
        return Err(format!("{s:?}: between 1 s and 30 days"));
    }
    Ok(Duration::from_secs(secs))
}

#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Make a random token, append its hash, print the token once.
    Token {
        /// The token's name: shown in the history and to whoami (1 to 64
        /// of A-Z a-z 0-9 . _ @ -; not an e-mail address).
        #[arg(long)]
        name: String,
        /// What the token may do: owner, viewer or worker.
        #[arg(long)]
        role: crate::wire::Role,
        /// The tokens file (created with mode 0600 if missing).
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
        /// A worker token's pool (default: the token's name). A worker id
        /// belongs to the pool that first reported it; give a rotated
        /// token its old pool.
        #[arg(long, value_name = "NAME")]
        pool: Option<String>,
    },
    /// A private CA and a server certificate signed by it, for --tls-cert,
    /// --tls-key and the clients' --ca-cert.
    TlsInit(tls_init::TlsInitArgs),
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Simulated workers.
    #[arg(long, default_value_t = 40)]
    pub workers: usize,
    /// Scenario name (steady, quota-cap, aug19, bad-order, good-order) or a scenario
    /// file.
    #[arg(long, default_value = "steady")]
    pub scenario: String,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<u64>,
    /// Heartbeats in flight at once.
    #[arg(long, default_value_t = 512)]
    pub concurrency: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Output {
    /// Columns that fit the terminal.
    Table,
    /// Every column, however wide.
    Wide,
    /// The hub's own JSON, one document.
    Json,
    /// One JSON object a line (a worker, an event, an entry).
    Jsonl,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum GetWhat {
    /// Every worker, one line each.
    Workers,
    /// One worker in full (give its ID).
    Worker,
    /// The failover log, newest last.
    Failovers,
    /// Workers back on a higher rung of the same list, newest last.
    Recoveries,
    /// The agents list in rank order.
    Agents,
    /// The config's history, newest first.
    History,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// What to show.
    pub what: GetWhat,
    /// The worker's id, for `get worker ID`.
    #[arg(value_name = "ID", required_if_eq("what", "worker"))]
    pub id: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: Output,
    /// Failovers and recoveries: how many, newest last.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Failovers and recoveries: only this worker's.
    #[arg(long, value_name = "ID")]
    pub worker: Option<String>,
    /// Failovers and recoveries: only those from or to this agent.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Failovers: only this cause kind (rate_limited, auth, …).
    #[arg(long, value_name = "KIND", value_parser = get::parse_kind)]
    pub kind: Option<crate::wire::CauseKind>,
    /// Failovers and recoveries: only those of the last DURATION (30s, 10m, 2h, 7d).
    #[arg(long, value_name = "DURATION", value_parser = get::parse_duration)]
    pub since: Option<chrono::Duration>,
    /// Workers or failovers: keep following the hub's event stream.
    #[arg(long)]
    pub watch: bool,
}

/// A client for the resolved hub, or exit 2 with how to get one.
pub fn connect(global: &Global) -> Result<(Client, context::Target)> {
    let target = context::resolve(global.hub.as_deref(), global.context.as_deref())?
        .ok_or_else(|| Exit::new(exit::USAGE, context::NO_HUB_HELP))?;
    let client = client_for(global, &target)?;
    Ok((client, target))
}

/// A client for `target` with the global flags (`--ca-cert`, `--allow-plaintext`).
fn client_for(global: &Global, target: &context::Target) -> Result<Client> {
    let ca_pem = match global.ca_cert.as_ref().or(target.ca_cert.as_ref()) {
        Some(p) => Some(
            std::fs::read(p)
                .map_err(|e| eyre!("cannot read the CA certificate {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let opts = ClientOptions {
        allow_plaintext: global.allow_plaintext,
        ca_pem,
        user_agent: user_agent(global.part),
        ..ClientOptions::default()
    };
    Ok(Client::new(&target.hub, target.token.clone(), opts)?)
}

/// `macfleet/<version> (<part>)`: what History's `client` shows.
pub fn user_agent(part: &str) -> String {
    let v = env!("CARGO_PKG_VERSION");
    if part.is_empty() {
        format!("macfleet/{v}")
    } else {
        format!("macfleet/{v} ({part})")
    }
}

pub async fn run(mut cli: Cli) -> Result<i32> {
    let tui = match &cli.command {
        Some(Command::Demo(d)) => d.tui,
        _ => TuiFlags::default(),
    };
    cli.global.part = match &cli.command {
        None | Some(Command::Demo(_)) => "tui",
        Some(Command::Agents(_)) => "agents",
        Some(Command::Get(_)) => "get",
        Some(Command::Sim(_)) => "sim",
        _ => "",
    };
    cli.global.ascii = cli.tui.ascii || tui.ascii;
    cli.global.mouse = cli.tui.mouse || tui.mouse;
    match cli.command {
        None => run_tui(&cli.global).await.map(|()| exit::OK),
        Some(Command::Demo(args)) => demo::run(&cli.global, args).await.map(|()| exit::OK),
        Some(Command::Context(args)) => context::run(&cli.global, args),
        Some(Command::Completions { shell }) => {
            let mut cmd = options::command();
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut cmd, "macfleet", &mut out);
            std::io::Write::flush(&mut out)?;
            Ok(exit::OK)
        }
        Some(Command::Man) => {
            let cmd = options::command();
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            std::io::Write::flush(&mut out)?;
            Ok(exit::OK)
        }
        Some(Command::Hub(args)) => run_hub(*args, cli.global.allow_plaintext)
            .await
            .map(|()| exit::OK),
        Some(Command::Sim(args)) => run_sim(&cli.global, args).await.map(|()| exit::OK),
        Some(Command::Get(args)) => get::run(&cli.global, args).await.map(|()| exit::OK),
        Some(Command::Agents(args)) => agents::run(&cli.global, args).await,
    }
}

/// The TUI's look, from the flags and `NO_COLOR`.
pub fn tui_options(global: &Global, label: String, read_only: bool) -> crate::tui::TuiOptions {
    crate::tui::TuiOptions {
        hub_label: label,
        read_only,
        read_only_flag: global.read_only,
        ascii: global.ascii,
        mouse: global.mouse,
        // no-color.org: any non-empty value.
        no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        log_file: global.log_file.clone(),
        context: None,
        contexts: Vec::new(),
        switcher: None,
        coming: None,
    }
}

/// `macfleet`: the TUI against the resolved hub.
async fn run_tui(global: &Global) -> Result<()> {
    let (client, target) = connect(global)?;
    let read_only = global.read_only || target.read_only;
    // Only a session that is not read-only is granted the one write path;
    // it becomes a writer when the hub says the token is an owner's, so the
    // TUI starts at once even when the hub does not answer.
    let grant = (!read_only).then(|| crate::client::WriteGrant::new(client.clone()));
    let mut opts = tui_options(global, target.label.clone(), read_only);
    // A session on a context shows its name and can switch (`:ctx`) to
    // the others; a context's own token goes to its own hub only.
    opts.context = (target.label != target.hub).then(|| target.label.clone());
    opts.contexts = context::load()
        .map(|f| f.contexts.into_keys().collect())
        .unwrap_or_default();
    let g = global.clone();
    opts.switcher = Some(crate::tui::run::Switcher(std::sync::Arc::new(
        move |name: &str| {
            let target = context::context_target(name).map_err(|e| e.to_string())?;
            let client = client_for(&g, &target).map_err(|e| e.to_string())?;
            let read_only = g.read_only || target.read_only;
            Ok(crate::tui::run::Switched {
                grant: (!read_only).then(|| crate::client::WriteGrant::new(client.clone())),
                client,
                label: name.to_string(),
            })
        },
    )));
    crate::tui::run(client, grant, opts).await
}

async fn run_hub(args: HubArgs, allow_plaintext: bool) -> Result<()> {
    use crate::hub::{HubOptions, auth};
    match args.command {
        Some(HubCommand::Token {
            name,
            role,
            tokens,
            pool,
        }) => {
            let token = auth::append_token(&tokens, &name, role, pool.as_deref())?;
            eprintln!(
                "added {role} token {name} to {} (mode 0600); it is shown once, keep it safe:",
                tokens.display()
            );
            let mut out = std::io::stdout().lock();
            std::io::Write::write_all(&mut out, format!("{token}\n").as_bytes())?;
            std::io::Write::flush(&mut out)?;
            return Ok(());
        }
        Some(HubCommand::TlsInit(a)) => return tls_init::run(&a),
        None => {}
    }
    let (Some(config), Some(tokens)) = (args.config, args.tokens) else {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            "macfleet hub needs --config FILE and --tokens FILE (make a token with: macfleet hub token --name NAME --role owner --tokens FILE)"
        )));
    };
    let tokens_file = tokens;
    let tokens = auth::Tokens::load(&tokens_file)?;
    auth::warn_if_open_to_others(&tokens_file);
    if tokens.is_empty() {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            "the tokens file holds no tokens (make one with: macfleet hub token --name NAME --role owner --tokens FILE)"
        )));
    }
    let mut opts = HubOptions::new(config, tokens);
    opts.tokens_file = Some(tokens_file);
    opts.listen = args.listen;
    opts.name = args.name;
    opts.db = args.db;
    opts.heartbeat_interval_s = args.heartbeat_interval.max(1);
    opts.max_heartbeats_per_second = args.max_heartbeats_per_second.max(1);
    opts.allow_plaintext = allow_plaintext;
    opts.tls = args.tls_cert.zip(args.tls_key);
    opts.max_workers = args
        .max_workers
        .unwrap_or_else(|| crate::hub::max_workers_for(args.memory_budget))
        .max(1);
    opts.limits.max_connections = args.max_connections.max(1);
    opts.held_off_window = args.held_off_window;
    opts.config_link_dirs = args.config_link_dir;
    crate::hub::serve(opts).await
}

async fn run_sim(global: &Global, args: SimArgs) -> Result<()> {
    let (client, target) = connect(global)?;
    let scenario = crate::sim::Scenario::load(&args.scenario)?;
    let mut opts = crate::sim::SimOptions::new(args.workers, scenario);
    opts.duration = args.duration.map(Duration::from_secs);
    opts.concurrency = args.concurrency;
    let stats = std::sync::Arc::new(crate::sim::SimStats::default());
    eprintln!(
        "simulating {} workers ({}) against {}",
        args.workers, args.scenario, target.label
    );
    let s2 = stats.clone();
    let report = tokio::spawn(async move {
        let mut t = tokio::time::interval(Duration::from_secs(10));
        t.tick().await;
        loop {
            t.tick().await;
            eprintln!("{}", s2.summary());
        }
    });
    let r = crate::sim::run(client, opts, stats.clone(), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    report.abort();
    eprintln!("{}", stats.summary());
    r
}
