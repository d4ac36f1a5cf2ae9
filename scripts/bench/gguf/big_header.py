"""Write the header of a Llama-3-70B-shaped Q2_K GGUF (723 tensors, 23.7 GB of tensor data,
a 128,256-entry vocabulary) and extend the file sparsely to 30 GB, to time how long memwall
takes to open a file of that size: `python scripts/bench/gguf/big_header.py /tmp/big.gguf`, then
`time memwall footprint --gguf /tmp/big.gguf --device apple-m2-ultra-192gb`.
Needs the `gguf` package (tests/python/requirements.txt)."""
import os, sys, numpy as np
from gguf import GGUFWriter, GGMLQuantizationType as Q
path = sys.argv[1]
h, f, v, L = 8192, 28672, 128256, 80   # Llama-3-70B shapes in Q2_K ≈ 20+ GB of tensor data
w = GGUFWriter(path, "llama")
w.add_block_count(L); w.add_embedding_length(h); w.add_feed_forward_length(f)
w.add_head_count(64); w.add_head_count_kv(8); w.add_context_length(8192)
w.add_token_list([f"t{i}" for i in range(v)])
def ti(name, rows, cols, q=Q.Q2_K):
    blk, size = {Q.Q2_K: (256, 84), Q.F32: (1, 4), Q.Q6_K: (256, 210)}[q]
    nbytes = rows * (cols // blk) * size
    w.add_tensor_info(name, (rows, cols // blk * size) if blk > 1 else (rows, cols), np.uint8 if blk > 1 else np.float32, nbytes, raw_dtype=q)
ti("token_embd.weight", v, h)
for l in range(L):
    b = f"blk.{l}."
    ti(b+"attn_norm.weight", 1, h, Q.F32)
    ti(b+"attn_q.weight", h, h); ti(b+"attn_k.weight", 1024, h); ti(b+"attn_v.weight", 1024, h); ti(b+"attn_output.weight", h, h)
    ti(b+"ffn_norm.weight", 1, h, Q.F32)
    ti(b+"ffn_gate.weight", f, h); ti(b+"ffn_up.weight", f, h); ti(b+"ffn_down.weight", h, f)
ti("output_norm.weight", 1, h, Q.F32); ti("output.weight", v, h, Q.Q6_K)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_ti_data_to_file()
w.close()
os.truncate(path, 30 << 30)
