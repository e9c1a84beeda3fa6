//! Where a flow's credentials are kept: the [`TokenStore`] trait, [`MemoryStore`] (the default)
//! and [`FileStore`] (a JSON file, with its locking between stores and processes).

use crate::sync::lock;
use mcp_proto::oauth::{ClientKind, Credentials};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where credentials are kept between flows (and, for a persistent store, between runs),
/// keyed by the authorization server's issuer and the resource.
///
/// > "Clients that use pre-registered credentials, or persist client credentials obtained via
/// > Dynamic Client Registration, **MUST** associate those credentials with the specific
/// > authorization server that issued them, keyed by the authorization server's `issuer`
/// > identifier." — MCP 2026-07-28, Authorization Server Binding
pub trait TokenStore: Send + Sync {
    /// The credentials for this issuer and resource, if any.
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials>;
    /// Keeps credentials (replacing those of the same issuer and resource).
    fn save(&self, credentials: &Credentials);
    /// Forgets the credentials of this issuer and resource.
    fn remove(&self, issuer: &str, resource: &str);
    /// Credentials of this issuer for any resource that hold a dynamic registration, for a flow
    /// at another resource of the same authorization server to reuse the registration (only the
    /// client is taken, never the tokens: see
    /// [`Flow::on_loaded_with`](mcp_proto::oauth::Flow::on_loaded_with)). The default finds none,
    /// and every flow at a new resource registers again.
    fn registration(&self, issuer: &str) -> Option<Credentials> {
        let _ = issuer;
        None
    }
}

/// Of `entries`, the latest one of `issuer` with a dynamic registration.
fn latest_registration<'a>(
    entries: impl IntoIterator<Item = &'a Credentials>,
    issuer: &str,
) -> Option<&'a Credentials> {
    entries
        .into_iter()
        .filter(|c| c.issuer == issuer && c.client.kind == ClientKind::Registered)
        .max_by_key(|c| c.tokens.issued_at)
}

/// Credentials in memory, for the life of the process (the default store).
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<(String, String), Credentials>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials> {
        lock(&self.entries)
            .get(&(issuer.to_owned(), resource.to_owned()))
            .cloned()
    }

    fn save(&self, credentials: &Credentials) {
        lock(&self.entries).insert(
            (credentials.issuer.clone(), credentials.resource.clone()),
            credentials.clone(),
        );
    }

    fn remove(&self, issuer: &str, resource: &str) {
        lock(&self.entries).remove(&(issuer.to_owned(), resource.to_owned()));
    }

    fn registration(&self, issuer: &str) -> Option<Credentials> {
        latest_registration(lock(&self.entries).values(), issuer).cloned()
    }
}

/// Credentials in a JSON file that only its owner can read (mode 0600 on Unix, in a directory
/// created with mode 0700 when it does not exist), rewritten whole on every change.
///
/// Several stores on one path, in one process or in several, lose nothing of each other's:
/// every change is a read-modify-write under a lock held by one of them at a time — a
/// process-wide lock per canonical path, and an advisory lock (`flock`) on `PATH.lock` beside
/// the file for the other processes. The new contents go to a temporary file of a random name
/// (`PATH.<random>.tmp`), created afresh (`O_EXCL`) and never through a symbolic link
/// (`O_NOFOLLOW`), then renamed over the file, so a reader sees the old contents or the new,
/// never a part. The file itself is read without following a link either: a link planted in a
/// directory others can write to is neither followed, truncated nor `chmod`-ed.
///
/// A file that cannot be read (or is over [`MAX_STORE_FILE`] bytes) counts as empty; a change
/// that cannot be made (no lock within [`STORE_LOCK_WAIT`], a directory that cannot be
/// written) is lost: the flow still works, the next run authorizes again. The calls block the
/// calling thread for the file's I/O and the lock, as a [`TokenStore`] does. On Windows only
/// the process-wide lock applies.
///
/// It keeps what a flow ends with: tokens, and a dynamic registration (with the secret the
/// authorization server issued, if any). A pre-registered client's secret or key, given by the
/// application, is never among them ([`mcp_proto::oauth::PreRegistered`]).
pub struct FileStore {
    path: PathBuf,
}

/// The largest credentials file a [`FileStore`] reads; a larger one counts as empty.
pub const MAX_STORE_FILE: u64 = 16 * 1024 * 1024;

