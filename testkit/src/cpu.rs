//! CPU time of this process, precisely: the sum over its live threads of the time each spent on a
//! CPU (`/proc/self/task/*/schedstat`, nanoseconds), where the 10 ms ticks of `/proc/self/stat`
//! are too coarse for a per-call figure. Linux only; zero elsewhere. A thread that exited takes
//! its time with it: measure with the threads that do the work alive.

use std::time::Duration;

/// This process's CPU time so far (its live threads).
pub fn process_cpu() -> Duration {
    tasks_cpu("/proc/self/task")
}

/// The CPU time so far of the live threads listed under `tasks`, a `/proc/PID/task` folder
/// (another process's: a server's, say).
pub fn tasks_cpu(tasks: impl AsRef<std::path::Path>) -> Duration {
    let Ok(tasks) = std::fs::read_dir(tasks) else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// What this process's live threads cost so far, leaving out those whose name starts with
/// `exclude` (an in-process server's: [`crate::http_server::SERVER_THREADS`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadsCpu {
    /// Time on a CPU (`schedstat`'s first field, nanoseconds).
    pub cpu: Duration,
    /// How many times a thread was switched in (`schedstat`'s third field): every wake-up, every
    /// hand-off between threads counts one.
    pub switches: u64,
}

impl std::ops::Sub for ThreadsCpu {
    type Output = ThreadsCpu;
    /// What was spent between two readings (threads that exited meanwhile took theirs along).
    fn sub(self, earlier: ThreadsCpu) -> ThreadsCpu {
        ThreadsCpu {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            switches: self.switches.saturating_sub(earlier.switches),
        }
    }
}

/// This process's live threads' CPU time and switches, but those named `exclude…`. Linux only;
/// zero elsewhere.
pub fn threads_cpu(exclude: &str) -> ThreadsCpu {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return ThreadsCpu::default();
    };
    let mut total = ThreadsCpu::default();
    for task in tasks.filter_map(|t| t.ok()) {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if name.starts_with(exclude) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(path.join("schedstat")) else {
            continue;
        };
        let mut fields = stat
            .split_whitespace()
            .map(|f| f.parse::<u64>().unwrap_or(0));
        total.cpu += Duration::from_nanos(fields.next().unwrap_or(0));
        total.switches += fields.nth(1).unwrap_or(0);
    }
    total
}

/// Voluntary + involuntary context switches of this process's live threads.
pub fn context_switches() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}
