//! The console in a real browser (issue 27): the Playwright suite of `tests/console/` (pytest,
//! Playwright for Python driving Debian's `/usr/bin/chromium`, headless) against the local
//! server built here: one test per flow a person runs (sign in and out, browse and page,
//! view, edit, the conflict flow with two people, upload with progress, delete, history and
//! diff, restore, snapshots, a fork merge, live updates, a keyboard-only save), the security
//! checks (hostile contents render inert, the key stays out of URLs and cookies, the policy
//! header on every asset and no violation of it) and axe-core on every screen in light and
//! dark. Playwright and pytest are installed into `.venv` by `tests/run.sh`
//! (tests/requirements.txt), which also installs chromium when it is missing; axe-core
//! comes from npm (`tests/console/package-lock.json`), installed by the suite when missing.
//! A skipped browser test counts as a failure: every test must run.

use std::process::Command;
use workspace_tests::local::build_local_server;
use workspace_tests::root;

#[test]
fn the_console_works_in_a_real_browser() {
    let python = root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "the test venv is missing: run `bash tests/run.sh` once (it installs tests/requirements.txt into .venv)"
    );
    let probe = Command::new(&python)
        .args(["-c", "import playwright, pytest"])
        .output()
        .expect("run the venv's python");
    assert!(
        probe.status.success(),
        "Playwright or pytest is not installed in .venv: run `bash tests/run.sh` once\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    assert!(
        std::path::Path::new("/usr/bin/chromium").exists(),
        "Debian's chromium is missing: `apt-get install -y chromium` (tests/run.sh does it as root)"
    );
    let binary = build_local_server();
    let out = Command::new(&python)
        .current_dir(root())
        .env("WORKSPACE_LOCAL_BIN", &binary)
        .env("NO_COLOR", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-m",
            "pytest",
            "tests/console",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfEs",
        ])
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "the browser suite failed:\n{stdout}\n{stderr}"
    );
    // The summary names nothing but passes (and warnings): a skip, an xfail or a deselect
    // would be a test that did not run.
    let summary = stdout
        .lines()
        .rev()
        .find(|l| l.contains(" in ") && l.contains("passed"))
        .unwrap_or_else(|| panic!("no pytest summary:\n{stdout}"));
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of passes in {summary:?}"));
    for word in [
        "skipped",
        "xfailed",
        "xpassed",
        "deselected",
        "error",
        "failed",
    ] {
        assert!(
            !summary.contains(word),
            "the browser suite did not run every test ({summary}):\n{stdout}"
        );
    }
    assert!(
        passed >= 20,
        "only {passed} browser tests ran ({summary}):\n{stdout}"
    );
}
