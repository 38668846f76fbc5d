"""A claim is a file: what a finding says, which runs it compares, how and where (issue 65).

A claim file is YAML, checked against ``claim.schema.yaml`` (beside this module) and then against the
registries: the figure it is judged from, each side's variant (of that figure's task) and scheme, each
test's sides, the lengths it judges. Any fault is one :class:`ClaimError` line naming the file and the
field, raised when the claims are loaded: before any table is read. docs/claims.md says what each field
means; the paper's findings (and the project's own forecast) ship in ``claims/`` beside this module,
and :func:`load_claims` adds a user's own from further folders (the config's ``claims``, or ``lengthgen
findings --claims DIR``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..planning.paths import FORECAST_FIGURE  # across tasks' models: its one test has no sides
from ..storage import yaml_text

SHIPPED = Path(__file__).resolve().parent / "claims"  # the paper's findings, one file each
SCHEMA = Path(__file__).resolve().parent / "claim.schema.yaml"
LANGUAGE_FIGURE = "figure4"  # the figure of the natural-language analysis: its sides are own and other far tokens
TARGET_TESTS = ("intervals", "signed-rank")  # tests over targets (Figure 4's); the others are over seeds
TREND_TESTS = ("page", "jonckheere")  # tests of an ordered trend over one side's groups
PAIRED = ("sign-flip", "signed-rank")  # tests whose two sides are the same units in two cells


class ClaimError(ValueError):
    """A claim file that cannot be judged: one line naming the file and the field."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison (or a trend's groups): the runs it selects and how a verdict names them."""

    variant: str | None = None
    scheme: str | None = None
    coupled: bool | None = None
    predicts_positions: bool | None = None
    K_train: str | None = None  # larger / smaller (of a neighbouring pair), at least k_test (a trend)
    k_test: int | str | None = None  # a k_test, or smallest / largest trained / largest between / trained
    order: str | None = None  # a trend's groups: ascending or descending
    name: str | None = None  # a format of {scheme}, {variant}, {K_train}, {k_test}
    config: tuple[str, ...] | None = None  # the config files its runs were made with, over the default

    def selects(self, variant: str, scheme: str) -> bool:
        """Whether the run (``variant``, ``scheme``) is one of this side's."""
        from ..schemes import get_scheme

        found = get_scheme(scheme)
        return ((self.variant is None or variant == self.variant) and (self.scheme is None or scheme == self.scheme)
                and (self.coupled is None or found.coupled == self.coupled)
                and (self.predicts_positions is None or found.predicts_positions == self.predicts_positions))


@dataclass(frozen=True)
class Rule:
    """One comparison of a claim, made once or for each K_train, neighbouring pair or k_test (``each``)."""

    test: str
    better: Side | None = None
    worse: Side | None = None
    rising: Side | None = None  # a trend's groups, in the predicted order of rising accuracy
    each: str | None = None
    k_test: tuple[int, int] | None = None  # with each k_test: the range compared
    name: str | None = None
    cell: str = "length {length}"
    says: str = ""
    part: str | None = None  # the claim's part it belongs to (:class:`Part`)

    @property
    def sides(self) -> tuple[Side, ...]:
        return tuple(side for side in (self.better, self.worse, self.rising) if side is not None)

    @property
    def paired(self) -> bool:
        return self.test in PAIRED


@dataclass(frozen=True)
class Part:
    """A named part of a claim ((a), (b)), judged apart in the tables, and who states it: the paper, or
    the reconstruction's reading of it."""

    part: str
    stated: str
    what: str = ""


@dataclass(frozen=True)
class Claim:
    """A claim file, read and checked (:func:`load`)."""

    path: Path
    name: str
    text: str
    figure: str
    compare: tuple[Rule, ...]
    lengths: str | dict | None = None
    shown: float | None = None  # a length shown, not judged: the first at least this times the training length
    seeds_from: int | None = None
    seeds_because: str = ""
    gate: str = "none"
    correction: str = "holm"
    registered: tuple[str, str] | None = None  # (commit, text): where its criterion was first committed
    parts: tuple[Part, ...] = ()  # its named parts, judged apart in the tables (none: one part)
    tasks: tuple[str, ...] = ()  # a forecast claim's tasks: the models judged

    def claim(self, task: str = "") -> str:
        return self.text.format(task=task)

    @property
    def kind(self) -> str:
        """How it is judged: ``targets`` (Figure 4's), ``trends``, ``forecast`` (the forecast figure's) or
        ``seeds`` (comparisons of two sides)."""
        test = self.compare[0].test
        return ("targets" if test in TARGET_TESTS else "trends" if test in TREND_TESTS
                else "forecast" if test == "forecast" else "seeds")

    @property
    def sides(self) -> tuple[Side, ...]:
        return tuple(side for rule in self.compare for side in rule.sides)

    @property
    def across(self) -> bool:
        """Whether its sides are runs of different configs (each names its ``config``): judged from
        several results folders or run summaries (:mod:`pipeline_src.runs.across_folders`)."""
        return any(side.config for side in self.sides)


