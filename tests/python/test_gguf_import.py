"""GGUF files written by the `gguf` package (llama.cpp's gguf-py), read back by memwall:
every metadata value type, several tensor types including a K-quant mix, and the weight
bytes memwall counts equal the tensor data gguf-py's own reader finds in the file."""

import re
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType, GGUFWriter, quants



@pytest.fixture(scope="session")
def memwall(memwall_binary):
    exe = memwall_binary

    def run(*args, check=True):
        p = subprocess.run([str(exe), *args], capture_output=True, text=True)
        if check:
            assert p.returncode == 0, p.stderr
        return p

    return run


def raw(rows, cols, qtype):
    """Zero blocks of a quantized type, as gguf-py takes them: bytes per row."""
    block, size = {Q.Q4_K: (256, 144), Q.Q6_K: (256, 210), Q.Q5_K: (256, 176)}[qtype]
    return np.zeros((rows, cols // block * size), dtype=np.uint8)


def write_model(path, arch, h=256, f=512, v=1000, layers=2, qk_norm=False):
    w = GGUFWriter(str(path), arch)
    w.add_block_count(layers)
    w.add_embedding_length(h)
    w.add_feed_forward_length(f)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(4096)
    w.add_file_type(15)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(v)])
    w.add_token_scores([float(i) for i in range(v)])
    # One key of every value type.
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -5)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4_000_000_000)
    w.add_int32("test.i32", -2_000_000_000)
    w.add_float32("test.f32", 1.5)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "héllo")
    w.add_array("test.array", [1, 2, 3])
    w.add_uint64("test.u64", 1 << 40)
    w.add_int64("test.i64", -(1 << 40))
    w.add_float64("test.f64", -2.25)
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", raw(v, h, Q.Q4_K), raw_dtype=Q.Q4_K)
    for l in range(layers):
        b = f"blk.{l}."
        w.add_tensor(b + "attn_norm.weight", np.ones(h, dtype=np.float32))
        w.add_tensor(b + "attn_q.weight", raw(h, h, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(b + "attn_k.weight", raw(128, h, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(b + "attn_v.weight", raw(128, h, Q.Q6_K), raw_dtype=Q.Q6_K)
        if qk_norm:
            w.add_tensor(b + "attn_q_norm.weight", np.ones(64, dtype=np.float32))
            w.add_tensor(b + "attn_k_norm.weight", np.ones(64, dtype=np.float32))
        w.add_tensor(b + "attn_output.weight", rng.standard_normal((h, h)).astype(np.float16))
        w.add_tensor(b + "ffn_norm.weight", np.ones(h, dtype=np.float32))
        w.add_tensor(b + "ffn_gate.weight", raw(f, h, Q.Q5_K), raw_dtype=Q.Q5_K)
        w.add_tensor(b + "ffn_up.weight", raw(f, h, Q.Q4_K), raw_dtype=Q.Q4_K)
        q8 = quants.quantize(rng.standard_normal((h, f)).astype(np.float32), Q.Q8_0)
        w.add_tensor(b + "ffn_down.weight", q8, raw_dtype=Q.Q8_0)
    w.add_tensor("output_norm.weight", np.ones(h, dtype=np.float32))
    w.add_tensor("output.weight", raw(v, h, Q.Q6_K), raw_dtype=Q.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("arch,qk_norm", [("llama", False), ("qwen3", True)])
def test_weight_bytes_are_the_files(tmp_path, memwall, arch, qk_norm):
    path = tmp_path / f"{arch}.gguf"
    write_model(path, arch, qk_norm=qk_norm)
    reader = GGUFReader(str(path))
    data = sum(int(t.n_bytes) for t in reader.tensors)
    types = {t.tensor_type for t in reader.tensors}
    assert {Q.F32, Q.F16, Q.Q8_0, Q.Q4_K, Q.Q5_K, Q.Q6_K} <= types
    value_types = {f.types[0] for f in reader.fields.values() if f.types}
    assert len(value_types) == 13, value_types  # every GGUF value type is in the file
    p = memwall("footprint", "--gguf", str(path), "--device", "raspberry-pi-5-16gb")
    m = re.search(r"weight bytes: (\d+) in (\d+) tensors", p.stdout)
    assert m, p.stdout
    assert int(m.group(1)) == data
    assert int(m.group(2)) == len(reader.tensors)
    assert "file type Q4_K_M" in p.stderr
    # Keys memwall has no use for are listed, not dropped.
    assert "test.u64" in p.stderr and "test.array" in p.stderr, p.stderr


def test_a_truncated_file_is_refused(tmp_path, memwall):
    path = tmp_path / "m.gguf"
    write_model(path, "llama")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:-1000])
    p = memwall("footprint", "--gguf", str(cut), "--device", "raspberry-pi-5-16gb", check=False)
    assert p.returncode == 2
    assert "truncated" in p.stderr and "cut.gguf" in p.stderr, p.stderr
