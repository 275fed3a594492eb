//! Group commit: every file commit of the store goes through one committer thread, which
//! decides the commits waiting in its queue one by one, in arrival order, inside one shared
//! write transaction, and makes them durable with that transaction's one fsync; each caller
//! is answered only after it. While one batch is being made durable, the next one queues,
//! so under load one fsync serves many writes, and a lone writer waits for nothing but its
//! own fsync.
//!
//! Every rule stays per commit: `apply_in` checks a commit's conditions (the head it
//! expects, its idempotency key, the file quota) against the batch's transaction as the
//! commits before it in the batch left it, and a refused commit returns before it writes
//! anything, so it changes nothing and does not affect its neighbours. A storage error
//! fails the whole batch (nothing of it is committed), and every caller is told.
//!
//! A caller's own batch (`CommitStore::commit_many`, a fork's merge) is one job: all its
//! commits are judged before any writes (`apply_many_in`), so it applies whole or not at
//! all, inside the same shared transaction; readers (who read committed transactions
//! only) see all of it or none.

use super::{apply_in, apply_many_in, db_err};
use redb::Database;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Weak};
use tokio::sync::oneshot;
use workspace_core::ports::{BatchOutcome, Commit, CommitOutcome};
use workspace_core::{Result, WorkspaceError};

/// The most commits decided in one transaction.
const MAX_BATCH: usize = 256;

enum Job {
    One {
        commit: Box<Commit>,
        reply: oneshot::Sender<Result<CommitOutcome>>,
    },
    /// A caller's batch, all or nothing.
    Many {
        commits: Vec<Commit>,
        reply: oneshot::Sender<Result<BatchOutcome>>,
    },
}

impl Job {
    fn commits(&self) -> u64 {
        match self {
            Job::One { .. } => 1,
            Job::Many { commits, .. } => commits.len() as u64,
        }
    }

    /// Tells the caller what its job decided (or the batch's error).
    fn answer(self, decided: Result<Decided>) {
        let mismatch = || WorkspaceError::internal("group commit: a job's answer mismatched");
        match self {
            Job::One { reply, .. } => {
                let _ = reply.send(decided.and_then(|d| match d {
                    Decided::One(o) => Ok(o),
                    Decided::Many(_) => Err(mismatch()),
                }));
            }
            Job::Many { reply, .. } => {
                let _ = reply.send(decided.and_then(|d| match d {
                    Decided::Many(o) => Ok(o),
                    Decided::One(_) => Err(mismatch()),
                }));
            }
        }
    }
}

/// What a job decided.
enum Decided {
    One(CommitOutcome),
    Many(BatchOutcome),
}

/// Commits and transactions so far (a test's proof that batches form).
#[derive(Debug, Default)]
pub struct CommitStats {
    pub commits: AtomicU64,
    pub transactions: AtomicU64,
}

pub(crate) struct Committer {
    jobs: mpsc::Sender<Job>,
    pub(crate) stats: Arc<CommitStats>,
}

impl Committer {
    /// The thread holds the database weakly: dropping the store closes the file at once.
    pub(crate) fn start(db: &Arc<Database>) -> Result<Committer> {
        let (jobs, queue) = mpsc::channel();
        let stats = Arc::new(CommitStats::default());
        let (weak, counted) = (Arc::downgrade(db), stats.clone());
        std::thread::Builder::new()
            .name("redb-group-commit".to_owned())
            .spawn(move || run(&weak, &queue, &counted))
            .map_err(db_err)?;
        Ok(Committer { jobs, stats })
    }

    pub(crate) async fn commit(&self, commit: Commit) -> Result<CommitOutcome> {
        let (reply, answer) = oneshot::channel();
        let stopped = || WorkspaceError::internal("embedded store: the committer stopped");
        self.jobs
            .send(Job::One {
                commit: Box::new(commit),
                reply,
            })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    pub(crate) async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        let (reply, answer) = oneshot::channel();
        let stopped = || WorkspaceError::internal("embedded store: the committer stopped");
        self.jobs
            .send(Job::Many { commits, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn run(db: &Weak<Database>, queue: &mpsc::Receiver<Job>, stats: &CommitStats) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        batch.extend(queue.try_iter().take(MAX_BATCH - 1));
        let decided = match db.upgrade() {
            Some(db) => decide(&db, &batch),
            None => Err(WorkspaceError::internal("embedded store: closed")),
        };
        stats.transactions.fetch_add(1, Ordering::Relaxed);
        stats
            .commits
            .fetch_add(batch.iter().map(Job::commits).sum(), Ordering::Relaxed);
        match decided {
            Ok(outcomes) => {
                for (job, outcome) in batch.into_iter().zip(outcomes) {
                    job.answer(Ok(outcome));
                }
            }
            Err(e) => {
                for job in batch {
                    job.answer(Err(e.clone()));
                }
            }
        }
    }
}

/// The batch in one write transaction, made durable by its commit (one fsync).
fn decide(db: &Database, batch: &[Job]) -> Result<Vec<Decided>> {
    let txn = db.begin_write().map_err(db_err)?;
    let mut outcomes = Vec::with_capacity(batch.len());
    for job in batch {
        outcomes.push(match job {
            Job::One { commit, .. } => Decided::One(apply_in(&txn, commit)?),
            Job::Many { commits, .. } => Decided::Many(apply_many_in(&txn, commits)?),
        });
    }
    txn.commit().map_err(db_err)?;
    Ok(outcomes)
}
