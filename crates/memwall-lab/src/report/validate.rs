//! Validation reports: published rows predicted by leave-one-device-out fits (`memwall
//! validate --devices`, `memwall.validate()`), and memwall's engine run on this machine
//! against a host profile (`memwall validate --host`, `memwall.validate(host=...)`).

use std::path::Path;

use memwall_calib::hostfit::HostProfile;
use memwall_calib::hostval::{HOST_CONFIGS, HostRow, profile_of};
use memwall_calib::{Coverage, Summary};
use memwall_spec::SpecError;

use crate::error::Result;
use memwall_calib::published::{Validated, Validation, ValidationRow, parse_table, read_table, validate};

/// Errors of one group of rows, three ways: cross-validated, the naive roofline, in sample.
#[derive(Debug, Clone)]
pub struct GroupErrors {
    /// Leave-one-device-out predictions.
    pub cross_validated: Summary,
    /// Peak bandwidth ÷ bytes per token.
    pub roofline: Summary,
    /// The fit on every row, the device included (optimistic; shown for contrast only).
    pub in_sample: Summary,
    /// How often the 80 % interval of `measured ÷ predicted` formed from the group's other
    /// devices covers a row ([`memwall_calib::interval_coverage`]).
    pub coverage: Coverage,
    /// Each SoC left out and predicted from its spec sheet with its family's figures
    /// computed without it (decode rows; prefill rows repeat the leave-one-device-out figure).
    pub sheet: Summary,
    /// Coverage of the 80 % interval formed from the other SoCs' spec-sheet residuals.
    pub sheet_coverage: Coverage,
    /// Each CPU family left out whole, from the spec sheet.
    pub family: Summary,
    /// Coverage of the 80 % interval formed from the other families' residuals.
    pub family_coverage: Coverage,
    /// Each engine left out: its rows predicted by the generic engine fitted on the other
    /// engines' rows (decode rows; prefill rows repeat the leave-one-device-out figure).
    pub engine: Summary,
    /// Coverage of the 80 % interval formed from the other engines' residuals.
    pub engine_coverage: Coverage,
}

/// The errors of one phase's rows by device class, by CPU family, by unit and by engine and
/// unit (each list starts with `all`).
#[derive(Debug, Clone)]
pub struct PhaseErrors {
    /// Errors by device class.
    pub by_class: Vec<GroupErrors>,
    /// Errors by CPU family (`apple-mac`, `android-phone`, …: what leave-one-family-out holds
    /// out, [`memwall_spec::class::CpuFamily`]).
    pub by_family: Vec<GroupErrors>,
    /// Errors by unit (`cpu`, `gpu`, `npu`).
    pub by_unit: Vec<GroupErrors>,
    /// Errors by `engine/unit`.
    pub by_engine: Vec<GroupErrors>,
}

