//! `memwall decode` as a user runs it.

mod common;
use common::{memwall, text};

const TINY: &str = "name = \"tiny\"\nn_layers = 2\nhidden = 256\nn_heads = 4\nn_kv_heads = 2\nffn = 512\nvocab = 400\n";

#[test]
fn decode_times_tokens_and_operators() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), TINY).unwrap();
    let args = ["decode", "--model", "tiny.toml", "--weights", "Q4_K_M", "--kv", "q8_0", "--tokens", "4"];
    let o = memwall(&[&args[..], &["--context", "100", "--threads", "2"]].concat(), dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("tok/s") && out.contains("KV q8_0/q8_0") && out.contains("at 106 tokens"), "{out}");
    for op in ["attn_proj", "attention", "ffn", "lm_head"] {
        assert!(out.lines().any(|l| l.starts_with(op)), "{op} missing:\n{out}");
    }
}

#[test]
fn decode_refuses_what_the_engine_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), TINY).unwrap();
    for (extra, needle) in [
        (&["--kv", "q4_k"][..], "kv.k"),
        (&["--weights", "int4-g128"][..], "weights (blk.0.attn_q)"),
        (&["--tokens", "0"][..], "--tokens"),
        (&["--temperature", "nan"][..], "--temperature"),
        (&["--threads", "0"][..], "threads"),
        // More KV cache, or weights, than this machine has: refused before any allocation.
        (&["--context", "100000000000000"][..], "--context"),
        (&["--tokens", "18446744073709551615"][..], "--tokens"),
    ] {
        let o = memwall(&[&["decode", "--model", "tiny.toml"][..], extra].concat(), dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
}

#[test]
fn decode_refuses_a_model_larger_than_the_memory() {
    let dir = tempfile::tempdir().unwrap();
    let o = memwall(&["decode", "--model", "llama-3.1-70b", "--weights", "F16"], dir.path());
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--model with --weights") && err.contains("GB of memory"), "{err}");
}
