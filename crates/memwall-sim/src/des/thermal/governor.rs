//! The clock governor: it steps CPU and memory frequency down at trip points and back up
//! with hysteresis, goes one level deeper per poll while the skin is above its limit (or
//! follows the skin's proportional-integral controller), and injects idle time when even
//! the deepest level cannot hold the die.

use memwall_spec::{GovernorSpec, ThermalStatus};

/// The controller that sets the level in force: the deepest of their asks wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleCause {
    /// The die's trip points (or, at the deepest level, idle injection on the die).
    Die,
    /// The skin limit: its trip rule or its proportional-integral controller.
    Skin,
    /// The operating system's thermal status: from CRITICAL on it holds the deepest level.
    OsStatus,
    /// The power-budget controller ([`memwall_spec::PowerBudgetSpec`]).
    PowerBudget,
    /// The package power limit ([`memwall_spec::PowerLimitSpec`]).
    PowerLimit,
}

impl ThrottleCause {
    /// Name as written in traces (`die`, `skin`, `os_status`, `power_budget`, `power_limit`).
    pub fn name(self) -> &'static str {
        match self {
            ThrottleCause::Die => "die",
            ThrottleCause::Skin => "skin",
            ThrottleCause::OsStatus => "os_status",
            ThrottleCause::PowerBudget => "power_budget",
            ThrottleCause::PowerLimit => "power_limit",
        }
    }
}

/// The DVFS governor's state: the current level, the idle-injection duty cycle, and the
/// rules to move between them.
///
/// Idle injection is the last resort once the deepest DVFS level cannot hold the die below
/// its critical temperature (a big CPU cluster on a small passive network): as Linux's
/// idle-injection cooling device (`drivers/thermal/cpuidle_cooling.c`) and Intel's
/// powerclamp do, the governor forces the unit idle for a share of each period, so work runs
/// `duty` of the time at the deepest level's clock and its dynamic power falls with it.
#[derive(Debug, Clone)]
pub struct Governor {
    spec: GovernorSpec,
    level: usize,
    duty: f64,
    /// The level the die's trip points ask for.
    die_level: usize,
    /// The skin controller's integral term, levels.
    skin_integral: f64,
    /// The OS's thermal status ([`GovernorSpec::status_at`]).
    status: ThermalStatus,
    /// The controller whose ask the level in force is.
    cause: ThrottleCause,
    /// The power-budget controller's integral `∫ e dt`, K·s.
    budget_integral: f64,
    /// The budget it granted at the last poll, W (infinite below its switch-on temperature).
    budget_w: f64,
    /// The package power limit's running average of package power, W.
    package_avg_w: f64,
    /// The package's static power at the last observation, W.
    static_w: f64,
}

impl Governor {
    /// Factor on the duty cycle per poll with the die above the critical temperature at the
    /// deepest level (and its inverse per poll below it minus the hysteresis).
    /// Assumed: a multiplicative controller that halves the duty in about three polls.
    pub const IDLE_STEP: f64 = 0.8;
    /// Lowest duty cycle idle injection reaches (Linux caps forced idle near 95 %).
    pub const MIN_DUTY: f64 = 0.05;

    /// A governor at level 0 (unthrottled). The spec should be validated
    /// ([`memwall_spec::ThermalSpec::validate`]).
    pub fn new(spec: &GovernorSpec) -> Self {
        Governor {
            spec: spec.clone(),
            level: 0,
            duty: 1.0,
            die_level: 0,
            skin_integral: 0.0,
            status: ThermalStatus::None,
            cause: ThrottleCause::Die,
            budget_integral: 0.0,
            budget_w: f64::INFINITY,
            package_avg_w: 0.0,
            static_w: 0.0,
        }
    }

    /// Start the package power limit's running average at `package_w` (the package idling
    /// at its static power before the run), its static power being `static_w`.
    pub fn start_average(&mut self, package_w: f64, static_w: f64) {
        self.package_avg_w = package_w;
        self.static_w = static_w;
    }

