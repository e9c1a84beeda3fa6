//! The OAuth token stores of the driver: `FileStore` keeps credentials between runs, keyed by
//! issuer and resource, in a file only its owner can read, in a directory it creates for its
//! owner alone.

use mcp_connect::proto::oauth::{AuthMethod, Client, ClientKind, Credentials, Secret, Tokens};
use mcp_connect::{FileStore, MemoryStore, TokenStore};
use mcp_testkit::TempDir;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn credentials(issuer: &str, resource: &str, token: &str) -> Credentials {
    Credentials {
        issuer: issuer.into(),
        resource: resource.into(),
        token_endpoint: format!("{issuer}/token"),
        client: Client {
            client_id: "client".into(),
            client_secret: Some(Secret::new("client-secret")),
            auth_method: AuthMethod::ClientSecretBasic,
            kind: ClientKind::Registered,
            secret_expires_at: None,
        },
        tokens: Tokens {
            access_token: Secret::new(token),
            issued_at: 1,
            expires_at: None,
            refresh_token: None,
            scope: None,
            requested_scope: None,
            dpop_jkt: None,
        },
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

const AS: &str = "https://as.example";
const MCP: &str = "https://mcp.example/mcp";

#[test]
fn both_stores_keep_credentials_by_issuer_and_resource() {
    let dir = TempDir::new("token-store");
    let path = dir.path().join("credentials.json");
    let stores: [Box<dyn TokenStore>; 2] = [
        Box::new(MemoryStore::new()),
        Box::new(FileStore::new(&path)),
    ];
    for store in stores {
        store.save(&credentials(AS, MCP, "one"));
        store.save(&credentials(AS, "https://other.example/mcp", "two"));
        store.save(&credentials("https://as2.example", MCP, "three"));
        store.save(&credentials(AS, MCP, "four"));
        assert_eq!(store.load(AS, MCP), Some(credentials(AS, MCP, "four")));
        assert_eq!(
            store.load("https://as2.example", MCP),
            Some(credentials("https://as2.example", MCP, "three"))
        );
        // Issuers are compared as sent: a trailing slash is another issuer.
        assert_eq!(store.load("https://as.example/", MCP), None);
        store.remove(AS, MCP);
        assert_eq!(store.load(AS, MCP), None);
        assert!(store.load(AS, "https://other.example/mcp").is_some());
    }
    // Between runs: another store on the same file reads what was kept, and no temporary file
    // is left beside it (only the lock file the stores share).
    let again = FileStore::new(&path);
    assert!(again.load(AS, "https://other.example/mcp").is_some());
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["credentials.json", "credentials.json.lock"]);
    assert_eq!(mode(&dir.path().join("credentials.json.lock")), 0o600);
}

#[test]
fn the_file_and_the_directories_it_creates_are_its_owners_alone() {
    let dir = TempDir::new("token-store");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("a/b/credentials.json");
    let store = FileStore::new(&path);
    store.save(&credentials(AS, MCP, "one"));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    assert_eq!(mode(&dir.path().join("a/b")), 0o700);
    // A directory that was there keeps its mode.
    assert_eq!(mode(dir.path()), 0o755);

    // A file made readable by others (by hand, say) is replaced by one that is not.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    store.save(&credentials(AS, MCP, "two"));
    assert_eq!(mode(&path), 0o600);

    // A readable temporary file a crashed run left behind is not written through: each save
    // creates its own.
    let mut leftover = path.clone().into_os_string();
    leftover.push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&leftover, b"junk").unwrap();
    std::fs::set_permissions(&leftover, std::fs::Permissions::from_mode(0o644)).unwrap();
    store.save(&credentials(AS, MCP, "three"));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(store.load(AS, MCP), Some(credentials(AS, MCP, "three")));
    assert_eq!(std::fs::read(&leftover).unwrap(), b"junk");
}

