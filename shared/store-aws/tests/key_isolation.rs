//! Property: the keys the AWS adapter builds keep tenants apart. For any two distinct
//! (tenant, workspace, path) triples the DynamoDB keys and S3 keys differ, and a key of one
//! tenant never starts with another tenant's prefix (what `dynamodb:LeadingKeys` and S3
//! prefix ARNs rely on), nor is one tenant's S3 key a prefix of another's.

use proptest::prelude::*;
use workspace_core::{FilePath, Scope};
use workspace_store_aws::layout;

/// Small alphabets so prefixes and near-collisions (`a` / `a-b`) come up often.
fn triple() -> impl Strategy<Value = (Scope, FilePath)> {
    ("[ab][ab_-]{0,3}", "[ab][ab_-]{0,3}", "[ab][ab./_-]{0,6}")
        .prop_filter_map("valid ids and path", |(t, w, p)| {
            Some((Scope::parse(&t, &w).ok()?, FilePath::parse(&p).ok()?))
        })
}

fn dynamo_keys(s: &Scope, p: &FilePath) -> Vec<(String, String)> {
    vec![
        (layout::partition(s), layout::head_sk(p.as_str())),
        (layout::partition(s), layout::version_sk(p.as_str(), 1)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn distinct_triples_never_share_or_nest_keys((s1, p1) in triple(), (s2, p2) in triple()) {
        prop_assume!((&s1, &p1) != (&s2, &p2));
        let (b1, b2) = (layout::body_key(&s1, &p1), layout::body_key(&s2, &p2));
        prop_assert_ne!(&b1, &b2);
        for (k1, k2) in dynamo_keys(&s1, &p1).iter().zip(dynamo_keys(&s2, &p2).iter()) {
            prop_assert_ne!(k1, k2);
        }
        if s1.tenant != s2.tenant {
            let (pk1, pk2) = (format!("{}#", s1.tenant), format!("{}#", s2.tenant));
            let (s3p1, s3p2) = (format!("t/{}/", s1.tenant), format!("t/{}/", s2.tenant));
            prop_assert!(!layout::partition(&s2).starts_with(&pk1));
            prop_assert!(!layout::partition(&s1).starts_with(&pk2));
            prop_assert!(!b2.starts_with(&s3p1) && !b1.starts_with(&s3p2));
            prop_assert!(!b1.starts_with(&b2) && !b2.starts_with(&b1));
            prop_assert_ne!(
                layout::secrets_partition(&s1.tenant),
                layout::secrets_partition(&s2.tenant)
            );
        }
        // A tenant's registered secrets sit under its own prefix and in no workspace's
        // partition, whatever the workspace is called.
        let secrets = layout::secrets_partition(&s1.tenant);
        let own_prefix = format!("{}#", s1.tenant);
        prop_assert!(secrets.starts_with(&own_prefix));
        prop_assert_ne!(&secrets, &layout::partition(&s1));
        prop_assert_ne!(&secrets, &layout::partition(&s2));
    }

    #[test]
    fn no_workspace_is_named_like_the_secrets_partition(t in "[a-z]{1,4}") {
        let tenant = workspace_core::TenantId::parse(&t).unwrap();
        let suffix = layout::secrets_partition(&tenant)[t.len() + 1..].to_owned();
        prop_assert!(workspace_core::WorkspaceId::parse(&suffix).is_err());
    }
}
