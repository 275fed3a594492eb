//! The example subscriber on the emulator, fed the events the real stream publisher makes
//! from the table's stream: the index is right after a burst of changes, redelivered and
//! out-of-order events change nothing, and its own writes trigger nothing.

use async_trait::async_trait;
use fn_index::{IndexKeeper, Outcome};
use std::future::Future;
use std::pin::Pin as StdPin;
use std::sync::{Arc, Mutex};
use workspace_core::events::WorkspaceEvent;
use workspace_core::model::IdempotencyRecord;
use workspace_core::ports::{
    BatchOutcome, Commit, CommitOutcome, CommitStore, FromCommittedState, MetaPorts, RandomIds,
    SystemClock,
};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Result, Scope, WorkspaceService};
use workspace_store_aws::events::{plan, Work};
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

fn service(env: &common::Env) -> WorkspaceService {
    WorkspaceService::new(
        Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table)),
        Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket)),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
}

fn agent() -> Identity {
    Identity::read_write(Scope::parse("acme", "main").unwrap(), "agent-7")
}

fn put(path: &str, content: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// The events of every committed change so far, as the publisher announces them.
async fn announced(env: &common::Env) -> Vec<WorkspaceEvent> {
    common::stream_records(env.stream_arn.as_deref().expect("stream"))
        .await
        .iter()
        .filter_map(|r| match plan(r) {
            Ok(Some(Work::Announce(e))) => Some(*e),
            _ => None,
        })
        .collect()
}

async fn index_of(svc: &WorkspaceService) -> (String, u64) {
    let f = svc
        .get(&agent(), &FilePath::parse("memory/INDEX.md").unwrap(), None)
        .await
        .expect("the index exists");
    (String::from_utf8(f.content).unwrap(), f.meta.version)
}

#[tokio::test]
async fn the_index_follows_a_burst_and_redelivery_order_and_its_own_writes_change_nothing() {
    let env = common::fresh(None).await;
    let svc = service(&env);
    let who = agent();
    svc.put(&who, put("memory/a.md", "first")).await.unwrap();
    svc.put(&who, put("memory/b.md", "bee")).await.unwrap();
    svc.put(&who, put("notes/elsewhere.md", "x")).await.unwrap();
    svc.put(&who, put("memory/a.md", "second version"))
        .await
        .unwrap();
    svc.delete(&who, &FilePath::parse("memory/b.md").unwrap(), None)
        .await
        .unwrap();
    let burst = announced(&env).await;
    assert_eq!(burst.len(), 5);

    let keeper = IndexKeeper::new(service(&env), "memory/", "memory/INDEX.md").unwrap();
    let mut outcomes = Vec::new();
    for e in &burst {
        outcomes.push(keeper.on_event(e).await.unwrap());
    }
    // The first event in its prefix writes the index as the workspace is now; the rest
    // find it right already; the one outside the prefix is ignored.
    assert_eq!(outcomes[0], Outcome::Written { version: 1 });
    assert_eq!(outcomes[2], Outcome::Ignored("outside memory/".to_owned()));
    assert!(
        outcomes[3..].iter().all(|o| *o == Outcome::Unchanged),
        "{outcomes:?}"
    );
    let (text, version) = index_of(&svc).await;
    assert!(
        text.contains("- [memory/a.md](memory/a.md): 14 bytes, version 2"),
        "{text}"
    );
    assert!(
        !text.contains("memory/b.md"),
        "a deleted file is gone: {text}"
    );
    assert!(!text.contains("elsewhere"), "{text}");
    assert_eq!(version, 1);

    // Redelivered, and out of order: nothing new.
    for e in burst.iter().rev() {
        let o = keeper.on_event(e).await.unwrap();
        assert!(
            matches!(o, Outcome::Unchanged | Outcome::Ignored(_)),
            "{o:?}"
        );
    }
    assert_eq!(index_of(&svc).await.1, 1);

    // Its own write is an event too, and triggers nothing.
    let own: Vec<WorkspaceEvent> = announced(&env)
        .await
        .into_iter()
        .filter(|e| e.path == "memory/INDEX.md")
        .collect();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].principal, "index-subscriber");
    assert_eq!(
        keeper.on_event(&own[0]).await.unwrap(),
        Outcome::Ignored("the index itself".to_owned())
    );

    // A later change, and an index someone edited meanwhile: rebuilt over it with If-Match.
    svc.put(&who, put("memory/c.md", "sea")).await.unwrap();
    svc.put(&who, put("memory/INDEX.md", "hand edit"))
        .await
        .unwrap();
    let later = announced(&env)
        .await
        .into_iter()
        .find(|e| e.path == "memory/c.md")
        .unwrap();
    assert_eq!(
        keeper.on_event(&later).await.unwrap(),
        Outcome::Written { version: 3 }
    );
    let (text, _) = index_of(&svc).await;
    assert!(
        text.contains("memory/c.md") && !text.contains("hand edit"),
        "{text}"
    );
}

