//! `macfleet demo`: an in-process reference hub on 127.0.0.1 (ephemeral
//! port) over a temporary copy of `assets/hub.toml`, a simulated fleet on
//! it, and the TUI as owner. Quitting stops all of it and removes the
//! temporary files.

use std::sync::Arc;

use color_eyre::eyre::{Context, Result};

use super::{DemoArgs, Global};
use crate::client::{Client, ClientOptions, Token};
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
    let dir = tempfile::Builder::new()
        .prefix("macfleet-demo-")
        .tempdir()
        .wrap_err("cannot make a temporary directory")?;
    let config = dir.path().join("hub.toml");
    std::fs::write(&config, EXAMPLE_CONFIG).wrap_err("cannot write the demo config")?;
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
    let hub = crate::hub::start(opts).await?;
    Ok(DemoHub {
        hub,
        owner: Token::new(owner),
        viewer: Token::new(viewer),
        worker: Token::new(worker),
        dir,
    })
}

pub async fn run(global: &Global, args: DemoArgs) -> Result<()> {
    let scenario = crate::sim::Scenario::load(&args.scenario)?;
    let demo = start_hub(args.interval).await?;
    let url = demo.hub.url();
    let sim_client = Client::new(&url, Some(demo.worker.clone()), ClientOptions::default())?;
    let stats = Arc::new(crate::sim::SimStats::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let sim = tokio::spawn(crate::sim::run(
        sim_client,
        crate::sim::SimOptions::new(args.workers, scenario),
        stats.clone(),
        async {
            let _ = stop_rx.await;
        },
    ));
    let session_token = if global.read_only {
        demo.viewer.clone()
    } else {
        demo.owner.clone()
    };
    let result = if args.headless {
        eprintln!(
            "macfleet demo: hub at {url}, {} simulated workers ({})",
            args.workers, args.scenario
        );
        eprintln!("try, in another terminal:");
        eprintln!("  export MAC_HUB_URL={url}");
        eprintln!("  export MAC_HUB_TOKEN={}", session_token.expose());
        eprintln!(
            "  macfleet get workers    # or: curl -H \"Authorization: Bearer $MAC_HUB_TOKEN\" $MAC_HUB_URL/v1/workers"
        );
        eprintln!(
            "Ctrl-C stops the hub and the fleet and removes {}",
            demo.dir.path().display()
        );
        let _ = tokio::signal::ctrl_c().await;
        Ok(())
    } else {
        let client = Client::new(&url, Some(session_token), ClientOptions::default())?;
        let grant = (!global.read_only).then(|| crate::client::WriteGrant::new(client.clone()));
        let opts = super::tui_options(global, format!("demo {url}"), global.read_only);
        crate::tui::run(client, grant, opts).await
    };
    let _ = stop_tx.send(());
    let _ = sim.await;
    demo.hub.stop().await;
    drop(demo.dir);
    if args.headless {
        eprintln!("{}", stats.summary());
    }
    result
}
