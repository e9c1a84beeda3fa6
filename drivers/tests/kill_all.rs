//! `stdio::kill_all`: every stdio server's group SIGKILLed at once, one in use and one being
//! closed alike. A test binary of its own: `kill_all` reaches every server this process started,
//! so it would end the servers of the other tests running beside it.

use mcp_connect::{connect_stdio, ClientConfig, StdioConfig};
use mcp_testkit::{group_alive, pid_alive, serve_bin, wait_until};
use std::time::Duration;

#[test]
fn kill_all_ends_every_server_group_at_once_and_never_a_reaped_one() {
    smol::block_on(async {
        // A wrapper with a grandchild, both deaf to SIGTERM and to stdin closing: only SIGKILL
        // ends them, which the graceful sequence would send after 20 minutes.
        let script = format!(
            "trap '' TERM; sleep 300 & exec '{}' --behave ignore-eof",
            serve_bin().display()
        );
        let mut config = StdioConfig::new("sh").args(["-c", &script]);
        config.close_grace = Duration::from_secs(600);
        config.term_grace = Duration::from_secs(600);
        let closing = connect_stdio(config.clone(), ClientConfig::default())
            .await
            .expect("connect");
        let in_use = connect_stdio(config, ClientConfig::default())
            .await
            .expect("connect");
        let pids = [&closing, &in_use].map(|c| c.transport().pid().expect("a child process"));
        assert!(pids.iter().all(|&p| group_alive(p)));

        // The close is under way: polled once, it has closed stdin and handed the rest of the
        // sequence to its thread, which now waits out the first grace.
        let mut close = Box::pin(closing.close());
        assert!(smol::future::poll_once(&mut close).await.is_none());

        assert_eq!(mcp_connect::stdio::kill_all(), 2);
        // The close ends as soon as its group is empty, long before its graces.
        let closed = smol::future::or(async { Some(close.await) }, async {
            smol::Timer::after(Duration::from_secs(30)).await;
            None
        })
        .await;
        assert!(matches!(closed, Some(Ok(()))), "{closed:?}");
        assert!(
            wait_until(Duration::from_secs(10), || pids
                .iter()
                .all(|&p| !pid_alive(p) && !group_alive(p))),
            "a server group outlived kill_all"
        );
        in_use.close().await.expect("close");
        // Both children are reaped now: their groups' ids are no longer ours to signal.
        assert_eq!(mcp_connect::stdio::kill_all(), 0);
    })
}
