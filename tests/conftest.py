"""Shared test fixtures: paths into the repository, independent of the working directory."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
