"""DNN planner: Hugging Face config.json files against the published parameter counts, and their errors."""

from __future__ import annotations

import json
import subprocess

import pytest

from support import assert_names_line, yewpy_cmd
from yewpy.apps.dnn.hf_config import is_hf_config
from yewpy.apps.dnn.model_files import load_model
from yewpy.errors import InputError

LLAMA2_7B = {
    "_name_or_path": "meta-llama/Llama-2-7b-hf", "architectures": ["LlamaForCausalLM"],
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "max_position_embeddings": 4096,
    "vocab_size": 32000, "tie_word_embeddings": False, "rms_norm_eps": 1e-05, "hidden_act": "silu",
    "rope_theta": 10000.0, "torch_dtype": "float16",
}
MISTRAL_7B = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 32768, "sliding_window": 4096, "vocab_size": 32000,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-05,
}
MIXTRAL_8X7B = {**MISTRAL_7B, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
                "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": None}
QWEN2_7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "vocab_size": 152064, "tie_word_embeddings": False,
}
GPT2 = {  # the hub's gpt2 config: no tie_word_embeddings (default true), no n_inner (4h)
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new",
}
GPT_NEOX_20B = {
    "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 6144,
    "intermediate_size": 24576, "num_attention_heads": 64, "num_hidden_layers": 44, "vocab_size": 50432,
    "max_position_embeddings": 2048, "rotary_pct": 0.25, "use_parallel_residual": True,
    "tie_word_embeddings": False,
}
FALCON_7B = {  # the hub's falcon-7b config: no max_position_embeddings, no tie_word_embeddings
    "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False, "bias": False,
    "hidden_size": 4544, "multi_query": True, "new_decoder_architecture": False, "num_attention_heads": 71,
    "num_hidden_layers": 32, "parallel_attn": True, "vocab_size": 65024,
}
T5_11B = {  # the hub's t5-11b config: no num_decoder_layers, feed_forward_proj or tie_word_embeddings
    "architectures": ["T5WithLMHeadModel"], "model_type": "t5", "d_ff": 65536, "d_kv": 128, "d_model": 1024,
    "n_positions": 512, "num_heads": 128, "num_layers": 24, "vocab_size": 32128,
    "relative_attention_num_buckets": 32, "is_encoder_decoder": True,
}

# Published parameter counts (model cards / papers). Each is also what the architecture gives by hand:
# Llama-2-7B 32*(4h^2 + 3hf + 2h) + 2Vh = 6,738,411,520 (+4096 for the final norm, which we leave out);
# Mistral-7B 32*(41,943,040 attention (8 kv heads) + 3hf + 2h) + 2Vh = 7,241,728,000;
# Mixtral 32*(41,943,040 + 8*176,160,768 experts + 32,768 router + 8192 norms) + 2Vh = 46,702,788,608;
# Qwen2-7B 7,615,612,928 counting its q/k/v biases (28*4608; +3584 final norm = 7,615,616,512);
# GPT-2 124,438,272 (+1536 final LayerNorm = 124,439,808); GPT-NeoX-20B 20,554,555,392 (+12,288 final
# norm = 20,554,567,680); Falcon-7B 32*(h(h+128) + h^2 + 8h^2 + 2h) + Vh = 6,921,711,616 (one LayerNorm
# per parallel layer); T5-11B encoder 24*(4*h*16384 + 2*h*65536 + 2h) + decoder 24*(8*h*16384 +
# 2*h*65536 + 3h) + Vh = 11,307,311,104 (+8192 relative-position bias, +2048 final norms; we count 4h
# per decoder layer, +24,576). All are within 0.07% of the published figure, well inside 1.5%.
PUBLISHED = [
    ("llama2-7b", LLAMA2_7B, 6.738e9),
    ("mistral-7b-v0.1", MISTRAL_7B, 7.242e9),
    ("mixtral-8x7b", MIXTRAL_8X7B, 46.70e9),
    ("qwen2-7b", QWEN2_7B, 7.616e9),
    ("gpt2", GPT2, 124.4e6),
    ("gpt-neox-20b", GPT_NEOX_20B, 20.55e9),
    ("falcon-7b", FALCON_7B, 6.92e9),
    ("t5-11b", T5_11B, 11.3e9),
]


