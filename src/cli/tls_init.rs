//! `macfleet hub tls-init --dir D [--name HOST]…`: a private CA and a
//! server certificate signed by it, so a hub with TLS is two commands.
//!
//! rustls refuses a server certificate that is itself a CA (what
//! `openssl req -x509` makes by default): the server certificate here is a
//! leaf (`CA:FALSE`, serverAuth) with the names as subjectAltNames. The
//! CA's private key is not kept: nothing else can ever be signed by it.

use std::path::{Path, PathBuf};

use chrono::Datelike;
use clap::Args;
use color_eyre::eyre::{Context, Result, eyre};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::{Exit, exit};

#[derive(Debug, Args)]
pub struct TlsInitArgs {
    /// The directory to write ca.pem, hub.pem and hub.key into.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// A name clients reach the hub by (a DNS name or an IP address);
    /// repeat for several. Default: localhost, 127.0.0.1 and ::1.
    #[arg(long = "name", value_name = "HOST")]
    pub names: Vec<String>,
    /// How long the certificates hold, in days.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub days: u32,
    /// Replace certificate files that exist already.
    #[arg(long)]
    pub force: bool,
}

/// What `tls-init` wrote.
#[derive(Debug)]
pub struct TlsFiles {
    pub ca_cert: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn run(args: &TlsInitArgs) -> Result<()> {
    let files = init(args)?;
    eprintln!(
        "wrote {ca} (the CA: give it to clients), {cert} and {key} (the hub's; the key is mode 0600).
Serve HTTPS with:
  macfleet hub --config FILE --tokens FILE --listen 0.0.0.0:7878 --tls-cert {cert} --tls-key {key}
Trust it from a client with --ca-cert {ca}, or keep it in a context:
  macfleet context add NAME --hub https://HOST:7878 --token-file FILE --ca-cert {ca}",
        ca = files.ca_cert.display(),
        cert = files.cert.display(),
        key = files.key.display(),
    );
    Ok(())
}

/// Make the CA and the server certificate; refuse to replace files that
/// exist unless `force`.
pub fn init(args: &TlsInitArgs) -> Result<TlsFiles> {
    let names = if args.names.is_empty() {
        vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
    } else {
        args.names.clone()
    };
    if let Some(bad) = names.iter().find(|n| {
        n.is_empty() || n.len() > 253 || n.chars().any(|c| c.is_whitespace() || c.is_control())
    }) {
        return Err(eyre!(Exit::new(
            exit::USAGE,
            format!("--name {bad:?} is not a host name or an IP address")
        )));
    }
    let files = TlsFiles {
        ca_cert: args.dir.join("ca.pem"),
        cert: args.dir.join("hub.pem"),
        key: args.dir.join("hub.key"),
    };
    if !args.force {
        if let Some(p) = [&files.ca_cert, &files.cert, &files.key]
            .into_iter()
            .find(|p| p.exists())
        {
            return Err(eyre!(Exit::new(
                exit::USAGE,
                format!("{} exists already (--force replaces it)", p.display())
            )));
        }
    }
    let now = chrono::Utc::now();
    let day = |d: chrono::DateTime<chrono::Utc>| {
        // rcgen takes whole days; month and day always fit a u8.
        rcgen::date_time_ymd(d.year(), d.month() as u8, d.day() as u8)
    };
    let not_before = day(now - chrono::Duration::days(1));
    let not_after = day(now + chrono::Duration::days(i64::from(args.days)));

    let mut ca = CertificateParams::new(Vec::<String>::new()).wrap_err("CA parameters")?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name.push(
        DnType::CommonName,
        format!("macfleet private CA for {}", names[0]),
    );
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_key = KeyPair::generate().wrap_err("cannot make the CA's key")?;
    let ca_cert = ca
        .self_signed(&ca_key)
        .wrap_err("cannot sign the CA certificate")?;
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(names.clone())
        .map_err(|e| eyre!(Exit::new(exit::USAGE, format!("bad --name: {e}"))))?;
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.distinguished_name
        .push(DnType::CommonName, names[0].clone());
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    leaf.not_before = not_before;
    leaf.not_after = not_after;
    let leaf_key = KeyPair::generate().wrap_err("cannot make the hub's key")?;
    let leaf_cert = leaf
        .signed_by(&leaf_key, &issuer)
        .wrap_err("cannot sign the hub's certificate")?;

    std::fs::create_dir_all(&args.dir)
        .wrap_err_with(|| format!("cannot make the directory {}", args.dir.display()))?;
    write(&files.key, leaf_key.serialize_pem().as_bytes(), 0o600)?;
    // The chain the hub serves: its own certificate, then the CA's.
    let chain = format!("{}{}", leaf_cert.pem(), ca_cert.pem());
    write(&files.cert, chain.as_bytes(), 0o644)?;
    write(&files.ca_cert, ca_cert.pem().as_bytes(), 0o644)?;
    Ok(files)
}

fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    // Written 0600 (the temporary file's mode), then opened up if asked:
    // a key is never readable by others, not even for a moment.
    if path.exists() {
        restrict(path, 0o600)?;
    }
    crate::hub::store::write_atomic(path, bytes)
        .wrap_err_with(|| format!("cannot write {}", path.display()))?;
    restrict(path, mode)
}

fn restrict(path: &Path, mode: u32) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .wrap_err_with(|| format!("cannot set the mode of {}", path.display()))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}
