#!/usr/bin/env python3
"""Compare llama.cpp's decode speed on this host with memwall's prediction and memwall's engine.

Run by hand from anywhere (it finds the repository root itself):

    python3 scripts/bench/llamacpp/compare.py

Steps (see scripts/bench/llamacpp/README.md):
  1. create a virtual environment (default .venv-bench at the repository root) and install
     llama-cpp-python (built from source, CPU only), gguf and numpy into it, unless present;
  2. write random-weight GGUF models in F16 with the llama SPM tokenizer vendored by
     llama.cpp (TinyLlama-1.1B shapes and a small llama-architecture MoE), then quantize
     them with llama.cpp's own quantizer to Q8_0, Q4_0, Q4_K_M and Q2_K (cached);
  3. time llama.cpp's decode through its low-level C API (llama_decode, greedy argmax);
  4. beside each measurement, run `memwall estimate` with the llama.cpp CPU engine profile on
     the calibrated host profile, and `memwall decode` (memwall's own engine) on the same shapes;
  5. print one table and write a CSV;
  6. kernels: build ggml_gemv.c (beside this file) against the libggml of the same build and
     the headers of the same source distribution, and time, per weight format on one thread,
     ggml's CPU dot product over a matrix at cache size and at DRAM size against
     memwall-bench-kernels on the same sizes, alternating the two in rounds (medians), with
     memwall's ratio to the read probe at DRAM size; a second table and CSV.

This file is run with any Python 3.9+; the steps that need llama_cpp, gguf or numpy re-run
this file with the virtual environment's interpreter (hidden `_worker` sub-commands), one
process per model file and measurement, so a crash in llama.cpp loses one row, not the run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent

DEFAULT_LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
# CPU-only build: no GPU back end, no BLAS, the host's own ISA (AVX2/AVX-512 where present).
CMAKE_ARGS = (
    "-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_HIP=OFF -DGGML_SYCL=OFF "
    "-DGGML_OPENCL=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF "
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF"
)
# On x86, AMX is compiled out even where the CPU reports it: ggml's AMX path (used for Q4_0 and
# Q8_0 weights) faults on virtual machines whose CPUID lists AMX but whose kernel does not
# enable the tile state (the development machine: SIGSEGV on `ldtilecfg`). GCC and Clang let an
# explicit -mno-* win over the -march=native that ggml adds, whatever the order.
X86_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# Written into the virtual environment after a build; an install is skipped only when it
# matches, so a change of build flags rebuilds.
BUILD_MARKER = ".llamacpp-bench-build"
VOCAB_IN_SDIST = "vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf"
VOCAB_FILE = "ggml-vocab-llama-spm.gguf"

FORMATS = ["Q8_0", "Q4_0", "Q4_K_M", "Q2_K"]
# llama.cpp's ftype constant for each format (llama_cpp.LLAMA_FTYPE_MOSTLY_*).
FTYPE_NAME = {
    "F16": "LLAMA_FTYPE_MOSTLY_F16",
    "Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0",
    "Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
    "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "Q2_K": "LLAMA_FTYPE_MOSTLY_Q2_K",
}

# The benchmark models. `memwall` is the preset name, or None to pass the TOML written from
# these shapes (file name `<key>.toml` in the model directory).
MODELS = {
    "tinyllama": {
        "name": "tinyllama-1.1b-random",
        "memwall": "tinyllama-1.1b",
        "n_layers": 22,
        "hidden": 2048,
        "n_heads": 32,
        "n_kv_heads": 4,
        "head_dim": 64,
        "ffn": 5632,
        "vocab": 32000,
        "rope_theta": 10000.0,
        "rms_eps": 1e-5,
        "max_context": 2048,
        "moe": None,
    },
    "moe": {
        "name": "moe-8x1408-top2-random",
        "memwall": None,
        "n_layers": 8,
        "hidden": 1024,
        "n_heads": 16,
        "n_kv_heads": 4,
        "head_dim": 64,
        "ffn": 1408,
        "vocab": 32000,
        "rope_theta": 10000.0,
        "rms_eps": 1e-5,
        "max_context": 4096,
        # Every layer routed: 8 experts, top-2, no shared expert (Mixtral's layout, small).
        "moe": {"n_experts": 8, "top_k": 2, "expert_ffn": 1408},
    },
}

# A short English prompt; tokenized with the model's SPM vocabulary. The ids are the
# fallback should tokenization through the C API fail ("<s> The quick brown fox jumps over").
PROMPT_TEXT = "The quick brown fox jumps over the lazy dog"
PROMPT_FALLBACK_IDS = [1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203]


def log(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------------------------
# Virtual environment and installation (stdlib only)
# --------------------------------------------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def have_packages(py: Path) -> bool:
    if not py.exists():
        return False
    r = subprocess.run(
        [str(py), "-c", "import llama_cpp, gguf, numpy"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return r.returncode == 0


def find_sdist(sdist_dir: Path) -> Path | None:
    if not sdist_dir.is_dir():
        return None
    found = sorted(sdist_dir.glob("llama_cpp_python-*.tar.gz")) + sorted(
        sdist_dir.glob("llama-cpp-python-*.tar.gz")
    )
    return found[-1] if found else None


def download_sdist(py: Path, spec: str, sdist_dir: Path) -> Path:
    """llama-cpp-python's source distribution: the build input and the vocabulary's source."""
    have = find_sdist(sdist_dir)
    if have is not None:
        return have
    sdist_dir.mkdir(parents=True, exist_ok=True)
    log(f"downloading the source distribution of {spec} ...")
    subprocess.run(
        # --no-binary for this package only: its build back end's own dependencies (cmake)
        # come as wheels, as they would for `pip install`.
        [str(py), "-m", "pip", "download", "--no-binary", "llama-cpp-python", "--no-deps",
         "-d", str(sdist_dir), spec],
        check=True,
    )
    got = find_sdist(sdist_dir)
    if got is None:
        sys.exit(f"error: pip download left no llama-cpp-python sdist in {sdist_dir}")
    return got


def build_env() -> tuple[dict, str]:
    env = dict(os.environ)
    env["CMAKE_ARGS"] = CMAKE_ARGS
    env["FORCE_CMAKE"] = "1"
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    if platform.machine().lower() in ("x86_64", "amd64", "i686", "i386"):
        for var in ("CFLAGS", "CXXFLAGS"):
            env[var] = (env.get(var, "") + " " + X86_NO_AMX).strip()
    desc = json.dumps({k: env.get(k, "") for k in ("CMAKE_ARGS", "CFLAGS", "CXXFLAGS")},
                      sort_keys=True)
    return env, desc


def ensure_venv(venv: Path, spec: str, model_dir: Path, skip_install: bool) -> Path:
    py = venv_python(venv)
    env, desc = build_env()
    marker = venv / BUILD_MARKER
    built = marker.read_text() if marker.exists() else None
    if have_packages(py) and (skip_install or built == spec + "\n" + desc):
        log(f"packages present in {venv}, install skipped")
        return py
    if skip_install:
        sys.exit(f"error: --skip-install given but {venv} lacks llama_cpp, gguf or numpy")
    t0 = time.time()
    if not py.exists():
        log(f"creating the virtual environment {venv} ...")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        (venv / ".gitignore").write_text("*\n")  # never committed
    subprocess.run([str(py), "-m", "pip", "install", "--upgrade", "pip"], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "numpy", "gguf"], check=True)
    sdist = download_sdist(py, spec, model_dir / "sdist")
    log(f"building llama-cpp-python from {sdist.name} (CPU only; several minutes) ...")
    t1 = time.time()
    subprocess.run(
        [str(py), "-m", "pip", "install", "--force-reinstall", "--no-cache-dir", str(sdist)],
        check=True,
        env=env,
    )
    if not have_packages(py):
        sys.exit("error: the install finished but llama_cpp, gguf or numpy cannot be imported")
    marker.write_text(spec + "\n" + desc)
    log(f"llama-cpp-python built in {time.time() - t1:.0f} s")
    log(f"install done in {time.time() - t0:.0f} s")
    return py


def ensure_vocab(py: Path, spec: str, model_dir: Path) -> Path:
    vocab = model_dir / VOCAB_FILE
    if vocab.exists():
        return vocab
    sdist = download_sdist(py, spec, model_dir / "sdist")
    with tarfile.open(sdist) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith("/" + VOCAB_IN_SDIST)),
                      None)
        if member is None:
            sys.exit(f"error: {sdist.name} has no {VOCAB_IN_SDIST}")
        src = tar.extractfile(member)
        tmp = vocab.with_suffix(".part")
        with open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
        tmp.replace(vocab)
    log(f"tokenizer: {VOCAB_IN_SDIST} from {sdist.name}")
    return vocab


# --------------------------------------------------------------------------------------------
# Kernels against ggml's CPU backend
# --------------------------------------------------------------------------------------------

GGML_INCLUDE_IN_SDIST = "vendor/llama.cpp/ggml/include/"
KERNEL_FORMATS = ["f16", "bf16", "q8_0", "q6_K", "q5_K", "q4_K", "q4_0", "iq4_nl", "q3_K", "q2_K",
                  "tq2_0", "tq1_0"]


def ensure_ggml_gemv(py: Path, spec: str, model_dir: Path) -> Path:
    """ggml_gemv.c built against the venv's libggml and the sdist's ggml headers (cached by
    the source's and the library's identity)."""
    lib = Path(subprocess.run([str(py), "-c", "import llama_cpp, os; print(os.path.dirname(llama_cpp.__file__))"],
                              capture_output=True, text=True, check=True).stdout.strip()) / "lib"
    if not (lib / "libggml-cpu.so").exists():
        sys.exit(f"error: no libggml-cpu.so in {lib}")
    src = HERE / "ggml_gemv.c"
    inc = model_dir / "ggml-include"
    if not (inc / "ggml-cpu.h").exists():
        sdist = download_sdist(py, spec, model_dir / "sdist")
        inc.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as tar:
            for m in tar.getmembers():
                i = m.name.find(GGML_INCLUDE_IN_SDIST)
                if i >= 0 and m.isfile() and m.name.endswith(".h"):
                    with open(inc / Path(m.name).name, "wb") as out:
                        shutil.copyfileobj(tar.extractfile(m), out)
    out = model_dir / "ggml_gemv"
    stamp = f"{src.stat().st_mtime_ns} {(lib / 'libggml-cpu.so').stat().st_mtime_ns}"
    marker = model_dir / "ggml_gemv.built"
    if out.exists() and marker.exists() and marker.read_text() == stamp:
        return out
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        sys.exit("error: no C compiler (cc, gcc or clang) to build ggml_gemv.c")
    subprocess.run([cc, "-O2", "-std=c11", f"-I{inc}", str(src), f"-L{lib}", "-lggml-base", "-lggml-cpu",
                    f"-Wl,-rpath,{lib}", "-o", str(out)], check=True)
    marker.write_text(stamp)
    return out


def ggml_gbps(exe: Path, fmt_name: str, nbytes: int, reps: int) -> float | None:
    r = subprocess.run([str(exe), fmt_name, str(nbytes), str(reps)], capture_output=True, text=True)
    if r.returncode != 0:
        log(f"  ggml {fmt_name}: {r.stderr.strip()}")
        return None
    return float(r.stdout.split()[2])


_BEST_ISA: dict[str, str] = {}


def best_isa(exe: Path) -> str:
    """The fastest SIMD path memwall-bench-kernels picks on this CPU (its header line)."""
    if str(exe) not in _BEST_ISA:
        r = subprocess.run([str(exe), "--formats", "q8_0", "--reps", "1", "--no-attention",
                            "--cache-kib", "64", "--dram-mib", "1", "--isas", "scalar"],
                           capture_output=True, text=True)
        m = re.search(r"ISA (\S+)", r.stdout)
        if m is None:
            sys.exit(f"error: {exe} printed no ISA line:\n{r.stdout[-400:]}{r.stderr[-400:]}")
        _BEST_ISA[str(exe)] = m.group(1)
    return _BEST_ISA[str(exe)]


def memwall_kernel_gbps(exe: Path, fmt_name: str, cache_kib: int, dram_mib: int, reps: int) -> dict | None:
    """One memwall-bench-kernels run of one format on its best path: one-thread GB/s at cache
    and DRAM size, and the DRAM ratio to the read probe."""
    isa = best_isa(exe)
    r = subprocess.run([str(exe), "--formats", fmt_name, "--reps", str(reps), "--no-attention",
                        "--isas", isa, "--cache-kib", str(cache_kib), "--dram-mib", str(dram_mib)],
                       capture_output=True, text=True)
    got = {}
    for line in r.stdout.splitlines():
        f = line.split()
        # format isa label size 1t-GB/s 1t-GFLOP/s 1t-ratio nt-GB/s nt-GFLOP/s nt-ratio [binds]
        if (len(f) >= 10 and f[0].lower() == fmt_name.lower() and f[2] in ("cache", "dram")
                and f[2] not in got):
            got[f[2]] = {"isa": f[1], "gbps": float(f[4]), "ratio": float(f[6])}
    if set(got) != {"cache", "dram"}:
        log(f"  memwall-bench-kernels {fmt_name}: no result\n    " + (r.stdout + r.stderr)[-600:])
        return None
    return {"isa": got["cache"]["isa"], "cache": got["cache"]["gbps"], "dram": got["dram"]["gbps"],
            "dram_vs_read": got["dram"]["ratio"]}


def compare_kernels(py: Path, spec: str, model_dir: Path, bench: Path, formats: list[str], rounds: int,
                    cache_kib: int, dram_mib: int, out_csv: Path) -> None:
    exe = ensure_ggml_gemv(py, spec, model_dir)
    rows = []
    for f in formats:
        mw, gc, gd = [], [], []
        for _ in range(rounds):
            # Alternate the two programs within a round: a drift of the machine falls on both.
            gc.append(ggml_gbps(exe, f, cache_kib << 10, 200))
            m = memwall_kernel_gbps(bench, f, cache_kib, dram_mib, 3)
            gd.append(ggml_gbps(exe, f, dram_mib << 20, 3))
            if m is not None:
                mw.append(m)
        gc = [x for x in gc if x is not None]
        gd = [x for x in gd if x is not None]
        med = statistics.median
        row = {
            "format": f,
            "memwall_isa": mw[0]["isa"] if mw else "",
            "memwall_cache_gbps": med([m["cache"] for m in mw]) if mw else None,
            "ggml_cache_gbps": med(gc) if gc else None,
            "memwall_dram_gbps": med([m["dram"] for m in mw]) if mw else None,
            "ggml_dram_gbps": med(gd) if gd else None,
            "memwall_dram_vs_read": med([m["dram_vs_read"] for m in mw]) if mw else None,
        }
        for size in ("cache", "dram"):
            a, b = row[f"memwall_{size}_gbps"], row[f"ggml_{size}_gbps"]
            row[f"{size}_ratio"] = a / b if a is not None and b else None
        rows.append(row)
        log(f"kernels {f}: cache memwall {fmt(row['memwall_cache_gbps'], '.2f')} ggml "
            f"{fmt(row['ggml_cache_gbps'], '.2f')} GB/s; DRAM memwall {fmt(row['memwall_dram_gbps'], '.2f')} "
            f"ggml {fmt(row['ggml_dram_gbps'], '.2f')} GB/s")
    header = ["format", "memwall path", "cache: memwall GB/s", "ggml GB/s", "memwall / ggml",
              "DRAM: memwall GB/s", "ggml GB/s", "memwall / ggml", "memwall / read probe"]
    log("")
    log(f"kernels, one thread, {rounds} alternating rounds (medians); cache {cache_kib} KiB, DRAM {dram_mib} MiB; "
        "ggml: vec_dot per row in its plain layout")
    log_table(header, [[r["format"], r["memwall_isa"], fmt(r["memwall_cache_gbps"], ".2f"),
                        fmt(r["ggml_cache_gbps"], ".2f"), fmt(r["cache_ratio"], ".2f"),
                        fmt(r["memwall_dram_gbps"], ".2f"), fmt(r["ggml_dram_gbps"], ".2f"),
                        fmt(r["dram_ratio"], ".2f"), fmt(r["memwall_dram_vs_read"], ".2f")] for r in rows])
    cache = [r["cache_ratio"] for r in rows if r["cache_ratio"] is not None]
    probe = [r["memwall_dram_vs_read"] for r in rows if r["memwall_dram_vs_read"] is not None]
    if cache:
        log(f"cache size: memwall / ggml median {statistics.median(cache):.2f}, min {min(cache):.2f}, "
            f"{sum(x >= 1.2 for x in cache)}/{len(cache)} at 1.2 or more (target: all)")
    if probe:
        log(f"DRAM size: memwall / read probe median {statistics.median(probe):.2f}, min {min(probe):.2f}, "
            f"{sum(x >= 0.9 for x in probe)}/{len(probe)} at 0.9 or more (target: all)")
    write_csv(out_csv, rows)
    log(f"wrote {out_csv} ({len(rows)} rows)")


def log_table(header: list[str], lines: list[list[str]]) -> None:
    """Print a Markdown table."""
    log("| " + " | ".join(header) + " |")
    log("| " + " | ".join("---" for _ in header) + " |")
    for line in lines:
        log("| " + " | ".join(line) + " |")


def write_csv(out: Path, rows: list[dict]) -> None:
    """Write `rows` to `out` through a temporary file renamed into place."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".part")
    with os.fdopen(fd, "w", newline="") as fh:
        fields = list(rows[0].keys()) if rows else ["model"]
        wr = csv.DictWriter(fh, fieldnames=fields)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: ("" if v is None else (f"{v:.4f}" if isinstance(v, float) else v))
                         for k, v in r.items()})
    os.replace(tmp, out)


