//! `search_rank(table, terms)`: the FTS5 ranking function of the search index, registered on
//! every SQLite connection of the process (an auto-extension installed by [`register`]).
//!
//! Why not FTS5's `bm25`: its inverse document frequency counts, on every query, every row
//! matching each phrase (FTS5 walks each phrase's whole doclist once), so ranking even one
//! row of a word found in a million documents costs a million steps. `search_rank` is BM25
//! with every inverse document frequency 1 and every term found once (k1 = 1.2, b = 0.75):
//! `terms · (k1+1) / (1 + k1·(1−b+b·dl/avgdl))`, from the row's length and the table's stored
//! totals, so its cost per row does not depend on how many rows match. The index keeps no
//! positions (`detail = none`, `migrations/sqlite/…_search_without_positions.sql`), and FTS5
//! tells a rank function of a contentless table without positions nothing about how often a
//! phrase occurs in a row; within the search's candidate window every row contains every
//! term anyway, so a score says how short the document is (ARCHITECTURE.md, "Search").
//! `terms` is the number of terms of the query (1 when absent or not a positive integer).
//!
//! Higher is better (unlike `bm25`, which is negative).

use std::ffi::{CStr, c_char, c_int};
use std::ptr;
use std::sync::Once;

use libsqlite3_sys as ffi;

/// The function's SQL name.
pub const SEARCH_RANK: &CStr = c"search_rank";

/// BM25's term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Installs the auto-extension that registers `search_rank` on every connection opened from
/// now on; later calls do nothing. A connection on which it cannot be registered fails to
/// open.
pub fn register() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: `register_on_connection` has the signature SQLite calls auto-extensions
        // with, and stays valid for the life of the process (a plain function).
        let status = unsafe { ffi::sqlite3_auto_extension(Some(register_on_connection)) };
        if status != ffi::SQLITE_OK {
            tracing::error!(status, "could not install the search_rank auto-extension");
        }
    });
}

/// Registers `search_rank` with the connection's FTS5 module (the documented way to reach
/// the `fts5_api`: `SELECT fts5(?1)` with a pointer bound as `fts5_api_ptr`).
unsafe extern "C" fn register_on_connection(
    db: *mut ffi::sqlite3,
    _error_message: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    let mut statement: *mut ffi::sqlite3_stmt = ptr::null_mut();
    let mut fts5: *mut ffi::fts5_api = ptr::null_mut();
    // SAFETY: `db` is the connection SQLite is opening; the statement is finalized before
    // returning and `fts5` outlives it (SQLite writes the pointer into it during the step).
    unsafe {
        let prepared = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &raw mut statement,
            ptr::null_mut(),
        );
        if prepared != ffi::SQLITE_OK {
            return prepared;
        }
        ffi::sqlite3_bind_pointer(
            statement,
            1,
            (&raw mut fts5).cast(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(statement);
        let finalized = ffi::sqlite3_finalize(statement);
        if finalized != ffi::SQLITE_OK {
            return finalized;
        }
        if fts5.is_null() || (*fts5).iVersion < 2 {
            return ffi::SQLITE_ERROR;
        }
        let Some(create_function) = (*fts5).xCreateFunction else {
            return ffi::SQLITE_ERROR;
        };
        create_function(
            fts5,
            SEARCH_RANK.as_ptr(),
            ptr::null_mut(),
            Some(search_rank),
            None,
        )
    }
}

/// The auxiliary function FTS5 calls for each row it ranks.
unsafe extern "C" fn search_rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    context: *mut ffi::sqlite3_context,
    argument_count: c_int,
    arguments: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes its extension API and the current row's context, both valid for
    // the duration of this call, the function's result context, and `argument_count`
    // values in `arguments` (those after the table's).
    unsafe {
        let terms = if argument_count >= 1 && !arguments.is_null() {
            ffi::sqlite3_value_int64(*arguments)
        } else {
            1
        };
        match score(&*api, fts, terms) {
            Ok(score) => ffi::sqlite3_result_double(context, score),
            Err(status) => ffi::sqlite3_result_error_code(context, status),
        }
    }
}

/// The row's score: `terms` terms found once each in a row of its length.
///
/// # Safety
/// `api` and `fts` must be what FTS5 passed to the auxiliary function now running.
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    terms: i64,
) -> Result<f64, c_int> {
    let checked = |status: c_int| {
        if status == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(status)
        }
    };
    let (Some(column_size), Some(row_count), Some(column_total_size)) =
        (api.xColumnSize, api.xRowCount, api.xColumnTotalSize)
    else {
        return Err(ffi::SQLITE_MISUSE);
    };
    // SAFETY (every call below): the functions of FTS5's own API, called with its context
    // and out-pointers to live locals, during the auxiliary function's call.
    let mut length: c_int = 0;
    checked(unsafe { column_size(fts, 0, &raw mut length) })?;
    let mut rows: ffi::sqlite3_int64 = 0;
    checked(unsafe { row_count(fts, &raw mut rows) })?;
    let mut total_length: ffi::sqlite3_int64 = 0;
    checked(unsafe { column_total_size(fts, 0, &raw mut total_length) })?;
    Ok(bm25_terms_found_once(
        terms.max(1),
        f64::from(length),
        average_length(total_length, rows),
    ))
}

fn average_length(total_length: i64, rows: i64) -> f64 {
    if rows > 0 {
        (total_length as f64 / rows as f64).max(1.0)
    } else {
        1.0
    }
}

/// BM25 with every inverse document frequency 1 and each of `terms` terms found once.
fn bm25_terms_found_once(terms: i64, length: f64, average_length: f64) -> f64 {
    let normalisation = K1 * (1.0 - B + B * length / average_length);
    terms as f64 * (K1 + 1.0) / (1.0 + normalisation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorter_documents_and_more_terms_score_higher() {
        let once = bm25_terms_found_once(1, 10.0, 10.0);
        let in_a_long_document = bm25_terms_found_once(1, 40.0, 10.0);
        let in_a_short_document = bm25_terms_found_once(1, 3.0, 10.0);
        assert!(in_a_short_document > once && once > in_a_long_document);
        assert!((bm25_terms_found_once(2, 10.0, 10.0) - 2.0 * once).abs() < 1e-12);
        // One term in a document of average length: (k1 + 1) / (1 + k1) = 1.
        assert!((once - 1.0).abs() < 1e-12);
        assert_eq!(average_length(0, 0), 1.0);
        assert_eq!(average_length(50, 10), 5.0);
    }
}
