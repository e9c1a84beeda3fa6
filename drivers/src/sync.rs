//! The driver's one way to take a lock.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data of a lock a panicking thread left poisoned: every critical section
/// in this crate leaves its data whole at each point it could panic (it only moves values in and
/// out), so the data is as good as before and one panic does not turn into one on every later
/// call.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
