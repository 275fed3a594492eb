//! A merge's plan: the record a merge too large for one commit of its store (on DynamoDB,
//! more than one `TransactWriteItems` takes) writes before it changes anything, so that a
//! retry with the same `Idempotency-Key` finishes exactly that merge (`service/forks`).
//!
//! It names every change with the head it expects in the target (the etag the merge
//! compared, or none) and the head it leaves there (`done`), so a retry tells a change
//! already applied from one still to apply, and the bodies uploaded for it (kept by the
//! sweeper while the plan lives: [`bodies_named`]). It is kept in the target's scope as a
//! record of kind [`MERGE_PLAN_KIND`] under the merge's `Idempotency-Key` (or its id).

use crate::model::{BodyRef, Head};
use serde::{Deserialize, Serialize};

/// The record kind of merge plans (`RecordStore::put_record`).
pub const MERGE_PLAN_KIND: &str = "mergeplan";

/// The largest plan record, in bytes of JSON (a DynamoDB item holds 400 KB).
pub const MAX_PLAN_BYTES: usize = 350 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergePlan {
    pub merge_id: String,
    pub fork_id: String,
    /// The request's fingerprint: a retry with the same key and another body is refused.
    pub fingerprint: String,
    /// Every change, in path order.
    pub changes: Vec<Planned>,
    /// The fork's paths to align with the result afterwards, each with the fork's own head
    /// as the merge compared it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub align: Vec<(String, Option<Head>)>,
}

/// One change of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planned {
    #[serde(rename = "p")]
    pub path: String,
    /// The etag of the target's live file the merge compared; `None`: no live file there.
    #[serde(rename = "x", default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The etag the target's head has once this change is applied.
    #[serde(rename = "d")]
    pub done: String,
    /// What it writes; `None`: it deletes.
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    pub put: Option<PlannedPut>,
}

/// The version a put writes (its body uploaded already).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedPut {
    #[serde(rename = "b")]
    pub body: BodyRef,
    #[serde(rename = "h")]
    pub sha256: String,
    #[serde(rename = "t")]
    pub content_type: String,
    #[serde(rename = "s")]
    pub size: u64,
    /// The lineage and version it writes.
    #[serde(rename = "l")]
    pub lineage: String,
    #[serde(rename = "v")]
    pub version: u64,
    /// The epoch of the tenant's secrets its content was redacted with, where kept.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub secrets_epoch: Option<u64>,
}

/// The bodies a plan record (its JSON) names; none when it is not one.
pub fn bodies_named(value: &str) -> Vec<BodyRef> {
    serde_json::from_str::<MergePlan>(value)
        .map(|p| {
            p.changes
                .into_iter()
                .filter_map(|c| c.put.map(|w| w.body))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_names_the_bodies_of_its_puts() {
        let body = BodyRef::stored("t/acme/w/main/files/a.md".to_owned(), "v1".to_owned());
        let plan = MergePlan {
            merge_id: "m".to_owned(),
            fork_id: "main~0123456789abcdef".to_owned(),
            fingerprint: "f".to_owned(),
            changes: vec![
                Planned {
                    path: "a.md".to_owned(),
                    expected: None,
                    done: "\"1-x\"".to_owned(),
                    put: Some(PlannedPut {
                        body: body.clone(),
                        sha256: "s".to_owned(),
                        content_type: "text/markdown".to_owned(),
                        size: 1,
                        lineage: "l".to_owned(),
                        version: 1,
                        secrets_epoch: None,
                    }),
                },
                Planned {
                    path: "b.md".to_owned(),
                    expected: Some("\"2-y\"".to_owned()),
                    done: "\"3-z\"".to_owned(),
                    put: None,
                },
            ],
            align: Vec::new(),
        };
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<MergePlan>(&json).unwrap(), plan);
        assert_eq!(bodies_named(&json), vec![body]);
        assert!(bodies_named("{}").is_empty());
    }
}
