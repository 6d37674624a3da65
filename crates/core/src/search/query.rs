//! Words, tokens and queries: the one tokenizer both index backends share, the encoding of
//! the index's tokens, and the parser of the `q` parameter.
//!
//! A text is split on every character that is not alphanumeric and lower-cased; each word is
//! cut to [`MAX_WORD_CHARS`]. A document of field values becomes, for every word `w` of field
//! `f`, the word token `<key>w<w>` and the field token `<key>f<code(f)>x<w>`, where `<key>` is
//! the tenant's number in decimal ([`TenantKey`]) and `code` keeps the letters and digits of
//! the lower-cased field code except `x` and `y`, writing every other byte as `y` and two hex
//! digits (`name` → `name`, `tax_id` → `tay78y5fid`). The family becomes
//! `<key>g<code(family)>`. Keys are digits only, the kind letters (`w`, `f`, `g`) are not, and
//! an encoded code never contains `x`, so the encoding is unambiguous: a prefix of a token
//! only ever matches tokens of the same tenant, kind and field. Every token is alphanumeric:
//! index and query text is built from tokens only, never from user text.

use serde_json::{Map, Value};

/// Longest word kept, in characters; longer words are cut (in the index and in queries
/// alike, so a cut query word still prefix-matches the cut index word).
pub const MAX_WORD_CHARS: usize = 64;

/// Longest field code kept in field tokens, in bytes (longer codes share the tokens of their
/// first 64 bytes).
pub const MAX_FIELD_BYTES: usize = 64;

/// Words indexed per document; further words are not searchable.
pub const MAX_WORDS_PER_DOCUMENT: usize = 4096;

/// The words of `text`: maximal runs of alphanumeric characters, lower-cased, cut to
/// [`MAX_WORD_CHARS`].
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(normalize)
        .filter(|word| !word.is_empty())
}

/// One word as the index holds it: lower-cased (keeping only alphanumeric characters of the
/// lower-case form) and cut to [`MAX_WORD_CHARS`].
pub fn normalize(word: &str) -> String {
    word.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric())
        .take(MAX_WORD_CHARS)
        .collect()
}

/// The searchable text of a field value: strings as they are, numbers and booleans as JSON
/// writes them, the items of arrays and values of objects joined with `", "`; null is empty.
pub fn field_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Array(items) => join_texts(items.iter()),
        Value::Object(object) => join_texts(object.values()),
    }
}

fn join_texts<'a>(values: impl Iterator<Item = &'a Value>) -> String {
    values
        .map(field_text)
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A field code as field tokens and field terms compare it: lower-cased, cut to
/// [`MAX_FIELD_BYTES`] bytes.
pub fn field_key(field: &str) -> Vec<u8> {
    let mut bytes = field.to_lowercase().into_bytes();
    bytes.truncate(MAX_FIELD_BYTES);
    bytes
}

/// A field or family code in tokens: ASCII digits and lower-case letters but `x` and `y` as
/// they are, any other byte as `y` and two hex digits.
pub fn encode_code(code: &[u8]) -> String {
    let mut encoded = String::with_capacity(code.len());
    for &byte in code {
        if byte.is_ascii_digit() || (byte.is_ascii_lowercase() && byte != b'x' && byte != b'y') {
            encoded.push(char::from(byte));
        } else {
            encoded.push('y');
            encoded.push_str(&hex::encode([byte]));
        }
    }
    encoded
}

/// A tenant's number in the index (unique, never reused) and the least number of digits it
/// is written with: padding costs nothing in FTS5, whose term dictionary shares prefixes, and
/// gives every tenant's words the same prefix lengths there; PostgreSQL stores every lexeme
/// whole, so it writes keys short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantKey {
    pub number: i64,
    pub width: usize,
}

impl TenantKey {
    pub fn new(number: i64, width: usize) -> Self {
        Self { number, width }
    }

    pub(crate) fn prefix(self) -> String {
        format!("{:0width$}", self.number, width = self.width)
    }

    /// The token of a word anywhere in a document.
    pub fn word_token(self, word: &str) -> String {
        format!("{}w{word}", self.prefix())
    }

    /// The token of a word in field `field`.
    pub fn field_token(self, field: &str, word: &str) -> String {
        format!(
            "{}f{}x{word}",
            self.prefix(),
            encode_code(&field_key(field))
        )
    }

    /// The token of a document's family.
    pub fn family_token(self, family: &str) -> String {
        format!("{}g{}", self.prefix(), encode_code(family.as_bytes()))
    }

    /// Every token of a document with these fields, in order (a word occurring twice gives
    /// its tokens twice), at most [`MAX_WORDS_PER_DOCUMENT`] words.
    pub fn document_tokens(self, fields: &Map<String, Value>) -> Vec<String> {
        let mut tokens = Vec::new();
        for (field, word) in indexed_words(fields) {
            tokens.push(self.word_token(&word));
            tokens.push(self.field_token(field, &word));
        }
        tokens
    }

