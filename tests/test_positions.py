"""Positional schemes (docs/tasks.md): PoSE, shift and offset training IDs, the registry, and training batches."""

from __future__ import annotations

import pytest
import torch

from pipeline_src.schemes import SCHEMES, get_scheme
from pipeline_src.schemes.abs_shift import shift_ids
from pipeline_src.schemes.coupled import offset_ids
from pipeline_src.schemes.rope_pose import pose_ids
from pipeline_src.schemes.scheme import identity_ids
from pipeline_src.tasks import get_task
from pipeline_src.training.batches import SequenceTable, training_batch


def random_batch(gen: torch.Generator, batch: int, width: int):
    """Base IDs 0..width-1 on every row and real lengths in 1..width (including 1, 2 and width)."""
    lengths = torch.randint(1, width + 1, (batch,), generator=gen)
    lengths[0] = 1
    if width >= 2:
        lengths[1] = 2
    lengths[-1] = width
    base = torch.arange(width).expand(batch, width).clone()
    return base, lengths


def jumps(ids: list[int]) -> list[int]:
    """Differences between consecutive IDs that are not 1 (i.e. PoSE skips)."""
    return [b - a for a, b in zip(ids, ids[1:], strict=False) if b - a != 1]


# --- PoSE ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunks", [2, 3])
def test_pose_invariants_on_random_batches(chunks):
    gen = torch.Generator().manual_seed(100 + chunks)
    draws = torch.Generator().manual_seed(7)
    for trial in range(150):
        width = int(torch.randint(1, 40, (1,), generator=draws))
        target = width + int(torch.randint(0, 60, (1,), generator=draws))
        base, lengths = random_batch(draws, 9, width)
        out = pose_ids(base, lengths, target, chunks, gen)
        assert out.shape == base.shape and out.dtype == torch.long
        for row, length in zip(out.tolist(), lengths.tolist(), strict=False):
            ids = row[:length]
            assert ids[0] == 0, (trial, ids)
            assert all(b > a for a, b in zip(ids, ids[1:], strict=False)), (trial, ids)
            assert max(ids) < target, (trial, ids, target)
            skips = jumps(ids)
            assert len(skips) <= chunks - 1, (trial, ids)
            assert sum(s - 1 for s in skips) == ids[-1] - (length - 1)


def test_pose_is_reproducible_with_a_fixed_generator():
    base, lengths = random_batch(torch.Generator().manual_seed(1), 16, 30)
    a = pose_ids(base, lengths, 200, 3, torch.Generator().manual_seed(42))
    b = pose_ids(base, lengths, 200, 3, torch.Generator().manual_seed(42))
    c = pose_ids(base, lengths, 200, 3, torch.Generator().manual_seed(43))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("chunks", [2, 3])
def test_pose_skips_use_the_whole_budget(chunks):
    gen = torch.Generator().manual_seed(5)
    width, target = 12, 60
    base = torch.arange(width).expand(32, width).clone()
    lengths = torch.full((32,), width)
    largest, no_skip, jump_at = 0, 0, set()
    for _ in range(60):
        out = pose_ids(base, lengths, target, chunks, gen).tolist()
        for ids in out:
            largest = max(largest, ids[-1])
            no_skip += ids[-1] == width - 1
            jump_at.update(i for i in range(1, width) if ids[i] - ids[i - 1] != 1)
    assert largest == target - 1
    assert no_skip > 0  # u = 0 happens (probability ~1/budget per row for two chunks)
    assert no_skip < 60 * 32 // 4  # but skips are the rule
    assert jump_at == set(range(1, width))  # every cut point in 1..length-1 gets used


def test_pose_skip_is_uniform_for_two_chunks():
    gen = torch.Generator().manual_seed(9)
    width, target = 10, 110  # budget = 100
    base = torch.arange(width).expand(4000, width).clone()
    lengths = torch.full((4000,), width)
    out = pose_ids(base, lengths, target, 2, gen)
    skip = (out[:, -1] - (width - 1)).double()
    assert skip.min() >= 0 and skip.max() <= 100
    assert abs(skip.mean().item() - 50) < 3
    assert (skip == 0).any()


def test_pose_sometimes_has_no_skip_with_small_budget():
    gen = torch.Generator().manual_seed(3)
    base = torch.arange(8).expand(200, 8).clone()
    lengths = torch.full((200,), 8)
    out = pose_ids(base, lengths, 10, 2, gen)  # budget 2
    plain = (out == base).all(dim=1)
    assert 0 < int(plain.sum()) < 200


def test_pose_exact_fit_and_too_long():
    base = torch.arange(10).expand(3, 10).clone()
    lengths = torch.tensor([10, 4, 1])
    out = pose_ids(base, lengths, 10, 2, torch.Generator().manual_seed(0))
    assert out[0].tolist() == list(range(10))  # no room: unchanged
    with pytest.raises(ValueError):
        pose_ids(base, lengths, 9, 2, torch.Generator().manual_seed(0))


# --- shift --------------------------------------------------------------------------------------

