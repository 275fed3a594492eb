//! Counts of what one request did in the domain (secrets redacted, index changes a search
//! caught up, files a merge wrote), for a transport that reports them per request (the
//! Lambda functions, as CloudWatch metrics). The domain only counts: it knows no metric
//! format or sink.
//!
//! A task-local scope rather than a port: the counts are per request while the services
//! are built once per process, so a port would have to be threaded through every service
//! call that can count. A transport runs the request inside [`scope`] and reads the counts
//! afterwards; outside a scope (the local server, tests, background work) [`add`] does
//! nothing. Work a request spawns onto another task is outside its scope; nothing counted
//! here runs on one.

use std::future::Future;
use std::sync::{Arc, Mutex};

/// What the domain counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Secrets redacted from text about to be stored (WSR-1).
    Redactions,
    /// Changes a search applied to its index before answering.
    SearchCatchUp,
    /// Files a fork merge wrote to its parent.
    MergeFiles,
}

/// The counts of one request: `None` where the request did nothing of the kind, `Some(0)`
/// where it did and counted nothing (a write with nothing to redact, a search whose index
/// was current).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub redactions: Option<u64>,
    pub search_catch_up: Option<u64>,
    pub merge_files: Option<u64>,
}

impl Counts {
    fn slot(&mut self, counter: Counter) -> &mut Option<u64> {
        match counter {
            Counter::Redactions => &mut self.redactions,
            Counter::SearchCatchUp => &mut self.search_catch_up,
            Counter::MergeFiles => &mut self.merge_files,
        }
    }
}

tokio::task_local! {
    static COUNTS: Arc<Mutex<Counts>>;
}

/// Adds `n` to `counter` of the request in progress; nothing outside a [`scope`].
pub fn add(counter: Counter, n: u64) {
    let _ = COUNTS.try_with(|c| {
        if let Ok(mut c) = c.lock() {
            let slot = c.slot(counter);
            *slot = Some(slot.unwrap_or(0).saturating_add(n));
        }
    });
}

/// Runs `request` counting what it does; returns its output and the counts.
pub async fn scope<F: Future>(request: F) -> (F::Output, Counts) {
    let counts = Arc::new(Mutex::new(Counts::default()));
    let out = COUNTS.scope(counts.clone(), request).await;
    let counts = counts.lock().map(|c| *c).unwrap_or_default();
    (out, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_only_inside_a_scope() {
        add(Counter::Redactions, 5);
        let ((), counts) = scope(async {
            add(Counter::Redactions, 2);
            add(Counter::Redactions, 1);
            add(Counter::SearchCatchUp, 0);
        })
        .await;
        assert_eq!(
            counts,
            Counts {
                redactions: Some(3),
                search_catch_up: Some(0),
                merge_files: None
            }
        );
        let ((), again) = scope(async {}).await;
        assert_eq!(again, Counts::default(), "a scope starts from nothing");
    }
}
