//! The application ids and partition names an RM sent last, kept per
//! calling thread so that the next request that names them shares their
//! strings.
//!
//! A decoded request owns its strings: it crosses to the core thread,
//! which reads the application id and partition name of each ask and
//! then drops them. Made afresh for every request (a k8shim sends one per
//! pod) or for every ask whose application differs from the one before
//! (asks of several applications in turn), each string is allocated on
//! the RM's thread and freed on the core thread: a malloc and a
//! cross-thread free, ~230 instructions an ask. A string shared with an
//! earlier request costs two reference-count updates instead.
//!
//! The cache is per thread, so it takes no lock; it holds at most
//! [`SLOTS`] strings of at most [`LONGEST`] bytes each, replaced oldest
//! first, whatever the RM sends.

use std::cell::RefCell;
use std::sync::Arc;

/// Strings kept per thread: an RM's partitions and the applications whose
/// pods it is submitting at once.
const SLOTS: usize = 8;

/// Longer strings are not kept (an id this long is rare, and a hostile
/// one should not stay in memory).
const LONGEST: usize = 256;

struct Recent {
    kept: [Option<Arc<str>>; SLOTS],
    /// The slot the next new string takes.
    next: usize,
}

thread_local! {
    static RECENT: RefCell<Recent> = const {
        RefCell::new(Recent { kept: [const { None }; SLOTS], next: 0 })
    };
}

/// `s` as a shared string: one kept on this thread when equal, else a new
/// one, kept when short enough.
pub(crate) fn shared(s: &str) -> Arc<str> {
    if s.len() > LONGEST {
        return Arc::from(s);
    }
    // `try_with`: while the thread exits, its cache may already be gone.
    RECENT
        .try_with(|r| {
            let mut r = r.borrow_mut();
            if let Some(a) = r.kept.iter().flatten().find(|a| ***a == *s) {
                return a.clone();
            }
            let a: Arc<str> = Arc::from(s);
            let at = r.next;
            r.kept[at] = Some(a.clone());
            r.next = (at + 1) % SLOTS;
            a
        })
        .unwrap_or_else(|_| Arc::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_sent_again_is_shared_until_newer_ones_push_it_out() {
        let first = shared("app-1");
        assert!(Arc::ptr_eq(&first, &shared("app-1")));
        // SLOTS - 1 others still leave it kept...
        for i in 0..SLOTS - 1 {
            shared(&format!("other-{i}"));
        }
        assert!(Arc::ptr_eq(&first, &shared("app-1")));
        // ...one more pushes out the oldest, which it is.
        shared("one-more");
        let again = shared("app-1");
        assert_eq!(*again, *"app-1");
        assert!(!Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn equal_text_only_is_shared_and_long_strings_are_not_kept() {
        let a = shared("app");
        assert!(!Arc::ptr_eq(&a, &shared("app ")));
        assert!(!Arc::ptr_eq(&a, &shared("App")));
        assert_eq!(&*shared(""), "");
        let long = "x".repeat(LONGEST + 1);
        let l = shared(&long);
        assert_eq!(*l, *long);
        assert!(!Arc::ptr_eq(&l, &shared(&long)));
        // At the limit it is kept.
        let edge = "y".repeat(LONGEST);
        assert!(Arc::ptr_eq(&shared(&edge), &shared(&edge)));
    }

    #[test]
    fn each_thread_keeps_its_own() {
        let here = shared("partition-a");
        let there = std::thread::spawn(|| shared("partition-a")).join().unwrap();
        assert_eq!(here, there);
        assert!(!Arc::ptr_eq(&here, &there));
        // The other thread's copy lives on in `there` though its cache is gone.
        assert_eq!(&*there, "partition-a");
    }
}
