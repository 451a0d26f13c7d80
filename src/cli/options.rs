//! Which command takes which of the shared flags.
//!
//! The connection flags (`--hub`, `--context`, `--ca-cert`,
//! `--allow-plaintext`), `--read-only` and `--log-file` are the TUI's, on
//! the top level; `agents` has `--file`, `--if-revision`, `--dry-run`,
//! `--force` and the rollout's `--cohort`, `--bake` and `--promote` for its
//! edits. A command that does not use one of them must
//! not take it and then ignore it (`demo --hub URL` started its own hub all
//! the same): here each command names the ones it uses, and only those are
//! copied onto it, so its `--help`, completions and man page list only
//! what works. Given before the command's name (`macfleet --hub URL get
//! agents`, as kubectl takes it), a flag the command uses is taken; one it
//! does not use is a usage error (exit 2) that says why.

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, CommandFactory, FromArgMatches};

use super::{Cli, Command as Sub};

/// The top level's flags that commands share, by clap id (the field names
/// of [`super::Global`]) and as typed.
const SHARED: [(&str, &str); 6] = [
    ("hub", "--hub"),
    ("context", "--context"),
    ("read_only", "--read-only"),
    ("log_file", "--log-file"),
    ("allow_plaintext", "--allow-plaintext"),
    ("ca_cert", "--ca-cert"),
];

/// `agents`' own, for the subcommands that use them.
const AGENTS: [&str; 7] = [
    "file",
    "if_revision",
    "dry_run",
    "force",
    "cohort",
    "bake",
    "promote",
];

const CONNECT: &[&str] = &["hub", "context", "allow_plaintext", "ca_cert"];

/// The flags a command uses, by its path of subcommand names (`[]` is the
/// TUI itself), and why the others do not apply.
fn uses(path: &[&str]) -> (&'static [&'static str], &'static str) {
    match path {
        [] => (
            &[
                "hub",
                "context",
                "read_only",
                "log_file",
                "allow_plaintext",
                "ca_cert",
            ],
            "",
        ),
        ["demo", ..] => (
            &["read_only", "log_file"],
            "the demo runs its own hub on loopback",
        ),
        ["hub"] => (
            &["allow_plaintext"],
            "the hub is a server: it connects to no hub",
        ),
        ["hub", "token"] => (&[], "it only appends to the tokens file"),
        ["hub", "tls-init"] => (&[], "it only writes certificate files"),
        ["sim"] => (CONNECT, "a simulated fleet only heartbeats"),
        ["get"] => (CONNECT, "get only reads"),
        ["agents"] => (
            &["hub", "context", "allow_plaintext", "ca_cert", "read_only"],
            "",
        ),
        ["agents", "drill"] => (CONNECT, "a drill writes nothing and reads the hub's fleet"),
        ["agents", "rollout"] => (
            &["hub", "context", "allow_plaintext", "ca_cert", "read_only"],
            "it reads, promotes or aborts the rollout on the hub",
        ),
        ["agents", "show"] => (
            &["hub", "context", "allow_plaintext", "ca_cert", "file"],
            "show changes nothing",
        ),
        ["agents", _] => (
            &[
                "hub",
                "context",
                "allow_plaintext",
                "ca_cert",
                "read_only",
                "file",
                "if_revision",
                "dry_run",
                "force",
                "cohort",
                "bake",
                "promote",
            ],
            "",
        ),
        ["context", "add"] => (
            &["hub", "read_only", "ca_cert"],
            "a context is added from --hub, --read-only and --ca-cert",
        ),
        ["context", ..] => (&[], "it reads or edits the contexts file only"),
        _ => (&[], "it connects to no hub"),
    }
}

