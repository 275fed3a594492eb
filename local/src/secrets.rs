//! `workspace-local secrets …`: a tenant's registered secrets (WSR-1), in `secrets.json`
//! beside the local database or, with `WORKSPACE_TABLE` set, in that DynamoDB table. A
//! running server reads them on every write, so a new secret is redacted at once.

use crate::{emit, SecretsAction};
use std::io::Read;
use std::sync::Arc;
use workspace_core::model::format_time;
use workspace_core::ports::{Clock, SystemClock};
use workspace_core::secrets::{SecretRecord, SecretStore};
use workspace_core::TenantId;
use workspace_store_embedded::secrets::{SecretFile, SECRETS_FILE};
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

/// Secrets live beside the local database, or in the DynamoDB table
/// (see [`crate::admin_on_aws`]).
async fn store(s: &Settings) -> Result<(Arc<dyn SecretStore>, String), String> {
    if crate::admin_on_aws(s) {
        let aws = Aws::connect(s.clone()).await;
        Ok((aws.secrets()?, format!("DynamoDB table {}", s.aws.table()?)))
    } else {
        let dir = &s.local.data_dir;
        Ok((
            Arc::new(SecretFile::new(dir)),
            dir.join(SECRETS_FILE).display().to_string(),
        ))
    }
}

fn tenant(t: &str) -> Result<TenantId, String> {
    TenantId::parse(t).map_err(|e| format!("--tenant: {e}"))
}

pub async fn manage(action: SecretsAction) -> Result<(), String> {
    let settings = Settings::from_env()?;
    let (store, place) = store(&settings).await?;
    match action {
        SecretsAction::Set { tenant: t, id } => {
            let t = tenant(&t)?;
            let mut value = String::new();
            std::io::stdin()
                .read_to_string(&mut value)
                .map_err(|e| format!("reading the secret from standard input: {e}"))?;
            let value = value
                .strip_suffix('\n')
                .map(|v| v.strip_suffix('\r').unwrap_or(v))
                .unwrap_or(&value);
            let record = SecretRecord::new(&t, &id, value, SystemClock.now_ms())
                .map_err(|e| e.to_string())?;
            store.put_secret(record).await.map_err(|e| e.to_string())?;
            emit(&[format!(
                "registered {id} for tenant {t} in {place}; writes are stored with [REDACTED:{id}] in its place"
            )]);
        }
        SecretsAction::List { tenant: t } => {
            let t = tenant(&t)?;
            let mut all = store.secrets_of(&t).await.map_err(|e| e.to_string())?;
            all.sort_by(|a, b| a.id.cmp(&b.id));
            emit(
                &all.iter()
                    .map(|s| format!("{}  registered {}", s.id, format_time(s.created_at)))
                    .collect::<Vec<_>>(),
            );
        }
        SecretsAction::Remove { tenant: t, id } => {
            let t = tenant(&t)?;
            if !store
                .remove_secret(&t, &id)
                .await
                .map_err(|e| e.to_string())?
            {
                return Err(format!("tenant {t} has no secret with id {id}"));
            }
            emit(&[format!("removed {id}")]);
        }
    }
    Ok(())
}