# --------------------------------------------------------------------------------------------
# Workers (run with the virtual environment's interpreter)
# --------------------------------------------------------------------------------------------


def worker_write(args: argparse.Namespace) -> None:
    """Write one random-weight F16 llama GGUF with the tokenizer of `args.vocab`."""
    import gguf
    import numpy as np

    m = MODELS[args.model]
    rng = np.random.default_rng(args.seed)
    reader = gguf.GGUFReader(args.vocab)
    tmp = args.out + ".part"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name(m["name"])
    w.add_file_type(1)  # LLAMA_FTYPE_MOSTLY_F16
    w.add_context_length(m["max_context"])
    w.add_embedding_length(m["hidden"])
    w.add_block_count(m["n_layers"])
    w.add_feed_forward_length(m["ffn"])
    w.add_head_count(m["n_heads"])
    w.add_head_count_kv(m["n_kv_heads"])
    w.add_rope_dimension_count(m["head_dim"])
    w.add_rope_freq_base(m["rope_theta"])
    w.add_layer_norm_rms_eps(m["rms_eps"])
    w.add_vocab_size(m["vocab"])
    if m["moe"]:
        w.add_expert_count(m["moe"]["n_experts"])
        w.add_expert_used_count(m["moe"]["top_k"])

    # The tokenizer: every tokenizer.* key of the vendored llama SPM vocabulary.
    n_tok = None
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value = field.contents()
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(name, value, vtype, sub_type=field.types[-1])
            if name == "tokenizer.ggml.tokens":
                n_tok = len(value)
        else:
            w.add_key_value(name, value, vtype)
    if n_tok != m["vocab"]:
        sys.exit(f"error: the vocabulary has {n_tok} tokens, the model {m['vocab']}")

    h, hd = m["hidden"], m["head_dim"]
    q_dim, kv_dim = m["n_heads"] * hd, m["n_kv_heads"] * hd

    def mat(*shape: int) -> "np.ndarray":
        # numpy shape (rows = outputs, cols = inputs); GGUF stores it reversed (ne0 = inputs).
        a = rng.standard_normal(size=shape, dtype=np.float32)
        a *= 0.02
        return a.astype(np.float16)

    def ones(n: int) -> "np.ndarray":
        return np.ones(n, dtype=np.float32)

    w.add_tensor("token_embd.weight", mat(m["vocab"], h))
    for i in range(m["n_layers"]):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", ones(h))
        w.add_tensor(b + "attn_q.weight", mat(q_dim, h))
        w.add_tensor(b + "attn_k.weight", mat(kv_dim, h))
        w.add_tensor(b + "attn_v.weight", mat(kv_dim, h))
        w.add_tensor(b + "attn_output.weight", mat(h, q_dim))
        w.add_tensor(b + "ffn_norm.weight", ones(h))
        if m["moe"]:
            e, f = m["moe"]["n_experts"], m["moe"]["expert_ffn"]
            w.add_tensor(b + "ffn_gate_inp.weight",
                         (rng.standard_normal(size=(e, h), dtype=np.float32) * 0.02))
            w.add_tensor(b + "ffn_gate_exps.weight", mat(e, f, h))
            w.add_tensor(b + "ffn_up_exps.weight", mat(e, f, h))
            w.add_tensor(b + "ffn_down_exps.weight", mat(e, h, f))
        else:
            f = m["ffn"]
            w.add_tensor(b + "ffn_gate.weight", mat(f, h))
            w.add_tensor(b + "ffn_up.weight", mat(f, h))
            w.add_tensor(b + "ffn_down.weight", mat(h, f))
    w.add_tensor("output_norm.weight", ones(h))
    w.add_tensor("output.weight", mat(m["vocab"], h))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, args.out)
    print("RESULT {}", flush=True)