def side(entry: dict | None) -> Side | None:
    if entry is None:
        return None
    return Side(**{**entry, "config": tuple(entry["config"]) if "config" in entry else None})


@functools.cache
def claim_schema() -> dict:
    """The claim file's JSON schema, read once (it is checked for every claim file a run parses)."""
    return yaml_text.read(SCHEMA.read_text())


def load(path: Path) -> Claim:
    """The claim file ``path``, checked (a :class:`ClaimError` naming the file and the field)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ClaimError(f"{path}: not a claim file ({str(err).splitlines()[0]})") from None
    return _parsed(path, text)


@functools.lru_cache(maxsize=256)  # a search over the shipped layerings reads every claim file for each
def _parsed(path: Path, text: str) -> Claim:
    """The claim ``text``, the file ``path``'s content, holds, checked (a pure function of both; a Claim
    is frozen, so one may be shared)."""
    from ..config.schema import ConfigSchemaError, check

    try:
        entry = yaml_text.read(text)
        check(entry, claim_schema(), str(path))
    except (OSError, yaml_text.YAMLError) as err:
        raise ClaimError(f"{path}: not a claim file ({str(err).splitlines()[0]})") from None
    except ConfigSchemaError as err:
        raise ClaimError(str(err).replace(f"{path} field ", f"{path}: field ", 1)) from None
    rules = tuple(Rule(**{**rule, "better": side(rule.get("better")), "worse": side(rule.get("worse")),
                          "rising": side(rule.get("rising")),
                          "k_test": tuple(rule["k_test"]) if "k_test" in rule else None})
                  for rule in entry["compare"])
    seeds = entry.get("seeds", "all")
    shown = entry.get("shown")
    claim = Claim(path, entry["name"], entry["claim"], entry["figure"], rules, entry.get("lengths"),
                  shown["beyond"] if shown else None, None if seeds == "all" else seeds["from"],
                  "" if seeds == "all" else seeds["because"], entry.get("gate", "none"),
                  entry.get("correction", "holm"),
                  (entry["registered"]["commit"], entry["registered"]["text"]) if "registered" in entry else None,
                  tuple(Part(**part) for part in entry.get("parts", ())), tuple(entry.get("tasks", ())))
    check_claim(claim)
    return claim


def check_claim(claim: Claim) -> None:
    """What the schema cannot say: the figure, its task's variants and the schemes exist, each test has
    the sides it compares, and the lengths judged can be evaluated."""
    from ..planning.jobs import FIGURE_TASK
    from ..planning.studies import all_figures
    from ..schemes import SCHEMES
    from ..tasks import get_task

    def fault(field: str, why: str) -> ClaimError:
        return ClaimError(f"{claim.path}: field {field}: {why}")

    if claim.figure not in all_figures():
        raise fault("figure", f"no figure {claim.figure!r}; known: {', '.join(all_figures())}")
    if claim.figure == FORECAST_FIGURE:
        check_forecast(claim, fault)
        return
    if claim.kind == "forecast" or claim.tasks:
        raise fault("compare" if claim.kind == "forecast" else "tasks", f"only the {FORECAST_FIGURE} figure's claims "
                    "have the test forecast and name tasks")
    task = get_task(FIGURE_TASK[claim.figure]) if claim.figure in FIGURE_TASK else None
    if task is None and claim.figure != LANGUAGE_FIGURE:
        raise fault("figure", f"{claim.figure} shows no task and no finding")
    variants = ("own", "other") if task is None else task.layout.variants
    kinds = {rule.test in TARGET_TESTS for rule in claim.compare}
    if kinds != {task is None}:
        raise fault("compare", f"{claim.figure}'s claims are tested over "
                    + ("targets (intervals, signed-rank)" if task is None else "seeds, not targets"))
    for i, rule in enumerate(claim.compare):
        where = f"compare[{i}]"
        trend = rule.test in TREND_TESTS
        if trend != (rule.rising is not None) or trend == (rule.better is not None or rule.worse is not None):
            raise fault(where, f"a {rule.test} test compares "
                        + ("the groups of 'rising'" if trend else "'better' with 'worse'"))
        if not trend and (rule.better is None or rule.worse is None):
            raise fault(where, "name both sides, 'better' and 'worse'")
        by_k = task is not None and task.layout.by_k_train
        if rule.each and not by_k:
            raise fault(f"{where}.each", f"{claim.figure}'s task has no K_train to compare each of")
        for label, found in (("better", rule.better), ("worse", rule.worse), ("rising", rule.rising)):
            if found is None:
                continue
            if found.variant is not None and not by_k and found.variant not in variants:
                raise fault(f"{where}.{label}.variant", f"no run variant {found.variant!r} in {claim.figure}; "
                            f"known: {', '.join(variants)}")
            if found.scheme is not None and found.scheme not in SCHEMES:
                raise fault(f"{where}.{label}.scheme",
                            f"no scheme {found.scheme!r}; known: {', '.join(sorted(SCHEMES))}")
            if (found.k_test is not None or found.K_train is not None) and not by_k:
                raise fault(f"{where}.{label}", f"{claim.figure}'s task has no k_test or K_train")
    check_parts(claim, fault)
    check_lengths(claim, fault)
    if claim.across:
        check_across(claim, fault)


def check_forecast(claim: Claim, fault) -> None:
    """A forecast claim: one test without sides, over registered tasks whose dependency sets are declared."""
    from ..tasks import TASKS

    if len(claim.compare) != 1 or claim.sides or claim.kind != "forecast":
        raise fault("compare", "a forecast claim has one test, forecast, and no sides")
    if not claim.tasks:
        raise fault("tasks", "a forecast claim names the tasks whose models it judges")
    for i, name in enumerate(claim.tasks):
        if name not in TASKS or TASKS[name].dependencies is None:
            raise fault(f"tasks[{i}]", f"{name!r} is no task with declared dependency sets; known: "
                        + ", ".join(task for task, found in TASKS.items() if found.dependencies is not None))


def check_parts(claim: Claim, fault) -> None:
    """Where a claim names its parts, each comparison belongs to one of them and each part has one."""
    labels = [part.part for part in claim.parts]
    if len(set(labels)) < len(labels):
        raise fault("parts", f"a part named twice in {labels}")
    for i, rule in enumerate(claim.compare):
        if (rule.part is None) != (not labels) or (rule.part is not None and rule.part not in labels):
            raise fault(f"compare[{i}].part", f"{rule.part!r}: " + (f"one of the parts {', '.join(labels)}" if labels
                        else "no parts are named (the claim's parts)"))
    if empty := sorted(set(labels) - {rule.part for rule in claim.compare}):
        raise fault("parts", f"no comparison belongs to {', '.join(empty)}")


def check_lengths(claim: Claim, fault) -> None:
    """The lengths a claim over seeds judges: given, and a range that is not empty."""
    if claim.kind == "targets":
        return
    if claim.lengths is None:
        raise fault("lengths", "a claim over seeds names the lengths it judges (longest, beyond, from and to, or at)")
    if isinstance(claim.lengths, dict) and "from" in claim.lengths and claim.lengths["from"] > claim.lengths["to"]:
        raise fault("lengths.from", f"{claim.lengths['from']:g} is above lengths.to {claim.lengths['to']:g}: no length "
                    "can be judged")
    if claim.gate == "every K_train fits" and claim.compare[0].each is None:
        raise fault("gate", "every K_train fits gates a claim made for each K_train")


def check_across(claim: Claim, fault) -> None:
    """A claim whose sides are runs of different configs: each comparison an unpaired permutation test
    made once, of two sides each naming its config files (not the same) and its name (not the same: the
    verdict tells them apart by it); no gate and no length shown (each would read one config's runs)."""
    for field in ("gate", "shown"):
        if getattr(claim, field) not in ("none", None):
            raise fault(field, "a claim whose sides name their config has none (it would read one config's runs)")
    for i, rule in enumerate(claim.compare):
        where = f"compare[{i}]"
        if rule.test != "permutation" or rule.each is not None:
            raise fault(f"{where}.each" if rule.each else f"{where}.test", "a comparison of runs of two configs "
                        "compares different models once: a permutation test, without each")
        for label in ("better", "worse"):
            found = getattr(rule, label)
            if not found.config:
                raise fault(f"{where}.{label}.config", "a claim whose sides name their config names it on every side")
            if found.name is None or (label == "worse" and found.name == rule.better.name):
                raise fault(f"{where}.{label}.name", "name each side of a comparison across configs, each "
                            "differently: the verdict tells them apart by name")
        if rule.better.config == rule.worse.config:
            raise fault(f"{where}.worse.config", "the same config files as better's: its runs would be the same")


def load_claims(folders: tuple[Path, ...] | list[Path] = ()) -> list[Claim]:
    """The shipped claims, then those in each of ``folders`` (every ``*.yaml``, in name order), checked;
    a :class:`ClaimError` where two share a name."""
    paths = sorted(SHIPPED.glob("*.yaml"))
    for folder in folders:
        folder = Path(folder)
        if not folder.is_dir():
            raise ClaimError(f"{folder}: no such folder of claim files")
        paths += sorted(folder.glob("*.yaml"))
    claims = [load(path) for path in paths]
    seen: dict[str, Path] = {}
    for claim in claims:
        if claim.name in seen:
            raise ClaimError(f"{claim.path}: field name: {claim.name!r} is also the name of {seen[claim.name]}")
        seen[claim.name] = claim.path
    return claims




def claims_of(config: dict) -> list[Claim]:
    """The claims a config's findings judge: the shipped ones, then those in its ``claims`` folders."""
    return load_claims([Path(folder) for folder in config.get("claims", [])])
