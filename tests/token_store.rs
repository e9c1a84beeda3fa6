//! The OAuth token stores of the driver: `FileStore` keeps credentials between runs, keyed by
//! issuer and resource, in a file only its owner can read, in a directory it creates for its
//! owner alone.

use mcp_client::proto::oauth::{AuthMethod, Client, ClientKind, Credentials, Secret, Tokens};
use mcp_client::{FileStore, MemoryStore, TokenStore};
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
    // is left beside it.
    let again = FileStore::new(&path);
    assert!(again.load(AS, "https://other.example/mcp").is_some());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["credentials.json"]);
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

    // So is one written through a readable temporary file a crashed run left behind.
    let mut leftover = path.clone().into_os_string();
    leftover.push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&leftover, b"junk").unwrap();
    std::fs::set_permissions(&leftover, std::fs::Permissions::from_mode(0o644)).unwrap();
    store.save(&credentials(AS, MCP, "three"));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(store.load(AS, MCP), Some(credentials(AS, MCP, "three")));
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