def load_llama_cpp():
    import llama_cpp

    return llama_cpp


def worker_quantize(args: argparse.Namespace) -> None:
    import ctypes

    lc = load_llama_cpp()
    lc.llama_backend_init()
    params = lc.llama_model_quantize_default_params()
    params.ftype = getattr(lc, FTYPE_NAME[args.format])
    params.nthread = args.nthread
    tmp = args.out + ".part"
    rc = lc.llama_model_quantize(args.inp.encode(), tmp.encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit(f"error: llama_model_quantize returned {rc}")
    os.replace(tmp, args.out)
    print("RESULT {}", flush=True)


def worker_measure(args: argparse.Namespace) -> None:
    """Decode with llama.cpp's C API: the prompt once, warm-up tokens, then timed tokens."""
    import numpy as np

    lc = load_llama_cpp()
    lc.llama_backend_init()

    mparams = lc.llama_model_default_params()
    mparams.n_gpu_layers = 0
    load = getattr(lc, "llama_model_load_from_file", None) or lc.llama_load_model_from_file
    model = load(args.gguf.encode(), mparams)
    if not model:
        sys.exit(f"error: llama.cpp could not load {args.gguf}")

    cparams = lc.llama_context_default_params()
    cparams.n_ctx = args.n_ctx
    cparams.n_batch = max(args.prompt, 1)
    cparams.n_ubatch = max(args.prompt, 1)
    cparams.n_seq_max = 1
    cparams.n_threads = args.threads
    cparams.n_threads_batch = args.threads
    new_ctx = getattr(lc, "llama_init_from_model", None) or lc.llama_new_context_with_model
    ctx = new_ctx(model, cparams)
    if not ctx:
        sys.exit("error: llama.cpp could not create a context")

    vocab = None
    if hasattr(lc, "llama_model_get_vocab"):
        vocab = lc.llama_model_get_vocab(model)
        n_vocab = lc.llama_vocab_n_tokens(vocab)
    else:
        n_vocab = lc.llama_n_vocab(model)

    prompt = None
    try:
        text = PROMPT_TEXT.encode()
        buf = (lc.llama_token * 64)()
        n = lc.llama_tokenize(vocab if vocab is not None else model, text, len(text), buf, 64,
                              True, False)
        if n >= args.prompt:
            prompt = list(buf[: args.prompt])
    except Exception:  # noqa: BLE001 - the C API's signature moved between versions
        prompt = None
    if prompt is None:
        prompt = PROMPT_FALLBACK_IDS[: args.prompt]

    n_max = max(len(prompt), 1)
    batch = lc.llama_batch_init(n_max, 0, 1)

    def decode(tokens: list[int], pos0: int) -> int:
        batch.n_tokens = len(tokens)
        for i, t in enumerate(tokens):
            batch.token[i] = t
            batch.pos[i] = pos0 + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1 if i == len(tokens) - 1 else 0
        rc = lc.llama_decode(ctx, batch)
        if rc != 0:
            sys.exit(f"error: llama_decode returned {rc}")
        ptr = lc.llama_get_logits(ctx)
        logits = np.ctypeslib.as_array(ptr, shape=(n_vocab,))
        return int(np.argmax(logits))

    t0 = time.perf_counter()
    tok = decode(prompt, 0)
    t_prompt = time.perf_counter() - t0
    pos = len(prompt)
    for _ in range(args.warmup):
        tok = decode([tok], pos)
        pos += 1
    times = []
    generated = []
    for _ in range(args.tokens):
        t = time.perf_counter()
        tok = decode([tok], pos)
        times.append(time.perf_counter() - t)
        generated.append(tok)
        pos += 1
    total = sum(times)

    lc.llama_batch_free(batch)
    lc.llama_free(ctx)
    free_model = getattr(lc, "llama_model_free", None) or lc.llama_free_model
    free_model(model)

    result = {
        "tok_s": args.tokens / total,
        "ms_median": statistics.median(times) * 1e3,
        "prompt_s": t_prompt,
        "n_generated": len(generated),
        "distinct_tokens": len(set(generated)),
        "prompt_tokens": prompt,
    }
    print("RESULT " + json.dumps(result), flush=True)


def worker_info(args: argparse.Namespace) -> None:
    lc = load_llama_cpp()
    info = lc.llama_print_system_info()
    if isinstance(info, bytes):
        info = info.decode(errors="replace")
    print("RESULT " + json.dumps({"version": getattr(lc, "__version__", "?"),
                                  "system_info": info.strip()}), flush=True)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def run_worker(py: Path, argv: list[str], what: str, timeout: float = 3600) -> dict | None:
    """Run a worker; return its RESULT, or None (with its output's tail) when it failed."""
    cmd = [str(py), str(Path(__file__).resolve()), "_worker"] + argv
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"  {what}: timed out after {timeout:.0f} s")
        return None
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            if r.returncode == 0:
                return json.loads(line[len("RESULT "):])
    tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
    log(f"  {what}: failed (exit {r.returncode})\n    " + tail.replace("\n", "\n    "))
    return None


