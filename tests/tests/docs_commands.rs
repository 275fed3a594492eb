//! The documentation cannot rot: every command shown in `README.md`, `ARCHITECTURE.md` and
//! `docs/*.md` is run here or checked against the programs and files it names, and every link
//! and repository path they name exists. The convention, by the fence of each block (also in
//! `docs/README.md`, "How the commands are kept true"):
//!
//! - ` ```sh run `: run. Each page's `sh run` blocks run in order in one bash process, after
//!   the README's tour (its `$KEY`, `$API`, `$AUTH`), against a `workspace-local` this test
//!   starts on a free loopback port over an empty data directory: `http://127.0.0.1:8787` is
//!   replaced by its address, `./target/local/workspace-local` and `ws` are this build's. A
//!   `curl` function stands in for curl: it must answer 2xx, or the status the trailing
//!   comment of its line starts with (`# 409 …`); `curl -N` (a stream) must answer 200 and is
//!   cut after two seconds; any URL other than the test server's fails (no network beyond
//!   loopback). The script must run to its end with every command succeeding.
//! - ` ```sh `: shown, not run (builds, `bench/`, SAM, AWS). Checked without running:
//!   `workspace-local`, `ws`, `cargo` and `sam` subcommands and flags must be in that
//!   program's `--help` (and no more positional arguments than its usage takes); `cargo`'s
//!   packages, binaries, examples, profiles and `--path` must exist; SAM function ids and
//!   `--parameter-overrides` names must be in `template.yaml`; a script given to `bash` or
//!   `python` must exist, with the flags passed to it; every repository path must exist; a
//!   `curl` to the local server may not hide here (mark the block `sh run`). Any other program
//!   must be one of [`SHOWN_AS_IS`].
//! - ` ```json ` must parse (one document, or one per line); ` ```text `, ` ```python `,
//!   ` ```ts ` are shown as they are. No other fence (`bash`, `console`, ...) is allowed.
//! - Inline code outside blocks: `workspace-local …`, `ws …` and `cargo …` commands parse as
//!   above; repository paths exist.
//!
//! What cannot be checked here, and is only checked as above: `sam deploy`, `sam sync`,
//! `sam logs` and the `aws` CLI (they need an AWS account), `sam local invoke` and
//! `sam local start-api` (a container engine: `tests/run.sh` runs them through
//! `tests/sam_local/run.sh`, on podman), `npx openapi-typescript` and `cargo install`
//! (network), and the
//! benchmarks (minutes; `tests/run.sh` runs `bench/run.py --smoke`). `sam validate --lint`
//! of the template is in `tests/run.sh`. `cli/README.md`'s commands are checked as ` ```sh `
//! blocks (`tests/tests/ws_cli.rs` runs every `ws` subcommand for real).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use workspace_tests::local::{binaries, LocalServer};
use workspace_tests::root;
use yaml_rust2::{Yaml, YamlLoader};

/// The address the docs use for the local server.
const DOCS_URL: &str = "http://127.0.0.1:8787";

/// Programs a ` ```sh ` block may show without a check of their own (their repository paths
/// are still checked).
const SHOWN_AS_IS: &[&str] = &[
    "aws",
    "cat",
    "cd",
    "cmp",
    "cp",
    "curl",
    "cut",
    "echo",
    "env",
    "export",
    "git",
    "head",
    "jq",
    "mkdir",
    "moto_server",
    "npx",
    "printf",
    "sed",
    "sha256sum",
    "tr",
    "wc",
    "$EDITOR",
    "$RIE",
];

/// Cargo subcommands the docs name that are installed separately (cargo-lambda comes with
/// `tests/run.sh`; cargo-bloat is named as the tool a measurement used).
const CARGO_PLUGINS: &[&str] = &["lambda", "bloat"];

/// The pages whose commands are checked: ours, and the `ws` tour beside its crate.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages.push(root().join("cli/README.md"));
    pages
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[derive(Debug, Clone)]
struct Block {
    page: String,
    /// 1-based line of the first line of content.
    line: usize,
    info: String,
    lines: Vec<String>,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }
    fn runs(&self) -> bool {
        self.info.split_whitespace().eq(["sh", "run"])
    }
}

