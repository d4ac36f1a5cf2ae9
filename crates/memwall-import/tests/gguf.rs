//! The GGUF reader on files written here byte by byte: every value type read back, tensor
//! bytes exact, a llama-shaped file mapped to its spec, and malformed headers refused with the
//! byte offset of what is wrong (never a panic or an unbacked allocation).

use memwall_import::gguf::{self, Value, write};
use memwall_import::{ImportError, model_from_gguf};
use memwall_spec::{GgmlType, LayerKind, Mix, TensorClass, WeightQuant};

fn parse(bytes: &[u8]) -> Result<gguf::GgufHeader, ImportError> {
    gguf::parse(std::io::Cursor::new(bytes), bytes.len() as u64, "test.gguf")
}

fn s(v: &str) -> Value {
    Value::String(v.to_string())
}

fn arr(elem: u32, values: Vec<Value>) -> Value {
    Value::Array { elem, len: values.len() as u64, values: Some(values) }
}

/// A 2-layer llama with GQA (8 heads, 2 KV heads of 32), FFN 384, vocab 512, untied, in a
/// Q4_K_M-like mix of types.
fn llama() -> Vec<u8> {
    llama_with(&[])
}

/// [`llama`] with the metadata of `over` set (replaced, or added).
fn llama_with(over: &[(&str, Value)]) -> Vec<u8> {
    llama_edit(over, &[])
}

