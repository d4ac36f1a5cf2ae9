//! What happens during a run, typed: governor steps, background apps, context shifts, policy
//! actions and kills. Trace rows carry the events of their step ([`Events`]) and the summary
//! the actions ([`Action`]); both render as text only where they are written out (the CLI's
//! tables, the `events` column of a trace file), as `throttle 0→1; alloc +3.00 GB`.

use std::fmt;

use memwall_spec::{Mix, ThermalStatus};
use serde::Serialize;

use super::thermal::ThrottleCause;

/// Something that happened during a step, recorded on its trace row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum SimEvent {
    /// The governor moved from level `from` to level `to` (higher is slower), at the ask of
    /// `by`.
    Throttle {
        /// Level before.
        from: usize,
        /// Level after.
        to: usize,
        /// The controller whose ask the new level is.
        by: ThrottleCause,
    },
    /// The operating system's thermal status changed.
    ThermalStatus {
        /// Status before.
        from: ThermalStatus,
        /// Status after.
        to: ThermalStatus,
    },
    /// The governor's idle injection lets the unit work `duty` of the time.
    IdleInjection {
        /// Share of time the unit works, 0–1.
        duty: f64,
    },
    /// A background app allocated `bytes`.
    Alloc {
        /// Bytes taken.
        bytes: u64,
    },
    /// A background app freed `bytes`.
    Free {
        /// Bytes given back.
        bytes: u64,
    },
    /// A bus master started taking `share` of the DRAM bandwidth.
    BusMasterStart {
        /// Share of bandwidth, 0–1.
        share: f64,
    },
    /// A bus master stopped taking `share` of the DRAM bandwidth.
    BusMasterEnd {
        /// Share of bandwidth, 0–1.
        share: f64,
    },
    /// The context was full: it kept `to` of its `from` tokens to make room.
    ContextShift {
        /// Tokens held before.
        from: u64,
        /// Tokens kept.
        to: u64,
    },
    /// A policy acted, or the low-memory killer ended the app.
    Action(Action),
}

impl fmt::Display for SimEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimEvent::Throttle { from, to, by } => write!(f, "throttle {from}→{to} ({})", by.name()),
            SimEvent::ThermalStatus { from, to } => write!(f, "thermal status {from}→{to}"),
            SimEvent::IdleInjection { duty } => write!(f, "idle injection: duty {:.0}%", duty * 100.0),
            SimEvent::Alloc { bytes } => write!(f, "alloc +{:.2} GB", *bytes as f64 / 1e9),
            SimEvent::Free { bytes } => write!(f, "free -{:.2} GB", *bytes as f64 / 1e9),
            SimEvent::BusMasterStart { share } => write!(f, "bus master {:.0}%", share * 100.0),
            SimEvent::BusMasterEnd { share } => write!(f, "bus master -{:.0}%", share * 100.0),
            SimEvent::ContextShift { from, to } => write!(f, "context shift {from}→{to}"),
            SimEvent::Action(a) => a.what.fmt(f),
        }
    }
}

/// An action taken at a moment of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// Simulated time, seconds.
    pub t_s: f64,
    /// What was done, and by whom.
    pub what: ActionKind,
}

/// Written `t=12.3s truncate_context: keep 2048 tokens`.
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:.1}s {}", self.t_s, self.what)
    }
}

/// What a policy or the operating system did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum ActionKind {
    /// Policy `policy` cut the context to `keep_tokens`.
    TruncateContext {
        /// The policy's name.
        policy: String,
        /// Tokens the context keeps.
        keep_tokens: u64,
    },
    /// Policy `policy` reloaded the weights as `mix`.
    SwitchWeights {
        /// The policy's name.
        policy: String,
        /// The new weight mix.
        mix: Mix,
    },
    /// Policy `policy` asked for weights the scenario cannot take.
    SwitchFailed {
        /// The policy's name.
        policy: String,
        /// Why.
        reason: String,
    },
    /// The low-memory killer ended the app: free memory fell below `lmk_free_bytes`.
    Kill {
        /// The killer's threshold, bytes.
        lmk_free_bytes: u64,
    },
    /// The operating system ended the app for heat: its thermal status reached SHUTDOWN, the
    /// skin at `skin_c` (the governor's `status_skin_c[5]`).
    ThermalShutdown {
        /// Skin temperature, °C.
        skin_c: f64,
    },
    /// The app stopped its own work when the OS's thermal status reached `status`
    /// (`sim.thermal.stop_at_status`), the skin at `skin_c`.
    ThermalStop {
        /// The status that stopped it.
        status: ThermalStatus,
        /// Skin temperature, °C.
        skin_c: f64,
    },
}

