//! Caps on open event streams (`GET /v1/events`): per token and in total,
//! so that subscribers that connect and never read cannot multiply without
//! bound (issue #10 item 3). Each stream's own buffer is bounded in `api`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Which cap a new stream met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamsFull {
    #[error("this token already has {0} event streams open")]
    Token(usize),
    #[error("the hub already has {0} event streams open")]
    Total(usize),
}

#[derive(Default)]
struct Open {
    total: usize,
    by_token: HashMap<String, usize>,
}

/// The open streams, counted by token name.
pub struct StreamSlots {
    per_token: usize,
    total: usize,
    open: Mutex<Open>,
}

/// One open stream; its slot is given back when this is dropped.
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    name: String,
}

impl StreamSlots {
    pub fn new(per_token: usize, total: usize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            per_token: per_token.max(1),
            total: total.max(1),
            open: Mutex::new(Open::default()),
        })
    }

    /// Streams open now, in all.
    pub fn open_total(&self) -> usize {
        match self.open.lock() {
            Ok(o) => o.total,
            Err(p) => p.into_inner().total,
        }
    }

    /// Take a slot for a stream of the token named `name`.
    pub fn open(self: &Arc<Self>, name: &str) -> Result<StreamSlot, StreamsFull> {
        let mut open = match self.open.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        if open.total >= self.total {
            return Err(StreamsFull::Total(self.total));
        }
        let mine = open.by_token.get(name).copied().unwrap_or(0);
        if mine >= self.per_token {
            return Err(StreamsFull::Token(self.per_token));
        }
        open.total += 1;
        *open.by_token.entry(name.to_string()).or_insert(0) += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            name: name.to_string(),
        })
    }

    /// Streams open now.
    pub fn open_count(&self) -> usize {
        self.open.lock().map_or(0, |o| o.total)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = match self.slots.open.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_token.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                open.by_token.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_token_and_in_total_and_slots_come_back() {
        let s = StreamSlots::new(2, 3);
        let a1 = s.open("a").expect("a1");
        let _a2 = s.open("a").expect("a2");
        assert_eq!(s.open("a").err(), Some(StreamsFull::Token(2)));
        let _b1 = s.open("b").expect("b1");
        assert_eq!(s.open("c").err(), Some(StreamsFull::Total(3)));
        assert_eq!(s.open_count(), 3);
        drop(a1);
        assert_eq!(s.open_count(), 2);
        let _c1 = s.open("c").expect("a slot came back");
    }
}