/// [`llama`] with the metadata of `over` set and the keys `drop` removed.
fn llama_edit(over: &[(&str, Value)], drop: &[&str]) -> Vec<u8> {
    let (h, f, v) = (256u64, 384u64, 512u64);
    let mut meta = vec![
        ("general.architecture", s("llama")),
        ("general.name", s("tiny")),
        ("general.file_type", Value::U32(15)),
        ("llama.block_count", Value::U32(2)),
        ("llama.embedding_length", Value::U32(h as u32)),
        ("llama.feed_forward_length", Value::U32(f as u32)),
        ("llama.attention.head_count", Value::U32(8)),
        ("llama.attention.head_count_kv", Value::U32(2)),
        ("llama.context_length", Value::U32(2048)),
        ("llama.rope.freq_base", Value::F32(10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("llama.vocab_size", Value::U32(v as u32)),
        ("llama.some_future_key", Value::U64(7)),
        ("tokenizer.ggml.model", s("llama")),
    ];
    meta.retain(|(have, _)| !drop.contains(have));
    for (k, val) in over {
        meta.retain(|(have, _)| have != k);
        meta.push((k, val.clone()));
    }
    let mut tensors: Vec<(String, Vec<u64>, GgmlType)> = vec![("token_embd.weight".into(), vec![h, v], GgmlType::Q4_K)];
    for l in 0..2 {
        let b = |n: &str| format!("blk.{l}.{n}.weight");
        tensors.extend([
            (b("attn_norm"), vec![h], GgmlType::F32),
            (b("attn_q"), vec![h, h], GgmlType::Q4_K),
            (b("attn_k"), vec![h, 64], GgmlType::Q4_K),
            (b("attn_v"), vec![h, 64], GgmlType::Q6_K),
            (b("attn_output"), vec![h, h], GgmlType::Q4_K),
            (b("ffn_norm"), vec![h], GgmlType::F32),
            (b("ffn_gate"), vec![h, f], GgmlType::Q4_K),
            (b("ffn_up"), vec![h, f], GgmlType::Q4_K),
            (b("ffn_down"), vec![f, h], GgmlType::Q8_0),
        ]);
    }
    tensors.push(("output_norm.weight".into(), vec![h], GgmlType::F32));
    tensors.push(("output.weight".into(), vec![h, v], GgmlType::Q6_K));
    let t: Vec<(&str, &[u64], GgmlType)> = tensors.iter().map(|(n, d, g)| (n.as_str(), d.as_slice(), *g)).collect();
    write::file(&meta, &t)
}

#[test]
fn every_value_type_reads_back() {
    let meta = vec![
        ("general.architecture", s("llama")),
        ("u8", Value::U8(200)),
        ("i8", Value::I8(-5)),
        ("u16", Value::U16(60000)),
        ("i16", Value::I16(-30000)),
        ("u32", Value::U32(4_000_000_000)),
        ("i32", Value::I32(-2_000_000_000)),
        ("f32", Value::F32(1.5)),
        ("bool", Value::Bool(true)),
        ("string", s("héllo")),
        ("u64", Value::U64(1 << 40)),
        ("i64", Value::I64(-(1 << 40))),
        ("f64", Value::F64(-2.25)),
        ("array_i32", arr(5, vec![Value::I32(1), Value::I32(-2)])),
        ("array_str", arr(8, vec![s("a"), s("bc")])),
        ("nested", arr(9, vec![arr(0, vec![Value::U8(1)])])),
    ];
    let bytes = write::file(&meta, &[("t.weight", &[32, 2], GgmlType::Q8_0)]);
    let h = parse(&bytes).unwrap();
    assert_eq!(h.version, 3);
    for (k, v) in &meta {
        assert_eq!(h.get(k), Some(v), "{k}");
    }
    assert_eq!(h.tensors[0].bytes, 2 * 34);
    assert_eq!(h.alignment, 32);
    assert_eq!(h.data_offset % 32, 0);
}

#[test]
fn long_arrays_are_walked_not_kept() {
    let tokens: Vec<Value> = (0..5000).map(|i| s(&format!("tok{i}"))).collect();
    let scores: Vec<Value> = (0..5000).map(|i| Value::F32(i as f32)).collect();
    let meta = vec![
        ("tokenizer.ggml.tokens", arr(8, tokens)),
        ("tokenizer.ggml.scores", arr(6, scores)),
        ("after", Value::U8(9)),
    ];
    let h = parse(&write::file(&meta, &[])).unwrap();
    assert!(matches!(h.get("tokenizer.ggml.tokens"), Some(Value::Array { elem: 8, len: 5000, values: None })));
    assert!(matches!(h.get("tokenizer.ggml.scores"), Some(Value::Array { elem: 6, len: 5000, values: None })));
    assert_eq!(h.get("after"), Some(&Value::U8(9)));
}

#[test]
fn a_llama_file_maps_to_its_spec_with_the_files_bytes() {
    let h = parse(&llama()).unwrap();
    let i = model_from_gguf(&h, "tiny").unwrap();
    let m = &i.model;
    assert_eq!(
        (m.n_layers, m.hidden, m.n_heads, m.n_kv_heads, m.head_dim(), m.ffn, m.vocab),
        (2, 256, 8, 2, 32, 384, 512)
    );
    assert!(!m.tied_embeddings && m.ffn_gated && !m.attn_bias);
    assert_eq!(m.layer_kinds(), vec![LayerKind::Full; 2]);
    assert_eq!(m.max_context, Some(2048));
    assert_eq!(i.file_type.as_deref(), Some("Q4_K_M"));
    // The stored types, tensor by tensor, sum to the file's tensor data exactly.
    let w = WeightQuant::new(Mix::Stored).assign(m);
    let bytes: u64 = w.iter().map(|a| a.tensor.bytes_in(a.format)).sum();
    assert_eq!(bytes, h.tensor_bytes());
    // By hand: Q4_K 256-wide rows are 144 B, Q6_K 210 B, Q8_0 384-wide rows 12 × 34 B.
    let per_layer = 256 * 4 + 144 * (256 + 64 + 256 + 2 * 384) + 210 * 64 + 384 / 32 * 34 * 256 + 256 * 4;
    assert_eq!(bytes, 512 * 144 + 2 * per_layer + 256 * 4 + 512 * 210);
    // The spec's own tensor list (shapes) matches the file's.
    let spec_only = memwall_spec::ModelSpec { stored: None, ..m.clone() };
    assert_eq!(spec_only.params().total, m.params().total);
    // Unmapped keys are listed; keys without effect (rope base, epsilons, tokenizer) are not.
    let keys: Vec<&str> = i.unmapped.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, vec!["llama.some_future_key"]);
}

#[test]
fn a_file_claiming_more_than_it_holds_is_refused_with_the_offset() {
    let good = llama();
    // Every truncation in the header, and some in the data: an error, never a panic.
    let header = parse(&good).unwrap().data_offset as usize;
    for cut in (0..header).chain((header..good.len()).step_by(997)) {
        let e = parse(&good[..cut]).unwrap_err();
        assert!(matches!(e, ImportError::Gguf { .. }), "cut at {cut}: {e}");
    }
    let patch = |at: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    let msg = |b: &[u8]| parse(b).unwrap_err().to_string();
    assert!(msg(&patch(0, b"GGML")).contains("not a GGUF file"));
    assert!(msg(&patch(4, &1u32.to_le_bytes())).contains("version 1"));
    assert!(msg(&patch(4, &3u32.to_be_bytes())).contains("big-endian"));
    let e = msg(&patch(8, &(1u64 << 60).to_le_bytes()));
    assert!(e.contains("byte 8") && e.contains("tensor count"), "{e}");
    let e = msg(&patch(16, &(1u64 << 60).to_le_bytes()));
    assert!(e.contains("byte 16") && e.contains("metadata count"), "{e}");
    // The first key's length (byte 24) claims 2^50 bytes.
    let e = msg(&patch(24, &(1u64 << 50).to_le_bytes()));
    assert!(e.contains("byte 32") && e.contains("truncated"), "{e}");
}

/// A header with one tensor info after a minimal architecture key, and a hook to corrupt it.
fn one_tensor(dims: &[u64], t: GgmlType, edit: impl Fn(&mut Vec<u8>, usize)) -> Result<gguf::GgufHeader, ImportError> {
    let meta = vec![("general.architecture", s("llama"))];
    let mut b = write::file(&meta, &[("a.weight", dims, t), ("b.weight", dims, t)]);
    // The first tensor info starts after the header (24 B) and the key-value.
    let info = 24 + 8 + "general.architecture".len() + 4 + 8 + "llama".len();
    edit(&mut b, info);
    parse(&b)
}

#[test]
fn bad_tensor_infos_are_refused() {
    let dims = [64u64, 2];
    // Layout of an info: name (8 + 8 B "a.weight"), n_dims (4), dims (2 × 8), type (4), offset (8).
    let (n_dims, dim0, ty, off) = (16, 20, 36, 40);
    let second = 48;
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, i| b[i + ty..i + ty + 4].copy_from_slice(&77u32.to_le_bytes()))
        .unwrap_err();
    assert!(e.to_string().contains("unknown ggml type id 77"), "{e}");
    let e =
        one_tensor(&dims, GgmlType::Q8_0, |b, i| b[i + n_dims..i + n_dims + 4].copy_from_slice(&9u32.to_le_bytes()))
            .unwrap_err();
    assert!(e.to_string().contains("9 dimensions"), "{e}");
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, i| b[i + dim0..i + dim0 + 8].copy_from_slice(&0u64.to_le_bytes()))
        .unwrap_err();
    assert!(e.to_string().contains("zero dimension"), "{e}");
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, i| b[i + dim0..i + dim0 + 8].copy_from_slice(&40u64.to_le_bytes()))
        .unwrap_err();
    assert!(e.to_string().contains("not a multiple of q8_0's block"), "{e}");
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, i| b[i + off..i + off + 8].copy_from_slice(&5u64.to_le_bytes()))
        .unwrap_err();
    assert!(e.to_string().contains("not a multiple of the alignment"), "{e}");
    // The second tensor's offset set to the first's: overlap.
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, i| {
        b[i + second + off..i + second + off + 8].copy_from_slice(&0u64.to_le_bytes())
    })
    .unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
    // The second tensor renamed to the first: duplicate.
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, i| b[i + second + 8] = b'a').unwrap_err();
    assert!(e.to_string().contains("duplicate tensor name `a.weight`"), "{e}");
    // Data past the end of the file.
    // (136 B of data padded to 160 by the writer: cut into the data itself.)
    let e = one_tensor(&dims, GgmlType::Q8_0, |b, _| b.truncate(b.len() - 25)).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    assert!(one_tensor(&dims, GgmlType::Q8_0, |_, _| {}).is_ok());
}

