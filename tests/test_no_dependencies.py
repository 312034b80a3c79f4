"""Importing polygrad imports no array library (backends load on first use)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "cupy", "dask", "array_api_strict", "torch", "jax")


def _modules_after(code: str) -> set[str]:
    """Run ``code`` in a fresh interpreter and return the top-level modules it imported."""
    script = code + "\nimport sys, json\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_polygrad_imports_no_array_library():
    """`import polygrad` leaves numpy, cupy, dask and array_api_strict out of sys.modules."""
    mods = _modules_after("import polygrad")
    assert "polygrad" in mods
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


def test_import_submodules_imports_no_array_library():
    """Importing functions, links, function_hooks and type_check imports no array library."""
    mods = _modules_after(
        "import polygrad.functions, polygrad.links, polygrad.function_hooks, polygrad.core.type_check, polygrad.backends"
    )
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


def test_listing_backends_does_not_import_numpy():
    """`pg.backends()` discovers plugins but does not import numpy."""
    mods = _modules_after("import polygrad as pg\nrows = pg.backends()\nassert 'numpy' in rows, rows")
    assert "numpy" not in mods
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


def test_numpy_is_imported_on_first_use():
    """The numpy library is imported only when the numpy backend is first used (the check above can fail)."""
    mods = _modules_after("import polygrad as pg\npg.asarray([1.0], backend='numpy')")
    assert "numpy" in mods


def test_core_imports_nothing_of_ops_compile_or_plugins():
    """polygrad/core imports only itself and the standard library (and array_api_compat, pluggy
    nowhere): every import statement in it, at any depth, read from the source."""
    import ast
    from pathlib import Path

    import polygrad.core

    core = Path(polygrad.core.__file__).parent
    outside = []
    for path in sorted(core.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            outside += [f"{path.name}: {n}" for n in names
                        if n.split(".")[0] == "polygrad" and not n.startswith("polygrad.core")
                        or n.split(".")[0] in HEAVY + ("pluggy", "array_api_compat")]
    assert not outside, outside
