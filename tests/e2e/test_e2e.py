"""End to end in a real Chromium (Debian's) driven by Playwright: the newcomer's path through the app.

Screenshots land in test-artifacts/ only (ignored by git); the tests never write docs/. The README's
screenshot docs/plan.png is retaken deliberately with ``python docs/screenshot.py``, which takes the same picture
as this file's Plan-page test (one helper, ``plan_screenshot``), or by copying test-artifacts/plan.png after a run.
"""

import io
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request

import pandas as pd
import pytest

from tests.conftest import ARTIFACTS, ROOT, _free_port

pytestmark = pytest.mark.e2e


def _screenshot_helper():
    """docs/screenshot.py's plan_screenshot (the README's picture), loaded from the docs folder."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_screenshot", ROOT / "docs" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.plan_screenshot


def _kpi(page, label):
    box = page.locator('[data-testid="stMetric"]', has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def _idle(page):
    """Wait until the page's script run is over (Streamlit's running indicator gone): a file set on the uploader
    while the first run still draws the page can land on a widget that is then replaced, and is lost."""
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden")
    page.wait_for_timeout(300)


def _upload_until_error(page, path):
    """Set the scenario uploader's file and wait for its error box. Under load a rerun that starts just before the
    file lands (the page's own query-parameter update) can replace the uploader and lose the file: then the file is
    set again, at most three times, each after the page is idle (CI 2026-12-06: two upload tests timed out at load 3,
    both pass alone)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    err = page.locator('[data-testid="stAlertContentError"]').first
    for _ in range(3):
        _idle(page)
        page.locator('input[type="file"]').first.set_input_files(str(path))  # the scenario's (the log's is second)
        try:
            err.wait_for(timeout=20_000)
            return err
        except PlaywrightTimeout:
            continue
    err.wait_for()
    return err


def _toggle(page, label):
    """A toggle by its label (a bare get_by_text can also match the caption's *Find the best split*)."""
    return page.get_by_test_id("stCheckbox").filter(has=page.get_by_role("switch", name=label))


def test_plan_page_change_gpus_download_csv_and_screenshot(page, app_url):
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    before = _kpi(page, "Useful samples/s")
    gen = page.get_by_role("spinbutton", name="Generator GPUs")
    gen.fill("24")
    gen.press("Enter")
    page.get_by_text("Split 8 trainer : 24 generator GPUs").wait_for()
    page.wait_for_timeout(1500)  # let the rerun settle before reading and clicking
    after = _kpi(page, "Useful samples/s")
    assert after != before
    page.get_by_text("All metrics").click()
    page.wait_for_timeout(800)
    button = page.locator('[data-testid="stDownloadButton"]', has_text="Download metrics (CSV)").locator("button")
    with page.expect_download() as dl:
        button.click()
    df = pd.read_csv(io.BytesIO(open(dl.value.path(), "rb").read()))
    values = df.set_index("metric")["value"]
    assert values["generator_gpus"] == 24
    assert re.match(r"[\d.]+", after) and abs(float(after.split()[0]) - values["useful_samples_per_s"]) < 0.01 * float(
        after.split()[0]) + 0.01
    # the README's screenshot: a fresh Plan page with the split solved (docs/plan.png: see the module docstring)
    _screenshot_helper()(page, app_url, ARTIFACTS / "plan.png")


def test_bad_upload_shows_an_error(page, app_url, tmp_path):
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    _idle(page)
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nname = 'Qwen3-8B'\n[trainer]\nhardware = 'H100'\ngpus = -4\n")
    err = _upload_until_error(page, bad)
    assert "trainer" in err.inner_text()
    assert "Traceback" not in page.content()


@pytest.mark.parametrize("name", ["Hardware", "Cost", "Compare", "Size", "Validation"])
def test_every_page_opens(page, app_url, name):
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    page.get_by_role("link", name=name).click()
    page.get_by_role("heading", name=re.compile(name.split()[0])).first.wait_for()
    page.wait_for_timeout(1500)
    assert "Traceback" not in page.content()
    page.screenshot(path=str(ARTIFACTS / f"{name.lower()}.png"), full_page=True)


def test_oversized_upload_is_refused(page, app_url, tmp_path):
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    _idle(page)
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 300_000 + "\n")
    err = _upload_until_error(page, big)
    assert "200,000 bytes or under" in err.inner_text()


def _expect(target):
    from playwright.sync_api import expect  # imported here: without playwright the fixtures skip (or fail in CI)

    expect.set_options(timeout=60_000)  # a cold solve or simulation on a busy machine takes a while
    return expect(target)


