"""The web page (`memwall ui`) in a real browser: headless Chromium, driven by Selenium, loads
the page `scripts/build-web` built, changes its inputs, and checks every number it shows
against the command line's `--json` for the same design (and its sweep and simulation
against `memwall run` and `memwall simulate`). Screenshots land in target/web-screenshots.

Needs Chromium and its driver (Debian: `chromium chromium-driver`; scripts/test installs them
when it runs as root) and the built page: a missing one fails the suite, never skips it."""

from __future__ import annotations

import json
import math
import pathlib
import re
import shutil
import subprocess
import time
from typing import Any, Iterator

import pyarrow.parquet as pq
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import ROOT

SITE = ROOT / "target" / "web"
SHOTS = ROOT / "target" / "web-screenshots"


def _program(*names: str) -> str:
    for n in names:
        found = shutil.which(n)
        if found:
            return found
    raise AssertionError(f"none of {names} is installed: the browser test needs Chromium and chromedriver "
                         "(Debian: apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def server(memwall_binary: pathlib.Path) -> Iterator[str]:
    assert (SITE / "memwall_web.wasm").is_file(), "the page is not built: run scripts/build-web"
    p = subprocess.Popen([str(memwall_binary), "ui", "--dir", str(SITE), "--port", "0", "--no-open"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:\d+/", line)
    assert m, line
    yield m.group(0)
    p.terminate()
    p.wait(10)


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: pathlib.Path) -> Iterator[webdriver.Chrome]:
    o = webdriver.ChromeOptions()
    o.binary_location = _program("chromium", "chromium-browser", "google-chrome")
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,1000"]:
        o.add_argument(a)
    o.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                        "download.prompt_for_download": False})
    d = webdriver.Chrome(service=Service(_program("chromedriver")), options=o)
    d.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield d
    d.quit()


def _open(d: webdriver.Chrome, url: str) -> None:
    # A blank page first: from the page itself, a new fragment alone would not reload it.
    d.get("about:blank")
    d.get(url)
    WebDriverWait(d, 60).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    assert "did not load" not in d.find_element(By.ID, "status").text


def _answer_when(d: webdriver.Chrome, **state: str) -> dict[str, Any]:
    """The page's answer once its design has these form values."""
    def ready(d: webdriver.Chrome) -> Any:
        a = d.execute_script("return window.memwallAnswer")
        return a if a and all(a["state"].get(k) == v for k, v in state.items()) else None
    a: dict[str, Any] = WebDriverWait(d, 30).until(ready)
    return a


def _set(d: webdriver.Chrome, field: str, value: str) -> None:
    e = d.find_element(By.ID, field)
    if e.tag_name == "select":
        Select(e).select_by_value(value)
    else:
        e.clear()
        e.send_keys(value)


def _close(page: Any, cli: Any, path: str = "") -> None:
    """Equal, floats to 1e-12 relative (the browser's libm may differ from the native one in
    the last bit of a logarithm or power)."""
    if isinstance(cli, float) or isinstance(page, float):
        assert page is not None and math.isclose(page, cli, rel_tol=1e-12, abs_tol=1e-300), f"{path}: page {page}, cli {cli}"
    elif isinstance(cli, dict):
        assert isinstance(page, dict) and page.keys() == cli.keys(), f"{path}: {sorted(page)} vs {sorted(cli)}"
        for k in cli:
            _close(page[k], cli[k], f"{path}.{k}")
    elif isinstance(cli, list):
        assert isinstance(page, list) and len(page) == len(cli), path
        for i, (p, c) in enumerate(zip(page, cli)):
            _close(p, c, f"{path}[{i}]")
    else:
        assert page == cli, f"{path}: page {page!r}, cli {cli!r}"


def _cli_json(binary: pathlib.Path, args: list[str]) -> Any:
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _check_against_cli(binary: pathlib.Path, a: dict[str, Any], model_path: str | None = None) -> None:
    cmd = list(a["command"])
    if model_path:
        cmd[cmd.index("--model") + 1] = model_path
    _close(a["estimate"], _cli_json(binary, cmd))
    # `footprint` takes the same design flags but no depths.
    fp = ["footprint", *cmd[1:]]
    i = fp.index("--depths")
    del fp[i:i + 2]
    _close(a["footprint"], _cli_json(binary, fp))


