//! What requests send, validated (names, content types, ids), and what downloads answer with
//! (`Content-Disposition`).

use tessera_sdk::ValidationErrors;

/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 255;
/// Longest name in UTF-8 bytes (index keys stay under the host's 1,024-byte key limit).
pub const MAX_NAME_BYTES: usize = 900;
/// Longest content type.
const MAX_CONTENT_TYPE_CHARS: usize = 255;
/// The content type of an upload without one.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";
/// Longest id accepted in a path or body.
const MAX_ID_CHARS: usize = 100;

/// A folder or file name: 1 to 255 characters, no `/`, `\` or control characters, not `.` or
/// `..`. Records `required`, `max:255`, `max_bytes:900` or `filename` under `field`.
pub fn name(value: Option<&str>, field: &str, errors: &mut ValidationErrors) -> Option<String> {
    let Some(value) = value.filter(|value| !value.trim().is_empty()) else {
        errors.add(field, "required");
        return None;
    };
    let forbidden = |c: char| c == '/' || c == '\\' || c.is_control();
    let valid = errors.check_length(value, field, 1, MAX_NAME_CHARS)
        && errors.check(
            value.to_lowercase().len() <= MAX_NAME_BYTES,
            field,
            &format!("max_bytes:{MAX_NAME_BYTES}"),
        )
        && errors.check(
            !value.contains(forbidden) && value != "." && value != "..",
            field,
            "filename",
        );
    valid.then(|| value.to_owned())
}

/// The `Content-Type` of an upload (default `application/octet-stream`): `type/subtype` with
/// optional parameters, printable ASCII, at most 255 characters. Records `mime_type` under
/// `content_type`.
pub fn content_type(header: Option<&str>, errors: &mut ValidationErrors) -> Option<String> {
    let value = header.map_or(DEFAULT_CONTENT_TYPE, str::trim);
    let is_token = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let valid = value.len() <= MAX_CONTENT_TYPE_CHARS
        && value.chars().all(|c| c == ' ' || c.is_ascii_graphic())
        && essence
            .split_once('/')
            .is_some_and(|(kind, subtype)| is_token(kind) && is_token(subtype));
    errors
        .check(valid, "content_type", "mime_type")
        .then(|| value.to_owned())
}

/// Whether `id` could be an id of this engine (`root`, `home-<user>`, a UUID): anything else is
/// answered as not found without a storage read (and never makes an over-long key).
pub fn plausible_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `attachment` with an ASCII `filename` (other characters, quotes and backslashes become `_`)
/// and the exact name as RFC 5987 `filename*`.
pub fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if (c == ' ' || c.is_ascii_graphic()) && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_errors(value: Option<&str>) -> Vec<String> {
        let mut errors = ValidationErrors::new();
        name(value, "name", &mut errors);
        errors.fields().get("name").cloned().unwrap_or_default()
    }

    #[test]
    fn names_follow_the_rules() {
        assert!(name_errors(Some("Report 2026 (final).pdf")).is_empty());
        assert!(name_errors(Some(&"é".repeat(255))).is_empty());
        assert_eq!(name_errors(None), ["required"]);
        assert_eq!(name_errors(Some("  ")), ["required"]);
        assert_eq!(name_errors(Some(&"a".repeat(256))), ["max:255"]);
        assert_eq!(name_errors(Some(&"😀".repeat(255))), ["max_bytes:900"]);
        for bad in ["a/b", "a\\b", "a\nb", ".", ".."] {
            assert_eq!(name_errors(Some(bad)), ["filename"], "{bad:?}");
        }
    }

    #[test]
    fn content_types_are_checked() {
        let check = |header: Option<&str>| {
            let mut errors = ValidationErrors::new();
            content_type(header, &mut errors)
        };
        assert_eq!(check(None).as_deref(), Some(DEFAULT_CONTENT_TYPE));
        assert_eq!(
            check(Some(" text/plain; charset=utf-8 ")).as_deref(),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(
            check(Some("image/svg+xml")).as_deref(),
            Some("image/svg+xml")
        );
        for bad in [
            "",
            "text",
            "text/",
            "/plain",
            "text/pl ain",
            "téxt/plain",
            "a/b\tc",
        ] {
            assert_eq!(check(Some(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn ids_are_plausible_or_not() {
        assert!(plausible_id("root"));
        assert!(plausible_id("home-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert!(!plausible_id(""));
        assert!(!plausible_id("a/b"));
        assert!(!plausible_id(&"a".repeat(101)));
    }

    #[test]
    fn dispositions_are_safe_and_exact() {
        assert_eq!(
            content_disposition("plain.txt"),
            "attachment; filename=\"plain.txt\"; filename*=UTF-8''plain.txt"
        );
        assert_eq!(
            content_disposition("a \"b\"\\ü.txt"),
            "attachment; filename=\"a _b___.txt\"; filename*=UTF-8''a%20%22b%22%5C%C3%BC.txt"
        );
    }
}
