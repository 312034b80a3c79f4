"""Known-failure files: one test id per line, each with a ``# reason``, and an
optional condition.

::

    # comments and blank lines are ignored
    test_ops.py::test_forward[getitem-two_arrays]   # dask has no nd fancy indexing
    test_random.py                                  # a whole module (or a test without its parameters)
    test_ops.py::*[getitem-np_int]                  # '*': here every test of one case
    test_ops.py::test_grad*[std-all]                # the gradient tests of one case only
    test_arrays.py::*[int64] if not int64           # only where the namespace has no int64
    test_ops.py::*[linalg_eigh-*] if env:JAX_ENABLE_X64   # only when this variable is set

Ids
    An id names a test as ``<module>::<test>[<params>]``, relative to the
    ``polygrad_conformance`` package: the form the suite prints failures in. An
    entry matches that test exactly, or every test it is a prefix of up to
    ``::`` or ``[`` (``test_ops.py::test_grad`` matches ``test_grad[exp-2d]``,
    not ``test_grad2[exp-2d]``).

Wildcards
    ``*`` matches any text inside one part of the id: it never crosses ``::``,
    ``[`` or ``]``. So ``test_ops.py::*grad*`` matches the tests whose *name*
    contains ``grad`` (``test_grad``, ``test_grad2``,
    ``test_backward_grads_belong_to_backend``) and never
    ``test_forward[unique_values-grad]``, whose *case* does; and
    ``test_ops.py::*[op-case]`` matches every test of that case, forward ones
    included: to list only its gradient tests, name them
    (``test_ops.py::test_grad*[op-case]``).

Dtypes
    Tests that run at each floating dtype the backend declares end their
    parameters with the dtype (``test_forward_dtype[exp-2d-float32]``). An
    entry naming a case, ``[exp-2d]``, covers the case at every dtype too;
    ``[exp-2d-float32]`` covers that dtype only.

Conditions
    ``ID if CONDITION  # reason`` applies the entry only where CONDITION holds.
    A condition is names joined by ``and`` / ``or`` (``and`` binds tighter),
    each optionally preceded by ``not``; a name is

    * a capability of ``BackendInfo``: ``lazy``, ``inplace``, ``float64``,
      ``complex``, ``data_dependent_shapes`` (``eager`` is ``not lazy``);
    * a dtype name (``int64``, ``float16``, ``complex128``, ...): true where the
      namespace's ``__array_namespace_info__().dtypes()`` has it;
    * ``depth``: the run has ``--polygrad-depth``;
    * ``env:NAME``: the environment variable NAME is set to something other
      than ``""``, ``0``, ``false``, ``f``, ``no``, ``n`` or ``off`` (any case);
      ``env:NAME=VALUE``: it is set to exactly VALUE.

    An unknown name is an error naming the line (a typo must not disable an
    entry silently).

The file lives beside the plugin that provides the backend:
``conformance-xfails.txt`` in the plugin's package directory or in the
directory above it (the distribution root of a source checkout).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

FILENAME = "conformance-xfails.txt"

#: BackendInfo capabilities a condition may name (and "eager", "depth").
CAPABILITIES = ("lazy", "inplace", "float64", "complex", "data_dependent_shapes", "eager", "depth")
#: dtype names a condition may name: true where the namespace declares them.
DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
               "bfloat16", "float32", "float64", "complex64", "complex128")
#: a trailing ``-<dtype>`` in a test's parameters: the per-dtype tests.
_DTYPE_SUFFIX = r"(?:-(?:float16|bfloat16|float32|float64|complex64|complex128))?"
_FALSE = ("", "0", "false", "f", "no", "n", "off")  # (jax's false spellings, and unset-like "")


class XfailFileError(ValueError):
    """A line without a test id, without a reason, or with a condition that cannot be read."""


def _part(pattern: str) -> str:
    """Regex for one part of an id: ``*`` is any text without ``::``, ``[`` or ``]``."""
    return "[^\\[\\]:]*".join(re.escape(p) for p in pattern.split("*"))


def _compile(test_id: str) -> re.Pattern:
    head, bracket, params = test_id.partition("[")
    if bracket:
        if not params.endswith("]"):
            raise XfailFileError(f"{test_id!r}: '[' without a closing ']'")
        core = params[:-1]
        inner = "[^\\[\\]]*".join(re.escape(p) for p in core.split("*"))
        return re.compile(_part(head) + r"\[" + inner + _DTYPE_SUFFIX + r"\]")
    return re.compile(_part(head) + r"(?:\[.*\]|::.*)?")


@dataclasses.dataclass(frozen=True)
class Condition:
    """``a and not b or env:X``: a disjunction of conjunctions of (negated) names."""

    text: str
    terms: tuple  # ((negated, name), ...) per 'or' branch

    @classmethod
    def parse(cls, text: str) -> "Condition":
        branches = []
        for branch in re.split(r"\s+or\s+", text.strip()):
            terms = []
            for term in re.split(r"\s+and\s+", branch.strip()):
                words = term.split()
                negated = len(words) == 2 and words[0] == "not"
                if len(words) != 1 + negated:
                    raise XfailFileError(f"condition {text!r}: cannot read {term!r}")
                name = words[-1]
                if not (name in CAPABILITIES or name in DTYPE_NAMES or re.fullmatch(r"env:[A-Za-z_][A-Za-z0-9_]*(=\S*)?", name)):
                    raise XfailFileError(
                        f"condition {text!r}: unknown name {name!r} (a BackendInfo capability: "
                        f"{', '.join(CAPABILITIES)}; a dtype name such as int64; or env:VARIABLE[=VALUE])"
                    )
                terms.append((negated, name))
            branches.append(tuple(terms))
        return cls(text.strip(), tuple(branches))

    def holds(self, truth: Callable[[str], bool]) -> bool:
        return any(all(truth(name) != negated for negated, name in branch) for branch in self.terms)


def env_truth(name: str, environ: Any = None) -> bool:
    """The value of ``env:NAME`` or ``env:NAME=VALUE`` in ``environ`` (default os.environ)."""
    environ = os.environ if environ is None else environ
    var, eq, value = name[4:].partition("=")
    got = environ.get(var)
    if eq:
        return got == value
    return got is not None and got.strip().lower() not in _FALSE


@dataclasses.dataclass(frozen=True)
class Entry:
    test_id: str
    reason: str
    line: int
    condition: Condition | None = None

    def matches(self, test_id: str) -> bool:
        return _compile(self.test_id).fullmatch(test_id) is not None

    def matches_as_before(self, test_id: str) -> bool:
        """The meaning of ``*`` in the suite's first files: any text, ``::``, ``[`` and ``]``
        included (the plugin applies it, with a warning, to an entry that matches nothing now)."""
        if "*" not in self.test_id:
            return False
        pattern = ".*".join(re.escape(part) for part in self.test_id.split("*"))
        return re.fullmatch(pattern + r"(\[.*\]|::.*)?", test_id) is not None

    def applies(self, truth: Callable[[str], bool]) -> bool:
        """Whether the entry is in force: no condition, or its condition holds."""
        return self.condition is None or self.condition.holds(truth)

    def as_line(self) -> str:
        cond = f" if {self.condition.text}" if self.condition else ""
        return f"{self.test_id}{cond}   # {self.reason}"


def parse(text: str, source: str = FILENAME) -> list[Entry]:
    entries = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, sep, reason = line.partition("#")
        spec, reason = spec.strip(), reason.strip()
        test_id, _, cond = spec.partition(" if ")
        test_id = test_id.strip()
        if not sep or not reason:
            raise XfailFileError(f"{source}:{n}: {test_id!r} has no '# reason'; every known failure must say why")
        if not test_id or " " in test_id:
            raise XfailFileError(f"{source}:{n}: {spec!r} is not one test id (a condition starts with ' if ')")
        try:
            _compile(test_id)
            condition = Condition.parse(cond) if cond.strip() else None
        except XfailFileError as exc:
            raise XfailFileError(f"{source}:{n}: {exc}") from None
        entries.append(Entry(test_id, reason, n, condition))
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
