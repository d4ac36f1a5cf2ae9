//! Configuration of the discrete-event simulator: the session (turns and think time),
//! background activity, which effects are on, and the degradation policies.
//!
//! ```toml
//! [sim]
//! duration_s = 600
//! seed = 7
//! [sim.session]
//! turns = [{ prompt_tokens = 256, gen_tokens = 512, think_s = 5 }]
//! repeat = 0                 # 0: repeat the turns until duration_s
//! [[sim.background]]
//! type = "alloc"             # an app takes memory at 120 s and frees it 60 s later
//! at_s = 120
//! bytes = 3_000_000_000
//! duration_s = 60
//! [[sim.background]]
//! type = "bandwidth"         # the camera takes 30 % of DRAM bandwidth for 20 s
//! at_s = 30
//! duration_s = 20
//! share = 0.3
//! [[sim.policies]]
//! type = "switch_quant"
//! to = { mix = "Q2_K" }
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Result, SpecError, non_negative, nonzero, positive};
use crate::mix::WeightQuant;
use crate::thermal::ThermalSpec;

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Prompt tokens of the turn (prefilled).
    pub prompt_tokens: u64,
    /// Tokens generated in reply.
    pub gen_tokens: u64,
    /// Idle time after the reply before the next turn, seconds.
    #[serde(default)]
    pub think_s: f64,
}

/// A session: turns, repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// The turns; empty means one turn of the workload's `prompt_tokens` and `gen_tokens`.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// How many times the turn list runs; 0 repeats it until `duration_s`.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Whether each repetition starts a fresh conversation (the context back to the
    /// workload's `history_tokens`, 0 when unset) or continues it (the context keeps growing).
    #[serde(default = "yes")]
    pub fresh_context: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session { turns: Vec::new(), repeat: 1, fresh_context: true }
    }
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

/// Something else on the device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum BackgroundEvent {
    /// An app allocates `bytes` at `at_s` and frees them after `duration_s` (never if absent).
    Alloc {
        /// Start, seconds.
        at_s: f64,
        /// Bytes taken.
        bytes: u64,
        /// How long they are held, seconds.
        #[serde(default)]
        duration_s: Option<f64>,
    },
    /// A bus master (camera, display, GPU) takes `share` of the DRAM bandwidth for `duration_s`.
    Bandwidth {
        /// Start, seconds.
        at_s: f64,
        /// Duration, seconds.
        duration_s: f64,
        /// Fraction of the bandwidth taken, in (0, 1).
        share: f64,
    },
}

/// How the cache hierarchy is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// LRU by bytes over per-layer weight, expert and KV objects in every cache level.
    #[default]
    Lru,
    /// The estimator's steady-state rule: a step whose bytes fit the usable last-level cache
    /// is served from it, otherwise from DRAM.
    Steady,
}

/// How routed experts are chosen per token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum Routing {
    /// The expected number of distinct experts (the estimator's formula); no expert identities.
    Expected,
    /// Experts drawn per token and layer: Zipf-skewed by `workload.routing_skew`; with
    /// probability `correlation` an expert of the previous token is kept.
    Sampled {
        /// Probability of reusing each of the previous token's experts, in [0, 1].
        #[serde(default)]
        correlation: f64,
    },
}

impl Default for Routing {
    fn default() -> Self {
        Routing::Sampled { correlation: 0.0 }
    }
}

/// Thermal simulation switches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThermalSim {
    /// Simulate temperatures and the governor.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Starting temperature of every node, °C (default: ambient).
    #[serde(default)]
    pub start_c: Option<f64>,
    /// Replace the device's network (or supply one where the device has none).
    #[serde(default)]
    pub spec: Option<ThermalSpec>,
    /// The app stops its own work once the OS's thermal status reaches this one (as Android
    /// asks apps to shed work as the status rises; a benchmark that aborts when the phone is
    /// hot): the run ends there, reported like a kill. Absent: only the OS's SHUTDOWN ends
    /// it. Needs a network whose governor states `status_skin_c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_at_status: Option<crate::ThermalStatus>,
}

impl Default for ThermalSim {
    fn default() -> Self {
        ThermalSim { enabled: true, start_c: None, spec: None, stop_at_status: None }
    }
}

/// Storage and residency switches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSim {
    /// Read the model from storage before the first turn.
    #[serde(default = "yes")]
    pub load: bool,
    /// Keep routed experts on flash with a DRAM cache of this many bytes (LRU by bytes);
    /// misses are read from storage. Absent: all experts resident.
    #[serde(default)]
    pub expert_cache_bytes: Option<u64>,
}

impl Default for StorageSim {
    fn default() -> Self {
        StorageSim { load: true, expert_cache_bytes: None }
    }
}

/// OS memory switches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySim {
    /// Track free memory and act at the low-memory-killer threshold.
    #[serde(default = "yes")]
    pub pressure: bool,
    /// Free memory below which the low-memory killer acts, bytes.
    #[serde(default = "lmk_default")]
    pub lmk_free_bytes: u64,
    /// Weights are a memory-mapped file (llama.cpp's default): page cache the kernel evicts
    /// under pressure, so a model beyond memory pages from flash every token. `false`:
    /// weights are loaded into anonymous memory (most mobile runtimes) and count toward the
    /// low-memory killer like the KV cache.
    #[serde(default = "yes")]
    pub mmap_weights: bool,
}

