"""The generated blocks of docs/*.md and the README are what ``docs/generate.py`` prints today.

A model change that moves a published figure, a new scenario key or a new metric fails here until the pages are
regenerated with ``python docs/generate.py`` (in the same commit as the change).
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.conftest import ROOT


def _load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _load_generator()


@pytest.mark.parametrize("page", list(GEN.PAGES))
def test_page_matches_the_generator(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    fresh = GEN.render(page, text)
    if fresh != text:
        stale = [name for name in GEN.PAGES[page]
                 if GEN.BEGIN.format(name=name) + "\n" + GEN.block(name) + GEN.END.format(name=name) not in text]
        pytest.fail(f"{page}: generated blocks {stale} are stale; regenerate with `python docs/generate.py`",
                    pytrace=False)


def test_every_block_is_on_a_page_once():
    used = [name for names in GEN.PAGES.values() for name in names]
    assert sorted(used) == sorted(GEN.BLOCKS), "a block is defined but on no page, or on two"
    for page, names in GEN.PAGES.items():
        text = (ROOT / page).read_text(encoding="utf-8")
        for name in names:
            assert text.count(f"<!-- BEGIN GENERATED {name}:") == 1, (page, name)
            assert text.count(GEN.END.format(name=name)) == 1, (page, name)


def test_check_mode_reports_nothing_stale(capsys):
    assert GEN.main(["--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_a_stale_block_is_rewritten_and_the_rest_kept():
    page = "docs/metrics.md"
    text = (ROOT / page).read_text(encoding="utf-8")
    broken = text.replace("| `run_usd` |", "| `run_usd_typo` |")
    assert broken != text
    assert GEN.render(page, broken) == text


def test_a_missing_marker_is_an_error():
    page = "docs/metrics.md"
    text = (ROOT / page).read_text(encoding="utf-8").replace("<!-- END GENERATED metrics -->", "")
    with pytest.raises(ValueError, match="generated blocks"):
        GEN.render(page, text)


def test_every_metric_names_functions_that_exist():
    """docs/metrics.md's "computed by" column: one entry per key of tc.METRIC_UNITS, each a live tcocalc name."""
    import tcocalc as tc

    assert set(GEN.METRIC_SOURCES) == set(tc.METRIC_UNITS)
    note = (ROOT / "docs" / "rl-modeling.md").read_text(encoding="utf-8")
    headings = [line.lstrip("#").strip() for line in note.splitlines() if line.startswith("#")]
    for key, (funcs, section) in GEN.METRIC_SOURCES.items():
        for f in funcs:
            assert callable(GEN.resolve(f)) or isinstance(GEN.resolve(f), dict), (key, f)
        number = section.lstrip("§")
        assert any(re.match(rf"{re.escape(number)}(?:\.(?=\s|$)|\s|$)", h) for h in headings), (key, section)


def test_schema_lists_every_key_of_the_scenario_model():
    """docs/scenario-schema.md: one row per key of every section (and of [[phases]]), so a new key is documented
    where users look (multinode_nvlink was once added without its rows)."""
    import typing

    from tcocalc.scenario import Phase, Scenario

    def fields_of(annotation):  # a section's fields, also for an optional section (``Section | None``)
        models = [a for a in (annotation, *typing.get_args(annotation)) if hasattr(a, "model_fields")]
        return models[0].model_fields if models else None

    page = (ROOT / "docs" / "scenario-schema.md").read_text(encoding="utf-8")
    missing = []
    for name, f in Scenario.model_fields.items():
        section = fields_of(f.annotation)
        if name == "phases":
            missing += [f"[[phases]] {k}" for k in Phase.model_fields if f"| [[phases]] | `{k}` |" not in page]
        elif section is None:
            missing += [name] if f"| (top level) | `{name}` |" not in page else []
        else:
            missing += [f"[{name}] {k}" for k in section if f"| [{name}] | `{k}` |" not in page]
            for k, g in section.items():
                sub = fields_of(g.annotation)
                missing += [f"[{name}.{k}] {j}" for j in (sub or {}) if f"| [{name}.{k}] | `{j}` |" not in page]
    assert not missing


def test_toml_examples_in_the_docs_load_as_scenarios():
    import tcocalc as tc

    fence = re.compile(r"^```toml\n(.*?)^```", re.M | re.S)
    blocks = [b for p in sorted((ROOT / "docs").glob("*.md")) for b in fence.findall(p.read_text(encoding="utf-8"))]
    assert blocks
    for block in blocks:
        tc.evaluate(tc.loads_scenario(block))
