//! Reading JSONL lines and JSON documents, with errors that name the line or item.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;

use super::builder::TranscriptBuilder;
use crate::error::Error;
use crate::message::Message;

/// What a line or item handler returns: `Err` says why the input is malformed.
pub(crate) type Handled = Result<(), String>;

/// Runs `handle` on every non-blank line of a JSONL text. A line that is not JSON, or
/// that `handle` rejects, is an [`Error::Corrupt`] naming it (counted under lenient).
pub(crate) fn each_line(
    text: &str,
    builder: &mut TranscriptBuilder,
    mut handle: impl FnMut(&Value, &mut TranscriptBuilder) -> Handled,
) -> Result<(), Error> {
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        builder.count_line();
        let result = serde_json::from_str::<Value>(line)
            .map_err(|error| format!("not JSON: {error}"))
            .and_then(|value| handle(&value, builder));
        if let Err(message) = result {
            let error = Error::Corrupt {
                path: builder.origin().to_owned(),
                line: index + 1,
                message,
            };
            builder.malformed(error)?;
        }
    }
    Ok(())
}

/// Parses a whole-JSON log. A syntax error names its line; it is never lenient.
pub(crate) fn document(text: &str, builder: &TranscriptBuilder) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|error| Error::Corrupt {
        path: builder.origin().to_owned(),
        line: error.line().max(1),
        message: format!("not JSON: {error}"),
    })
}

/// The items of a log that is either a bare array or an object holding it at `key`.
pub(crate) fn items<'a>(
    document: &'a Value,
    key: &str,
    builder: &TranscriptBuilder,
) -> Result<&'a [Value], Error> {
    match document {
        Value::Array(items) => Ok(items),
        _ => required_array(document, key).map_err(|reason| shape_error(builder, reason)),
    }
}

/// Runs `handle` on every item of a JSON array, counting each as a line read; a
/// rejected item is an [`Error::Format`] naming it as `label[i]` (counted under lenient).
pub(crate) fn each_item(
    items: &[Value],
    label: &str,
    builder: &mut TranscriptBuilder,
    handle: impl FnMut(&Value, &mut TranscriptBuilder) -> Handled,
) -> Result<(), Error> {
    items.iter().for_each(|_| builder.count_line());
    each_record(items, label, builder, handle)
}

/// [`each_item`] over records already counted (rebuilt from the lines of a log).
pub(crate) fn each_record(
    items: &[Value],
    label: &str,
    builder: &mut TranscriptBuilder,
    mut handle: impl FnMut(&Value, &mut TranscriptBuilder) -> Handled,
) -> Result<(), Error> {
    for (index, item) in items.iter().enumerate() {
        if let Err(message) = handle(item, builder) {
            let error = shape_error(builder, format!("{label}[{index}]: {message}"));
            builder.malformed(error)?;
        }
    }
    Ok(())
}

/// An [`Error::Format`] about the file being imported.
pub(crate) fn shape_error(builder: &TranscriptBuilder, message: impl Into<String>) -> Error {
    Error::Format {
        path: builder.origin().to_owned(),
        message: message.into(),
    }
}

/// The string at `key`, if there is one.
pub(crate) fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The non-empty string at `key`, or a complaint naming it.
pub(crate) fn required_str<'a>(value: &'a Value, key: &str) -> Result<&'a str, String> {
    match str_at(value, key) {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(format!("missing or empty \"{key}\"")),
    }
}

/// The array at `key`, or a complaint naming it.
pub(crate) fn required_array<'a>(value: &'a Value, key: &str) -> Result<&'a [Value], String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| format!("missing array \"{key}\""))
}

/// The unsigned number at `key`, 0 when absent.
pub(crate) fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A time at `key`: RFC 3339, or a zone-less local time read as UTC.
pub(crate) fn time_at(value: &Value, key: &str) -> Option<DateTime<Utc>> {
    let text = str_at(value, key)?;
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|naive| naive.and_utc())
}

/// Tool-call arguments as written: JSON when the text is JSON, the text otherwise.
pub(crate) fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// The message with its recorded time, when there is one.
pub(crate) fn timed(message: Message, at: Option<DateTime<Utc>>) -> Message {
    match at {
        Some(at) => message.with_time(at),
        None => message,
    }
}
