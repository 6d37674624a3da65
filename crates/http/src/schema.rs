//! Building blocks for documenting request bodies exactly as the handlers check them: JSON
//! Schema `pattern`s (ECMA-262 regular expressions, anchored only where they say `^…$`) for the
//! rules of [`ValidationErrors`](crate::ValidationErrors) and of the hand-written parsers, and
//! builders of the string schemas made of them.
//!
//! White space is spelled out ([`WHITE_SPACE`]) rather than written `\s`: the rules trim with
//! Rust's `str::trim`, and `\s` means something slightly different in each regex engine
//! (ECMA-262's takes U+FEFF and not U+0085, Python's takes U+001C to U+001F).

use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};

/// The characters Rust's `char::is_whitespace` (and so `str::trim`) counts as white space
/// (Unicode's `White_Space`), as the inside of a character class.
macro_rules! white_space {
    () => {
        r"\x09-\x0D\x20\u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
    };
}

/// The characters of [`WHITE_SPACE`], for a character class of one's own.
pub const WHITE_SPACE_CHARACTERS: &str = white_space!();

/// One character of white space as `str::trim` sees it.
pub const WHITE_SPACE: &str = concat!("[", white_space!(), "]");

/// One character that is not white space as `str::trim` sees it.
pub const NOT_WHITE_SPACE: &str = concat!("[^", white_space!(), "]");

/// Not blank: somewhere a character that is not white space (`ValidationErrors::required`,
/// and every rule that trims a string and refuses it empty).
pub const NOT_BLANK: &str = NOT_WHITE_SPACE;

/// A hyphenated UUID, hex digits of either case.
macro_rules! hyphenated_uuid {
    () => {
        "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    };
}

/// Every spelling of a UUID `uuid::Uuid::try_parse` reads, as alternatives of a pattern.
macro_rules! uuid_spellings {
    () => {
        concat!(
            "[0-9A-Fa-f]{32}|\\{",
            hyphenated_uuid!(),
            "\\}|(?:[Uu][Rr][Nn]:[Uu][Uu][Ii][Dd]:)?",
            hyphenated_uuid!()
        )
    };
}

/// The spellings of a UUID `uuid::Uuid::try_parse` reads, as alternatives (no anchors, no
/// white space): hyphenated, simple (32 hex digits), braced (`{…}`) or a URN (`urn:uuid:…`),
/// hex digits of either case. For patterns that accept a UUID among other things.
pub const UUID_SPELLINGS: &str = uuid_spellings!();

/// A UUID as `ValidationErrors::uuid` (and `uuid::Uuid::try_parse` of a trimmed string) accepts
/// it: one of [`UUID_SPELLINGS`], surrounding white space allowed. The canonical form, which
/// the API answers with, is the lower-case hyphenated one.
pub const UUID: &str = concat!(
    "^[",
    white_space!(),
    "]*(?:",
    uuid_spellings!(),
    ")[",
    white_space!(),
    "]*$"
);

/// `inner`, with white space around it: a string that is trimmed, then must match `inner`
/// (a pattern without anchors) whole.
pub fn trimmed(inner: &str) -> String {
    format!("^{WHITE_SPACE}*(?:{inner}){WHITE_SPACE}*$")
}

/// A string that is trimmed and must then be 1 to `max_chars` characters long
/// (`text.trim().chars().count()`): not blank, and at most `max_chars` characters from its
/// first to its last character that is not white space. `max_chars` is at least 2.
pub fn trimmed_text(max_chars: usize) -> String {
    assert!(
        max_chars >= 2,
        "a trimmed text of at most {max_chars} characters"
    );
    trimmed(&format!(
        r"{NOT_WHITE_SPACE}(?:[\s\S]{{0,{}}}{NOT_WHITE_SPACE})?",
        max_chars - 2
    ))
}

/// [`trimmed_text`], but blank is accepted too (a blank optional value counts as absent).
pub fn blank_or_trimmed_text(max_chars: usize) -> String {
    assert!(
        max_chars >= 2,
        "a trimmed text of at most {max_chars} characters"
    );
    trimmed(&format!(
        r"(?:{NOT_WHITE_SPACE}(?:[\s\S]{{0,{}}}{NOT_WHITE_SPACE})?)?",
        max_chars - 2
    ))
}

/// A string that is trimmed and must then be one of `names` exactly.
pub fn trimmed_one_of(names: &[&str]) -> String {
    let alternatives: Vec<String> = names.iter().map(|name| escape(name)).collect();
    trimmed(&alternatives.join("|"))
}

/// `text` as a pattern that matches it literally.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        if r"\^$.|?*+()[]{}".contains(character) {
            escaped.push('\\');
        }
        escaped.push(character);
    }
    escaped
}

/// A string matching `pattern`.
pub fn string(pattern: impl Into<String>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
}

/// A string matching `pattern`, or `null`.
pub fn nullable_string(pattern: impl Into<String>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .pattern(Some(pattern))
}

/// One of `names` exactly (no trimming): a string `enum`.
pub fn string_enum(names: &[&str]) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names.iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_spelled_as_meant() {
        let space = WHITE_SPACE;
        let text = NOT_WHITE_SPACE;
        assert_eq!(
            trimmed_text(200),
            format!(r"^{space}*(?:{text}(?:[\s\S]{{0,198}}{text})?){space}*$")
        );
        assert_eq!(
            blank_or_trimmed_text(10),
            format!(r"^{space}*(?:(?:{text}(?:[\s\S]{{0,8}}{text})?)?){space}*$")
        );
        assert_eq!(
            trimmed_one_of(&["entity.created", "a_b"]),
            format!(r"^{space}*(?:entity\.created|a_b){space}*$")
        );
        assert_eq!(UUID, trimmed(UUID_SPELLINGS));
        // Every character `str::trim` removes, and no other.
        let class: Vec<char> = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
            .collect();
        let spelled = "\t\n\u{b}\u{c}\r \u{85}\u{a0}\u{1680}\u{2000}\u{2001}\u{2002}\u{2003}\
                       \u{2004}\u{2005}\u{2006}\u{2007}\u{2008}\u{2009}\u{200a}\u{2028}\u{2029}\
                       \u{202f}\u{205f}\u{3000}";
        assert_eq!(class, spelled.chars().collect::<Vec<_>>());
    }
}
