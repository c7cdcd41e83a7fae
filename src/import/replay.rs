//! Replaying an imported transcript through a [`ContextMemory`], to see what micro
//! compaction would have cleared and when.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::Serialize;

use super::Transcript;
use crate::clock::ManualClock;
use crate::error::Error;
use crate::event::Event;
use crate::memory::{ContextMemory, ContextMemoryBuilder};
use crate::message::Role;
use crate::micro::MicroCompactionConfig;

/// A transcript replayed into a fresh in-memory [`ContextMemory`] on a manual clock.
pub struct Replay {
    /// The memory, holding the transcript's context as it stood at the end.
    pub memory: ContextMemory,
    /// The replay's clock, standing at the last request.
    pub clock: ManualClock,
    /// Every advance of the cutoff, in order.
    pub advances: Vec<Advance>,
}

/// One advance of the cutoff during a [`replay`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Advance {
    /// When the request that advanced it was made.
    pub at: DateTime<Utc>,
    /// The index (into the transcript's messages) of the message the request came
    /// before; the message count for the final request.
    pub before_message: usize,
    /// Seconds since the last assistant message.
    pub idle_seconds: i64,
    /// Tool results it cleared.
    pub cleared: usize,
    /// Estimated tokens of the projected history before it.
    pub from_tokens: u64,
    /// Estimated tokens after it.
    pub to_tokens: u64,
}

/// Replays `transcript` the way a live harness would have run it: the clock follows the
/// recorded times; before each assistant message a request is made (so the cutoff
/// advances after idle gaps); at each compaction point the summary replaces the
/// history ([`ContextMemory::apply_full_compaction`]). With `final_request`, one more
/// request is made at that time (to see what resuming then would send).
///
/// Messages without a time get the time of the one before; a transcript with no times
/// at all starts at the Unix epoch.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use ctxmem::import::{import_str, replay, ImportOptions};
/// use ctxmem::MicroCompactionConfig;
/// let log = r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]"#;
/// let transcript = import_str(log, "chat.json".as_ref(), &ImportOptions::default())?;
/// let later = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
/// let replayed = replay(&transcript, MicroCompactionConfig::default(), Some(later))?;
/// assert_eq!(replayed.memory.len(), 2);
/// assert!(replayed.advances.is_empty()); // no tool results to clear
/// # Ok::<(), ctxmem::Error>(())
/// ```
pub fn replay(
    transcript: &Transcript,
    config: MicroCompactionConfig,
    final_request: Option<DateTime<Utc>>,
) -> Result<Replay, Error> {
    replay_into(
        transcript,
        ContextMemory::builder().micro_compaction(config),
        final_request,
    )
}

/// [`replay`] into the memory `builder` builds (with a store, say, to keep the
/// session); the replay sets its clock and adds a listener.
pub fn replay_into(
    transcript: &Transcript,
    builder: ContextMemoryBuilder,
    final_request: Option<DateTime<Utc>>,
) -> Result<Replay, Error> {
    let start = transcript
        .messages
        .iter()
        .find_map(|m| m.at())
        .unwrap_or(DateTime::UNIX_EPOCH);
    let clock = ManualClock::new(start);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let memory = builder
        .clock(clock.clone())
        .on_event(move |event| sink.lock().push(event.clone()))
        .build()?;
    let mut replay = Replay {
        memory,
        clock,
        advances: Vec::new(),
    };
    let mut now = start;
    for (index, message) in transcript.messages.iter().enumerate() {
        now = now.max(message.at().unwrap_or(now));
        replay.clock.set(now);
        if message.role() == Role::Assistant {
            replay.request(index, &events)?;
        }
        let message = message.clone().with_time(message.at().unwrap_or(now));
        if transcript.compactions.contains(&index) {
            replay.memory.apply_full_compaction(vec![message])?;
        } else {
            replay.memory.push(message)?;
        }
    }
    if let Some(at) = final_request {
        replay.clock.set(at);
        replay.request(transcript.messages.len(), &events)?;
    }
    Ok(replay)
}

impl Replay {
    /// Makes a request now and records the advance it caused, if any.
    fn request(&mut self, before_message: usize, events: &Mutex<Vec<Event>>) -> Result<(), Error> {
        self.memory.try_messages()?;
        let at = self.memory.now();
        for event in events.lock().drain(..) {
            if let Event::MicroCompacted {
                cleared,
                from_tokens,
                to_tokens,
                idle,
                ..
            } = event
            {
                self.advances.push(Advance {
                    at,
                    before_message,
                    idle_seconds: idle.num_seconds(),
                    cleared,
                    from_tokens,
                    to_tokens,
                });
            }
        }
        Ok(())
    }
}
