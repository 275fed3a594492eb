//! The hostile-input corpus, one named case per line: the request path as it appears in
//! the URI after `/v1/host/workspace/files/`. Every one must be refused with 400
//! `validation_error` and change nothing. [`for_each_hostile_path!`] hands the list to a
//! macro, so the contract suite (every backend) and the named tests (one test per case)
//! share one source.

/// Calls `$m! { name: "uri path", ... }` with the whole corpus.
#[macro_export]
macro_rules! for_each_hostile_path {
    ($m:ident) => {
        $m! {
            // traversal, raw and encoded
            dotdot_first: "../x",
            dotdot_first_encoded_slash: "..%2Fx",
            dotdot_middle: "a/../b",
            dotdot_middle_encoded_slashes: "a%2F..%2Fb",
            dotdot_encoded_dots: "a/%2e%2e/b",
            dotdot_encoded_upper: "a/%2E%2E/b",
            dotdot_mixed_encoding: "a/.%2e/b",
            dotdot_last: "a/..",
            dotdot_alone: "..",
            dot_middle: "a/./b",
            dot_encoded: "a/%2e/b",
            dot_alone: ".",
            dot_last: "a/.",
            // absolute, empty and trailing
            absolute_encoded: "%2Fabs",
            absolute_double_slash: "/abs",
            empty_segment: "a//b",
            empty_segment_encoded: "a%2F%2Fb",
            trailing_slash: "a/",
            trailing_slash_encoded: "a%2F",
            leading_dot: ".hidden",
            leading_dash: "-lead",
            leading_underscore: "_lead",
            // NUL and control bytes
            nul_inside: "a%00b",
            nul_alone: "%00",
            nul_after_dotdot: "..%00/x",
            control_soh: "a%01b",
            control_newline: "a%0Ab",
            control_carriage_return: "a%0Db",
            control_tab: "a%09b",
            control_del: "a%7Fb",
            control_escape: "a%1Bb",
            // overlong and invalid UTF-8
            overlong_dot: "%c0%ae%c0%ae/x",
            overlong_slash: "a%c0%afb",
            overlong_slash_three_bytes: "a%e0%80%afb",
            overlong_nul: "a%c0%80b",
            invalid_utf8_byte: "a%ff",
            lone_continuation_byte: "a%80b",
            truncated_sequence: "a%e2%88",
            // look-alikes of . and /
            fullwidth_dots: "%ef%bc%8e%ef%bc%8e/x",
            fullwidth_slash: "a%ef%bc%8fb",
            division_slash: "a%e2%88%95b",
            fraction_slash: "a%e2%81%84b",
            one_dot_leader: "a/%e2%80%a4%e2%80%a4/b",
            fullwidth_letter: "%ef%bd%81",
            // Unicode spellings
            nfc_e_acute: "caf%c3%a9",
            nfd_e_acute: "cafe%cc%81",
            zero_width_space: "a%e2%80%8bb",
            right_to_left_override: "a%e2%80%aeb",
            // backslashes and other separators
            backslash: "a%5Cb",
            backslash_traversal: "a%5C..%5Cb",
            backslash_leading: "%5Cabs",
            colon_drive: "c:x",
            space: "a%20b",
            // double encoding: decoded exactly once, never twice
            double_encoded_dotdot: "%252e%252e/x",
            double_encoded_slash: "a%252Fb",
            double_encoded_nul: "a%2500b",
            // malformed percent-encoding
            lone_percent: "a%",
            bad_hex: "a%zz",
            // characters outside the path alphabet
            glob_star: "a*b",
            glob_double_star_dotdot: "**/../x",
            question_mark_encoded: "a%3Fb",
            hash_encoded: "a%23b",
            tilde_home: "~/x",
            // lengths
            too_long: "a".repeat(257),
            too_long_nested: format!("{}/b", "a".repeat(255)),
        }
    };
}
