//! Who may subscribe to chat's realtime topics (`topics.rs`): the REST API's read rules,
//! decided on the engine's side of `authorize-subscription`.

use tessera_sdk::{Context, storage};

use crate::conversations::Conversation;
use crate::topics::ME;
use crate::webhooks;

/// Whether `caller` may subscribe to `topic`: the REST API's read rules.
///
/// - `conversation.<id>`: the conversation exists and the caller may read it
///   ([`Conversation::may_read`]: the default conversation, or a member, or an owner).
/// - `me`: any user. It carries only `conversation.created` for conversations the user joins,
///   which the REST API lists to them (`GET /conversations`), guests included: a guest reads
///   the conversations it is a member of.
/// - `webhook.<id>`: the webhook exists and the caller is an owner with a user token, as for
///   every webhook route (`Context::require_owner`).
pub fn authorize(caller: &Context, topic: &str) -> bool {
    if topic == ME {
        return true;
    }
    if let Some(id) = topic.strip_prefix("webhook.") {
        return caller.require_owner().is_ok() && matches!(webhooks::load(id), Ok(Some(_)));
    }
    let Some(id) = topic.strip_prefix("conversation.") else {
        return false;
    };
    match storage::get_json::<Conversation>(&format!("conversations/{id}")) {
        Ok(Some(conversation)) => conversation.may_read(caller),
        _ => false,
    }
}
