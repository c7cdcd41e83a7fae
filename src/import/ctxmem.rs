//! ctxmem's own messages: a JSON array of [`Message`]s as they serialise (what
//! `ctxmem project --format ctxmem` prints), `{"messages": [...]}`, or JSON Lines with
//! one message per line (the report's sample sessions). Times and usage are kept;
//! stored ids are dropped, as for every import.

use serde::Deserialize;
use serde_json::Value;

use super::builder::TranscriptBuilder;
use super::json::{self, Handled};
use crate::error::Error;
use crate::message::Message;

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = match serde_json::from_str::<Value>(text) {
        Ok(document) if document.is_array() || document.get("messages").is_some() => document,
        // A broken array is a syntax error; anything else is read line by line.
        _ if text.trim_start().starts_with('[') => json::document(text, builder)?,
        _ => return json::each_line(text, builder, push),
    };
    let messages = json::items(&document, "messages", builder)?;
    json::each_item(messages, "messages", builder, push)
}

fn push(message: &Value, builder: &mut TranscriptBuilder) -> Handled {
    let message = Message::deserialize(message).map_err(|error| error.to_string())?;
    builder.push(message.with_id(None));
    Ok(())
}

/// Whether a JSONL line is a ctxmem message.
pub(crate) fn is_message(line: &Value) -> bool {
    Message::deserialize(line).is_ok()
}
