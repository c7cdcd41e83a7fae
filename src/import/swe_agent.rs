//! SWE-agent `.traj` files and mini-swe-agent trajectories.
//!
//! The messages the model saw are in `history` (SWE-agent), in `messages`
//! (mini-swe-agent) or are the file itself (old mini-swe-agent: a bare list). Each is a
//! Chat Completions style message; SWE-agent's `tool` messages name their calls in
//! `tool_call_ids`. The parallel `trajectory` view is not imported. These files record
//! no wall-clock times, so messages have none and the report says so.

use serde_json::Value;

use super::builder::TranscriptBuilder;
use super::json::{self, Handled};
use super::openai;
use crate::error::Error;
use crate::message::Message;

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = json::document(text, builder)?;
    let (label, messages) = match &document {
        Value::Array(messages) => ("messages", messages.as_slice()),
        _ => ["history", "messages"]
            .into_iter()
            .find_map(|key| Some((key, document.get(key)?.as_array()?.as_slice())))
            .ok_or_else(|| json::shape_error(builder, "no \"history\" or \"messages\" array"))?,
    };
    json::each_item(messages, label, builder, message)
}

fn message(entry: &Value, builder: &mut TranscriptBuilder) -> Handled {
    let ids = entry.get("tool_call_ids").and_then(Value::as_array);
    match (json::str_at(entry, "role"), ids) {
        (Some("tool"), Some(ids)) => {
            let content =
                openai::content_blocks(entry.get("content").unwrap_or(&Value::Null), builder)?;
            for id in ids
                .iter()
                .filter_map(Value::as_str)
                .filter(|id| !id.is_empty())
            {
                builder.push(Message::tool_result(id, "").with_content(content.clone()));
            }
            Ok(())
        }
        _ => openai::push_message(entry, builder),
    }
}
