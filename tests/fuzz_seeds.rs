//! Replays the committed fuzz seeds (`fuzz/seeds/<target>/`) through the same checks the fuzz
//! targets run (`fuzz/checks.rs`), as ordinary tests: no nightly, no libFuzzer.
//!
//! Files named `crash-*` reproduce bugs that fuzzing found; they run in their own tests
//! (`*_crash_reproducers`) so that a known bug does not hide a regression in the other seeds.

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

/// The seed files of one target, split into (seeds, crash reproducers). Panics when the directory is
/// missing or holds no seeds, so the replay cannot silently check nothing.
fn seeds(target: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed directory {} unreadable: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let (crashes, seeds): (Vec<_>, Vec<_>) = files.into_iter().partition(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("crash-"))
    });
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    (seeds, crashes)
}

/// Runs `check` on every file, reporting all failures by name.
fn replay(files: &[PathBuf], check: fn(&[u8])) {
    let mut failed = Vec::new();
    for path in files {
        let data = std::fs::read(path).expect("read seed");
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(failed.is_empty(), "seeds failing their checks: {failed:#?}");
}

#[test]
fn framer_seeds() {
    replay(&seeds("framer").0, checks::check_framer);
}

#[test]
fn framer_crash_reproducers() {
    replay(&seeds("framer").1, checks::check_framer);
}

#[test]
fn session_seeds() {
    replay(&seeds("session").0, checks::check_session);
}

#[test]
fn session_crash_reproducers() {
    replay(&seeds("session").1, checks::check_session);
}

#[test]
fn eras_seeds() {
    replay(&seeds("eras").0, checks::check_eras);
}

#[test]
fn sse_seeds() {
    replay(&seeds("sse").0, checks::check_sse);
}

#[test]
fn text_seeds() {
    replay(&seeds("text").0, checks::check_text);
}

#[test]
fn oauth_seeds() {
    replay(&seeds("oauth").0, |data| drop(checks::check_oauth(data)));
}

#[test]
fn oauth_crash_reproducers() {
    let (_, crashes) = seeds("oauth");
    assert!(!crashes.is_empty());
    replay(&crashes, |data| drop(checks::check_oauth(data)));
}

#[test]
fn oauth_seeds_reach_where_their_names_say() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/oauth");
    let end = |name: &str| checks::check_oauth(&std::fs::read(dir.join(name)).unwrap());
    assert_eq!(end("full-flow"), "done: AT");
    assert_eq!(end("challenge-scope-preregistered"), "done: AT");
    assert_eq!(end("client-credentials"), "done: AT");
    assert_eq!(end("legacy-fallback"), "done: AT");
    assert_eq!(
        end("expired-refresh-fails-then-stored"),
        "done: FUZZ-STORED-ACCESS"
    );
    assert!(
        end("wrong-state").contains("state does not match"),
        "{}",
        end("wrong-state")
    );
    assert!(end("insecure-token-endpoint").contains("neither HTTPS"));
}

#[test]
fn seed_headers_are_well_formed() {
    // Every seed carries at least a full header, so that its body is what the name says.
    for (target, len) in [
        ("framer", checks::FRAMER_HEADER),
        ("session", checks::SESSION_HEADER),
        ("eras", checks::ERAS_HEADER),
        ("oauth", checks::OAUTH_HEADER),
    ] {
        for path in seeds(target).0 {
            let n = std::fs::metadata(&path).expect("stat seed").len() as usize;
            assert!(n >= len, "{} is shorter than its header", path.display());
        }
    }
}

#[test]
fn skills_seeds() {
    replay(&seeds("skills").0, checks::check_skills);
}
