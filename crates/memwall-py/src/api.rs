//! What the Python objects and functions call: specs resolved and described, the footprint
//! of one design, simulations, validation and calibration. Tables cross as [`ArrowStream`]s.

use arrow::array::RecordBatch;
use memwall_io::IoError;
use memwall_spec::{DeviceSpec, EngineSpec, ModelSpec, SpecError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{ArrowStream, CalibrationError, Experiment, MemwallError, to_py};

/// The kinds of spec a Python object stands for.
const KINDS: &str = "model, device or engine";

fn spec_err(e: SpecError) -> IoError {
    IoError::Spec(e)
}

/// A spec deserialized from JSON, the failing field named by its path (`model.moe.top_k`).
fn from_json<T: serde::de::DeserializeOwned>(kind: &str, json: &str) -> Result<T, IoError> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() { kind.to_string() } else { format!("{kind}.{path}") };
        let message = e.into_inner().to_string();
        // serde_json places the error in the JSON text memwall made, which means nothing here.
        let first = message.lines().next().unwrap_or_default();
        let message = first.rfind(" at line ").map_or(first, |i| &first[..i]).to_string();
        spec_err(SpecError::Field { field, message })
    })
}

/// A spec as a Rust value: from a preset name or file path (`source`; a GGUF file keeps its
/// tensors) or from the JSON of its fields.
enum Spec {
    Model(Box<ModelSpec>),
    Device(Box<DeviceSpec>),
    Engine(Box<EngineSpec>),
}

fn load_spec(kind: &str, source: Option<&str>, json: Option<&str>) -> Result<Spec, IoError> {
    let unknown = || {
        spec_err(SpecError::unknown(
            "kind",
            "spec kind",
            kind,
            ["model", "device", "engine"],
            format!("; expected {KINDS}"),
        ))
    };
    Ok(match (kind, source, json) {
        ("model", Some(s), _) => Spec::Model(Box::new(memwall_io::load_model(s)?)),
        ("device", Some(s), _) => Spec::Device(Box::new(memwall_io::load_device(s)?)),
        ("engine", Some(s), _) => Spec::Engine(Box::new(memwall_io::load_engine(s)?)),
        ("model", None, Some(j)) => {
            let m: ModelSpec = from_json("model", j)?;
            m.validate().map_err(|e| spec_err(e.within("model")))?;
            Spec::Model(Box::new(m))
        }
        ("device", None, Some(j)) => {
            let d: DeviceSpec = from_json("device", j)?;
            d.validate().map_err(|e| spec_err(e.within("device")))?;
            Spec::Device(Box::new(d))
        }
        ("engine", None, Some(j)) => {
            let e: EngineSpec = from_json("engine", j)?;
            e.validate().map_err(|e| spec_err(e.within("engine")))?;
            Spec::Engine(Box::new(e))
        }
        ("model" | "device" | "engine", None, None) => {
            return Err(spec_err(SpecError::invalid(kind, "nothing", "give a preset name, a file or fields")));
        }
        _ => return Err(unknown()),
    })
}

/// Every field of a spec (a preset name or file path) as JSON, to edit from Python. A model
/// file's tensors are not fields: an unchanged file model is passed by its path instead.
#[pyfunction]
pub fn spec_json(py: Python<'_>, kind: &str, source: &str) -> PyResult<String> {
    let spec = py.detach(|| load_spec(kind, Some(source), None)).map_err(|e| to_py(py, e))?;
    let json = match &spec {
        Spec::Model(m) => serde_json::to_string(m),
        Spec::Device(d) => serde_json::to_string(d),
        Spec::Engine(e) => serde_json::to_string(e),
    };
    json.map_err(|e| MemwallError::new_err(format!("{kind} `{source}` as JSON: {e}")))
}

/// The facts a repr shows (`memwall_io::report::{ModelFacts, DeviceFacts, EngineFacts}`, the
/// figures `memwall presets` prints) as JSON, checked: a spec from `source` (preset or file)
/// or `json` (its fields), validated; errors name the field.
#[pyfunction]
#[pyo3(signature = (kind, source=None, json=None))]
pub fn describe(py: Python<'_>, kind: &str, source: Option<&str>, json: Option<&str>) -> PyResult<String> {
    use memwall_io::report::{DeviceFacts, EngineFacts, ModelFacts};
    let spec = py.detach(|| load_spec(kind, source, json)).map_err(|e| to_py(py, e))?;
    let facts = match &spec {
        Spec::Model(m) => serde_json::to_string(&ModelFacts::of(m)),
        Spec::Device(d) => serde_json::to_string(&DeviceFacts::of(d)),
        Spec::Engine(e) => serde_json::to_string(&EngineFacts::of(e)),
    };
    facts.map_err(|e| MemwallError::new_err(format!("{kind} facts as JSON: {e}")))
}

