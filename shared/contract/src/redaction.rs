//! WSR-1 for registered secrets: values a tenant registered are redacted from every write
//! of that tenant, in the response and in the adapter's own storage, from the moment they
//! are registered, and never affect (or reveal anything to) another tenant.

use crate::harness::{Harness, KEY_A, KEY_EVIL, KEY_OTHER};
use workspace_core::secrets::SecretRecord;
use workspace_core::TenantId;

/// Registered for tenant `acme`. Deliberately not secret-shaped: only registration catches it.
pub const REGISTERED_VALUE: &str = "correct horse battery staple 42";

pub async fn registered_secrets_are_redacted_for_their_tenant_only(h: Harness) {
    let text = format!("db: {REGISTERED_VALUE}; again {REGISTERED_VALUE}.");
    // Not registered yet: an ordinary phrase is stored as written.
    h.put(KEY_A, "before.md", &text).await.assert_ok();
    assert_eq!(h.raw_body("acme", "main", "before.md").await, text);

    let acme = TenantId::parse("acme").unwrap();
    let record = SecretRecord::new(&acme, "db-password", REGISTERED_VALUE, 0).unwrap();
    h.secrets.put_secret(record).await.unwrap();

    let expected = "db: [REDACTED:db-password]; again [REDACTED:db-password].";
    let put = h.put(KEY_A, "notes/db.md", &text).await.assert_ok();
    assert_eq!(put["content"], expected);
    assert_eq!(put["size"], expected.len());
    assert_eq!(
        h.get(KEY_A, "notes/db.md").await.assert_ok()["content"],
        expected
    );
    assert_eq!(h.raw_body("acme", "main", "notes/db.md").await, expected);
    // Every workspace of the tenant.
    h.put(KEY_OTHER, "x.md", &text).await.assert_ok();
    assert_eq!(h.raw_body("acme", "other", "x.md").await, expected);
    // Another tenant is untouched: its own text is stored as written, so redaction cannot
    // be used to probe acme's secrets.
    let evil = h.put(KEY_EVIL, "x.md", &text).await.assert_ok();
    assert_eq!(evil["content"], text.as_str());

    // Removed: later writes keep the phrase again; earlier stored text stays redacted.
    assert!(h.secrets.remove_secret(&acme, "db-password").await.unwrap());
    assert!(!h.secrets.remove_secret(&acme, "db-password").await.unwrap());
    h.put(KEY_A, "after.md", &text).await.assert_ok();
    assert_eq!(h.raw_body("acme", "main", "after.md").await, text);
    assert_eq!(h.raw_body("acme", "main", "notes/db.md").await, expected);
}
