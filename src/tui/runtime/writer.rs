//! The config write through the session's one [`Writer`], as a task that
//! answers the loop: `Msg::Written` for an answered write, and for a write
//! whose answer was lost (issue 27) `Msg::WriteLost` at once ("may not have
//! been written: checking"), then `Msg::WriteChecked` once the hub has been
//! asked again by the write's Idempotency-Key, or `Msg::WriteUnknown` (with
//! the key, to ask again when the hub answers) when it could not be asked.

use tokio::sync::mpsc;

use crate::client::{ClientError, WriteError, Writer, new_idempotency_key};
use crate::tui::msg::Msg;

/// `PUT` `text` with `If-Match: if_match` and the Idempotency-Key `key`
/// (a fresh one for a new write; the lost write's own for a recheck). A
/// recheck's answer is always `WriteChecked`: it is the first write's.
pub fn send(
    writer: Option<Writer>,
    tx: mpsc::Sender<Msg>,
    text: String,
    if_match: String,
    key: Option<String>,
) {
    tokio::spawn(async move {
        let msg = put(writer, &tx, text, if_match, key).await;
        let _ = tx.send(msg).await;
    });
}

async fn put(
    writer: Option<Writer>,
    tx: &mpsc::Sender<Msg>,
    text: String,
    if_match: String,
    key: Option<String>,
) -> Msg {
    let Some(w) = writer else {
        return Msg::Written(Err(ClientError::Forbidden(
            "this session holds no writer (read-only, or not an owner): nothing was sent".into(),
        )));
    };
    let recheck = key.is_some();
    let key = key.unwrap_or_else(new_idempotency_key);
    let mut lost = recheck;
    let r = w
        .put_config_keyed(&text, &if_match, &key, |why| {
            lost = true;
            let _ = tx.try_send(Msg::WriteLost {
                why: why.to_string(),
            });
        })
        .await;
    tracing::info!(ok = r.is_ok(), lost, recheck, "config write answered");
    match r {
        Ok(written) if lost || written.lost.is_some() => Msg::WriteChecked(Ok(written.accepted)),
        Ok(written) => Msg::Written(Ok(written.accepted)),
        Err(WriteError::Refused(e)) if lost => Msg::WriteChecked(Err(e)),
        Err(WriteError::Refused(e)) => Msg::Written(Err(e)),
        Err(e @ WriteError::Unknown { .. }) => Msg::WriteUnknown {
            text,
            if_match,
            key,
            error: e.to_string(),
        },
    }
}
