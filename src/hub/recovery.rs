//! The recovery log: workers back on a higher rung of the same list
//! revision (`fleet::Recovery`, found by `Fleet::record_moves_at`), paged like
//! the failover log (`GET /v1/recoveries`). Kept in the database beside the
//! failover log (`db::Db::queue_recovery`, `db::Db::recoveries`), bounded
//! like it with the same fair share per pool; a recovery commits with the
//! next batch without holding its heartbeat, and is counted and published
//! (`recovery` event) once committed, with its seq. Seqs carry on across
//! restarts from the first start's time in milliseconds × 1,000.

use super::Hub;
use super::fleet::Recovery;

pub use super::db::RecoveryFilter;

impl Hub {
    /// Queue a recovery for the next batch. Called under the fleet lock,
    /// right after the heartbeat that showed it; never waits on the disk.
    pub(crate) fn record_recovery(&self, r: Recovery) {
        self.db.queue_recovery(r);
    }
}