def _split_heading(page):
    return page.get_by_role("heading", name=re.compile(r"^(Split .*GPUs|\d+ GPUs \(one colocated pool\))"))


def test_plan_inputs_survive_a_reload_like_a_reconnect(page, app_url):
    """A reconnect after a server restart is a new session, as a reload is: the inputs come back from the URL."""
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    trainer = page.get_by_role("spinbutton", name="Trainer GPUs")
    trainer.fill("16")
    trainer.press("Enter")
    _expect(_split_heading(page)).to_have_text("Split 16 trainer : 8 generator GPUs")
    _expect(page).to_have_url(re.compile(r"[?&]trainer_gpus=16(&|$)"))
    url = page.url
    page.reload()
    assert page.url == url
    page.get_by_text("Useful samples/s").first.wait_for()
    _expect(page.get_by_role("spinbutton", name="Trainer GPUs")).to_have_value("16")
    _expect(_split_heading(page)).to_have_text("Split 16 trainer : 8 generator GPUs")
    gen = page.get_by_role("spinbutton", name="Generator GPUs")  # the first edit after it keeps the others
    gen.fill("24")
    gen.press("Enter")
    _expect(_split_heading(page)).to_have_text("Split 16 trainer : 24 generator GPUs")
    _expect(page.get_by_role("spinbutton", name="Trainer GPUs")).to_have_value("16")
    assert not page.locator('[data-testid="stAlertContentWarning"]').count()


def _serve(port: int, log) -> subprocess.Popen:
    """``streamlit run app.py`` on ``port`` (as conftest's app_url starts it), once it answers its health check."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                return proc
        except OSError:
            time.sleep(0.2)
    _kill(proc)
    raise RuntimeError(f"streamlit did not become healthy on port {port}")


def _kill(proc: subprocess.Popen) -> None:
    """Stop exactly the server we started, at once (as a crash would)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_plan_inputs_and_the_reconnecting_edit_survive_a_server_restart(page, tmp_path):
    """A real restart: the tab reconnects to a new server on the same port (a new session). The edit that sends
    the first rerun after it must win over the page's URL, written before that edit; every other input is kept."""
    port = _free_port()
    with open(tmp_path / "server.log", "w") as log:
        server = _serve(port, log)
        try:
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_text("Useful samples/s").first.wait_for()
            app = page.get_by_test_id("stApp")
            trainer = page.get_by_role("spinbutton", name="Trainer GPUs")
            trainer.fill("16")
            trainer.press("Enter")
            _expect(_split_heading(page)).to_have_text("Split 16 trainer : 8 generator GPUs")
            resp = page.get_by_role("spinbutton", name="Mean response [tokens]")
            resp.fill("6000")
            resp.press("Enter")
            _expect(page).to_have_url(re.compile(r"[?&]trainer_gpus=16&resp_mean=6000(&|$)"))
            _expect(app).to_have_attribute("data-test-script-state", "notRunning")
            before = _kpi(page, "Run cost")
            _expect(app).to_have_attribute("data-test-connection-state", "CONNECTED")
            _kill(server)
            gen = page.get_by_role("spinbutton", name="Generator GPUs")
            _expect(app).not_to_have_attribute("data-test-connection-state", "CONNECTED")  # the tab saw it go
            _expect(gen).to_be_disabled()  # its widgets wait for the reconnect
            server = _serve(port, log)
            _expect(app).to_have_attribute("data-test-connection-state", "CONNECTED")  # to the new server
            _expect(gen).to_be_enabled()
            gen.fill("24")  # this edit's rerun is the new session's first run
            gen.press("Enter")
            _expect(_split_heading(page)).to_have_text("Split 16 trainer : 24 generator GPUs")
            _expect(page).to_have_url(re.compile(r"[?&]trainer_gpus=16&generator_gpus=24&resp_mean=6000(&|$)"))
            _expect(app).to_have_attribute("data-test-script-state", "notRunning")
            _expect(trainer).to_have_value("16")
            _expect(gen).to_have_value("24")
            _expect(resp).to_have_value("6000")  # token counts read as whole numbers (issue 29 item 4)
            assert _kpi(page, "Run cost") != before  # the page evaluated the edit, not only the browser shows it
            assert not page.locator('[data-testid="stAlertContentWarning"]').count()
        finally:
            _kill(server)