#[test]
fn bad_metadata_is_refused() {
    let meta = |v: Value| write::file(&[("general.architecture", s("llama")), ("k", v)], &[]);
    let at = 24 + 8 + 20 + 4 + 8 + 5 + 8 + 1; // the type of "k"
    let mut b = meta(Value::U8(1));
    b[at..at + 4].copy_from_slice(&13u32.to_le_bytes());
    assert!(parse(&b).unwrap_err().to_string().contains("unknown value type 13"));
    let mut b = meta(Value::Bool(true));
    b[at + 4] = 2;
    assert!(parse(&b).unwrap_err().to_string().contains("bool byte 2"));
    let mut b = meta(arr(0, vec![Value::U8(1)]));
    b[at + 8..at + 16].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let e = parse(&b).unwrap_err().to_string();
    assert!(e.contains("array of") && e.contains("cannot fit"), "{e}");
    let mut b = write::file(&[("general.architecture", s("llama")), ("general.architecture", s("x"))], &[]);
    assert!(parse(&b).unwrap_err().to_string().contains("duplicate metadata key"));
    b = write::file(&[("general.alignment", Value::U32(48))], &[]);
    assert!(parse(&b).unwrap_err().to_string().contains("power of two"));
    b = write::file(&[("k", s("ok"))], &[]);
    let n = b.len();
    b[n - 2] = 0xff;
    let _ = parse(&b); // invalid UTF-8 in a value, or padding: an error or a parse, no panic
}

#[test]
fn a_mapping_that_needs_a_missing_key_names_it() {
    let b = write::file(&[("general.architecture", s("llama"))], &[("token_embd.weight", &[64, 10], GgmlType::F16)]);
    let e = model_from_gguf(&parse(&b).unwrap(), "x").unwrap_err().to_string();
    assert!(e.contains("llama.block_count") && e.contains("missing"), "{e}");
    let b = write::file(
        &[
            ("general.architecture", s("llama")),
            ("llama.block_count", Value::U32(1)),
            ("llama.embedding_length", Value::U32(64)),
        ],
        &[("blk.5.attn_q.weight", &[64, 64], GgmlType::F16)],
    );
    let e = model_from_gguf(&parse(&b).unwrap(), "x").unwrap_err().to_string();
    assert!(e.contains("block 5"), "{e}");
    let b = write::file(
        &[
            ("general.architecture", s("llama")),
            ("llama.block_count", Value::F32(f32::NAN)),
            ("llama.embedding_length", Value::U32(64)),
        ],
        &[],
    );
    let e = model_from_gguf(&parse(&b).unwrap(), "x").unwrap_err().to_string();
    assert!(e.contains("llama.block_count") && e.contains("float32"), "{e}");
}

#[test]
fn lfm2_short_convolutions_map_from_zero_kv_heads() {
    // LFM2: head_count_kv per layer, 0 on the short-convolution layers.
    let h = 128u64;
    let meta = vec![
        ("general.architecture", s("lfm2")),
        ("lfm2.block_count", Value::U32(3)),
        ("lfm2.embedding_length", Value::U32(h as u32)),
        ("lfm2.feed_forward_length", Value::U32(256)),
        ("lfm2.attention.head_count", Value::U32(4)),
        ("lfm2.attention.head_count_kv", arr(4, vec![Value::U32(0), Value::U32(2), Value::U32(0)])),
        ("lfm2.shortconv.l_cache", Value::U32(3)),
    ];
    let mut t: Vec<(String, Vec<u64>, GgmlType)> = vec![("token_embd.weight".into(), vec![h, 100], GgmlType::F16)];
    for l in 0..3 {
        if l == 1 {
            t.push((format!("blk.{l}.attn_q.weight"), vec![h, h], GgmlType::F16));
            t.push((format!("blk.{l}.attn_k.weight"), vec![h, 64], GgmlType::F16));
        } else {
            t.push((format!("blk.{l}.shortconv.conv.weight"), vec![3, h], GgmlType::F32));
            t.push((format!("blk.{l}.shortconv.in_proj.weight"), vec![h, 3 * h], GgmlType::F16));
        }
        t.push((format!("blk.{l}.ffn_gate.weight"), vec![h, 256], GgmlType::F16));
    }
    let tt: Vec<(&str, &[u64], GgmlType)> = t.iter().map(|(n, d, g)| (n.as_str(), d.as_slice(), *g)).collect();
    let hdr = parse(&write::file(&meta, &tt)).unwrap();
    let m = model_from_gguf(&hdr, "lfm").unwrap().model;
    assert_eq!(m.layer_kinds(), vec![LayerKind::ShortConv, LayerKind::Full, LayerKind::ShortConv]);
    assert_eq!((m.n_heads, m.n_kv_heads, m.short_conv.as_ref().unwrap().l_cache), (4, 2, 3));
    assert!(m.tied_embeddings);
    let stored = m.stored.as_ref().unwrap();
    assert_eq!(stored.iter().filter(|s| s.tensor.class == TensorClass::SsmConv1d).count(), 2);
    assert_eq!(stored.iter().filter(|s| s.tensor.class == TensorClass::Other).count(), 2);
}

