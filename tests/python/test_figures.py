"""Figures from Python: `memwall.plot_sweep` draws the figure `memwall run --plot` draws (the
same SVG, byte for byte, for the same rows and title), as PDF, SVG or PNG, refusing bad sizes,
unknown formats and paths it must not write."""

import struct
import subprocess

import pytest

import memwall


EXPERIMENT = """
name = "fig"
[base]
model = "qwen3-4b"
device = "pixel-8"
weights = { mix = "Q4_K_M" }
[grid]
"weights.mix" = ["Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M", "Q2_K", "IQ4_XS"]
"kv.k+kv.v" = ["f16", "q8_0", "q4_0"]
"workload.context_tokens" = [4096, 32768]
"""


def test_the_sweep_figure_is_the_command_lines(tmp_path, memwall_binary):
    exp = tmp_path / "fig.toml"
    exp.write_text(EXPERIMENT)
    cli = tmp_path / "cli.svg"
    subprocess.run(
        [str(memwall_binary), "run", str(exp), "--out", str(tmp_path / "fig.parquet"),
         "--plot", str(cli)],
        check=True, capture_output=True,
    )
    r = memwall.sweep(exp)
    py = tmp_path / "py.svg"
    assert memwall.plot_sweep(r, py, title="fig: memory vs decode rate, 36 designs") == str(py)
    assert py.read_text() == cli.read_text()
    text = py.read_text()
    assert "Pareto front" in text and "budget" in text and "#" in text


def test_pdf_svg_and_png_at_the_size_asked(tmp_path):
    r = memwall.sweep(
        memwall.design("qwen3-0.6b", "raspberry-pi-5-16gb"), grid={"workload.context_tokens": [1024, 8192, 65536]}
    )
    pdf = tmp_path / "s.pdf"
    memwall.plot_sweep(r, pdf, size=(640, 480))
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-1.4") and data.rstrip().endswith(b"%%EOF")
    assert b"/MediaBox [0 0 640 480]" in data and b"/FontFile2" in data and b"/ToUnicode" in data
    png = tmp_path / "s.png"
    memwall.plot_sweep(r.to_pyarrow(), png, size=(800, 600))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png.read_bytes()[16:24]) == (800, 600)


@pytest.mark.parametrize(
    "name,size,field",
    [("s.jpg", (800, 600), "--plot"), ("s.svg", (10, 600), "size"), ("s.svg", (800,), "size")],
)
def test_bad_figures_are_refused_and_nothing_written(tmp_path, name, size, field):
    r = memwall.sweep(memwall.design("qwen3-0.6b", "raspberry-pi-5-16gb"))
    with pytest.raises(memwall.MemwallError) as e:
        memwall.plot_sweep(r, tmp_path / name, size=size)
    assert field in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_never_a_figure(tmp_path):
    r = memwall.sweep(memwall.design("qwen3-0.6b", "raspberry-pi-5-16gb"))
    d = tmp_path / "fig.svg"
    d.mkdir()
    with pytest.raises(memwall.MemwallError):
        memwall.plot_sweep(r, d)
    assert d.is_dir() and list(d.iterdir()) == []


SIMULATION = """
name = "sim-fig"
seed = 5
[base]
model = "llama-3.2-1b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[base.sim]
duration_s = 30
[base.sim.session]
turns = [{ prompt_tokens = 64, gen_tokens = 128, think_s = 4 }]
repeat = 0
[[base.sim.background]]
type = "bandwidth"
at_s = 5
duration_s = 6
share = 0.4
[grid]
"weights.mix" = ["Q4_K_M", "Q8_0"]
"""


def test_the_simulation_figure_is_the_command_lines(tmp_path, memwall_binary):
    exp = tmp_path / "sim.toml"
    exp.write_text(SIMULATION)
    cli = tmp_path / "cli.svg"
    subprocess.run([str(memwall_binary), "simulate", str(exp), "--plot", str(cli)], check=True,
                   capture_output=True)
    py = tmp_path / "py.svg"
    sim = memwall.simulate(exp, plot=py, trace=False)
    assert len(sim.summary) == 2
    assert py.read_text() == cli.read_text()
    assert "bus master" in py.read_text() and "weights.mix=Q8_0" in py.read_text()
    pdf = tmp_path / "sim.pdf"
    memwall.simulate(exp, plot=pdf, plot_size=(900, 700), trace=False)
    assert b"/MediaBox [0 0 900 700]" in pdf.read_bytes()
    # Checked before the run: a bad size or format leaves nothing behind.
    for kwargs in ({"plot": tmp_path / "x.gif"}, {"plot": tmp_path / "y.svg", "plot_size": (10, 10)}):
        with pytest.raises(memwall.MemwallError):
            memwall.simulate(exp, trace=False, **kwargs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.svg", "py.svg", "sim.pdf", "sim.toml"]
