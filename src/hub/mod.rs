//! The reference hub: every line of the hub API v1 (`docs/hub-api.md`).
//!
//! - `auth`: tokens (hashed) and roles;
//! - `store`: the owner's TOML file, replaced durably;
//! - `db`: history and failover log in SQLite, written in batches;
//! - `fleet`: every worker's last heartbeat, in memory, with change cursors;
//! - `events`: the SSE feed with resume;
//! - `api`: the HTTP routes.

pub mod api;
pub mod auth;
pub mod db;
pub mod events;
pub mod fleet;
pub mod ingest;
pub mod store;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{Context, Result, bail, eyre};

use crate::agents_doc;
use crate::wire::{ConfigEvent, HistoryEntry, Projection};

/// How to run a hub.
#[derive(Debug, Clone)]
pub struct HubOptions {
    pub config: PathBuf,
    pub tokens: auth::Tokens,
    pub listen: SocketAddr,
    pub name: String,
    /// Where the history and the failover log live; default beside the
    /// config, `<config stem>.db`.
    pub db: Option<PathBuf>,
    pub heartbeat_interval_s: u64,
    pub keepalive: Duration,
    pub bounds: db::Bounds,
    /// Events kept for `Last-Event-ID` resume.
    pub event_ring: usize,
    pub allow_plaintext: bool,
    /// PEM certificate chain and key: serve HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
}

impl HubOptions {
    pub fn new(config: PathBuf, tokens: auth::Tokens) -> HubOptions {
        HubOptions {
            config,
            tokens,
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            name: "macfleet-hub".into(),
            db: None,
            heartbeat_interval_s: 10,
            keepalive: Duration::from_secs(15),
            bounds: db::Bounds::default(),
            event_ring: 100_000,
            allow_plaintext: false,
            tls: None,
        }
    }

    pub fn db_path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| self.config.with_extension("db"))
    }
}

/// The current document and what every worker is told.
pub struct Current {
    pub text: Arc<String>,
    pub revision: String,
    pub agents: Vec<String>,
    /// The serialised heartbeat answer, made once per revision.
    pub projection: bytes::Bytes,
}

impl Current {
    fn new(text: String, agents: Vec<String>, interval_s: u64) -> Current {
        let revision = store::revision_of(text.as_bytes());
        let projection = serde_json::to_vec(&Projection {
            config_revision: revision.clone(),
            agents: agents.clone(),
            heartbeat_interval_s: interval_s,
        })
        .unwrap_or_default()
        .into();
        Current {
            text: Arc::new(text),
            revision,
            agents,
            projection,
        }
    }
}

/// Everything the routes share.
pub struct Hub {
    pub opts: HubOptions,
    /// Read on every heartbeat without taking a lock or a reference count.
    pub current: arc_swap::ArcSwap<Current>,
    /// Serialises config writes: compare-and-replace happens under it.
    pub write_lock: tokio::sync::Mutex<()>,
    pub fleet: Mutex<fleet::Fleet>,
    pub db: db::Db,
    pub events: Arc<events::Events>,
    /// Flips to true when the hub stops, so open event streams end and a
    /// graceful shutdown does not wait on them.
    pub closing: tokio::sync::watch::Sender<bool>,
}

impl Hub {
    pub fn current(&self) -> Arc<Current> {
        self.current.load_full()
    }
}