/// How long a [`FileStore`] change waits for another process's lock on the file before it is
/// given up.
pub const STORE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The process-wide locks of the files being changed, by canonical path: an entry lives while a
/// change of its file holds it (the map holds them weakly and forgets the dead ones).
fn path_lock(path: &std::path::Path) -> Arc<Mutex<()>> {
    use std::sync::{OnceLock, Weak};
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Weak<Mutex<()>>>>> = OnceLock::new();
    let mut locks = lock(LOCKS.get_or_init(Mutex::default));
    if let Some(live) = locks.get(path).and_then(Weak::upgrade) {
        return live;
    }
    locks.retain(|_, w| w.strong_count() > 0);
    let fresh = Arc::new(Mutex::new(()));
    locks.insert(path.to_owned(), Arc::downgrade(&fresh));
    fresh
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &std::path::Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Options that create or open a file for its owner alone and never through a symbolic link.
fn private_options() -> std::fs::OpenOptions {
    #[allow(unused_mut)]
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options
}

/// The advisory lock on `PATH.lock` (released when the file is closed), waiting at most
/// [`STORE_LOCK_WAIT`] for another process to release it.
#[cfg(unix)]
fn file_lock(path: &std::path::Path) -> Option<std::fs::File> {
    use rustix::fs::{flock, FlockOperation};
    let file = private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(with_suffix(path, ".lock"))
        .ok()?;
    let give_up = std::time::Instant::now() + STORE_LOCK_WAIT;
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Some(file),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {
                if std::time::Instant::now() >= give_up {
                    return None;
                }
                // Another process is changing the file: its change takes milliseconds.
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    }
}

#[cfg(not(unix))]
fn file_lock(_path: &std::path::Path) -> Option<()> {
    Some(())
}

/// A random suffix for a temporary file (the process id and a count where the system gives no
/// randomness: `O_EXCL` keeps a clash harmless).
fn temp_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut random = [0u8; 12];
    if getrandom::fill(&mut random).is_err() {
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        random[..4].copy_from_slice(&std::process::id().to_be_bytes());
        random[4..].copy_from_slice(&n.to_be_bytes());
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!(".{hex}.tmp")
}

impl FileStore {
    /// A store in this file (its directory is created when needed, readable by its owner alone).
    pub fn new(path: impl Into<PathBuf>) -> FileStore {
        FileStore { path: path.into() }
    }

    /// The default place: `$XDG_CONFIG_HOME/mcp-client/credentials.json`, else
    /// `~/.config/mcp-client/credentials.json` (`%APPDATA%\mcp-client\…` on Windows).
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                if cfg!(windows) {
                    std::env::var_os("APPDATA").map(PathBuf::from)
                } else {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config"))
                }
            })?;
        Some(base.join("mcp-client").join("credentials.json"))
    }

    fn read(path: &std::path::Path) -> Vec<Credentials> {
        use std::io::Read;
        let mut bytes = Vec::new();
        let read = private_options().read(true).open(path).and_then(|f| {
            f.take(MAX_STORE_FILE + 1).read_to_end(&mut bytes)?;
            Ok(())
        });
        if read.is_err() || bytes.len() as u64 > MAX_STORE_FILE {
            return Vec::new();
        }
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    /// Runs a read-modify-write of the file under both locks (`f` says whether it changed
    /// anything); when the locks cannot be had, the change is lost.
    fn change(&self, f: impl FnOnce(&mut Vec<Credentials>) -> bool) {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            // Only the directories created here; an existing one keeps its mode.
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        let _ = builder.create(dir);
        // One lock per file, however it is named: `a/../creds.json` and `creds.json` are one.
        let path = match (std::fs::canonicalize(dir), self.path.file_name()) {
            (Ok(dir), Some(name)) => dir.join(name),
            _ => self.path.clone(),
        };
        let in_process = path_lock(&path);
        let _process = lock(&in_process);
        let Some(_file) = file_lock(&path) else {
            return;
        };
        let mut entries = FileStore::read(&path);
        if f(&mut entries) {
            FileStore::write(&path, &entries);
        }
    }

    fn write(path: &std::path::Path, entries: &[Credentials]) {
        let Ok(json) = serde_json::to_vec_pretty(entries) else {
            return;
        };
        let tmp = with_suffix(path, &temp_suffix());
        let written = private_options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| {
                use std::io::Write;
                f.write_all(&json)?;
                f.sync_all()
            });
        // The rename replaces a link at `path` itself, never what it points to.
        if written.is_err() || std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

impl TokenStore for FileStore {
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials> {
        // Changes are renames: a read sees a whole file without taking the lock.
        FileStore::read(&self.path)
            .into_iter()
            .find(|c| c.issuer == issuer && c.resource == resource)
    }

    fn save(&self, credentials: &Credentials) {
        self.change(|entries| {
            entries.retain(|c| {
                !(c.issuer == credentials.issuer && c.resource == credentials.resource)
            });
            entries.push(credentials.clone());
            true
        });
    }

    fn registration(&self, issuer: &str) -> Option<Credentials> {
        latest_registration(&FileStore::read(&self.path), issuer).cloned()
    }

    fn remove(&self, issuer: &str, resource: &str) {
        self.change(|entries| {
            let before = entries.len();
            entries.retain(|c| !(c.issuer == issuer && c.resource == resource));
            entries.len() != before
        });
    }
}