def test_solve_and_simulate_agree_on_the_split(page, app_url):
    """Find the best split + Simulate: the simulation and the TOML download are the solved split shown."""
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    _toggle(page, "Find the best split").click()
    page.get_by_role("heading", name="Split sweep").wait_for()
    heading = _split_heading(page)
    _expect(heading).to_have_text(re.compile(r"\(solved\)$"))
    split = heading.inner_text().removeprefix("Split ").removesuffix(" (solved)")
    assert split != "8 trainer : 8 generator GPUs"  # the solver moved it
    _toggle(page, "Simulate 12 steps").click()
    caption = page.get_by_text(re.compile(r"^Simulated on "))
    _expect(caption).to_have_text(re.compile(rf"^Simulated on {re.escape(split)}: "))
    _expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
    button = page.locator('[data-testid="stDownloadButton"]', has_text="Download this scenario (TOML)")
    with page.expect_download() as dl:
        button.locator("button").click()
    assert dl.value.suggested_filename == "default-solved.toml"
    saved = tomllib.loads(open(dl.value.path()).read())
    assert f"{saved['trainer']['gpus']} trainer : {saved['generator']['gpus']} generator GPUs" == split
    assert saved["name"] == "default-solved" and saved["description"].startswith("Split solved by tcocalc")


def _whole_page(page, name):
    """A screenshot of the whole page: the viewport grown to the main container's height first."""
    h = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(h + 50, 6000)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / name))
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_planner_swaps_hardware_exports_and_compares_an_upload(page, app_url, tmp_path):
    """Issue 39 as a planner tries it: a hardware swap shows the price in use, the workbook has live formulas, and
    Compare takes the Plan page's inputs and uploads, a bad upload keeping its column."""
    from openpyxl import load_workbook

    import tcocalc as tc

    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(app_url + "?scenario=semianalysis_qwen3_235b_h200&trainer_hw=B200&generator_hw=B200")
    page.get_by_text("Useful samples/s").first.wait_for()
    _idle(page)
    price = page.get_by_role("spinbutton", name="GPU cost [USD/GPU-h]").input_value()
    want = tc.pool_pricing(tc.load_scenario("semianalysis_qwen3_235b_h200").with_cluster(
        trainer_hardware="B200", generator_hardware="B200"))[0].usd_per_gpu_hour
    assert float(price) == pytest.approx(want, abs=1e-4) and len(price) <= 6  # 2.229, not the file's 1.59
    page.get_by_text("Measured MFU carried like for like").first.wait_for()
    _whole_page(page, "planner_b200_swap.png")
    page.get_by_text("All metrics").click()
    page.wait_for_timeout(800)
    button = page.get_by_role("button", name="Download workbook (Excel)")
    button.wait_for()
    page.wait_for_timeout(1500)
    with page.expect_download(timeout=30_000) as dl:
        button.click()
    path = tmp_path / "plan.xlsx"
    dl.value.save_as(path)
    book = load_workbook(path)
    assert book.sheetnames[0] == "plan"
    assert any(str(c.value).startswith("=") for c in book["plan"]["B"])
    assert tc.load_scenario(path).trainer.hardware == "B200"  # the inputs sheet comes home
    # Compare: the Plan page's inputs and two uploads, one of which does not load
    page.get_by_role("link", name="Compare").click()
    page.get_by_role("heading", name="Compare scenarios").wait_for()
    _idle(page)
    page.get_by_text("Add the Plan page's inputs").click()
    _idle(page)
    good, bad = tmp_path / "mine.toml", tmp_path / "broken.toml"
    good.write_text(tc.load_scenario("default").with_values({"name": "mine", "trainer.gpus": 16}).to_toml())
    bad.write_text("[trainer]\ngpus = 'many'\n")
    page.locator('input[type="file"]').first.set_input_files([str(good), str(bad)])
    page.locator('[data-testid="stAlertContentError"]', has_text="broken.toml").wait_for()
    _idle(page)
    assert "Traceback" not in page.content()
    _whole_page(page, "planner_compare_upload.png")


def test_a_run_log_uploads_whatever_its_extension(page, app_url, tmp_path):
    """A pilot's console output as a cluster saves it (a slurm job's .out file) uploads on the Plan page's
    "Calibrate from a run" and is read by its content: the measured-against-the-model table appears, no error.
    The uploader once took csv/jsonl/json/log/txt only, so the browser refused a .out file before tcocalc saw it."""
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    _idle(page)
    page.get_by_text("Calibrate from a run").first.click()
    log = tmp_path / "slurm-510942.out"
    log.write_bytes((ROOT / "tests" / "data" / "logs" / "real" / "verl_megatron_qwen2-7b_math.log").read_bytes())
    page.locator('input[type="file"]').nth(1).set_input_files(str(log))  # the log's uploader (the scenario's first)
    _idle(page)
    page.get_by_role("button", name="Calibrate", exact=True).click()
    _expect(page.get_by_text("Measured against the model, before and after")).to_be_visible()
    assert "Traceback" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "calibrate_upload.png"), full_page=True)
