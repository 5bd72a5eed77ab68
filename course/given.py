"""The given plumbing of the section modules: the checks of their inputs, the training loop's
progress bar and log, and the normalisation of `get_elmo_embeddings`' input.

A section module calls these in the lines it gives before the learner's code:

    from course.given import check_sequences
    ...
    check_sequences(sequences)  # clear errors for nothing to pad, given

A check stands only where a bad input would otherwise give a silently wrong answer or a
baffling error deep inside torch; elsewhere python's or torch's own error says what is wrong.
Each raises TypeError or ValueError with a message that names what it got.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import nn
from tqdm import tqdm

__all__ = [
    "as_batch",
    "check_chars",
    "check_device_request",
    "check_encoder_sizes",
    "check_ids",
    "check_initial_scalars",
    "check_labels",
    "check_layers",
    "check_max_chars",
    "check_sequences",
    "check_sizes",
    "check_vectors",
    "corpus_sentences",
    "id_list",
    "progress_bar",
    "show_loss",
]

Sentence = str | Sequence[int] | torch.Tensor  # one sentence, as get_elmo_embeddings takes it


# --- section 1 ---------------------------------------------------------------------------


def check_device_request(preferred: str | torch.device | None, env_var: str) -> None:
    """The request `get_device` follows (`preferred`, else a non-empty `$env_var`) must name
    a device, and CUDA only where there is one; the error says where the request came from
    (an environment variable's value appears nowhere in the caller's code)."""
    if preferred is not None:
        choice, source = preferred, "get_device(preferred=...)"
    else:
        choice, source = os.environ.get(env_var) or None, f"${env_var}"
    if choice is None:
        return
    try:
        device = torch.device(choice)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"{source} must name a device such as 'cpu' or 'cuda', got {choice!r}"
        ) from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {choice!r} was requested but CUDA is not available here")


# --- section 2 ---------------------------------------------------------------------------


def corpus_sentences(corpus: Iterable[str]) -> list[str]:
    """The sentences of `corpus` as a list (it may be a generator); a single str would be
    read as a corpus of one-letter sentences, so it is refused."""
    if isinstance(corpus, str):
        raise TypeError("build_vocab expects a collection of sentences, got a single str")
    return list(corpus)


def id_list(ids: Iterable[int] | torch.Tensor) -> list[int]:
    """Word ids, given as a list or a 1-D tensor, as a list of python ints (a tensor's
    elements are no dictionary's keys)."""
    return ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)


def check_sequences(sequences: Sequence[Sequence[int]]) -> None:
    """At least one sequence to pad, none of them empty."""
    if len(sequences) == 0:
        raise ValueError("pad_batch needs at least one sequence")
    empty = [i for i, seq in enumerate(sequences) if len(seq) == 0]
    if empty:
        raise ValueError(f"pad_batch got empty sequences at positions {empty}")


# --- sizes (sections 3 and 8) ------------------------------------------------------------


