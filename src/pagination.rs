//! Following `nextCursor` across pages of a listing, bounded.
//!
//! > "Cursors are opaque" … "Clients MUST treat a missing `nextCursor` as the end of results"
//! > — MCP 2025-11-25, Utilities § Pagination

use std::collections::HashSet;

/// The guard on following `nextCursor` across the pages of a listing (`tools/list`,
/// `resources/list`, `resources/templates/list`, `prompts/list`): cursors are opaque, so a server
/// that repeats one, never stops paging, or sends more than the application keeps, must not keep a
/// client listing (and buffering) forever. Cursors are remembered by a 64-bit hash, so memory grows
/// by 8 bytes a page whatever the server sends.
#[derive(Debug, Clone)]
pub struct Pagination {
    seen: HashSet<u64>,
    pages: usize,
    max_pages: usize,
    bytes: usize,
    max_bytes: usize,
}

/// Why a listing stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationError {
    /// The server sent a cursor it had sent before (the cursor's start is kept for the message).
    #[error("the server repeated cursor {0:?}")]
    RepeatedCursor(String),
    /// The server sent more pages than the cap.
    #[error("more than {0} pages")]
    TooManyPages(usize),
    /// The pages together hold more than the cap, in bytes.
    #[error("the items listed exceed {0} bytes")]
    TooLarge(usize),
}

impl Pagination {
    /// A guard allowing at most `max_pages` pages (and any number of bytes).
    pub fn new(max_pages: usize) -> Self {
        Pagination {
            seen: HashSet::new(),
            pages: 0,
            max_pages,
            bytes: 0,
            max_bytes: usize::MAX,
        }
    }

    /// Also allows at most `max_bytes` of items across all pages.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Call before requesting each page: fails once the cap is reached.
    pub fn admit(&mut self) -> Result<(), PaginationError> {
        if self.pages >= self.max_pages {
            return Err(PaginationError::TooManyPages(self.max_pages));
        }
        self.pages += 1;
        Ok(())
    }

    /// Call with each page's `nextCursor` and the size of its items: the cursor to request next
    /// (`None`: that was the last page), or an error for a cursor seen before or for items past
    /// the byte cap.
    pub fn follow(
        &mut self,
        next_cursor: Option<String>,
        page_bytes: usize,
    ) -> Result<Option<String>, PaginationError> {
        self.bytes = self.bytes.saturating_add(page_bytes);
        if self.bytes > self.max_bytes {
            return Err(PaginationError::TooLarge(self.max_bytes));
        }
        match next_cursor {
            None => Ok(None),
            Some(c) if !self.seen.insert(hash(&c)) => Err(PaginationError::RepeatedCursor(
                c.chars().take(80).collect(),
            )),
            Some(c) => Ok(Some(c)),
        }
    }
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    // Fixed keys: deterministic, as the core must be. A crafted collision only ends a listing early.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}
