//! `macfleet demo`: an in-process reference hub on 127.0.0.1 (ephemeral
//! port) over a temporary copy of `assets/hub.toml`, a simulated fleet on
//! it, and the TUI as owner. Before the fleet starts, the owner puts the
//! scenario's list in place and the scenario's last hour of failovers is
//! posted, so the first screen is not empty. Quitting stops all of it and
//! removes the temporary files.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{Context, Result, eyre};

use super::{DemoArgs, Global};
use crate::client::{Client, ClientOptions, Token, Writer};
use crate::hub::{HubOptions, auth};
use crate::wire::Role;

/// The example config the demo starts from.
pub const EXAMPLE_CONFIG: &str = include_str!("../../assets/hub.toml");

/// A demo hub with its tokens, in a temporary directory that is removed
/// when this is dropped.
pub struct DemoHub {
    pub hub: crate::hub::RunningHub,
    pub owner: Token,
    pub viewer: Token,
    pub worker: Token,
    pub dir: tempfile::TempDir,
}

/// Start an embedded hub on an ephemeral loopback port.
pub async fn start_hub(interval_s: u64) -> Result<DemoHub> {
    start_hub_for(interval_s, 0).await
}

/// The hub's `--max-workers` for a demo of `workers`: the hub's default,
/// raised to fit a larger fleet (`macfleet demo --workers 1000000`).
pub fn max_workers_for(workers: usize) -> usize {
    workers.max(crate::hub::DEFAULT_MAX_WORKERS)
}

