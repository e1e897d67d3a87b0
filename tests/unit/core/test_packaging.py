"""Issue 30 item 8: packaging. The version is written once, the wheel carries the app, and `tcocalc app` starts it."""

import importlib.metadata
import os
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import tcocalc as tc
from tests.conftest import ROOT, _free_port

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once():
    assert PYPROJECT["project"]["dynamic"] == ["version"] and "version" not in PYPROJECT["project"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tcocalc._version.__version__"}
    assert importlib.metadata.version("tcocalc") == tc.__version__


def test_metadata():
    project = PYPROJECT["project"]
    assert project["license"] == "LicenseRef-Proprietary"
    assert "Private :: Do Not Upload" in project["classifiers"] and "Typing :: Typed" in project["classifiers"]
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]  # SPDX license expressions
    assert "openpyxl>=3.1" in project["dependencies"]
    assert any(d.startswith("streamlit") for d in project["dependencies"])  # not an extra: README's first command
    assert {"nbclient>=0.10", "nbformat>=5.10", "ipykernel>=6.29"} <= set(project["optional-dependencies"]["test"])


def test_the_package_ships_the_app_and_its_markers():
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert "tcocalc.app" in setuptools["packages"] and (ROOT / "tcocalc" / "py.typed").is_file()
    assert "py.typed" in setuptools["package-data"]["tcocalc"]
    # a data package named like a public function would shadow it once imported (tcocalc.scenarios did)
    names = {p.split(".", 1)[1] for p in setuptools["packages"] if "." in p}
    assert not names & set(tc.__all__), names & set(tc.__all__)
    assert setuptools["package-dir"]["tcocalc.shipped_scenarios"] == "scenarios"


def test_tcocalc_app_serves_the_packaged_app(tmp_path):
    port = _free_port()
    log = open(tmp_path / "app.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "tcocalc", "app", "--server.headless", "true", "--server.port",
                             str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)  # not the checkout: the package
    try:
        deadline, health = time.time() + 60, b""
        while time.time() < deadline and proc.poll() is None:
            try:
                health = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        assert health == b"ok", (tmp_path / "app.log").read_text()
        assert "tcocalc/app/main.py" in " ".join(Path(f"/proc/{proc.pid}/cmdline").read_text().split("\0"))
    finally:
        os.kill(proc.pid, signal.SIGTERM)  # exactly the server started here (tcocalc app execs Streamlit)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
        log.close()


def test_no_module_is_named_like_a_public_name():
    """Importing tcocalc.X sets the package attribute X to the module, shadowing a public function tc.X for good
    (tcocalc.sweep once did exactly that to tc.sweep, once any test had imported the module)."""
    modules = {p.stem for p in (ROOT / "tcocalc").glob("*.py")} | {p.name for p in (ROOT / "tcocalc").iterdir()
                                                                  if (p / "__init__.py").is_file()}
    packaged = {p.split(".", 1)[1] for p in PYPROJECT["tool"]["setuptools"]["packages"] if "." in p}
    assert not (modules | packaged) & set(tc.__all__), (modules | packaged) & set(tc.__all__)


def test_public_names_survive_importing_every_module():
    code = ("import importlib, pkgutil, tcocalc as tc\n"
            "for m in pkgutil.walk_packages(tc.__path__, 'tcocalc.'):\n"
            "    if not m.name.startswith(('tcocalc.app', 'tcocalc.__main__')):\n"
            "        importlib.import_module(m.name)\n"
            "bad = [n for n in tc.__all__ if type(getattr(tc, n)).__name__ == 'module']\n"
            "assert not bad, bad\n"
            "assert callable(tc.sweep) and callable(tc.scenarios)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]


def test_every_subpackage_is_listed():
    """A subpackage missing from the explicit package list would be left out of the wheel (tcocalc.rl.sim)."""
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tcocalc").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert found <= listed, found - listed
