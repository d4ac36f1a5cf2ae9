"""memwall.solve and the sweep's Pareto column."""

import itertools

import pytest

import memwall

DESIGN = dict(model="llama-3.1-8b", device="snapdragon-8-gen3-16gb", context_tokens=32768)


def test_each_question_answers_and_names_what_binds():
    rows = memwall.solve("max_context", **DESIGN)
    assert [r["kv"] for r in rows] == ["f16/f16", "q8_0/q8_0", "q4_0/q4_0"]
    assert all(r["binding"] == "budget" for r in rows)
    assert rows[0]["max_context_tokens"] < rows[1]["max_context_tokens"] < rows[2]["max_context_tokens"]
    ram = memwall.solve("min-ram", **DESIGN)
    assert ram["min_ram_bytes"] > ram["footprint_bytes"]
    bw = memwall.solve("min_bandwidth", **DESIGN, target_tok_s=5)
    assert bw["min_peak_gbps"] is not None and bw["binding"] in ("memory", "storage", "compute")
    # The reply ends the 32K context (no history given: the conversation fills it), where an 8B
    # model decodes at 3-4 tok/s on the phone's cores.
    fit = memwall.solve("cheapest_fit", **DESIGN, target_tok_s=3, max_ppl_delta=0.5)
    best = fit["candidates"][0]
    assert fit["found"] and best["fits"] and best["decode_tok_s"] >= 3 and best["ppl_delta"] <= 0.5
    changes = memwall.solve("what_to_change", **DESIGN, weights="Q8_0")
    assert changes and all(c["headroom_bytes"] >= 0 for c in changes)
    assert memwall.solve("what_to_change", "llama-3.2-1b", "snapdragon-8-gen3-16gb") == []


def test_bad_questions_raise_typed_errors_naming_the_field():
    with pytest.raises(memwall.SpecError) as e:
        memwall.solve("max_width", **DESIGN)
    assert e.value.field == "question"
    with pytest.raises(memwall.MemwallError) as e:
        memwall.solve("min_bandwidth", **DESIGN)
    assert e.value.field == "target_tok_s"
    with pytest.raises(memwall.MemwallError) as e:
        memwall.solve("cheapest_fit", **DESIGN, max_ppl_delta=float("nan"))
    assert e.value.field == "max_ppl_delta"
    with pytest.raises(memwall.MemwallError) as e:
        memwall.solve("min_bandwidth", **DESIGN, target_tok_s="fast")
    assert e.value.field == "target_tok_s"


def test_the_pareto_column_is_the_front_by_brute_force():
    grid = {
        "weights.mix": ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K", "TQ1_0"],
        "kv.k+kv.v": ["f16", "q8_0", "q4_0"],
        "workload.context_tokens": [4096, 32768],
    }
    rows = memwall.sweep(memwall.design("llama-3.1-8b", "snapdragon-8-gen3-16gb"), grid).to_pyarrow().to_pylist()

    def objectives(r):
        if not r["fits"] or r["ppl_delta_weights"] is None or r["ppl_delta_kv"] is None:
            return None
        return (r["total_bytes"], -r["decode_tok_s"], r["ppl_delta_weights"] + r["ppl_delta_kv"], r["energy_j_per_token"])

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))

    obj = [objectives(r) for r in rows]
    for r, o in zip(rows, obj):
        expect = o is not None and not any(p is not None and dominates(p, o) for p in obj)
        assert r["pareto"] == expect, r
    assert 0 < sum(r["pareto"] for r in rows) < len(rows)
    # Dominance is irreflexive: equal designs stay on the front together.
    assert not any(dominates(a, a) for a in itertools.islice((o for o in obj if o), 5))


def test_ops_add_up_to_the_token():
    t = memwall.ops("qwen3-30b-a3b", "snapdragon-8-gen3-16gb", "Q3_K_M")
    e = memwall.estimate("qwen3-30b-a3b", "snapdragon-8-gen3-16gb", "Q3_K_M")
    # The middle of the default reply, which ends the default 4096-token context.
    assert int(t.schema.metadata[b"context_tokens"]) == 4096 - 128 + 64
    rows = t.to_pylist()
    assert sum(r["op"] == "experts" for r in rows) == 48
    total = sum(r["weight_bytes"] for r in rows)
    assert abs(total - e["weight_bytes_per_token"]) <= 1e-6 * total
    assert abs(sum(r["t_mem_s"] for r in rows) - e["t_mem_s"]) <= 1e-9 * e["t_mem_s"]


