//! The scheduled inactivity purge (`functions/purge`): one run per event.

use lambda_runtime::Error;
use serde_json::{json, Value};
use workspace_core::sessions::SessionService;

/// One purge run; the answer lists what was erased (or would be, in a dry run).
pub async fn purge_handler(svc: &SessionService, event: &Value) -> Result<Value, Error> {
    let dry_run = event
        .get("dryRun")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let report = svc.purge(dry_run).await?;
    crate::metrics::events_processed("purge", report.workspaces.len());
    Ok(json!({
        "dryRun": report.dry_run,
        "cutoff": workspace_core::model::format_time(report.cutoff),
        "workspaces": report
            .workspaces
            .iter()
            .map(|w| json!({ "tenantId": w.tenant, "workspaceId": w.workspace_id }))
            .collect::<Vec<_>>(),
    }))
}
