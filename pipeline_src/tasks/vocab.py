"""A task's vocabulary: token strings <-> integer ids, with the special tokens first."""

from __future__ import annotations

from dataclasses import dataclass

RESERVED_TOKENS = ("<pad>", "<bos>", "<eos>")


@dataclass(frozen=True)
class Vocab:
    tokens: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.tokens[: len(RESERVED_TOKENS)] != RESERVED_TOKENS:
            raise ValueError(f"a vocabulary must start with {RESERVED_TOKENS}")
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("duplicate token in vocabulary")

    @classmethod
    def with_specials(cls, *tokens: str) -> "Vocab":
        return cls(RESERVED_TOKENS + tuple(tokens))

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, token: str) -> int:
        return self.tokens.index(token)

    def decode(self, ids) -> list[str]:
        return [self.tokens[int(i)] for i in ids]

    @property
    def pad(self) -> int:
        return 0
