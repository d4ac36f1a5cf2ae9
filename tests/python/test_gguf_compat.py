"""Cross-implementation check of memwall's GGUF block formats against the `gguf` Python
package (llama.cpp's gguf-py): our blocks dequantized by `gguf.quants` equal our own
dequantization bit for bit, and where gguf-py can quantize, its blocks equal ours byte for
byte.
"""

import pathlib
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import quants

ROOT = pathlib.Path(__file__).resolve().parents[2]

# ggml types memwall supports, by the names memwall writes its fixtures under.
DEQUANTIZE = ["f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "mxfp4",
              "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "tq1_0", "tq2_0"]
# Types gguf-py can quantize (its reference implementations mirror ggml's).
QUANTIZE = ["bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "tq1_0", "tq2_0", "mxfp4"]


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf_fixtures")
    subprocess.run(
        ["cargo", "run", "-q", "-p", "memwall-kernels", "--example", "gguf_fixtures", "--", str(out)],
        cwd=ROOT, check=True,
    )
    return out


def qtype(name):
    return Q[name.upper()]


def load(fixtures, name):
    x = np.fromfile(fixtures / f"{name}.in.f32", dtype=np.float32)
    q = np.fromfile(fixtures / f"{name}.q", dtype=np.uint8)
    y = np.fromfile(fixtures / f"{name}.out.f32", dtype=np.float32)
    return x, q, y


@pytest.mark.parametrize("name", DEQUANTIZE)
def test_gguf_dequantizes_our_blocks_bit_for_bit(fixtures, name):
    x, q, ours = load(fixtures, name)
    rows = 64
    theirs = quants.dequantize(q.reshape(rows, -1), qtype(name)).astype(np.float32).reshape(-1)
    assert theirs.shape == ours.shape
    mismatch = np.flatnonzero(theirs.view(np.uint32) != ours.view(np.uint32))
    assert mismatch.size == 0, f"{name}: {mismatch.size} values differ, first at {mismatch[:5]}"


@pytest.mark.parametrize("name", QUANTIZE)
def test_gguf_quantizes_to_our_bytes(fixtures, name):
    x, ours, _ = load(fixtures, name)
    theirs = quants.quantize(x.reshape(64, -1), qtype(name)).reshape(-1)
    assert theirs.shape == ours.shape
    bad = np.flatnonzero(theirs != ours)
    assert bad.size == 0, f"{name}: {bad.size} bytes differ, first at {bad[:5]}"
