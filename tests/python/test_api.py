"""The Python package: sweeps return Arrow that pyarrow, polars and pandas take without a
copy, estimates match the sweep's rows, and bad input raises typed exceptions that carry the
field and value."""

import pytest

import memwall

BASE = {"model": "llama-3.2-1b", "device": "raspberry-pi-5-16gb", "weights": {"mix": "Q4_K_M"}}


def test_a_sweep_has_a_row_per_point_and_a_column_per_input_and_metric():
    import pyarrow as pa

    r = memwall.sweep(BASE, grid={"workload.context_tokens": [1024, 4096, 16384], "kv.k+kv.v": ["f16", "q8_0"]})
    assert len(r) == 6
    t = pa.table(r)
    assert t.num_rows == 6
    for col in ["model", "device", "weights.mix", "workload.context_tokens", "kv.k", "decode_tok_s", "total_bytes"]:
        assert col in t.column_names, col
    ctx = t.column("workload.context_tokens").to_pylist()
    kv = t.column("kv.k").to_pylist()
    assert ctx == [1024, 1024, 4096, 4096, 16384, 16384] and kv[:2] == ["f16", "q8_0"]
    # A longer context holds more KV and decodes no faster.
    tok = t.column("decode_tok_s").to_pylist()
    assert tok[0] >= tok[2] >= tok[4] > 0


def test_the_columns_cross_into_python_without_a_copy():
    import pyarrow as pa

    r = memwall.sweep(BASE, grid={"workload.context_tokens": [1024, 2048, 4096]})
    before = r._stream.buffer_address("decode_tok_s")
    t = pa.table(r)
    after = t.column("decode_tok_s").chunks[0].buffers()[1].address
    assert before == after


def test_polars_and_pandas_take_the_results():
    pl = pytest.importorskip("polars")
    df = pl.DataFrame(memwall.sweep(BASE, grid={"workload.batch": [1, 2]}))
    assert df.height == 2 and "decode_tok_s" in df.columns
    pdf = memwall.sweep(BASE, grid={"workload.batch": [1, 2]}).to_pandas()
    assert list(pdf["workload.batch"]) == [1, 2]


def test_estimate_is_the_sweeps_row():
    e = memwall.estimate("qwen3-0.6b", "raspberry-pi-5-16gb", "Q8_0", context_tokens=2048, kv="q8_0")
    row = memwall.sweep(
        {"model": "qwen3-0.6b", "device": "raspberry-pi-5-16gb", "weights": {"mix": "Q8_0"},
         "kv": {"k": "q8_0", "v": "q8_0"}, "workload": {"context_tokens": 2048}}
    ).to_pyarrow().to_pylist()[0]
    assert e == row
    assert e["decode_tok_s"] > 0 and e["fits"] is True


def test_estimate_in_a_loop_gives_each_designs_sweep_row(tmp_path):
    # Designs probed one after another share what they can (the specs of a model and device
    # are built once); each row must still be the row a sweep of that design alone gives.
    phone = memwall.Device("raspberry-pi-5-16gb").replace(memory={"data_rate_mtps": 6400})
    probes = [
        ("qwen3-0.6b", "pixel-8", "Q4_K_M", {"kv": "q8_0", "context_tokens": 2048}),
        ("qwen3-0.6b", "pixel-8", "Q8_0", {"context_tokens": 8192, "backend": "gpu"}),
        ("qwen3-0.6b", "pixel-8", memwall.Quant("Q4_K_M", kv="q4_0"), {"history_tokens": 0}),
        ("qwen3-0.6b", phone, "IQ4_XS", {"batch": 2, "threads": 2}),
        ("qwen3-30b-a3b", "Pixel 8", "Q3_K_M", {"context_tokens": 4096}),
        ("qwen3-0.6b", "pixel-8", "Q4_K_M", {"kv": "q8_0", "context_tokens": 2048}),
        ("qwen3-0.6b", "pixel-8", "Q4_K_M", {"engine": "llama.cpp", "backend": "cpu", "gen_tokens": 7}),
    ]
    for model, device, weights, kw in probes:
        got = memwall.estimate(model, device, weights, **kw)
        want = memwall.sweep(memwall.design(model, device, weights, **kw)).to_pyarrow().to_pylist()[0]
        assert got == want, (model, device, weights, kw)
    # A bad probe of a kept design names its field as a fresh one does.
    with pytest.raises(memwall.SpecError) as info:
        memwall.estimate("qwen3-0.6b", "pixel-8", "Q4_K_M", context_tokens=0)
    assert info.value.field == "workload.context_tokens"
    # A model read from a file is read again on every call: an edited file is seen.
    path = tmp_path / "m.toml"
    from conftest import ROOT

    text = (ROOT / "datasets" / "models" / "qwen3-0.6b.toml").read_text()
    path.write_text(text)
    assert memwall.estimate(str(path), "pixel-8")["model"] == "qwen3-0.6b"
    path.write_text(text.replace('name = "qwen3-0.6b"', 'name = "edited"', 1))
    assert memwall.estimate(str(path), "pixel-8")["model"] == "edited"


