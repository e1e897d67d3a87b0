"""The single controller's hand-off as a lead for the colocated switch and the verl study's scale-out
(docs/validation.md, "A measured rate for it"; not modelled): every figure that paragraph gives, recomputed here from
the published rows and the scenario files, so that the prose cannot go stale.

The rate: verl PR 3495 (volcengine/verl@04726dbf, 2025-09-17, ``dispatch_nd_compute``) times the single
controller's ``ray.put`` of a dispatched batch of 6,400 x 20,480 at 28.85 s, and 19.86 s once the puts run in
threads. A hand-off is charged per padded position, sequences x (prompt cap + response cap); verl's colocated ``gen``
moves the prompts out and the padded sequences back. Prompt caps: the one-step-off scripts' and the DAPO scripts'
``max_prompt_length`` 2,048 (volcengine/verl@e55d1431:recipe/one_step_off_policy/dapo_7b_math_fsdp2_4_12.sh line
17); the GPG logs' 1,024 (their launch line)."""

from __future__ import annotations

import re

import pytest

from tcocalc.catalog import framework_cases as fc
from tcocalc.studies import validation_groups as vg

PUT_SERIAL_S, PUT_THREADED_S, PR_POSITIONS = 28.85, 19.86, 6_400 * 20_480
SERIAL, THREADED = PUT_SERIAL_S / PR_POSITIONS, PUT_THREADED_S / PR_POSITIONS
#: prompt caps of the runs (see the module docstring)
PROMPT_CAP = {"ST-01": 2_048, "ST-07": 2_048, "ST-05": 1_024, "ST-06": 1_024}


def _row(case_id: str) -> dict:
    return fc.stage_case(case_id)


def _handoff_s(case_id: str) -> float:
    """The prompts out and the padded sequences back, at the serial rate (the runs are of June-July 2025) [s]."""
    w = fc.case_scenario(_row(case_id)["scenario"], case_id).workload
    seqs = w.prompts_per_step * w.group_size
    return SERIAL * seqs * (PROMPT_CAP[case_id] + PROMPT_CAP[case_id] + w.response_tokens_max)


@pytest.fixture(scope="module")
def switch_rows():
    st = vg.stage_table()
    return st[st["stage"] == "switching (colocated)"].set_index("id")


def test_the_rate_per_padded_position():
    assert (SERIAL * 1e6, THREADED * 1e6) == (pytest.approx(0.220, abs=5e-4), pytest.approx(0.152, abs=5e-4))


def test_the_hand_off_of_each_colocated_switch_row():
    """33.2 s (ST-01: 6,144 x 2,048 out, 6,144 x 22,528 back), 22.2 s (ST-07: 8,192 sequences, 10,240 back), 3.5 s
    for each GPG log (5,120 x 1,024 out, 5,120 x 2,048 back), each to 0.05 s."""
    assert _handoff_s("ST-01") == pytest.approx(33.2, abs=0.05)
    assert _handoff_s("ST-07") == pytest.approx(22.2, abs=0.05)
    assert _handoff_s("ST-05") == pytest.approx(3.46, abs=0.01)
    assert _handoff_s("ST-06") == pytest.approx(3.46, abs=0.01)


def test_with_the_hand_off_every_colocated_switch_is_within_2x(switch_rows):
    """The model's switch and the slowest engine's excess (ST-01 and ST-07 at the lengths their own times imply, as
    the stage table's note gives them; the GPG logs' lengths are published) stand at 0.69x, 0.38x, 0.32x and 0.46x of
    the published switches; with the hand-off at 1.14x, 0.88x, 0.59x and 0.83x (each to 0.01)."""
    def at(case_id: str) -> float:
        row = switch_rows.loc[case_id]
        m = re.search(r"switch \+ excess ([0-9.,]+) s", str(row["note"]))
        return float(m.group(1).replace(",", "")) if m else float(row["predicted [s]"])

    expect = {"ST-01": (0.69, 1.14), "ST-07": (0.38, 0.88), "ST-05": (0.32, 0.59), "ST-06": (0.46, 0.83)}
    for case_id, (now, with_handoff) in expect.items():
        published = _row(case_id)["switching_s"]
        assert at(case_id) / published == pytest.approx(now, abs=0.01), case_id
        assert (at(case_id) + _handoff_s(case_id)) / published == pytest.approx(with_handoff, abs=0.01), case_id
        assert 0.5 < (at(case_id) + _handoff_s(case_id)) / published < 2.0


def test_one_put_of_the_studys_padded_batch_is_what_its_passes_keep_from_32_to_128_gpus():
    """The verl study's colocated runs (VS-01 on 32, VS-03 on 128 H20): a pass time t = a + b / N through the two gives
    a = 36.0 s for the old log-probs and 47.1 s for the update (61.8 s with the 16:16 row's update cell, which
    b178a3cd swapped in); one put of the study's padded batch, 8,192 x (2,048 + 28,672) positions at the threaded rate
    (the study is of October 2025), is 38.1 s (each to 0.1 s)."""
    vs01, vs03 = _row("VS-01"), _row("VS-03")

    def fixed(at32: float, at128: float) -> float:
        b = (at32 - at128) / (1 / 32 - 1 / 128)
        return at32 - b / 32

    assert fixed(vs01["logprob_s"], vs03["logprob_s"]) == pytest.approx(36.0, abs=0.1)
    assert fixed(vs01["training_s"], vs03["training_s"]) == pytest.approx(47.1, abs=0.1)
    assert fixed(269.80, vs03["training_s"]) == pytest.approx(61.8, abs=0.1)
    assert THREADED * 8_192 * (2_048 + 28_672) == pytest.approx(38.1, abs=0.05)
