//! Highlights of a search result, computed in Rust for the returned page only: for each field,
//! the words a query term prefix-matches (plain terms in any field, field terms in theirs)
//! are wrapped in `<mark>…</mark>`, the rest of the text is HTML-escaped, and only fields
//! with at least one marked word are returned. Words are cut exactly as the tokenizer does
//! (`query::words`), so a field is highlighted exactly when it matched in the index.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::query::{Term, field_text, normalize};

/// The highlighted text of every field of `fields` that a term matched.
pub fn highlights(fields: &Map<String, Value>, terms: &[Term]) -> BTreeMap<String, String> {
    fields
        .iter()
        .filter_map(|(field, value)| {
            let applicable: Vec<&str> = terms
                .iter()
                .filter(|term| term.applies_to(field))
                .map(Term::word)
                .collect();
            if applicable.is_empty() {
                return None;
            }
            highlight(&field_text(value), &applicable).map(|text| (field.clone(), text))
        })
        .collect()
}

/// `text` HTML-escaped with each word that starts with one of `prefixes` marked; `None` when
/// no word matched.
pub fn highlight(text: &str, prefixes: &[&str]) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut matched = false;
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric()) {
        escape_into(&mut out, &rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let normalized = normalize(word);
        if !normalized.is_empty() && prefixes.iter().any(|prefix| normalized.starts_with(prefix)) {
            matched = true;
            out.push_str("<mark>");
            escape_into(&mut out, word);
            out.push_str("</mark>");
        } else {
            escape_into(&mut out, word);
        }
        rest = &rest[end..];
    }
    escape_into(&mut out, rest);
    matched.then_some(out)
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::parse;
    use serde_json::json;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn matched_words_are_marked_whole_and_the_rest_escaped() {
        assert_eq!(
            highlight("Ada <Lovelace> & Byron", &["lov"]).unwrap(),
            "Ada &lt;<mark>Lovelace</mark>&gt; &amp; Byron"
        );
        assert_eq!(
            highlight("ada@example.com", &["ada", "com"]).unwrap(),
            "<mark>ada</mark>@example.<mark>com</mark>"
        );
        assert_eq!(
            highlight("\"Zoë\" o'Brien", &["zo", "o"]).unwrap(),
            "&quot;<mark>Zoë</mark>&quot; <mark>o</mark>&#39;Brien"
        );
        assert_eq!(highlight("Grace Hopper", &["lov"]), None);
        assert_eq!(highlight("", &["a"]), None);
        // A prefix must start the word.
        assert_eq!(highlight("Pavlov", &["lov"]), None);
    }

    #[test]
    fn only_fields_that_matched_are_highlighted() {
        let doc = fields(json!({
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "notes": "Analytical engine",
            "age": 36,
        }));
        let found = highlights(&doc, &parse("ada 36"));
        assert_eq!(
            found,
            BTreeMap::from([
                ("name".to_owned(), "<mark>Ada</mark> Lovelace".to_owned()),
                (
                    "email".to_owned(),
                    "<mark>ada</mark>@example.com".to_owned()
                ),
                ("age".to_owned(), "<mark>36</mark>".to_owned()),
            ])
        );
    }

    #[test]
    fn field_terms_highlight_their_field_only() {
        let doc = fields(json!({
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "tags": ["analyst", "Lovers of maths"],
        }));
        let found = highlights(&doc, &parse("email:ada lov"));
        assert_eq!(
            found,
            BTreeMap::from([
                (
                    "email".to_owned(),
                    "<mark>ada</mark>@example.com".to_owned()
                ),
                ("name".to_owned(), "Ada <mark>Lovelace</mark>".to_owned()),
                (
                    "tags".to_owned(),
                    "analyst, <mark>Lovers</mark> of maths".to_owned()
                ),
            ])
        );
        let only_name = highlights(&doc, &parse("Name:lov"));
        assert_eq!(
            only_name,
            BTreeMap::from([("name".to_owned(), "Ada <mark>Lovelace</mark>".to_owned())])
        );
    }
}