/// Build a file from (name, dims, type) triples.
fn file(meta: &[(&str, Value)], t: &[(String, Vec<u64>, GgmlType)]) -> gguf::GgufHeader {
    let tt: Vec<(&str, &[u64], GgmlType)> = t.iter().map(|(n, d, g)| (n.as_str(), d.as_slice(), *g)).collect();
    parse(&write::file(meta, &tt)).unwrap()
}

#[test]
fn gemma3n_per_layer_embeddings_shared_caches_and_its_window_flags() {
    let h = 64u64;
    let flags = [true, true, true, false, true, true, true, false];
    let meta = vec![
        ("general.architecture", s("gemma3n")),
        ("gemma3n.block_count", Value::U32(8)),
        ("gemma3n.embedding_length", Value::U32(h as u32)),
        ("gemma3n.feed_forward_length", arr(4, vec![Value::U32(128); 8])),
        ("gemma3n.attention.head_count", Value::U32(2)),
        ("gemma3n.attention.head_count_kv", Value::U32(1)),
        ("gemma3n.attention.key_length", Value::U32(32)),
        ("gemma3n.attention.sliding_window", Value::U32(16)),
        ("gemma3n.attention.sliding_window_pattern", arr(7, flags.iter().map(|b| Value::Bool(*b)).collect())),
        ("gemma3n.attention.shared_kv_layers", Value::U32(3)),
        ("gemma3n.embedding_length_per_layer_input", Value::U32(8)),
    ];
    let mut t: Vec<(String, Vec<u64>, GgmlType)> = vec![
        ("token_embd.weight".into(), vec![h, 300], GgmlType::Q8_0),
        ("per_layer_token_embd.weight".into(), vec![8 * 8, 256], GgmlType::Q8_0),
        ("altup_proj.weight".into(), vec![h, h, 3], GgmlType::F16),
    ];
    for l in 0..8 {
        for (n, d) in
            [("attn_q", vec![h, 64]), ("attn_k", vec![h, 32]), ("attn_v", vec![h, 32]), ("laurel_l", vec![h, 32])]
        {
            t.push((format!("blk.{l}.{n}.weight"), d, GgmlType::F16));
        }
    }
    let hdr = file(&meta, &t);
    let i = model_from_gguf(&hdr, "g3n").unwrap();
    let m = &i.model;
    let kinds: Vec<bool> = m.layer_kinds().iter().map(|k| *k == LayerKind::Sliding).collect();
    assert_eq!(kinds, flags);
    assert_eq!(m.kv_shared_layers, Some(3));
    let owners: Vec<u32> = m.kv_cache_layers().iter().map(|l| l.0).collect();
    assert_eq!(owners, vec![0, 1, 2, 3, 4]);
    let ple = m.per_layer_embedding.as_ref().unwrap();
    assert_eq!((ple.width, ple.vocab), (8, Some(256)));
    assert_eq!((m.head_dim(), m.ffn, m.sliding_window), (32, 128, Some(16)));
    let stored = m.stored.as_ref().unwrap();
    assert_eq!(stored.iter().filter(|s| s.tensor.class == TensorClass::PerLayerTokenEmbd).count(), 1);
    // AltUp and LAuReL tensors are kept (3-D altup_proj as 3 stacked matrices) and counted.
    let altup = stored.iter().find(|s| s.name == "altup_proj.weight").unwrap();
    assert_eq!((altup.tensor.class, altup.tensor.experts), (TensorClass::Other, 3));
    let bytes: u64 = WeightQuant::new(Mix::Stored).assign(m).iter().map(|a| a.tensor.bytes_in(a.format)).sum();
    assert_eq!(bytes, hdr.tensor_bytes());
}

