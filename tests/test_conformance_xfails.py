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
