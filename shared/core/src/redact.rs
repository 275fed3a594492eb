//! WSR-1: secrets an agent writes are stored as `[REDACTED:<id>]`, never in plain text.
//!
//! Two kinds of rule, applied in this order:
//! 1. registered secrets: exact values the tenant registered, replaced by their own id; this
//!    can never be turned off;
//! 2. structural rules: secret-shaped tokens (below), each replaced by the rule's id; an
//!    operator may turn these off per deployment (`WORKSPACE_REDACT_STRUCTURAL=false`).
//!
//! | id | what |
//! |---|---|
//! | `aws-access-key-id` | `AKIA…`/`ASIA…` + 16 upper-case letters or digits |
//! | `aws-secret-access-key` | 40 base64 characters assigned to an `aws_secret_access_key`-like name |
//! | `private-key` | a PEM `-----BEGIN … PRIVATE KEY-----` block through its END line |
//! | `github-token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 36+ characters, `github_pat_…` |
//! | `gitlab-token` | `glpat-` + 20+ characters |
//! | `slack-token` | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-` tokens |
//! | `stripe-key` | `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_` + 16+ characters |
//! | `jwt` | three base64url parts, the first two starting `eyJ` |
//! | `assigned-secret` | `password=`, `secret:`, `token=`, `api_key=` … followed by a value of 12+ characters with high entropy |

use crate::metrics::{self, Counter};
use regex::Regex;
use std::sync::OnceLock;

/// A secret value registered for a tenant, replaced by `[REDACTED:<id>]` wherever it occurs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredSecret {
    pub id: String,
    pub value: String,
}

struct Rule {
    id: &'static str,
    re: Regex,
    /// The capture group holding the secret (0 = the whole match).
    group: usize,
    /// Only values at least this random count (Shannon bits per character).
    min_entropy: f64,
}

/// Shortest registered value honoured: shorter ones would redact ordinary words.
pub const MIN_REGISTERED_LEN: usize = 6;

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let r = |id, pattern: &str, group, min_entropy| Rule {
            id,
            // The patterns are constants covered by unit tests; a typo fails every test.
            re: Regex::new(pattern).unwrap_or_else(|e| panic!("redaction rule {id}: {e}")),
            group,
            min_entropy,
        };
        vec![
            r(
                "private-key",
                r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                0,
                0.0,
            ),
            r("aws-access-key-id", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", 0, 0.0),
            r(
                "aws-secret-access-key",
                r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})\b"#,
                1,
                0.0,
            ),
            r("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b", 0, 0.0),
            r("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}\b", 0, 0.0),
            r("slack-token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b", 0, 0.0),
            r("stripe-key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b", 0, 0.0),
            r("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}\b", 0, 0.0),
            r(
                "assigned-secret",
                r#"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret)["']?\s*[:=]\s*["']?([^\s"'`,;&]{12,})"#,
                1,
                3.3,
            ),
        ]
    })
}

fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// The outcome: the text to store, and the ids of what was redacted (for logs, never values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub hits: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Redactor {
    structural: bool,
}

impl Default for Redactor {
    fn default() -> Self {
        Self { structural: true }
    }
}

impl Redactor {
    /// `structural: false` turns off the secret-shape rules; registered secrets still apply.
    pub fn new(structural: bool) -> Self {
        Self { structural }
    }

    /// Also counts each secret replaced as [`Counter::Redactions`] of the request in
    /// progress (every caller redacts text about to be stored; a write that redacts again
    /// because the tenant's secrets moved meanwhile counts twice, which is rare).
    pub fn redact(&self, text: &str, registered: &[RegisteredSecret]) -> Redacted {
        let mut out = text.to_owned();
        let mut hits = Vec::new();
        let mut replaced = 0u64;
        let mut secrets: Vec<&RegisteredSecret> = registered
            .iter()
            .filter(|s| s.value.len() >= MIN_REGISTERED_LEN)
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
        for s in secrets {
            if out.contains(&s.value) {
                replaced += out.matches(s.value.as_str()).count() as u64;
                out = out.replace(&s.value, &format!("[REDACTED:{}]", s.id));
                hits.push(s.id.clone());
            }
        }
        if self.structural {
            for rule in rules() {
                let mut ranges = Vec::new();
                let mut consider = |m: regex::Match<'_>| {
                    if entropy(m.as_str()) >= rule.min_entropy
                        && !m.as_str().starts_with("[REDACTED:")
                    {
                        ranges.push(m.range());
                    }
                };
                if rule.group == 0 {
                    // The whole match: no capture groups to resolve.
                    rule.re.find_iter(&out).for_each(&mut consider);
                } else {
                    for caps in rule.re.captures_iter(&out) {
                        if let Some(m) = caps.get(rule.group) {
                            consider(m);
                        }
                    }
                }
                if ranges.is_empty() {
                    continue;
                }
                hits.push(rule.id.to_owned());
                replaced += ranges.len() as u64;
                // The ranges are in order and disjoint: one pass copies the text around them
                // (replacing each in place moved the rest of the text once per secret).
                let tag = format!("[REDACTED:{}]", rule.id);
                let mut next = String::with_capacity(out.len() + ranges.len() * tag.len());
                let mut at = 0;
                for range in ranges {
                    next.push_str(&out[at..range.start]);
                    next.push_str(&tag);
                    at = range.end;
                }
                next.push_str(&out[at..]);
                out = next;
            }
        }
        metrics::add(Counter::Redactions, replaced);
        Redacted { text: out, hits }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(s: &str) -> String {
        Redactor::default().redact(s, &[]).text
    }