/// The command line's definition, each command carrying the shared flags
/// it uses: what parsing, `--help`, completions and the man page all use.
pub fn command() -> Command {
    let cmd = Cli::command();
    let mut shared: Vec<Arg> = cmd
        .get_arguments()
        .filter(|a| SHARED.iter().any(|(id, _)| a.get_id() == id))
        .cloned()
        .collect();
    if let Some(agents) = cmd.find_subcommand("agents") {
        shared.extend(
            agents
                .get_arguments()
                .filter(|a| AGENTS.contains(&a.get_id().as_str()))
                .cloned(),
        );
    }
    add_used(cmd, &shared, &mut Vec::new())
}

fn add_used(mut cmd: Command, shared: &[Arg], path: &mut Vec<String>) -> Command {
    if !path.is_empty() {
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        let (used, _) = uses(&p);
        for a in shared {
            let id = a.get_id().as_str();
            let has = cmd.get_arguments().any(|x| x.get_id() == id);
            if used.contains(&id) && !has {
                cmd = cmd.arg(a.clone());
            }
        }
    }
    // In place, so that the subcommands keep their order in `--help`.
    for s in cmd.get_subcommands_mut() {
        path.push(s.get_name().to_string());
        *s = add_used(std::mem::take(s), shared, path);
        path.pop();
    }
    cmd
}

/// Parse the process's arguments: clap's own errors, and a usage error for
/// a flag before the command's name that the command does not use.
pub fn parse() -> Result<Cli, clap::Error> {
    parse_from(std::env::args_os())
}

pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut cmd = command();
    let m = cmd.try_get_matches_from_mut(args)?;
    let mut path = Vec::new();
    let mut chain = vec![&m];
    let mut leaf = &m;
    while let Some((name, sub)) = leaf.subcommand() {
        path.push(name);
        chain.push(sub);
        leaf = sub;
    }
    if !path.is_empty() {
        let (used, why) = uses(&path);
        for (id, flag) in SHARED {
            if !used.contains(&id) && given(&m, id) {
                let what = format!("macfleet {}", path.join(" "));
                let msg = format!("{flag} is not an option of `{what}`: {why}");
                return Err(cmd.error(clap::error::ErrorKind::ArgumentConflict, msg));
            }
        }
    }
    let mut cli = Cli::from_arg_matches(&m)?;
    // What the command was given itself (after its name) wins over what
    // stood before it.
    for sub in &chain[1..] {
        take_shared(&mut cli, sub);
    }
    let leaf = chain.last().copied().unwrap_or(&m);
    if let Some(Sub::Agents(a)) = &mut cli.command {
        let (used, why) = uses(&path);
        let level = chain.get(1).copied().unwrap_or(&m);
        for id in AGENTS {
            if !used.contains(&id) && given(level, id) {
                let msg = format!(
                    "--{} is not an option of `macfleet {}`: {why}",
                    id.replace('_', "-"),
                    path.join(" ")
                );
                return Err(cmd.error(clap::error::ErrorKind::ArgumentConflict, msg));
            }
        }
        if given(leaf, "file") {
            a.file = leaf.get_one::<std::path::PathBuf>("file").cloned();
        }
        if given(leaf, "if_revision") {
            a.if_revision = leaf.get_one::<String>("if_revision").cloned();
        }
        a.dry_run |= given(leaf, "dry_run");
        a.force |= given(leaf, "force");
        take_rollout(a, leaf);
        if a.cohort.is_none() && (a.bake.is_some() || a.promote.is_some()) {
            let msg = "--bake and --promote go with --cohort: they shape a staged rollout";
            return Err(cmd.error(clap::error::ErrorKind::MissingRequiredArgument, msg));
        }
        if a.file.is_some() {
            let hub_only = [
                ("--hub", cli.global.hub.is_some()),
                ("--context", cli.global.context.is_some()),
                ("--if-revision", a.if_revision.is_some()),
                ("--force", a.force),
                ("--cohort", a.cohort.is_some()),
            ];
            if let Some((flag, _)) = hub_only.iter().find(|(_, on)| *on) {
                let msg = format!(
                    "{flag} goes with the hub, not with --file: a local document is edited in place"
                );
                return Err(cmd.error(clap::error::ErrorKind::ArgumentConflict, msg));
            }
        }
    }
    Ok(cli)
}

