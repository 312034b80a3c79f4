"""Every example in the documentation runs.

Collects each fenced ```python block that contains ``>>>`` from ``docs/*.md``
and ``README.md`` and runs it with :mod:`doctest` (``ELLIPSIS`` and
``NORMALIZE_WHITESPACE``). There is one test per file; the blocks of a file run
in order and share their globals, as a reader's session would.

A block that needs something optional is preceded by a marker line::

    <!-- requires: dask -->
    <!-- requires: dask, backend:dask, distributed -->
    <!-- requires: program:dot -->

Each item is a module that must be importable, ``backend:NAME`` for a
polygrad backend that must be installed and usable, or ``program:NAME`` for
an executable that must be on ``PATH`` (Graphviz's ``dot``). When a requirement is
missing the block is not run, and a separate test,
``test_docs_requirements[FILE:LINE]``, is skipped with the reason, so the
skip shows in pytest's summary (``-ra``). A file whose blocks depend on each
other marks every block that needs the optional thing.

Each file runs in a fresh ``contextvars`` context (modes, hooks, debug mode and
``using_backend`` cannot leak), in a temporary working directory (files it
writes go there), and the process-wide default backend, seed and hand-registered
plugins are restored afterwards.
"""

from __future__ import annotations

import contextvars
import doctest
import importlib.util
import io
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