def test_shift_is_one_offset_per_row():
    gen = torch.Generator().manual_seed(11)
    draws = torch.Generator().manual_seed(12)
    for _ in range(100):
        width = int(torch.randint(1, 30, (1,), generator=draws))
        target = width + int(torch.randint(0, 40, (1,), generator=draws))
        base, lengths = random_batch(draws, 7, width)
        out = shift_ids(base, lengths, target, gen)
        assert out.shape == base.shape
        for ids, b, length in zip(out.tolist(), base.tolist(), lengths.tolist(), strict=False):
            offsets = {i - j for i, j in zip(ids[:length], b[:length], strict=False)}
            assert len(offsets) == 1
            (r,) = offsets
            assert 0 <= r
            assert max(ids[:length]) < target


def test_shift_offsets_cover_their_range():
    gen = torch.Generator().manual_seed(4)
    width, target = 10, 30  # r in 0..20 for full rows
    base = torch.arange(width).expand(64, width).clone()
    lengths = torch.full((64,), width)
    seen = set()
    for _ in range(20):
        out = shift_ids(base, lengths, target, gen)
        seen.update((out[:, 0] - base[:, 0]).tolist())
    assert seen == set(range(0, 21))
    # shorter rows have a larger budget
    lengths = torch.full((64,), 3)
    seen = set()
    for _ in range(20):
        seen.update((shift_ids(base, lengths, target, gen)[:, 0]).tolist())
    assert max(seen) == target - 3 and min(seen) == 0


