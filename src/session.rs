//! Validated session ids: safe as file names and database keys.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Error;

/// The longest session id accepted.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// A session's id: 1 to 128 characters from `[A-Za-z0-9._-]`, and not `.` or `..`.
///
/// Ids become file names, so anything that could escape a directory is refused.
///
/// ```
/// use ctxmem::SessionId;
/// assert_eq!(SessionId::new("chat-2026.01_a").unwrap().as_str(), "chat-2026.01_a");
/// assert!(SessionId::new("../etc/passwd").is_err());
/// assert!(SessionId::new("").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// Validates `id`.
    pub fn new(id: impl Into<String>) -> Result<Self, Error> {
        let id = id.into();
        let reason = if id.is_empty() {
            Some("it is empty")
        } else if id.len() > MAX_SESSION_ID_LEN {
            Some("it is longer than 128 characters")
        } else if id == "." || id == ".." {
            Some("it is a directory name")
        } else if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            Some("only A-Z, a-z, 0-9, '.', '_' and '-' are allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::InvalidSessionId { id, reason }),
            None => Ok(SessionId(id)),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for SessionId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        SessionId::new(s)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        SessionId::new(raw).map_err(serde::de::Error::custom)
    }
}
