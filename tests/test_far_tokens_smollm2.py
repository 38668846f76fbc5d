"""An independent check of the influential-token analysis on a real language model, SmolLM2-135M (the
pretrained extra and the model's file; skipped without them; slow: 6 min 36 s on 2 cores shared with
other work).

Texts written for it: a paragraph that names a person far back and again at its end, the target being
the surname's first token (only the far mention tells it), and a recipe whose last token needs no far
context. With the selection that never sees the target (``greedy_kl``) and the criterion's k = 4:

* in the paragraph as first written (Lbar 90, L 24), its own far tokens win back more than the whole
  gain, another document's far tokens chosen the same way almost none; on the recipe they win back
  no more than another document's;
* in the paragraph shortened by one sentence (Lbar 60), greedy_kl misses the name: the surname's
  tokens help only together with the token before them ("ie" + " Bra", what an induction head
  copies from), no single far token moves the distribution towards them, and a greedy step sees one
  token at a time: its four picks never hold both. The test holds this limit too (docs/language.md, "Selection by KL").

L_long, L_short and the first pick are also computed here from their definitions, with the model's
own forward and none of pipeline_src's batching or divergence code.
"""

import numpy as np
import polars as pl
import pytest
import torch

from pipeline_src.language import pretrained

pytest.importorskip("gguf", reason="the pretrained extra: pip install -e '.[pretrained]'")
from pipeline_src.config.influence_config import InfluenceConfig
from pipeline_src.language.influence import influential_tokens
from pipeline_src.language.logits import hf_logits_fn

pytestmark = pytest.mark.slow

NAME_TEXT = ("The old lighthouse on the northern cape was kept for forty years by a woman called Ottilie Brackwater. "
             "Every evening she climbed the spiral stairs, trimmed the wick, wound the clockwork that turned the great "
             "lens, and wrote the weather in a leather book. Ships passing in the night saw the beam sweep across the "
             "dark water and knew that the rocks were near. When the keeper finally retired, the fishermen of the "
             "harbour gave a dinner in honour of Ottilie Brackwater")
SHORT_NAME_TEXT = ("The old lighthouse on the northern cape was kept for forty years by a woman called Ottilie "
                   "Brackwater. Every evening she climbed the spiral stairs, trimmed the wick and wound the clockwork "
                   "that turned the great lens. When the keeper finally retired, the fishermen of the harbour gave a "
                   "dinner in honour of Ottilie Brackwater")
RECIPE_TEXT = ("To make bread, mix flour, water, salt and yeast in a large bowl until a rough dough forms. Knead the "
               "dough on a floured table for ten minutes, until it is smooth and springs back when pressed. Leave it "
               "covered in a warm place for an hour, until it has doubled in size. Shape it into a loaf, let it rise "
               "again, and bake it in a hot oven for about forty minutes, until the crust is golden brown and the loaf "
               "sounds hollow when tapped on the bottom")
LOCAL, K = 24, 4  # L and the criterion's k (docs/findings.md)


@pytest.fixture(scope="module")
def smollm2():
    try:
        pretrained.gguf_file("smollm2")
    except pretrained.PretrainedError as err:
        pytest.skip(str(err))
    torch.set_num_threads(2)
    return pretrained.load_model("smollm2"), pretrained.load_tokenizer("smollm2")


def target_frame(tokenizer, name_text: str, context: int) -> pl.DataFrame:
    """The two targets: the surname's first token at the paragraph's end (" Bra", after "Ottilie"),
    the recipe's last token (" bottom"), each with the ``context`` tokens before it."""
    rows = []
    for doc, (text, back) in enumerate([(name_text, 3), (RECIPE_TEXT, 1)]):
        ids = tokenizer.encode(text).ids
        t = len(ids) - back
        rows.append({"doc": doc, "t": t, "target": ids[t], "context": ids[t - context:t]})
    frame = pl.DataFrame(rows, schema={"doc": pl.Int64, "t": pl.Int32, "target": pl.Int32,
                                       "context": pl.List(pl.Int32)})
    assert tokenizer.decode(frame["target"].to_list()) == " Bra bottom"
    assert "Ottilie Brackwater" in tokenizer.decode(frame["context"][0].to_list()[:context - LOCAL])  # far back
    return frame


