"""A tiny Llama model written as a GGUF file (the ``gguf`` package's writer), with a byte-level BPE
tokenizer of our own in it: what the pretrained-model tests load through the same code path as
SmolLM2-135M's file, without its 93 MB."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pipeline_src.language.tokenizer import EOD, train_tokenizer

DOCUMENTS = [f"the cat number {i} sat on the mat and looked at the dog {i * 7}" for i in range(60)]
NORMAL, CONTROL = 1, 3  # GGUF token types


def write_tiny_llama(path: Path, d_model: int = 32, n_layer: int = 2, n_head: int = 4, n_kv_head: int = 2,
                     d_mlp: int = 64, seed: int = 0):
    """Write a random Llama of these sizes, and its tokenizer, as the GGUF file ``path``; return the
    tokenizer (a ``tokenizers.Tokenizer``)."""
    import gguf

    tokenizer = train_tokenizer(DOCUMENTS, vocab_size=300)
    bpe = json.loads(tokenizer.to_str())["model"]
    tokens = sorted(bpe["vocab"], key=bpe["vocab"].get)
    merges = [merge if isinstance(merge, str) else " ".join(merge) for merge in bpe["merges"]]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(n_layer)
    writer.add_context_length(256)
    writer.add_embedding_length(d_model)
    writer.add_feed_forward_length(d_mlp)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv_head)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_rope_dimension_count(d_model // n_head)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([CONTROL if token == EOD else NORMAL for token in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokenizer.token_to_id(EOD))
    writer.add_eos_token_id(tokenizer.token_to_id(EOD))
    rng = np.random.default_rng(seed)
    kv = n_kv_head * d_model // n_head

    def weight(*shape: int) -> np.ndarray:  # [out, in], as PyTorch holds a linear layer's weight
        return (0.2 * rng.standard_normal(shape)).astype(np.float32)

    ones = np.ones(d_model, np.float32)
    writer.add_tensor("token_embd.weight", weight(len(tokens), d_model))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", weight(len(tokens), d_model))
    for block in range(n_layer):
        for name, value in (("attn_norm", ones), ("attn_q", weight(d_model, d_model)), ("attn_k", weight(kv, d_model)),
                            ("attn_v", weight(kv, d_model)), ("attn_output", weight(d_model, d_model)),
                            ("ffn_norm", ones), ("ffn_gate", weight(d_mlp, d_model)),
                            ("ffn_up", weight(d_mlp, d_model)), ("ffn_down", weight(d_model, d_mlp))):
            writer.add_tensor(f"blk.{block}.{name}.weight", value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tokenizer
