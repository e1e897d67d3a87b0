"""``nemo-rl-console``: NeMo RL's console timing block, printed after each step
(NVIDIA-NeMo/RL@7ea279abfbeb:nemo_rl/algorithms/grpo.py)::

    ========================= Step 3/100 =========================
    ...
    ⏱️  Timing:
      • Total step time: 66.55s
      • exposed_generation: 32.52s (48.9%)
      • policy_training: 25.05s (37.6%)

Each ``• <name>: <s>s`` line of the block becomes ``timing/train/<name>`` (``Total step time`` is
``timing/train/total_step_time``), the keys NeMo RL logs to W&B. The step is the ``Step N/M`` banner before the
block, or the block's place in the file when no banner is printed. ``exposed_generation`` (asynchronous GRPO) is
the trainer's wait for a batch, not the generation; the key table flags it as exposed. The ``• Mean Generation
Length: 201.2197`` line of the "Training Results" block printed before the timing block (grpo.py prints
``rollout_metrics['mean_gen_tokens_per_sample']``) is the step's ``train/mean_gen_tokens_per_sample``, and a
"Validation Timing" block's ``• Total validation time: 30.49s`` printed inside the step (before its timing block)
is its ``timing/train/validation``, the key that marks a validation step."""

from __future__ import annotations

import re

from .base import Ctx, Format

_TOTAL = re.compile(r"Total step time:\s*([-+\w.]+?)\s*s\b")
_ITEM = re.compile(r"^\s*[•*\-]\s*([A-Za-z_][\w/ .]*?):\s*([-+\w.]+?)\s*s(?:\s*\(.*\))?\s*$")
_BANNER = re.compile(r"=+\s*Step\s+(\d+)\s*/\s*\d+\s*=+")
_GEN_LENGTH = re.compile(r"^\s*[•*\-]\s*Mean Generation Length:\s*([-+\w.]+)\s*$")
_VALIDATION = re.compile(r"^\s*[•*\-]\s*Total validation time:\s*([-+\w.]+?)\s*s\b")


def claims(line: str) -> bool:
    return "Total step time:" in line and _TOTAL.search(line) is not None


def read(ctx: Ctx):
    lines, cols = ctx.lines(), ctx.columns()
    banner, blocks, record, length, validation = None, 0, None, None, None
    for _, line in lines:
        if "Step" in line and "=" in line and (m := _BANNER.search(line)):
            banner, length, validation = int(m.group(1)), None, None
            continue
        if "Mean Generation Length:" in line and (m := _GEN_LENGTH.match(line)):
            length = m.group(1)  # the results block, printed before the step's timing block
            continue
        if "Total validation time:" in line and (m := _VALIDATION.match(line)):
            validation = m.group(1)  # a validation pass inside this step, timed before its timing block
            continue
        if "Total step time:" in line and (m := _TOTAL.search(line)):
            if record:
                cols.add(record)
            blocks += 1
            record = [("step", banner if banner is not None else blocks),
                      ("timing/train/total_step_time", m.group(1))]
            if length is not None:
                record.append(("train/mean_gen_tokens_per_sample", length))
            if validation is not None:
                record.append(("timing/train/validation", validation))
            banner = length = validation = None
            continue
        if record is not None:
            m = _ITEM.match(line)
            if m:
                record.append((f"timing/train/{m.group(1).strip()}", m.group(2)))
            elif line.strip() and not line.lstrip().startswith(("•", "*")):
                cols.add(record)
                record = None
    if record:
        cols.add(record)
    return cols.raw(ctx.shown, FORMAT.name, "step", lines.skipped_note())


FORMAT = Format("nemo-rl-console", "NeMo RL console timing blocks ('• Total step time: 66.55s')", read, line=claims)
