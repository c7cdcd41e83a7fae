//! ctxmem's own message JSON: an array of [`Message`]s as they serialise (what
//! `ctxmem project --format ctxmem` prints), or `{"messages": [...]}`. Times and usage
//! are kept; stored ids are dropped, as for every import.

use serde::Deserialize;

use super::builder::TranscriptBuilder;
use super::json;
use crate::error::Error;
use crate::message::Message;

pub(crate) fn import(text: &str, builder: &mut TranscriptBuilder) -> Result<(), Error> {
    let document = json::document(text, builder)?;
    let messages = json::items(&document, "messages", builder)?;
    json::each_item(messages, "messages", builder, |message, builder| {
        let message = Message::deserialize(message).map_err(|error| error.to_string())?;
        builder.push(message.with_id(None));
        Ok(())
    })
}