/// Stream of one record batch.
fn one_batch(batch: RecordBatch) -> ArrowStream {
    let rows = batch.num_rows();
    ArrowStream::new(batch.schema(), vec![batch], rows)
}

/// The footprint of the first point of `experiment` ([`memwall_io::report::footprint`], the
/// report `memwall footprint --json` prints) as JSON text, and one row per weight tensor
/// (class, layer, shape, format, bytes).
#[pyfunction]
pub fn footprint(py: Python<'_>, experiment: PyRef<'_, Experiment>) -> PyResult<(String, ArrowStream)> {
    let exp = &experiment.exp;
    let computed = py.detach(|| -> Result<_, IoError> {
        let f = memwall_io::report::footprint(&exp.point(0)?.scenario)?;
        let batch = memwall_io::columns::batch_of(memwall_io::columns::TENSOR_COLUMNS, &f.weights.tensors)?;
        Ok((f, batch))
    });
    let (f, batch) = computed.map_err(|e| to_py(py, e))?;
    let text = serde_json::to_string(&f).map_err(|e| MemwallError::new_err(format!("serializing a footprint: {e}")))?;
    Ok((text, one_batch(batch)))
}

/// Simulate the points `start..end` (default all) of `experiment` through time: the
/// summaries (one row per point, the columns of `memwall simulate --summary`) and, with
/// `trace`, the per-token trace (the columns of `--trace`). `duration_s` overrides `sim.duration_s`. `progress(point, seconds)`
/// is called a few times a second with the GIL held; Ctrl-C (or an exception it raises) stops
/// the run.
#[pyfunction]
#[pyo3(signature = (experiment, start=None, end=None, duration_s=None, trace=true, trace_limit_bytes=2_000_000_000, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    experiment: PyRef<'_, Experiment>,
    py: Python<'_>,
    start: Option<usize>,
    end: Option<usize>,
    duration_s: Option<f64>,
    trace: bool,
    trace_limit_bytes: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<(ArrowStream, Option<ArrowStream>)> {
    let exp = &experiment.exp;
    let mut raised: Option<PyErr> = None;
    // The first call goes through; later ones at most every 0.1 s of wall time.
    let mut last: Option<std::time::Instant> = None;
    let result = py.detach(|| {
        let mut check = |i: usize, t: f64| -> bool {
            if last.is_some_and(|l| l.elapsed().as_secs_f64() < 0.1) {
                return true;
            }
            last = Some(std::time::Instant::now());
            Python::attach(|py| {
                let r = py.check_signals().and_then(|()| match &progress {
                    Some(f) => f.call1(py, (i, t)).map(drop),
                    None => Ok(()),
                });
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        raised = Some(e);
                        false
                    }
                }
            })
        };
        if let Some(d) = duration_s {
            memwall_spec::units::Seconds::new(d).map_err(|e| e.within("duration"))?;
        }
        let range = start.unwrap_or(0)..end.unwrap_or(exp.len());
        memwall_io::simulate_in_memory(exp, range, duration_s, trace, trace_limit_bytes, &mut check)
    });
    if let Some(e) = raised {
        return Err(e);
    }
    let (results, batches) = result.map_err(|e| to_py(py, e))?;
    let mut table = memwall_io::TableBuilder::summaries(exp, results.len());
    for r in &results {
        table.append(exp, r.point.index as u64, &r.point.scenario, &r.point.choice, &r.summary);
    }
    let summary = table.finish().map_err(|e| to_py(py, e))?;
    let trace = trace.then(|| {
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        ArrowStream::new(memwall_io::trace::trace_schema(), batches, rows)
    });
    Ok((one_batch(summary), trace))
}

/// The key-value metadata memwall writes into its Parquet files for `experiment`: the
/// version, commit, experiment text and seed, and the specs its points resolved to.
#[pyfunction]
pub fn metadata(py: Python<'_>, experiment: PyRef<'_, Experiment>) -> PyResult<Vec<(String, String)>> {
    {
        let exp = &experiment.exp;
        let r = py.detach(|| -> Result<_, IoError> {
            let mut meta = memwall_io::metadata(Some(exp));
            meta.extend(memwall_io::Sweep::new(exp)?.resolved_metadata());
            Ok(meta)
        });
        r.map_err(|e| to_py(py, e))
    }
}

