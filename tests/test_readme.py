"""The README's two set-up commands are the ones CI runs."""


def test_ci_runs_the_readme_test_command(root):
    readme = (root / "README.md").read_text()
    ci = (root / ".ci" / "run").read_text()
    test_cmd = 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'
    assert test_cmd in readme and test_cmd in ci
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/streamlit run app.py" in readme
