"""The known-failures file format of the conformance suite (polygrad_conformance.xfails)."""

from __future__ import annotations

import pytest

xf = pytest.importorskip("polygrad_conformance.xfails")


def test_entries_need_a_reason():
    """A line without '# reason' is refused, naming the file and line."""
    with pytest.raises(xf.XfailFileError, match=r"f\.txt:2: 'test_a\.py::test_b' has no '# reason'"):
        xf.parse("# header\ntest_a.py::test_b\n", "f.txt")


def test_comments_blank_lines_and_reasons_are_parsed():
    """Comments and blank lines are skipped; each entry keeps its id, reason and line."""
    entries = xf.parse("# c\n\ntest_ops.py::test_grad[exp-2d]   # why not\n")
    assert entries == [xf.Entry("test_ops.py::test_grad[exp-2d]", "why not", 3)]


@pytest.mark.parametrize("entry, test_id, hit", [
    ("test_ops.py::test_grad[exp-2d]", "test_ops.py::test_grad[exp-2d]", True),
    ("test_ops.py::test_grad", "test_ops.py::test_grad[exp-2d]", True),
    ("test_ops.py", "test_ops.py::test_grad[exp-2d]", True),
    ("test_ops.py::test_grad", "test_ops.py::test_grad2[exp-2d]", False),
    ("test_ops.py::*[exp-2d]", "test_ops.py::test_forward[exp-2d]", True),
    ("test_ops.py::*[exp-2d]", "test_ops.py::test_forward[exp-0d]", False),
    ("test_ops.py::*[getitem-np_int]", "test_ops.py::test_grad[getitem-np_int_array_2d]", False),
])
def test_matching(entry, test_id, hit):
    """An entry matches its test, the tests it prefixes up to '::' or '[', and '*' matches any text."""
    assert xf.Entry(entry, "r", 1).matches(test_id) is hit


def test_short_ids_drop_the_path():
    """Node ids are compared relative to the polygrad_conformance package."""
    assert xf.short_id("conformance/polygrad_conformance/test_ops.py::test_grad[x]") == "test_ops.py::test_grad[x]"
    assert xf.short_id("test_ops.py::test_grad[x]") == "test_ops.py::test_grad[x]"


@pytest.mark.parametrize("entry, test_id, hit", [
    # '*' stays inside one part of the id: a name pattern never reaches into the parameters
    ("test_ops.py::*grad*", "test_ops.py::test_grad2[exp-2d]", True),
    ("test_ops.py::*grad*", "test_ops.py::test_backward_grads_belong_to_backend[exp-2d]", True),
    ("test_ops.py::*grad*", "test_ops.py::test_forward[unique_values-grad]", False),
    ("test_ops.py::test_grad*[unique_values-grad]", "test_ops.py::test_forward[unique_values-grad]", False),
    ("test_ops.py::test_grad*[unique_values-grad]", "test_ops.py::test_grad2[unique_values-grad]", True),
    ("test_*.py::test_grad", "test_ops.py::test_grad[exp-2d]", True),
    ("test_*.py", "test_ops.py::test_grad[exp-2d]", True),  # a module pattern covers its tests
    # inside the brackets '*' matches any text but the brackets
    ("test_ops.py::*[linalg_inv-*-float32]", "test_ops.py::test_forward_dtype[linalg_inv-spd-float32]", True),
    ("test_ops.py::*[linalg_inv-*-float32]", "test_ops.py::test_forward_dtype[linalg_inv-spd-float64]", False),
    # a case names that case at every dtype of the per-dtype tests; a dtype names one
    ("test_ops.py::*[exp-2d]", "test_ops.py::test_forward_dtype[exp-2d-float32]", True),
    ("test_ops.py::*[exp-2d]", "test_ops.py::test_grad_dtype[exp-2d-complex64]", True),
    ("test_ops.py::*[exp-2d]", "test_ops.py::test_forward_dtype[exp-2d_big-float32]", False),
    ("test_ops.py::*[exp-2d-float32]", "test_ops.py::test_forward_dtype[exp-2d-float64]", False),
    ("test_random.py::test_shape_dtype_and_owner[float32]", "test_random.py::test_shape_dtype_and_owner[float32]", True),
])
def test_wildcards_and_dtypes(entry, test_id, hit):
    """'*' never crosses '::', '[' or ']'; an entry naming a case covers its per-dtype tests."""
    assert xf.Entry(entry, "r", 1).matches(test_id) is hit


def test_conditions_are_parsed_with_the_entry():
    """``ID if CONDITION  # reason``: the condition is kept, and the reason still required."""
    (e,) = xf.parse("test_arrays.py::*[int64] if not int64 and env:JAX_ENABLE_X64   # jax: 32-bit mode\n")
    assert e.test_id == "test_arrays.py::*[int64]" and e.reason == "jax: 32-bit mode"
    assert e.condition.terms == (((True, "int64"), (False, "env:JAX_ENABLE_X64")),)
    assert "if not int64 and env:JAX_ENABLE_X64" in e.as_line()
    with pytest.raises(xf.XfailFileError, match="has no '# reason'"):
        xf.parse("test_a.py::test_b if float64\n")


@pytest.mark.parametrize("condition, truths, holds", [
    ("float64", {"float64"}, True),
    ("not float64", {"float64"}, False),
    ("not float64", set(), True),
    ("lazy and complex", {"lazy"}, False),
    ("lazy or complex", {"lazy"}, True),
    ("not lazy and complex or depth", {"depth"}, True),  # 'and' binds tighter than 'or'
    ("not lazy and complex or depth", {"complex"}, True),
    ("not lazy and complex or depth", {"lazy", "complex"}, False),
])
def test_condition_logic(condition, truths, holds):
    """'not' > 'and' > 'or'; each name is asked of the backend under test."""
    assert xf.Condition.parse(condition).holds(lambda name: name in truths) is holds


@pytest.mark.parametrize("text", ["flaot64", "env:", "not", "float64 and", "int64 or or int32", "env:1X"])
def test_unknown_condition_names_are_refused(text):
    """A misspelt name or a malformed condition is an error naming the line: it must not disable an entry silently."""
    with pytest.raises(xf.XfailFileError, match=r"f\.txt:1: "):
        xf.parse(f"test_a.py::test_b if {text}  # why\n", "f.txt")


@pytest.mark.parametrize("name, environ, value", [
    ("env:JAX_ENABLE_X64", {"JAX_ENABLE_X64": "1"}, True),
    ("env:JAX_ENABLE_X64", {"JAX_ENABLE_X64": "True"}, True),
    ("env:JAX_ENABLE_X64", {"JAX_ENABLE_X64": "0"}, False),
    ("env:JAX_ENABLE_X64", {"JAX_ENABLE_X64": "off"}, False),
    ("env:JAX_ENABLE_X64", {"JAX_ENABLE_X64": ""}, False),
    ("env:JAX_ENABLE_X64", {}, False),
    ("env:MODE=fast", {"MODE": "fast"}, True),
    ("env:MODE=fast", {"MODE": "slow"}, False),
])
def test_environment_conditions(name, environ, value):
    """env:NAME is true when NAME is set to something but '', 0, false, no, off; env:NAME=VALUE compares."""
    assert xf.env_truth(name, environ) is value
