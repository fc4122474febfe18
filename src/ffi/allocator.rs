//! The bundled allocator's purge delay, for hosts of the C ABI.
//!
//! mimalloc v3 returns freed pages to the system one second after they
//! empty. The core frees in waves (each request the RM sent, decoded on
//! the RM's thread, once taken in; each placed ask's box), so a large
//! cluster's resident memory saws up by ~60-90 MiB between purges at
//! 100,000 nodes and a million asks. A delay of 100 ms keeps the peak
//! within ~20 MiB of the live heap at no measurable cost per allocation
//! (docs/performance-large.md, "The allocator's purge delay").
//!
//! Only the C ABI sets it: there the library's mimalloc serves the
//! library alone. A Rust program linking the crate gets mimalloc as its
//! own global allocator and keeps its own settings. An operator's
//! `MIMALLOC_PURGE_DELAY` (or its old name, `MIMALLOC_RESET_DELAY`) wins.

/// The delay the library sets, in milliseconds.
#[cfg(feature = "mimalloc")]
pub const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Sets the purge delay once per process, unless the operator set one.
pub(super) fn tune_once() {
    #[cfg(feature = "mimalloc")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let operator_set = ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
                .iter()
                .any(|v| std::env::var_os(v).is_some());
            if !operator_set {
                set_purge_delay(PURGE_DELAY_MS);
            }
        });
    }
}

/// `mi_option_purge_delay`: its place in `mi_option_t` (mimalloc v3's
/// `mimalloc.h`; `libmimalloc-sys` names it for v2 builds only).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The bundled v3's default delay: the option is changed only while it
/// still reads this, so a build whose option numbering differs changes
/// nothing.
#[cfg(feature = "mimalloc")]
const BUNDLED_DEFAULT_MS: std::ffi::c_long = 1000;

/// Sets the delay if the option holds the bundled default; returns the
/// delay in force afterwards.
#[cfg(feature = "mimalloc")]
fn set_purge_delay(ms: std::ffi::c_long) -> std::ffi::c_long {
    // SAFETY: mimalloc's option calls take any option number in range
    // (15 is below `_mi_option_last`) and are safe from any thread.
    let now = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
    if now != BUNDLED_DEFAULT_MS {
        return now;
    }
    // SAFETY: as above; the value is a plain number of milliseconds.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
}

#[cfg(all(test, feature = "mimalloc"))]
mod tests {
    use super::*;

    /// Run by the test below in a child process started with
    /// `MIMALLOC_PURGE_DELAY=4321`: the option number reads what mimalloc
    /// took from its own variable.
    #[test]
    #[ignore = "a probe the next test runs in a child process"]
    fn probe_the_option_number_reads_mimallocs_variable() {
        // 4321 is not the bundled default, so this only reads.
        assert_eq!(set_purge_delay(PURGE_DELAY_MS), 4321);
    }

    #[test]
    fn the_option_number_is_mimallocs_purge_delay_and_the_operators_value_wins() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "ffi::allocator::tests::probe_the_option_number_reads_mimallocs_variable",
                "--ignored",
                "--test-threads=1",
            ])
            .env("MIMALLOC_PURGE_DELAY", "4321")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        // In this process (no variable set by the test runner), the delay
        // is the library's once a scheduler is made. This half checks what
        // `tune_once` does; only the child above checks the option number
        // (a wrong number reading 1000 or 100 here would pass this half,
        // but not read the operator's 4321 there).
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none()
            && std::env::var_os("MIMALLOC_RESET_DELAY").is_none()
        {
            tune_once();
            assert_eq!(set_purge_delay(PURGE_DELAY_MS), PURGE_DELAY_MS);
        }
    }
}
