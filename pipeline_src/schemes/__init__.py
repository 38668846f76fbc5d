"""The registry of positional schemes (docs/tasks.md): one module per scheme, found by discovery.

Positions are data. A task supplies IDs for every token; a scheme decides

* which base IDs it starts from: the task's coupled IDs (``coupled``) or 0..T-1;
* which *encoding* the decoder uses to see them (:class:`~.scheme.Encoding`);
* how the base IDs are transformed at training time (evaluation uses them unchanged);
* whether the model also *predicts* the ID of the next token (``predicts_positions``).

Every module of this package that defines ``SCHEME`` (a :class:`~.scheme.Scheme`) is a member,
and the scheme is named after it; adding a scheme is adding its module. The encodings are those
the members use, by name (the ``ModelConfig.position_encoding`` of a model). Importing the
registry imports no torch (see :mod:`.scheme`), so the workflow can check a config cheaply.
"""

from __future__ import annotations

import importlib
import pkgutil

from .scheme import Encoding, Scheme


def _discover() -> dict[str, Scheme]:
    """The ``SCHEME`` of every module of this package that defines one, by name."""
    found: dict[str, Scheme] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        scheme = getattr(module, "SCHEME", None)
        if scheme is None:
            continue
        if not isinstance(scheme, Scheme):
            raise TypeError(f"{module.__name__}.SCHEME is a {type(scheme).__name__}, not a Scheme")
        if scheme.module != module.__name__:
            raise ValueError(f"{module.__name__}.SCHEME has module={scheme.module!r}; declare it with module=__name__")
        if scheme.name != info.name:
            raise ValueError(f"{module.__name__}.SCHEME is named {scheme.name!r}; a scheme is named after its module")
        found[scheme.name] = scheme
    return found


def _encodings(schemes: dict[str, Scheme]) -> dict[str, Encoding]:
    """The encodings the schemes use, by name; one name names one encoding."""
    found: dict[str, Encoding] = {}
    for scheme in schemes.values():
        known = found.setdefault(scheme.encoding.name, scheme.encoding)
        if known is not scheme.encoding:
            raise ValueError(f"two encodings are named {known.name!r} (one in {scheme.module})")
    return found


SCHEMES = _discover()
ENCODINGS = _encodings(SCHEMES)


def get_scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise KeyError(f"unknown positional scheme {name!r}; known: {sorted(SCHEMES)}")
    return SCHEMES[name]


def get_encoding(name: str) -> Encoding:
    if name not in ENCODINGS:
        raise KeyError(f"unknown position encoding {name!r}; known: {sorted(ENCODINGS)}")
    return ENCODINGS[name]
