"""Speed figures for docs/guide.md, "Speed" (not timed tests: this machine is shared and noisy).

Run: ``.venv/bin/python benchmarks/run.py``. Each figure is the best of several runs, printed next to
its target. Start-up figures run in fresh subprocesses; the others run warm (catalogs loaded).
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time

REPEATS = 5


def _best_subprocess(code: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def _best(fn, repeats: int = REPEATS, clock=time.perf_counter) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def import_cost() -> list[tuple[str, float, str]]:
    bare = _best_subprocess("pass")
    deps = _best_subprocess("import numpy, pandas, pint, pydantic, scipy")
    pkg = _best_subprocess("import tcocalc")
    first = _best_subprocess("import tcocalc as tc; tc.hardware('H200'); tc.model('Qwen3-8B')")
    return [
        ("python start-up (bare interpreter)", bare, "reference"),
        ("import numpy, pandas, pint, pydantic, scipy", deps, "reference"),
        ("import tcocalc", pkg, "<= bare + 0.05 s"),
        ("import tcocalc + first hardware() and model() look-up", first, "<= deps"),
    ]


def roofline() -> list[tuple[str, float, str]]:
    import numpy as np

    import tcocalc as tc

    tc.validation_table()  # warm every catalog and calibration
    gen = _best(lambda: tc.generation_throughput("Qwen3-235B-A22B", "H200", gpus=64, prompt_tokens=1000,
                                                 response_tokens=12000, precision="fp8"))
    gen_dense = _best(lambda: tc.generation_throughput("Llama-3.1-70B", "H100", gpus=64, prompt_tokens=1000,
                                                       response_tokens=4000, precision="fp8"))
    # issue 13 item 3: both pools' layout searches, the aggregated comparison and the solved split
    disagg = _best(lambda: tc.disaggregated_throughput("DeepSeek-V3", "H100", gpus=96, prompt_tokens=2000,
                                                       response_tokens=1000, precision="fp8"))
    trn = _best(lambda: tc.training_throughput("Qwen3-235B-A22B", "H200", gpus=256, seq_tokens=16000,
                                               precision="bf16"))
    # issue 13: uneven stages, interleaving and context parallelism at frontier scale
    trn_big = _best(lambda: tc.training_throughput("Llama-3.1-405B", "H100", gpus=16384, seq_tokens=131072))
    models = ["Qwen3-8B", "Qwen3-32B", "Llama-3.1-70B", "Qwen3-30B-A3B", "Qwen3-235B-A22B"]
    accs = ["H100", "H200", "B200", "GB200"]
    layouts = [tc.Parallelism(tp=t, dp=d, ep=e) for t, d, e in
               ((1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1), (1, 2, 2), (1, 4, 4), (1, 8, 8), (2, 2, 4),
                (2, 4, 8), (4, 2, 8))]
    batches = np.arange(1, 501)
    n_points = len(models) * len(accs) * len(layouts) * len(batches)
    sweep = _best(lambda: tc.decode_sweep(models, accs, layouts, batches), repeats=3)
    return [
        ("generation_throughput search, Qwen3-235B on 64 H200 (MoE)", gen, "< 0.05 s"),
        ("generation_throughput search, Llama-3.1-70B on 64 H100 (dense)", gen_dense, "< 0.05 s"),
        ("disaggregated_throughput search (both pools, split, aggregated), DeepSeek-V3 on 96 H100", disagg,
         "< 0.05 s"),
        ("training_throughput layout search, Qwen3-235B on 256 H200", trn, "< 0.2 s"),
        ("training_throughput search (uneven PP, VP, CP), Llama-3.1-405B on 16,384 H100, 131k", trn_big, "< 0.2 s"),
        (f"decode_sweep of {n_points:,} (model, hardware, layout, batch) points", sweep, "< 2 s"),
    ]


def rl() -> list[tuple[str, float, str]]:
    from pathlib import Path

    import tcocalc as tc
    from tcocalc.rl import pipeline as rl_pipeline

    root = Path(__file__).resolve().parents[1] / "scenarios"
    semi = tc.load_scenario(root / "semianalysis_qwen3_235b_h200.toml")
    big = semi.with_split(1024, 3072)

    def cold_solve():
        rl_pipeline.clear_caches()
        tc.solve_split(big)

    cold = _best(cold_solve, repeats=3)

    def cold_eval():
        rl_pipeline.clear_caches()
        tc.evaluate(semi)

    ev_cold = _best(cold_eval, repeats=3)
    warm = _best(lambda: tc.solve_split(big))
    tc.evaluate(semi)
    ev = _best(lambda: tc.evaluate(semi))
    glm = tc.load_scenario(root / "glm5_h200_drift.toml")
    tc.evaluate(glm)
    ev_glm = _best(lambda: tc.evaluate(glm))
    nofilter = semi.model_copy(update={"orchestration": semi.orchestration.model_copy(
        update={"filter_zero_advantage": False})})
    tc.simulate(nofilter, steps=2)
    sim = _best(lambda: tc.simulate(nofilter, steps=1000, seed=1), repeats=1)
    from tcocalc.cli.run import default_sim_steps

    agentic = tc.load_scenario(root / "gb300_agentic_960.toml")
    agentic_steps = default_sim_steps(agentic)  # what `tcocalc run --simulate` runs (within its event budget)
    sim_agentic = _best(lambda: tc.simulate(agentic, steps=agentic_steps, seed=0), repeats=1)
    return [
        ("simulate 1,000 steps x 1,024 samples on 256 GPUs (Qwen3-235B, async)", sim, "< 10 s"),
        (f"simulate gb300_agentic_960, {agentic_steps} steps (the CLI's default; 30 turns, sandboxes)", sim_agentic,
         "< 10 s"),
        ("solve_split over every split of 4,096 H200 (511 splits), cold caches", cold, "< 1 s"),
        ("solve_split, same, warm caches", warm, "< 1 s"),
        ("evaluate, SemiAnalysis scenario, cold caches (first call)", ev_cold, "< 0.02 s"),
        ("evaluate, SemiAnalysis scenario (warm)", ev, "< 0.02 s"),
        ("evaluate, GLM-5 scenario with two phases (warm)", ev_glm, "< 0.02 s"),
    ]


def sizing() -> list[tuple[str, float, str]]:
    """tc.size_cluster over every catalog accelerator per pool x up to 4,096 GPUs x 5 modes x 3 staleness bounds x every
    supply (own + 8 providers), SemiAnalysis Qwen3-235B workload, target 2 useful samples/s."""
    from pathlib import Path

    import tcocalc as tc
    from tcocalc.rl import pipeline as rl_pipeline

    root = Path(__file__).resolve().parents[1] / "scenarios"
    semi = tc.load_scenario(root / "semianalysis_qwen3_235b_h200.toml")
    names = list(tc.hardware_table()["name"])
    opts = {"trainer_hardware": names, "generator_hardware": names, "max_gpus": 4096, "staleness_bounds": [1, 2, 4]}

    def cold():
        rl_pipeline.clear_caches()
        tc.size_cluster(semi, {"useful_samples_per_s": 2.0}, opts)

    cold_s = _best(cold, repeats=1)
    warm_s = _best(lambda: tc.size_cluster(semi, {"useful_samples_per_s": 2.0}, opts), repeats=3)
    n = len(names)
    # issue 39 item 2: the agentic GLM-5 sizing (21 and 52 turns, sync rounds with refills, LRU KV retention), as
    # the CLI runs it (`tcocalc size glm5_h200_drift --target-samples-per-s 2`) and over five accelerators per pool
    glm = tc.load_scenario(root / "glm5_h200_drift.toml")
    five = ["H100-SXM", "H200-SXM", "B200", "B300", "GB200-NVL72"]

    def glm_cold(options):
        rl_pipeline.clear_caches()
        tc.size_cluster(glm, {"useful_samples_per_s": 2.0}, options)

    glm_own = _best(lambda: glm_cold({}), repeats=3)
    glm_five = _best(lambda: glm_cold({"trainer_hardware": five, "generator_hardware": five}), repeats=2)
    # the process's CPU seconds of the same search: on a shared machine the wall clock also counts other work
    glm_five_cpu = _best(lambda: glm_cold({"trainer_hardware": five, "generator_hardware": five}), repeats=2,
                         clock=time.process_time)
    return [(f"size_cluster: {n}x{n} accelerators x 4,096 GPUs x 5 modes x 3 bounds x 9 supplies, cold", cold_s,
             "< 5 s"),
            ("size_cluster, same, warm caches", warm_s, "< 2 s"),
            ("size_cluster glm5_h200_drift (H200 x H200, 4,096 GPUs, 5 modes x 4 bounds), cold", glm_own, "< 10 s"),
            ("size_cluster glm5_h200_drift, 5 x 5 accelerators, cold", glm_five, "< 10 s"),
            ("size_cluster glm5_h200_drift, 5 x 5 accelerators, cold, CPU seconds of the process", glm_five_cpu,
             "< 10 s")]


def bounded() -> list[tuple[str, float, str]]:
    """Issue 40 item 7: scenarios the schema accepts answer within 10 s each, cold (evaluate, solve_split): the
    GLM-5 scenario in sync mode with its staleness bound, in periodic mode with partial rollouts, and with as many
    different phase workloads as :data:`~tcocalc.scenario.MAX_PHASE_WORKLOADS` accepts."""
    import tomllib
    from pathlib import Path

    import tcocalc as tc
    from tcocalc.rl import pipeline as rl_pipeline
    from tcocalc.scenario import MAX_PHASE_WORKLOADS

    root = Path(__file__).resolve().parents[1] / "scenarios"
    base = tomllib.loads((root / "glm5_h200_drift.toml").read_text())

    def variant(orchestration=None, phases=None):
        data = {**base, "orchestration": {**base["orchestration"], **(orchestration or {})}}
        if phases is not None:
            data["workload"] = {**base["workload"], "steps": 10 * phases + 10}
            data["phases"] = [{"name": f"p{i}", "start_step": 10 * i, "response_scale": 1.0 + 0.01 * i}
                              for i in range(1, phases + 1)]
        return tc.Scenario.model_validate(data)

    out = []
    for label, scn in (("GLM-5 sync (max_staleness 8)", variant({"mode": "sync"})),
                       ("GLM-5 periodic, partial rollouts", variant({"mode": "periodic", "partial_rollout": True})),
                       (f"GLM-5 with {MAX_PHASE_WORKLOADS} phase workloads", variant(phases=MAX_PHASE_WORKLOADS - 1))):
        for what, fn in (("evaluate", tc.evaluate), ("solve_split", tc.solve_split)):
            def cold(fn=fn, scn=scn):
                rl_pipeline.clear_caches()
                fn(scn)
            out.append((f"{what}, {label}, cold", _best(cold, repeats=2), "< 10 s"))
    # and the simulator at the CLI's default steps (within its event budget, tcocalc.cli.run.default_sim_steps): GLM-5
    # sync, the shipped case with the most work per event (tool returns waiting for KV room)
    from tcocalc.cli.run import default_sim_steps

    sync = variant({"mode": "sync"})
    steps = default_sim_steps(sync)

    def cold_sim():
        rl_pipeline.clear_caches()
        tc.simulate(sync, steps=steps, seed=0)
    out.append((f"simulate, GLM-5 sync, {steps} steps (the CLI's default), cold", _best(cold_sim, repeats=2),
                "< 10 s"))
    return out


def measurements() -> list[tuple[str, float, str]]:
    """tc.load_measurements of a 10,000-step verl log (50 keys a step) in three formats, written to a temp folder."""
    import json
    import tempfile
    from pathlib import Path

    import numpy as np
    import pandas as pd

    import tcocalc as tc

    n, rng = 10_000, np.random.default_rng(0)
    keys = ["timing_s/step", "timing_s/gen", "timing_s/old_log_prob", "timing_s/ref", "timing_s/update_actor",
            "timing_s/update_weights", "response_length/mean", "response_length/max", "prompt_length/mean",
            "perf/throughput"] + [f"actor/metric_{i}" for i in range(40)]
    table = pd.DataFrame({k: rng.uniform(1.0, 100.0, n) for k in keys})
    parts = ["timing_s/gen", "timing_s/old_log_prob", "timing_s/ref", "timing_s/update_actor",
             "timing_s/update_weights"]
    table["timing_s/step"] = table[parts].sum(axis=1) + 1.0  # the step contains its timers (the nesting check)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        table.assign(_step=np.arange(1, n + 1), _timestamp=1.78e9 + 60.0 * np.arange(n)).to_csv(
            folder / "history.csv", index=False)
        records = table.to_dict("records")
        (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "data": r}) + "\n"
                                                      for i, r in enumerate(records, 1)))
        (folder / "console.log").write_text("".join(f"step:{i} - " + " - ".join(f"{k}:{v}" for k, v in r.items())
                                                    + "\n" for i, r in enumerate(records, 1)))
        tc.load_measurements(folder / "history.csv")  # warm the key table
        for name, what in (("history.csv", "W&B CSV"), ("metrics.jsonl", "JSONL"), ("console.log", "console")):
            secs = _best(lambda name=name: tc.load_measurements(folder / name), repeats=3)
            out.append((f"load_measurements, 10,000-step verl {what} (50 keys)", secs, "< 2 s"))
    return out


_MILLION = """
import resource, sys, time
import tcocalc as tc
tc.load_measurements(sys.argv[2])  # warm the key tables on a small log
t0, c0 = time.perf_counter(), time.process_time()
m = tc.load_measurements(sys.argv[1])
print(time.perf_counter() - t0, time.process_time() - c0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _million_line_logs(folder) -> dict[str, str]:
    """Three one-million-line logs: a verl console log (9 start-up or progress lines to each step line of 40 keys,
    like a real run's mix), a prime-rl-like metrics.jsonl (one small row a line, several a step), and a W&B CSV of
    12 columns; each under the 200 MB cap."""
    import json
    import random

    rnd = random.Random(0)
    keys = [f"actor/metric_{i}" for i in range(30)] + ["response_length/mean", "prompt_length/mean"]
    with open(folder / "console.log", "w") as f:
        for step in range(1, 100_001):
            f.writelines(f"(TaskRunner pid=4242) INFO vLLM worker {i}: step {step}, progress {rnd.random():.4f}\n"
                         for i in range(9))
            gen, act = rnd.uniform(40, 60), rnd.uniform(20, 30)
            pairs = " - ".join(f"{k}:{rnd.random():.3f}" for k in keys)
            f.write(f"(TaskRunner pid=4242) step:{step} - timing_s/gen:{gen:.3f} - timing_s/old_log_prob:5.100 - "
                    f"timing_s/update_actor:{act:.3f} - timing_s/step:{gen + act + 8:.3f} - {pairs}\n")
    with open(folder / "metrics.jsonl", "w") as f:
        for line in range(1_000_000):
            step, kind = divmod(line, 4)
            row = {"step": step + 1, "time/step": 30.0 + kind, "time/forward_backward": 24.0,
                   "time/wait_for_batch": 4.0} if kind == 0 else {"step": step + 1, f"other/k{kind}": rnd.random()}
            f.write(json.dumps(row) + "\n")
    with open(folder / "history.csv", "w") as f:
        f.write("_step,_timestamp,timing_s/step,timing_s/gen,timing_s/update_actor,"
                + ",".join(f"actor/m{i}" for i in range(7)) + "\n")
        for step in range(1, 1_000_001):
            f.write(f"{step},{1.78e9 + 60 * step},{80 + rnd.random():.3f},{40 + rnd.random():.3f},"
                    f"{20 + rnd.random():.3f}," + ",".join(f"{rnd.random():.3f}" for _ in range(7)) + "\n")
    small = folder / "small.jsonl"
    small.write_text("".join(json.dumps({"step": s, "data": {"timing_s/step": 1.0}}) + "\n" for s in (1, 2)))
    return {"verl console, 100,000 steps among 900,000 other lines": "console.log",
            "prime-rl metrics.jsonl, 4 rows a step": "metrics.jsonl", "W&B CSV, 12 columns": "history.csv"}


def million_line_log() -> list[tuple[str, float, str]]:
    """Issue 40 item 1: load a one-million-line log in a fresh process; wall and CPU time (the CPU seconds are the
    figure to read on a loaded machine) and peak memory (RSS of the whole process, numpy and pandas included)."""
    import tempfile
    from pathlib import Path

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for what, name in _million_line_logs(folder).items():
            best, cpu, peak = float("inf"), float("inf"), 0.0
            for _ in range(2):
                run = subprocess.run([sys.executable, "-c", _MILLION, str(folder / name), str(folder / "small.jsonl")],
                                     check=True, capture_output=True, text=True)
                secs, used, rss = map(float, run.stdout.split())
                best, cpu, peak = min(best, secs), min(cpu, used), max(peak, rss)
            size = (folder / name).stat().st_size / 1e6
            out.append((f"load_measurements, 1,000,000-line log ({size:.0f} MB): {what}", best, "< 5 s"))
            out.append(("  the same, CPU seconds of the load", cpu, "< 5 s"))
            out.append(("  peak memory of that process [MB, not s]", peak, "< 500"))
    return out


def calibration() -> list[tuple[str, float, str]]:
    """tc.calibrate on a step time alone and on every phase (the SemiAnalysis Qwen3-235B run), and the
    leave-one-out accuracy on the published rows (issue 28's targets: values, not seconds, where the name says)."""
    import tcocalc as tc
    from tcocalc.studies.calibration_validation import calibration_pairs_table, calibration_validation_summary

    semi = tc.load_scenario("scenarios/semianalysis_qwen3_235b_h200.toml")
    step = tc.evaluate(semi).metrics["step_time_s"]
    one = _best(lambda: tc.calibrate(semi, {"step_time_s": 1.3 * step}), repeats=3)
    phases = {"step_time_s": 1.3 * step, "generation_s": 0.9 * step, "training_s": 0.2 * step,
              "weight_sync_s": 20.0, "response_tokens_mean": 11000.0}
    every = _best(lambda: tc.calibrate(semi, phases), repeats=3)
    pilot = tc.load_scenario("tests/data/pilot/verl_gpg_qwen2_7b_8gpu.toml")
    log = "tests/data/logs/verl_qwen2-7b_math_excerpt.log"
    real = _best(lambda: tc.calibrate(pilot, tc.load_measurements(log)), repeats=3)
    s = calibration_validation_summary(calibration_pairs_table())
    return [("calibrate: step time alone (SemiAnalysis Qwen3-235B, async 64:192)", one, "< 1 s"),
            ("calibrate: step, generation, training, push and mean response", every, "< 1 s"),
            ("calibrate: a real verl console log, read and fitted (tests/data/logs/verl_qwen2-7b_math_excerpt.log)",
             real, "< 1 s"),
            ("  calibrated siblings, NeMo RL: median |error| [%, not s]", 100 * s["calibrated_median_abs_error"],
             "<= 8"),
            ("  calibrated siblings, NeMo RL: within +-25% [%, not s]", 100 * s["calibrated_within_25pct"], ">= 90"),
            ("  whole-step rescale baseline: median |error| [%, not s]", 100 * s["rescaled_median_abs_error"],
             "(baseline)")]


def sweep() -> list[tuple[str, float, str]]:
    """tc.sweep (issue 30): 1,000 evaluate points of the default scenario, caches cleared before each run.

    Price x response length: the 50 prices of each response length share one evaluation of the physics (20 full
    evaluations, 980 re-pricings). Every point new physics: 1,000 response lengths, 1,000 full evaluations (no
    advice), the honest worst case for a grid with no price axis."""
    import numpy as np

    import tcocalc as tc
    from tcocalc.rl import pipeline as rl_pipeline

    scn = tc.load_scenario("default")
    tc.evaluate(scn)  # catalogs and calibration loaded once, as in a notebook
    grid = {"economics.usd_per_gpu_hour": np.linspace(1.0, 3.0, 50),
            "workload.response_tokens_mean": np.linspace(4000.0, 15000.0, 20)}
    worst = {"workload.response_tokens_mean": np.linspace(4000.0, 15000.0, 1000)}

    def cold(g):
        rl_pipeline.clear_caches()
        res = tc.sweep(scn, g)
        assert len(res) == 1000 and res["error"].isna().all()

    mixed = _best(lambda: cold(grid), repeats=3)
    every = _best(lambda: cold(worst), repeats=1)
    return [("sweep: 1,000 points, 50 prices x 20 response lengths (default scenario), cold caches", mixed,
             "< 5 s"),
            ("sweep: 1,000 points, every one new physics (1,000 response lengths), cold caches", every,
             "reference")]


def workbook() -> list[tuple[str, float, str]]:
    """Issue 39 item 3 (helper "planner"): the workbook of a 1,000-point sweep (formats, widths, frozen headers) and a
    report's workbook with its live plan sheet, written to memory."""
    import io

    import numpy as np

    import tcocalc as tc

    scn = tc.load_scenario("default")
    res = tc.sweep(scn, {"economics.usd_per_gpu_hour": np.linspace(1.0, 3.0, 50),
                         "workload.response_tokens_mean": np.linspace(4000.0, 15000.0, 20)})
    report = tc.evaluate(tc.load_scenario("semianalysis_qwen3_235b_h200"))
    return [("workbook of a 1,000-point sweep (SweepResult.to_excel, in memory)",
             _best(lambda: res.to_excel(io.BytesIO()), repeats=3), "< 5 s"),
            ("workbook of a report with its live plan sheet (report.to_excel)",
             _best(lambda: report.to_excel(io.BytesIO()), repeats=3), "reference")]


def app() -> list[tuple[str, float, str]]:
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[1]
    page = str(root / "tcocalc" / "app" / "plan.py")  # the pages import tcocalc.app.shared (the package)
    at = AppTest.from_file(page, default_timeout=120).run()
    first = _best(lambda: AppTest.from_file(page, default_timeout=120).run(), repeats=1)
    values = iter([16, 24, 32, 40, 48])

    def rerun():
        at.number_input(key="generator_gpus").set_value(next(values)).run()

    change = _best(rerun, repeats=5)
    return [("Plan page: first render in a fresh session (AppTest)", first, "reference"),
            ("Plan page: rerun after a GPU-count change (AppTest)", change, "< 0.3 s")]


def rl_accuracy() -> list[tuple[str, float, str]]:
    """Issue 12's accuracy targets on the published RL runs (values, not seconds, where the name says so)."""
    import tcocalc as tc

    t0 = time.perf_counter()
    table = tc.rl_validation_table()
    secs = time.perf_counter() - t0
    s = tc.rl_validation_summary(table)
    return [
        ("rl_validation_table: 52 NeMo RL + 9 verl runs as scenarios, evaluated", secs, "(time)"),
        ("  NeMo RL median |step-time error| [%, not s]", s["nemo_median_abs_error_pct"], "<= 15"),
        ("  NeMo RL rows within +-25% [%, not s]", 100 * s["nemo_within_share"], ">= 80"),
        ("  on/off-policy pairs on the published side of 1.0 [count, not s]", s["pairs_right_side"],
         f"= {s['pairs']}"),
    ]


def validation_groups() -> list[tuple[str, float, str]]:
    """Issue 36: `tcocalc validate --groups` (every group, cold, in a fresh process) and its headline figures."""
    t0 = time.perf_counter()  # one cold run (about 10 s): the figure is the run a user waits for
    subprocess.run([sys.executable, "-m", "tcocalc", "validate", "--groups"], check=True, stdout=subprocess.DEVNULL)
    secs = time.perf_counter() - t0
    from tcocalc.studies.validation_groups import validate

    g = validate().groups.set_index("group")
    return [("tcocalc validate --groups: every group, cold (fresh process)", secs, "< 60 s"),
            *[(f"  {name} median |error| [%, not s]", float(g.loc[name, "median |error| [%]"]), target)
              for name, target in (("NeMo RL (in-sample)", "<= 12"), ("other frameworks (development set)", "<= 25"),
                                   ("stages", "<= 30"), ("leave-one-framework-out", "(reference)"))]]


def main() -> None:
    print(f"# tcocalc benchmarks, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"python {platform.python_version()}")
    print(f"{'figure':66s} {'seconds':>9s}  target")
    figures = (import_cost() + roofline() + rl() + sweep() + rl_accuracy() + validation_groups() + sizing()
               + bounded() + measurements() + million_line_log() + calibration() + workbook() + app())
    for name, secs, target in figures:
        print(f"{name:66s} {secs:9.4f}  {target}")


if __name__ == "__main__":
    main()