    /// Tell the package power limit that the package drew `package_w` (its units' dynamic and
    /// static power) on average over the last `dt_s` seconds, its static power now being
    /// `static_w`: the running average moves as [`memwall_spec::PowerLimitSpec::average_after`].
    pub fn observe(&mut self, dt_s: f64, package_w: f64, static_w: f64) {
        if let Some(l) = self.spec.power_limit {
            self.package_avg_w = l.average_after(self.package_avg_w, package_w, dt_s);
        }
        self.static_w = static_w;
    }

    /// The package power limit's running average, W (0 without one).
    pub fn package_avg_w(&self) -> f64 {
        self.package_avg_w
    }

    /// The package power limit's ask for a unit drawing `unit_w` at full clock: the
    /// shallowest level whose `unit_w × f × V²` plus the static power fits the limit in force
    /// ([`memwall_spec::PowerLimitSpec::limit_w`]), the deepest when none does; level 0 without
    /// a limit.
    fn limit_level(&self, unit_w: f64) -> usize {
        let Some(l) = self.spec.power_limit else { return 0 };
        let limit = l.limit_w(self.package_avg_w);
        let g = &self.spec;
        let power =
            |i: usize| memwall_spec::class::dynamic_power_w(unit_w, g.freq_steps[i], g.volt_steps[i]) + self.static_w;
        (0..g.freq_steps.len()).find(|&i| power(i) <= limit).unwrap_or(g.freq_steps.len() - 1)
    }

    /// The power budget granted at the last poll, W (infinite when none applies).
    pub fn budget_w(&self) -> f64 {
        self.budget_w
    }

    /// The power-budget controller's ask at sensor temperature `t_c` for a unit drawing
    /// `unit_w` at full clock: the budget `P` ([`memwall_spec::PowerBudgetSpec`]) and the
    /// shallowest level whose `unit_w × f × V²` fits it (the deepest when none does); level 0
    /// and an infinite budget below the switch-on temperature.
    fn budget_level(&mut self, t_c: f64, unit_w: f64) -> usize {
        let Some(b) = self.spec.power_budget else { return 0 };
        if t_c < b.switch_on_c {
            self.budget_integral = 0.0;
            self.budget_w = f64::INFINITY;
            return 0;
        }
        let e = b.control_c - t_c;
        // The integral grows above the control temperature only, and only while its term stays
        // within the unit's full power (the kernel's anti-windup).
        let next = self.budget_integral + e * self.spec.poll_s;
        if e < 0.0 && (b.k_i_w_per_k_s * next).abs() < unit_w {
            self.budget_integral = next;
        }
        let (k_pu, k_po) = b.gains();
        let k_p = if e >= 0.0 { k_pu } else { k_po };
        self.budget_w = (b.sustainable_w + k_p * e + b.k_i_w_per_k_s * self.budget_integral).max(0.0);
        let g = &self.spec;
        let power = |i: usize| memwall_spec::class::dynamic_power_w(unit_w, g.freq_steps[i], g.volt_steps[i]);
        (0..g.freq_steps.len()).find(|&i| power(i) <= self.budget_w).unwrap_or(g.freq_steps.len() - 1)
    }

    /// The OS's thermal status after the last poll.
    pub fn status(&self) -> ThermalStatus {
        self.status
    }

    /// The controller whose ask set the level after the last poll (the die's while none
    /// throttles).
    pub fn cause(&self) -> ThrottleCause {
        self.cause
    }

    /// Share of time the unit may work (1 = no idle injection).
    pub fn duty(&self) -> f64 {
        self.duty
    }

    /// Current level, 0 = unthrottled.
    pub fn level(&self) -> usize {
        self.level
    }

    /// Number of levels.
    pub fn levels(&self) -> usize {
        self.spec.freq_steps.len()
    }

    /// CPU frequency at the current level as a fraction of the maximum (`freq_steps[level]`).
    pub fn freq_scale(&self) -> f64 {
        self.spec.freq_steps.get(self.level).copied().unwrap_or(1.0)
    }

    /// Supply voltage at the current level as a fraction of level 0's (`volt_steps[level]`).
    pub fn volt_scale(&self) -> f64 {
        self.spec.volt_steps.get(self.level).copied().unwrap_or(1.0)
    }

    /// Memory bandwidth at the current level as a fraction of the unthrottled one
    /// (`mem_steps[level]`, or 1.0 when `mem_steps` is empty).
    pub fn mem_scale(&self) -> f64 {
        self.spec.mem_steps.get(self.level).copied().unwrap_or(1.0)
    }

