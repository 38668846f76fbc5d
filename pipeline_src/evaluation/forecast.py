"""Where a model will stop, read from its attention at the lengths it was trained on.

The law (docs/mechanism.md, "The forecast"): the query predicting a response token puts mass M on its
dependency set of d keys among the n it sees. Write the log-odds of that mass against the log-odds of
uniform attention's d / n as the head's *margin*,

    margin = logit(M) - logit(d / n),

which is exactly the log of (mean exp-logit on the set) / (mean exp-logit on the other keys). A head
whose logits on the set beat the others' by a margin that does not grow with length keeps it at every
length, so at another length, where uniform attention gives u,

    M(u) = sigmoid(margin + logit(u)) = 1 / (1 + (1 - u) / u * exp(-margin)),

the mass dilutes as 1 / (1 + (n - d) e^(-margin) / d). The forecast takes each model's margin from the
mechanism tables at its training lengths only (:mod:`.mechanism`; the head with the largest margin
there, per k_test) and predicts that head's mass at every evaluated length from the uniform mass
there. Torch-free: it reads the tables.
"""

from __future__ import annotations

import numpy as np
import polars as pl

RUN = ("task", "variant", "scheme", "k_train", "seed")  # a model: the run columns of every table about it


def predicted_mass(margin, uniform):
    """The mass a head of ``margin`` puts on a dependency set that uniform attention gives ``uniform``
    (arrays broadcast): sigmoid(margin + logit(uniform))."""
    uniform = np.asarray(uniform, dtype=np.float64)
    return 1.0 / (1.0 + (1.0 - uniform) / uniform * np.exp(-np.asarray(margin, dtype=np.float64)))


def mass_forecast(attention: pl.DataFrame, train_lengths: list[int]) -> pl.DataFrame:
    """Per model, k_test and evaluated length of the attention tables ``attention``: the head with the
    largest margin at ``train_lengths`` (its mean over those cells, weighted by their queries), that
    margin, and the head's ``predicted`` mass at the length (:func:`predicted_mass` of the cell's
    uniform mass) beside its ``measured`` one. Models or k_test with no query at a training length are
    left out."""
    keyed = attention.filter(pl.col("queries") > 0)
    head = [*RUN, "k", "layer", "head"]
    margins = (keyed.filter(pl.col("length").is_in(train_lengths))
               .group_by(head)
               .agg(train_margin=(pl.col("margin") * pl.col("queries")).sum() / pl.col("queries").sum()))
    order = [*RUN, "k", "train_margin", "layer", "head"]
    best = (margins.sort(order, descending=[column == "train_margin" for column in order], nulls_last=True)
            .unique([*RUN, "k"], keep="first", maintain_order=True))
    joined = keyed.join(best, on=head, how="inner", nulls_equal=True).sort([*RUN, "k", "length"])
    predicted = predicted_mass(joined["train_margin"].to_numpy(), joined["uniform_mass"].to_numpy())
    return joined.select(*RUN, "k", "length", "layer", "head", "train_margin", "uniform_mass",
                         pl.Series("predicted", predicted), pl.col("dependency_mass").alias("measured"))


def reach(lengths, values, level: float) -> int | None:
    """The longest of ``lengths`` (ascending) up to which ``values`` stays at or above ``level`` at every
    length, counted from the first; None where the first is already below."""
    reached = None
    for length, value in zip(lengths, values, strict=True):
        if not value >= level:  # NaN ends it too
            break
        reached = length
    return reached


MASS_LEVEL = 0.5  # predicted reach: forecast mass >= this share of its own at the longest training length
ACCURACY_LEVEL = 0.9  # measured reach: exact match >= this share of its own there
FAR = 4  # the mass forecast is compared with the measured one at FAR times the longest training length
REACH_COLUMNS = {**dict.fromkeys(["task", "variant", "scheme"], pl.String), "k_train": pl.Int32, "seed": pl.Int64,
                 "k": pl.Int32, "predicted_reach": pl.Int64, "measured_reach": pl.Int64,
                 "predicted_far": pl.Float64, "measured_far": pl.Float64}  # a row of :func:`reaches`


