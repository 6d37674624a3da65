//! Process-wide settings of the SQLite library, applied once before the first connection
//! opens: SQLite allocates through mimalloc (the allocator of the rest of the process) and
//! keeps no memory statistics; and every connection plans a statement once, whatever values
//! are bound to it (the query planner stability guarantee, [`stable_plans`]).
//!
//! Why: the bundled SQLite (`libsqlite3-sys`) is built with `SQLITE_ENABLE_MEMORY_MANAGEMENT`,
//! so its allocation statistics take one process-wide mutex on every `malloc` and `free`, and
//! it allocates through glibc's `malloc`, whose arenas are locked and consolidated when
//! sqlx's one-thread-per-connection workers allocate and free page-cache pages and row
//! buffers side by side. A profile of the intention benchmark showed ~10 % of the SQLite
//! threads' time waking and waiting on those locks and ~7 % in glibc's allocator
//! (BENCHMARKS.md).
//!
//! `sqlite3_config` only works before `sqlite3_initialize`; if something in the process has
//! already initialised SQLite, the settings are skipped (with a warning) and SQLite keeps its
//! defaults: nothing but speed depends on them.

use std::ffi::{c_char, c_int, c_void};
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
        // SAFETY: `stable_plans` has the signature SQLite calls auto-extensions with and
        // lives as long as the process (a plain function). Installing it initialises SQLite,
        // so it comes after the `sqlite3_config` calls above.
        let installed = unsafe { ffi::sqlite3_auto_extension(Some(stable_plans)) };
        if installed != ffi::SQLITE_OK {
            tracing::warn!(
                status = installed,
                "could not install the query planner stability guarantee; statements with \
                 LIMIT parameters will be prepared again on every run"
            );
        }
    });
}

/// Turns on the query planner stability guarantee (`SQLITE_DBCONFIG_ENABLE_QPSG`) of every
/// connection opened from now on: a statement keeps the plan it was prepared with whatever
/// is bound to it.
///
/// Why: without it, SQLite reads the bound value of a parameter the planner can use (a
/// `LIMIT $n`, the right side of a `LIKE`, a value compared with a partial index's
/// condition) and marks the statement to be prepared again whenever that parameter is bound
/// anew, and sqlx binds every parameter on every run. So every run of such a statement
/// (claims, log reads, page listings, most of the host's hot statements end in `LIMIT $n`)
/// parsed and planned its SQL again: a callgrind profile of `POST /core/api/v1/intentions`
/// found 291 of those re-preparations per 300 requests, 8.5 % of the instructions
/// (BENCHMARKS.md). The plans Tessera's queries need do not depend on bound
/// values: its partial indexes compare constants, its `LIKE`s are literals, and it keeps no
/// `sqlite_stat4` samples.
unsafe extern "C" fn stable_plans(
    db: *mut ffi::sqlite3,
    _error_message: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    // SAFETY: `db` is the connection SQLite is opening; ENABLE_QPSG takes an `int` (1: on)
    // and a nullable `int*` for the resulting setting.
    unsafe {
        ffi::sqlite3_db_config(
            db,
            ffi::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as c_int,
            std::ptr::null_mut::<c_int>(),
        )
    }
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

    #[tokio::test]
    async fn every_connection_keeps_its_plans_whatever_is_bound() {
        use sqlx::Connection as _;
        configure();
        let mut connection = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .expect("an in-memory connection opens");
        let mut handle = connection.lock_handle().await.expect("the handle");
        let mut setting: c_int = -1;
        // SAFETY: the connection's own handle, locked; -1 asks for the setting without
        // changing it, written to `setting`.
        let status = unsafe {
            ffi::sqlite3_db_config(
                handle.as_raw_handle().as_ptr(),
                ffi::SQLITE_DBCONFIG_ENABLE_QPSG,
                -1 as c_int,
                &raw mut setting,
            )
        };
        assert_eq!(status, ffi::SQLITE_OK);
        assert_eq!(setting, 1, "the query planner stability guarantee is on");
    }
}