    /// Polling period, seconds.
    pub fn poll_s(&self) -> f64 {
        self.spec.poll_s
    }

    /// One poll at die temperature `die_c` and skin temperature `skin_c` (°C).
    ///
    /// The target is the number of trip points the die exceeds (`T > trip_c[i]`). Above the
    /// current level the governor goes to the target at once; otherwise, if throttled and
    /// `T < trip_c[level − 1] − hysteresis_c`, it steps up one level (toward 0).
    ///
    /// The skin, without `skin_integral_k_s`: if `skin_c > skin_limit_c`, the governor goes
    /// one level deeper than that (bounded by the last level) and never steps up in that poll.
    /// With it (`k`), a proportional-integral controller on the error `e = skin_c −
    /// skin_limit_c`: the integral `I += e × poll_s / k` (levels) is kept within the ladder
    /// `[0, L]` (no wind-up), and the skin asks for level `⌊K_p e + I⌋` within `[0, L]`
    /// (`K_p = skin_gain_levels_per_k`, 0 when absent). The level in force is the deeper of the
    /// die's and the skin's. Returns `Some((old, new))` when the level changed.
    ///
    /// At the deepest level, with the die above the critical temperature
    /// ([`GovernorSpec::critical_c`]), the duty cycle is multiplied by [`Self::IDLE_STEP`]
    /// (down to [`Self::MIN_DUTY`]); below it minus the hysteresis it is divided by it (up to
    /// 1). The level is left only by a poll that starts at full duty. [`Governor::duty`] tells
    /// the duty after a poll.
    ///
    /// First of all the OS's thermal status follows the skin ([`GovernorSpec::status_at`]);
    /// from CRITICAL on the level in force is the deepest ([`ThrottleCause::OsStatus`]). A
    /// power-budget controller asks for the level whose power fits its budget at its sensor's
    /// temperature, the unit drawing `unit_w` at full clock (`Governor::budget_level`), and a
    /// package power limit the level whose package power fits the limit in force
    /// (`Governor::limit_level`, from what [`Governor::observe`] was told).
    /// [`Governor::cause`] tells which controller set the level.
    pub fn poll(&mut self, die_c: f64, skin_c: f64, unit_w: f64) -> Option<(usize, usize)> {
        self.status = self.spec.status_at(skin_c, self.status);
        let sensor_c = match self.spec.power_budget.map(|b| b.sensor) {
            Some(memwall_spec::Sensor::Skin) => skin_c,
            _ => die_c,
        };
        let budget = self.budget_level(sensor_c, unit_w);
        let old = self.level;
        let trips = &self.spec.trip_c;
        if let Some(critical) = self.spec.critical_c()
            && old == trips.len()
        {
            let injecting = self.duty < 1.0;
            if die_c > critical {
                self.duty = (self.duty * Self::IDLE_STEP).max(Self::MIN_DUTY);
            } else if injecting && die_c < critical - self.spec.hysteresis_c {
                self.duty = (self.duty / Self::IDLE_STEP).min(1.0);
            }
            if injecting || self.duty < 1.0 {
                return None;
            }
        }
        let target = trips.iter().filter(|&&t| die_c > t).count();
        // The die's rule from `level`: down to the target at once, up one level once the die
        // is `hysteresis_c` below the trip point of the level it is at.
        let die_rule = |level: usize| {
            if target > level {
                target
            } else if level > 0 && die_c < trips[level - 1] - self.spec.hysteresis_c {
                level - 1
            } else {
                level
            }
        };
        let deepest = self.levels().saturating_sub(1);
        let (level, cause) = match self.spec.skin_integral_k_s {
            None => {
                let level = die_rule(old);
                if skin_c > self.spec.skin_limit_c {
                    ((level.max(old) + 1).min(deepest), ThrottleCause::Skin)
                } else if level > target {
                    // Deeper than the die asks: a level another controller put it at, which
                    // the die's rule leaves one step per poll.
                    (level, self.cause)
                } else {
                    (level, ThrottleCause::Die)
                }
            }
            Some(k) => {
                self.die_level = die_rule(self.die_level);
                let e = skin_c - self.spec.skin_limit_c;
                let top = deepest as f64;
                self.skin_integral = (self.skin_integral + e * self.spec.poll_s / k).clamp(0.0, top);
                let kp = self.spec.skin_gain_levels_per_k.unwrap_or(0.0);
                let skin_level = (kp * e + self.skin_integral).floor().clamp(0.0, top) as usize;
                if skin_level > self.die_level {
                    (skin_level, ThrottleCause::Skin)
                } else {
                    (self.die_level, ThrottleCause::Die)
                }
            }
        };
        let (level, cause) = if budget > level { (budget, ThrottleCause::PowerBudget) } else { (level, cause) };
        // A level the power limit held is handed back one step per poll, whichever rule the
        // temperatures follow (the average hovers at the limit: no jumps to level 0 and back).
        let (level, cause) = if self.cause == ThrottleCause::PowerLimit && level + 1 < old {
            (old - 1, self.cause)
        } else {
            (level, cause)
        };
        let limit = self.limit_level(unit_w);
        let (level, cause) = if limit > level { (limit, ThrottleCause::PowerLimit) } else { (level, cause) };
        (self.level, self.cause) = if self.status >= ThermalStatus::Critical && deepest > level {
            (deepest, ThrottleCause::OsStatus)
        } else {
            (level, cause)
        };
        (self.level != old).then_some((old, self.level))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::des::thermal::fixtures::{chain, governor_spec};
    use memwall_spec::{ThermalSpec, ThermalStatus};

    #[test]
    fn governor_trips_and_hysteresis() {
        let mut g = Governor::new(&governor_spec());
        assert_eq!((g.level(), g.levels(), g.poll_s()), (0, 4, 0.1));
        assert_eq!(g.poll(70.0, 30.0, 0.0), None);
        assert_eq!(g.poll(75.0, 30.0, 0.0), None, "trips are strict");
        assert_eq!(g.poll(76.0, 30.0, 0.0), Some((0, 1)));
        assert_eq!((g.freq_scale(), g.volt_scale(), g.mem_scale()), (0.8, 0.9, 0.85));
        assert_eq!(g.poll(96.0, 30.0, 0.0), Some((1, 3)), "deeper trips at once");
        assert_eq!(g.freq_scale(), 0.5);
        assert_eq!(g.poll(93.0, 30.0, 0.0), None, "within hysteresis of 95");
        assert_eq!(g.poll(90.0, 30.0, 0.0), None, "90 is not below 95 − 5");
        assert_eq!(g.poll(89.0, 30.0, 0.0), Some((3, 2)));
        assert_eq!(g.poll(60.0, 30.0, 0.0), Some((2, 1)), "one level up per poll");
        assert_eq!(g.poll(71.0, 30.0, 0.0), None, "71 is not below 75 − 5");
        assert_eq!(g.poll(69.9, 30.0, 0.0), Some((1, 0)));
        assert_eq!(g.poll(20.0, 30.0, 0.0), None);
        assert_eq!((g.freq_scale(), g.volt_scale(), g.mem_scale()), (1.0, 1.0, 1.0));
    }

    #[test]
    fn idle_injection_beyond_the_deepest_level() {
        let mut g = Governor::new(&governor_spec());
        assert_eq!(g.poll(101.0, 30.0, 0.0), Some((0, 3)));
        assert_eq!(g.duty(), 1.0, "the deepest level is tried first");
        assert_eq!(g.poll(99.0, 30.0, 0.0), None, "below the critical 100 °C the deepest level holds");
        assert_eq!(g.duty(), 1.0);
        // Above 100 °C at the deepest level: 0.8, 0.64, 0.512 …
        assert_eq!(g.poll(101.0, 30.0, 0.0), None);
        assert_eq!(g.duty(), 0.8);
        g.poll(102.0, 30.0, 0.0);
        assert!((g.duty() - 0.64).abs() < 1e-12);
        // Between 95 and 100 °C the duty holds; below 95 it recovers, and the level is left
        // only once the duty is back at 1.
        g.poll(97.0, 30.0, 0.0);
        assert!((g.duty() - 0.64).abs() < 1e-12);
        assert_eq!(g.poll(80.0, 30.0, 0.0), None);
        assert!((g.duty() - 0.8).abs() < 1e-12);
        assert_eq!(g.poll(80.0, 30.0, 0.0), None);
        assert_eq!((g.duty(), g.level()), (1.0, 3));
        assert_eq!(g.poll(80.0, 30.0, 0.0), Some((3, 2)));
        // Without an explicit critical temperature: the highest trip + 20 °C.
        let mut spec = governor_spec();
        spec.critical_c = None;
        assert_eq!(spec.critical_c(), Some(115.0));
        // The floor.
        let mut g = Governor::new(&governor_spec());
        for _ in 0..100 {
            g.poll(150.0, 30.0, 0.0);
        }
        assert_eq!(g.duty(), Governor::MIN_DUTY);
    }

    #[test]
    fn governor_skin_limit() {
        let mut g = Governor::new(&governor_spec());
        assert_eq!(g.poll(50.0, 43.0, 0.0), None, "the skin limit is strict");
        assert_eq!(g.poll(50.0, 44.0, 0.0), Some((0, 1)));
        assert_eq!(g.poll(50.0, 44.0, 0.0), Some((1, 2)));
        // The die alone would step up (50 < 85 − 5); the hot skin goes deeper instead.
        assert_eq!(g.poll(50.0, 44.0, 0.0), Some((2, 3)));
        assert_eq!(g.poll(50.0, 44.0, 0.0), None, "bounded by the last level");
        assert_eq!(g.poll(50.0, 40.0, 0.0), Some((3, 2)));
        // A die trip and a hot skin in the same poll: the trip's level plus one.
        let mut g = Governor::new(&governor_spec());
        assert_eq!(g.poll(80.0, 44.0, 0.0), Some((0, 2)));
        assert_eq!(g.poll(99.0, 44.0, 0.0), Some((2, 3)));
    }

    /// The skin controller by hand: k = 1 K·s per level, K_p = 0.5 level/K and 0.5 s polls,
    /// so each poll adds half the skin's excess over 43 °C to the integral I.
    #[test]
    fn governor_skin_controller_is_proportional_integral() {
        let mut spec = governor_spec();
        spec.poll_s = 0.5;
        spec.skin_integral_k_s = Some(1.0);
        spec.skin_gain_levels_per_k = Some(0.5);
        let mut g = Governor::new(&spec);
        assert_eq!(g.poll(50.0, 44.0, 0.0), Some((0, 1)), "e = 1: I = 0.5, u = 0.5 + 0.5 = 1");
        assert_eq!(g.poll(50.0, 47.0, 0.0), Some((1, 3)), "e = 4: I = 2.5, u = 4.5, bounded by the last level");
        assert_eq!(g.poll(50.0, 48.0, 0.0), None, "e = 5: I = 5 kept at 3");
        assert_eq!(g.poll(50.0, 41.0, 0.0), Some((3, 1)), "e = −2: I = 2, u = −1 + 2 = 1");
        assert_eq!(g.poll(50.0, 43.0, 0.0), Some((1, 2)), "at the limit the integral alone holds: u = 2");
        assert_eq!(g.poll(50.0, 35.0, 0.0), Some((2, 0)), "e = −8: I = −2 kept at 0");
        assert_eq!(g.poll(50.0, 43.5, 0.0), None, "I = 0.25, u = 0.5 (no wind-up below 0)");
        // The die asks for level 2 (86 > 85 °C); the deeper of die and skin is in force.
        assert_eq!(g.poll(86.0, 43.5, 0.0), Some((0, 2)), "I = 0.5, u = 0.75: the die's level 2");
        assert_eq!(g.poll(60.0, 43.5, 0.0), Some((2, 1)), "die cools a level; I = 0.75, u = 1: skin level 1");
        // A gain without an integral constant is refused, naming it.
        let mut bad = ThermalSpec { governor: governor_spec(), ..chain() };
        bad.governor.skin_gain_levels_per_k = Some(1.0);
        assert!(bad.validate().unwrap_err().to_string().contains("governor.skin_gain_levels_per_k"));
    }

    /// The OS's status by hand: thresholds 39, 43, 45, 47, 52, 55 °C (the Pixel 6's) with the
    /// fixture's 5 °C hysteresis; from CRITICAL (47 °C) the deepest level is held whatever the
    /// die and skin controllers ask, and the cause says so.
    #[test]
    fn os_status_follows_the_skin_and_holds_the_floor_from_critical() {
        let mut spec = governor_spec();
        spec.skin_limit_c = 45.0;
        spec.status_skin_c = vec![39.0, 43.0, 45.0, 47.0, 52.0, 55.0];
        let mut g = Governor::new(&spec);
        assert_eq!(g.poll(50.0, 38.9, 0.0), None);
        assert_eq!(g.status(), ThermalStatus::None);
        g.poll(50.0, 39.0, 0.0);
        assert_eq!(g.status(), ThermalStatus::Light, "thresholds are reached at equality");
        g.poll(50.0, 44.0, 0.0);
        assert_eq!(g.status(), ThermalStatus::Moderate);
        assert_eq!((g.level(), g.cause()), (0, ThrottleCause::Die), "44 °C: below the 45 °C skin limit");
        // 47 °C: CRITICAL; the skin's trip rule asks for level 1, the OS holds level 3.
        assert_eq!(g.poll(50.0, 47.0, 0.0), Some((0, 3)));
        assert_eq!((g.status(), g.cause()), (ThermalStatus::Critical, ThrottleCause::OsStatus));
        // 43 °C is within the 5 °C hysteresis of 47: still CRITICAL, still the floor.
        assert_eq!(g.poll(50.0, 43.0, 0.0), None);
        assert_eq!(g.status(), ThermalStatus::Critical);
        // 41.9 °C is 5.1 below 47 but within 5 of 45: SEVERE; off the floor, the die's rule
        // (the skin below its limit) leaves the OS's level one step per poll.
        assert_eq!(g.poll(50.0, 41.9, 0.0), Some((3, 2)));
        assert_eq!((g.status(), g.cause()), (ThermalStatus::Severe, ThrottleCause::OsStatus));
        // 39.9 °C: 5.1 below 45, within 5 of 43: MODERATE.
        assert_eq!(g.poll(50.0, 39.9, 0.0), Some((2, 1)));
        assert_eq!(g.status(), ThermalStatus::Moderate);
        // 56 °C: SHUTDOWN at once, from any status.
        g.poll(50.0, 56.0, 0.0);
        assert_eq!(g.status(), ThermalStatus::Shutdown);
        assert_eq!(spec.shutdown_skin_c(), Some(55.0));
        // NaN leaves a status unreached: a shutdown alone, as the HAL writes it.
        let mut only = spec.clone();
        only.status_skin_c = vec![f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, 55.0];
        let mut g = Governor::new(&only);
        g.poll(50.0, 54.0, 0.0);
        // No status below 55 °C, so no floor: the skin's trip rule alone (one level per poll).
        assert_eq!((g.status(), g.level(), g.cause()), (ThermalStatus::None, 1, ThrottleCause::Skin));
        g.poll(50.0, 55.0, 0.0);
        assert_eq!((g.status(), only.shutdown_skin_c()), (ThermalStatus::Shutdown, Some(55.0)));
        // Within the hysteresis of 55 °C it stays; below, the unreached statuses are skipped.
        g.poll(50.0, 52.0, 0.0);
        assert_eq!(g.status(), ThermalStatus::Shutdown);
        g.poll(50.0, 49.0, 0.0);
        assert_eq!(g.status(), ThermalStatus::None);
        assert!(ThermalSpec { governor: only, ..chain() }.validate().is_ok());
        // Without thresholds the status never leaves NONE.
        let mut g = Governor::new(&governor_spec());
        g.poll(50.0, 80.0, 0.0);
        assert_eq!((g.status(), governor_spec().shutdown_skin_c()), (ThermalStatus::None, None));
    }

    /// A package limit of 11 W sustained, 20 W burst, tau 10 s; a unit of 16 W at full clock
    /// beside 2 W of static power draws 16 f V² + 2 per level: 18, 16 × 0.648 + 2 = 12.368,
    /// 16 × 0.43706 + 2 = 8.993, 16 × 0.28125 + 2 = 6.5 W (without the static power level 1,
    /// 10.368 W, would fit 11 W). The package idles at its 2 W before the run; at 18 W its
    /// average is 18 − 16 e^{−t/10}: 10.810 W after 8 s (still the burst limit) and
    /// 18 − 7.189 e^{−0.02} = 10.953 W 0.2 s later, 11.023 W after 0.1 s more (the sustained
    /// limit: level 2, the shallowest under 11 W). It bites at −10 ln((18 − 11) / 16) = 8.27 s.
    #[test]
    fn power_limit_allows_the_burst_until_the_average_reaches_the_sustained_limit() {
        let mut spec = governor_spec();
        let limit = memwall_spec::PowerLimitSpec { sustained_w: 11.0, burst_w: 20.0, tau_s: 10.0 };
        spec.power_limit = Some(limit);
        let mut g = Governor::new(&spec);
        g.start_average(2.0, 2.0);
        assert_eq!(g.poll(50.0, 30.0, 16.0), None, "18 W fits the 20 W burst limit");
        g.observe(8.0, 18.0, 2.0);
        assert!((g.package_avg_w() - (18.0 - 16.0 * (-0.8f64).exp())).abs() < 1e-12);
        assert!((g.package_avg_w() - 10.810).abs() < 1e-3, "{}", g.package_avg_w());
        assert_eq!(g.poll(50.0, 30.0, 16.0), None, "the average is under 11 W");
        g.observe(0.2, 18.0, 2.0);
        assert!((g.package_avg_w() - 10.953).abs() < 1e-3, "{}", g.package_avg_w());
        assert_eq!(g.poll(50.0, 30.0, 16.0), None);
        g.observe(0.1, 18.0, 2.0);
        assert!((g.package_avg_w() - 11.023).abs() < 1e-3, "{}", g.package_avg_w());
        assert_eq!(g.poll(50.0, 30.0, 16.0), Some((0, 2)));
        assert_eq!(g.cause(), ThrottleCause::PowerLimit);
        // At level 2 the package draws 8.993 W; the average falls under 11 W again after
        // 10 ln((11.023 − 8.993) / (11 − 8.993)) = 0.114 s, and the burst limit is back: the
        // level is handed back one step per poll.
        g.observe(0.05, 8.993, 2.0);
        assert_eq!(g.poll(50.0, 30.0, 16.0), None, "still over 11 W on average");
        g.observe(0.1, 8.993, 2.0);
        assert!(g.package_avg_w() < 11.0);
        assert_eq!(g.poll(50.0, 30.0, 16.0), Some((2, 1)));
        assert_eq!(g.poll(50.0, 30.0, 16.0), Some((1, 0)));
        // So it is under the skin's proportional-integral rule, whose level would jump.
        let mut pi = spec.clone();
        pi.skin_integral_k_s = Some(100.0);
        let mut g = Governor::new(&pi);
        g.start_average(11.5, 2.0);
        assert_eq!(g.poll(50.0, 30.0, 16.0), Some((0, 2)));
        g.observe(10.0, 6.5, 2.0);
        assert_eq!(g.poll(50.0, 30.0, 16.0), Some((2, 1)));
        assert_eq!(g.cause(), ThrottleCause::PowerLimit);
        // A limit whose burst is under its sustained figure is refused by field.
        let mut bad = crate::des::thermal::fixtures::chain();
        bad.governor.power_limit = Some(memwall_spec::PowerLimitSpec { sustained_w: 10.0, burst_w: 5.0, tau_s: 10.0 });
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("governor.power_limit.burst_w") && e.contains('5'), "{e}");
    }

