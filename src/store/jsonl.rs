//! The log format of [`FileStore`](crate::FileStore): one [`Record`] per line, as JSON
//! with a schema version first: `{"v":1,"kind":"message","message":{...}}`.
//!
//! Pure functions over bytes; the file handling lives in `file.rs`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::message::{Message, MessageId};
use crate::store::Record;

/// The schema version this crate writes and reads.
pub(crate) const VERSION: u64 = 1;

/// A line as written: the version, then the record's own fields.
#[derive(Serialize)]
struct LineOut<'a> {
    v: u64,
    #[serde(flatten)]
    record: &'a Record,
}

/// Appends `record` to `out` as one line, newline included.
pub(crate) fn encode(record: &Record, out: &mut Vec<u8>) -> Result<(), Error> {
    serde_json::to_writer(&mut *out, &LineOut { v: VERSION, record })?;
    out.push(b'\n');
    Ok(())
}

/// The record kinds, as tagged in `kind`.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Message,
    Cutoff,
    Clear,
    FullCompaction,
    Snapshot,
}

/// A line as read: every kind's fields side by side, so that one streaming pass
/// parses it (serde's internally tagged enums buffer the whole line first, which
/// halves replay speed). `into_record` checks that the kind's fields are there.
#[derive(Deserialize)]
struct LineIn {
    v: u64,
    kind: Kind,
    message: Option<Message>,
    cutoff: Option<MessageId>,
    messages: Option<Vec<Message>>,
    next_id: Option<u64>,
    last_assistant_at: Option<DateTime<Utc>>,
}

impl LineIn {
    fn into_record(self) -> Result<Record, &'static str> {
        Ok(match self.kind {
            Kind::Message => Record::Message {
                message: self.message.ok_or("a message record needs `message`")?,
            },
            Kind::Cutoff => Record::Cutoff {
                cutoff: self.cutoff.ok_or("a cutoff record needs `cutoff`")?,
            },
            Kind::Clear => Record::Clear,
            Kind::FullCompaction => Record::FullCompaction {
                messages: self
                    .messages
                    .ok_or("a full_compaction record needs `messages`")?,
            },
            Kind::Snapshot => Record::Snapshot {
                next_id: self.next_id.ok_or("a snapshot record needs `next_id`")?,
                last_assistant_at: self.last_assistant_at,
            },
        })
    }
}

/// Just the version, to tell a newer writer's line from a broken one.
#[derive(Deserialize)]
struct VersionOnly {
    v: u64,
}

/// Why one line did not decode.
enum LineError {
    /// Written by an unknown schema version.
    Version(u64),
    /// Not a record: bad JSON or a wrong shape.
    Bad(String),
}

fn decode(line: &[u8]) -> Result<Record, LineError> {
    match serde_json::from_slice::<LineIn>(line) {
        Ok(parsed) if parsed.v == VERSION => parsed
            .into_record()
            .map_err(|reason| LineError::Bad(reason.to_owned())),
        Ok(parsed) => Err(LineError::Version(parsed.v)),
        Err(error) => match serde_json::from_slice::<VersionOnly>(line) {
            Ok(VersionOnly { v }) if v != VERSION => Err(LineError::Version(v)),
            _ => Err(LineError::Bad(error.to_string())),
        },
    }
}

/// What reading a whole log found.
#[derive(Debug)]
pub(crate) struct Scan {
    /// The records, oldest first.
    pub records: Vec<Record>,
    /// Bytes of the log up to the end of the last good line. Anything after it is a
    /// torn tail: a last line without its newline, or a last line that does not parse.
    pub valid_len: usize,
}

/// Decodes a whole log. A bad line before the last one is [`Error::Corrupt`]; a line
/// from another schema version is [`Error::UnsupportedVersion`], wherever it is.
pub(crate) fn scan(path: &Path, bytes: &[u8]) -> Result<Scan, Error> {
    let mut records = Vec::new();
    let mut start = 0;
    let mut line_number = 0;
    while let Some(length) = bytes[start..].iter().position(|&b| b == b'\n') {
        line_number += 1;
        let end = start + length + 1;
        match decode(&bytes[start..start + length]) {
            Ok(record) => records.push(record),
            Err(LineError::Version(version)) => {
                return Err(Error::UnsupportedVersion {
                    path: path.to_owned(),
                    line: line_number,
                    version,
                })
            }
            Err(LineError::Bad(_)) if end == bytes.len() => break,
            Err(LineError::Bad(message)) => {
                return Err(Error::Corrupt {
                    path: path.to_owned(),
                    line: line_number,
                    message,
                })
            }
        }
        start = end;
    }
    Ok(Scan {
        records,
        valid_len: start,
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::message::ToolCall;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap()
    }

    fn every_kind() -> Vec<Record> {
        let call = ToolCall::new("c1", "read", serde_json::json!({"path": "a"}));
        let ask = Message::assistant_with_tool_calls("look", vec![call])
            .with_id(Some(MessageId::new(1)))
            .with_time(at());
        let result = Message::tool_result("c1", "line\n\"quoted\"")
            .with_id(Some(MessageId::new(2)))
            .with_time(at());
        vec![
            Record::Message { message: ask },
            Record::Cutoff {
                cutoff: MessageId::new(2),
            },
            Record::Clear,
            Record::FullCompaction {
                messages: vec![result],
            },
            Record::Snapshot {
                next_id: 7,
                last_assistant_at: Some(at()),
            },
            Record::Snapshot {
                next_id: 8,
                last_assistant_at: None,
            },
        ]
    }

    fn encode_all(records: &[Record]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for record in records {
            encode(record, &mut bytes).unwrap();
        }
        bytes
    }

    #[test]
    fn every_kind_round_trips_with_its_version_first() {
        let records = every_kind();
        let bytes = encode_all(&records);
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            assert!(line.starts_with(br#"{"v":1,"kind":""#));
        }
        let scan = scan(Path::new("s.jsonl"), &bytes).unwrap();
        assert_eq!(scan.records, records);
        assert_eq!(scan.valid_len, bytes.len());
    }

    #[test]
    fn a_kind_without_its_fields_is_bad() {
        let bytes = b"{\"v\":1,\"kind\":\"cutoff\"}\n{\"v\":1,\"kind\":\"clear\"}\n";
        let error = scan(Path::new("s.jsonl"), bytes).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
        assert!(error.contains("`cutoff`"), "{error}");
    }

    #[test]
    fn a_newer_version_is_named_even_with_unknown_kinds() {
        let bytes = b"{\"v\":2,\"kind\":\"hologram\"}\n";
        let error = scan(Path::new("s.jsonl"), bytes).unwrap_err();
        assert!(matches!(
            error,
            Error::UnsupportedVersion {
                line: 1,
                version: 2,
                ..
            }
        ));
    }
}