/// Leave-one-device-out validation of decode tok/s against published measurements
/// ([`memwall_io::report::validate_devices`]): the report rows (the columns of `memwall validate
/// --out`) and the rows set aside with why.
#[pyfunction]
#[pyo3(signature = (table=None))]
pub fn validate_devices(py: Python<'_>, table: Option<&str>) -> PyResult<(ArrowStream, Vec<(String, String)>)> {
    let r = py.detach(|| -> Result<_, IoError> {
        let r = memwall_io::report::validate_devices(table.map(std::path::Path::new), &[])?;
        let v = r.validation;
        Ok((memwall_io::columns::batch_of(memwall_io::validation::REPORT_COLUMNS, &v.validated)?, v.excluded))
    });
    let (batch, excluded) = r.map_err(|e| to_py(py, e))?;
    Ok((one_batch(batch), excluded))
}

/// Run memwall's reference engine on the host-validation designs whose id contains `only`
/// (all when None) and predict each with the host profile at `host` (its `.engine.toml`
/// beside it) ([`memwall_io::report::validate_host`]): the rows of `memwall validate --host --out`.
#[pyfunction]
#[pyo3(signature = (host, tokens=8, only=None))]
pub fn validate_host(py: Python<'_>, host: &str, tokens: usize, only: Option<&str>) -> PyResult<ArrowStream> {
    let r = py.detach(|| -> Result<_, IoError> {
        let v = memwall_io::report::validate_host(std::path::Path::new(host), tokens, only, &[], &mut |_, _| {})?;
        memwall_io::columns::batch_of(memwall_io::validation::HOST_REPORT_COLUMNS, &v.rows)
    });
    Ok(one_batch(r.map_err(|e| to_py(py, e))?))
}

/// A calibrated device and engine as TOML (to write) and JSON (to build Python objects from).
fn profiles<'py>(py: Python<'py>, device: &DeviceSpec, engine: &EngineSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (device_toml, engine_toml) = memwall_io::report::profile_texts(device, engine).map_err(|e| to_py(py, e))?;
    let fail = |e: &dyn std::fmt::Display| MemwallError::new_err(format!("serializing a calibrated profile: {e}"));
    d.set_item("device_toml", device_toml)?;
    d.set_item("engine_toml", engine_toml)?;
    d.set_item("device_json", serde_json::to_string(device).map_err(|e| fail(&e))?)?;
    d.set_item("engine_json", serde_json::to_string(engine).map_err(|e| fail(&e))?)?;
    Ok(d)
}

/// Calibrate a device from llama-bench output (`path`) of `model` on `device` run by
/// `engine` ([`memwall_io::report::calibrate_llama_bench`]): the profiles ([`profiles`]) and the per-row residuals before and after.
#[pyfunction]
pub fn calibrate_llama_bench<'py>(
    py: Python<'py>,
    path: &str,
    device: &str,
    model: &str,
    engine: &str,
) -> PyResult<(Bound<'py, PyDict>, ArrowStream)> {
    let r = py.detach(|| -> Result<_, IoError> {
        let c = memwall_io::report::calibrate_llama_bench(std::path::Path::new(path), model, device, engine, &[])?;
        let batch = memwall_io::columns::batch_of(memwall_io::llama_bench::RESIDUAL_COLUMNS, &c.residuals)?;
        Ok((c, batch))
    });
    let (c, batch) = r.map_err(|e| to_py(py, e))?;
    Ok((profiles(py, &c.device, &c.engine)?, one_batch(batch)))
}

/// Calibrate this machine with memwall's kernels and engine (`quick`: the short probe set,
/// about 2 minutes): the profiles ([`profiles`]) with the raw measurements as CSV
/// (`measurements_csv`), and the fitted figures with their 95 % intervals. `progress(line)`
/// gets a line per probe.
#[pyfunction]
#[pyo3(signature = (name="host", quick=true, threads=None, progress=None))]
pub fn calibrate_host<'py>(
    py: Python<'py>,
    name: &str,
    quick: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Bound<'py, PyDict>, ArrowStream)> {
    let plan = memwall_calib::host::Plan::new(quick, threads, "threads").map_err(|e| to_py(py, spec_err(e)))?;
    let p = py
        .detach(|| {
            memwall_calib::hostfit::calibrate_host(name, plan, &mut |line| {
                if let Some(f) = &progress {
                    Python::attach(|py| {
                        // A failing callback only loses a progress line.
                        let _ = f.call1(py, (line,));
                    });
                }
            })
        })
        .map_err(|e| CalibrationError::new_err(e.to_string()))?;
    let batch =
        memwall_io::columns::batch_of(memwall_io::validation::FITTED_COLUMNS, &p.fitted).map_err(|e| to_py(py, e))?;
    let d = profiles(py, &p.device, &p.engine)?;
    d.set_item("measurements_csv", memwall_calib::hostfit::measurements_csv(&p.measurements))?;
    Ok((d, one_batch(batch)))
}