    /// The power budget by hand (Linux's power_allocator): sustainable 2 W, switch-on 60 °C,
    /// control 70 °C, so the default gains are k_pu = 2 × 2 / 10 = 0.4 W/K and k_po = 0.2 W/K;
    /// k_i = 0.1 W/(K·s) at the fixture's 0.1 s poll. A unit of 5 W at full clock draws
    /// 5 × f × V² per level: 5, 5 × 0.8 × 0.81 = 3.24, 5 × 0.65 × 0.6724 = 2.1853,
    /// 5 × 0.5 × 0.5625 = 1.40625 W. The die's trips (75, 85, 95 °C) and the skin stay out of
    /// the way.
    #[test]
    fn power_budget_holds_the_level_whose_power_fits() {
        let mut spec = governor_spec();
        spec.power_budget = Some(memwall_spec::PowerBudgetSpec {
            sensor: memwall_spec::Sensor::Die,
            switch_on_c: 60.0,
            control_c: 70.0,
            sustainable_w: 2.0,
            k_pu_w_per_k: None,
            k_po_w_per_k: None,
            k_i_w_per_k_s: 0.1,
        });
        assert_eq!(spec.power_budget.unwrap().gains(), (0.4, 0.2));
        let mut g = Governor::new(&spec);
        assert_eq!(g.poll(59.9, 30.0, 5.0), None, "below switch-on: no budget");
        assert_eq!(g.budget_w(), f64::INFINITY);
        // 65 °C: e = 5, P = 2 + 0.4 × 5 = 4 W: level 1 (3.24 W) is the shallowest that fits.
        assert_eq!(g.poll(65.0, 30.0, 5.0), Some((0, 1)));
        assert!((g.budget_w() - 4.0).abs() < 1e-12);
        assert_eq!(g.cause(), ThrottleCause::PowerBudget);
        // 69 °C: P = 2.4 W: level 2 (2.19 W).
        assert_eq!(g.poll(69.0, 30.0, 5.0), Some((1, 2)));
        // 72 °C: e = −2, I = −0.2 K·s, P = 2 − 0.4 − 0.02 = 1.58 W: level 3 (1.41 W).
        assert_eq!(g.poll(72.0, 30.0, 5.0), Some((2, 3)));
        assert!((g.budget_w() - 1.58).abs() < 1e-12, "{}", g.budget_w());
        // 80 °C: e = −10, I = −1.2, P = 2 − 2 − 0.12 < 0 → 0 W: nothing fits, the deepest
        // level (the die's first trip, 75 °C, asks for level 1 only).
        assert_eq!(g.poll(80.0, 30.0, 5.0), None);
        assert_eq!((g.budget_w(), g.level(), g.cause()), (0.0, 3, ThrottleCause::PowerBudget));
        // 65 °C again: P = 4 W (the integral only grows above the control temperature and
        // still holds −1.2 K·s: 4 − 0.12 = 3.88 W) asks for level 1, but the die's rule leaves
        // the budget's level one step per poll: level 2, then 1, the budget's still.
        assert_eq!(g.poll(65.0, 30.0, 5.0), Some((3, 2)));
        assert!((g.budget_w() - 3.88).abs() < 1e-12, "{}", g.budget_w());
        assert_eq!(g.cause(), ThrottleCause::PowerBudget);
        assert_eq!(g.poll(65.0, 30.0, 5.0), Some((2, 1)));
        // The die's rule would now leave level 1 (65 < 75 − 5); the budget holds it.
        assert_eq!(g.poll(65.0, 30.0, 5.0), None);
        assert_eq!((g.level(), g.cause()), (1, ThrottleCause::PowerBudget));
        // A unit drawing 3 W at full clock fits 3.88 W unthrottled; below switch-on the
        // integral is forgotten.
        assert_eq!(g.poll(65.0, 30.0, 3.0), Some((1, 0)));
        g.poll(50.0, 30.0, 3.0);
        assert_eq!(g.poll(65.0, 30.0, 5.0), Some((0, 1)));
        assert!((g.budget_w() - 4.0).abs() < 1e-12);
        // On the skin sensor the die's temperature does not count.
        let mut skin = spec.clone();
        skin.power_budget.as_mut().unwrap().sensor = memwall_spec::Sensor::Skin;
        let mut g = Governor::new(&skin);
        assert_eq!(g.poll(65.0, 40.0, 5.0), None);
        assert_eq!(g.poll(50.0, 65.0, 5.0), Some((0, 1)));
        // A control temperature at or below switch-on is refused, naming it.
        let mut bad = ThermalSpec { governor: spec, ..chain() };
        bad.governor.power_budget.as_mut().unwrap().control_c = 60.0;
        assert!(bad.validate().unwrap_err().to_string().contains("governor.power_budget.control_c"));
    }

    #[test]
    fn governor_without_mem_steps() {
        let mut spec = governor_spec();
        spec.mem_steps.clear();
        let mut g = Governor::new(&spec);
        assert_eq!(g.poll(100.0, 30.0, 0.0), Some((0, 3)));
        assert_eq!(g.mem_scale(), 1.0);
        assert_eq!(g.freq_scale(), 0.5);
    }
}