impl PhaseErrors {
    /// The errors of `rows` (one phase's), four ways each.
    fn of(rows: &[Validated]) -> Self {
        let pick = |f: fn(&Validated) -> f64| rows.iter().map(f).collect::<Vec<f64>>();
        let (measured, predicted) = (pick(|r| r.measured_tok_s), pick(|r| r.predicted_tok_s));
        let (in_sample, roofline) = (pick(|r| r.in_sample_tok_s), pick(|r| r.roofline_tok_s));
        let (sheet, family) = (pick(|r| r.sheet_tok_s), pick(|r| r.family_tok_s));
        let engine_out = pick(|r| r.engine_tok_s);
        let engines: Vec<String> = rows.iter().map(|r| format!("{}/{}", r.engine, r.backend)).collect();
        let device: Vec<String> = rows.iter().map(|r| r.unit_device.clone()).collect();
        let soc: Vec<String> = rows.iter().map(|r| r.device.clone()).collect();
        let fam: Vec<String> = rows.iter().map(|r| r.family.clone()).collect();
        let groups = |key: Vec<String>| -> Vec<GroupErrors> {
            let cv = memwall_calib::summarize(&predicted, &measured, &key);
            let roof = memwall_calib::summarize(&roofline, &measured, &key);
            let ins = memwall_calib::summarize(&in_sample, &measured, &key);
            let cov = memwall_calib::interval_coverage(&predicted, &measured, &device, &key);
            let sh = memwall_calib::summarize(&sheet, &measured, &key);
            let sh_cov = memwall_calib::interval_coverage(&sheet, &measured, &soc, &key);
            let fa = memwall_calib::summarize(&family, &measured, &key);
            let fa_cov = memwall_calib::interval_coverage(&family, &measured, &fam, &key);
            let en = memwall_calib::summarize(&engine_out, &measured, &key);
            let en_cov = memwall_calib::interval_coverage(&engine_out, &measured, &engines, &key);
            cv.into_iter()
                .zip(roof)
                .zip(ins)
                .zip(cov)
                .zip(sh.into_iter().zip(sh_cov))
                .zip(fa.into_iter().zip(fa_cov))
                .zip(en.into_iter().zip(en_cov))
                .map(
                    |(
                        (((((c, r), i), coverage), (sheet, sheet_coverage)), (family, family_coverage)),
                        (engine, engine_coverage),
                    )| GroupErrors {
                        cross_validated: c,
                        roofline: r,
                        in_sample: i,
                        coverage,
                        sheet,
                        sheet_coverage,
                        family,
                        family_coverage,
                        engine,
                        engine_coverage,
                    },
                )
                .collect()
        };
        PhaseErrors {
            by_class: groups(rows.iter().map(|r| r.class.clone()).collect()),
            by_family: groups(fam.clone()),
            by_unit: groups(rows.iter().map(|r| r.backend.clone()).collect()),
            by_engine: groups(rows.iter().map(|r| format!("{}/{}", r.engine, r.backend)).collect()),
        }
    }
}

/// A device validation: the rows, the rows set aside, and the errors of decode and of
/// prefill rows.
#[derive(Debug, Clone)]
pub struct DeviceValidation {
    /// The cross-validated rows, the rows set aside and the fits.
    pub validation: Validation,
    /// Errors of the decode rows.
    pub decode: PhaseErrors,
    /// Errors of the prefill rows, where any row has a usable prefill rate.
    pub prefill: Option<PhaseErrors>,
    /// Distinct physical devices among the rows.
    pub devices: usize,
}

impl DeviceValidation {
    /// Every report row: the decode rows, then the prefill rows (the `phase` column tells them
    /// apart).
    pub fn report_rows(&self) -> Vec<Validated> {
        let v = &self.validation;
        let mut rows = v.validated.clone();
        rows.extend(v.prefill.iter().flat_map(|p| p.validated.iter().cloned()));
        rows
    }
}

/// The published rows memwall ships (`datasets/validation_decode.csv`), or those of `table`.
pub fn published_rows(table: Option<&Path>) -> Result<Vec<ValidationRow>> {
    Ok(match table {
        Some(p) => read_table(p)?,
        None => parse_table(crate::presets::VALIDATION_DECODE_CSV, "validation_decode.csv")?,
    })
}

