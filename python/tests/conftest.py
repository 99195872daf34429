"""Shared fixtures: the repository, the hetsim CLI to compare against, and a
runner that returns what the CLI prints.

The CLI is $HETSIM_CLI, else <repo>/build/hetsim (scripts/test_python.sh
builds it); tests that need it are skipped with the reason when it is missing.
"""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(os.environ.get("HETSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DATA = REPO / "tests" / "data"


def _cli_path() -> Path:
    return Path(os.environ.get("HETSIM_CLI", REPO / "build" / "hetsim"))


@pytest.fixture(scope="session")
def cli():
    """cli(*args) -> CompletedProcess (text) of the hetsim executable."""
    path = _cli_path()
    if not path.is_file():
        pytest.skip(f"hetsim CLI not found at {path} (set HETSIM_CLI)")

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"hetsim {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
