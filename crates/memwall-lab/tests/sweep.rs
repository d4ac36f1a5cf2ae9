//! Sweeps: every point equals the analytic estimate of the scenario the experiment's TOML
//! describes, whatever the thread count and batch size; Parquet round-trips the table and its
//! metadata; `run` and `simulate` tables share their input columns.

use std::fs::File;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, UInt64Type};
use memwall_lab::sweep::Digest;
use memwall_lab::{Experiment, ParquetStream, Sweep, TableBuilder, metadata, write_parquet};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const EXP: &str = r#"
name = "sweep"
seed = 3
[base]
model = "llama-3.1-8b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[base.workload]
routing_skew = 0.5
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M", "IQ2_XS"]
"kv.k+kv.v" = ["f16", "q8_0"]
"workload.threads" = [2, 4, 6]
"device.memory.data_rate_mtps" = [6400.0, 9600.0]
"workload.context_tokens" = [2048, 65536]
[labels]
"kv.k+kv.v" = ["16-bit", "8-bit"]
"#;

/// Models, a slow axis nested in a fast one (`model.layer_pattern` inside `model`), batch and
/// backend: the paths a sweep takes apart.
const MIXED: &str = r#"
name = "mixed"
[base]
model = "llama-3.2-3b"
device = "snapdragon-8-elite-12gb"
weights = { mix = "Q4_K_M" }
[grid]
"model" = ["llama-3.2-3b", "hypothetical-35b-moe", "granite-4.0-h-micro"]
"model.layer_pattern" = [["full"], ["sliding", "full"]]
"model.sliding_window" = [1024]
"workload.batch" = [1, 3]
"workload.backend" = ["cpu", "gpu"]
"workload.gen_tokens" = [1, 700]
"cost.overlap" = [0.9, 0.5]
"#;

fn table(exp: &Experiment, threads: usize, batch: usize) -> RecordBatch {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
        let sweep = Sweep::new(exp).unwrap();
        let mut parts = Vec::new();
        sweep
            .run(batch, &|_| {}, &mut |b| {
                parts.extend(b);
                Ok(())
            })
            .unwrap();
        arrow::compute::concat_batches(&TableBuilder::estimates(exp, 0).schema(), &parts).unwrap()
    })
}

/// A grid that names no engine runs each point's default for its device and unit, and its
/// threads: on the GPU llama.cpp's Metal backend on an Apple chip and its OpenCL backend on
/// an Adreno; on the CPU llama.cpp with every core of an Android phone and the performance
/// cores of a Mac. An experiment that names an engine keeps it everywhere.
#[test]
fn a_grid_without_an_engine_runs_each_devices_default() {
    let text = r#"
name = "defaults"
[base]
model = "llama-3.2-1b"
device = "apple-m3-max-64gb"
weights = { mix = "Q4_0" }
[grid]
"device" = ["apple-m3-max-64gb", "snapdragon-8-gen3-16gb"]
"workload.backend" = ["cpu", "gpu"]
"#;
    let t = table(&Experiment::parse(text, "defaults.toml").unwrap(), 1, 8);
    let engine = t.column_by_name("engine").unwrap().as_string::<i32>();
    let engines: Vec<&str> = (0..t.num_rows()).map(|i| engine.value(i)).collect();
    assert_eq!(engines, ["llama.cpp", "llama.cpp", "llama.cpp", "llama.cpp-opencl"]);
    let threads = t.column_by_name("workload.threads").unwrap().as_primitive::<arrow::datatypes::UInt32Type>();
    // M3 Max: 12 performance + 4 efficiency cores; Snapdragon 8 Gen 3: 8 cores.
    assert_eq!((threads.value(0), threads.value(2)), (12, 8));
    let named = text.replace("[grid]", "engine = \"generic\"\n[grid]");
    let t = table(&Experiment::parse(&named, "named.toml").unwrap(), 1, 8);
    let engine = t.column_by_name("engine").unwrap().as_string::<i32>();
    assert!((0..t.num_rows()).all(|i| engine.value(i) == "generic"));
}