def test_the_numbers_shown_are_the_command_lines(browser: webdriver.Chrome, server: str,
                                                 memwall_binary: pathlib.Path) -> None:
    d = browser
    _open(d, server)
    a = _answer_when(d, model="qwen3-4b", device="Pixel 8")
    _check_against_cli(memwall_binary, a)
    e = a["estimate"]["estimate"]
    assert d.find_element(By.ID, "decode").text == f"{e['decode_tok_s']:.1f} tok/s"
    lo, hi = e["decode_tok_s_interval"]
    assert f"{lo:.1f} to {hi:.1f}" in d.find_element(By.ID, "decode-band").text
    assert d.find_element(By.ID, "prefill").text == f"{e['prefill_tok_s']:.1f} tok/s"
    assert ("fits" if a["footprint"]["fits"] else "does not fit") in d.find_element(By.ID, "headline").text
    # Charts drawn: nine depths, six time terms, the stacked footprint.
    assert len(d.find_elements(By.CSS_SELECTOR, "#depth-chart circle")) == len(a["estimate"]["depths"]) == 9
    assert len(d.find_elements(By.CSS_SELECTOR, "#terms-chart rect")) == 6
    d.save_screenshot(str(SHOTS / "design.png"))

    # Another design: model, device by its SoC's chip id, formats, context, unit.
    _set(d, "model", "llama-3.2-3b")
    _set(d, "device", "snapdragon-8-gen3-12gb")
    _set(d, "weights", "Q8_0")
    _set(d, "kv_k", "q8_0")
    _set(d, "kv_v", "q4_0")
    _set(d, "context", "8192")
    _set(d, "margin_gb", "1.5")
    a = _answer_when(d, model="llama-3.2-3b", device="snapdragon-8-gen3-12gb", weights="Q8_0", kv_v="q4_0",
                     context="8192", margin_gb="1.5")
    assert a["estimate"]["design"]["kv_v"] == "q4_0"
    _check_against_cli(memwall_binary, a)
    _set(d, "backend", "gpu")
    d.find_element(By.ID, "assume_defaults").click()
    a = _answer_when(d, backend="gpu", assume_defaults="1")
    assert a["estimate"]["design"]["backend"] == "gpu"
    _check_against_cli(memwall_binary, a)

    # The state is in the URL: opened afresh, the page shows the same design and numbers.
    url = d.current_url
    assert "context=8192" in url and "kv_v=q4_0" in url and "backend=gpu" in url
    _open(d, url)
    again = _answer_when(d, backend="gpu", context="8192")
    _close(again["estimate"], a["estimate"])
    assert Select(d.find_element(By.ID, "weights")).first_selected_option.get_attribute("value") == "Q8_0"


def test_bad_input_says_which_field(browser: webdriver.Chrome, server: str) -> None:
    d = browser
    _open(d, server + "#model=qwen3-4b&device=Pixel+8&context=100")
    err = d.find_element(By.ID, "error")
    WebDriverWait(d, 20).until(lambda d: err.is_displayed())
    assert "context" in err.text and "100" in err.text, err.text
    assert "stale" in (d.find_element(By.ID, "answer").get_attribute("class") or "")
    d.save_screenshot(str(SHOTS / "error.png"))
    _set(d, "context", "4096")
    _answer_when(d, context="4096")
    WebDriverWait(d, 20).until(lambda d: not err.is_displayed())
    _set(d, "device", "pixl-8")
    WebDriverWait(d, 20).until(lambda d: "Pixel 8" in err.text)


def test_designs_side_by_side(browser: webdriver.Chrome, server: str) -> None:
    d = browser
    _open(d, server + "#model=qwen3-4b&device=Pixel+8&weights=Q4_K_M")
    a1 = _answer_when(d, weights="Q4_K_M")
    d.find_element(By.ID, "compare-add").click()
    _set(d, "weights", "Q2_K")
    a2 = _answer_when(d, weights="Q2_K")
    d.find_element(By.ID, "compare-add").click()
    rows = d.find_elements(By.CSS_SELECTOR, "#compare tbody tr")
    assert len(rows) == 2
    head = [th.text for th in d.find_elements(By.CSS_SELECTOR, "#compare thead th")]
    col = head.index("decode_tok_s")
    for row, a in zip(rows, [a1, a2]):
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert float(cells[col]) == round(a["estimate"]["estimate"]["decode_tok_s"], 2)
    # The comparison is in the URL too.
    assert d.current_url.count("cmp=") == 2