/// What `sam local invoke IndexFunction -e events/workspace-updated.json` hands the
/// function parses into the type it declares.
#[test]
fn the_recorded_event_is_what_the_function_takes() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../events/workspace-updated.json"),
    )
    .unwrap();
    let e: aws_lambda_events::eventbridge::EventBridgeEvent<WorkspaceEvent> =
        serde_json::from_str(&text).unwrap();
    assert_eq!(e.detail.path, "memory/notes/2026-11-24.md");
    assert_eq!(e.source, "agent-workspace");
}

/// Someone else's writes, made just before the keeper's write of the index reaches the
/// store (after the keeper read the index and listed the prefix).
type Interference = Arc<dyn Fn() -> StdPin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// DynamoDB's commits, with a hook that runs before commits of the index path, and a
/// record of whether each such commit applied (wired as the commit port alone: every
/// other port is the table's).
struct RacingCommits {
    inner: Arc<DynamoMeta>,
    index: String,
    /// How many more index commits to interfere with, and how.
    armed: Mutex<Option<(usize, Interference)>>,
    /// One entry per commit of the index: whether it applied.
    index_commits: Mutex<Vec<bool>>,
}

impl RacingCommits {
    fn interfere(&self, times: usize, with: Interference) {
        *self.armed.lock().unwrap() = Some((times, with));
    }

    fn index_commits(&self) -> Vec<bool> {
        self.index_commits.lock().unwrap().clone()
    }
}

#[async_trait]
impl CommitStore for RacingCommits {
    async fn idempotency(&self, s: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.inner.idempotency(s, key).await
    }

    async fn commit(&self, commit: Commit) -> Result<CommitOutcome> {
        let is_index = commit.path.as_str() == self.index;
        if is_index {
            let hook = {
                let mut armed = self.armed.lock().unwrap();
                match armed.as_mut() {
                    Some((times, with)) if *times > 0 => {
                        *times -= 1;
                        Some(with.clone())
                    }
                    _ => None,
                }
            };
            if let Some(with) = hook {
                with().await;
            }
        }
        let outcome = self.inner.commit(commit).await;
        if is_index {
            self.index_commits
                .lock()
                .unwrap()
                .push(matches!(outcome, Ok(CommitOutcome::Committed { .. })));
        }
        outcome
    }

    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        self.inner.commit_many(commits).await
    }

    fn fits_one_commit(&self, commits: &[Commit]) -> bool {
        self.inner.fits_one_commit(commits)
    }
}