    /// The word tokens of a document with these fields (those of its indexed words, in order,
    /// not its field tokens).
    pub fn document_word_tokens(self, fields: &Map<String, Value>) -> Vec<String> {
        indexed_words(fields)
            .map(|(_, word)| self.word_token(&word))
            .collect()
    }

    /// The word of a word token of this tenant (`None` for any other token).
    pub fn word_of(self, token: &str) -> Option<&str> {
        token
            .strip_prefix(&self.prefix())
            .and_then(|rest| rest.strip_prefix('w'))
    }
}

/// The words of a document that are indexed, with their field, in order: at most
/// [`MAX_WORDS_PER_DOCUMENT`].
fn indexed_words(fields: &Map<String, Value>) -> impl Iterator<Item = (&str, String)> + '_ {
    fields
        .iter()
        .flat_map(|(field, value)| {
            words(&field_text(value))
                .map(|word| (field.as_str(), word))
                .collect::<Vec<_>>()
        })
        .take(MAX_WORDS_PER_DOCUMENT)
}

/// One term of a query: a word prefix, anywhere or in one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// Matches a document with a word starting with this, in any field.
    Any(String),
    /// Matches a document with a word starting with `word` in `field`.
    Field { field: String, word: String },
}

impl Term {
    /// The index token whose prefixes this term matches.
    pub fn token(&self, key: TenantKey) -> String {
        match self {
            Self::Any(word) => key.word_token(word),
            Self::Field { field, word } => key.field_token(field, word),
        }
    }

    /// The prefix this term looks for.
    pub fn word(&self) -> &str {
        match self {
            Self::Any(word) | Self::Field { word, .. } => word,
        }
    }

    /// Whether the term applies to field `field` (plain terms apply to every field).
    pub fn applies_to(&self, field: &str) -> bool {
        match self {
            Self::Any(_) => true,
            Self::Field { field: wanted, .. } => field_key(wanted) == field_key(field),
        }
    }
}