#[test]
fn experts_and_state_space_layers_map_from_their_keys() {
    let h = 64u64;
    let meta = vec![
        ("general.architecture", s("qwen3moe")),
        ("qwen3moe.block_count", Value::U32(2)),
        ("qwen3moe.embedding_length", Value::U32(h as u32)),
        ("qwen3moe.feed_forward_length", Value::U32(256)),
        ("qwen3moe.attention.head_count", Value::U32(4)),
        ("qwen3moe.attention.head_count_kv", Value::U32(2)),
        ("qwen3moe.expert_count", Value::U32(8)),
        ("qwen3moe.expert_used_count", Value::U32(2)),
        ("qwen3moe.expert_feed_forward_length", Value::U32(32)),
    ];
    let mut t: Vec<(String, Vec<u64>, GgmlType)> = vec![("token_embd.weight".into(), vec![h, 100], GgmlType::F16)];
    for l in 0..2 {
        t.push((format!("blk.{l}.attn_q.weight"), vec![h, h], GgmlType::F16));
        t.push((format!("blk.{l}.ffn_gate_inp.weight"), vec![h, 8], GgmlType::F32));
        t.push((format!("blk.{l}.ffn_up_exps.weight"), vec![h, 32, 8], GgmlType::Q8_0));
        t.push((format!("blk.{l}.ffn_down_exps.weight"), vec![32, h, 8], GgmlType::Q8_0));
    }
    let m = model_from_gguf(&file(&meta, &t), "moe").unwrap().model;
    let moe = m.moe.as_ref().unwrap();
    assert_eq!((moe.n_experts, moe.top_k, moe.expert_ffn, moe.n_shared), (8, 2, 32, 0));
    let exps = m.stored.as_ref().unwrap().iter().find(|s| s.name == "blk.0.ffn_up_exps.weight").unwrap();
    assert_eq!((exps.tensor.class, exps.tensor.experts), (TensorClass::FfnUpExps, 8));

    let meta = vec![
        ("general.architecture", s("mamba")),
        ("mamba.block_count", Value::U32(2)),
        ("mamba.embedding_length", Value::U32(h as u32)),
        ("mamba.ssm.conv_kernel", Value::U32(4)),
        ("mamba.ssm.inner_size", Value::U32(128)),
        ("mamba.ssm.state_size", Value::U32(16)),
        ("mamba.ssm.time_step_rank", Value::U32(4)),
    ];
    let mut t: Vec<(String, Vec<u64>, GgmlType)> = vec![("token_embd.weight".into(), vec![h, 100], GgmlType::F16)];
    for l in 0..2 {
        t.push((format!("blk.{l}.ssm_in.weight"), vec![h, 256], GgmlType::F16));
        t.push((format!("blk.{l}.ssm_a"), vec![16, 128], GgmlType::F32));
    }
    let m = model_from_gguf(&file(&meta, &t), "mamba").unwrap().model;
    assert_eq!(m.layer_kinds(), vec![LayerKind::Ssm; 2]);
    let ssm = m.ssm.as_ref().unwrap();
    assert_eq!(
        (ssm.kind, ssm.d_inner, ssm.d_state, ssm.d_conv, ssm.dt_rank),
        (memwall_spec::SsmKind::Mamba1, 128, 16, 4, Some(4))
    );
    let a = m.stored.as_ref().unwrap().iter().find(|s| s.name == "blk.0.ssm_a").unwrap();
    assert_eq!(a.tensor.class, TensorClass::SsmA);
}

#[test]
fn deepseek2_latent_attention_and_phi3_fused_projections() {
    let h = 64u64;
    let meta = vec![
        ("general.architecture", s("deepseek2")),
        ("deepseek2.block_count", Value::U32(2)),
        ("deepseek2.embedding_length", Value::U32(h as u32)),
        ("deepseek2.feed_forward_length", Value::U32(128)),
        ("deepseek2.attention.head_count", Value::U32(4)),
        ("deepseek2.attention.head_count_kv", Value::U32(4)),
        ("deepseek2.attention.key_length", Value::U32(48)),
        ("deepseek2.attention.value_length", Value::U32(32)),
        ("deepseek2.attention.kv_lora_rank", Value::U32(32)),
        ("deepseek2.rope.dimension_count", Value::U32(16)),
        ("deepseek2.expert_count", Value::U32(4)),
        ("deepseek2.expert_used_count", Value::U32(2)),
        ("deepseek2.expert_shared_count", Value::U32(1)),
        ("deepseek2.expert_feed_forward_length", Value::U32(32)),
        ("deepseek2.leading_dense_block_count", Value::U32(1)),
    ];
    let mut t: Vec<(String, Vec<u64>, GgmlType)> = vec![("token_embd.weight".into(), vec![h, 100], GgmlType::F16)];
    for l in 0..2 {
        t.push((format!("blk.{l}.attn_q.weight"), vec![h, 4 * 48], GgmlType::F16));
        t.push((format!("blk.{l}.attn_kv_a_mqa.weight"), vec![h, 48], GgmlType::F16));
        t.push((format!("blk.{l}.attn_kv_b.weight"), vec![32, 4 * (32 + 32)], GgmlType::F16));
    }
    t.push(("blk.1.ffn_up_exps.weight".into(), vec![h, 32, 4], GgmlType::F16));
    let m = model_from_gguf(&file(&meta, &t), "ds").unwrap().model;
    let mla = m.mla.as_ref().unwrap();
    assert_eq!((mla.kv_lora_rank, mla.qk_rope_head_dim, mla.qk_nope_head_dim, mla.v_head_dim), (32, 16, 32, 32));
    // The cache holds the latent and the rotary key: 32 + 16 per token and layer, as K.
    assert_eq!(m.kv_row_elems_at(0), (48, 0));
    let moe = m.moe.as_ref().unwrap();
    assert_eq!((moe.n_experts, moe.top_k, moe.n_shared, moe.leading_dense_layers), (4, 2, 1, 1));

    // Phi-3 fuses Q, K and V (and gate with up): the layer is still attention, the FFN gated.
    let meta = vec![
        ("general.architecture", s("phi3")),
        ("phi3.block_count", Value::U32(1)),
        ("phi3.embedding_length", Value::U32(h as u32)),
        ("phi3.feed_forward_length", Value::U32(128)),
        ("phi3.attention.head_count", Value::U32(4)),
        ("phi3.attention.head_count_kv", Value::U32(4)),
        ("phi3.attention.sliding_window", Value::U32(2047)),
    ];
    let t = vec![
        ("token_embd.weight".to_string(), vec![h, 100], GgmlType::F16),
        ("blk.0.attn_qkv.weight".to_string(), vec![h, 3 * h], GgmlType::F16),
        ("blk.0.ffn_up.weight".to_string(), vec![h, 256], GgmlType::F16),
        ("blk.0.ffn_down.weight".to_string(), vec![128, h], GgmlType::F16),
        ("output.weight".to_string(), vec![h, 100], GgmlType::F16),
    ];
    let i = model_from_gguf(&file(&meta, &t), "phi").unwrap();
    assert_eq!(i.model.layer_kinds(), vec![LayerKind::Full]);
    assert!(i.model.ffn_gated && !i.model.tied_embeddings);
    assert!(i.notes.iter().any(|n| n.contains("sliding_window = 2047")), "{:?}", i.notes);
}