/// [`start_hub`] for a fleet of `workers`: its `--max-workers` raised to
/// fit ([`max_workers_for`]).
pub async fn start_hub_for(interval_s: u64, workers: usize) -> Result<DemoHub> {
    // Private: the directory 0700, its files 0600 (it holds the session's
    // token file, the history and the failover log).
    let mut builder = tempfile::Builder::new();
    builder.prefix("macfleet-demo-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    let dir = builder
        .tempdir()
        .wrap_err("cannot make a temporary directory")?;
    let config = dir.path().join("hub.toml");
    std::fs::write(&config, EXAMPLE_CONFIG).wrap_err("cannot write the demo config")?;
    #[cfg(unix)]
    std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .wrap_err("cannot make the demo config private")?;
    let (owner, viewer, worker) = (
        auth::generate_token(),
        auth::generate_token(),
        auth::generate_token(),
    );
    let tokens_text = [
        auth::token_entry("demo-owner", Role::Owner, &owner),
        auth::token_entry("demo-viewer", Role::Viewer, &viewer),
        auth::token_entry("demo-fleet", Role::Worker, &worker),
    ]
    .join("\n");
    let tokens = auth::Tokens::parse(&tokens_text, "demo tokens")?;
    let mut opts = HubOptions::new(config, tokens);
    opts.listen = ([127, 0, 0, 1], 0).into();
    opts.name = "demo".into();
    opts.heartbeat_interval_s = interval_s.max(1);
    opts.max_workers = max_workers_for(workers);
    let hub = crate::hub::start(opts).await?;
    // SQLite makes its files by the umask (0644, commonly); the WAL and
    // shared-memory files it makes later copy the database's mode.
    #[cfg(unix)]
    for name in ["hub.db", "hub.db-wal", "hub.db-shm"] {
        let path = dir.path().join(name);
        if path.exists() {
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .wrap_err_with(|| format!("cannot make {} private", path.display()))?;
        }
    }
    Ok(DemoHub {
        hub,
        owner: Token::new(owner),
        viewer: Token::new(viewer),
        worker: Token::new(worker),
        dir,
    })
}

/// How much of the scenario's past the demo posts before its fleet starts.
pub const BACKFILL: Duration = Duration::from_secs(3600);

/// The owner's change before the fleet starts: the scenario's list, put in
/// place through `PUT /v1/config` (so History has an entry beyond the
/// hub's `(initial)`). Dated by the hub's clock, that is now: the API takes
/// no past-dated history.
async fn owner_change(client: &Client, agents: &[String]) -> Result<()> {
    if agents.is_empty() {
        return Ok(());
    }
    let doc = client
        .config()
        .await
        .wrap_err("the demo could not read its hub's config")?;
    let text = crate::agents_doc::set_order(&doc.text, agents)
        .map_err(|e| eyre!("the scenario's list does not fit the demo config: {e}"))?;
    if text == doc.text {
        return Ok(());
    }
    let who = client.whoami().await?;
    let writer = Writer::new(client.clone(), &who)
        .ok_or_else(|| eyre!("the demo's owner token is not an owner's"))?;
    writer
        .put_config(&text, &doc.revision)
        .await
        .wrap_err("the demo's owner could not put the scenario's list in place")?;
    Ok(())
}

/// The scenario's candidate (`[rollout]`, `bad-order`) started as a staged
/// rollout by the demo's owner, onto the list in force.
async fn stage_rollout(
    client: &Client,
    r: &crate::sim::scenario::ScenarioRollout,
) -> Result<crate::rollout::wire::RolloutView> {
    let q = r
        .query()
        .map_err(|e| eyre!("the scenario's rollout: {e}"))?;
    let doc = client
        .config()
        .await
        .wrap_err("the demo could not read its hub's config")?;
    let text = crate::agents_doc::set_order(&doc.text, &r.agents)
        .map_err(|e| eyre!("the scenario's candidate does not fit the demo config: {e}"))?;
    let who = client.whoami().await?;
    let writer = Writer::new(client.clone(), &who)
        .ok_or_else(|| eyre!("the demo's owner token is not an owner's"))?;
    writer
        .start_rollout(&text, &doc.revision, &q)
        .await
        .wrap_err("the demo's owner could not start the scenario's rollout")
}

/// Heartbeats a second the demo's fleet is kept within: its hub's
/// interval is raised to `workers / this` seconds when that is longer (a
/// demo of a million workers heartbeats every 50 s, not every 5).
pub const DEMO_HEARTBEATS_PER_SECOND: usize = 20_000;

/// Past this many workers the TUI opens at once and the fleet is prepared
/// (its last hour posted, every worker registered) behind it, the screen
/// filling as it comes, instead of before it.
pub const PREPARE_BEHIND: usize = 100_000;

/// The demo hub's heartbeat interval for `workers` at `asked` seconds.
pub fn interval_for(asked: u64, workers: usize) -> u64 {
    let paced = workers.div_ceil(DEMO_HEARTBEATS_PER_SECOND) as u64;
    asked.max(paced).max(1)
}

pub async fn run(global: &Global, args: DemoArgs) -> Result<()> {
    let scenario = crate::sim::Scenario::load(&args.scenario)?;
    let interval = interval_for(args.interval, args.workers);
    let demo = start_hub_for(interval, args.workers).await?;
    let url = demo.hub.url();
    // Every client of it reads pages of up to the fleet it holds.
    let fits = ClientOptions {
        max_workers: max_workers_for(args.workers),
        ..ClientOptions::default()
    };
    let owner = Client::new(&url, Some(demo.owner.clone()), fits.clone())?;
    owner_change(&owner, &scenario.agents).await?;
    let staged = scenario.rollout.clone();
    // The scenario's last hour goes in through the API before the live
    // fleet starts, and the live fleet starts just as the scenario's first
    // phase reaches a worker: the first screen has history and a live
    // failover comes with the first heartbeats.
    let sim_client = Client::new(&url, Some(demo.worker.clone()), fits.clone())?;
    let stats = Arc::new(crate::sim::SimStats::default());
    let mut opts = crate::sim::SimOptions::new(args.workers, scenario);
    opts.start = crate::sim::Start::FirstEvent;
    opts.backfill = Some(crate::sim::Backfill {
        span: BACKFILL,
        step: Duration::from_secs(interval),
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stopped_rx = async {
        let _ = stop_rx.await;
    };
    let behind = args.workers > PREPARE_BEHIND && !args.headless;
    let (sim, start) = if behind {
        // A large fleet takes a while to register: the TUI opens now
        // and shows it as it comes.
        let stats = stats.clone();
        let sim = tokio::spawn(async move {
            let fleet = crate::sim::Sim::prepare(sim_client, opts, stats)
                .await
                .wrap_err("the demo could not start its simulated fleet")?;
            fleet.run(stopped_rx).await
        });
        (sim, None)
    } else {
        let fleet = crate::sim::Sim::prepare(sim_client, opts, stats.clone())
            .await
            .wrap_err("the demo could not start its simulated fleet")?;
        let start = (fleet.start_s(), fleet.live_since());
        (tokio::spawn(fleet.run(stopped_rx)), Some(start))
    };
    if let Some(r) = &staged {
        let v = stage_rollout(&owner, r).await?;
        if args.headless {
            eprintln!(
                "rollout {} started: {} to {}, a {} bake; macfleet agents rollout status follows it",
                v.id,
                v.agents.join(","),
                super::rollout::cohort_words(&v.cohort, Some(v.cohort_workers)),
                r.bake
            );
        }
    }
    let session_token = if global.read_only {
        demo.viewer.clone()
    } else {
        demo.owner.clone()
    };
    let result = if let (true, Some((start_s, live_since))) = (args.headless, start) {
        eprintln!(
            "macfleet demo: hub at {url}, {} simulated workers ({} from {start_s} s in, its last hour already posted)",
            args.workers, args.scenario
        );
        eprintln!(
            "live since {}: failovers dated before that are the scenario's last hour, posted at start",
            live_since.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        );
        // The token goes to a file only its owner can read, never to the
        // terminal (or a log a terminal is recorded into).
        let token_file = demo.dir.path().join("session.token");
        write_private(&token_file, session_token.expose())?;
        eprintln!("try, in another terminal:");
        eprintln!("  export MAC_HUB_URL={url}");
        eprintln!("  export MAC_HUB_TOKEN=\"$(cat {})\"", token_file.display());
        eprintln!(
            "  macfleet get workers    # or: curl -H \"Authorization: Bearer $MAC_HUB_TOKEN\" $MAC_HUB_URL/v1/workers"
        );
        eprintln!(
            "Ctrl-C stops the hub and the fleet and removes {}",
            demo.dir.path().display()
        );
        stopped().await;
        Ok(())
    } else {
        // (`behind`: the fleet is still being prepared.)
        let opts = ClientOptions {
            user_agent: super::user_agent("tui"),
            ..fits
        };
        let client = Client::new(&url, Some(session_token), opts)?;
        let grant = (!global.read_only).then(|| crate::client::WriteGrant::new(client.clone()));
        let mut opts = super::tui_options(global, format!("demo {url}"), global.read_only);
        if behind {
            // A large fleet takes seconds to make and minutes to register.
            opts.coming = Some(format!(
                "the demo's {} simulated workers are starting: they appear as they report",
                crate::tui::ui::fmt::count(args.workers)
            ));
        }
        crate::tui::run(client, grant, opts).await
    };
    let _ = stop_tx.send(());
    if behind && !sim.is_finished() {
        // Quit while the fleet is still being prepared: the preparation
        // does not hear the stop (only the running fleet does), so it is
        // ended here rather than waited for.
        sim.abort();
    }
    let _ = sim.await;
    demo.hub.stop().await;
    drop(demo.dir);
    if args.headless {
        eprintln!("{}", stats.summary());
    }
    result
}

/// Ctrl-C, or (Unix) SIGTERM / SIGHUP: either way the hub and the fleet stop
/// and the temporary directory goes.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
                return;
            }
            _ => tracing::warn!("cannot listen for SIGTERM/SIGHUP; Ctrl-C stops the demo"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Write `text` to a new file that only its owner can read.
fn write_private(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o
        .open(path)
        .wrap_err_with(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.write_all(b"\n"))
        .wrap_err_with(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_hub_fits_the_fleet_it_is_asked_for() {
        assert_eq!(max_workers_for(40), crate::hub::DEFAULT_MAX_WORKERS);
        assert_eq!(max_workers_for(1_000_000), 1_000_000);
    }

    #[test]
    fn a_large_demo_fleet_is_paced_to_its_hub() {
        assert_eq!(interval_for(5, 40), 5);
        assert_eq!(interval_for(5, 1_000_000), 50);
        assert_eq!(interval_for(60, 1_000_000), 60);
    }
}