fn lmk_default() -> u64 {
    300_000_000
}

impl Default for MemorySim {
    fn default() -> Self {
        MemorySim { pressure: true, lmk_free_bytes: lmk_default(), mmap_weights: true }
    }
}

/// A degradation policy. Memory policies act instead of the kill when free memory falls
/// below the threshold; thermal and rate policies gate each token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum PolicySpec {
    /// Drop the oldest context, keeping `keep_tokens`, and shrink the KV cache to match.
    TruncateContext {
        /// Tokens kept.
        keep_tokens: u64,
    },
    /// Reload the model in a smaller weight format (paying the load time).
    SwitchQuant {
        /// The weights to switch to.
        to: WeightQuant,
    },
    /// Stop generating above `above_c` (die) until it cools to `resume_c`.
    PauseWhenHot {
        /// Pause threshold, °C.
        above_c: f64,
        /// Resume threshold, °C (below `above_c`).
        resume_c: f64,
    },
    /// Never decode faster than `tok_s`.
    CapRate {
        /// Tokens per second.
        tok_s: f64,
    },
}

impl PolicySpec {
    /// Short name for traces and summaries.
    pub fn name(&self) -> &'static str {
        match self {
            PolicySpec::TruncateContext { .. } => "truncate_context",
            PolicySpec::SwitchQuant { .. } => "switch_quant",
            PolicySpec::PauseWhenHot { .. } => "pause_when_hot",
            PolicySpec::CapRate { .. } => "cap_rate",
        }
    }
}

/// Everything the simulator adds to a scenario.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of the run's one random generator.
    #[serde(default)]
    pub seed: u64,
    /// Stop after this much simulated time, seconds (absent: when the session ends).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The conversation.
    #[serde(default)]
    pub session: Session,
    /// Other apps and bus masters.
    #[serde(default)]
    pub background: Vec<BackgroundEvent>,
    /// Temperatures and the governor.
    #[serde(default)]
    pub thermal: ThermalSim,
    /// Cache model.
    #[serde(default)]
    pub cache: CacheMode,
    /// Expert routing.
    #[serde(default)]
    pub routing: Routing,
    /// Storage.
    #[serde(default)]
    pub storage: StorageSim,
    /// OS memory.
    #[serde(default)]
    pub memory: MemorySim,
    /// Degradation policies, consulted in order.
    #[serde(default)]
    pub policies: Vec<PolicySpec>,
}

impl SimConfig {
    /// Every effect off: no thermal model, no background, no memory pressure, no load, the
    /// estimator's cache rule and expected routing. The simulator then reproduces the
    /// analytic estimate.
    pub fn effects_off() -> Self {
        SimConfig {
            thermal: ThermalSim { enabled: false, ..ThermalSim::default() },
            cache: CacheMode::Steady,
            routing: Routing::Expected,
            storage: StorageSim { load: false, expert_cache_bytes: None },
            memory: MemorySim { pressure: false, ..MemorySim::default() },
            ..SimConfig::default()
        }
    }