def memwall_model_arg(key: str, model_dir: Path) -> str:
    m = MODELS[key]
    if m["memwall"]:
        return m["memwall"]
    path = model_dir / f"{key}.toml"
    lines = [
        f'name = "{m["name"]}"',
        f'n_layers = {m["n_layers"]}',
        f'hidden = {m["hidden"]}',
        f'n_heads = {m["n_heads"]}',
        f'n_kv_heads = {m["n_kv_heads"]}',
        f'head_dim = {m["head_dim"]}',
        f'ffn = {m["ffn"]}                  # unused, every layer is MoE',
        "ffn_gated = true",
        f'vocab = {m["vocab"]}',
        "tied_embeddings = false",
        "attn_bias = false",
        f'max_context = {m["max_context"]}',
        'layer_pattern = ["full"]',
    ]
    if m["moe"]:
        lines += [
            "",
            "[moe]",
            f'n_experts = {m["moe"]["n_experts"]}',
            f'top_k = {m["moe"]["top_k"]}',
            "n_shared = 0",
            f'expert_ffn = {m["moe"]["expert_ffn"]}',
        ]
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)


def run_memwall(cmd: list[str], pattern: str) -> tuple[float | None, str]:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=1800)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    out = r.stdout + r.stderr
    if r.returncode == 0:
        mt = re.search(pattern, out, re.MULTILINE)
        if mt:
            return float(mt.group(1)), out
    return None, out