/// The fenced blocks of a page (indented fences too, their indent removed), and its text
/// outside them.
fn parse_page(path: &Path) -> (Vec<Block>, String) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", rel(path)));
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(usize, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None if trimmed.starts_with("```") => {
                let info = trimmed.trim_start_matches('`').trim().to_owned();
                open = Some((
                    indent,
                    Block {
                        page: rel(path),
                        line: i + 2,
                        info,
                        lines: Vec::new(),
                    },
                ));
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some((_, block)) if trimmed == "```" => {
                blocks.push(block);
                prose.push('\n');
            }
            Some((indent, mut block)) => {
                let cut = line.len().min(indent);
                let content = if line[..cut].trim().is_empty() {
                    &line[cut..]
                } else {
                    line
                };
                block.lines.push(content.to_owned());
                open = Some((indent, block));
                prose.push('\n');
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a fenced block is never closed",
        rel(path)
    );
    (blocks, prose)
}

fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(|p| parse_page(p).0).collect()
}

// ---------------------------------------------------------------------------------------
// Fences, JSON, links and paths.

#[test]
fn every_block_follows_the_fence_convention_and_json_parses() {
    let mut wrong = Vec::new();
    for b in all_blocks() {
        let at = format!("{}:{}", b.page, b.line);
        match (b.lang(), b.info.as_str()) {
            ("sh", "sh" | "sh run") | ("text" | "python" | "ts", _) => {}
            ("json", _) => {
                let text = b.lines.join("\n");
                let whole = serde_json::from_str::<Value>(&text).is_ok();
                let each = b
                    .lines
                    .iter()
                    .filter(|l| !l.trim().is_empty())
                    .all(|l| serde_json::from_str::<Value>(l).is_ok());
                if !whole && !each {
                    wrong.push(format!("{at}: a json block that does not parse"));
                }
            }
            _ => wrong.push(format!(
                "{at}: fence `{}`: use sh (shown, checked), sh run (run here), json, text, python or ts",
                b.info
            )),
        }
        if b.page == "cli/README.md" && b.runs() {
            wrong.push(format!("{at}: cli/README.md's blocks are not run here"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A heading's anchor as GitHub makes it.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(path: &Path) -> BTreeSet<String> {
    let (_, prose) = parse_page(path);
    prose
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// The top of every repository path the docs may name.
const REPO_TOPS: &[&str] = &[
    "shared/",
    "functions/",
    "local/",
    "cli/",
    "console/",
    "tests/",
    "bench/",
    "events/",
    "schemas/",
    "examples/",
    "docs/",
    "template.yaml",
    "openapi.json",
    "Cargo.toml",
    "samconfig.toml",
    "conformance.md",
    "README.md",
    "ARCHITECTURE.md",
];

/// `word` as a repository path, if it looks like one (no placeholder or glob in it).
fn repo_path(word: &str) -> Option<&str> {
    let word = word
        .trim_start_matches('@')
        .trim_start_matches("./")
        .trim_end_matches([',', '.', ':', ';', ')']);
    let named = REPO_TOPS
        .iter()
        .any(|top| word.starts_with(top) && (top.ends_with('/') || word.len() == top.len()));
    let placeholder = word.contains(['<', '>', '*', '{', '}', '…', '$', '[', '?', '#', '=']);
    (named && !placeholder).then_some(word)
}

/// The targets of the Markdown links in `text` (`[…](target)`).
fn link_targets(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = &rest[..end];
        if !target.is_empty() && !target.contains(char::is_whitespace) {
            out.push(target);
        }
    }
    out
}

/// The inline code spans of `text` (a span may cross a line break; ``a `b` c`` is one).
fn code_spans(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('`') {
        let ticks = rest[i..].len() - rest[i..].trim_start_matches('`').len();
        let fence = &rest[i..i + ticks];
        let body = &rest[i + ticks..];
        match body.find(fence) {
            Some(end) => {
                out.push(body[..end].trim());
                rest = &body[end + ticks..];
            }
            None => break,
        }
    }
    out
}

/// The HTTP status a comment starts with (`409 workspace_conflict` → 409).
fn leading_status(comment: &str) -> Option<&str> {
    let digits = comment.get(..3)?;
    let after = comment[3..].chars().next();
    (digits.chars().all(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_alphanumeric()))
        .then_some(digits)
}

#[test]
fn every_link_and_named_repository_path_exists() {
    let mut missing = Vec::new();
    for page in pages() {
        let (blocks, prose) = parse_page(&page);
        let dir = page.parent().unwrap().to_owned();
        for target in link_targets(&prose) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let file = if file.is_empty() {
                page.clone()
            } else {
                dir.join(file)
            };
            if !file.exists() {
                missing.push(format!("{}: link {target}: no such file", rel(&page)));
                continue;
            }
            if let Some(anchor) = anchor {
                if file.extension().is_some_and(|x| x == "md") && !anchors(&file).contains(anchor) {
                    missing.push(format!("{}: link {target}: no such heading", rel(&page)));
                }
            }
        }
        for span in code_spans(&prose) {
            for word in span.split_whitespace() {
                if let Some(p) = repo_path(word) {
                    if !root().join(p).exists() {
                        missing.push(format!("{}: `{span}` names {p}: no such path", rel(&page)));
                    }
                }
            }
        }
        for b in blocks.iter().filter(|b| b.lang() == "sh") {
            for (n, line) in b.lines.iter().enumerate() {
                for word in strip_comment(line).split_whitespace() {
                    let word = word.trim_matches(['"', '\'']);
                    if let Some(p) = repo_path(word) {
                        if !root().join(p).exists() {
                            missing.push(format!("{}:{}: {p}: no such path", b.page, b.line + n));
                        }
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Shell text: comments, logical lines, simple commands.

/// Quoting carried from one physical line to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Quotes {
    single: bool,
    double: bool,
}

/// Where the code of `line` ends (its trailing comment starts), given the quoting it starts
/// in, and the quoting it leaves open.
fn scan(line: &str, mut q: Quotes) -> (usize, Quotes) {
    let mut prev = if q.single || q.double { 'x' } else { ' ' };
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            prev = c;
            continue;
        }
        match c {
            '\\' if !q.single => escaped = true,
            '\'' if !q.double => q.single = !q.single,
            '"' if !q.single => q.double = !q.double,
            '#' if !q.single && !q.double && (prev == ' ' || prev == '\t' || i == 0) => {
                return (i, q);
            }
            _ => {}
        }
        prev = c;
    }
    (line.len(), q)
}

/// `line` without its trailing comment (a `#` outside quotes after a space, or at the start).
fn strip_comment(line: &str) -> &str {
    &line[..scan(line, Quotes::default()).0]
}

/// The trailing comment of `line`, if any.
fn comment(line: &str) -> Option<&str> {
    let code = strip_comment(line);
    (code.len() < line.len()).then(|| line[code.len() + 1..].trim())
}

/// A block's logical lines (continued by a trailing `\` or by a quote left open), with the
/// index of their first and last physical line; comment-only and empty lines are left out.
fn logical_lines(lines: &[String]) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String, Quotes)> = None;
    for (i, line) in lines.iter().enumerate() {
        let (start, mut text, q) = current
            .take()
            .unwrap_or((i, String::new(), Quotes::default()));
        let (end, after) = scan(line, q);
        let code = if after.single || after.double {
            line.as_str()
        } else {
            line[..end].trim_end()
        };
        if text.is_empty() && code.trim().is_empty() {
            continue;
        }
        if after.single || after.double {
            text.push_str(code);
            text.push('\n');
            current = Some((start, text, after));
        } else if let Some(head) = code.strip_suffix('\\') {
            text.push_str(head);
            text.push(' ');
            current = Some((start, text, after));
        } else {
            text.push_str(code);
            out.push((start, i, text));
        }
    }
    if let Some((start, text, _)) = current {
        out.push((start, lines.len() - 1, text));
    }
    out
}

/// The end (index of the matching `)`) of a `$(` whose content starts at `from`.
fn substitution_end(chars: &[char], from: usize) -> usize {
    let (mut depth, mut q) = (1, Quotes::default());
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' if !q.single => i += 1,
            '\'' if !q.double => q.single = !q.single,
            '"' if !q.single => q.double = !q.double,
            '(' if !q.single && !q.double => depth += 1,
            ')' if !q.single && !q.double => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// The simple commands of a logical line, each as its words (quotes removed; a quoted word
/// is one word): split at `|`, `&&`, `||`, `;`, `&`, `(` and `)` outside quotes. A command
/// substitution `$(…)` (also inside double quotes) is read as commands of its own and stands
/// in its word as `$CMD`. Leading assignments, redirections and their targets are dropped.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut inner = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let (mut single, mut double) = (false, false);
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if !single && c == '$' && chars.get(i + 1) == Some(&'(') {
            let end = substitution_end(&chars, i + 2);
            let text: String = chars[i + 2..end.min(chars.len())].iter().collect();
            inner.extend(simple_commands(&text));
            word.push_str("$CMD");
            in_word = true;
            i = end + 1;
            continue;
        }
        if single {
            if c == '\'' {
                single = false;
            } else {
                word.push(c);
            }
        } else if double {
            if c == '"' {
                double = false;
            } else if c == '\\' && i + 1 < chars.len() {
                word.push(chars[i + 1]);
                i += 1;
            } else {
                word.push(c);
            }
        } else {
            match c {
                '\'' => {
                    single = true;
                    in_word = true;
                }
                '"' => {
                    double = true;
                    in_word = true;
                }
                ' ' | '\t' | '\n' => end_word(&mut words, &mut word, &mut in_word),
                '|' | '&' | ';' | '(' | ')' => {
                    end_word(&mut words, &mut word, &mut in_word);
                    if !words.is_empty() {
                        commands.push(std::mem::take(&mut words));
                    }
                }
                '\\' if i + 1 < chars.len() => {
                    word.push(chars[i + 1]);
                    in_word = true;
                    i += 1;
                }
                _ => {
                    word.push(c);
                    in_word = true;
                }
            }
        }
        i += 1;
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    }
    commands.extend(inner);
    commands
        .into_iter()
        .map(|words| {
            let mut out = Vec::new();
            let mut skip = false;
            for w in words {
                if skip {
                    skip = false;
                    continue;
                }
                if out.is_empty() && is_assignment(&w) {
                    continue;
                }
                if matches!(w.as_str(), ">" | "<" | ">>" | "2>") {
                    skip = true;
                    continue;
                }
                if w.starts_with('>') || w.starts_with('<') || w.starts_with("2>") {
                    continue;
                }
                out.push(w);
            }
            out
        })
        .filter(|c| !c.is_empty())
        .collect()
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

// ---------------------------------------------------------------------------------------
// Checking a command without running it.

/// What `--help` says of one (sub)command of a clap or click program.
#[derive(Debug, Clone, Default)]
struct Help {
    text: String,
    subcommands: BTreeSet<String>,
    /// Flags that take a value (`--tenant <TENANT>`, `--docker-network TEXT`).
    valued: BTreeSet<String>,
    /// Most positional arguments (None: any number).
    positionals: Option<usize>,
}

impl Help {
    fn parse(text: String) -> Help {
        let mut help = Help {
            positionals: Some(0),
            ..Help::default()
        };
        let mut section = "";
        for line in text.lines() {
            let t = line.trim();
            if !line.starts_with(' ') && t.ends_with(':') {
                section = t;
                continue;
            }
            if matches!(section, "Commands:") && line.starts_with("  ") {
                if let Some(name) = t.split_whitespace().next() {
                    help.subcommands
                        .insert(name.trim_end_matches(',').to_owned());
                }
            }
            // `  -n, --name <N>`, `      --name <N>`, `--package [<SPEC>]`, click's
            // `  -e, --event PATH`: every alias of a flag that takes a value.
            if t.starts_with('-') {
                let words: Vec<&str> = t.split_whitespace().collect();
                let mut aliases = Vec::new();
                let mut value = false;
                for (i, w) in words.iter().enumerate() {
                    let flag = w.trim_end_matches(',');
                    let (flag, inline) = match flag.split_once('=') {
                        Some((f, _)) => (f, true),
                        None => (flag, false),
                    };
                    aliases.push(flag.to_owned());
                    if w.ends_with(',') {
                        continue;
                    }
                    let next = words.get(i + 1).copied().unwrap_or("");
                    value = inline
                        || next.starts_with('<')
                        || next.starts_with('[')
                        || (next.len() > 1
                            && next.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
                    break;
                }
                if value {
                    help.valued.extend(aliases);
                }
            }
            if let Some(usage) = t.strip_prefix("Usage:") {
                help.positionals = usage_positionals(usage);
            }
        }
        help.text = text;
        help
    }

    fn has_flag(&self, flag: &str) -> bool {
        let flag = flag.split('=').next().unwrap_or(flag);
        self.text
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '='))
            .any(|w| w == flag)
    }
}

/// The positional arguments a usage line takes: `<A>` and `[B]` one each, `...` any number;
/// `[OPTIONS]`, `[COMMAND]`, flags and their values not counted.
fn usage_positionals(usage: &str) -> Option<usize> {
    let words: Vec<&str> = usage.split_whitespace().collect();
    let mut n = 0;
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w.starts_with('-') || w.starts_with("[-") {
            if words.get(i + 1).is_some_and(|v| v.starts_with('<')) {
                i += 1;
            }
        } else if w.starts_with('<') || w.starts_with('[') {
            let name = w.trim_matches(['<', '>', '[', ']', '.']);
            if matches!(name, "OPTIONS" | "COMMAND" | "COMMANDS") {
                i += 1;
                continue;
            }
            if w.ends_with("...") {
                return None;
            }
            n += 1;
        }
        i += 1;
    }
    Some(n)
}

/// `--help` of `program args…`, once per run.
fn help_of(program: &Path, args: &[String]) -> Result<Help, String> {
    type Slot = std::sync::Arc<OnceLock<Result<Help, String>>>;
    static CACHE: OnceLock<Mutex<HashMap<Vec<String>, Slot>>> = OnceLock::new();
    let mut key = vec![program.to_string_lossy().into_owned()];
    key.extend(args.iter().cloned());
    let slot = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let out = Command::new(program)
            .args(args)
            .arg("--help")
            .current_dir(root())
            .env("SAM_CLI_TELEMETRY", "0")
            .output()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        if !out.status.success() {
            return Err(format!(
                "`{} {} --help` failed: {}",
                program.display(),
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Help::parse(
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ))
    })
    .clone()
}

/// Checks `words` (after the program) against the program's `--help`: each subcommand is
/// one its parent lists (`a|b` names several), each flag is in the help of the command it
/// follows, and no more positional arguments than the usage takes. Returns the subcommand
/// path and the positional arguments.
fn check_against_help(
    program: &Path,
    name: &str,
    words: &[String],
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut path: Vec<String> = Vec::new();
    let mut help = help_of(program, &path)?;
    let mut positionals = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w.starts_with('-') && w.len() > 1 {
            if !help.has_flag(w) {
                return Err(format!("`{name} {}` has no flag {w}", path.join(" ")));
            }
            if help.valued.contains(w.as_str()) && !w.contains('=') {
                i += 1;
            }
        } else if positionals.is_empty() && !help.subcommands.is_empty() {
            let names: Vec<&str> = w.split('|').collect();
            for n in &names {
                if !help.subcommands.contains(*n) {
                    return Err(format!(
                        "`{name} {}` has no subcommand {n} (it has: {})",
                        path.join(" "),
                        help.subcommands
                            .iter()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            if names.len() > 1 {
                // Several subcommands named at once (`create|ls|show`): nothing follows.
                for n in names {
                    let mut p = path.clone();
                    p.push(n.to_owned());
                    help_of(program, &p)?;
                }
                return Ok((path, positionals));
            }
            path.push(w.clone());
            help = help_of(program, &path)?;
        } else {
            positionals.push(w.clone());
        }
        i += 1;
    }
    if let Some(max) = help.positionals {
        if positionals.len() > max {
            return Err(format!(
                "`{name} {}` takes at most {max} positional argument(s), given {positionals:?}",
                path.join(" ")
            ));
        }
    }
    Ok((path, positionals))
}

/// The packages of the workspace with their targets by kind (`bin`, `example`, ...).
fn cargo_packages() -> &'static BTreeMap<String, Vec<(String, String)>> {
    static PACKAGES: OnceLock<BTreeMap<String, Vec<(String, String)>>> = OnceLock::new();
    PACKAGES.get_or_init(|| {
        let out = workspace_tests::cargo(&["metadata", "--no-deps", "--format-version", "1"]);
        let meta: Value = serde_json::from_slice(&out).expect("cargo metadata");
        meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| {
                let targets = p["targets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|t| {
                        let name = t["name"].as_str().unwrap_or("").to_owned();
                        t["kind"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(move |k| (k.as_str().unwrap_or("").to_owned(), name.clone()))
                    })
                    .collect();
                (p["name"].as_str().unwrap_or("").to_owned(), targets)
            })
            .collect()
    })
}

fn template() -> &'static Yaml {
    static TEMPLATE: OnceLock<Yaml> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
        YamlLoader::load_from_str(&text)
            .expect("template.yaml parses")
            .remove(0)
    })
}