/// A weight mix in its canonical spelling (`q4_k_m` → `Q4_K_M`), or the error naming `field`.
#[pyfunction]
pub fn parse_mix(py: Python<'_>, field: &str, text: &str) -> PyResult<String> {
    text.parse::<memwall_spec::Mix>().map(|m| m.to_string()).map_err(|e| to_py(py, spec_err(e.within(field))))
}

/// A tensor format (a KV format: `q8_0`) in its canonical spelling, or the error naming `field`.
#[pyfunction]
pub fn parse_format(py: Python<'_>, field: &str, text: &str) -> PyResult<String> {
    text.parse::<memwall_spec::QuantFormat>().map(|f| f.to_string()).map_err(|e| to_py(py, spec_err(e.within(field))))
}

/// A compute unit (`cpu`, `gpu`, `npu`) in its canonical spelling, or the error naming `field`.
#[pyfunction]
pub fn parse_backend(py: Python<'_>, field: &str, text: &str) -> PyResult<String> {
    text.parse::<memwall_spec::Backend>().map(|b| b.to_string()).map_err(|e| to_py(py, spec_err(e.within(field))))
}

/// The file beside `path` with `suffix` (`dev.toml` → `dev.engine.toml`), as `memwall
/// calibrate` names a profile's engine profile and measurements.
#[pyfunction]
pub fn beside(path: &str, suffix: &str) -> String {
    memwall_io::beside(std::path::Path::new(path), suffix, "device").display().to_string()
}

/// Write text files as `memwall` writes its outputs: every `(role, path, text)` is checked
/// first (none may be one of `inputs` or of the others, nor an existing non-regular file),
/// then each is written whole through a temporary file and a rename.
#[pyfunction]
pub fn write_texts(py: Python<'_>, outputs: Vec<(String, String, String)>, inputs: Vec<String>) -> PyResult<()> {
    let r = py.detach(|| -> Result<(), IoError> {
        let inputs: Vec<&std::path::Path> = inputs.iter().map(std::path::Path::new).collect();
        let checked: Vec<(&str, &std::path::Path)> =
            outputs.iter().map(|(role, path, _)| (role.as_str(), std::path::Path::new(path))).collect();
        memwall_io::check_outputs(&inputs, &checked)?;
        for (_, path, text) in &outputs {
            memwall_io::atomic::write_text(std::path::Path::new(path), text)?;
        }
        Ok(())
    });
    r.map_err(|e| to_py(py, e))
}

