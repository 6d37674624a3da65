//! Process-wide settings of the SQLite library, applied once before the first connection
//! opens: SQLite allocates through mimalloc (the allocator of the rest of the process) and
//! keeps no memory statistics.
//!
//! Why: the bundled SQLite (`libsqlite3-sys`) is built with `SQLITE_ENABLE_MEMORY_MANAGEMENT`,
//! so its allocation statistics take one process-wide mutex on every `malloc` and `free`, and
//! it allocates through glibc's `malloc`, whose arenas are locked and consolidated when
//! sqlx's one-thread-per-connection workers allocate and free page-cache pages and row
//! buffers side by side. A profile of the intention benchmark showed ~10 % of the SQLite
//! threads' time waking and waiting on those locks and ~7 % in glibc's allocator
//! (BENCHMARKS.md, issue 5).
//!
//! `sqlite3_config` only works before `sqlite3_initialize`; if something in the process has
//! already initialised SQLite, the settings are skipped (with a warning) and SQLite keeps its
//! defaults: nothing but speed depends on them.

use std::ffi::{c_int, c_void};
use std::sync::Once;

use libsqlite3_sys as ffi;

/// Applies the settings the first time it is called; later calls do nothing.
pub fn configure() {
    static CONFIGURE: Once = Once::new();
    CONFIGURE.call_once(|| {
        let methods = mimalloc_methods();
        // SAFETY: `sqlite3_config` is called before any connection of this process is opened
        // (every connection goes through `Database::connect`, which calls this first), with
        // the argument types its documentation names for each option: an `int` for
        // MEMSTATUS, a pointer to a `sqlite3_mem_methods` for MALLOC (copied by SQLite
        // before it returns).
        let (memory_statistics, allocator) = unsafe {
            (
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int),
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods),
            )
        };
        if memory_statistics != ffi::SQLITE_OK || allocator != ffi::SQLITE_OK {
            tracing::warn!(
                memory_statistics,
                allocator,
                "SQLite was initialised before its settings could be applied; using its defaults"
            );
        }
    });
}

/// The allocator SQLite is given; it copies the table during `sqlite3_config`.
fn mimalloc_methods() -> ffi::sqlite3_mem_methods {
    ffi::sqlite3_mem_methods {
        xMalloc: Some(allocate),
        xFree: Some(free),
        xRealloc: Some(reallocate),
        xSize: Some(size),
        xRoundup: Some(round_up),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        pAppData: std::ptr::null_mut(),
    }
}

// SQLite asks for 8-byte alignment, which every mimalloc allocation has.

unsafe extern "C" fn allocate(bytes: c_int) -> *mut c_void {
    // SQLite never asks for a negative size; treat one as a failed allocation.
    match usize::try_from(bytes) {
        // SAFETY: plain allocation; a null result is SQLite's out-of-memory signal.
        Ok(bytes) => unsafe { libmimalloc_sys::mi_malloc(bytes) },
        Err(_) => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn free(pointer: *mut c_void) {
    // SAFETY: SQLite frees only what `allocate`/`reallocate` returned (or null).
    unsafe { libmimalloc_sys::mi_free(pointer) }
}

unsafe extern "C" fn reallocate(pointer: *mut c_void, bytes: c_int) -> *mut c_void {
    match usize::try_from(bytes) {
        // SAFETY: `pointer` came from `allocate`/`reallocate`; on failure it stays valid.
        Ok(bytes) => unsafe { libmimalloc_sys::mi_realloc(pointer, bytes) },
        Err(_) => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn size(pointer: *mut c_void) -> c_int {
    // SAFETY: SQLite asks only about its own live allocations.
    let usable = unsafe { libmimalloc_sys::mi_usable_size(pointer) };
    c_int::try_from(usable).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn round_up(bytes: c_int) -> c_int {
    // The size `allocate` would really hand out, so SQLite can use the slack.
    match usize::try_from(bytes) {
        // SAFETY: a pure function of its argument.
        Ok(bytes) => c_int::try_from(unsafe { libmimalloc_sys::mi_good_size(bytes) })
            .unwrap_or(bytes as c_int),
        Err(_) => bytes,
    }
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocator_hands_out_what_sqlite_asks_for() {
        // SAFETY: the functions as SQLite calls them, on allocations they made themselves.
        unsafe {
            let rounded = round_up(100);
            assert!(rounded >= 100);
            let pointer = allocate(100);
            assert!(!pointer.is_null());
            assert_eq!(pointer as usize % 8, 0, "8-byte aligned");
            assert!(size(pointer) >= 100);
            let grown = reallocate(pointer, 10_000);
            assert!(!grown.is_null());
            assert!(size(grown) >= 10_000);
            free(grown);
            assert!(allocate(-1).is_null());
        }
    }
}