def test_compare_puts_designs_side_by_side_with_deltas():
    a = memwall.design("llama-3.1-8b", "snapdragon-8-gen3-16gb", context_tokens=32768)
    b = memwall.design("llama-3.1-8b", "snapdragon-8-gen3-16gb", "Q3_K_M", kv="q8_0", context_tokens=32768)
    c = memwall.design("llama-3.1-8b", "apple-a18-pro-8gb", context_tokens=32768)
    rows = memwall.compare(a, b, c).to_pylist()
    assert [r["weights.mix"] for r in rows] == ["Q4_K_M", "Q3_K_M", "Q4_K_M"]
    assert rows[0]["delta_total_bytes"] == 0
    assert rows[1]["delta_total_bytes"] == rows[1]["total_bytes"] - rows[0]["total_bytes"] < 0
    assert abs(rows[2]["delta_decode_tok_s"] - (rows[2]["decode_tok_s"] - rows[0]["decode_tok_s"])) < 1e-12
    assert rows[2]["battery_mah_per_reply"] > 0
    with pytest.raises(memwall.MemwallError) as e:
        memwall.compare(a)
    assert e.value.field == "designs"


def test_pareto_fronts_per_group_over_chosen_objectives():
    import json

    import pyarrow as pa

    # A hand-made table of two sweeps put together (points repeat), quality unknown throughout.
    unknown = pa.array([None] * 4, type=pa.float64())
    t = pa.table({
        "point": [0, 1, 0, 1],
        "g": ["a", "a", "b", "b"],
        "fits": [True, True, True, True],
        "total_bytes": [4, 6, 9, 2],
        "decode_tok_s": [10.0, 5.0, 3.0, 20.0],
        "ppl_delta_weights": unknown,
        "ppl_delta_kv": unknown,
        "energy_j_per_token": [1.0, 2.0, 3.0, 0.5],
    })
    one = memwall.pareto(t)
    assert one.column("pareto").to_pylist() == [False, False, False, True]
    fronts = json.loads(one.schema.metadata[b"pareto"])
    assert fronts["groups"][0]["left_out"] == ["ppl_delta"]
    assert fronts["groups"][0]["objectives"] == ["min:total_bytes", "max:decode_tok_s", "min:energy_j_per_token"]
    per = memwall.pareto(t, by="g", objectives=["total_bytes", "decode_tok_s"])
    assert per.column("pareto").to_pylist() == [True, False, False, True]
    assert [g["key"] for g in json.loads(per.schema.metadata[b"pareto"])["groups"]] == [{"g": "a"}, {"g": "b"}]
    for kwargs, field in (({"by": "nope"}, "pareto.by"), ({"objectives": ["g"]}, "pareto.objectives")):
        with pytest.raises(memwall.SpecError) as e:
            memwall.pareto(t, **kwargs)
        assert e.value.field == field
    # A sweep asks the same question through `pareto=`, and marks what pareto() recomputes.
    base = memwall.design("llama-3.2-1b", "raspberry-pi-5-8gb")
    grid = {"weights.mix": ["Q8_0", "Q4_K_M", "Q2_K"], "workload.context_tokens": [2048, 8192]}
    rule = {"by": ["workload.context_tokens"], "objectives": ["min:total_bytes", "max:decode_tok_s"]}
    r = memwall.sweep(base, grid, pareto=rule).to_pyarrow()
    again = memwall.pareto(r, **rule)
    assert r.column("pareto").equals(again.column("pareto"))
    contexts = {row["workload.context_tokens"] for row in r.to_pylist() if row["pareto"]}
    assert contexts == {2048, 8192}, "each context has its own front"


def test_estimate_states_its_depth_and_decodes_at_several():
    e = memwall.estimate("llama-3.2-1b", "snapdragon-8-gen3-16gb", engine="llama.cpp", context_tokens=32768,
                         depths=[0, 8192, 32640])
    assert e["decode_depth_tokens"] == 32768 - 128 + 64, "the default reply ends the context"
    d = e["at_depths"]
    assert [x["depth_tokens"] for x in d] == [0, 8192, 32640]
    assert d[0]["decode_tok_s"] > d[1]["decode_tok_s"] > d[2]["decode_tok_s"], "deeper is slower"
    deep = memwall.estimate("llama-3.2-1b", "snapdragon-8-gen3-16gb", engine="llama.cpp", context_tokens=32768,
                            prompt_tokens=8192, history_tokens=0)
    assert abs(deep["decode_tok_s"] - d[1]["decode_tok_s"]) < 1e-9 * deep["decode_tok_s"]
    assert d[2]["decode_tok_s_interval"][0] < d[2]["decode_tok_s"] < d[2]["decode_tok_s_interval"][1]
    with pytest.raises(memwall.SpecError) as err:
        memwall.estimate("llama-3.2-1b", "snapdragon-8-gen3-16gb", depths=[-1])
    assert err.value.field == "depths"


