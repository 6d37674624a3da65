//! `tessera admin --format table`: an admin command's JSON answer as aligned text columns for
//! people. A list of objects is one row per item with a column per field (in first-seen
//! order); an object is one row per field; a nested object or list stays compact JSON in its
//! cell. The JSON format stays the one for scripts.

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::{Map, Value};

/// `value` as a table, ending with a line break.
pub fn render(value: &Value) -> String {
    match value {
        Value::Array(items) if items.is_empty() => "(none)\n".to_owned(),
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut columns: Vec<&str> = Vec::new();
            for item in items.iter().filter_map(Value::as_object) {
                for key in item.keys() {
                    if !columns.contains(&key.as_str()) {
                        columns.push(key);
                    }
                }
            }
            let mut table = new_table();
            table.set_header(columns.iter().map(|column| column.to_uppercase()));
            for item in items.iter().filter_map(Value::as_object) {
                table.add_row(
                    columns
                        .iter()
                        .map(|column| item.get(*column).map(cell).unwrap_or_default()),
                );
            }
            finish(&table)
        }
        Value::Object(fields) => fields_table(fields),
        Value::Array(items) => {
            let mut table = new_table();
            for item in items {
                table.add_row([cell(item)]);
            }
            finish(&table)
        }
        scalar => format!("{}\n", cell(scalar)),
    }
}

fn fields_table(fields: &Map<String, Value>) -> String {
    let mut table = new_table();
    table.set_header(["FIELD", "VALUE"]);
    for (name, value) in fields {
        table.add_row([name.clone(), cell(value)]);
    }
    finish(&table)
}

fn new_table() -> Table {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    table
}

fn finish(table: &Table) -> String {
    let mut text: String = table
        .lines()
        .map(|line| line.trim_end().to_owned() + "\n")
        .collect();
    if text.is_empty() {
        text.push('\n');
    }
    text
}

/// One cell: text as it is, nothing for null, anything nested as compact JSON.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::render;

    #[test]
    fn a_list_is_one_row_per_item_with_every_field_as_a_column() {
        let text = render(&json!([
            { "slug": "acme", "members": 3 },
            { "slug": "beta-corp", "members": 12, "name": null },
        ]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(header, ["SLUG", "MEMBERS", "NAME"]);
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["acme", "3"]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["beta-corp", "12"]
        );
        // Columns are aligned: the second column starts at the same place on every line.
        let members_at = lines[0].find("MEMBERS").unwrap();
        assert_eq!(lines[1][members_at..].split_whitespace().next(), Some("3"));
        assert_eq!(lines[2][members_at..].split_whitespace().next(), Some("12"));
    }

    #[test]
    fn an_object_is_one_row_per_field_with_nested_values_as_json() {
        let text = render(&json!({ "kid": "k1", "engines": { "chat": "provisioned" } }));
        assert!(text.lines().next().unwrap().starts_with(" FIELD") || text.starts_with("FIELD"));
        assert!(text.contains(r#"{"chat":"provisioned"}"#), "{text}");
        assert_eq!(render(&json!([])), "(none)\n");
    }
}
