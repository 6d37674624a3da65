//! The `message` of the spec's error bodies (`{"message": …}`), the same on the host and in
//! engines.

/// 401.
pub const MESSAGE_UNAUTHENTICATED: &str = "Unauthenticated.";
/// 403.
pub const MESSAGE_FORBIDDEN: &str = "This action is unauthorized.";
/// 405.
pub const MESSAGE_METHOD_NOT_ALLOWED: &str = "Method not allowed.";
/// 413.
pub const MESSAGE_PAYLOAD_TOO_LARGE: &str = "The request body is too large.";
/// 422, beside the field errors.
pub const MESSAGE_INVALID: &str = "The given data was invalid.";
/// 429.
pub const MESSAGE_TOO_MANY_ATTEMPTS: &str = "Too Many Attempts.";
/// 500; the detail is logged, never shown to the client.
pub const MESSAGE_SERVER_ERROR: &str = "Server Error.";
/// 400 for a body sent with a `Content-Type` that is not JSON (see
/// [`is_json_content_type`](crate::is_json_content_type)).
pub const MESSAGE_EXPECTED_JSON: &str = "Expected a JSON body with Content-Type: application/json.";

/// 400 for a query parameter the endpoint does not take: ``Unknown query parameter `name`.``
pub fn unknown_query_parameter(name: &str) -> String {
    format!("Unknown query parameter `{name}`.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_parameters_are_named_in_backticks() {
        assert_eq!(
            unknown_query_parameter("colour"),
            "Unknown query parameter `colour`."
        );
    }
}