def last_log_probs(model, tokens: list[list[int]], positions: list[list[int]]) -> torch.Tensor:
    """log p(next token) at the last position of each row, straight from the model's forward."""
    with torch.inference_mode():
        ids, pos = torch.tensor(tokens), torch.tensor(positions)
        logits = model(input_ids=ids, position_ids=pos, attention_mask=torch.ones_like(ids)).logits
        return torch.log_softmax(logits[:, -1].double(), dim=-1)


def analysed(smollm2, name_text: str, context: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    model, tokenizer = smollm2
    targets = target_frame(tokenizer, name_text, context)
    cfg = InfluenceConfig(context=context, local=LOCAL, k_max=K, n_targets=2, selection="greedy_kl", batch_size=64)
    return targets, influential_tokens(None, targets, cfg, logits_fn=hf_logits_fn(model), progress=None)


def recovered(row: dict) -> tuple[float, float, float]:
    """(gain, own, other) in nats: L_short - L_long, and what k = K of the target's own and of another
    document's far tokens win back of L_short."""
    return (row["short_loss"] - row["long_loss"], row["short_loss"] - row["sparse_loss"][K - 1],
            row["short_loss"] - row["other_loss"][K - 1])


def test_own_far_tokens_chosen_without_the_label_recover_a_far_name_and_nothing_where_none_is_needed(smollm2):
    model, tokenizer = smollm2
    context = 90
    targets, table = analysed(smollm2, NAME_TEXT, context)
    name, recipe = table.iter_rows(named=True)

    # From the definitions: L_long and L_short of the name's target, and the first far token chosen
    # by KL(p_long || p_local+j), every candidate at its own position ID.
    tokens, target, far = targets["context"][0].to_list(), targets["target"][0], context - LOCAL
    local = list(range(far, context))
    long_lp, short_lp = (last_log_probs(model, [[tokens[i] for i in kept]], [kept])[0]
                         for kept in (list(range(context)), local))
    assert name["long_loss"] == pytest.approx(-long_lp[target].item(), abs=1e-4)
    assert name["short_loss"] == pytest.approx(-short_lp[target].item(), abs=1e-4)
    kept = [[j, *local] for j in range(far)]
    candidate_lp = last_log_probs(model, [[tokens[i] for i in row] for row in kept], kept)
    kl = (long_lp.exp() * (long_lp - candidate_lp)).sum(dim=-1)
    assert name["chosen"][0] == int(kl.argmin())
    assert name["sparse_loss"][0] == pytest.approx(-candidate_lp[int(kl.argmin()), target].item(), abs=1e-4)

    # The paragraph: the full context tells the surname (a gain of several nats); four far tokens of
    # its own, chosen without looking at it, win back most of that, another document's (the
    # recipe's) far tokens chosen the same way hardly any.
    gain, own, other = recovered(name)
    assert gain > 5.0
    assert own / gain > 0.5 and other / gain < 0.15 and own - other > 3.0
    assert " Bra" in tokenizer.decode([tokens[j] for j in name["chosen"]])

    # The recipe: no far dependency (the far context moves the last token's loss by little), and its
    # own far tokens win back no more than another document's.
    gain, own, other = recovered(recipe)
    assert abs(gain) < 0.5 and own - other < 0.3 and np.isfinite([own, other]).all()


def test_greedy_steps_miss_a_name_whose_tokens_help_only_together(smollm2):
    """The limit: in the shortened paragraph, "ie" and " Bra" kept together win back most of the
    gain, neither alone much, and greedy_kl's four picks (one token a step) never hold both."""
    model, tokenizer = smollm2
    context = 60
    targets, table = analysed(smollm2, SHORT_NAME_TEXT, context)
    name = table.row(0, named=True)
    gain, own, _ = recovered(name)
    assert gain > 5.0 and own / gain < 0.2

    tokens, target, far = targets["context"][0].to_list(), targets["target"][0], context - LOCAL
    first = next(j for j in range(far - 1) if tokenizer.decode(tokens[j:j + 2]) == "ie Bra")
    local = list(range(far, context))
    sets = [[first, *local], [first + 1, *local], [first, first + 1, *local]]  # "ie", " Bra", both
    losses = [-last_log_probs(model, [[tokens[i] for i in kept]], [kept])[0, target].item() for kept in sets]
    ie, bra, both = (name["short_loss"] - loss for loss in losses)
    assert both / gain > 0.5 and ie / gain < 0.2 and bra / gain < 0.2
    assert not {first, first + 1} <= set(name["chosen"])