    /// Check every value; errors name the field (`background[2].share`).
    pub fn validate(&self) -> Result<()> {
        use crate::bounds::{self, MAX_CELSIUS, MAX_SECONDS, at_most};
        let seconds = |field: &str, v: f64| at_most(field, v, MAX_SECONDS, "seconds");
        if let Some(d) = self.duration_s {
            positive("duration_s", d)?;
            seconds("duration_s", d)?;
        }
        if let Some(stop) = self.thermal.stop_at_status
            && !self.thermal.enabled
        {
            return Err(crate::SpecError::invalid(
                "thermal.stop_at_status",
                stop,
                "needs the thermal simulation (thermal.enabled = false reports no status)",
            ));
        }
        for (i, t) in self.session.turns.iter().enumerate() {
            let f = |n: &str| format!("session.turns[{i}].{n}");
            bounds::tokens(&f("prompt_tokens"), t.prompt_tokens)?;
            bounds::tokens(&f("gen_tokens"), t.gen_tokens)?;
            if t.prompt_tokens + t.gen_tokens == 0 {
                return Err(SpecError::invalid(f("gen_tokens"), 0, "a turn needs prompt or generated tokens"));
            }
            non_negative(&f("think_s"), t.think_s)?;
            seconds(&f("think_s"), t.think_s)?;
        }
        if self.session.repeat == 0 && self.duration_s.is_none() {
            return Err(SpecError::invalid("session.repeat", 0, "repeating until the end needs `duration_s`"));
        }
        for (i, b) in self.background.iter().enumerate() {
            let f = |n: &str| format!("background[{i}].{n}");
            match b {
                BackgroundEvent::Alloc { at_s, bytes, duration_s } => {
                    non_negative(&f("at_s"), *at_s)?;
                    seconds(&f("at_s"), *at_s)?;
                    nonzero(&f("bytes"), *bytes)?;
                    bounds::bytes(&f("bytes"), *bytes)?;
                    if let Some(d) = duration_s {
                        positive(&f("duration_s"), *d)?;
                        seconds(&f("duration_s"), *d)?;
                    }
                }
                BackgroundEvent::Bandwidth { at_s, duration_s, share } => {
                    non_negative(&f("at_s"), *at_s)?;
                    seconds(&f("at_s"), *at_s)?;
                    positive(&f("duration_s"), *duration_s)?;
                    seconds(&f("duration_s"), *duration_s)?;
                    if !(share.is_finite() && *share > 0.0 && *share < 1.0) {
                        return Err(SpecError::invalid(f("share"), share, "must lie in (0, 1)"));
                    }
                }
            }
        }
        if let Some(c) = self.thermal.start_c
            && !c.is_finite()
        {
            return Err(SpecError::invalid("thermal.start_c", c, "must be a finite number"));
        }
        if let Some(c) = self.thermal.start_c {
            at_most("thermal.start_c", c, MAX_CELSIUS, "°C")?;
        }
        if let Some(s) = &self.thermal.spec {
            s.validate().map_err(|e| e.within("thermal.spec"))?;
        }
        if let Routing::Sampled { correlation } = self.routing
            && !(0.0..=1.0).contains(&correlation)
        {
            return Err(SpecError::invalid("routing.correlation", correlation, "must lie in [0, 1]"));
        }
        if let Some(b) = self.storage.expert_cache_bytes {
            nonzero("storage.expert_cache_bytes", b)?;
            bounds::bytes("storage.expert_cache_bytes", b)?;
        }
        for (i, p) in self.policies.iter().enumerate() {
            let f = |n: &str| format!("policies[{i}].{n}");
            match p {
                PolicySpec::TruncateContext { keep_tokens } => {
                    nonzero(&f("keep_tokens"), *keep_tokens)?;
                    bounds::tokens(&f("keep_tokens"), *keep_tokens)?;
                }
                PolicySpec::SwitchQuant { to } => to.validate().map_err(|e| e.within(&f("to")))?,
                PolicySpec::PauseWhenHot { above_c, resume_c } => {
                    positive(&f("above_c"), *above_c)?;
                    at_most(&f("above_c"), *above_c, MAX_CELSIUS, "°C")?;
                    if !(resume_c.is_finite() && resume_c < above_c) {
                        return Err(SpecError::invalid(f("resume_c"), resume_c, "must be below `above_c`"));
                    }
                }
                PolicySpec::CapRate { tok_s } => positive(&f("tok_s"), *tok_s)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_toml;

    #[test]
    fn parses_the_documented_example() {
        let text = "duration_s = 600\nseed = 7\n[session]\nturns = [{ prompt_tokens = 256, gen_tokens = 512, think_s = 5 }]\nrepeat = 0\n[[background]]\ntype = \"alloc\"\nat_s = 120\nbytes = 3_000_000_000\nduration_s = 60\n[[background]]\ntype = \"bandwidth\"\nat_s = 30\nduration_s = 20\nshare = 0.3\n[[policies]]\ntype = \"switch_quant\"\nto = { mix = \"Q2_K\" }\n";
        let c: SimConfig = from_toml(text, "sim").unwrap();
        c.validate().unwrap();
        assert_eq!(c.session.repeat, 0);
        assert_eq!(c.background.len(), 2);
        assert_eq!(c.policies[0].name(), "switch_quant");
    }

    #[test]
    fn impossible_values_name_their_field() {
        let cases = [
            ("duration_s = -1", "duration_s"),
            ("[[background]]\ntype = \"bandwidth\"\nat_s = 1\nduration_s = 2\nshare = 1.5", "background[0].share"),
            ("[[background]]\ntype = \"alloc\"\nat_s = -3\nbytes = 5", "background[0].at_s"),
            ("[[policies]]\ntype = \"pause_when_hot\"\nabove_c = 40\nresume_c = 45", "policies[0].resume_c"),
            ("[session]\nrepeat = 0", "session.repeat"),
            ("routing = { mode = \"sampled\", correlation = 2.0 }", "routing.correlation"),
            (
                "[thermal.spec]\nambient_c = 25\nleakage_per_c = 0\nnodes = [{ name = \"die\", capacitance_j_per_k = 1, resistance_k_per_w = 0 }]\ngovernor = { freq_steps = [1.0], volt_steps = [1.0], trip_c = [], hysteresis_c = 1, skin_limit_c = 45, poll_s = 0.1 }",
                "thermal.spec.nodes[0].resistance_k_per_w",
            ),
        ];
        for (text, field) in cases {
            let c: SimConfig = from_toml(text, "sim").unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
        // Unknown policy and unknown weight format fail at parse time, naming them.
        let e = from_toml::<SimConfig>("[[policies]]\ntype = \"reboot\"", "sim").unwrap_err().to_string();
        assert!(e.contains("reboot"), "{e}");
        let e = from_toml::<SimConfig>("[[policies]]\ntype = \"switch_quant\"\nto = { mix = \"Q9_Z\" }", "sim")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Q9_Z"), "{e}");
    }
}
