"""Shared fixtures: the repository root and the CLI to compare the package with.

MESHPLAN_CLI names the meshplan binary (default: build/meshplan of this checkout); the package
under test is whatever `import meshplan` finds (python/ on PYTHONPATH with MESHPLAN_LIB in the
ctest, or an installed copy)."""
import json
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """cli(*args) -> the parsed --json output of `meshplan args... --json`."""
    exe = os.environ.get("MESHPLAN_CLI") or os.path.join(ROOT, "build", "meshplan")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"no meshplan binary at {exe} (set MESHPLAN_CLI)")

    def run(*args):
        out = subprocess.run([exe, *args, "--json"], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out)
    return run