/// The quality columns are the model's own figure, say where it comes from and flag a format
/// the model does not survive; `[pareto] max_ppl_increase_pct` is read.
#[test]
fn quality_columns_are_the_models_own_and_flag_sub_2_bit_formats() {
    let text = r#"
name = "quality"
[base]
model = "llama-2-7b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[grid]
"weights.mix" = ["Q4_K_M", "Q6_K", "TQ1_0"]
[pareto]
max_ppl_increase_pct = 5.0
"#;
    let exp = Experiment::parse(text, "quality.toml").unwrap();
    assert_eq!(exp.pareto.max_ppl_increase_pct, Some(5.0));
    let t = table(&exp, 1, 8);
    let pct = t.column_by_name("ppl_increase_pct").unwrap().as_primitive::<Float64Type>();
    let provenance = t.column_by_name("weights_quality_provenance").unwrap().as_string::<i32>();
    let flag = t.column_by_name("ptq_unusable").unwrap().as_boolean();
    let verdict = t.column_by_name("quality_verdict").unwrap().as_string::<i32>();
    // Llama-2-7B, published in llama.cpp's "LLaMA 2 vs. LLaMA 3" comparison: Q4_K_M +1.424 %,
    // Q6_K +0.241 % (KV f16: nothing added).
    assert!((pct.value(0) - 1.424).abs() < 1e-9 && (pct.value(1) - 0.241).abs() < 1e-9);
    assert_eq!((provenance.value(0), provenance.value(1)), ("published", "published"));
    assert_eq!((verdict.value(0), verdict.value(2)), ("acceptable", "not usable"));
    assert!(!flag.value(0) && !flag.value(1) && flag.value(2));
}

#[test]
fn every_point_equals_the_estimate_of_its_toml_scenario() {
    for text in [EXP, MIXED] {
        let exp = Experiment::parse(text, "sweep.toml").unwrap();
        let t = table(&exp, 2, 5);
        assert_eq!(t.num_rows(), exp.len());
        let tok_s = t.column_by_name("decode_tok_s").unwrap().as_primitive::<Float64Type>();
        let ttft = t.column_by_name("ttft_s").unwrap().as_primitive::<Float64Type>();
        let total = t.column_by_name("total_bytes").unwrap().as_primitive::<UInt64Type>();
        let point = t.column_by_name("point").unwrap().as_primitive::<UInt64Type>();
        for i in 0..exp.len() {
            let p = exp.point(i).unwrap();
            let e = memwall_sim::estimate(&p.scenario).unwrap();
            assert_eq!(point.value(i), i as u64);
            assert_eq!(tok_s.value(i).to_bits(), e.decode_tok_s.to_bits(), "{}: point {i}", exp.name);
            assert_eq!(ttft.value(i).to_bits(), e.ttft_s.to_bits(), "{}: point {i}", exp.name);
            assert_eq!(total.value(i), e.total_bytes, "{}: point {i}", exp.name);
        }
    }
}

#[test]
fn rows_are_identical_whatever_the_threads_and_batch_size() {
    let exp = Experiment::parse(MIXED, "mixed.toml").unwrap();
    let one = table(&exp, 1, 1 << 16);
    for (threads, batch) in [(4, 1 << 16), (2, 3), (3, 17)] {
        assert_eq!(table(&exp, threads, batch), one, "{threads} threads, batches of {batch}");
    }
}

#[test]
fn a_failing_point_names_itself_and_no_later_batch_is_handed_over() {
    // Each value passes on its own; 8 threads on the 4-core Raspberry Pi does not, at point 5
    // (device 1, context 0, threads 1) and again at point 7.
    let text = r#"
name = "bad"
[base]
model = "llama-3.2-1b"
device = "snapdragon-8-elite-12gb"
weights = { mix = "Q4_K_M" }
[grid]
"device" = ["snapdragon-8-elite-12gb", "raspberry-pi-5-8gb"]
"workload.context_tokens" = [1024, 2048]
"workload.threads" = [4, 8]
"#;
    let exp = Experiment::parse(text, "bad.toml").unwrap();
    let sweep = Sweep::new(&exp).unwrap();
    let mut handed = 0;
    let err = sweep
        .run(2, &|_| {}, &mut |b| {
            handed += b.iter().map(|x| x.num_rows()).sum::<usize>();
            Ok(())
        })
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("grid point 5 ("), "{err}");
    assert!(err.contains("device=raspberry-pi-5-8gb") && err.contains("workload.threads=8"), "{err}");
    assert!(err.contains("has 4 cores"), "{err}");
    assert_eq!(handed, 4, "the batches before the failing one");
}

