//! The bundled allocator's settings, for hosts of the C ABI: its purge
//! delay, and no huge-page advice on its arenas.
//!
//! mimalloc v3 returns freed pages to the system one second after they
//! empty. The core frees in waves (each request the RM sent, decoded on
//! the RM's thread, once taken in; each placed ask's box), so a large
//! cluster's resident memory saws up by ~60-90 MiB between purges at
//! 100,000 nodes and a million asks. A delay of 100 ms keeps the peak
//! within ~20 MiB of the live heap at no measurable cost per allocation
//! (docs/performance-large.md, "The allocator's purge delay").
//!
//! mimalloc also asks the kernel for transparent huge pages on each arena
//! it maps (`MADV_HUGEPAGE`), where glibc's malloc and jemalloc leave that
//! to the system's policy. Where the host backs a VM's memory on first
//! touch, a fresh 2 MiB page cost 2.7 ms per MiB against 0.34 for 4 KiB
//! pages, on the core thread: the million-allocation runs went 14-29%
//! faster without the advice, with a lower peak
//! (docs/performance-large.md, "Huge pages"). The library switches the
//! advice off once mimalloc has started, which changes only what mimalloc
//! asks for its later mappings: the process-wide switch
//! (`PR_SET_THP_DISABLE`) that mimalloc makes when `MIMALLOC_ALLOW_THP=0`
//! is set at start-up stays with the operator. A system whose policy is
//! `always` still gives the library huge pages.
//!
//! Only the C ABI sets these, first thing in every entry point (so before
//! the library's first allocation maps an arena): there the library's
//! mimalloc serves the library alone. A Rust program linking the crate
//! gets mimalloc as its own global allocator and keeps its own settings.
//! An operator's variable wins: `MIMALLOC_PURGE_DELAY` (or its old name,
//! `MIMALLOC_RESET_DELAY`) and `MIMALLOC_ALLOW_THP`.

/// The delay the library sets, in milliseconds.
#[cfg(feature = "mimalloc")]
pub const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Sets the purge delay and turns the huge-page advice off, once per
/// process, each unless the operator set it.
pub(super) fn tune_once() {
    #[cfg(feature = "mimalloc")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let operator_set = |vars: &[&str]| vars.iter().any(|v| std::env::var_os(v).is_some());
            if !operator_set(&["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]) {
                set_purge_delay(PURGE_DELAY_MS);
            }
            if !operator_set(&["MIMALLOC_ALLOW_THP"]) {
                set_allow_thp(0);
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
    set_if_bundled(MI_OPTION_PURGE_DELAY, BUNDLED_DEFAULT_MS, ms)
}

/// `mi_option_allow_thp`: its place in `mi_option_t` (mimalloc v3's
/// `mimalloc.h`).
#[cfg(feature = "mimalloc")]
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// The bundled v3's default off Android: changed only while the option
/// still reads it, as the purge delay.
#[cfg(feature = "mimalloc")]
const BUNDLED_ALLOW_THP: std::ffi::c_long = 1;

/// Sets whether mimalloc advises huge pages on its new mappings, if the
/// option holds the bundled default; returns the value in force
/// afterwards.
#[cfg(feature = "mimalloc")]
fn set_allow_thp(allow: std::ffi::c_long) -> std::ffi::c_long {
    set_if_bundled(MI_OPTION_ALLOW_THP, BUNDLED_ALLOW_THP, allow)
}

/// Sets `option` to `value` if it reads `bundled` (mimalloc's own
/// default, so neither the operator nor a differently numbered build is
/// overridden); returns the value in force afterwards.
#[cfg(feature = "mimalloc")]
fn set_if_bundled(
    option: libmimalloc_sys::mi_option_t,
    bundled: std::ffi::c_long,
    value: std::ffi::c_long,
) -> std::ffi::c_long {
    // SAFETY: mimalloc's option calls take any option number below
    // `_mi_option_last` (the callers' 15 and 43 are) and are safe from
    // any thread.
    let now = unsafe { libmimalloc_sys::mi_option_get(option) };
    if now != bundled {
        return now;
    }
    // SAFETY: as above; the values are plain numbers (milliseconds, 0/1).
    unsafe { libmimalloc_sys::mi_option_set(option, value) };
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_option_get(option) }
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

    /// Runs the ignored test `probe` of this module in a child process
    /// with `var=value` set when it starts, and requires it to pass.
    fn probe_in_child(probe: &str, var: &str, value: &str) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &format!("ffi::allocator::tests::{probe}"),
                "--ignored",
                "--test-threads=1",
            ])
            .env(var, value)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
    }

    #[test]
    fn the_option_number_is_mimallocs_purge_delay_and_the_operators_value_wins() {
        probe_in_child(
            "probe_the_option_number_reads_mimallocs_variable",
            "MIMALLOC_PURGE_DELAY",
            "4321",
        );
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

    /// Run by the test below in a child process started with
    /// `MIMALLOC_ALLOW_THP=2` (huge pages allowed, mimalloc's other
    /// non-default value): the option number reads what mimalloc took
    /// from its own variable.
    #[test]
    #[ignore = "a probe the next test runs in a child process"]
    fn probe_the_huge_page_option_number_reads_mimallocs_variable() {
        // 2 is not the bundled default, so this only reads.
        assert_eq!(set_allow_thp(0), 2);
    }

    #[test]
    fn the_option_number_is_mimallocs_allow_thp_and_the_operators_value_wins() {
        probe_in_child(
            "probe_the_huge_page_option_number_reads_mimallocs_variable",
            "MIMALLOC_ALLOW_THP",
            "2",
        );
        // Here (no variable set), the first entry point turns the advice
        // off.
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            super::super::boundary(std::ptr::null_mut(), || Ok(()));
            assert_eq!(set_allow_thp(1), 0);
        }
    }
}
