//! The provider-neutral message model.
//!
//! A [`Message`] is an `Arc` around its data: cloning one (as every projection does)
//! copies a pointer, never a body.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The id [`ContextMemory::push`](crate::ContextMemory::push) assigns to a stored message.
///
/// Ids are strictly increasing within one memory and never reused, not even after a
/// `clear()`, so `a < b` means "`a` was stored before `b`". The first id is 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(pub u64);

impl MessageId {
    /// Wraps a raw id.
    pub const fn new(raw: u64) -> Self {
        MessageId(raw)
    }

    /// The raw id.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the harness.
    System,
    /// The human (or the harness speaking for them).
    User,
    /// The model.
    Assistant,
    /// The output of a tool the model called.
    Tool,
}

impl Role {
    /// The lowercase name used in JSON and reports: `"system"`, `"user"`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// One piece of a message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A structured value (a tool that returns JSON, say).
    Json {
        /// The value.
        value: serde_json::Value,
    },
    /// An image, by URL or base64.
    Image {
        /// The MIME type, such as `image/png`.
        media_type: String,
        /// A URL or base64 data.
        data: String,
    },
    /// Model reasoning, with the provider's signature when it gave one.
    Thinking {
        /// The reasoning text.
        text: String,
        /// The provider's signature over it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// A tool call made by the model, inside an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCall {
    /// The provider's call id; the matching result carries it as `tool_call_id`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// A tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            id: String,
            name: String,
            #[serde(default)]
            arguments: serde_json::Value,
        }
        let raw = Raw::deserialize(deserializer)?;
        if raw.id.is_empty() {
            return Err(serde::de::Error::custom("tool call id must not be empty"));
        }
        Ok(ToolCall::new(raw.id, raw.name, raw.arguments))
    }
}

/// Token usage a provider reported for the request that produced an assistant message.
///
/// Importers fill it from recorded logs; the cost model checks itself against it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (all TTLs).
    pub cache_write_tokens: u64,
    /// Of `cache_write_tokens`, those written with the 5-minute TTL.
    pub cache_write_5m_tokens: u64,
    /// Of `cache_write_tokens`, those written with the 1-hour TTL.
    pub cache_write_1h_tokens: u64,
}

impl Usage {
    /// All input tokens of the request: uncached, cache reads and cache writes
    /// (saturating: the counts come from recorded logs).
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct MessageData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<MessageId>,
    role: Role,
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

impl MessageData {
    fn validate(&self) -> Result<(), &'static str> {
        match (self.role, self.tool_call_id.as_deref()) {
            (Role::Tool, None) => return Err("a tool message needs a tool_call_id"),
            (Role::Tool, Some("")) => return Err("tool_call_id must not be empty"),
            (Role::Tool, Some(_)) => {}
            (_, Some(_)) => return Err("only tool messages carry a tool_call_id"),
            (_, None) => {}
        }
        if self.role != Role::Assistant && !self.tool_calls.is_empty() {
            return Err("only assistant messages carry tool calls");
        }
        if self.tool_calls.iter().any(|c| c.id.is_empty()) {
            return Err("tool call id must not be empty");
        }
        Ok(())
    }
}

/// One message of a conversation, provider-neutral.
///
/// Cheap to clone: the data sits behind an `Arc`, so clones share bodies.
///
/// ```
/// use ctxmem::*;
/// let call = ToolCall::new("call_1", "read_file", serde_json::json!({"path": "a.rs"}));
/// let ask = Message::assistant_with_tool_calls("Reading it.", vec![call]);
/// let result = Message::tool_result("call_1", "fn main() {}").with_tool_name("read_file");
/// assert_eq!(ask.tool_calls()[0].id, "call_1");
/// assert_eq!(result.role(), Role::Tool);
/// assert_eq!(result.tool_call_id(), Some("call_1"));
/// assert_eq!(result.text(), "fn main() {}");
/// ```
#[derive(Clone, PartialEq)]
pub struct Message(Arc<MessageData>);

impl Message {
    fn with_role(role: Role, text: String) -> Self {
        Message(Arc::new(MessageData {
            id: None,
            role,
            content: vec![ContentBlock::Text { text }],
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            at: None,
            usage: None,
        }))
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::with_role(Role::System, text.into())
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::with_role(Role::User, text.into())
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::with_role(Role::Assistant, text.into())
    }