def ensure_models(py: Path, keys: list[str], formats: list[str], model_dir: Path,
                  vocab: Path | None, nthread: int) -> dict[tuple[str, str], Path]:
    paths = {}
    for key in keys:
        base = model_dir / f"{key}-F16.gguf"
        needed = [f for f in formats if not (model_dir / f"{key}-{f}.gguf").exists()]
        if not base.exists() and ("F16" in formats or any(f != "F16" for f in needed)):
            log(f"writing {base.name} (random F16 weights) ...")
            t0 = time.time()
            ok = run_worker(py, ["write", "--model", key, "--vocab", str(vocab), "--out",
                                 str(base)], f"write {base.name}")
            if ok is None and not base.exists():
                sys.exit(f"error: could not write {base}")
            log(f"  {base.stat().st_size / 1e9:.2f} GB in {time.time() - t0:.0f} s")
        for f in formats:
            out = base if f == "F16" else model_dir / f"{key}-{f}.gguf"
            if not out.exists():
                log(f"quantizing {base.name} -> {out.name} with llama.cpp ...")
                t0 = time.time()
                run_worker(py, ["quantize", "--inp", str(base), "--out", str(out), "--format", f,
                                "--nthread", str(nthread)], f"quantize {out.name}")
                if not out.exists():
                    log(f"  llama.cpp did not produce {out.name}; its rows are skipped")
                    continue
                log(f"  {out.stat().st_size / 1e9:.3f} GB in {time.time() - t0:.0f} s")
            paths[(key, f)] = out
    return paths


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        return worker_main(sys.argv[2:])

    ap = argparse.ArgumentParser(
        description="llama.cpp decode tok/s on this host against memwall's prediction "
                    "(llama.cpp CPU profile, calibrated host) and memwall's own engine.")
    ap.add_argument("--venv", default=str(REPO / ".venv-bench"),
                    help="virtual environment to create/use (default: .venv-bench at the repo root)")
    ap.add_argument("--llama-cpp-python", default=DEFAULT_LLAMA_CPP_PYTHON,
                    help=f"pip requirement for llama-cpp-python (default: {DEFAULT_LLAMA_CPP_PYTHON})")
    ap.add_argument("--skip-install", action="store_true",
                    help="use the virtual environment as it is; fail if a package is missing")
    ap.add_argument("--model-dir", default=str(HERE / "models"),
                    help="where the GGUF files are written and cached (default: scripts/bench/llamacpp/models)")
    ap.add_argument("--models", default="tinyllama,moe", help="comma list of: " + ",".join(MODELS))
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="comma list of: " + ",".join(FTYPE_NAME))
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--tokens", type=int, default=32, help="timed generated tokens (default 32)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed tokens before (default 2)")
    ap.add_argument("--prompt", type=int, default=8, help="prompt tokens (default 8)")
    ap.add_argument("--n-ctx", type=int, default=512, help="llama.cpp context size (default 512)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="measurements per row, the median reported (default 1)")
    ap.add_argument("--host", default=None,
                    help="memwall host profile of this machine (default: calibrate this machine "
                         "with `memwall calibrate` into results/compare-host.toml, 16-20 s on 2 cores)")
    ap.add_argument("--engine", default="llama.cpp", help="memwall engine profile (default llama.cpp)")
    ap.add_argument("--context", type=int, default=64,
                    help="context memwall's estimate allocates the KV cache for (default 64)")
    ap.add_argument("--memwall", default=str(REPO / "target/release/memwall"),
                    help="memwall binary (default: target/release/memwall)")
    ap.add_argument("--no-engine", action="store_true", help="skip memwall's own engine")
    ap.add_argument("--out", default=str(REPO / "results/llamacpp_compare.csv"),
                    help="CSV written (default: results/llamacpp_compare.csv)")
    ap.add_argument("--no-decode", action="store_true", help="skip the decode comparison (kernels only)")
    ap.add_argument("--no-kernels", action="store_true", help="skip the kernel comparison against ggml")
    ap.add_argument("--kernel-formats", default=",".join(KERNEL_FORMATS),
                    help="comma list of weight formats for the kernel comparison (ggml's names)")
    ap.add_argument("--kernel-rounds", type=int, default=3,
                    help="alternating rounds of ggml and memwall per format (default 3)")
    ap.add_argument("--cache-kib", type=int, default=512, help="cache-size matrix, KiB (default 512)")
    ap.add_argument("--dram-mib", type=int, default=512, help="DRAM-size matrix, MiB (default 512)")
    ap.add_argument("--bench-kernels", default=str(REPO / "target/release/memwall-bench-kernels"),
                    help="memwall-bench-kernels binary (cargo build --release -p memwall-kernels --bins)")
    ap.add_argument("--kernels-out", default=str(REPO / "results/kernels_vs_ggml.csv"),
                    help="kernel CSV written (default: results/kernels_vs_ggml.csv)")
    args = ap.parse_args()
    kernel_formats = [f.strip() for f in args.kernel_formats.split(",") if f.strip()]
    if args.kernel_rounds < 1 or args.cache_kib < 1 or args.dram_mib < 1:
        sys.exit("error: --kernel-rounds, --cache-kib and --dram-mib must be at least 1")
    if not args.no_kernels and not Path(args.bench_kernels).exists():
        sys.exit(f"error: --bench-kernels: {args.bench_kernels} does not exist "
                 "(cargo build --release -p memwall-kernels --bins)")

    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    for k in keys:
        if k not in MODELS:
            sys.exit(f"error: --models: unknown model {k!r} (known: {', '.join(MODELS)})")
    for f in formats:
        if f not in FTYPE_NAME:
            sys.exit(f"error: --formats: unknown format {f!r} (known: {', '.join(FTYPE_NAME)})")
    memwall = Path(args.memwall).resolve()
    if not memwall.exists():
        sys.exit(f"error: --memwall: {memwall} does not exist (cargo build --release)")
    # memwall runs from the repository root: a relative path is the caller's, resolved here.
    host = Path(args.host).resolve() if args.host else None
    if host is not None and not host.exists():
        sys.exit(f"error: --host: {host} does not exist")
    model_dir = Path(args.model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    gi = model_dir / ".gitignore"
    if not gi.exists():
        gi.write_text("*\n!.gitignore\n")  # the GGUF files are never committed

    t_start = time.time()
    py = ensure_venv(Path(args.venv), args.llama_cpp_python, model_dir, args.skip_install)
    info = run_worker(py, ["info"], "llama.cpp info") or {}
    log(f"llama-cpp-python {info.get('version', '?')}: {info.get('system_info', '?')}")

    if args.no_decode:
        keys = []
    need_base = any(not (model_dir / f"{k}-F16.gguf").exists() and
                    any(not (model_dir / f"{k}-{f}.gguf").exists() for f in formats)
                    for k in keys)
    vocab = ensure_vocab(py, args.llama_cpp_python, model_dir) if need_base else None
    nthread = max(threads)
    paths = ensure_models(py, keys, formats, model_dir, vocab, nthread)
    t_models = time.time()

    if keys and host is None:
        # Predictions are of this machine: a profile of another would measure the profile.
        host = REPO / "results" / "compare-host.toml"
        host.parent.mkdir(parents=True, exist_ok=True)
        log(f"calibrating this machine into {host} (memwall calibrate) ...")
        out = subprocess.run([str(memwall), "calibrate", "--out", str(host)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"error: memwall calibrate failed:\n{out.stderr.strip()}")
        log("  " + next((l for l in out.stdout.splitlines() if " in " in l and "device" in l), "done"))

    rows = []
    for key in keys:
        mw_model = memwall_model_arg(key, model_dir)
        for f in formats:
            if (key, f) not in paths:
                continue
            gguf_path = paths[(key, f)]
            mw_weights = "pure-f16" if f == "F16" else f
            for n in threads:
                what = f"{key} {f} {n}t"
                llama_runs = []
                engine_runs = []
                for _ in range(args.repeats):
                    res = run_worker(py, ["measure", "--gguf", str(gguf_path), "--threads", str(n),
                                          "--tokens", str(args.tokens), "--warmup",
                                          str(args.warmup), "--prompt", str(args.prompt),
                                          "--n-ctx", str(args.n_ctx)], f"llama.cpp {what}",
                                     timeout=1800)
                    if res is not None:
                        llama_runs.append(res["tok_s"])
                    if not args.no_engine:
                        v, out = run_memwall(
                            [str(memwall), "decode", "--model", mw_model, "--weights", mw_weights,
                             "--threads", str(n), "--tokens", str(args.tokens), "--warmup",
                             str(args.warmup)], r"^decode:\s+([0-9.eE+-]+) tok/s")
                        if v is None:
                            log(f"  memwall decode {what}: failed\n    " +
                                "\n    ".join(out.strip().splitlines()[-8:]))
                        else:
                            engine_runs.append(v)
                pred, out = run_memwall(
                    [str(memwall), "estimate", "--model", mw_model, "--device", str(host),
                     "--engine", args.engine, "--weights", mw_weights, "--threads", str(n),
                     "--prompt", str(args.prompt), "--gen-tokens", str(args.tokens),
                     "--context", str(args.context), "--margin-gb", "0"],
                    r"^decode\s+([0-9.eE+-]+) tok/s")
                if pred is None:
                    log(f"  memwall estimate {what}: failed\n    " +
                        "\n    ".join(out.strip().splitlines()[-8:]))
                llama = statistics.median(llama_runs) if llama_runs else None
                engine = statistics.median(engine_runs) if engine_runs else None
                err = (pred - llama) / llama * 100 if pred is not None and llama else None
                ratio = engine / llama if engine is not None and llama else None
                row = {
                    "model": key,
                    "format": f,
                    "threads": n,
                    "tokens": args.tokens,
                    "llamacpp_tok_s": llama,
                    "memwall_pred_tok_s": pred,
                    "pred_error_pct": err,
                    "memwall_engine_tok_s": engine,
                    "engine_vs_llamacpp": ratio,
                    "llamacpp_runs": ";".join(f"{x:.3f}" for x in llama_runs),
                    "engine_runs": ";".join(f"{x:.3f}" for x in engine_runs),
                    "gguf_bytes": gguf_path.stat().st_size,
                    "llama_cpp_python": info.get("version", ""),
                    "host_profile": str(host),
                }
                rows.append(row)
                log(f"{what}: llama.cpp {fmt(llama, '.2f')} tok/s | memwall predicts "
                    f"{fmt(pred, '.2f')} ({fmt(err, '+.1f')} %) | memwall engine "
                    f"{fmt(engine, '.2f')} (x{fmt(ratio, '.2f')})")

    # The table.
    header = ["model", "format", "threads", "llama.cpp tok/s", "memwall predicted", "error",
              "memwall engine", "engine / llama.cpp"]
    table = [[r["model"], r["format"], str(r["threads"]), fmt(r["llamacpp_tok_s"], ".2f"),
              fmt(r["memwall_pred_tok_s"], ".2f"),
              "n/a" if r["pred_error_pct"] is None else f"{r['pred_error_pct']:+.1f} %",
              fmt(r["memwall_engine_tok_s"], ".2f"),
              "n/a" if r["engine_vs_llamacpp"] is None else f"{r['engine_vs_llamacpp']:.2f}"]
             for r in rows]
    log("")
    log_table(header, table)
    errs = [abs(r["pred_error_pct"]) for r in rows if r["pred_error_pct"] is not None]
    ratios = [r["engine_vs_llamacpp"] for r in rows if r["engine_vs_llamacpp"] is not None]
    if errs:
        log(f"\nprediction: median |error| {statistics.median(errs):.1f} %, max {max(errs):.1f} %, "
            f"{sum(e <= 10 for e in errs)}/{len(errs)} within 10 % (target: all)")
    if ratios:
        log(f"engine: median {statistics.median(ratios):.2f} x llama.cpp, min {min(ratios):.2f}, "
            f"{sum(x >= 1 for x in ratios)}/{len(ratios)} at least as fast (target: all)")

    if not args.no_decode:
        out = Path(args.out)
        write_csv(out, rows)
        log(f"\nwrote {out} ({len(rows)} rows); setup (install, models) {t_models - t_start:.0f} s, "
            f"measurements {time.time() - t_models:.0f} s")
    if not args.no_kernels:
        log("")
        compare_kernels(py, args.llama_cpp_python, model_dir, Path(args.bench_kernels), kernel_formats,
                        args.kernel_rounds, args.cache_kib, args.dram_mib, Path(args.kernels_out))


def worker_main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="compare.py _worker")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("write")
    p.add_argument("--model", required=True)
    p.add_argument("--vocab", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("quantize")
    p.add_argument("--inp", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--format", required=True)
    p.add_argument("--nthread", type=int, default=0)
    p = sub.add_parser("measure")
    p.add_argument("--gguf", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--prompt", type=int, default=8)
    p.add_argument("--n-ctx", type=int, default=512)
    sub.add_parser("info")
    a = ap.parse_args(argv)
    {"write": worker_write, "quantize": worker_quantize, "measure": worker_measure,
     "info": worker_info}[a.cmd](a)


if __name__ == "__main__":
    main()