/// Validate memwall's decode and prefill predictions against published rows (those of
/// `table`, or the shipped ones): every engine is fitted, then refitted once per device left
/// out (prefill rows: on the decode figures of the same fold). `outputs` (flag, path) are
/// checked against the table before the fits.
pub fn validate_devices(table: Option<&Path>, outputs: &[(&str, &Path)]) -> Result<DeviceValidation> {
    let rows = published_rows(table)?;
    let inputs: Vec<&Path> = table.into_iter().collect();
    crate::check_outputs(&inputs, outputs)?;
    let v = validate(&rows)?;
    let decode = PhaseErrors::of(&v.validated);
    let prefill = v.prefill.as_ref().map(|p| PhaseErrors::of(&p.validated));
    let devices = v.validated.iter().map(|r| r.unit_device.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    Ok(DeviceValidation { validation: v, decode, prefill, devices })
}

/// A host validation: each design run on this machine, measured against memwall's estimate
/// and simulation with the host profile.
#[derive(Debug, Clone)]
pub struct HostValidation {
    /// The host profile (device and engine) predicted with.
    pub profile: HostProfile,
    /// One row per design.
    pub rows: Vec<HostRow>,
    /// Median |estimated ÷ measured − 1|.
    pub median_abs_error: f64,
    /// Largest |estimated ÷ measured − 1|.
    pub max_abs_error: f64,
    /// Largest |simulated ÷ measured − 1|.
    pub sim_max_abs_error: f64,
    /// Median run-to-run noise of the measurements ([`HostRow::noise`]); NaN with one run a
    /// design.
    pub median_noise: f64,
    /// Median |estimated ÷ measured − 1| over the rows whose noise is under 3 % (`None` when
    /// no row is that quiet).
    pub quiet_median_abs_error: Option<f64>,
    /// How many rows have noise under 3 %.
    pub quiet_rows: usize,
}

impl HostValidation {
    /// The Parquet metadata of its report: memwall's, and the host profile as TOML.
    pub fn metadata(&self) -> Vec<(String, String)> {
        let mut meta = crate::metadata(None);
        meta.push(("host_profile".into(), toml::to_string(&self.profile.device).unwrap_or_default()));
        meta
    }
}

/// The engine profile written beside a host profile `host` (`<stem>.engine.toml`).
pub fn host_engine_path(host: &Path) -> std::path::PathBuf {
    crate::beside(host, ".engine.toml", "host")
}

/// Run memwall's engine on the host-validation designs whose id contains `only` (all when
/// None), `tokens` tokens each, and predict each with the profile at `host` and the engine
/// profile beside it. `outputs` (flag, path) are checked against those inputs before any work;
/// `on_row(row, seconds)` sees each design as it finishes.
pub fn validate_host(
    host: &Path,
    tokens: usize,
    repeats: usize,
    only: Option<&str>,
    outputs: &[(&str, &Path)],
    on_row: &mut dyn FnMut(&HostRow, f64),
) -> Result<HostValidation> {
    let engine_path = host_engine_path(host);
    crate::check_outputs(&[host, &engine_path], outputs)?;
    if tokens == 0 {
        return Err(SpecError::invalid("tokens", 0, "time at least one token").into());
    }
    if repeats == 0 {
        return Err(SpecError::invalid("repeats", 0, "time every design at least once").into());
    }
    let configs: Vec<_> = HOST_CONFIGS.iter().filter(|c| only.is_none_or(|o| c.id.contains(o))).cloned().collect();
    if configs.is_empty() {
        return Err(SpecError::invalid("only", only.unwrap_or_default(), "no design id contains it").into());
    }
    let device = crate::load_device(&host.display().to_string())?;
    let engine = crate::load_engine(&engine_path.display().to_string())?;
    let profile = profile_of(device, engine);
    let load = |name: &str| crate::load_model(name).map_err(|e| e.to_string());
    let rows = memwall_calib::hostval::validate_host(&profile, &configs, &load, tokens, repeats, on_row)?;
    // The errors of every row as one group: `summarize`'s first summary is `all`.
    let all = |f: fn(&HostRow) -> f64| {
        let predicted: Vec<f64> = rows.iter().map(f).collect();
        let measured: Vec<f64> = rows.iter().map(|r| r.measured_tok_s).collect();
        memwall_calib::summarize(&predicted, &measured, &vec![String::new(); rows.len()]).remove(0)
    };
    let (estimated, simulated) = (all(|r| r.estimated_tok_s), all(|r| r.simulated_tok_s));
    let noises: Vec<f64> = rows.iter().map(HostRow::noise).filter(|n| !n.is_nan()).collect();
    let quiet: Vec<f64> = rows.iter().filter(|r| r.noise() < 0.03).map(|r| r.error().abs()).collect();
    let (median, quiet_rows) = (crate::defaults::median, quiet.len());
    Ok(HostValidation {
        profile,
        median_noise: median(noises).unwrap_or(f64::NAN),
        quiet_median_abs_error: median(quiet),
        quiet_rows,
        median_abs_error: estimated.median,
        max_abs_error: estimated.max,
        sim_max_abs_error: simulated.max,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_validation_refuses_before_running_anything() {
        let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/hosts/xeon-2c.toml");
        let e = validate_host(&host, 0, 3, None, &[], &mut |_, _| panic!("nothing runs")).unwrap_err();
        assert!(e.to_string().contains("`tokens` = 0"), "{e}");
        let e = validate_host(&host, 4, 0, None, &[], &mut |_, _| panic!("nothing runs")).unwrap_err();
        assert!(e.to_string().contains("`repeats` = 0"), "{e}");
        let e =
            validate_host(&host, 4, 3, Some("no-such-design"), &[], &mut |_, _| panic!("nothing runs")).unwrap_err();
        assert!(e.to_string().contains("no design id contains it"), "{e}");
        let e = validate_host(&host, 4, 3, None, &[("--out", &host)], &mut |_, _| panic!("nothing runs")).unwrap_err();
        assert!(e.to_string().contains("writing it would destroy it"), "{e}");
    }

    #[test]
    fn the_shipped_published_rows_are_read() {
        let rows = published_rows(None).unwrap();
        assert!(rows.len() > 100, "the shipped table has its published rows");
    }
}

/// An energy validation: each published power row predicted at its boundary, with median
/// errors of power and of energy per token by device class and by boundary.
#[derive(Debug, Clone)]
pub struct EnergyReport {
    /// The rows predicted and those set aside.
    pub validation: memwall_calib::energy::EnergyValidation,
    /// Errors of the power, W, over the rows whose window compares it
    /// ([`memwall_calib::energy::Window::compares_power`]): `all` first, then by device
    /// class, then by boundary.
    pub power: Vec<Summary>,
    /// Errors of the energy per generated token, in the same groups.
    pub energy: Vec<Summary>,
    /// Errors of the decode rate the energy is taken over, in the same groups.
    pub rate: Vec<Summary>,
    /// Distinct physical devices among the rows predicted.
    pub devices: usize,
}

/// The published energy rows memwall ships (`datasets/energy_measurements.csv`), or those of
/// `table`.
pub fn energy_rows(table: Option<&Path>) -> Result<Vec<memwall_calib::energy::EnergyRow>> {
    use memwall_calib::energy::parse_energy_table;
    Ok(match table {
        Some(p) => parse_energy_table(&crate::read_text(p)?, &p.display().to_string())?,
        None => parse_energy_table(crate::presets::ENERGY_MEASUREMENTS_CSV, "energy_measurements.csv")?,
    })
}

/// Check memwall's power and energy per token against published measurements (those of
/// `table`, or the shipped ones), each at the boundary its source measured
/// ([`memwall_calib::energy::at_boundary`]). No figure is fitted on these rows. `outputs`
/// (flag, path) are checked against the table first.
pub fn validate_energy(table: Option<&Path>, outputs: &[(&str, &Path)]) -> Result<EnergyReport> {
    let inputs: Vec<&Path> = table.into_iter().collect();
    crate::check_outputs(&inputs, outputs)?;
    let rows = energy_rows(table)?;
    let validation = memwall_calib::energy::validate_energy(&rows)?;
    use memwall_calib::energy::EnergyCheck;
    let all: Vec<&EnergyCheck> = validation.checks.iter().collect();
    let watts: Vec<&EnergyCheck> = all.iter().copied().filter(|r| r.window.compares_power()).collect();
    let groups = |c: &[&EnergyCheck], predicted: fn(&EnergyCheck) -> f64, measured: fn(&EnergyCheck) -> f64| {
        let (p, m): (Vec<f64>, Vec<f64>) = c.iter().map(|r| (predicted(r), measured(r))).unzip();
        let by_class: Vec<String> = c.iter().map(|r| r.class.clone()).collect();
        let by_boundary: Vec<String> = c.iter().map(|r| r.boundary.name().to_string()).collect();
        let mut out = memwall_calib::summarize(&p, &m, &by_class);
        out.extend(memwall_calib::summarize(&p, &m, &by_boundary).into_iter().skip(1));
        out
    };
    let power = groups(&watts, |r| r.predicted_w, |r| r.measured_w);
    let energy = groups(&all, |r| r.predicted_j_per_token, |r| r.measured_j_per_token);
    let rate = groups(&all, |r| r.predicted_tok_s, |r| r.measured_tok_s);
    let devices = all.iter().map(|r| r.unit_device.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    Ok(EnergyReport { validation, power, energy, rate, devices })
}

/// The published sustained runs memwall ships (`datasets/sustained_validation.csv`), or those
/// of `table`.
pub fn sustained_rows(table: Option<&Path>) -> Result<Vec<memwall_calib::sustained::SustainedRow>> {
    use memwall_calib::sustained::parse_sustained_table;
    Ok(match table {
        Some(p) => parse_sustained_table(&crate::read_text(p)?, &p.display().to_string())?,
        None => parse_sustained_table(crate::presets::SUSTAINED_VALIDATION_CSV, "sustained_validation.csv")?,
    })
}

/// The sustained runs simulated ([`validate_sustained`]) and what they add up to.
#[derive(Debug, Clone)]
pub struct SustainedReport {
    /// The rows simulated and those set aside.
    pub validation: memwall_calib::sustained::SustainedValidation,
    /// Median |simulated − published| retained fraction, percentage points, over the rows
    /// that publish one (and their count).
    pub retained_pp: (Option<f64>, usize),
    /// Rows whose early end (or its absence) the simulation agrees with, of all.
    pub ends_agree: (usize, usize),
    /// Rows whose simulated hottest die lies in the published range, of those that publish one.
    pub die_within: (usize, usize),
    /// Median simulated ÷ published time to −25 % over the rows that publish one and where
    /// the simulation reaches it, the count of those, and the count of rows that publish one.
    pub t25_ratio: (Option<f64>, usize, usize),
}

/// Simulate the published sustained runs (those of `table`, or the shipped ones) on the
/// presets' thermal networks or their class networks
/// ([`memwall_calib::sustained::validate_sustained`]). No figure is fitted on these rows.
/// `outputs` (flag, path) are checked against the table first.
pub fn validate_sustained(table: Option<&Path>, outputs: &[(&str, &Path)]) -> Result<SustainedReport> {
    let inputs: Vec<&Path> = table.into_iter().collect();
    crate::check_outputs(&inputs, outputs)?;
    let rows = sustained_rows(table)?;
    let validation = memwall_calib::sustained::validate_sustained(&rows)?;
    let c = &validation.checks;
    let median = crate::defaults::median;
    let pp: Vec<f64> = c.iter().filter_map(|r| r.retained_error_pp()).map(f64::abs).collect();
    let pp_rows = pp.len();
    let t25_published = c.iter().filter(|r| r.measured_t25_s.is_some()).count();
    let t25: Vec<f64> = c.iter().filter_map(|r| Some(r.predicted_t25_s? / r.measured_t25_s?)).collect();
    let dies: Vec<bool> = c.iter().filter_map(|r| r.die_within()).collect();
    Ok(SustainedReport {
        retained_pp: (median(pp), pp_rows),
        ends_agree: (c.iter().filter(|r| r.ended_early == r.predicted_end_s.is_some()).count(), c.len()),
        die_within: (dies.iter().filter(|&&d| d).count(), dies.len()),
        t25_ratio: (median(t25.clone()), t25.len(), t25_published),
        validation,
    })
}
