"""Byte-level BPE tokenizer and the tokenized corpus as Parquet.

The tokenizer is GPT-2 style byte-level BPE from the ``tokenizers`` library: no normalisation, a
byte-level pre-tokenizer without an added prefix space, all 256 byte symbols in the initial
alphabet (so any text encodes and decodes back exactly), and one special token, ``<|endoftext|>``
(ID 0), which ends every document of the token stream. Training is deterministic: the same
documents and vocabulary size give byte-identical ``tokenizer.json`` whatever the number of
threads (``RAYON_NUM_THREADS``); the tests check it.

The token stream has one row per document: ``doc`` (its index in the corpus), ``split``
(``train`` or ``heldout``) and ``tokens`` (its IDs, the end-of-document token last).
"""

from pathlib import Path

import polars as pl
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from .. import datasets
from ..storage.atomic import write_text
from ..storage.table_schema import Field, TableSchema, dataframe_check
from .corpus import HELDOUT, TRAIN

EOD = "<|endoftext|>"
RESERVED_TOKENS = (EOD,)
DEFAULT_VOCAB_SIZE = 8192
MIN_VOCAB_SIZE = len(RESERVED_TOKENS) + 256  # the special tokens plus the byte alphabet


class TokenizerError(ValueError):
    """A tokenizer that cannot be trained or loaded, or that lacks the end-of-document token."""


def train_tokenizer(documents: list[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> Tokenizer:
    """Train byte-level BPE on ``documents`` up to ``vocab_size`` tokens (fewer if the text runs
    out of pairs to merge)."""
    if not isinstance(vocab_size, int) or vocab_size < MIN_VOCAB_SIZE:
        raise TokenizerError(f"vocab_size must be an integer >= {MIN_VOCAB_SIZE} "
                             f"(special tokens + 256 bytes), got {vocab_size!r}")
    if not documents:
        raise TokenizerError("no documents to train the tokenizer on")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(RESERVED_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(documents, trainer, length=len(documents))
    return tokenizer


def save_tokenizer(tokenizer: Tokenizer, path: str | Path) -> None:
    """Write ``tokenizer.json`` atomically (the bytes are a function of the tokenizer alone)."""
    write_text(path, tokenizer.to_str(pretty=True))


def load_tokenizer(path: str | Path) -> Tokenizer:
    """Load a local ``tokenizer.json`` (ours or any Hugging Face one that has ``<|endoftext|>``), or
    the tokenizer of a GGUF model (a file, or a shipped name: :mod:`.pretrained`)."""
    from ..planning.language_inputs import is_gguf
    from . import pretrained

    if is_gguf(path):
        tokenizer = pretrained.load_tokenizer(path)
    elif not Path(path).is_file():
        raise TokenizerError(f"{path}: no such tokenizer file")
    else:
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as err:  # tokenizers raises a bare Exception on bad files
            raise TokenizerError(f"{path}: not a readable tokenizer.json ({err})") from None
    if tokenizer.token_to_id(EOD) is None:
        raise TokenizerError(f"{path}: has no end-of-document token {EOD!r}")
    return tokenizer


def eod_id(tokenizer: Tokenizer) -> int:
    token_id = tokenizer.token_to_id(EOD)
    if token_id is None:
        raise TokenizerError(f"tokenizer has no end-of-document token {EOD!r}")
    return token_id


# --- the token stream ---------------------------------------------------------------------------


class TokenStreamSchema(TableSchema):
    """One tokenized document per row; ``_vocab_size`` (set by :func:`token_schema`) bounds the IDs."""

    doc: pl.Int64 = Field(ge=0, unique=True)
    split: pl.String = Field(isin=[TRAIN, HELDOUT])
    tokens: pl.List(pl.Int32)

    _vocab_size = 2**31 - 1

    @dataframe_check
    def tokens_in_vocabulary(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("tokens").list.eval(pl.element().is_between(0, cls._vocab_size - 1)).list.all())

    @dataframe_check
    def at_least_one_token_and_eod(cls, data) -> pl.LazyFrame:
        """Every document has a token before its end-of-document token."""
        return data.lazyframe.select(pl.col("tokens").list.len() >= 2)


def token_schema(vocab_size: int) -> type[TokenStreamSchema]:
    """:class:`TokenStreamSchema` with token IDs bounded by ``vocab_size``."""
    return type(f"TokenStreamSchema{vocab_size}", (TokenStreamSchema,), {"_vocab_size": int(vocab_size)})


def encode_documents(tokenizer: Tokenizer, documents: list[str], labels: list[str]) -> pl.DataFrame:
    """The token stream of ``documents`` (each followed by the end-of-document token)."""
    if len(documents) != len(labels):
        raise TokenizerError(f"{len(documents)} documents but {len(labels)} split labels")
    end = eod_id(tokenizer)
    tokens = [enc.ids + [end] for enc in tokenizer.encode_batch(documents, add_special_tokens=False)]
    return pl.DataFrame({
        "doc": pl.Series(range(len(documents)), dtype=pl.Int64),
        "split": pl.Series(labels, dtype=pl.String),
        "tokens": pl.Series(tokens, dtype=pl.List(pl.Int32)),
    })


def write_tokens(frame: pl.DataFrame, path: str | Path, tokenizer: Tokenizer, record: dict) -> None:
    """Validate the token stream against the tokenizer's vocabulary and write it with ``record``
    (from :func:`pipeline_src.provenance.records.build_record`) as Parquet metadata and sidecar."""
    datasets.write(frame, path, token_schema(tokenizer.get_vocab_size()), record)


def read_tokens(path: str | Path, vocab_size: int) -> pl.DataFrame:
    return datasets.read(path, token_schema(vocab_size))