def check_sizes(**sizes: int | tuple[int, int]) -> None:
    """Each size an int of at least 1, or of at least `low` when given as (size, low): a
    size of 0 builds modules that compute nothing, without an error."""
    for name, size in sizes.items():
        value, low = size if isinstance(size, tuple) else (size, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int of at least {low}, got {value!r}")


def check_encoder_sizes(output_dim: int, char_dim: int, filters: Sequence[tuple[int, int]],
                        highway_layers: int) -> None:
    """`CharEncoder`'s sizes: every width and count at least 1, at least one filter."""
    check_sizes(output_dim=output_dim, char_dim=char_dim, highway_layers=(highway_layers, 0))
    if len(filters) == 0:
        raise ValueError("CharEncoder needs at least one (width, count) filter")
    for width, count in filters:
        check_sizes(filter_width=width, filter_count=count)


# --- section 3 ---------------------------------------------------------------------------


def check_ids(ids: torch.Tensor, lengths: torch.Tensor | Sequence[int] | None,
              vocab_size: int) -> torch.Tensor:
    """`lengths` as a LongTensor (B,) on the CPU (None: every column is T long), after
    checking that `ids` is a non-empty (T, B) batch of ids in [0, vocab_size) and that the
    lengths match it. An id out of range fails deep inside the embedding (on a GPU, as a
    device-side assert), and a length out of [1, T] reads the wrong positions silently."""
    if ids.dim() != 2:
        raise ValueError(
            f"BiLM expects ids of shape (seq_len, batch), got {tuple(ids.shape)}; "
            "for one sentence use ids.unsqueeze(1)"
        )
    if ids.numel() == 0:
        raise ValueError(f"BiLM got an empty batch of shape {tuple(ids.shape)}")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"token ids must lie in [0, {vocab_size}), found ids from {low} to {high}"
        )
    seq_len, batch = ids.shape
    if lengths is None:
        return torch.full((batch,), seq_len, dtype=torch.long)
    lengths = torch.as_tensor(lengths)
    if lengths.shape != (batch,):
        raise ValueError(
            f"lengths must have shape ({batch},), one per sentence, got {tuple(lengths.shape)}"
        )
    if int(lengths.min()) < 1 or int(lengths.max()) > seq_len:
        raise ValueError(f"every length must lie in [1, {seq_len}], got {lengths.tolist()}")
    return lengths.long().cpu()


# --- section 4 ---------------------------------------------------------------------------


def progress_bar(epochs: int, show: bool) -> tqdm:
    """The epochs 1 .. epochs to loop over, as a progress bar on stderr when `show`."""
    return tqdm(range(1, epochs + 1), desc="pre-training", unit="epoch", disable=not show,
                leave=False)


def show_loss(bar: tqdm, epoch: int, loss: float, log_every: int) -> None:
    """`loss`, epoch `epoch`'s, on the bar; printed too every `log_every` epochs (0: never)."""
    bar.set_postfix(loss=f"{loss:.3f}")
    if log_every and epoch % log_every == 0:
        tqdm.write(f"epoch {epoch:3d}  loss {loss:.4f}")


# --- section 5 ---------------------------------------------------------------------------


def as_batch(sentences: Sentence | Sequence[Sentence], word2idx: dict[str, int] | None,
             encode: Callable[[str, dict[str, int]], list[int]]
             ) -> tuple[list[list[int]], bool]:
    """(the word ids of every sentence, without boundaries; whether `sentences` was one
    sentence rather than a list of them). Text is encoded with `encode` (section 2's).

    Raises:
        TypeError: ids that are not integers (floats would be cut to ints silently).
        ValueError: no sentences, an empty one, a tensor that is not 1-D, or text without
            `word2idx`.
    """
    single = isinstance(sentences, str | torch.Tensor) or (
        isinstance(sentences, Sequence) and len(sentences) > 0
        and all(isinstance(i, int) for i in sentences)
    )
    batch = [sentences] if single else list(sentences)
    if not batch:
        raise ValueError("get_elmo_embeddings got no sentences")
    return [_word_ids(s, word2idx, encode, i) for i, s in enumerate(batch)], single


def _word_ids(sentence: Sentence, word2idx: dict[str, int] | None,
              encode: Callable[[str, dict[str, int]], list[int]], position: int) -> list[int]:
    if isinstance(sentence, str):
        if word2idx is None:
            raise ValueError("get_elmo_embeddings got text; pass word2idx to encode it")
        sentence = encode(sentence, word2idx)
    elif isinstance(sentence, torch.Tensor):
        if sentence.dtype.is_floating_point or sentence.dtype == torch.bool:
            raise TypeError(f"sentence {position}: expected integer ids, got {sentence.dtype}")
        if sentence.dim() != 1:
            raise ValueError(
                f"sentence {position}: expected a 1-D tensor of word ids, "
                f"got shape {tuple(sentence.shape)}"
            )
        sentence = sentence.tolist()
    ids = list(sentence)
    if not ids:
        raise ValueError(f"sentence {position} is empty: there is nothing to embed")
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise TypeError(f"sentence {position}: expected word ids as ints, got {ids!r}")
    return ids