fn template_keys(section: &str) -> BTreeSet<String> {
    template()[section]
        .as_hash()
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.as_str().map(str::to_owned))
        .collect()
}

/// The value of `flag` in `words` (`--flag v` or `--flag=v`), every occurrence.
fn flag_values(words: &[String], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        for f in flags {
            if w == f {
                if let Some(v) = words.get(i + 1) {
                    out.push(v.clone());
                }
            } else if let Some(v) = w.strip_prefix(&format!("{f}=")) {
                out.push(v.to_owned());
            }
        }
    }
    out
}

fn check_cargo(words: &[String]) -> Result<(), String> {
    if words
        .first()
        .is_some_and(|w| CARGO_PLUGINS.contains(&w.as_str()))
    {
        return Ok(()); // not a cargo built-in: its arguments are shown as is
    }
    let cargo = PathBuf::from(env!("CARGO"));
    check_against_help(&cargo, "cargo", words)?;
    let packages = cargo_packages();
    let targets = |kind: &str| -> BTreeSet<String> {
        packages
            .values()
            .flatten()
            .filter(|(k, _)| k == kind)
            .map(|(_, n)| n.clone())
            .collect()
    };
    for p in flag_values(words, &["-p", "--package"]) {
        if !packages.contains_key(&p) {
            return Err(format!("cargo: no package {p}"));
        }
    }
    for b in flag_values(words, &["--bin"]) {
        if !targets("bin").contains(&b) {
            return Err(format!("cargo: no binary {b}"));
        }
    }
    for e in flag_values(words, &["--example"]) {
        if !targets("example").contains(&e) {
            return Err(format!("cargo: no example {e}"));
        }
    }
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for profile in flag_values(words, &["--profile"]) {
        let builtin = matches!(profile.as_str(), "dev" | "release" | "test" | "bench");
        if !builtin && !manifest.contains(&format!("[profile.{profile}]")) {
            return Err(format!("cargo: no profile {profile}"));
        }
    }
    for path in flag_values(words, &["--path"]) {
        if !root().join(&path).join("Cargo.toml").exists() {
            return Err(format!("cargo: --path {path} has no Cargo.toml"));
        }
    }
    Ok(())
}

