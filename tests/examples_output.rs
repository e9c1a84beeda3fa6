//! The examples' demos printing into a pipe nobody reads (`… | head -1` once `head` is gone): they
//! end as they would have, quietly, as the `mcp-client` command does; no panic ("failed printing
//! to stdout: Broken pipe").

use mcp_testkit::example_bin;
use std::process::{Command, Stdio};

/// Runs example `name` with its stdout one end of a stream whose other end is closed before it
/// starts (every write it makes there fails with a broken pipe, `EPIPE`, as into a pipe whose
/// reader left): its exit status and stderr.
fn into_a_closed_pipe(name: &str) -> (std::process::ExitStatus, String) {
    let (writer, reader) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
    drop(reader);
    let out = Command::new(example_bin(name))
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(writer)))
        .stderr(Stdio::piped())
        .env_remove("RUST_LOG")
        .output()
        .expect("run the example");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_demos_end_quietly_when_their_output_is_not_read() {
    for name in ["mcp-client", "mcp-http"] {
        let (status, stderr) = into_a_closed_pipe(name);
        assert!(status.success(), "{name}: {status:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{name}: {stderr}");
    }
}
