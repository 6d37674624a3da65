//! `search_rank(table)`: the FTS5 ranking function of the search index, registered on every
//! SQLite connection of the process (an auto-extension installed by [`register`]).
//!
//! Why not FTS5's `bm25`: its inverse document frequency counts, on every query, every row
//! matching each phrase (FTS5 walks each phrase's whole doclist once), so ranking even one
//! row of a word found in a million documents costs a million steps. `search_rank` is BM25's
//! term-frequency part with document-length normalisation (k1 = 1.2, b = 0.75, the first
//! column only) and every phrase weighing the same: it reads the row's own instances and
//! length and the table's stored totals, so its cost per row does not depend on how many
//! rows match. Within the search's candidate window every row contains every term anyway, so
//! what the missing weights would change is only how much a repeated rare term counts
//! against a repeated common one (ARCHITECTURE.md, "Search").
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
    _argument_count: c_int,
    _arguments: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes its extension API and the current row's context, both valid for
    // the duration of this call, and the function's result context.
    unsafe {
        match score(&*api, fts) {
            Ok(score) => ffi::sqlite3_result_double(context, score),
            Err(status) => ffi::sqlite3_result_error_code(context, status),
        }
    }
}

/// The row's score: Σ over phrases present in column 0 of tf·(k1+1) / (tf + k1·(1−b+b·dl/avgdl)).
///
/// # Safety
/// `api` and `fts` must be what FTS5 passed to the auxiliary function now running.
unsafe fn score(api: &ffi::Fts5ExtensionApi, fts: *mut ffi::Fts5Context) -> Result<f64, c_int> {
    let checked = |status: c_int| {
        if status == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(status)
        }
    };
    let (
        Some(phrase_count),
        Some(instance_count),
        Some(instance),
        Some(column_size),
        Some(row_count),
        Some(column_total_size),
    ) = (
        api.xPhraseCount,
        api.xInstCount,
        api.xInst,
        api.xColumnSize,
        api.xRowCount,
        api.xColumnTotalSize,
    )
    else {
        return Err(ffi::SQLITE_MISUSE);
    };
    // SAFETY (every call below): the functions of FTS5's own API, called with its context
    // and out-pointers to live locals, during the auxiliary function's call.
    let phrases = usize::try_from(unsafe { phrase_count(fts) }).unwrap_or(0);
    let mut frequencies = vec![0_u32; phrases];
    let mut instances: c_int = 0;
    checked(unsafe { instance_count(fts, &raw mut instances) })?;
    for index in 0..instances {
        let (mut phrase, mut column, mut offset): (c_int, c_int, c_int) = (0, 0, 0);
        checked(unsafe {
            instance(
                fts,
                index,
                &raw mut phrase,
                &raw mut column,
                &raw mut offset,
            )
        })?;
        if column == 0
            && let Some(frequency) = usize::try_from(phrase)
                .ok()
                .and_then(|phrase| frequencies.get_mut(phrase))
        {
            *frequency += 1;
        }
    }
    let mut length: c_int = 0;
    checked(unsafe { column_size(fts, 0, &raw mut length) })?;
    let mut rows: ffi::sqlite3_int64 = 0;
    checked(unsafe { row_count(fts, &raw mut rows) })?;
    let mut total_length: ffi::sqlite3_int64 = 0;
    checked(unsafe { column_total_size(fts, 0, &raw mut total_length) })?;
    Ok(bm25_term_frequencies(
        &frequencies,
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

/// BM25 with every inverse document frequency 1.
fn bm25_term_frequencies(frequencies: &[u32], length: f64, average_length: f64) -> f64 {
    let normalisation = K1 * (1.0 - B + B * length / average_length);
    frequencies
        .iter()
        .filter(|frequency| **frequency > 0)
        .map(|&frequency| {
            let frequency = f64::from(frequency);
            frequency * (K1 + 1.0) / (frequency + normalisation)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_occurrences_and_shorter_documents_score_higher() {
        let once = bm25_term_frequencies(&[1], 10.0, 10.0);
        let twice = bm25_term_frequencies(&[2], 10.0, 10.0);
        let once_in_a_long_document = bm25_term_frequencies(&[1], 40.0, 10.0);
        assert!(twice > once && once > once_in_a_long_document);
        assert!(bm25_term_frequencies(&[1, 1], 10.0, 10.0) > once);
        assert_eq!(bm25_term_frequencies(&[0, 0], 10.0, 10.0), 0.0);
        // One occurrence in a document of average length: (k1 + 1) / (1 + k1) = 1.
        assert!((once - 1.0).abs() < 1e-12);
        assert_eq!(average_length(0, 0), 1.0);
        assert_eq!(average_length(50, 10), 5.0);
    }
}
