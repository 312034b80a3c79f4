"""Known-failure files: one test id per line, each with a ``# reason``.

::

    # comments and blank lines are ignored
    test_ops.py::test_forward[getitem-two_arrays]   # dask has no nd fancy indexing
    test_random.py                                  # a whole module (or a test without its parameters)
    test_ops.py::*[getitem-np_int]                  # '*' matches anything: here every test of one case

An id names a test as ``<module>::<test>[<params>]``, relative to the
``polygrad_conformance`` package. An entry matches that test exactly, or every
test it is a prefix of up to ``::`` or ``[``; ``*`` in an entry matches any text. The file lives beside the plugin
that provides the backend: ``conformance-xfails.txt`` in the plugin's package
directory or in the directory above it (the distribution root of a source
checkout).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from pathlib import Path
from typing import Any

FILENAME = "conformance-xfails.txt"


@dataclasses.dataclass(frozen=True)
class Entry:
    test_id: str
    reason: str
    line: int

    def matches(self, test_id: str) -> bool:
        e = self.test_id
        if "*" in e:
            pattern = ".*".join(re.escape(part) for part in e.split("*"))
            return re.fullmatch(pattern + r"(\[.*\]|::.*)?", test_id) is not None
        return test_id == e or test_id.startswith(e + "[") or test_id.startswith(e + "::")


class XfailFileError(ValueError):
    """A line without a test id or without a reason."""


def parse(text: str, source: str = FILENAME) -> list[Entry]:
    entries = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        test_id, sep, reason = line.partition("#")
        test_id, reason = test_id.strip(), reason.strip()
        if not sep or not reason:
            raise XfailFileError(f"{source}:{n}: {test_id!r} has no '# reason'; every known failure must say why")
        if " " in test_id:
            raise XfailFileError(f"{source}:{n}: {test_id!r} is not one test id")
        entries.append(Entry(test_id, reason, n))
    return entries


def load(path: Path) -> list[Entry]:
    return parse(path.read_text(encoding="utf-8"), str(path))


def _plugin_file(plugin: Any) -> str | None:
    module = plugin if inspect.ismodule(plugin) else sys.modules.get(type(plugin).__module__)
    return getattr(module, "__file__", None)


def locate(plugin: Any) -> Path | None:
    """The known-failures file beside ``plugin`` (a module or a plugin object), or None."""
    file = _plugin_file(plugin)
    if not file:
        return None
    here = Path(file).resolve().parent
    for candidate in (here / FILENAME, here.parent / FILENAME):
        if candidate.is_file():
            return candidate
    return None


def short_id(nodeid: str) -> str:
    """``.../polygrad_conformance/test_ops.py::test_x[p]`` -> ``test_ops.py::test_x[p]``."""
    marker = "polygrad_conformance/"
    i = nodeid.rfind(marker, 0, nodeid.find("::") if "::" in nodeid else len(nodeid))
    return nodeid[i + len(marker):] if i >= 0 else nodeid