def test_a_result_can_be_read_again_and_shows_itself():
    import pyarrow as pa

    r = memwall.sweep(BASE, grid={"workload.batch": [1, 2, 3]})
    t1 = pa.table(r)
    t2 = pa.table(r)
    assert t1.equals(t2) and r.to_pyarrow() is r.to_pyarrow() and len(r) == 3
    assert r.head(2).num_rows == 2 and "decode_tok_s" in r.columns
    assert "3 rows × " in repr(r) and "point, model, device" in repr(r)
    page = r._repr_html_()
    assert page.count("<tr>") == 4 and "<th>decode_tok_s</th>" in page and "memwall.Results" in page
    many = memwall.sweep(BASE, grid={"workload.batch": list(range(1, 13))})
    assert "2 more rows" in many._repr_html_()


@pytest.mark.parametrize(
    "call,exc,field",
    [
        (lambda: memwall.estimate("no-such-model", "raspberry-pi-5-16gb"), memwall.SpecError, "model"),
        (lambda: memwall.estimate("llama-3.2-1b", "raspberry-pi-5-16gb", context_tokens=0), memwall.SpecError,
         "workload.context_tokens"),
        (lambda: memwall.estimate("llama-3.2-1b", "raspberry-pi-5-16gb", "Q9_X"), memwall.SpecError, "weights.mix"),
        (lambda: memwall.sweep(BASE, grid={"workload.no_such_field": [1]}), memwall.SpecError, None),
        (lambda: memwall.sweep(BASE, grid={"workload.batch": 3}), memwall.SpecError, None),
        (lambda: memwall.estimate("llama-3.2-1b", "raspberry-pi-5-16gb", batch=float("nan")), memwall.SpecError, None),
        (lambda: memwall.estimate("llama-3.2-1b", "raspberry-pi-5-16gb", context_tokens=2**64), memwall.SpecError,
         "workload.context_tokens"),
        (lambda: memwall.sweep(BASE, grid={"workload.batch": [1, 2**63]}), memwall.SpecError, "grid.workload.batch[1]"),
        (lambda: memwall.estimate("missing.gguf", "raspberry-pi-5-16gb"), memwall.MemwallIOError, None),
        (lambda: memwall.presets("fonts"), memwall.SpecError, None),
        (lambda: memwall.sweep("no/such/experiment.toml"), memwall.MemwallIOError, None),
    ],
)
def test_bad_input_raises_typed_errors(call, exc, field):
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, memwall.MemwallError)
    if field is not None:
        assert info.value.field == field, (info.value.field, str(info.value))


def test_a_truncated_gguf_is_a_gguf_error(tmp_path):
    p = tmp_path / "cut.gguf"
    p.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x01" * 8)
    with pytest.raises(memwall.GgufError) as info:
        memwall.estimate(str(p), "raspberry-pi-5-16gb")
    assert info.value.field == "offset"