#[test]
fn a_file_that_cannot_be_read_counts_as_empty_and_is_replaced() {
    let dir = TempDir::new("token-store");
    let path = dir.path().join("credentials.json");
    std::fs::write(&path, b"{ not json").unwrap();
    let store = FileStore::new(&path);
    assert_eq!(store.load(AS, MCP), None);
    store.save(&credentials(AS, MCP, "one"));
    assert_eq!(
        FileStore::new(&path).load(AS, MCP),
        Some(credentials(AS, MCP, "one"))
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 16: T5 (several stores on one path), T16 (no planted link followed).

/// T5: two `FileStore`s on one path in one process (as the CLI makes one per connection), each
/// saving 300 times from its own thread: a third entry saved first is never lost, and each
/// thread's last save is what is kept.
#[test]
fn filestore_two_instances_one_process() {
    let dir = TempDir::new("token-store");
    let path = dir.path().join("credentials.json");
    FileStore::new(&path).save(&credentials("https://third.example", MCP, "kept"));
    let threads: Vec<_> = ["https://a.example", "https://b.example"]
        .into_iter()
        .map(|issuer| {
            // The same file by another name: one lock per file, not per spelling.
            let path = if issuer.contains('b') {
                dir.path().join(".").join("credentials.json")
            } else {
                path.clone()
            };
            std::thread::spawn(move || {
                let store = FileStore::new(path);
                for n in 0..300 {
                    store.save(&credentials(issuer, MCP, &format!("t{n}")));
                    assert!(
                        store.load("https://third.example", MCP).is_some(),
                        "the third entry was lost at {issuer}'s save {n}"
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let store = FileStore::new(&path);
    assert_eq!(
        store.load("https://third.example", MCP),
        Some(credentials("https://third.example", MCP, "kept"))
    );
    for issuer in ["https://a.example", "https://b.example"] {
        assert_eq!(
            store.load(issuer, MCP),
            Some(credentials(issuer, MCP, "t299"))
        );
    }
}

/// Set in the processes [`filestore_several_processes_lose_nothing`] starts: the store file,
/// and which of them this one is.
const CHILD_PATH: &str = "MCP_TEST_STORE_CHILD_PATH";
const CHILD_ID: &str = "MCP_TEST_STORE_CHILD_ID";
const CHILD_SAVES: usize = 60;

/// The body of the processes [`filestore_several_processes_lose_nothing`] starts (this test
/// binary, run for this test alone); does nothing in an ordinary run.
#[test]
fn filestore_child_saves_its_entries() {
    let (Some(path), Some(id)) = (std::env::var_os(CHILD_PATH), std::env::var_os(CHILD_ID)) else {
        return;
    };
    let id = id.into_string().unwrap();
    let store = FileStore::new(path);
    for n in 0..CHILD_SAVES {
        store.save(&credentials(
            &format!("https://child-{id}.example"),
            &format!("https://mcp.example/{n}"),
            "t",
        ));
    }
}

/// T5 across processes: four processes saving their own entries at once into one file lose
/// none of them (the advisory lock makes each read-modify-write whole).
#[test]
fn filestore_several_processes_lose_nothing() {
    let dir = TempDir::new("token-store");
    let path = dir.path().join("credentials.json");
    FileStore::new(&path).save(&credentials("https://third.example", MCP, "kept"));
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|id| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "filestore_child_saves_its_entries",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env(CHILD_PATH, &path)
                .env(CHILD_ID, id.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let store = FileStore::new(&path);
    assert!(store.load("https://third.example", MCP).is_some());
    let mut missing = Vec::new();
    for id in 0..4 {
        for n in 0..CHILD_SAVES {
            let issuer = format!("https://child-{id}.example");
            let resource = format!("https://mcp.example/{n}");
            if store.load(&issuer, &resource).is_none() {
                missing.push(format!("{issuer} {resource}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "lost {} entries: {missing:?}",
        missing.len()
    );
}

/// T16: in a directory others can write to, links planted where the store writes — the
/// temporary name a save used to take (`PATH.PID.tmp`), the lock file, the file itself — are
/// never followed: the files they point to are untouched (content and mode).
#[test]
fn filestore_follows_no_planted_symlink() {
    use std::os::unix::fs::symlink;
    let dir = TempDir::new("token-store");
    let victim = dir.path().join("victim.txt");
    let untouched = |what: &str| {
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"the user's own file",
            "{what}"
        );
        assert_eq!(mode(&victim), 0o644, "{what}");
    };
    let plant = || {
        std::fs::write(&victim, b"the user's own file").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    };
    let path = dir.path().join("credentials.json");
    let store = FileStore::new(&path);
    // At the temporary name of this process.
    plant();
    let mut tmp = path.clone().into_os_string();
    tmp.push(format!(".{}.tmp", std::process::id()));
    symlink(&victim, &tmp).unwrap();
    store.save(&credentials(AS, MCP, "one"));
    untouched("a link at the temporary name");
    assert_eq!(store.load(AS, MCP), Some(credentials(AS, MCP, "one")));
    std::fs::remove_file(&tmp).unwrap();
    // At the credentials file: it is not read through, and a save replaces the link itself.
    std::fs::remove_file(&path).unwrap();
    plant();
    symlink(&victim, &path).unwrap();
    assert_eq!(store.load(AS, MCP), None, "read through a link");
    store.save(&credentials(AS, MCP, "two"));
    untouched("a link at the file");
    assert!(!std::fs::symlink_metadata(&path)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(store.load(AS, MCP), Some(credentials(AS, MCP, "two")));
    // At the lock file: the save is given up rather than open the link.
    let lock = dir.path().join("credentials.json.lock");
    std::fs::remove_file(&lock).unwrap();
    plant();
    symlink(&victim, &lock).unwrap();
    store.save(&credentials(AS, MCP, "three"));
    untouched("a link at the lock file");
    assert_eq!(store.load(AS, MCP), Some(credentials(AS, MCP, "two")));
}

#[test]
fn both_stores_find_a_registration_by_its_issuer_alone() {
    let dir = TempDir::new("token-store");
    let path = dir.path().join("credentials.json");
    let stores: [Box<dyn TokenStore>; 2] = [
        Box::new(MemoryStore::new()),
        Box::new(FileStore::new(&path)),
    ];
    let as2 = "https://as2.example";
    for store in stores {
        assert_eq!(store.registration(AS), None);
        // Hostile: entries for two issuers; each issuer gets its own, never the other's.
        let mut mine = credentials(AS, MCP, "one");
        mine.client.client_id = "mine".into();
        let mut theirs = credentials(as2, "https://other.example/mcp", "two");
        theirs.client.client_id = "theirs".into();
        store.save(&mine);
        store.save(&theirs);
        assert_eq!(store.registration(AS).unwrap().client.client_id, "mine");
        assert_eq!(store.registration(as2).unwrap().client.client_id, "theirs");
        assert_eq!(store.registration("https://as3.example"), None);
        // The latest registration of the issuer, whichever resource it was made for.
        let mut later = credentials(AS, "https://third.example/mcp", "three");
        later.client.client_id = "later".into();
        later.tokens.issued_at = 5;
        store.save(&later);
        assert_eq!(store.registration(AS).unwrap().client.client_id, "later");
        // A pre-registered client is no registration to share.
        let mut pre = credentials("https://as4.example", MCP, "four");
        pre.client.kind = ClientKind::PreRegistered;
        store.save(&pre);
        assert_eq!(store.registration("https://as4.example"), None);
    }
}
