//! Thermal: the device's RC network ([`ThermalModel`], in `network.rs`, with the power laws
//! that feed it), its clock governor ([`Governor`], in `governor.rs`), and here the run's
//! thermal state (`Heat`): the network chosen for the scenario (its own, the device's, or the
//! class network of its kind and cooling), its governor, and the time up to which
//! temperatures have been integrated.

mod governor;
mod network;

pub use governor::{Governor, ThrottleCause};
pub use network::{LEAKAGE_REF_C, ThermalModel, dynamic_power_w, static_power_w};

use memwall_spec::{Scenario, ThermalSpec};

use super::queue::{Nanos, to_s};
use crate::SimError;

/// Where a network the device does not state comes from, as errors name it.
const CLASS: &str = "class network";

/// Temperatures and governor of a run (none when `sim.thermal` is off).
#[derive(Debug)]
pub(crate) struct Heat {
    net: Option<(ThermalModel, Governor)>,
    /// Time up to which temperatures are integrated.
    last: Nanos,
    ambient_c: f64,
}

impl Heat {
    /// The network of `s`: `sim.thermal.spec`, else the device's `[thermal]`, else the class
    /// network of its kind and cooling ([`ThermalSpec::for_class`]); refused when the
    /// device's static power alone would run it away.
    pub fn new(s: &Scenario) -> Result<Self, SimError> {
        let cfg = &s.sim;
        if !cfg.thermal.enabled {
            return Ok(Heat { net: None, last: 0, ambient_c: 25.0 });
        }
        let (mut spec, origin): (ThermalSpec, &str) = match (&cfg.thermal.spec, &s.device.thermal) {
            (Some(t), _) => (t.clone(), "sim.thermal.spec"),
            (None, Some(t)) => (t.clone(), "device.thermal"),
            (None, None) => (ThermalSpec::for_class(s.device.kind, s.device.cooling), CLASS),
        };
        // The trips of the unit that runs the model.
        spec.governor = spec.governor.for_unit(s.workload.backend);
        let start = cfg.thermal.start_c.unwrap_or(spec.ambient_c);
        // Errors about the network's own fields get its path; `power.static_w` and
        // `thermal.start_c` already name theirs.
        let generic = origin == CLASS;
        let model = ThermalModel::new(&spec, s.device.power.static_w, start).map_err(|e| match e {
            // The generic network cannot describe a device whose static power runs it away.
            SimError::Spec(memwall_spec::SpecError::Invalid { field, reason, .. })
                if generic && field == "leakage_per_c" =>
            {
                SimError::Spec(memwall_spec::SpecError::invalid(
                    "power.static_w",
                    s.device.power.static_w,
                    format!(
                        "on the class network of its kind and cooling (the device has no [thermal] table) the \
                         static power alone runs the die away ({reason}): no governor can hold it, so that network \
                         does not describe this device; give the device its own [thermal] table, set \
                         sim.thermal.spec, or disable sim.thermal"
                    ),
                ))
            }
            SimError::Spec(memwall_spec::SpecError::Invalid { field, value, reason })
                if !field.starts_with("power.") && !field.starts_with("thermal.") =>
            {
                SimError::Spec(memwall_spec::SpecError::Invalid { field, value, reason }.within(origin))
            }
            other => other,
        })?;
        check_holds_idle(&model, &spec, origin, s.device.power.static_w)?;
        if let Some(stop) = cfg.thermal.stop_at_status {
            let reachable = spec.governor.status_skin_c.len();
            if stop == memwall_spec::ThermalStatus::None || stop.index() > reachable {
                return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                    "sim.thermal.stop_at_status",
                    stop,
                    match (stop, reachable) {
                        (memwall_spec::ThermalStatus::None, _) => {
                            "the status is `none` before anything heats, so the run would end at once; name a \
                             status from light up"
                                .to_string()
                        }
                        (_, 0) => format!(
                            "the network ({origin}) states no OS thresholds (governor.status_skin_c), so no \
                             status is ever reported; give its governor status_skin_c"
                        ),
                        _ => format!(
                            "the network ({origin}) reports statuses up to {} (governor.status_skin_c), so this \
                             stop would never act",
                            memwall_spec::ThermalStatus::from_index(reachable)
                        ),
                    },
                )));
            }
        }
        let idle_w = model.static_now_w();
        if let Some(l) = spec.governor.power_limit
            && l.sustained_w <= idle_w
        {
            return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                format!("{origin}.governor.power_limit.sustained_w"),
                l.sustained_w,
                format!(
                    "the package's static power alone draws {idle_w:.3} W at the start, so the limit would hold \
                     the deepest level for the whole run; state the package limit its maker sets"
                ),
            )));
        }
        let ambient_c = model.ambient_c();
        let mut governor = Governor::new(&spec.governor);
        // The package idles at its static power before the run.
        governor.start_average(idle_w, idle_w);
        Ok(Heat { net: Some((model, governor)), last: 0, ambient_c })
    }

    /// Die temperature, °C (ambient without a network).
    pub fn die_c(&self) -> f64 {
        self.net.as_ref().map_or(self.ambient_c, |t| t.0.die_c())
    }

    /// Skin temperature, °C (ambient without a network).
    pub fn skin_c(&self) -> f64 {
        self.net.as_ref().map_or(self.ambient_c, |t| t.0.skin_c())
    }

    /// The governor's level (0 without one).
    pub fn level(&self) -> usize {
        self.net.as_ref().map_or(0, |t| t.1.level())
    }

    /// The OS's thermal status (NONE without a network).
    pub fn status(&self) -> memwall_spec::ThermalStatus {
        self.net.as_ref().map_or(memwall_spec::ThermalStatus::None, |(_, g)| g.status())
    }

    /// The controller whose ask the governor's level is (the die's without one).
    pub fn cause(&self) -> ThrottleCause {
        self.net.as_ref().map_or(ThrottleCause::Die, |(_, g)| g.cause())
    }

    /// Whether a network is simulated.
    pub fn enabled(&self) -> bool {
        self.net.is_some()
    }

    /// Seconds between governor polls (None without a governor).
    pub fn poll_s(&self) -> Option<f64> {
        self.net.as_ref().map(|(_, g)| g.poll_s())
    }

    /// Let the governor read the temperatures, the unit drawing `unit_w` at full clock (for a
    /// power budget): the level change `(from, to)`, if any.
    pub fn poll(&mut self, unit_w: f64) -> Option<(usize, usize)> {
        let (th, g) = self.net.as_mut()?;
        g.poll(th.die_c(), th.skin_c(), unit_w)
    }

    /// The governor's frequency, voltage and memory-bandwidth scales and duty cycle (all 1
    /// without one).
    pub fn scales(&self) -> (f64, f64, f64, f64) {
        self.net
            .as_ref()
            .map_or((1.0, 1.0, 1.0, 1.0), |(_, g)| (g.freq_scale(), g.volt_scale(), g.mem_scale(), g.duty()))
    }

    /// Integrate the network up to `t` under `dynamic_w` and `dram_w`: the energy of the
    /// interval, J, and its length, s; None when `t` is not later than the last integration
    /// or there is no network.
    pub fn advance(&mut self, t: Nanos, dynamic_w: f64, dram_w: f64) -> Option<(f64, f64)> {
        if t <= self.last {
            return None;
        }
        let dt = to_s(t - self.last);
        self.last = t;
        let (th, g) = self.net.as_mut()?;
        let energy_j = th.advance(dt, dynamic_w, dram_w);
        // The package's mean power over the interval: all of it but the DRAM's.
        g.observe(dt, energy_j / dt - dram_w, th.static_now_w());
        Some((energy_j, dt))
    }
}