def write(tmp_path, config: dict, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(config, indent=2))
    return str(path)


def key_line(config: dict, key: str) -> int:
    """The line ``json.dumps(config, indent=2)`` puts ``key`` on."""
    lines = json.dumps(config, indent=2).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.lstrip().startswith(f'"{key}":'))


@pytest.mark.parametrize("name, config, published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_count_matches_the_published_one(tmp_path, name, config, published):
    model = load_model(write(tmp_path, config))
    assert model.params == pytest.approx(published, rel=0.015)
    assert model.meta["model_type"] == config["model_type"]
    assert model.name == config.get("_name_or_path", str(tmp_path / "config.json"))


def test_the_configs_give_the_hyperparameters_and_defaults(tmp_path):
    llama = load_model(write(tmp_path, LLAMA2_7B))
    preset = load_model("llama2-7b")  # the preset is the same model, so the same blocks
    assert llama.params == preset.params and llama.seq == 4096
    assert llama.forward_flops(1) == pytest.approx(preset.forward_flops(1), rel=1e-12)
    mixtral = load_model(write(tmp_path, MIXTRAL_8X7B))
    assert mixtral.params == load_model("mixtral-8x7b").params
    assert (mixtral.meta["experts"], mixtral.meta["top_k"], mixtral.meta["kv_heads"]) == (8, 2, 8)
    falcon = load_model(write(tmp_path, FALCON_7B))
    assert (falcon.meta["kv_heads"], falcon.meta["ffn"], falcon.seq) == (1, 4 * 4544, 2048)
    assert falcon.meta["tied"] and not falcon.meta["positions"]
    t5 = load_model(write(tmp_path, T5_11B))
    assert (t5.meta["layers"], t5.meta["head_dim"], t5.seq, t5.meta["swiglu"]) == (48, 128, 512, False)
    assert t5.params == pytest.approx(load_model("t5-11b").params, rel=1e-12)
    v11 = {**T5_11B, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
    gated = load_model(write(tmp_path, v11))  # a third FFN matrix in 48 layers, and an untied head
    assert gated.meta["swiglu"] and gated.params == t5.params + 48 * 1024 * 65536 + 32128 * 1024
    gpt2 = load_model(write(tmp_path, GPT2))
    assert (gpt2.seq, gpt2.meta["ffn"], gpt2.meta["tied"]) == (1024, 3072, True)
    # Qwen2 is Llama-shaped plus q/k/v biases: A + 2*kv_dim = 3584 + 2*512 per layer
    qwen = load_model(write(tmp_path, QWEN2_7B))
    as_llama = load_model(write(tmp_path, {**QWEN2_7B, "model_type": "llama"}))
    assert qwen.params - as_llama.params == 28 * 4608
    # head_dim given: A = heads * head_dim need not be the hidden size, and heads need not divide it
    odd = load_model(write(tmp_path, {**LLAMA2_7B, "hidden_size": 4000, "head_dim": 128}))
    assert odd.meta["head_dim"] == 128 and odd.blocks[1].flops_per_token_sq == 4 * 32 * 128
    # null is "not given" for optional keys, as transformers writes it
    assert load_model(write(tmp_path, {**GPT2, "n_inner": None})).params == gpt2.params
    assert is_hf_config({"architectures": []}) and is_hf_config({"model_type": "x"})
    assert not is_hf_config({"transformer": {}}) and not is_hf_config([])


def test_architectures_name_the_family_when_model_type_is_missing(tmp_path):
    config = {key: value for key, value in GPT2.items() if key != "model_type"}
    assert load_model(write(tmp_path, config)).params == load_model(write(tmp_path, GPT2, "b.json")).params


@pytest.mark.parametrize("config, key, message", [
    ({**LLAMA2_7B, "model_type": "bloom"}, "model_type", "supported are llama, mistral, mixtral, qwen2"),
    ({key: v for key, v in LLAMA2_7B.items() if key != "hidden_size"}, None, "missing 'hidden_size'"),
    ({**LLAMA2_7B, "num_hidden_layers": True}, "num_hidden_layers", "must be a positive integer, got true"),
    ({**LLAMA2_7B, "num_hidden_layers": 32.0}, "num_hidden_layers", "got 32.0"),
    ({**GPT2, "n_embd": "768"}, "n_embd", 'got "768"'),
    ({**MISTRAL_7B, "intermediate_size": 0}, "intermediate_size", "must be a positive integer, got 0"),
    ({**QWEN2_7B, "vocab_size": None}, "vocab_size", "got null"),
    ({**LLAMA2_7B, "num_attention_heads": 30}, "num_attention_heads", "does not divide the hidden size 4096"),
    ({**FALCON_7B, "num_attention_heads": 70}, "num_attention_heads", "does not divide the hidden size 4544"),
    ({**MISTRAL_7B, "num_key_value_heads": 6}, "num_key_value_heads", "does not divide the 32 attention"),
    ({**MIXTRAL_8X7B, "num_experts_per_tok": 9}, "num_experts_per_tok", "more than the 8 experts"),
    ({**GPT2, "tie_word_embeddings": 1}, "tie_word_embeddings", "must be true or false"),
    ({**T5_11B, "feed_forward_proj": 2}, "feed_forward_proj", "must be a string"),
], ids=["unknown-type", "missing", "bool", "float", "string", "zero", "null", "heads", "falcon-heads", "kv",
        "top-k", "tied", "proj"])
def test_bad_configs_name_the_key_line(tmp_path, config, key, message):
    path = tmp_path / "config.json"
    line = 1 if key is None else key_line(config, key)  # a missing key: the line of the object's "{"
    assert_names_line(load_model, path, json.dumps(config, indent=2), line)
    with pytest.raises(InputError, match=message):
        load_model(str(path))


def test_cli_plans_a_small_gpt2_config(tmp_path):
    config = write(tmp_path, {**GPT2, "n_embd": 256, "n_layer": 4, "n_head": 8, "n_positions": 256})
    base = [*yewpy_cmd(), "dnn-plan", "--cluster", "dgx-a100-80g:1x8", "--global-batch", "8"]
    out = subprocess.run([*base, "--model", config], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    bad = write(tmp_path, {**GPT2, "model_type": "bert"}, "bad.json")
    refused = subprocess.run([*base, "--model", bad], capture_output=True, text=True, timeout=120)
    line = key_line({**GPT2, "model_type": "bert"}, "model_type")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(f"yewpy: error: {bad}:{line}: unsupported model_type"), refused.stderr


def test_falcon_counts_what_transformers_builds(tmp_path):
    """As transformers' FalconAttention/FalconDecoderLayer (the fuzzer's oracle found both differences):
    the old architecture ignores num_kv_heads (q, k, v of every head, 3h, without multi_query), and
    num_ln_in_parallel_attn = 2 or parallel_attn = false give two LayerNorms in either architecture."""
    h, layers, head = 4544, 32, 4544 // 71
    multi_query = load_model(write(tmp_path, FALCON_7B)).params
    full = load_model(write(tmp_path, {**FALCON_7B, "multi_query": False})).params
    assert full - multi_query == layers * h * (2 * h - 2 * head)
    assert load_model(write(tmp_path, {**FALCON_7B, "multi_query": False, "num_kv_heads": 1})).params == full
    two_norms = load_model(write(tmp_path, {**FALCON_7B, "num_ln_in_parallel_attn": 2})).params
    assert two_norms - multi_query == layers * 2 * h
    new = {**FALCON_7B, "new_decoder_architecture": True, "num_kv_heads": 71}
    one = load_model(write(tmp_path, {**new, "num_ln_in_parallel_attn": 1})).params
    assert load_model(write(tmp_path, {**new, "num_ln_in_parallel_attn": 1, "parallel_attn": False})).params \
        == one + layers * 2 * h
    bad = {**FALCON_7B, "num_ln_in_parallel_attn": 3}
    assert_names_line(load_model, tmp_path / "config.json", json.dumps(bad, indent=2),
                      key_line(bad, "num_ln_in_parallel_attn"))