    #[test]
    fn each_rule_catches_its_shape_and_spares_look_alikes() {
        let cases: &[(&str, &str, &str)] = &[
            ("aws-access-key-id", "key AKIAIOSFODNN7EXAMPLE here", "AKIA is a prefix; AKIAshort"),
            (
                "aws-secret-access-key",
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = see-the-vault",
            ),
            (
                "private-key",
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
            ),
            ("github-token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_short"),
            ("gitlab-token", "glpat-abcdefghij0123456789", "glpat-short"),
            ("slack-token", "xoxb-1234567890-abcdefghij", "xoxo and hugs"),
            ("stripe-key", "sk_live_abcdefghijklmnop1234", "sk_live_ is the prefix"),
            (
                "jwt",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "eyJ alone is not a token",
            ),
            ("assigned-secret", "password=Zx9#qLm2$vT8wK4p", "password=changeme and token: see-docs"),
        ];
        for (id, positive, negative) in cases {
            let out = redact(positive);
            assert!(
                out.contains(&format!("[REDACTED:{id}]")),
                "{id} missed: {out}"
            );
            assert_eq!(redact(negative), *negative, "{id} over-redacted");
        }
    }

    #[test]
    fn the_secret_is_gone_and_the_rest_stays() {
        let out = redact("deploy with AKIAIOSFODNN7EXAMPLE then rest");
        assert_eq!(out, "deploy with [REDACTED:aws-access-key-id] then rest");
    }

    #[test]
    fn every_secret_of_a_rule_is_replaced_and_the_text_between_kept() {
        let out = redact(
            "a AKIAIOSFODNN7EXAMPLE b AKIAIOSFODNN7EXAMPLF c\ntoken=Zx9qLm2vT8wK4pR7 d AKIAIOSFODNN7EXAMPLG",
        );
        assert_eq!(
            out,
            "a [REDACTED:aws-access-key-id] b [REDACTED:aws-access-key-id] c\n\
             token=[REDACTED:assigned-secret] d [REDACTED:aws-access-key-id]"
        );
    }

    #[test]
    fn word_boundaries_and_case_are_unicode_aware() {
        // A letter outside ASCII is a word character: no boundary before the key.
        let glued = "ÉAKIAIOSFODNN7EXAMPLE";
        assert_eq!(redact(glued), glued);
        assert_eq!(
            redact("é AKIAIOSFODNN7EXAMPLE"),
            "é [REDACTED:aws-access-key-id]"
        );
        // (?i) folds Unicode case: the Kelvin sign is a `k`.
        assert_eq!(
            redact("to\u{212A}en=Zx9qLm2vT8wK4pR7"),
            "to\u{212A}en=[REDACTED:assigned-secret]"
        );
    }

    #[test]
    fn registered_secrets_apply_even_when_structural_rules_are_off() {
        let reg = [RegisteredSecret {
            id: "db-password".into(),
            value: "plain-words-secret".into(),
        }];
        let r = Redactor::new(false).redact("conn: plain-words-secret; AKIAIOSFODNN7EXAMPLE", &reg);
        assert_eq!(r.text, "conn: [REDACTED:db-password]; AKIAIOSFODNN7EXAMPLE");
        assert_eq!(r.hits, ["db-password"]);
    }

    #[test]
    fn redaction_is_stable() {
        let once = redact("token=Zx9qLm2vT8wK4pR7");
        assert_eq!(
            redact(&once),
            once,
            "already-redacted text is left as it is"
        );
    }
}