/// A qwen3moe header of `n` layers (width 32, 2 heads over 1 KV head of 16, 8 experts of width
/// 16, vocab 100), each layer holding its K projection, with the keys of `extra` (named without
/// the `qwen3moe.` prefix) set over these.
fn experts_file(n: u64, extra: &[(&str, Value)]) -> Result<memwall_import::Imported, ImportError> {
    let mut keys: Vec<(String, Value)> = [
        ("block_count", Value::U64(n)),
        ("embedding_length", Value::U32(32)),
        ("feed_forward_length", Value::U32(64)),
        ("attention.head_count", Value::U32(2)),
        ("attention.head_count_kv", Value::U32(1)),
        ("vocab_size", Value::U32(100)),
        ("expert_count", Value::U32(8)),
        ("expert_used_count", Value::U32(2)),
        ("expert_feed_forward_length", Value::U32(16)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in extra {
        keys.retain(|(have, _)| have != k);
        keys.push((k.to_string(), v.clone()));
    }
    let full: Vec<(String, Value)> = keys.into_iter().map(|(k, v)| (format!("qwen3moe.{k}"), v)).collect();
    let mut meta = vec![("general.architecture", s("qwen3moe"))];
    meta.extend(full.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let mut t = vec![("token_embd.weight".to_string(), vec![32, 100], GgmlType::F16)];
    let layers = n.min(u64::from(memwall_spec::bounds::MAX_LAYERS));
    t.extend((0..layers).map(|l| (format!("blk.{l}.attn_k.weight"), vec![32, 16], GgmlType::Q8_0)));
    model_from_gguf(&file(&meta, &t), "moe")
}

/// Refused naming the full key `key` and `value`.
fn key_refused(r: Result<memwall_import::Imported, ImportError>, key: &str, value: u64) {
    let e = r.map(|i| i.model).unwrap_err().to_string();
    assert!(e.contains(&format!("`{key}`")) && e.contains(&value.to_string()), "expected `{key}` and {value}: {e}");
}

/// 2^32 + 8: a `u32` would read 8.
const PAST_U32: u64 = (1 << 32) + 8;

#[test]
fn block_count_up_to_the_layer_bound() {
    let max = u64::from(memwall_spec::bounds::MAX_LAYERS);
    assert_eq!(experts_file(max, &[]).unwrap().model.n_layers, memwall_spec::bounds::MAX_LAYERS);
    key_refused(experts_file(max + 1, &[]), "qwen3moe.block_count", max + 1);
    key_refused(experts_file(PAST_U32, &[]), "qwen3moe.block_count", PAST_U32);
}

#[test]
fn expert_counts_up_to_the_expert_bound() {
    let max = u64::from(memwall_spec::bounds::MAX_EXPERTS);
    let all = Value::U64(max);
    for (key, others) in [
        ("expert_count", vec![]),
        ("expert_used_count", vec![("expert_count", all.clone())]),
        ("expert_shared_count", vec![("expert_shared_feed_forward_length", Value::U32(16))]),
    ] {
        let with = |v: u64| [others.clone(), vec![(key, Value::U64(v))]].concat();
        let moe = experts_file(4, &with(max)).unwrap().model.moe.unwrap();
        assert_eq!(
            match key {
                "expert_count" => moe.n_experts,
                "expert_used_count" => moe.top_k,
                _ => moe.n_shared,
            },
            memwall_spec::bounds::MAX_EXPERTS,
            "{key}"
        );
        key_refused(experts_file(4, &with(max + 1)), &format!("qwen3moe.{key}"), max + 1);
        key_refused(experts_file(4, &with(PAST_U32)), &format!("qwen3moe.{key}"), PAST_U32);
    }
}

#[test]
fn leading_dense_and_kv_sharing_layers_up_to_the_layer_count() {
    let key = "leading_dense_block_count";
    let m = experts_file(4, &[(key, Value::U32(4))]).unwrap().model;
    assert_eq!(m.moe.unwrap().leading_dense_layers, 4);
    key_refused(experts_file(4, &[(key, Value::U32(5))]), "qwen3moe.leading_dense_block_count", 5);
    key_refused(experts_file(4, &[(key, Value::U64(PAST_U32))]), "qwen3moe.leading_dense_block_count", PAST_U32);
    let key = "attention.shared_kv_layers";
    assert_eq!(experts_file(4, &[(key, Value::U32(3))]).unwrap().model.kv_shared_layers, Some(3));
    key_refused(experts_file(4, &[(key, Value::U32(4))]), "qwen3moe.attention.shared_kv_layers", 4);
    key_refused(experts_file(4, &[(key, Value::U64(PAST_U32))]), "qwen3moe.attention.shared_kv_layers", PAST_U32);
}

/// The mapping of a file built by [`llama_with`], or its error as text.
fn llama_error(over: &[(&str, Value)]) -> String {
    let h = parse(&llama_with(over)).unwrap();
    model_from_gguf(&h, "tiny").map(|i| i.model).unwrap_err().to_string()
}

/// `e` names every needle.
fn names(e: &str, needles: &[&str]) {
    assert!(needles.iter().all(|n| e.contains(n)), "expected {needles:?} in: {e}");
}

#[test]
fn head_counts_that_contradict_the_projections_are_refused() {
    // 8 KV heads claimed, K and V projections of 2 heads × 32: the cache would be 4× too big.
    let e = llama_error(&[("llama.attention.head_count_kv", Value::U32(8))]);
    names(&e, &["`llama.attention.head_count_kv` = 8", "256 rows", "`blk.0.attn_k.weight`", "[256, 64]"]);
    // 16 query heads of 32 (key_length given): the query projection holds 8.
    let e =
        llama_error(&[("llama.attention.head_count", Value::U32(16)), ("llama.attention.key_length", Value::U32(32))]);
    names(
        &e,
        &["`llama.attention.head_count` = 16", "`llama.attention.key_length`", "`blk.0.attn_q.weight`", "[256, 256]"],
    );
    // 32 heads without key_length: heads of 256 / 32 = 8, so the query rows agree but K's do not.
    let e = llama_error(&[("llama.attention.head_count", Value::U32(32))]);
    names(&e, &["`llama.attention.head_count_kv` = 2", "`llama.attention.head_count` = 256 / 32", "attn_k.weight"]);
}

#[test]
fn head_widths_that_contradict_the_projections_are_refused() {
    let e = llama_error(&[("llama.attention.key_length", Value::U32(64))]);
    names(&e, &["`llama.attention.head_count` = 8", "head width 64 (`llama.attention.key_length`)", "attn_q.weight"]);
    let e = llama_error(&[("llama.attention.value_length", Value::U32(16))]);
    names(&e, &["head width 16 (`llama.attention.value_length`)", "`blk.0.attn_v.weight`", "[256, 64]"]);
}

#[test]
fn ffn_widths_that_contradict_the_tensors_are_refused() {
    let e = llama_error(&[("llama.feed_forward_length", Value::U32(512))]);
    names(&e, &["`llama.feed_forward_length` = 512", "`blk.0.ffn_gate.weight`", "[256, 384]"]);
    // Per layer: layer 1 claims 512.
    let e = llama_error(&[("llama.feed_forward_length", arr(4, vec![Value::U32(384), Value::U32(512)]))]);
    names(&e, &["`llama.feed_forward_length` = 512", "`blk.1.ffn_gate.weight`", "[256, 384]"]);
}

#[test]
fn vocabularies_that_contradict_the_embeddings_are_refused() {
    let e = llama_error(&[("llama.vocab_size", Value::U32(1024))]);
    names(&e, &["`llama.vocab_size` = 1024", "`token_embd.weight`", "[256, 512]"]);
    // Without vocab_size, the tokenizer's token count.
    let tokens = |n: usize| arr(8, (0..n).map(|i| s(&format!("t{i}"))).collect());
    let h = parse(&llama_edit(&[("tokenizer.ggml.tokens", tokens(500))], &["llama.vocab_size"])).unwrap();
    let e = model_from_gguf(&h, "tiny").unwrap_err().to_string();
    names(&e, &["`tokenizer.ggml.tokens` holds 500 tokens", "`token_embd.weight`", "[256, 512]"]);
    let h = parse(&llama_edit(&[("tokenizer.ggml.tokens", tokens(512))], &["llama.vocab_size"])).unwrap();
    assert_eq!(model_from_gguf(&h, "tiny").unwrap().model.vocab, 512);
}

#[test]
fn expert_counts_and_widths_that_contradict_the_stacked_experts_are_refused() {
    // 2 layers, 8 experts of 32 stacked in each (as in the qwen3moe test above).
    let moe = |over: &[(&str, Value)]| {
        let mut meta = vec![
            ("general.architecture", s("qwen3moe")),
            ("qwen3moe.block_count", Value::U32(2)),
            ("qwen3moe.embedding_length", Value::U32(64)),
            ("qwen3moe.attention.head_count", Value::U32(4)),
            ("qwen3moe.expert_count", Value::U32(8)),
            ("qwen3moe.expert_used_count", Value::U32(2)),
            ("qwen3moe.expert_feed_forward_length", Value::U32(32)),
        ];
        for (k, v) in over {
            meta.retain(|(have, _)| have != k);
            meta.push((k, v.clone()));
        }
        let mut t = vec![("token_embd.weight".to_string(), vec![64, 100], GgmlType::F16)];
        for l in 0..2 {
            t.push((format!("blk.{l}.attn_q.weight"), vec![64, 64], GgmlType::F16));
            t.push((format!("blk.{l}.ffn_up_exps.weight"), vec![64, 32, 8], GgmlType::Q8_0));
            t.push((format!("blk.{l}.ffn_down_exps.weight"), vec![32, 64, 8], GgmlType::Q8_0));
        }
        model_from_gguf(&file(&meta, &t), "moe").map(|i| i.model)
    };
    assert_eq!(moe(&[]).unwrap().moe.unwrap().n_experts, 8);
    let e = moe(&[("qwen3moe.expert_count", Value::U32(16))]).unwrap_err().to_string();
    names(&e, &["`qwen3moe.expert_count` = 16", "16 experts (ne[2])", "`blk.0.ffn_up_exps.weight`", "[64, 32, 8]"]);
    let e = moe(&[("qwen3moe.expert_feed_forward_length", Value::U32(64))]).unwrap_err().to_string();
    names(&e, &["`qwen3moe.expert_feed_forward_length` = 64", "`blk.0.ffn_up_exps.weight`", "[64, 32, 8]"]);
}

#[test]
fn fused_projections_and_latent_ranks_that_contradict_the_tensors_are_refused() {
    // Phi-3's fused QKV holds 4 query and 4 KV heads of 16: 192 rows, not 64 + 2 × 16.
    let meta = vec![
        ("general.architecture", s("phi3")),
        ("phi3.block_count", Value::U32(1)),
        ("phi3.embedding_length", Value::U32(64)),
        ("phi3.feed_forward_length", Value::U32(128)),
        ("phi3.attention.head_count", Value::U32(4)),
        ("phi3.attention.head_count_kv", Value::U32(1)),
    ];
    let t = vec![
        ("token_embd.weight".to_string(), vec![64, 100], GgmlType::F16),
        ("blk.0.attn_qkv.weight".to_string(), vec![64, 192], GgmlType::F16),
        ("blk.0.ffn_up.weight".to_string(), vec![64, 256], GgmlType::F16),
    ];
    let e = model_from_gguf(&file(&meta, &t), "phi").unwrap_err().to_string();
    names(&e, &["`phi3.attention.head_count_kv` = 1", "q + k + v = 96 rows", "`blk.0.attn_qkv.weight`", "[64, 192]"]);
    // DeepSeek's compressed KV projection holds kv_lora_rank + rope rows: 32 + 16, not 64 + 16.
    let meta = vec![
        ("general.architecture", s("deepseek2")),
        ("deepseek2.block_count", Value::U32(1)),
        ("deepseek2.embedding_length", Value::U32(64)),
        ("deepseek2.attention.head_count", Value::U32(4)),
        ("deepseek2.attention.key_length", Value::U32(48)),
        ("deepseek2.attention.value_length", Value::U32(32)),
        ("deepseek2.attention.kv_lora_rank", Value::U32(64)),
        ("deepseek2.rope.dimension_count", Value::U32(16)),
    ];
    let t = vec![
        ("token_embd.weight".to_string(), vec![64, 100], GgmlType::F16),
        ("blk.0.attn_q.weight".to_string(), vec![64, 4 * 48], GgmlType::F16),
        ("blk.0.attn_kv_a_mqa.weight".to_string(), vec![64, 48], GgmlType::F16),
    ];
    let e = model_from_gguf(&file(&meta, &t), "ds").unwrap_err().to_string();
    names(&e, &["`deepseek2.attention.kv_lora_rank` = 64", "`deepseek2.rope.dimension_count` = 16", "[64, 48]"]);
}

#[test]
fn a_consistent_file_keeps_its_kv_cache() {
    let m = model_from_gguf(&parse(&llama()).unwrap(), "tiny").unwrap().model;
    // 2 KV heads × 32 for K and for V, in each of the 2 layers: as before the checks.
    assert_eq!((m.kv_row_elems_at(0), m.kv_row_elems_at(1)), ((64, 64), (64, 64)));
    // An architecture without a layout of its own is checked as llama's, and a contradiction
    // (4 KV heads of 16 make 64 rows; attn_k has 16) is said, naming both, not refused: the
    // layout may be one memwall does not know.
    let meta = vec![
        ("general.architecture", s("llamalike")),
        ("llamalike.block_count", Value::U32(1)),
        ("llamalike.embedding_length", Value::U32(64)),
        ("llamalike.attention.head_count", Value::U32(4)),
        ("llamalike.attention.head_count_kv", Value::U32(4)),
    ];
    let t = vec![
        ("token_embd.weight".to_string(), vec![64, 100], GgmlType::F16),
        ("blk.0.attn_k.weight".to_string(), vec![64, 16], GgmlType::F16),
    ];
    let i = model_from_gguf(&file(&meta, &t), "generic").unwrap();
    let warning = i.notes.iter().find(|n| n.starts_with("WARNING")).expect("a warning");
    assert!(warning.contains("head_count_kv") && warning.contains("blk.0.attn_k.weight"), "{warning}");
    // The same file, consistent: no warning.
    let t = vec![
        ("token_embd.weight".to_string(), vec![64, 100], GgmlType::F16),
        ("blk.0.attn_k.weight".to_string(), vec![64, 64], GgmlType::F16),
    ];
    let i = model_from_gguf(&file(&meta, &t), "generic").unwrap();
    assert!(!i.notes.iter().any(|n| n.starts_with("WARNING")), "{:?}", i.notes);
}

#[test]
fn mxfp4_tensors_take_17_bytes_per_32_weights() {
    // 3 rows of 64: 2 blocks of 17 B each (1 E8M0 byte + 16 bytes of nibbles).
    let b = write::file(&[("general.architecture", s("llama"))], &[("e.weight", &[64, 3], GgmlType::MXFP4)]);
    let h = parse(&b).unwrap();
    assert_eq!(h.tensors[0].ggml, GgmlType::MXFP4);
    assert_eq!(h.tensor_bytes(), 3 * 2 * 17);
}