/// Write `table` (anything with `__arrow_c_stream__`) to a Parquet file at `path` with
/// `metadata` on its schema and in its footer, through [`memwall_io::results::write_parquet_batches`]
/// (the path `memwall run` takes): checked first against `inputs` and existing non-regular
/// files, written whole through a temporary file and a rename. Returns the rows written.
#[pyfunction]
pub fn write_parquet(
    py: Python<'_>,
    table: Bound<'_, PyAny>,
    path: &str,
    metadata: Vec<(String, String)>,
    inputs: Vec<String>,
) -> PyResult<u64> {
    use arrow::array::RecordBatchReader;
    use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
    let capsule = table.call_method1("__arrow_c_stream__", (py.None(),))?;
    let capsule = capsule
        .cast_into::<pyo3::types::PyCapsule>()
        .map_err(|_| MemwallError::new_err("`results`: `__arrow_c_stream__` did not return a PyCapsule"))?;
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?.cast::<FFI_ArrowArrayStream>();
    // SAFETY: the capsule, checked by name above, holds a live `ArrowArrayStream` (the Arrow
    // PyCapsule protocol); `from_raw` moves it out and leaves a released one behind, which the
    // capsule's destructor then frees as the protocol requires.
    #[allow(unsafe_code)]
    let reader = unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr()) }
        .map_err(|e| MemwallError::new_err(format!("`results`: not an Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| MemwallError::new_err(format!("`results`: reading the Arrow stream: {e}")))?;
    let r = py.detach(|| -> Result<u64, IoError> {
        let path = std::path::Path::new(path);
        let inputs: Vec<&std::path::Path> = inputs.iter().map(std::path::Path::new).collect();
        memwall_io::check_outputs(&inputs, &[("path", path)])?;
        memwall_io::results::write_parquet_batches(path, schema, &batches, &metadata)
    });
    r.map_err(|e| to_py(py, e))
}

/// Bytes in a size (`2GB`, `500MB`, `4096`), or the error naming `field`.
#[pyfunction]
pub fn parse_bytes(py: Python<'_>, field: &str, text: &str) -> PyResult<u64> {
    memwall_io::parse_bytes(field, text).map_err(|e| to_py(py, e))
}

/// A design question answered for the experiment's first point (`memwall_solve::answer`):
/// the answer as the JSON `memwall solve --json` carries under `answer`.
#[pyfunction]
#[pyo3(signature = (experiment, question, target_tok_s=None, max_ppl_delta=None))]
pub fn solve(
    py: Python<'_>,
    experiment: PyRef<'_, Experiment>,
    question: &str,
    target_tok_s: Option<f64>,
    max_ppl_delta: Option<f64>,
) -> PyResult<String> {
    let exp = &experiment.exp;
    let q: memwall_solve::Question =
        question.parse().map_err(|e: SpecError| to_py(py, spec_err(e.within("question"))))?;
    let answered = py.detach(|| -> Result<String, IoError> {
        let s = exp.point(0)?.scenario;
        let a = memwall_solve::answer(&s, q, target_tok_s, max_ppl_delta)?;
        Ok(serde_json::to_string(&a).expect("answers serialize"))
    });
    answered.map_err(|e| to_py(py, e))
}

/// Which rows are on the Pareto front (`memwall_io::pareto`) of a table's columns `point`,
/// `fits`, `total_bytes`, `decode_tok_s`, `ppl_delta_weights`, `ppl_delta_kv`,
/// `energy_j_per_token` (a row with an unknown quality or that does not fit: never).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn pareto_mask(
    point: Vec<u64>,
    fits: Vec<bool>,
    total_bytes: Vec<u64>,
    decode_tok_s: Vec<f64>,
    ppl_delta_weights: Vec<Option<f64>>,
    ppl_delta_kv: Vec<Option<f64>>,
    energy_j_per_token: Vec<f64>,
) -> Vec<bool> {
    let designs: Vec<Option<memwall_io::pareto::Objectives>> = (0..point.len())
        .map(|i| {
            memwall_io::pareto::Objectives::eligible(
                point[i],
                *fits.get(i)?,
                *total_bytes.get(i)?,
                *decode_tok_s.get(i)?,
                ppl_delta_weights.get(i).copied().flatten(),
                ppl_delta_kv.get(i).copied().flatten(),
                *energy_j_per_token.get(i)?,
            )
        })
        .collect();
    memwall_io::pareto::mask(&designs)
}

/// Where a token's time goes for the experiment's first point
/// ([`memwall_io::report::ops`], the `memwall estimate --ops` table): every operator of a
/// decoded token at the mean context with its bytes, multiply-adds, time and binding term,
/// and that context.
#[pyfunction]
pub fn ops(py: Python<'_>, experiment: PyRef<'_, Experiment>) -> PyResult<(u64, ArrowStream)> {
    let exp = &experiment.exp;
    let computed = py.detach(|| -> Result<_, IoError> {
        let o = memwall_io::report::ops(&exp.point(0)?.scenario)?;
        Ok((o.context_tokens, o.table()?))
    });
    let (ctx, batch) = computed.map_err(|e| to_py(py, e))?;
    Ok((ctx, one_batch(batch)))
}

/// The first points of two to eight experiments side by side ([`memwall_io::report::compare`],
/// as `memwall compare`): one row per design with the sweep's input, estimate and quality
/// columns and `delta_<column>` for each numeric one, its difference from the first design.
#[pyfunction]
pub fn compare(py: Python<'_>, experiments: Vec<PyRef<'_, Experiment>>) -> PyResult<ArrowStream> {
    let exps: Vec<&memwall_io::Experiment> = experiments.iter().map(|e| &e.exp).collect();
    let computed = py.detach(|| -> Result<_, IoError> {
        let scenarios = exps
            .iter()
            .enumerate()
            .map(|(i, e)| {
                e.point(0).map(|p| p.scenario).map_err(|e| IoError::Design { index: i + 1, source: Box::new(e) })
            })
            .collect::<Result<Vec<_>, IoError>>()?;
        memwall_io::report::compare(scenarios)?.table()
    });
    Ok(one_batch(computed.map_err(|e| to_py(py, e))?))
}