    /// An assistant message that calls tools. Empty `text` gives no text block.
    pub fn assistant_with_tool_calls(text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        let mut message = Self::with_role(Role::Assistant, text);
        let data = Arc::make_mut(&mut message.0);
        if matches!(data.content.as_slice(), [ContentBlock::Text { text }] if text.is_empty()) {
            data.content.clear();
        }
        data.tool_calls = calls;
        message
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        let mut message = Self::with_role(Role::Tool, text.into());
        Arc::make_mut(&mut message.0).tool_call_id = Some(tool_call_id.into());
        message
    }

    fn data_mut(&mut self) -> &mut MessageData {
        Arc::make_mut(&mut self.0)
    }

    /// Marks the message (a tool result) as an error, or not.
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.data_mut().is_error = is_error;
        self
    }

    /// Names the tool that produced this result.
    pub fn with_tool_name(mut self, name: impl Into<String>) -> Self {
        self.data_mut().tool_name = Some(name.into());
        self
    }

    /// Sets when the message was written.
    pub fn with_time(mut self, at: DateTime<Utc>) -> Self {
        self.data_mut().at = Some(at);
        self
    }

    /// Replaces the content blocks.
    pub fn with_content(mut self, content: Vec<ContentBlock>) -> Self {
        self.data_mut().content = content;
        self
    }

    /// Attaches the provider's recorded usage (assistant messages).
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.data_mut().usage = Some(usage);
        self
    }

    /// Sets or clears the id. [`ContextMemory`](crate::ContextMemory) assigns ids itself;
    /// this is for stores and importers.
    pub fn with_id(mut self, id: Option<MessageId>) -> Self {
        if self.0.id != id {
            self.data_mut().id = id;
        }
        self
    }

    /// The id a memory assigned, if the message is stored.
    pub fn id(&self) -> Option<MessageId> {
        self.0.id
    }

    /// Who wrote it.
    pub fn role(&self) -> Role {
        self.0.role
    }

    /// The content blocks.
    pub fn content(&self) -> &[ContentBlock] {
        &self.0.content
    }

    /// The text blocks concatenated (as tinyagents and kimi-code do); other blocks are
    /// left out.
    pub fn text(&self) -> String {
        self.0
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls of an assistant message.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.0.tool_calls
    }

    /// The call this tool result answers.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.0.tool_call_id.as_deref()
    }

    /// The tool's name, when the result carries it.
    pub fn tool_name(&self) -> Option<&str> {
        self.0.tool_name.as_deref()
    }

    /// Whether the tool reported an error.
    pub fn is_error(&self) -> bool {
        self.0.is_error
    }

    /// When the message was written.
    pub fn at(&self) -> Option<DateTime<Utc>> {
        self.0.at
    }

    /// The provider's recorded usage, if an importer found one.
    pub fn usage(&self) -> Option<&Usage> {
        self.0.usage.as_ref()
    }

    /// Whether this is a tool result.
    pub fn is_tool_result(&self) -> bool {
        self.0.role == Role::Tool
    }

    /// Whether two handles share the same data (a cheap identity check).
    pub fn ptr_eq(&self, other: &Message) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Checks the shape rules: tool results carry a non-empty `tool_call_id`, only
    /// assistant messages carry tool calls, and call ids are not empty.
    pub fn validate(&self) -> crate::Result<()> {
        self.0
            .validate()
            .map_err(|reason| crate::Error::Invalid(reason.to_owned()))
    }
}

impl fmt::Debug for Message {
    /// `Message { role, content, ... }`, leaving out empty and unset fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let data = &*self.0;
        let mut out = f.debug_struct("Message");
        if let Some(id) = data.id {
            out.field("id", &id.get());
        }
        out.field("role", &data.role)
            .field("content", &data.content);
        if !data.tool_calls.is_empty() {
            out.field("tool_calls", &data.tool_calls);
        }
        if let Some(id) = &data.tool_call_id {
            out.field("tool_call_id", id);
        }
        if let Some(name) = &data.tool_name {
            out.field("tool_name", name);
        }
        if data.is_error {
            out.field("is_error", &true);
        }
        if let Some(at) = data.at {
            out.field("at", &at.to_rfc3339());
        }
        if let Some(usage) = &data.usage {
            out.field("usage", usage);
        }
        out.finish()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let data = MessageData::deserialize(deserializer)?;
        data.validate().map_err(serde::de::Error::custom)?;
        Ok(Message(Arc::new(data)))
    }
}
