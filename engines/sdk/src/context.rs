//! The verified caller of a request ([`Context`]) and the role checks handlers make with it.

use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// Who is calling, as established by the host from the bearer token, plus the request's
/// correlation id. Storage and the other imports are already scoped to `tenant_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// The tenant of the call.
    pub tenant_id: String,
    /// The workspace the token is scoped to, if any.
    pub workspace_id: Option<String>,
    /// The calling user.
    pub user_id: String,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
    /// `user`, `guest` or `agent`.
    pub token_type: String,
    /// The request's `X-Correlation-Id`.
    pub correlation_id: String,
}

impl Context {
    /// A context for unit tests: no workspace, token type `user`, correlation id `test`.
    pub fn for_tests(tenant_id: &str, user_id: &str, role: &str) -> Self {
        Self {
            tenant_id: tenant_id.to_owned(),
            workspace_id: None,
            user_id: user_id.to_owned(),
            role: role.to_owned(),
            token_type: "user".to_owned(),
            correlation_id: "test".to_owned(),
        }
    }

    /// True for the `owner` role.
    pub fn is_owner(&self) -> bool {
        self.role == "owner"
    }

    /// True for a `guest` token.
    pub fn is_guest(&self) -> bool {
        self.token_type == "guest"
    }

    /// True when the caller may write: role `owner` or `editor`, and not a guest token.
    pub fn can_write(&self) -> bool {
        matches!(self.role.as_str(), "owner" | "editor") && !self.is_guest()
    }

    /// 403 `This action is unauthorized.` unless the caller may write (viewers and guest tokens
    /// may not).
    pub fn require_writer(&self) -> Result<(), ApiError> {
        if self.can_write() {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }

    /// 403 unless the caller is an owner (with a non-guest token).
    pub fn require_owner(&self) -> Result<(), ApiError> {
        if self.is_owner() && !self.is_guest() {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_gate_writes_and_ownership() {
        let owner = Context::for_tests("t", "u", "owner");
        let editor = Context::for_tests("t", "u", "editor");
        let viewer = Context::for_tests("t", "u", "viewer");
        let guest = Context {
            token_type: "guest".into(),
            ..editor.clone()
        };
        assert!(owner.require_writer().is_ok() && owner.require_owner().is_ok());
        assert!(editor.require_writer().is_ok());
        assert_eq!(editor.require_owner(), Err(ApiError::Forbidden));
        assert_eq!(viewer.require_writer(), Err(ApiError::Forbidden));
        assert_eq!(guest.require_writer(), Err(ApiError::Forbidden));
        let guest_owner = Context {
            role: "owner".into(),
            ..guest
        };
        assert_eq!(guest_owner.require_owner(), Err(ApiError::Forbidden));
    }
}