/// Refuse a network on which the device's static power alone settles the die above its
/// critical temperature: no governor (DVFS or idle injection) can hold such a die, so the
/// temperatures and the throttling it would report describe another device (typically the
/// generic phone network applied to a laptop or a module with watts of static power).
fn check_holds_idle(model: &ThermalModel, spec: &ThermalSpec, origin: &str, static_w: f64) -> Result<(), SimError> {
    let Some(critical) = spec.governor.critical_c() else { return Ok(()) };
    let idle_c = model.steady_state_c(0.0, 0.0)[0];
    if idle_c.is_finite() && idle_c <= critical {
        return Ok(());
    }
    let network = match origin {
        "sim.thermal.spec" => "the network of sim.thermal.spec",
        "device.thermal" => "the device's own network",
        _ => "the class network of its kind and cooling (the device has no [thermal] table)",
    };
    Err(SimError::Spec(memwall_spec::SpecError::invalid(
        "power.static_w",
        static_w,
        format!(
            "on {network} the static power alone settles the die at {idle_c:.0} °C, above its critical \
             temperature ({critical} °C): no governor can hold it, so that network does not describe this device; give \
             the device its own [thermal] table, set sim.thermal.spec, or disable sim.thermal"
        ),
    )))
}

/// Networks and governors the tests of both work by hand.
#[cfg(test)]
mod fixtures {
    use memwall_spec::{GovernorSpec, ThermalNode, ThermalSpec};

    /// A fixed three-node chain for hand calculations: die 2 J/K, board 12 J/K, skin 60 J/K;
    /// 2 + 4 + 12 K/W; four levels tripping at 75, 85 and 95 °C.
    pub fn chain() -> ThermalSpec {
        ThermalSpec {
            ambient_c: 25.0,
            nodes: vec![
                ThermalNode { name: "die".into(), capacitance_j_per_k: 2.0, resistance_k_per_w: 2.0 },
                ThermalNode { name: "board".into(), capacitance_j_per_k: 12.0, resistance_k_per_w: 4.0 },
                ThermalNode { name: "skin".into(), capacitance_j_per_k: 60.0, resistance_k_per_w: 12.0 },
            ],
            leakage_per_c: 0.01,
            dram_heat_in_die: 0.5,
            governor: governor_spec(),
            source: "test chain".into(),
        }
    }

    pub fn governor_spec() -> GovernorSpec {
        GovernorSpec {
            freq_steps: vec![1.0, 0.8, 0.65, 0.5],
            volt_steps: vec![1.0, 0.9, 0.82, 0.75],
            mem_steps: vec![1.0, 0.85, 0.7, 0.55],
            trip_c: vec![75.0, 85.0, 95.0],
            hysteresis_c: 5.0,
            skin_limit_c: 43.0,
            skin_integral_k_s: None,
            skin_gain_levels_per_k: None,
            poll_s: 0.1,
            critical_c: Some(100.0),
            status_skin_c: Vec::new(),
            unit_trip_offset_c: Default::default(),
            power_budget: None,
            power_limit: None,
            mem_steps_accelerators_only: false,
        }
    }
}