_FENCE = re.compile(r"^```(\S*)\s*$")
_REQUIRES = re.compile(r"^<!--\s*requires:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the first line of code
    text: str
    requires: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The ```python blocks with ``>>>`` prompts in ``path``, with their requirements."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = "\n".join(lines[start:j]) + "\n"
        if lang == "python" and ">>>" in body:
            requires: list[str] = []
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            r = _REQUIRES.match(lines[k]) if k >= 0 else None
            if r:
                requires = [item.strip() for item in r.group(1).split(",") if item.strip()]
            out.append(Block(path, start + 1, body, requires))
        i = j + 1
    return out


def missing(requirement: str) -> str | None:
    """Why ``requirement`` is not met here, or None when it is."""
    if requirement.startswith("program:"):
        name = requirement.split(":", 1)[1]
        return None if shutil.which(name) else f"the program {name!r} is not on PATH"
    if requirement.startswith("backend:"):
        name = requirement.split(":", 1)[1]
        import polygrad as pg

        row = pg.backends().get(name)
        if row is None:
            return f"the polygrad backend {name!r} is not installed"
        if not row.usable:
            return f"the polygrad backend {name!r} is not usable here: {row.reason}"
        return None
    try:
        found = importlib.util.find_spec(requirement) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else f"the module {requirement!r} is not importable"


FILES = [p for p in SOURCES if blocks_of(p)]  # pages with no examples (index.md, names.md) have nothing to run


def _unmet(block: Block) -> list[str]:
    return [why for why in (missing(r) for r in block.requires) if why]


def _restore_polygrad_state():
    """Snapshot what a docs file may change process-wide; returns a function that restores it."""
    import polygrad as pg
    import polygrad.backends as B
    from polygrad import _registry as R

    default, seed, extra = B._default_name, dict(R._seed_state), list(R._extra_plugins)

    def restore() -> None:
        for plugin, _ in list(R._extra_plugins):
            if not any(plugin is p for p, _ in extra):
                pg.unregister_plugin(plugin)
        B._default_name = default
        pg.seed(seed["seed"])

    return restore


def run_file(path: Path) -> tuple[int, list[str]]:
    """Run the runnable blocks of ``path``; returns (examples run, failure reports)."""
    globs: dict = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failures: list[str] = []
    for block in blocks_of(path):
        if _unmet(block):
            continue
        test = parser.get_doctest(block.text, globs, block.where, str(path), block.line - 1)
        test.globs = globs  # DocTest copies its globals: share one dict across the file's blocks
        out = io.StringIO()
        result = runner.run(test, out=out.write, clear_globs=False)
        if result.failed:
            failures.append(out.getvalue())
    return runner.tries, failures


@pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")  # the debug-mode examples
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every runnable example of one documentation file gives the output it shows."""
    monkeypatch.chdir(tmp_path)
    restore = _restore_polygrad_state()
    try:
        tries, failures = contextvars.copy_context().run(run_file, path)
    finally:
        restore()
    assert not failures, "\n".join(failures)
    if tries == 0:  # every block needs something missing here (dask.md without dask)
        pytest.skip(f"{path.relative_to(ROOT)}: no block could run; see test_docs_requirements for the reasons")


_MARKED = [b for p in FILES for b in blocks_of(p) if b.requires]


@pytest.mark.parametrize("block", _MARKED, ids=lambda b: b.where)
def test_docs_requirements(block: Block) -> None:
    """A block with a ``requires`` marker ran in ``test_docs``, or is skipped here with the reason."""
    unmet = _unmet(block)
    if unmet:
        pytest.skip(f"{block.where}: not run, because {'; '.join(unmet)}")


def test_markers_are_attached_to_blocks() -> None:
    """A ``requires`` marker must sit right before a ```python block with prompts (else it guards nothing)."""
    stray = []
    for path in SOURCES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if _REQUIRES.match(line):
                k = n + 1
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k >= len(lines) or not lines[k].startswith("```python"):
                    stray.append(f"{path.relative_to(ROOT)}:{n + 1}")
    assert not stray, f"requires markers not followed by a ```python block: {stray}"


# jax's reading of its boolean flags (jax/_src/config.py, bool_env): any other value is an error there
_JAX_TRUE = ("1", "true", "t", "yes", "y", "on", "True", "ON")
_JAX_FALSE = ("0", "false", "f", "no", "n", "off", "False", "OFF")


def test_the_jax_sketch_reads_jax_enable_x64_as_jax_and_the_xfail_conditions_do(monkeypatch) -> None:
    """The guide's jax sketch read JAX_ENABLE_X64 as true only for 1/true, so with =on a plugin copied
    from it declared float64=False while jax computed in float64; and ``env:JAX_ENABLE_X64`` in a
    known-failures file counted f and n as set. All three readings agree on every spelling jax takes."""
    from polygrad_conformance.xfails import env_truth

    text = (ROOT / "docs" / "plugins-and-conformance.md").read_text(encoding="utf-8")
    sketch = re.search(r"```python\n(# polygrad_jax/__init__\.py\n.*?)```", text, re.S)
    assert sketch, "the jax sketch is no longer in docs/plugins-and-conformance.md: update this test"
    namespace: dict = {}
    exec(compile(sketch.group(1), "jax sketch", "exec"), namespace)
    for value, jax_reads in [(v, True) for v in _JAX_TRUE] + [(v, False) for v in _JAX_FALSE]:
        monkeypatch.setenv("JAX_ENABLE_X64", value)
        assert namespace["polygrad_backend_info"]().float64 is jax_reads, f"the sketch, JAX_ENABLE_X64={value!r}"
        assert env_truth("env:JAX_ENABLE_X64") is jax_reads, f"env:JAX_ENABLE_X64 with {value!r}"


def test_every_dev_command_the_docs_name_is_in_its_help() -> None:
    """``./dev`` with no command printed demo, test and bench, not ``setup``, which the README and the
    guides tell readers to run."""
    import subprocess

    named = {m for p in SOURCES + [ROOT / "conformance" / "README.md"]
             for m in re.findall(r"\./dev ([a-z]+)", p.read_text(encoding="utf-8"))}
    got = subprocess.run(["bash", str(ROOT / "dev")], capture_output=True, text=True, timeout=60)
    listed = set(re.findall(r"^#\s+\./dev ([a-z]+)", got.stdout, re.M))
    assert got.returncode == 2 and named and named <= listed, f"./dev's help lists {listed}; the docs name {named}"
