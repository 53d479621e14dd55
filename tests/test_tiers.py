"""The test tiers (`make test-fast`, the `slow` marker), the terminal summary's notes, and `make test` on a
machine that cannot install the browser."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST_DOCTESTS, FAST_TEST_MODULES, is_fast

ROOT = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")


def test_the_fast_tier_is_the_toolkits_and_every_other_module_is_slow():
    for name in FAST_TEST_MODULES:
        assert (ROOT / "tests" / f"{name}.py").is_file(), f"tests/conftest.py lists {name}, which is not a test module"
    assert is_fast(ROOT / "tests" / "test_metrics.py") and is_fast(ROOT / "tests" / "test_calibrators.py")
    # what trains, executes notebooks, drives a browser or reads the committed cache is slow
    for name in ("test_cache", "test_train", "test_build", "test_labs", "test_pagecheck", "test_reproduce"):
        assert not is_fast(ROOT / "tests" / f"{name}.py"), name
    assert not is_fast(ROOT / "tests" / "test_a_module_added_tomorrow.py")  # slow until listed
    # doctests: the toolkit's are fast, the study's and the tools' slow
    assert FAST_DOCTESTS == ("calibcourse/calibration/",)
    assert is_fast(ROOT / "calibcourse" / "calibration" / "metrics" / "binned.py")
    assert not is_fast(ROOT / "calibcourse" / "study" / "runs" / "cache.py")
    assert not is_fast(ROOT / "calibcourse" / "tools" / "build.py")
    assert not is_fast(Path("/elsewhere/test_x.py"))


def test_the_slow_marker_is_registered_and_set_on_collection(request, pytestconfig):
    assert any(line.startswith("slow:") for line in pytestconfig.getini("markers"))
    assert request.node.get_closest_marker("slow") is None  # this module is fast


@pytest.mark.skipif(MAKE is None, reason="make not found")
def test_make_test_fast_deselects_the_slow_tier_and_needs_no_browser():
    def dry_run(target):  # the commands make would run (a stale set-up stamp adds its pip lines)
        out = subprocess.run([MAKE, "--no-print-directory", "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    fast = dry_run("test-fast")
    assert fast[-1].endswith('-m pytest -m "not slow" tests ' + " ".join(d.rstrip("/") for d in FAST_DOCTESTS))
    assert not any("apt-get" in ln or "chromium" in ln for ln in fast)
    # make test runs every tier: the side half's files, and everything but them beside it
    text = "\n".join(dry_run("test"))
    side = re.search(r"-m pytest ((?:tests/\S+ ?)+) > _build/test-side.log", text)
    assert side, text[-800:]
    files = side.group(1).split()
    assert files and all((ROOT / f).is_file() for f in files)
    assert "-m pytest " + " ".join(f"--ignore={f}" for f in files) + ";" in text
    assert "exit $(( main || s ))" in text                            # both halves must pass


def test_a_terminal_note_is_printed_after_the_test_summary(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_note.py").write_text("def test_note(terminal_note):\n"
                                           "    terminal_note('a line the user must see')\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                          "-c", os.devnull, str(tmp_path / "test_note.py")],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:]
    lines = out.stdout.splitlines()
    assert "a line the user must see" in lines and " calibcourse " in lines[lines.index("a line the user must see") - 1]


def _bin(tmp_path, **scripts) -> Path:
    """A PATH folder holding only ``id`` and the given executables (name -> shell script body)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    if "id" not in scripts:
        os.symlink(shutil.which("id"), folder / "id")
    for name, body in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return folder


@pytest.mark.skipif(MAKE is None, reason="make not found")
@pytest.mark.parametrize("case", ["no apt-get", "not root"])
def test_make_chromium_without_apt_get_as_root_says_so_in_one_line_and_goes_on(tmp_path, case):
    called = tmp_path / "apt-get-called"
    scripts = {} if case == "no apt-get" else {"apt-get": f"touch {called}", "id": "echo 1000"}
    out = subprocess.run([MAKE, "-s", "chromium"], cwd=ROOT, capture_output=True, text=True,
                         env={"PATH": str(_bin(tmp_path, **scripts)), "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["make: chromium, chromedriver or pdftotext missing and no apt-get as root to "
                                       "install them: the browser and PDF checks will skip"]
    assert not called.exists()