/// The rollout's flags given after the edit's name win over those before
/// it.
fn take_rollout(a: &mut super::agents::AgentsArgs, leaf: &ArgMatches) {
    use crate::rollout::{Bake, CohortSpec, Promote};
    if given(leaf, "cohort") {
        a.cohort = leaf.get_one::<CohortSpec>("cohort").copied();
    }
    if given(leaf, "bake") {
        a.bake = leaf.get_one::<Bake>("bake").copied();
    }
    if given(leaf, "promote") {
        a.promote = leaf.get_one::<Promote>("promote").copied();
    }
}

/// Whether `id` was typed on this level of the command line (an id the
/// level does not have was not).
fn given(m: &ArgMatches, id: &str) -> bool {
    m.try_contains_id(id).unwrap_or(false) && m.value_source(id) == Some(ValueSource::CommandLine)
}

fn take_shared(cli: &mut Cli, m: &ArgMatches) {
    let g = &mut cli.global;
    if given(m, "hub") {
        g.hub = m.get_one::<String>("hub").cloned();
    }
    if given(m, "context") {
        g.context = m.get_one::<String>("context").cloned();
    }
    if given(m, "log_file") {
        g.log_file = m.get_one::<std::path::PathBuf>("log_file").cloned();
    }
    if given(m, "ca_cert") {
        g.ca_cert = m.get_one::<std::path::PathBuf>("ca_cert").cloned();
    }
    g.read_only |= given(m, "read_only");
    g.allow_plaintext |= given(m, "allow_plaintext");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &[&str]) -> String {
        match parse_from(std::iter::once("macfleet").chain(args.iter().copied())) {
            Ok(_) => panic!("{args:?} was taken"),
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "{args:?}: a usage error");
                e.to_string()
            }
        }
    }

    fn ok(args: &[&str]) -> Cli {
        parse_from(std::iter::once("macfleet").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn a_flag_a_command_does_not_use_is_a_usage_error_that_says_why() {
        // After the command's name clap itself does not know the flag.
        let e = err(&["demo", "--hub", "http://127.0.0.1:1", "--headless"]);
        assert!(e.contains("'--hub'"), "{e}");
        // Before it, the top level took it for the command: it says why not.
        let e = err(&["--hub", "http://127.0.0.1:1", "demo", "--headless"]);
        assert!(
            e.contains("--hub is not an option of `macfleet demo`"),
            "{e}"
        );
        assert!(e.contains("its own hub"), "{e}");
        let token = |extra: &[&'static str]| -> Vec<&'static str> {
            let mut v = vec!["hub", "token", "--name", "n", "--role", "owner"];
            v.extend(["--tokens", "/tmp/x"]);
            v.extend(extra);
            v
        };
        let e = err(&token(&["--hub", "http://127.0.0.1:1"]));
        assert!(e.contains("'--hub'"), "{e}");
        let mut before = vec!["--hub", "http://127.0.0.1:1"];
        before.extend(token(&[]));
        let e = err(&before);
        assert!(e.contains("`macfleet hub token`"), "{e}");
        err(&token(&["--read-only"]));
        err(&token(&["--allow-plaintext"]));
        err(&["get", "workers", "--read-only"]);
        err(&["context", "list", "--hub", "http://127.0.0.1:1"]);
        err(&["completions", "bash", "--ca-cert", "/x"]);
        let e = err(&["agents", "show", "--dry-run", "--force"]);
        assert!(e.contains("'--dry-run'"), "{e}");
        let e = err(&["agents", "--dry-run", "show"]);
        assert!(e.contains("`macfleet agents show`"), "{e}");
        let e = err(&["agents", "add", "pi", "--file", "/x.toml", "--force"]);
        assert!(e.contains("not with --file"), "{e}");
    }

    #[test]
    fn the_flags_a_command_uses_are_taken_before_or_after_it() {
        let c = ok(&["--hub", "http://127.0.0.1:1", "get", "agents"]);
        assert_eq!(c.global.hub.as_deref(), Some("http://127.0.0.1:1"));
        let c = ok(&["get", "agents", "--hub", "http://127.0.0.1:1"]);
        assert_eq!(c.global.hub.as_deref(), Some("http://127.0.0.1:1"));
        ok(&["demo", "--read-only", "--log-file", "/tmp/l"]);
        ok(&["--read-only", "--hub", "http://127.0.0.1:1"]);
        ok(&["hub", "--allow-plaintext", "--config", "c", "--tokens", "t"]);
        ok(&[
            "context",
            "add",
            "x",
            "--hub",
            "http://127.0.0.1:1",
            "--read-only",
        ]);
        ok(&["agents", "show", "--hub", "http://127.0.0.1:1"]);
        ok(&[
            "agents",
            "add",
            "pi",
            "--hub",
            "http://127.0.0.1:1",
            "--dry-run",
            "--force",
        ]);
        ok(&[
            "agents",
            "move",
            "pi",
            "0",
            "--file",
            "/x.toml",
            "--dry-run",
        ]);
    }

    #[test]
    fn an_edit_takes_the_rollouts_flags_and_only_an_edit_does() {
        use crate::rollout::{Bake, CohortSpec, Promote};
        let c = ok(&[
            "agents",
            "move",
            "pi",
            "0",
            "--cohort",
            "25%",
            "--bake",
            "5m",
            "--promote",
            "manual",
        ]);
        let Some(Sub::Agents(a)) = c.command else {
            panic!("agents")
        };
        assert_eq!(a.cohort, Some(CohortSpec::Share(25)));
        assert_eq!(a.bake, Bake::from_secs(300));
        assert_eq!(a.promote, Some(Promote::Manual));
        let c = ok(&["agents", "--cohort", "4", "add", "pi"]);
        let Some(Sub::Agents(a)) = c.command else {
            panic!("agents")
        };
        assert_eq!(a.cohort, Some(CohortSpec::Count(4)));
        ok(&["agents", "rollout"]);
        ok(&["agents", "rollout", "abort", "--read-only"]);
        let e = err(&["agents", "move", "pi", "0", "--bake", "5m"]);
        assert!(e.contains("go with --cohort"), "{e}");
        let e = err(&["agents", "move", "pi", "0", "--cohort", "60%"]);
        assert!(e.contains("from 1% to 50%"), "{e}");
        let e = err(&[
            "agents", "move", "pi", "0", "--cohort", "5%", "--bake", "1s",
        ]);
        assert!(e.contains("from 10s to 24h"), "{e}");
        err(&["agents", "rollout", "--dry-run"]);
        err(&["agents", "show", "--cohort", "10%"]);
        let e = err(&["agents", "add", "pi", "--file", "/x.toml", "--cohort", "5%"]);
        assert!(e.contains("not with --file"), "{e}");
    }

    #[test]
    fn help_lists_only_what_the_command_uses() {
        let mut cmd = command();
        let demo = cmd
            .find_subcommand_mut("demo")
            .expect("demo")
            .render_help()
            .to_string();
        for hidden in ["--hub", "--context", "--ca-cert", "--allow-plaintext"] {
            assert!(
                !demo.contains(hidden),
                "demo --help offers {hidden}:\n{demo}"
            );
        }
        assert!(demo.contains("--read-only"), "{demo}");
        let get = cmd
            .find_subcommand_mut("get")
            .expect("get")
            .render_help()
            .to_string();
        assert!(
            get.contains("--hub") && !get.contains("--read-only"),
            "{get}"
        );
        let token = cmd
            .find_subcommand_mut("hub")
            .and_then(|h| h.find_subcommand_mut("token"))
            .expect("hub token")
            .render_help()
            .to_string();
        for hidden in ["--hub", "--read-only", "--allow-plaintext", "--log-file"] {
            assert!(
                !token.contains(hidden),
                "hub token --help offers {hidden}:\n{token}"
            );
        }
    }
}