def test_quality_is_the_models_own_and_thresholds_bound_answers_and_fronts():
    # Llama-2-7B's own published figures (llama.cpp's Llama 2 vs Llama 3 comparison): Q4_K_M
    # +1.424 %, Q2_K +10.796 %; TQ1_0 is ternary on a model not trained for it.
    design = dict(model="llama-2-7b", device="snapdragon-8-gen3-16gb")
    fit = memwall.solve("cheapest_fit", **design, max_ppl_increase_pct=5)
    assert fit["found"] and fit["max_ppl_increase_pct"] == 5
    assert all(c["ppl_increase_pct"] <= 5 for c in fit["candidates"] if c["meets"])
    tq = next(c for c in fit["candidates"] if c["weights"] == "TQ1_0")
    assert not tq["meets"] and "not usable" in tq["ptq_unusable"]
    with pytest.raises(memwall.SpecError) as e:
        memwall.solve("cheapest_fit", **design, max_ppl_increase_pct="five")
    assert e.value.field == "max_ppl_increase_pct"
    grid = {"weights.mix": ["Q4_K_M", "Q2_K", "TQ1_0"]}
    base = dict(model="llama-2-7b", device="snapdragon-8-gen3-16gb", weights={"mix": "Q4_K_M"})
    rows = memwall.sweep(base=base, grid=grid, pareto={"max_ppl_increase_pct": 5.0}).to_pyarrow().to_pylist()
    by_mix = {r["weights.mix"]: r for r in rows}
    assert by_mix["Q4_K_M"]["ppl_increase_pct"] == pytest.approx(1.424)
    assert by_mix["Q4_K_M"]["weights_quality_provenance"] == "published"
    assert by_mix["Q2_K"]["quality_verdict"] == "reconsider" and by_mix["TQ1_0"]["ptq_unusable"]
    # Q2_K is smaller: on the front without the threshold, off it within +5 %.
    assert [by_mix[m]["pareto"] for m in ("Q4_K_M", "Q2_K", "TQ1_0")] == [True, False, False]
    unbounded = memwall.pareto(memwall.sweep(base=base, grid=grid).to_pyarrow()).to_pylist()
    assert {r["weights.mix"]: r["pareto"] for r in unbounded}["Q2_K"]
    # The model's published MMLU rides along (Meta's Llama 2 model card, base 45.3), a front objective
    # like any column.
    assert by_mix["Q4_K_M"]["model_mmlu"] == pytest.approx(45.3) and "MODEL_CARD" in by_mix["Q4_K_M"]["model_mmlu_source"]
    assert by_mix["Q4_K_M"]["weights_quality_architecture"] == "included"


def test_overrides_and_architecture_move_or_qualify_quality():
    # Keeping attn_v and ffn_down at Q6_K costs Q4_K_S less perplexity (the per-tensor rule).
    kept = {"mix": "Q4_K_S", "overrides": [{"tensors": ["attn_v", "ffn_down"], "format": "q6_K"}]}
    plain = memwall.estimate("llama-3.1-8b", "snapdragon-8-gen3-16gb", weights={"mix": "Q4_K_S"})
    over = memwall.estimate("llama-3.1-8b", "snapdragon-8-gen3-16gb", weights=kept)
    assert over["ppl_increase_pct"] < plain["ppl_increase_pct"]
    assert "overrides (attn_v,ffn_down=q6_K)" in over["quality_source"]
    # An MoE without a published MoE row at Q4_K_M: a dense model's figure, said so.
    rows = memwall.sweep(base=dict(model="qwen3-30b-a3b", device="apple-m3-max-64gb"),
                         grid={"weights.mix": ["Q4_K_M", "Q4_0"]}).to_pyarrow().to_pylist()
    arch = {r["weights.mix"]: r["weights_quality_architecture"] for r in rows}
    assert arch == {"Q4_K_M": "unknown", "Q4_0": "included"}
