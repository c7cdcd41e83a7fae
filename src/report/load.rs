//! Finding session files and reading them into [`Session`]s.

use std::path::{Path, PathBuf};

use crate::cost::Session;
use crate::error::Error;
use crate::message::Message;

/// File extensions a folder walk picks up as sessions.
const SESSION_EXTENSIONS: [&str; 3] = ["jsonl", "json", "traj"];

/// The session files of `paths`: files as given, folders walked recursively for
/// `.jsonl`, `.json` and `.traj` files, each folder's files in name order.
pub fn session_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut files)?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
            ));
        }
    }
    Ok(files)
}

fn walk(folder: &Path, files: &mut Vec<PathBuf>) -> Result<(), Error> {
    let entries = std::fs::read_dir(folder).map_err(|source| Error::io(folder, source))?;
    let mut paths = entries
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::io(folder, source))?;
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, files)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SESSION_EXTENSIONS.contains(&e))
        {
            files.push(path);
        }
    }
    Ok(())
}

/// Reads a session file: ctxmem's own JSONL, one [`Message`] per line (blank lines
/// skipped). A bad line is an error naming the file and line.
pub fn load_session(path: &Path) -> Result<Session, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::io(path, source))?;
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let message: Message = serde_json::from_str(line).map_err(|error| Error::Corrupt {
            path: path.to_owned(),
            line: index + 1,
            message: error.to_string(),
        })?;
        messages.push(message);
    }
    Ok(Session {
        file: path.display().to_string(),
        format: "ctxmem".into(),
        messages,
        compactions: Vec::new(),
        prefix_tokens: 0,
    })
}