#[test]
fn parquet_round_trips_the_table_and_its_metadata() {
    let exp = Experiment::parse(EXP, "sweep.toml").unwrap();
    let sweep = Sweep::new(&exp).unwrap();
    let mut meta = metadata(Some(&exp));
    meta.extend(sweep.resolved_metadata());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/sweep.parquet");
    let mut out = ParquetStream::create(&path, TableBuilder::estimates(&exp, 0).schema(), &meta, 16).unwrap();
    let mut digest = Digest::new(10, exp.pareto.clone());
    sweep
        .run(7, &|_| {}, &mut |b| {
            for x in &b {
                out.write(x)?;
                digest.observe(x)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(out.finish().unwrap(), exp.len() as u64);
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    assert!(builder.metadata().num_row_groups() >= 4, "row groups of 16 rows");
    // The metadata is in the footer and on the Arrow schema.
    let kv = builder.metadata().file_metadata().key_value_metadata().unwrap().clone();
    let footer = |k: &str| kv.iter().find(|x| x.key == k).and_then(|x| x.value.clone());
    assert_eq!(footer("seed").as_deref(), Some("3"));
    let schema_meta = builder.schema().metadata().clone();
    assert_eq!(schema_meta.get("seed").map(String::as_str), Some("3"));
    assert_eq!(schema_meta.get("memwall_version").map(String::as_str), Some(env!("CARGO_PKG_VERSION")));
    assert!(schema_meta.get("experiment_toml").unwrap().contains("device.memory.data_rate_mtps"));
    // The resolved specs read back as TOML: one model, two device variants, three mixes.
    let resolved: toml::Table = toml::from_str(schema_meta.get("resolved").unwrap()).unwrap();
    assert_eq!(resolved["model"].as_array().unwrap().len(), 1);
    assert_eq!(resolved["device"].as_array().unwrap().len(), 2);
    assert_eq!(resolved["weights"].as_array().unwrap().len(), 3);
    let back: Vec<RecordBatch> = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
    let back = arrow::compute::concat_batches(&back[0].schema(), &back).unwrap();
    let direct = table(&exp, 2, 1 << 16);
    assert_eq!(back.columns(), direct.columns());
    // Columns: inputs by scenario path, the labelled axis, the non-input grid path, metrics.
    let schema = direct.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    for c in [
        "point",
        "weights.mix",
        "kv.k",
        "kv.v",
        "kv.k+kv.v",
        "workload.threads",
        "workload.ubatch",
        "workload.margin_bytes",
        "workload.routing_skew",
        "workload.flash_attention",
        "device.memory.data_rate_mtps",
        "decode_tok_s",
        "context_beyond_max",
        "flash_bytes_per_token",
        "quality_source",
    ] {
        assert!(names.contains(&c), "{c} missing from {names:?}");
    }
    assert_eq!(names.iter().filter(|n| **n == "workload.threads").count(), 1);
    // The digest saw every point and kept the fastest fitting ones in order.
    assert_eq!(digest.points, exp.len() as u64);
    assert_eq!(digest.rows.len(), 10);
    assert!(!digest.complete());
    assert!(digest.best.windows(2).all(|w| w[0].decode_tok_s >= w[1].decode_tok_s));
    let tok_s = direct.column_by_name("decode_tok_s").unwrap().as_primitive::<Float64Type>();
    let fits = direct.column_by_name("fits").unwrap().as_boolean();
    let fastest = (0..direct.num_rows()).filter(|&i| fits.value(i)).map(|i| tok_s.value(i)).fold(0.0, f64::max);
    assert_eq!(digest.best[0].decode_tok_s, fastest);
    let _ = write_parquet; // the one-shot writer is the same stream (tests/simulate.rs)
}

/// A sweep streamed in row groups of 16 rows, finished with the `pareto` column added.
fn written_with_front(exp: &Experiment, path: &std::path::Path) -> memwall_lab::Result<u64> {
    let sweep = Sweep::new(exp).unwrap();
    let mut out = ParquetStream::create(path, TableBuilder::estimates(exp, 0).schema(), &metadata(Some(exp)), 16)?;
    let mut digest = Digest::new(10, exp.pareto.clone());
    sweep.run(7, &|_| {}, &mut |b| {
        for x in &b {
            out.write(x)?;
            digest.observe(x)?;
        }
        Ok(())
    })?;
    out.finish_adding(memwall_lab::pareto::field(), memwall_lab::pareto::READS, &|b| digest.fronts.column(b))
}

#[test]
fn a_column_added_at_the_end_leaves_the_others_as_written() {
    use parquet::arrow::arrow_reader::ArrowReaderOptions;
    use parquet::file::metadata::PageIndexPolicy;
    let exp = Experiment::parse(EXP, "sweep.toml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("front.parquet");
    assert_eq!(written_with_front(&exp, &path).unwrap(), exp.len() as u64);
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(File::open(&path).unwrap(), options).unwrap();
    let meta = builder.metadata().clone();
    assert!(meta.num_row_groups() >= 4, "row groups of 16 rows");
    assert_eq!(builder.schema().metadata().get("seed").map(String::as_str), Some("3"));
    let back: Vec<RecordBatch> = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
    let back = arrow::compute::concat_batches(&back[0].schema(), &back).unwrap();
    // The written columns come back unchanged, and the new one is the front of every row.
    let direct = table(&exp, 2, 1 << 16);
    let (_, expected, _) =
        memwall_lab::pareto::with_column(&direct.schema(), vec![direct.clone()], &exp.pareto).unwrap();
    assert_eq!(back, expected[0]);
    let on = back.column_by_name("pareto").unwrap().as_boolean();
    assert!(on.true_count() > 0 && on.true_count() < back.num_rows(), "{} on the front", on.true_count());
    // Copied chunks keep their statistics and page indexes, at their new offsets.
    for g in 0..meta.num_row_groups() {
        let group = meta.row_group(g);
        let index = meta.page_index_for_row_group(g);
        for (c, chunk) in group.columns().iter().enumerate() {
            assert!(chunk.statistics().is_some(), "row group {g} column {c}: statistics");
            let first = index.offset_index(c).expect("an offset index").page_locations()[0].offset;
            assert_eq!(first, chunk.data_page_offset(), "row group {g} column {c}");
        }
    }
}

#[test]
fn a_failing_added_column_leaves_nothing_on_disk() {
    let exp = Experiment::parse(EXP, "sweep.toml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("front.parquet");
    std::fs::write(&path, b"an earlier file").unwrap();
    let sweep = Sweep::new(&exp).unwrap();
    let mut out = ParquetStream::create(&path, TableBuilder::estimates(&exp, 0).schema(), &[], 16).unwrap();
    sweep.run(7, &|_| {}, &mut |b| b.iter().try_for_each(|x| out.write(x))).unwrap();
    let err = out.finish_adding(memwall_lab::pareto::field(), &["no such column"], &|b| {
        memwall_lab::columns::by_name(b, "point").cloned()
    });
    assert!(err.unwrap_err().to_string().contains("point"));
    assert_eq!(std::fs::read(&path).unwrap(), b"an earlier file", "the earlier file is kept");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");
}

#[test]
fn run_and_simulate_tables_share_input_names_and_types() {
    let exp = Experiment::parse(EXP, "sweep.toml").unwrap();
    let run = TableBuilder::estimates(&exp, 0).schema();
    let sim = TableBuilder::summaries(&exp, 0).schema();
    let inputs = 1 + memwall_lab::columns::INPUT_COLUMNS.len();
    assert_eq!(run.fields()[..inputs], sim.fields()[..inputs]);
    for f in run.fields().iter().filter(|f| f.name().contains('.') || f.name() == "point") {
        if let Ok(g) = sim.field_with_name(f.name()) {
            assert_eq!(g.data_type(), f.data_type(), "{}", f.name());
        } else {
            panic!("{} missing from the simulate table", f.name());
        }
    }
    assert_eq!(
        run.field_with_name("workload.context_tokens").unwrap().data_type(),
        &arrow::datatypes::DataType::UInt64
    );
    assert!(sim.field_with_name("sim.seed").is_ok());
}

#[test]
fn one_seed_drives_the_simulator() {
    let base = "name = \"s\"\nseed = 5\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"snapdragon-8-elite-12gb\"\nweights = { mix = \"Q4_K_M\" }\n";
    let exp = Experiment::parse(base, "s.toml").unwrap();
    assert_eq!(exp.seed, 5);
    assert_eq!(exp.point(0).unwrap().scenario.sim.seed, 5);
    let conflict = format!("{base}[base.sim]\nseed = 6\n");
    let err = Experiment::parse(&conflict, "s.toml").unwrap_err().to_string();
    assert!(err.contains("base.sim.seed") && err.contains('5'), "{err}");
    let only_sim = base.replace("seed = 5\n", "") + "[base.sim]\nseed = 9\n";
    assert_eq!(Experiment::parse(&only_sim, "s.toml").unwrap().seed, 9);
}

/// A keyed estimator reuses the cost plan between points that differ only in token counts:
/// every point still equals a fresh estimate, whatever changes in between (token counts,
/// then a KV format, a batch, a key).
#[test]
fn points_differing_only_in_tokens_equal_fresh_estimates() {
    use memwall_spec::{KvQuant, Scenario, WeightQuant, Workload};
    let base = |model: &str| Scenario {
        model: memwall_lab::load_model(model).unwrap(),
        device: memwall_lab::load_device("snapdragon-8-gen3-16gb").unwrap(),
        weights: WeightQuant::new("Q4_K_M".parse().unwrap()),
        kv: KvQuant::default(),
        workload: Workload::default(),
        engine: Default::default(),
        assume_defaults: false,
        cost: Default::default(),
        sim: Default::default(),
    };
    let mut est = memwall_sim::Estimator::new();
    let mut points = Vec::new();
    for (key, model) in [(0u64, "llama-3.2-1b"), (1, "qwen3-30b-a3b"), (0, "llama-3.2-1b")] {
        for (ctx, prompt, generated, kv, batch) in [
            (2048, 512, 128, "f16", 1),
            (4096, 512, 128, "f16", 1),
            (4096, 2048, 1024, "f16", 1),
            (8192, 2048, 1024, "q8_0", 1),
            (16384, 64, 64, "q8_0", 1),
            (16384, 64, 64, "q8_0", 4),
            (32768, 64, 64, "q8_0", 4),
        ] {
            let mut s = base(model);
            s.workload.context_tokens = ctx;
            s.workload.prompt_tokens = prompt;
            s.workload.gen_tokens = generated;
            s.workload.batch = batch;
            s.kv = KvQuant { k: kv.parse().unwrap(), v: kv.parse().unwrap() };
            points.push((key, s));
        }
    }
    for (key, s) in &points {
        let keyed = est.estimate_keyed(*key, s).unwrap();
        let fresh = memwall_sim::estimate(s).unwrap();
        assert_eq!(format!("{keyed:?}"), format!("{fresh:?}"), "{} ctx {}", s.model.name, s.workload.context_tokens);
    }
}

/// A zipped axis (`a,b`) gives each path its own entry of every value: context and prompt
/// move together, so each row decodes at the depth its context names; presets in a zipped
/// axis resolve as in a plain one; a value of the wrong arity, or `,` mixed with `+`, is
/// refused naming the axis.
#[test]
fn a_zipped_axis_sets_each_path_its_own_value() {
    let exp = Experiment::parse(
        r#"
name = "zip"
[base]
model = "llama-3.2-1b"
device = "raspberry-pi-5-8gb"
weights = { mix = "Q4_K_M" }
[grid]
"workload.context_tokens,workload.prompt_tokens" = [[4096, 3968], [32768, 32640]]
"device,engine" = [["raspberry-pi-5-8gb", "llama.cpp"], ["snapdragon-8-gen3-16gb", "llama.cpp"]]
"#,
        "zip.toml",
    )
    .unwrap();
    assert_eq!(exp.len(), 4, "two zipped axes of two values");
    let t = Sweep::new(&exp).unwrap().table().unwrap();
    let col = |n: &str| t.column_by_name(n).unwrap().as_primitive::<UInt64Type>().clone();
    let (ctx, prompt, depth) =
        (col("workload.context_tokens"), col("workload.prompt_tokens"), col("decode_depth_tokens"));
    for i in 0..t.num_rows() {
        assert_eq!(prompt.value(i) + 128, ctx.value(i), "row {i}: the prompt paired with its context");
        assert_eq!(depth.value(i), prompt.value(i) + 64, "row {i}: the depth stated");
        let s = exp.point(i).unwrap().scenario;
        let e = memwall_sim::estimate(&s).unwrap();
        let tok = t.column_by_name("decode_tok_s").unwrap().as_primitive::<Float64Type>().value(i);
        assert_eq!(tok, e.decode_tok_s, "row {i}: the sweep is the estimate of its point");
    }
    let devices = t.column_by_name("device").unwrap().as_string::<i32>().clone();
    assert_eq!(devices.value(0), "raspberry-pi-5-8gb");
    assert_eq!(devices.value(1), "snapdragon-8-gen3-16gb");
    let deep = |i: usize| t.column_by_name("decode_tok_s").unwrap().as_primitive::<Float64Type>().value(i);
    assert!(deep(2) < deep(0), "decoding at 32K is slower than at 4K on the same device");
    for (grid, needle) in [
        ("\"workload.context_tokens,workload.prompt_tokens\" = [[4096, 3968, 1]]", "one per path"),
        ("\"workload.context_tokens,workload.prompt_tokens\" = [4096]", "[0]"),
        ("\"kv.k+kv.v,workload.context_tokens\" = [[\"f16\", 4096]]", "not both"),
    ] {
        let text = format!(
            "name = \"z\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"raspberry-pi-5-8gb\"\nweights = {{ mix = \"Q4_K_M\" }}\n[grid]\n{grid}\n"
        );
        let e = Experiment::parse(&text, "z.toml").unwrap_err().to_string();
        assert!(e.contains(needle) && e.contains("grid."), "{e}");
    }
}