/// Parses `q`: terms separated by white space (outside double quotes), each either plain
/// text or `field:value`. Every word of a term's text is a term of its own (so
/// `email:ada@example.com` needs `ada`, `example` and `com` in `email`), all ANDed; duplicates
/// are dropped. A field name is letters, digits, `_`, `-` and `.`; any other text before a
/// colon makes the chunk plain text. An empty list means nothing can match.
pub fn parse(q: &str) -> Vec<Term> {
    let mut terms: Vec<Term> = Vec::new();
    for chunk in chunks(q) {
        let (field, text) = match chunk.split_once(':') {
            Some((field, text)) if is_field_name(field) => (Some(field), text),
            _ => (None, chunk),
        };
        for word in words(text) {
            let term = match field {
                Some(field) => Term::Field {
                    field: field.to_lowercase(),
                    word,
                },
                None => Term::Any(word),
            };
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    terms
}

fn is_field_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `q` split on white space outside double quotes.
fn chunks(q: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut start: Option<usize> = None;
    let mut quoted = false;
    for (index, c) in q.char_indices() {
        if c == '"' {
            quoted = !quoted;
        }
        if c.is_whitespace() && !quoted {
            if let Some(begin) = start.take() {
                chunks.push(&q[begin..index]);
            }
        } else if start.is_none() {
            start = Some(index);
        }
    }
    if let Some(begin) = start {
        chunks.push(&q[begin..]);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn any(word: &str) -> Term {
        Term::Any(word.into())
    }

    fn field(field: &str, word: &str) -> Term {
        Term::Field {
            field: field.into(),
            word: word.into(),
        }
    }

    #[test]
    fn words_are_lower_cased_alphanumeric_runs() {
        let all: Vec<String> =
            words("Ada LOVELACE, ada@example.com — Zoë's 1843 notes_v2").collect();
        assert_eq!(
            all,
            [
                "ada", "lovelace", "ada", "example", "com", "zoë", "s", "1843", "notes", "v2"
            ]
        );
        assert_eq!(words("  --- !!! ").count(), 0);
        let long = "a".repeat(100);
        assert_eq!(words(&long).next().unwrap().chars().count(), MAX_WORD_CHARS);
        assert!(words("İstanbul ǅemal").all(|word| word.chars().all(char::is_alphanumeric)));
    }

    #[test]
    fn field_values_of_every_json_type_have_a_text() {
        assert_eq!(field_text(&json!("Ada")), "Ada");
        assert_eq!(field_text(&json!(42)), "42");
        assert_eq!(field_text(&json!(1.5)), "1.5");
        assert_eq!(field_text(&json!(true)), "true");
        assert_eq!(field_text(&json!(null)), "");
        assert_eq!(
            field_text(&json!(["red", null, {"shade": "dark blue", "n": 3}])),
            "red, dark blue, 3"
        );
    }

    #[test]
    fn tokens_are_alphanumeric_and_scoped_to_tenant_kind_and_field() {
        let key = TenantKey::new(42, 8);
        assert_eq!(key.word_token("ada"), "00000042wada");
        assert_eq!(key.field_token("Name", "ada"), "00000042fnamexada");
        assert_eq!(key.family_token("contact"), "00000042gcontact");
        assert_eq!(TenantKey::new(42, 1).word_token("ada"), "42wada");
        let tokens = TenantKey::new(7, 1).document_tokens(
            json!({"name": "Ada Lovelace", "age": 36, "email": null})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            tokens,
            [
                "7wada",
                "7fnamexada",
                "7wlovelace",
                "7fnamexlovelace",
                "7w36",
                "7fagex36",
            ]
        );
        assert!(
            tokens
                .iter()
                .all(|token| token.chars().all(char::is_alphanumeric))
        );
        // The key ends at the first letter: key 1 + word "2x" never reads as key 12.
        let (one, twelve) = (TenantKey::new(1, 1), TenantKey::new(12, 1));
        assert_ne!(one.word_token("2x"), twelve.word_token("x"));
        assert!(!twelve.word_token("a").starts_with(&one.word_token("")));
    }

    #[test]
    fn codes_are_encoded_without_x_so_fields_never_overlap() {
        assert_eq!(encode_code(b"name"), "name");
        assert_eq!(encode_code(b"tax_id"), "tay78y5fid");
        assert_eq!(encode_code(b"why"), "why79");
        assert_eq!(encode_code("zoë".as_bytes()), "zoyc3yab");
        assert!(!encode_code(b"x_y-Z.x").contains('x'));
        // A field's tokens are never a prefix of another field's: `tax` vs `ta`.
        let key = TenantKey::new(1, 1);
        assert!(
            !key.field_token("tax", "a")
                .starts_with(&key.field_token("ta", ""))
        );
        assert!(
            !key.field_token("ta", "xa")
                .starts_with(&key.field_token("tax", ""))
        );
    }

    #[test]
    fn documents_index_a_bounded_number_of_words() {
        let text = "word ".repeat(MAX_WORDS_PER_DOCUMENT + 10);
        let tokens =
            TenantKey::new(1, 1).document_tokens(json!({"notes": text}).as_object().unwrap());
        assert_eq!(tokens.len(), 2 * MAX_WORDS_PER_DOCUMENT);
    }

    #[test]
    fn queries_split_into_plain_and_field_terms() {
        assert_eq!(parse("lov"), [any("lov")]);
        assert_eq!(parse("  Ada   LOV  ada "), [any("ada"), any("lov")]);
        assert_eq!(parse("name:ada"), [field("name", "ada")]);
        assert_eq!(
            parse("Name:Ada email:ada@example.com grace"),
            [
                field("name", "ada"),
                field("email", "ada"),
                field("email", "example"),
                field("email", "com"),
                any("grace"),
            ]
        );
        assert_eq!(
            parse(r#"name:"Ada Lovelace" "two words""#),
            [
                field("name", "ada"),
                field("name", "lovelace"),
                any("two"),
                any("words")
            ]
        );
        assert_eq!(parse("assignee_id:123"), [field("assignee_id", "123")]);
    }

    #[test]
    fn odd_queries_never_fail() {
        assert_eq!(parse(""), []);
        assert_eq!(parse("!!! ***"), []);
        assert_eq!(parse("name:"), []);
        assert_eq!(parse(":ada"), [any("ada")]);
        assert_eq!(
            parse("a b:c:d"),
            [any("a"), field("b", "c"), field("b", "d")]
        );
        assert_eq!(
            parse(r#""unbalanced quote:x"#),
            [any("unbalanced"), any("quote"), any("x")]
        );
        assert_eq!(
            parse("AND OR NOT * \"* NEAR("),
            [any("and"), any("or"), any("not"), any("near")]
        );
        assert_eq!(
            parse("'); DROP TABLE x; --"),
            [any("drop"), any("table"), any("x")]
        );
    }

    #[test]
    fn terms_apply_to_their_field_only() {
        assert!(any("ada").applies_to("name"));
        assert!(field("name", "ada").applies_to("Name"));
        assert!(!field("name", "ada").applies_to("email"));
        let key = TenantKey::new(7, 1);
        assert_eq!(field("name", "ada").token(key), "7fnamexada");
        assert_eq!(any("ada").token(key), "7wada");
    }
}