def test_sweep_front_and_downloads(browser: webdriver.Chrome, server: str, memwall_binary: pathlib.Path,
                                   downloads: pathlib.Path, tmp_path: pathlib.Path) -> None:
    d = browser
    _open(d, server + "#model=qwen3-4b&device=Pixel+8")
    _answer_when(d, model="qwen3-4b")
    d.find_element(By.ID, "sweep-run").click()
    s = WebDriverWait(d, 60).until(lambda d: d.execute_script("return window.memwallSweep"))
    page = s["table"]["data"]
    # The same experiment through `memwall run`.
    exp = tmp_path / "page-sweep.toml"
    exp.write_text(s["experiment"])
    out = tmp_path / "cli.parquet"
    r = subprocess.run([str(memwall_binary), "run", str(exp), "--out", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    cli = pq.read_table(out).to_pydict()
    assert len(page["point"]) == len(cli["point"]) == 27
    for c in ["decode_tok_s", "total_bytes", "fits", "pareto", "ppl_delta_weights", "weights.mix"]:
        _close(page[c], cli[c], c)
    circles = d.find_elements(By.CSS_SELECTOR, "#sweep-chart circle")
    assert len(circles) == 27 + sum(page["pareto"]), "a point each, a ring per front member"
    d.find_element(By.CSS_SELECTOR, "[data-download=sweep-parquet]").click()
    d.find_element(By.CSS_SELECTOR, "[data-download=sweep-csv]").click()
    parquet, csv = downloads / "sweep.parquet", downloads / "sweep.csv"
    deadline = time.time() + 30
    while not (parquet.is_file() and csv.is_file()) and time.time() < deadline:
        time.sleep(0.2)
    t = pq.read_table(parquet)
    assert t.num_rows == 27 and b"experiment_toml" in t.schema.metadata
    _close(t.column("decode_tok_s").to_pylist(), cli["decode_tok_s"])
    lines = csv.read_text().splitlines()
    assert len(lines) == 28 and lines[0].startswith("point,model,device")


def test_sustained_timeline(browser: webdriver.Chrome, server: str, memwall_binary: pathlib.Path,
                            tmp_path: pathlib.Path) -> None:
    d = browser
    d.set_window_size(1300, 3000)
    _open(d, server + "#model=qwen3-4b&device=Pixel+8")
    _answer_when(d, model="qwen3-4b")
    d.find_element(By.ID, "sweep-run").click()
    _set(d, "sim-minutes", "100")
    d.find_element(By.ID, "sim-run").click()
    assert "`minutes` = 100" in d.find_element(By.ID, "sim-error").text
    assert not d.find_element(By.ID, "error").is_displayed(), "the design's answer stands"
    _set(d, "sim-minutes", "1")
    d.find_element(By.ID, "sim-run").click()
    sim = WebDriverWait(d, 120).until(lambda d: d.execute_script("return window.memwallSimulation"))
    exp = tmp_path / "page-sustained.toml"
    exp.write_text(sim["experiment"])
    out = tmp_path / "summary.parquet"
    r = subprocess.run([str(memwall_binary), "simulate", str(exp), "--summary", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    cli = pq.read_table(out).to_pydict()
    for c in ["decode_tok_s", "sustained_tok_s", "max_die_c", "energy_j"]:
        _close(sim["summary"]["data"][c], cli[c], c)
    assert len(d.find_elements(By.CSS_SELECTOR, "#sim-chart svg")) == 3
    assert not d.find_element(By.ID, "sim-error").is_displayed()
    assert "sustained_tok_s" in d.find_element(By.ID, "sim-summary").text
    d.save_screenshot(str(SHOTS / "sweep-and-simulation.png"))
    d.set_window_size(1300, 1000)


def test_a_dropped_config_json(browser: webdriver.Chrome, server: str, memwall_binary: pathlib.Path,
                               tmp_path: pathlib.Path) -> None:
    d = browser
    _open(d, server + "#model=qwen3-4b&device=Pixel+8")
    _answer_when(d, model="qwen3-4b")
    other = tmp_path / "weights.bin"
    other.write_bytes(b"\0" * 16)
    d.find_element(By.ID, "file").send_keys(str(other))
    WebDriverWait(d, 20).until(lambda d: "weights.bin" in d.find_element(By.ID, "error").text)
    f = tmp_path / "qwen3-0.6b.json"
    shutil.copy(ROOT / "tests" / "fixtures" / "hf" / "qwen3-0.6b.json", f)
    d.find_element(By.ID, "file").send_keys(str(f))
    a = _answer_when(d, imported="qwen3-0.6b.json")
    assert "28 layers" in d.find_element(By.ID, "imported").text
    assert a["estimate"]["design"]["model"] == "qwen3-0.6b"
    _check_against_cli(memwall_binary, a, model_path=str(f))
    # Its sweep takes the imported shapes (inline in the experiment).
    d.find_element(By.ID, "sweep-run").click()
    s = WebDriverWait(d, 60).until(lambda d: d.execute_script("return window.memwallSweep"))
    assert set(s["table"]["data"]["model"]) == {"qwen3-0.6b"} and len(s["table"]["data"]["point"]) == 27


def test_a_dropped_gguf_header(browser: webdriver.Chrome, server: str, memwall_binary: pathlib.Path,
                               tmp_path: pathlib.Path) -> None:
    """A GGUF file's header, read in the browser: the file's own tensor types and bytes, as
    `memwall estimate --model FILE.gguf --weights stored` reads them."""
    from test_gguf_import import write_model

    d = browser
    f = tmp_path / "tiny-llama.gguf"
    write_model(f, "llama")
    _open(d, server + "#model=qwen3-4b&device=Pixel+8")
    _answer_when(d, model="qwen3-4b")
    d.find_element(By.ID, "file").send_keys(str(f))
    a = _answer_when(d, imported="tiny-llama.gguf", weights="stored")
    assert "file type" in d.find_element(By.ID, "imported").text
    assert a["estimate"]["design"]["weights"] == "stored"
    _check_against_cli(memwall_binary, a, model_path=str(f))
    d.find_element(By.ID, "sim-run").click()
    sim = WebDriverWait(d, 120).until(lambda d: d.execute_script("return window.memwallSimulation"))
    assert sim["summary"]["data"]["model"] == ["tiny-llama"]