/// Written as on a trace row: `truncate_context: keep 2048 tokens`, `kill: free memory below
/// 300000000 B`.
impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActionKind::TruncateContext { policy, keep_tokens } => write!(f, "{policy}: keep {keep_tokens} tokens"),
            ActionKind::SwitchWeights { policy, mix } => write!(f, "{policy}: reload as {mix}"),
            ActionKind::SwitchFailed { policy, reason } => write!(f, "{policy}: failed ({reason})"),
            ActionKind::Kill { lmk_free_bytes } => write!(f, "kill: free memory below {lmk_free_bytes} B"),
            ActionKind::ThermalShutdown { skin_c } => write!(f, "kill: thermal shutdown at skin {skin_c:.1} °C"),
            ActionKind::ThermalStop { status, skin_c } => {
                write!(f, "stop: thermal status {status} at skin {skin_c:.1} °C (the app's limit)")
            }
        }
    }
}

/// The events of one trace row, in the order they happened (usually none).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Events(pub Vec<SimEvent>);

impl Events {
    /// No events.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The events.
    pub fn iter(&self) -> std::slice::Iter<'_, SimEvent> {
        self.0.iter()
    }

    /// Record one more.
    pub fn push(&mut self, e: SimEvent) {
        self.0.push(e);
    }

    /// Whether the written form (`throttle 0→1; kill: ...`) contains `text`: a quick check
    /// for tests and scripts; match on [`SimEvent`] for anything more.
    pub fn contains(&self, text: &str) -> bool {
        self.iter().any(|e| e.to_string().contains(text))
    }
}

impl From<Vec<SimEvent>> for Events {
    fn from(v: Vec<SimEvent>) -> Self {
        Events(v)
    }
}

/// `; `-separated, as in a trace file's `events` column.
impl fmt::Display for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            e.fmt(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_written_as_the_trace_files_have_them() {
        let e = Events::from(vec![
            SimEvent::Throttle { from: 0, to: 1, by: ThrottleCause::Skin },
            SimEvent::ThermalStatus { from: ThermalStatus::Light, to: ThermalStatus::Moderate },
            SimEvent::Alloc { bytes: 9_500_000_000 },
            SimEvent::BusMasterStart { share: 0.25 },
            SimEvent::BusMasterEnd { share: 0.25 },
            SimEvent::IdleInjection { duty: 0.5 },
            SimEvent::ContextShift { from: 2048, to: 1792 },
            SimEvent::Free { bytes: 9_500_000_000 },
        ]);
        assert_eq!(
            e.to_string(),
            "throttle 0→1 (skin); thermal status light→moderate; alloc +9.50 GB; bus master 25%; bus master -25%; idle injection: duty 50%; \
             context shift 2048→1792; free -9.50 GB"
        );
        assert!(e.contains("bus master -25") && !e.contains("kill"));
        let kill = Action { t_s: 240.04, what: ActionKind::Kill { lmk_free_bytes: 300_000_000 } };
        assert_eq!(kill.to_string(), "t=240.0s kill: free memory below 300000000 B");
        assert_eq!(SimEvent::Action(kill).to_string(), "kill: free memory below 300000000 B");
        let switch = ActionKind::SwitchWeights { policy: "switch_quant".into(), mix: "Q2_K".parse().unwrap() };
        assert_eq!(switch.to_string(), "switch_quant: reload as Q2_K");
        let cut = ActionKind::TruncateContext { policy: "truncate_context".into(), keep_tokens: 2048 };
        assert_eq!(cut.to_string(), "truncate_context: keep 2048 tokens");
        let stop = ActionKind::ThermalStop { status: ThermalStatus::Severe, skin_c: 45.04 };
        assert_eq!(stop.to_string(), "stop: thermal status severe at skin 45.0 °C (the app's limit)");
        assert_eq!(Events::default().to_string(), "");
    }
}