fn check_sam(words: &[String]) -> Result<(), String> {
    let sam = root().join(".venv/bin/sam");
    if !sam.exists() {
        return Err("no .venv/bin/sam: `bash tests/run.sh` installs SAM CLI".to_owned());
    }
    let (path, positionals) = check_against_help(&sam, "sam", words)?;
    let resources = template_keys("Resources");
    for id in positionals
        .iter()
        .chain(&flag_values(words, &["-n", "--name"]))
    {
        if !resources.contains(id) {
            return Err(format!(
                "sam {}: template.yaml has no resource {id}",
                path.join(" ")
            ));
        }
    }
    let parameters = template_keys("Parameters");
    let mut overriding = false;
    for w in words {
        if w == "--parameter-overrides" {
            overriding = true;
        } else if w.starts_with('-') {
            overriding = false;
        } else if overriding {
            let name = w.split('=').next().unwrap_or(w);
            if !parameters.contains(name) {
                return Err(format!("sam: template.yaml has no parameter {name}"));
            }
        }
    }
    Ok(())
}

/// A script run by `bash`/`python`: it exists, and takes each flag passed to it.
fn check_script(words: &[String]) -> Result<(), String> {
    let Some(script) = words.iter().find(|w| !w.starts_with('-')) else {
        return Ok(());
    };
    if words.first().is_some_and(|w| w == "-c") {
        return Ok(()); // python -c '…'
    }
    let Some(path) = repo_path(script) else {
        return Ok(());
    };
    let text =
        std::fs::read_to_string(root().join(path)).map_err(|_| format!("no script {path}"))?;
    for flag in words.iter().filter(|w| w.starts_with("--")) {
        let flag = flag.split('=').next().unwrap_or(flag);
        if !text.contains(&format!("\"{flag}\"")) {
            return Err(format!("{path} takes no flag {flag}"));
        }
    }
    Ok(())
}