/// A hub serving in the background (for `demo` and tests).
pub struct RunningHub {
    pub addr: SocketAddr,
    pub hub: Arc<Hub>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningHub {
    pub fn url(&self) -> String {
        let scheme = if self.hub.opts.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Stop accepting, close open streams, and wait for the server task.
    pub async fn stop(mut self) {
        self.hub.closing.send_replace(true);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.task).await;
        self.task.abort();
        let _ = self.hub.db.flush().await;
    }
}

/// Open the config and the database, and build the shared state.
pub async fn open(opts: HubOptions) -> Result<Arc<Hub>> {
    if !opts.listen.ip().is_loopback() && !opts.allow_plaintext && opts.tls.is_none() {
        bail!(
            "refusing to listen on {} in plain HTTP: give --tls-cert and --tls-key, or --allow-plaintext (behind a TLS proxy), or listen on loopback",
            opts.listen
        );
    }
    let bytes = std::fs::read(&opts.config)
        .wrap_err_with(|| format!("cannot read the config {}", opts.config.display()))?;
    let text = agents_doc::decode(&bytes)
        .map_err(|e| eyre!("{}: {e}", opts.config.display()))?
        .to_string();
    let located = agents_doc::locate(&text).map_err(|e| eyre!("{}: {e}", opts.config.display()))?;
    let current = Current::new(text, located.agents, opts.heartbeat_interval_s);
    let events = Arc::new(events::Events::new(opts.event_ring));
    let ev2 = events.clone();
    let db_path = opts.db_path();
    let db = db::Db::open(
        &db_path,
        opts.bounds,
        Box::new(move |records| {
            for r in records {
                ev2.publish(events::Payload::Failover(Arc::new(r)));
            }
        }),
    )
    .wrap_err_with(|| format!("cannot open the database {}", db_path.display()))?;
    // The file may have been edited while the hub was down: history says so.
    let latest = db.latest_history().wrap_err("cannot read the history")?;
    if latest.as_ref().map(|h| h.revision.as_str()) != Some(current.revision.as_str()) {
        db.record_history(HistoryEntry {
            revision: current.revision.clone(),
            at: Utc::now(),
            by: if latest.is_some() {
                "(changed on disk)".into()
            } else {
                "(initial)".into()
            },
            agents: current.agents.clone(),
            previous_agents: latest.map(|h| h.agents).unwrap_or_default(),
        })
        .await
        .wrap_err("cannot record the history")?;
    }
    let epoch = Utc::now().timestamp_millis().max(0) as u64;
    Ok(Arc::new(Hub {
        current: arc_swap::ArcSwap::from_pointee(current),
        write_lock: tokio::sync::Mutex::new(()),
        fleet: Mutex::new(fleet::Fleet::new(epoch).publishing(events.clone())),
        db,
        events,
        closing: tokio::sync::watch::Sender::new(false),
        opts,
    }))
}

/// Publish a config change to the event feed.
pub(crate) fn publish_config(hub: &Hub, c: &Current, by: &str) {
    hub.events
        .publish(events::Payload::Config(Arc::new(ConfigEvent {
            revision: c.revision.clone(),
            at: Utc::now(),
            by: by.to_string(),
            agents: c.agents.clone(),
        })));
}

fn spawn_sweeper(hub: &Arc<Hub>) -> tokio::task::JoinHandle<()> {
    let weak = Arc::downgrade(hub);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let Some(hub) = weak.upgrade() else { return };
            let interval = hub.opts.heartbeat_interval_s;
            if let Ok(mut f) = hub.fleet.lock() {
                f.sweep(Utc::now(), interval);
            }
        }
    })
}

/// Bind and serve in the background.
pub async fn start(opts: HubOptions) -> Result<RunningHub> {
    let listen = opts.listen;
    let tls = match &opts.tls {
        Some((cert, key)) => Some(tls::server_config(cert, key)?),
        None => None,
    };
    let hub = open(opts).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .wrap_err_with(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let app = api::router(hub.clone());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let sweeper = spawn_sweeper(&hub);
    let shutdown = async move {
        let _ = rx.await;
    };
    let task = tokio::spawn(async move {
        let r = match tls {
            Some(cfg) => {
                let listener = tls::TlsListener::new(listener, cfg);
                match listener {
                    Ok(l) => axum::serve(l, app).with_graceful_shutdown(shutdown).await,
                    Err(e) => Err(e),
                }
            }
            None => {
                axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown)
                    .await
            }
        };
        if let Err(e) = r {
            tracing::error!(error = %e, "hub server stopped");
        }
        sweeper.abort();
    });
    Ok(RunningHub {
        addr,
        hub,
        shutdown: Some(tx),
        task,
    })
}

/// `macfleet hub`: serve until Ctrl-C.
pub async fn serve(opts: HubOptions) -> Result<()> {
    let running = start(opts).await?;
    let c = running.hub.current();
    eprintln!(
        "macfleet hub {:?} listening on {} (config revision {}, agents {})",
        running.hub.opts.name,
        running.url(),
        c.revision,
        c.agents.join(",")
    );
    tokio::signal::ctrl_c()
        .await
        .wrap_err("waiting for Ctrl-C")?;
    eprintln!("stopping");
    running.stop().await;
    Ok(())
}