/// The index changes between the keeper's read and its conditional write (a person's
/// edit, another delivery): the write gets 409, and the keeper reads again, rebuilds from
/// the workspace as it is then, and writes over it, both when the index did not exist yet
/// (`If-None-Match: *`) and when it did (`If-Match`). One that keeps losing gives up with
/// an error (so EventBridge retries the event), and the retried event makes it right.
#[tokio::test]
async fn a_409_between_read_and_write_is_retried_into_a_correct_index() {
    let env = common::fresh(None).await;
    let svc = Arc::new(service(&env));
    let who = agent();
    svc.put(&who, put("memory/a.md", "first")).await.unwrap();
    let table = Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table));
    let racing = Arc::new(RacingCommits {
        inner: table.clone(),
        index: "memory/INDEX.md".to_owned(),
        armed: Mutex::new(None),
        index_commits: Mutex::new(Vec::new()),
    });
    let bodies = Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket));
    let keeper_files = WorkspaceService::wired(
        MetaPorts {
            commits: racing.clone(),
            ..MetaPorts::of(table)
        },
        bodies.clone(),
        bodies,
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    );
    let keeper = IndexKeeper::new(keeper_files, "memory/", "memory/INDEX.md").unwrap();
    let event_for = |path: &'static str| {
        let env = &env;
        async move {
            announced(env)
                .await
                .into_iter()
                .rev()
                .find(|e| e.path == path)
                .unwrap()
        }
    };

    // No index yet: between the keeper's read and its If-None-Match write, someone adds a
    // file and creates the index by hand.
    let other = svc.clone();
    racing.interfere(
        1,
        Arc::new(move || {
            let svc = other.clone();
            Box::pin(async move {
                svc.put(&agent(), put("memory/late.md", "came in between"))
                    .await
                    .unwrap();
                svc.put(&agent(), put("memory/INDEX.md", "a hand-made index"))
                    .await
                    .unwrap();
            })
        }),
    );
    let e = event_for("memory/a.md").await;
    assert_eq!(
        keeper.on_event(&e).await.unwrap(),
        Outcome::Written { version: 2 }
    );
    assert_eq!(
        racing.index_commits(),
        [false, true],
        "the first write was refused (409), the retry applied"
    );
    let (text, version) = index_of(&svc).await;
    assert_eq!(version, 2);
    assert!(
        text.contains("- [memory/a.md](memory/a.md): 5 bytes, version 1")
            && text.contains("- [memory/late.md](memory/late.md): 15 bytes, version 1")
            && !text.contains("hand-made"),
        "{text}"
    );

    // An index that exists: between the read and the If-Match write, it is edited and a
    // file goes away.
    svc.put(&who, put("memory/b.md", "bee")).await.unwrap();
    let other = svc.clone();
    racing.interfere(
        1,
        Arc::new(move || {
            let svc = other.clone();
            Box::pin(async move {
                svc.put(&agent(), put("memory/INDEX.md", "edited by hand"))
                    .await
                    .unwrap();
                svc.delete(&agent(), &FilePath::parse("memory/late.md").unwrap(), None)
                    .await
                    .unwrap();
            })
        }),
    );
    let e = event_for("memory/b.md").await;
    assert_eq!(
        keeper.on_event(&e).await.unwrap(),
        Outcome::Written { version: 4 }
    );
    assert_eq!(racing.index_commits(), [false, true, false, true]);
    let (text, _) = index_of(&svc).await;
    assert!(
        text.contains("memory/a.md")
            && text.contains("- [memory/b.md](memory/b.md): 3 bytes, version 1")
            && !text.contains("late.md")
            && !text.contains("by hand"),
        "{text}"
    );
    // A redelivery of either event finds it right.
    assert_eq!(keeper.on_event(&e).await.unwrap(), Outcome::Unchanged);

    // An index that changes before every write: the keeper gives up after its rounds with
    // an error (the event is retried), having written nothing of its own.
    svc.put(&who, put("memory/c.md", "sea")).await.unwrap();
    let other = svc.clone();
    let edits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = edits.clone();
    racing.interfere(
        usize::MAX,
        Arc::new(move || {
            let (svc, n) = (
                other.clone(),
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
            );
            Box::pin(async move {
                svc.put(&agent(), put("memory/INDEX.md", &format!("busy {n}")))
                    .await
                    .unwrap();
            })
        }),
    );
    let e = event_for("memory/c.md").await;
    let before = racing.index_commits().len();
    let err = keeper.on_event(&e).await.unwrap_err();
    assert!(err.to_string().contains("kept changing"), "{err}");
    let rounds = &racing.index_commits()[before..];
    assert!(
        !rounds.is_empty() && rounds.iter().all(|applied| !applied),
        "{rounds:?}"
    );
    assert_eq!(
        rounds.len(),
        edits.load(std::sync::atomic::Ordering::SeqCst)
    );
    // The retried event, with the index quiet again, makes it right.
    racing.interfere(0, Arc::new(|| Box::pin(async {})));
    assert!(matches!(
        keeper.on_event(&e).await.unwrap(),
        Outcome::Written { .. }
    ));
    let (text, _) = index_of(&svc).await;
    assert!(
        text.contains("memory/c.md") && !text.contains("busy"),
        "{text}"
    );
}