/// Checks one simple command; `runs` says whether its block runs here.
fn check_command(words: &[String], runs: bool) -> Result<(), String> {
    let program = words[0].as_str();
    let rest = &words[1..];
    let local = program == "workspace-local" || program.ends_with("/workspace-local");
    if local {
        return check_against_help(&binaries().server, "workspace-local", rest).map(drop);
    }
    match program {
        "ws" => check_against_help(&binaries().ws, "ws", rest).map(drop),
        "cargo" => check_cargo(rest),
        "sam" => check_sam(rest),
        "bash" | "python" | "python3" => check_script(rest),
        p if p.ends_with("/python") => check_script(rest),
        "curl" if !runs && words.iter().any(|w| w.starts_with(DOCS_URL)) => Err(
            "a curl to the local server in a block that is not run: mark the block `sh run`"
                .to_owned(),
        ),
        p if SHOWN_AS_IS.contains(&p) => Ok(()),
        p => Err(format!(
            "{p}: not a program this test knows; run it (`sh run`) or add it to SHOWN_AS_IS"
        )),
    }
}

#[test]
fn every_shown_command_names_subcommands_flags_and_files_that_exist() {
    // (where, the command's words, whether its block runs)
    let mut commands: Vec<(String, Vec<String>, bool)> = Vec::new();
    for b in all_blocks().into_iter().filter(|b| b.lang() == "sh") {
        for (first, _, line) in logical_lines(&b.lines) {
            for words in simple_commands(&line) {
                let at = format!("{}:{}: `{}`", b.page, b.line + first, line.trim());
                commands.push((at, words, b.runs()));
            }
        }
    }
    // Inline code: `workspace-local …`, `ws …` and `cargo …` in the prose, placeholders
    // (`[--flag]`, `GLOB]...`, `a | b`) read as the words they hold.
    for page in pages() {
        let (_, prose) = parse_page(&page);
        for span in code_spans(&prose) {
            let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
            for words in simple_commands(&span) {
                let words: Vec<String> = words
                    .iter()
                    .map(|w| {
                        w.trim_matches(['[', ']'])
                            .trim_end_matches("...")
                            .trim_end_matches('…')
                            .trim_matches(['[', ']'])
                    })
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned)
                    .collect();
                let Some(program) = words.first() else {
                    continue;
                };
                let known = program == "ws"
                    || program == "workspace-local"
                    || program.ends_with("/workspace-local")
                    || program == "cargo";
                if known && words.len() >= 2 {
                    commands.push((format!("{} (inline `{span}`)", rel(&page)), words, false));
                }
            }
        }
    }
    // `--help` is slow for some programs (SAM CLI): check the commands side by side, each
    // program's help asked once.
    binaries();
    let wrong: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = commands
            .iter()
            .map(|(at, words, runs)| {
                s.spawn(move || {
                    check_command(words, *runs)
                        .err()
                        .map(|e| format!("{at}: {e}"))
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Running the `sh run` blocks.

/// Stands in for curl in the scripts: the real curl, with the status written to stderr
/// (after the caller's own `-w`, if any), a deadline, and the check.
const PRELUDE: &str = r#"
curl() {
  local args=() seen_w= stream= prev= a status rc=0 err
  local marker='%{stderr}@@docs-status %{http_code}@@\n'
  for a in "$@"; do
    case "$a" in
      http://*|https://*)
        case "$a" in
          "$DOCS_SERVER"/*|"$DOCS_SERVER") ;;
          *) echo "$DOCS_WHERE: curl to $a: only the test server is reachable" >> "$DOCS_FAILURES"; return 1 ;;
        esac ;;
    esac
    if [ "$prev" = "-w" ] || [ "$prev" = "--write-out" ]; then a="$a$marker"; seen_w=1; fi
    case "$a" in -N|--no-buffer) stream=1 ;; esac
    args+=("$a"); prev="$a"
  done
  [ -n "$seen_w" ] || args+=(-w "$marker")
  if [ -n "$stream" ]; then args+=(--max-time 2); else args+=(--max-time 30); fi
  err=$(mktemp)
  command curl "${args[@]}" 2>"$err" || rc=$?
  status=$(sed -n 's/.*@@docs-status \([0-9]*\)@@.*/\1/p' "$err" | tail -n 1)
  sed 's/@@docs-status [0-9]*@@//' "$err" | grep -v '^$' >&2 || true
  rm -f "$err"
  if [ -n "$stream" ] && [ "$rc" = 28 ] && [ "$status" = 200 ]; then rc=0; fi
  local want="${DOCS_EXPECT:-2xx}"
  case "$status" in
    2??) [ "$want" = 2xx ] || [ "$want" = "$status" ] || status="$status (wanted $want)" ;;
    *) [ "$want" = "$status" ] || status="$status (wanted $want)" ;;
  esac
  if [ "$rc" != 0 ] || [[ "$status" == *wanted* ]] || [ -z "$status" ]; then
    echo "$DOCS_WHERE: curl exit $rc, status ${status:-none}: curl $*" >> "$DOCS_FAILURES"
    return 1
  fi
}
set -e
"#;

/// The script of one page: the README's tour, then the page's `sh run` blocks, each logical
/// line that runs curl preceded by where it is and the status its comment expects.
fn script(blocks: &[&Block], url: &str) -> String {
    let mut out = String::from(PRELUDE);
    for b in blocks {
        let logical = logical_lines(&b.lines);
        let mut starts: HashMap<usize, (usize, String)> = HashMap::new();
        for (first, last, text) in &logical {
            starts.insert(*first, (*last, text.clone()));
        }
        let mut expect_until: Option<usize> = None;
        for (i, line) in b.lines.iter().enumerate() {
            if let Some((last, text)) = starts.get(&i) {
                out.push_str(&format!("DOCS_WHERE='{}:{}'\n", b.page, b.line + i));
                let want = comment(&b.lines[*last]).and_then(leading_status);
                if let (Some(want), true) = (want, text.contains("curl")) {
                    out.push_str(&format!("export DOCS_EXPECT={want}\n"));
                    expect_until = Some(*last);
                }
            }
            out.push_str(&line.replace(DOCS_URL, url));
            out.push('\n');
            if expect_until == Some(i) {
                out.push_str("unset DOCS_EXPECT\n");
                expect_until = None;
            }
        }
    }
    out.push_str("echo @@docs-done@@\n");
    out
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "docs-commands-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one page's script against a server of its own; the failure, if any.
fn run_page(page: &str, blocks: &[&Block]) -> Result<Duration, String> {
    let started = Instant::now();
    let bins = binaries();
    let work = TempDir::new("work");
    let data = TempDir::new("data");
    let data_dir = data.0.to_string_lossy().into_owned();
    let server = LocalServer::start(&bins.server, &[("WORKSPACE_DATA_DIR", &data_dir)]);
    let url = format!("http://{}", server.addr);
    // `./target/local/workspace-local` in the docs is this build.
    std::fs::create_dir_all(work.0.join("target/local")).unwrap();
    std::os::unix::fs::symlink(&bins.server, work.0.join("target/local/workspace-local")).unwrap();
    let failures = work.0.join("failures.txt");
    std::fs::write(&failures, "").unwrap();
    let text = script(blocks, &url);
    std::fs::write(work.0.join("script.sh"), &text).unwrap();
    let path = format!(
        "{}:{}",
        bins.ws.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("script.sh")
        .current_dir(&work.0)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &work.0)
        .env("WS_CONFIG", work.0.join("ws-config.json"))
        .env("WORKSPACE_DATA_DIR", &data_dir)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .env("DOCS_SERVER", &url)
        .env("DOCS_FAILURES", &failures)
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failed = std::fs::read_to_string(&failures).unwrap_or_default();
    if out.status.success() && failed.trim().is_empty() && stdout.contains("@@docs-done@@") {
        return Ok(started.elapsed());
    }
    Err(format!(
        "{page}: the documented commands failed ({})\n{failed}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- server\n{}",
        out.status,
        server.stderr()
    ))
}

#[test]
fn every_sh_run_block_runs_against_a_local_server() {
    let mut by_page: BTreeMap<String, Vec<Block>> = BTreeMap::new();
    for b in all_blocks().into_iter().filter(Block::runs) {
        by_page.entry(b.page.clone()).or_default().push(b);
    }
    let readme = by_page.get("README.md").cloned().unwrap_or_default();
    assert!(
        !readme.is_empty(),
        "the README's tour is a `sh run` block: the other pages continue it"
    );
    binaries();
    let results: Vec<(String, Result<Duration, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = by_page
            .iter()
            .map(|(page, blocks)| {
                let readme = &readme;
                s.spawn(move || {
                    let mut all: Vec<&Block> = Vec::new();
                    if page != "README.md" {
                        all.extend(readme.iter());
                    }
                    all.extend(blocks.iter());
                    (page.clone(), run_page(page, &all))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failed = Vec::new();
    for (page, result) in results {
        match result {
            Ok(took) => eprintln!("{page}: ran in {took:.1?}"),
            Err(e) => failed.push(e),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn the_shell_helpers_read_commands_as_bash_does() {
    assert_eq!(strip_comment("curl -s 'a#b' # 409 x"), "curl -s 'a#b' ");
    assert_eq!(comment("curl x   # 409 conflict"), Some("409 conflict"));
    assert_eq!(
        simple_commands(
            r#"KEY=$(./target/local/workspace-local keys create --tenant local | head -n 1)"#
        ),
        vec![
            vec![
                "./target/local/workspace-local",
                "keys",
                "create",
                "--tenant",
                "local"
            ],
            vec!["head", "-n", "1"],
        ]
    );
    assert_eq!(
        simple_commands(r#"echo "hi" | ws put a.md && ws cat a.md > out"#),
        vec![
            vec!["echo", "hi"],
            vec!["ws", "put", "a.md"],
            vec!["ws", "cat", "a.md"]
        ]
    );
    assert_eq!(
        usage_positionals(" ws put [OPTIONS] <PATH> [FILE]"),
        Some(2)
    );
    assert_eq!(
        usage_positionals(" sam build [OPTIONS] [RESOURCE_LOGICAL_ID]"),
        Some(1)
    );
    assert_eq!(usage_positionals(" x [OPTIONS] <A>..."), None);
    assert_eq!(
        slug("Large files: two-step uploads"),
        "large-files-two-step-uploads"
    );
    assert_eq!(slug("`ws`, the command line"), "ws-the-command-line");
    assert_eq!(
        repo_path("@events/get-file.json"),
        Some("events/get-file.json")
    );
    assert_eq!(repo_path("functions/<name>"), None);
}