def test_shift_reproducible_and_too_long():
    base = torch.arange(6).expand(50, 6).clone()
    lengths = torch.full((50,), 6)
    a = shift_ids(base, lengths, 100, torch.Generator().manual_seed(1))
    b = shift_ids(base, lengths, 100, torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    with pytest.raises(ValueError):
        shift_ids(base, lengths, 5, torch.Generator().manual_seed(1))


# --- coupled offset -----------------------------------------------------------------------------

def _coupled_batch():
    """Coupled IDs of parity with a scratchpad (r = 1): <bos> 0, b_i 1+i, = 1, s_i 1+i, <eos> n+2."""
    rows, lengths = [], []
    for n in (1, 3, 7, 12):
        ids = [0] + [1 + i for i in range(1, n + 1)] + [1] + [1 + i for i in range(1, n + 1)] + [n + 2]
        rows.append(ids + [0] * (2 * 12 + 3 - len(ids)))
        lengths.append(len(ids))
    return torch.tensor(rows), torch.tensor(lengths)


def test_offset_keeps_bos_and_shifts_the_rest_by_one_amount_per_row():
    base, lengths = _coupled_batch()
    target = 40
    seen = set()
    for seed in range(200):
        out = offset_ids(base, lengths, target, torch.Generator().manual_seed(seed))
        assert torch.all(out[:, 0] == 0)
        for b, n in enumerate(lengths.tolist()):
            delta = (out[b, 1:n] - base[b, 1:n]).unique()
            assert len(delta) == 1, "one offset per row"
            assert 0 <= int(delta) and int(out[b, :n].max()) < target
            seen.add((b, int(delta)))
    # every admissible offset occurs (row with n = 12: max ID 14 -> offsets 0..25)
    assert {d for b, d in seen if b == 3} == set(range(target - 1 - 14 + 1))


def test_offset_rejects_ids_beyond_the_target():
    base, lengths = _coupled_batch()
    with pytest.raises(ValueError, match="target length 10"):
        offset_ids(base, lengths, 10, torch.Generator().manual_seed(0))


def test_sequential_base_replaces_coupled_ids():
    frame = get_task("parity_scratchpad").generate_train({"n_min": 1, "n_max": 6, "scratchpad": True,
                                                                    "n_samples": 30}, 3)
    coupled = SequenceTable.from_frame(frame)
    sequential = SequenceTable.from_frame(frame, coupled=False)
    assert torch.equal(coupled.tokens, sequential.tokens)
    for b in range(len(frame)):
        n = int(sequential.lengths[b])
        assert sequential.positions[b, :n].tolist() == list(range(n))
        assert (coupled.positions[b, :n].tolist()
                == frame["prompt_pos"][b].to_list() + frame["response_pos"][b].to_list())
        assert not torch.any(sequential.positions[b, n:])


# --- registry -----------------------------------------------------------------------------------

DOCUMENTED_SCHEMES = {  # docs/tasks.md's table: (encoding, train-time transform)
    "nope": ("none", identity_ids),
    "rope": ("rope", identity_ids),
    "abs": ("abs", identity_ids),
    "rope_pose": ("rope", pose_ids),
    "abs_shift": ("abs", shift_ids),
    "coupled": ("abs", offset_ids),
    "coupled_rope": ("rope", identity_ids),
    "ppc": ("abs", offset_ids),
}


def test_only_coupled_schemes_use_coupled_ids_and_only_ppc_predicts():
    assert {n for n, s in SCHEMES.items() if s.coupled} == {"coupled", "coupled_rope", "ppc"}
    assert {n for n, s in SCHEMES.items() if s.predicts_positions} == {"ppc"}


@pytest.mark.parametrize("name", sorted(DOCUMENTED_SCHEMES))
def test_documented_schemes_are_registered(name):
    scheme = get_scheme(name)
    assert (scheme.encoding.name, scheme.train_transform) == DOCUMENTED_SCHEMES[name]
    assert scheme.module == f"pipeline_src.schemes.{name}"


def _batch():
    base = torch.arange(20).expand(6, 20).clone()
    lengths = torch.tensor([20, 1, 2, 7, 13, 20])
    return base, lengths


@pytest.mark.parametrize("name", sorted(DOCUMENTED_SCHEMES))
def test_train_ids_apply_the_scheme_transform(name):
    scheme = SCHEMES[name]
    base, lengths = _batch()
    out = scheme.train_ids(base, lengths, target_length=60, pose_chunks=2, generator=torch.Generator().manual_seed(8))
    if scheme.train_transform is identity_ids:
        assert torch.equal(out, base)
    else:
        assert not torch.equal(out, base)
    if scheme.train_transform is pose_ids:
        assert torch.equal(out, pose_ids(base, lengths, 60, 2, torch.Generator().manual_seed(8)))
    elif scheme.train_transform is not identity_ids:
        assert torch.equal(out, scheme.train_transform(base, lengths, 60, torch.Generator().manual_seed(8)))


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_eval_ids_are_the_base(name):
    base, _ = _batch()
    assert torch.equal(SCHEMES[name].eval_ids(base), base)


def test_get_scheme_unknown_names_it():
    with pytest.raises(KeyError, match="bogus"):
        get_scheme("bogus")


def test_every_scheme_module_declares_its_scheme():
    import pkgutil

    import pipeline_src.schemes as package

    members = {info.name for info in pkgutil.iter_modules(package.__path__)} - {"scheme", "draws"}
    assert members == set(SCHEMES)
    assert all(SCHEMES[name].module == f"{package.__name__}.{name}" for name in members)


@pytest.mark.e2e
def test_registry_rejects_a_scheme_not_named_after_its_module(tmp_path, monkeypatch):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pipeline_src

    copy = tmp_path / "pipeline_src"
    shutil.copytree(Path(pipeline_src.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    nope = copy / "schemes" / "nope.py"
    nope.write_text(nope.read_text().replace('name="nope"', 'name="nothing"'))
    done = subprocess.run([sys.executable, "-c", "import pipeline_src.schemes"], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode != 0
    assert "pipeline_src.schemes.nope.SCHEME is named 'nothing'; a scheme is named after its module" in done.stderr


@pytest.mark.e2e
def test_importing_the_registry_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys, pipeline_src.schemes as s, pipeline_src.planning.jobs; "
            "assert 'torch' not in sys.modules, 'torch imported'; print(len(s.SCHEMES))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(SCHEMES)


# --- training batches ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def frame():
    return get_task("sparse_parity").generate_train(
        {"k_train": 3, "l_min": 2, "l_max": 9, "n_samples": 40}, 6)


@pytest.mark.parametrize("pad_multiple", [1, 5, 8])
@pytest.mark.parametrize("rows", [[0], [3, 1, 2], list(range(40)), [39, 0, 17, 17]])
def test_training_batch(frame, pad_multiple, rows):
    table = SequenceTable.from_frame(frame)
    assert len(table) == frame.height
    batch = training_batch(table, torch.tensor(rows), pad_multiple)
    sequences = [frame["prompt"][r].to_list() + frame["response"][r].to_list() for r in rows]
    ids = [frame["prompt_pos"][r].to_list() + frame["response_pos"][r].to_list() for r in rows]
    prompt_lens = [len(frame["prompt"][r]) for r in rows]
    longest = max(len(s) for s in sequences) - 1
    width = batch.inputs.shape[1]
    assert width % pad_multiple == 0
    assert longest <= width < longest + pad_multiple
    for tensor in (batch.targets, batch.loss_mask):
        assert tensor.shape == (len(rows), width)
    assert batch.positions.shape == (len(rows), width + 1)
    assert batch.lengths.tolist() == [len(s) - 1 for s in sequences]
    for b, (seq, pos, plen) in enumerate(zip(sequences, ids, prompt_lens, strict=False)):
        n = len(seq) - 1
        pad = [0] * (width - n)
        # inputs/positions past the real length are don't-care (masked); the real part must match
        assert batch.inputs[b, :n].tolist() == seq[:-1]
        assert batch.positions[b, :n + 1].tolist() == pos
        assert batch.targets[b].tolist() == seq[1:] + pad
        mask = batch.loss_mask[b].tolist()
        assert [i for i, m in enumerate(mask) if m] == [plen - 1]
        assert batch.targets[b, plen - 1].item() == frame["response"][rows[b]][0]
    # targets are the inputs shifted by one wherever both are real
    real = torch.arange(width)[None, :] < (batch.lengths - 1)[:, None]
    assert torch.equal(batch.targets[:, :-1][real[:, :-1]], batch.inputs[:, 1:][real[:, :-1]])