def at_k_train() -> pl.Expr:
    """The rows at k_test = K_train (every row of a task without either)."""
    return pl.col("k").is_null() | pl.col("k_train").is_null() | (pl.col("k") == pl.col("k_train"))


def reaches(forecast: pl.DataFrame, accuracy: pl.DataFrame, train_lengths: list[int]) -> pl.DataFrame:
    """Per model of one task's ``forecast`` (:func:`mass_forecast`) at its k_test = K_train (the task's
    one k where it has none): the ``predicted_reach`` (the longest evaluated length up to which the
    forecast mass stays >= MASS_LEVEL of its own at the longest of ``train_lengths``, T) and the
    ``measured_reach`` (that of ``accuracy``'s exact match >= ACCURACY_LEVEL of its own at T), each
    counted from the first evaluated length and 0 where that is already below; and the predicted
    and measured mass at FAR x T (null where that length was not evaluated). Models with no forecast
    or no exact match at T are left out."""
    longest = max(train_lengths)
    mass = forecast.filter(at_k_train())
    exact = accuracy.filter(at_k_train() & (pl.col("metric") == "exact_match")).select(*RUN, "k", "length", "accuracy")
    by_model = exact.sort("length").partition_by([*RUN, "k"], as_dict=True, maintain_order=True)  # nulls alike
    none = exact.clear()
    rows = []
    for (key, curve) in mass.sort("length").group_by([*RUN, "k"], maintain_order=True):
        model = dict(zip([*RUN, "k"], key, strict=True))
        matched = by_model.get(tuple(key), none)
        mass_at, accuracy_at = (dict(zip(t["length"], t[column], strict=True))
                                for t, column in ((curve, "predicted"), (matched, "accuracy")))
        if longest not in mass_at or accuracy_at.get(longest) is None:
            continue
        far = curve.filter(pl.col("length") == FAR * longest)
        rows.append({**model,
                     "predicted_reach": reach(curve["length"], curve["predicted"], MASS_LEVEL * mass_at[longest]) or 0,
                     "measured_reach": reach(matched["length"], matched["accuracy"],
                                             ACCURACY_LEVEL * accuracy_at[longest]) or 0,
                     "predicted_far": far["predicted"].first() if far.height else None,
                     "measured_far": far["measured"].first() if far.height else None})
    return pl.DataFrame(rows, schema=REACH_COLUMNS)


def from_tables(spec: dict, inputs: list) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`forecast_of` the forecast figure's tables ``inputs``: each model's accuracy table and its
    attention table, each checked against its schema."""
    from pathlib import Path

    from .accuracy_schema import read_accuracy
    from .mechanism_schema import read

    named = {name: [Path(path) for path in inputs if Path(path).name == f"{name}.parquet"]
             for name in ("accuracy", "attention")}
    attention = [read(path, "attention") for path in named["attention"]]
    return forecast_of(spec, read_accuracy(named["accuracy"]), pl.concat(attention) if attention else None)


def forecast_of(spec: dict, accuracy: pl.DataFrame,
                attention: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per task of the forecast figure's spec ``spec`` (its ``train_lengths``, ``lengths`` and ``seeds``)
    with rows in the ``attention`` and ``accuracy`` tables: every model's mass forecast (:func:`mass_forecast`)
    from the evaluated lengths within the task's training range, and its :func:`reaches`, each with the
    task's longest such length ``T`` beside it."""
    curves, found = [], []
    for task, section in spec["tasks"].items():
        low, high = section["train_lengths"]
        trained = [length for length in section["lengths"] if low <= length <= high]
        mine = attention.filter(pl.col("task") == task) if attention is not None else None
        if mine is None or mine.is_empty() or not trained:
            continue
        forecast = mass_forecast(mine, trained)
        longest = pl.lit(max(trained), dtype=pl.Int64).alias("T")
        curves.append(forecast.with_columns(longest))
        found.append(reaches(forecast, accuracy.filter(pl.col("task") == task), trained).with_columns(longest))
    return (pl.concat(curves) if curves else pl.DataFrame(),
            pl.concat(found) if found else pl.DataFrame(schema={**REACH_COLUMNS, "T": pl.Int64}))