def test_presets_are_listed():
    assert "llama-3.2-1b" in memwall.presets("models")
    assert "raspberry-pi-5-16gb" in memwall.presets("devices")


def test_a_sweep_with_progress_has_the_same_rows():
    grid = {"workload.context_tokens": list(range(1024, 1024 + 64 * 37, 64)), "kv.k+kv.v": ["f16", "q8_0"]}
    whole = memwall.sweep(BASE, grid=grid, progress=False).to_pyarrow()
    shown = memwall.sweep(BASE, grid=grid, progress=True).to_pyarrow()
    assert shown.num_rows == whole.num_rows == 74
    assert shown.equals(whole)
    seen = []
    exp = memwall.parse_experiment(memwall._experiment._experiment_text(BASE, grid, "t"), "t")
    import pyarrow as pa

    assert pa.table(exp.sweep(progress=seen.append)).equals(whole)
    assert all(0 <= x <= 74 for x in seen)


def test_ctrl_c_stops_a_sweep():
    import os
    import signal
    import threading
    import time

    # 16 M points, tens of seconds of work: Ctrl-C must stop the sweep long before its end,
    # within a batch of points (4 × threads × 65,536). What is asserted is how much was done
    # when it stopped, not a time, so a loaded machine cannot fail it.
    grid = {"workload.context_tokens": list(range(1024, 1024 + 4000 * 16, 16)), "workload.batch": list(range(1, 4001))}
    exp = memwall.parse_experiment(memwall._experiment._experiment_text(BASE, grid, "t"), "t")
    done = [0]
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        exp.sweep(progress=lambda n: done.__setitem__(0, n))
    timer.join()
    assert done[0] <= len(exp) // 4, f"{done[0]} of {len(exp)} points were done before the sweep stopped"
    # memwall.sweep stops the same way.
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        memwall.sweep(BASE, grid=grid, progress=False)
    timer.join()
    assert time.perf_counter() - start < 60
    # An exception raised by the progress callback stops it too.

    def fail(done):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        exp.sweep(progress=fail)


def test_the_device_database_is_a_table_and_its_names_are_devices():
    t = memwall.devices()
    assert t.num_rows >= 80 and {"id", "soc", "peak_gbps", "predictable", "why_not", "names", "source"} <= set(t.column_names)
    pis = memwall.devices("raspberry pi 5").to_pylist()
    assert pis and all("raspberry-pi-5" in r["id"] or "Pi 5" in r["names"] for r in pis)
    # A name a user types is a device: the sheet's figures, the rest assumed and listed.
    row = memwall.estimate("llama-3.1-8b", "Framework Desktop 128GB")
    assert row["decode_tok_s"] > 0 and "memory.achievable_fraction" in row["assumed"]
    with pytest.raises(memwall.SpecError):
        memwall.estimate("llama-3.1-8b", "no such phone 9000")


def test_a_device_under_a_power_mode_is_slower_and_draws_less():
    kw = dict(backend="gpu", engine="llama.cpp", assume_defaults=True)
    maxn = memwall.estimate("llama-3.2-3b", "jetson-orin-nano-super-8gb", **kw)
    m15 = memwall.estimate("llama-3.2-3b", "jetson-orin-nano-super-8gb@15W", **kw)
    assert m15["device"] == "jetson-orin-nano-super-8gb@15W"
    assert "power modes @15W, @25W, @MAXN_SUPER" in repr(memwall.Device("jetson-orin-nano-super-8gb"))
    assert "power modes" not in repr(memwall.Device("jetson-orin-nano-super-8gb@25W"))
    # nvpmodel's 15W caps the EMC at 2133 MHz: 68.3 of 102.4 GB/s, and memory binds decode.
    assert m15["decode_tok_s"] < 0.8 * maxn["decode_tok_s"]
    assert m15["prefill_tok_s"] < maxn["prefill_tok_s"]
    with pytest.raises(memwall.SpecError, match="25W"):
        memwall.estimate("llama-3.2-3b", "jetson-orin-nano-super-8gb@25w")
