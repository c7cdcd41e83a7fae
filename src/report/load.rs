//! Finding session files and reading them into [`Session`]s.

use std::path::{Path, PathBuf};

use crate::cost::Session;
use crate::error::Error;
use crate::import::{detect, import_file, ImportOptions};

/// File extensions a folder walk picks up as sessions.
const SESSION_EXTENSIONS: [&str; 3] = ["jsonl", "json", "traj"];

/// The session files of `paths`: files as given, folders walked recursively for
/// `.jsonl`, `.json` and `.traj` files in a format [`load_session`] reads (others,
/// such as a `manifest.json`, are passed over), each folder's files in name order.
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
            && recognised(&path)
        {
            files.push(path);
        }
    }
    Ok(())
}

/// Whether `path` holds a session [`load_session`] can read; an unreadable file
/// counts, so that loading it reports the error.
fn recognised(path: &Path) -> bool {
    match std::fs::read_to_string(path) {
        Ok(text) => detect(&text, path).is_some(),
        Err(_) => true,
    }
}

/// Reads a session file in any format the importer detects (ctxmem's own JSONL
/// included), with its full compactions. A bad line is an error naming the file and
/// line.
pub fn load_session(path: &Path) -> Result<Session, Error> {
    let transcript = import_file(path, &ImportOptions::default())?;
    Ok(Session {
        file: path.display().to_string(),
        format: transcript.format.name().to_owned(),
        messages: transcript.messages,
        compactions: transcript.compactions,
        prefix_tokens: 0,
    })
}
