//! Stretches of the SQLite event log recently read by this host's projection workers, shared
//! among them: the four workers tail the same log a few hundred events apart, so one read of
//! a stretch serves all of them instead of each copying the same rows out of SQLite (a profile
//! of the write benchmark put a fifth of the process's CPU in those copies; BENCHMARKS.md).
//!
//! Only SQLite uses it, where a read returns a prefix of the committed log after a position
//! (one writer at a time, positions in commit order) and the log is append-only: a stretch
//! read once holds every event between its ends, forever. PostgreSQL workers read under the
//! transaction horizon, inside their transaction, and do not use it.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use crate::events::StoredEvent;

/// How many stretches are kept (each at most one batch): enough for the workers' spread
/// under load, a few MiB at most.
const STRETCHES: usize = 8;

/// Shared by the workers of one host; cheap to clone.
#[derive(Clone, Default)]
pub struct LogCache {
    stretches: Arc<Mutex<VecDeque<Stretch>>>,
}

/// Every event with `after < position <= events.last().position`, in log order.
struct Stretch {
    after: i64,
    events: Arc<[StoredEvent]>,
    /// The read asked for this many and got them all: the log may go on past the stretch.
    full: bool,
}

/// A batch of events after a position: read by its worker, or a part of a shared stretch.
pub struct EventBatch {
    events: Arc<[StoredEvent]>,
    range: Range<usize>,
    /// Cut short by the end of a full stretch: more events are known to follow.
    pub more_follow: bool,
}

impl EventBatch {
    pub fn events(&self) -> &[StoredEvent] {
        &self.events[self.range.clone()]
    }

    fn whole(events: Arc<[StoredEvent]>) -> Self {
        Self {
            range: 0..events.len(),
            events,
            more_follow: false,
        }
    }
}

impl From<Vec<StoredEvent>> for EventBatch {
    /// A whole read of its own.
    fn from(events: Vec<StoredEvent>) -> Self {
        Self::whole(events.into())
    }
}

impl LogCache {
    /// Up to `limit` events right after `after`, from a stretch already read, if one covers
    /// them: all `limit`, or those up to the end of a stretch that was a full read (the rest
    /// follow in the next batch). `None` when the log must be read.
    pub fn batch_after(&self, after: i64, limit: usize) -> Option<EventBatch> {
        let stretches = self
            .stretches
            .lock()
            .expect("the log cache lock is never poisoned");
        let mut best: Option<EventBatch> = None;
        for stretch in stretches.iter() {
            let Some(last) = stretch.events.last() else {
                continue;
            };
            if stretch.after > after || last.position <= after {
                continue;
            }
            let start = stretch
                .events
                .partition_point(|event| event.position <= after);
            let available = stretch.events.len() - start;
            let candidate = if available >= limit {
                EventBatch {
                    events: stretch.events.clone(),
                    range: start..start + limit,
                    more_follow: false,
                }
            } else if stretch.full {
                EventBatch {
                    events: stretch.events.clone(),
                    range: start..stretch.events.len(),
                    more_follow: true,
                }
            } else {
                // The stretch reached the head of the log when it was read; newer events may
                // have been committed since, so read the log itself.
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|best| candidate.range.len() > best.range.len())
            {
                best = Some(candidate);
            }
        }
        best
    }

    /// Keeps `events`, the answer to a read after `after` (`full`: the read got every event it
    /// asked for, so more may follow), and returns them as a batch.
    pub fn insert(&self, after: i64, events: Vec<StoredEvent>, full: bool) -> EventBatch {
        let events: Arc<[StoredEvent]> = events.into();
        let mut batch = EventBatch::whole(events.clone());
        batch.more_follow = full;
        if !events.is_empty() {
            let mut stretches = self
                .stretches
                .lock()
                .expect("the log cache lock is never poisoned");
            if stretches.len() == STRETCHES {
                stretches.pop_front();
            }
            stretches.push_back(Stretch {
                after,
                events,
                full,
            });
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(position: i64) -> StoredEvent {
        StoredEvent {
            position,
            transaction_id: 0,
            id: format!("event-{position}"),
            tenant_id: "tenant".into(),
            sequence: position,
            event_type: "entity.created".into(),
            entity_id: None,
            intention_id: None,
            actor_id: None,
            correlation_id: None,
            depth: 0,
            data: "{}".into(),
            occurred_at: "2026-11-23T00:00:00.000000Z".into(),
            entity_state: None,
            traceparent: None,
            group_offset: 0,
        }
    }

    fn positions(batch: &EventBatch) -> Vec<i64> {
        batch.events().iter().map(|event| event.position).collect()
    }

    #[test]
    fn a_full_read_serves_later_requests_inside_it() {
        let cache = LogCache::default();
        let read = cache.insert(10, (11..=15).map(event).collect(), true);
        assert_eq!(positions(&read), vec![11, 12, 13, 14, 15]);
        assert!(read.more_follow, "a full read may have more behind it");
        // Starting inside the stretch: what is left of it, and more follow.
        let later = cache.batch_after(12, 5).expect("covered");
        assert_eq!(positions(&later), vec![13, 14, 15]);
        assert!(later.more_follow);
        // Smaller batches are served whole.
        let small = cache.batch_after(11, 2).expect("covered");
        assert_eq!(positions(&small), vec![12, 13]);
        assert!(!small.more_follow);
        // Past the stretch, or before it: the log must be read.
        assert!(cache.batch_after(15, 5).is_none());
        assert!(cache.batch_after(9, 5).is_none());
    }

    #[test]
    fn a_read_that_reached_the_head_does_not_answer_for_what_came_after() {
        let cache = LogCache::default();
        cache.insert(0, (1..=3).map(event).collect(), false);
        // Asking for 5 after 1 could miss events committed after the read.
        assert!(cache.batch_after(1, 5).is_none());
        // Asking for no more than the stretch holds is fine.
        assert_eq!(positions(&cache.batch_after(1, 2).unwrap()), vec![2, 3]);
    }

    #[test]
    fn gaps_in_positions_stay_inside_the_stretch_that_read_them() {
        let cache = LogCache::default();
        cache.insert(0, [1, 2, 7, 9].into_iter().map(event).collect(), true);
        assert_eq!(positions(&cache.batch_after(3, 4).unwrap()), vec![7, 9]);
        assert_eq!(positions(&cache.batch_after(2, 1).unwrap()), vec![7]);
    }

    #[test]
    fn the_cache_keeps_only_the_latest_stretches() {
        let cache = LogCache::default();
        for stretch in 0..(STRETCHES as i64 + 1) {
            let first = stretch * 2 + 1;
            cache.insert(first - 1, vec![event(first), event(first + 1)], true);
        }
        assert!(cache.batch_after(0, 2).is_none(), "the oldest is gone");
        assert_eq!(positions(&cache.batch_after(2, 2).unwrap()), vec![3, 4]);
    }
}