# --- section 6 ---------------------------------------------------------------------------


def check_vectors(a: torch.Tensor, b: torch.Tensor) -> None:
    """Two tensors of one shape (..., D), D >= 1: other shapes would broadcast into cosines
    of the wrong pairs, and a 0-d tensor has no axis to sum over."""
    if a.shape != b.shape:
        raise ValueError(
            f"cosine_sim expects two tensors of one shape (..., D), got {tuple(a.shape)} "
            f"and {tuple(b.shape)}"
        )
    if a.dim() == 0 or a.shape[-1] == 0:
        raise ValueError(f"cosine_sim needs vectors with D >= 1 components, got {tuple(a.shape)}")


def check_labels(labels: Sequence[tuple[str, str, str]]) -> None:
    """Labels with something to compare: some, and one target word in two of them."""
    if len(labels) == 0:
        raise ValueError("compare_contexts needs labelled sentences; got none")
    words = [word for _, word, _ in labels]
    if len(set(words)) == len(words):
        raise ValueError("compare_contexts found no target word in two sentences")


# --- section 7 ---------------------------------------------------------------------------


def check_initial_scalars(mixture_size: int,
                          initial_scalar_parameters: Sequence[float] | None) -> None:
    """As many initial scalars as layers to mix: otherwise the mix would silently take the
    scalars' number of layers."""
    if initial_scalar_parameters is not None and len(initial_scalar_parameters) != mixture_size:
        raise ValueError(
            f"initial_scalar_parameters has {len(initial_scalar_parameters)} values "
            f"({list(initial_scalar_parameters)}); mixture_size is {mixture_size}"
        )


def check_layers(tensors: Sequence[torch.Tensor] | torch.Tensor, mask: torch.Tensor | None,
                 mixture_size: int, do_layer_norm: bool) -> None:
    """`mixture_size` layers of one shape (a mix of fewer, or of shapes that broadcast,
    would be silently wrong); with layer normalisation, a mask of their shape without D that
    leaves some position unmasked (or the statistics are nan)."""
    if len(tensors) != mixture_size:
        raise ValueError(f"ScalarMix was built to mix {mixture_size} layers, got {len(tensors)}")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"ScalarMix needs layers of one shape, got {sorted(shapes)}")
    if not do_layer_norm or mask is None:
        return  # the mask is used only by the layer normalisation
    positions = tensors[0].shape[:-1]
    if mask.shape != positions:
        raise ValueError(
            f"mask must have the layers' shape without D, {tuple(positions)}, "
            f"got {tuple(mask.shape)}"
        )
    if not mask.any():
        raise ValueError("layer normalisation needs at least one unmasked position")


# --- section 8 ---------------------------------------------------------------------------


def check_max_chars(max_chars: int) -> None:
    """Room for BOW, a character and EOW: fewer would give more ids than `max_chars`."""
    if not isinstance(max_chars, int) or max_chars < 3:
        raise ValueError(f"max_chars must be an int of at least 3 (BOW, a character, EOW), "
                         f"got {max_chars!r}")


def check_chars(chars: torch.Tensor, convolutions: Iterable[nn.Conv1d],
                vocab_size: int | None = None) -> None:
    """Character ids (..., C) with C at least the widest of `convolutions` (a narrower input
    fails deep inside the convolution), and, given `vocab_size`, ids in [0, vocab_size)."""
    widest = max(conv.kernel_size[0] for conv in convolutions)
    if not isinstance(chars, torch.Tensor) or chars.dim() < 1 or chars.shape[-1] < widest:
        shape = tuple(chars.shape) if isinstance(chars, torch.Tensor) else type(chars)
        raise ValueError(f"CharEncoder expects character ids (..., C) with C at least "
                         f"{widest}, the widest filter, got {shape}")
    if vocab_size is not None and (chars.numel() == 0 or int(chars.min()) < 0
                                   or int(chars.max()) >= vocab_size):
        raise ValueError(f"CharBiLM expects character ids in [0, {vocab_size}) of shape "
                         f"(seq_len, batch, C), got {tuple(chars.shape)}")
