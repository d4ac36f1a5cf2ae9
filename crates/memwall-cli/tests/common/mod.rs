//! Running the `memwall` binary from the integration tests.

use std::path::Path;
use std::process::{Command, Output};

/// Run `memwall args` in `dir`.
#[allow(dead_code)] // the corpus runs the binary its own way
pub fn memwall(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memwall")).args(args).current_dir(dir).output().unwrap()
}

/// (stdout, stderr) as text.
#[allow(dead_code)] // not every test file reads the output
pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A GGUF header's metadata, key by key.
#[allow(dead_code)] // only the import tests build GGUF files
pub type Meta = Vec<(&'static str, memwall_import::gguf::Value)>;

/// A 2-layer llama GGUF (hidden 256, 4 heads, 2 KV heads of 64, FFN 512, vocabulary 1000;
/// Q4_K, Q6_K and F32 tensors) with its metadata edited by `edit`: the file's bytes and its
/// tensor data bytes.
#[allow(dead_code)] // only the import tests build GGUF files
pub fn tiny_gguf(edit: &dyn Fn(&mut Meta)) -> (Vec<u8>, u64) {
    use memwall_import::gguf::{Value, write};
    use memwall_spec::GgmlType;
    let (h, f, v) = (256u64, 512u64, 1000u64);
    let s = |x: &str| Value::String(x.into());
    let mut meta = vec![
        ("general.architecture", s("llama")),
        ("general.file_type", Value::U32(15)),
        ("llama.block_count", Value::U32(2)),
        ("llama.embedding_length", Value::U32(h as u32)),
        ("llama.feed_forward_length", Value::U32(f as u32)),
        ("llama.attention.head_count", Value::U32(4)),
        ("llama.attention.head_count_kv", Value::U32(2)),
        ("llama.context_length", Value::U32(4096)),
        ("llama.vocab_size", Value::U32(v as u32)),
    ];
    edit(&mut meta);
    let mut t: Vec<(String, Vec<u64>, GgmlType)> = vec![("token_embd.weight".into(), vec![h, v], GgmlType::Q4_K)];
    for l in 0..2 {
        for (n, d, g) in [
            ("attn_norm", vec![h], GgmlType::F32),
            ("attn_q", vec![h, h], GgmlType::Q4_K),
            ("attn_k", vec![h, 128], GgmlType::Q4_K),
            ("attn_v", vec![h, 128], GgmlType::Q6_K),
            ("attn_output", vec![h, h], GgmlType::Q4_K),
            ("ffn_norm", vec![h], GgmlType::F32),
            ("ffn_gate", vec![h, f], GgmlType::Q4_K),
            ("ffn_up", vec![h, f], GgmlType::Q4_K),
            ("ffn_down", vec![f, h], GgmlType::Q6_K),
        ] {
            t.push((format!("blk.{l}.{n}.weight"), d, g));
        }
    }
    t.push(("output_norm.weight".into(), vec![h], GgmlType::F32));
    let tt: Vec<(&str, &[u64], GgmlType)> = t.iter().map(|(n, d, g)| (n.as_str(), d.as_slice(), *g)).collect();
    let data = t.iter().map(|(_, d, g)| d[1..].iter().product::<u64>() * d[0] / g.block_size() * g.type_size()).sum();
    (write::file(&meta, &tt), data)
}
