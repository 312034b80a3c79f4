"""build_computational_graph: nodes, edges, labels, DOT text and rendering."""

from __future__ import annotations

import shutil
import stat

import numpy as np
import pytest

import polygrad as pg
from polygrad.computational_graph import ComputationalGraph, VariablePlaceholder, build_computational_graph

from conftest import arr


def affine(xp):
    """y = w * x + b with x a constant (2, 3) array and w, b named parameters of shape (3,)."""
    x = arr(xp, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    w = pg.Variable(arr(xp, [1.0, 2.0, 3.0]), name="w")
    b = pg.Variable(arr(xp, [0.5, 0.5, 0.5]), name="b")
    h = w * x
    y = h + b
    y.name = "y"
    return x, w, b, h, y


AFFINE_DOT = """digraph graphname {
  rankdir=TB;
  0 [label="y: (2, 3), float64",shape="ellipse"];
  1 [label="add",shape="box"];
  2 [label="h: (2, 3), float64",shape="ellipse"];
  3 [label="multiply",shape="box"];
  4 [label="b: (3), float64",shape="ellipse"];
  5 [label="w: (3), float64",shape="ellipse"];
  6 [label="(2, 3), float64",shape="ellipse"];
  1 -> 0;
  3 -> 2;
  2 -> 1;
  4 -> 1;
  5 -> 3;
  6 -> 3;
}"""


def test_dot_of_affine(xp):
    """The DOT text of y = w*x + b: exact nodes (names, shapes, dtypes) and data-flow edges."""
    x, w, b, h, y = affine(xp)
    h.name = "h"
    assert build_computational_graph([y]).dump() == AFFINE_DOT


def test_nodes_and_edges_are_the_objects(xp):
    """g.nodes holds the Variables and function nodes; g.edges runs from inputs to outputs."""
    x, w, b, h, y = affine(xp)
    g = build_computational_graph(y)
    add, mul = y.creator, h.creator
    assert g.nodes == [y, add, h, mul, b, w, g.nodes[6]]
    assert isinstance(g.nodes[6], VariablePlaceholder)
    assert g.edges == [(add, y), (mul, h), (h, add), (b, add), (w, mul), (g.nodes[6], mul)]


def test_a_dropped_intermediate_keeps_its_shape(xp):
    """A Variable the user dropped is a placeholder labelled with the shape and dtype the graph saved."""
    x, w, b, h, y = affine(xp)
    del h
    g = build_computational_graph([y])
    assert isinstance(g.nodes[2], VariablePlaceholder)
    assert '2 [label="(2, 3), float64",shape="ellipse"];' in g.dump()


def test_a_0d_variable_is_labelled_with_its_dtype_only(xp):
    """A 0-d Variable was labelled "y: (), float64"; Chainer's VariableNode.label gives the dtype alone for
    shape (), the same for a dropped 0-d intermediate."""
    x = pg.Variable(arr(xp, [1.0, 2.0]), name="x")
    h = pg.sum(pg.exp(x))
    y = h * h
    y.name = "y"
    del h
    dot = build_computational_graph([y]).dump()
    assert 'label="y: float64"' in dot and 'label="float64"' in dot and 'label="x: (2), float64"' in dot
    assert "()" not in dot


def test_unknown_metadata_is_labelled_unknown(xp):
    """After backward frees what exp saved, its dropped output is labelled 'unknown'."""
    x = pg.Variable(arr(xp, [1.0, 2.0]), name="x")
    z = pg.sum(pg.exp(x) * pg.exp(x))
    z.backward()
    labels = [ComputationalGraph([], [])._label(n) for n in build_computational_graph(z).nodes]
    assert labels.count("unknown") == 2
    assert labels[-1] == "x: (2), float64"


def labels_of(g):
    return [g._label(n) for n in g.nodes]


def test_constants_are_drawn_the_same_after_backward(xp):
    """A constant array is labelled with its shape and dtype, and a Python scalar is not drawn, before and after
    backward frees the saved arrays (the array was 'unknown' before, and after it the scalar was drawn too)."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]), name="x")
    h = x * 2.0
    s = h + arr(xp, [5.0, 5.0, 5.0])
    y = pg.exp(s)
    drawn = ["(3), float64", "exp", "(3), float64", "add", "(3), float64", "multiply", "(3), float64",
             "x: (3), float64"]
    assert labels_of(build_computational_graph(y)) == drawn
    pg.sum(y).backward()
    assert labels_of(build_computational_graph(y)) == drawn


def test_a_constant_variable_is_drawn_as_itself(xp):
    """A Variable that needs no gradient is drawn as that Variable, named, before and after backward, and once
    however many functions use it; once dropped, as a placeholder that keeps its name, shape and dtype."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]), name="x")
    c = pg.Variable(arr(xp, [5.0, 5.0, 5.0]), name="c", requires_grad=False)
    y = pg.exp(x + c) * c
    for backward in (True, False):
        g = build_computational_graph(y)
        assert sum(n is c for n in g.nodes) == 1
        assert labels_of(g).count("c: (3), float64") == 1
        assert sum(a is c for a, b in g.edges) == 2
        if backward:
            pg.sum(y).backward()
    del c, g
    g = build_computational_graph(y)
    consts = [n for n in g.nodes if isinstance(n, VariablePlaceholder) and n.name == "c"]
    assert len(consts) == 1 and labels_of(g).count("c: (3), float64") == 1


def test_a_variable_used_twice_is_one_node_with_one_edge(xp):
    """x * x draws x once, with one edge into multiply."""
    x = pg.Variable(arr(xp, [1.0]), name="x")
    g = build_computational_graph(x * x)
    assert len(g.nodes) == 3 and len(g.edges) == 2


def test_remove_variable_connects_functions(xp):
    """remove_variable=True keeps the functions only: multiply -> add."""
    x, w, b, h, y = affine(xp)
    g = build_computational_graph([y], remove_variable=True)
    assert g.edges == [(h.creator, y.creator)]
    assert "ellipse" not in g.dump()


def test_user_function_shows_its_inputs(xp):
    """A user Function is a box labelled with its class name; its constant input is drawn."""

    class Scale(pg.Function):
        def forward(self, inputs):
            return inputs[0] * inputs[1],

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0] * inputs[1], None

    a = pg.Variable(arr(xp, [1.0, 2.0]), name="a")
    c = pg.Variable(arr(xp, [3.0, 4.0]), name="c", requires_grad=False)
    y = Scale()(a, c)
    dot = build_computational_graph(y).dump()
    assert 'label="Scale",shape="box"' in dot
    assert 'label="c: (2), float64"' in dot and 'label="a: (2), float64"' in dot


def test_styles_rankdir_and_names(xp):
    """Style dicts add DOT attributes over the defaults; rankdir and show_name are honoured."""
    x, w, b, h, y = affine(xp)
    dot = build_computational_graph(
        y, variable_style={"fillcolor": "grey"}, function_style={"shape": "record"}, rankdir="LR", show_name=False
    ).dump()
    assert "rankdir=LR;" in dot
    assert '0 [label="(2, 3), float64",shape="ellipse",fillcolor="grey"];' in dot
    assert '1 [label="add",shape="record"];' in dot


def test_chainer_signature(xp):
    """Chainer's calls work: remove_split (second, positional or not) is accepted and ignored when true (there
    are no split nodes) and refused when false, as Chainer does; 'default' styles are Chainer's filled ones."""
    x, w, b, h, y = affine(xp)
    plain = build_computational_graph([y]).dump()
    assert build_computational_graph([y], True).dump() == plain
    assert build_computational_graph([y], remove_split=True).dump() == plain
    dot = build_computational_graph([y], True, "default", "default", "LR", False, False).dump()
    assert "rankdir=LR;" in dot
    assert '0 [label="(2, 3), float64",shape="octagon",fillcolor="#E0E0E0",style="filled"];' in dot
    assert '1 [label="add",shape="record",fillcolor="#6495ED",style="filled"];' in dot
    assert build_computational_graph([y], variable_style=None, function_style=None).dump() == plain
    with pytest.raises(ValueError, match="remove_split"):
        build_computational_graph([y], False)
    with pytest.raises(TypeError, match="variable_style"):
        build_computational_graph([y], variable_style="fancy")
    with pytest.raises(TypeError, match="function_style"):
        ComputationalGraph([], [], function_style=["shape"])


def test_styles_in_the_second_place_still_work_with_a_warning(xp):
    """Calls that gave variable_style second (before remove_split took that place) keep their meaning, warned."""
    x, w, b, h, y = affine(xp)
    styles = ({"fillcolor": "grey"}, {"shape": "record"}, "LR", True, False)
    for k in range(1, 6):
        names = ("variable_style", "function_style", "rankdir", "remove_variable", "show_name")
        expected = build_computational_graph([y], **dict(zip(names, styles[:k]))).dump()
        with pytest.warns(DeprecationWarning, match="remove_split"):
            assert build_computational_graph([y], *styles[:k]).dump() == expected
    with pytest.warns(DeprecationWarning):
        g = build_computational_graph([y], None, rankdir="LR", show_name=False)
    assert g.dump() == build_computational_graph([y], rankdir="LR", show_name=False).dump()


def test_bad_arguments():
    """Non-Variable outputs, unknown rankdir and dump formats are errors."""
    with pytest.raises(TypeError, match="Variables"):
        build_computational_graph([np.zeros(1)])
    with pytest.raises(ValueError, match="rankdir"):
        build_computational_graph([], rankdir="XY")
    with pytest.raises(NotImplementedError, match="dot"):
        build_computational_graph([]).dump("svg")


def test_render_without_graphviz_says_how_to_install(monkeypatch, tmp_path, xp):
    """render raises a RuntimeError naming Graphviz and apt-get when `dot` is not on PATH."""
    monkeypatch.setattr(shutil, "which", lambda name: None)
    g = build_computational_graph(affine(xp)[-1])
    with pytest.raises(RuntimeError, match=r"Graphviz.*apt-get install graphviz"):
        g.render(tmp_path / "g.svg")


def test_render_runs_dot(monkeypatch, tmp_path, xp):
    """render pipes the DOT text to `dot -T<format> -o <path>` (a stand-in dot records it)."""
    fake = tmp_path / "dot"
    fake.write_text('#!/bin/sh\necho "$1" > "$3.format"\ncat > "$3"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake) if name == "dot" else None)
    g = build_computational_graph(affine(xp)[-1])
    out = g.render(tmp_path / "g.png", format="png")
    assert out == tmp_path / "g.png"
    assert (tmp_path / "g.png").read_text() == g.dump()
    assert (tmp_path / "g.png.format").read_text().strip() == "-Tpng"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_render_svg_with_real_graphviz(tmp_path, xp):
    """With Graphviz installed, render writes an SVG."""
    build_computational_graph(affine(xp)[-1]).render(tmp_path / "g.svg")
    assert "<svg" in (tmp_path / "g.svg").read_text()


def test_a_graph_with_a_constant_variable_pickles(xp):
    """A graph that records a constant Variable pickles (graphs travel to dask workers); the copy draws the
    constant from the facts recorded, its name kept."""
    import pickle

    x = pg.Variable(arr(xp, [1.0, 2.0]), name="x")
    c = pg.Variable(arr(xp, [3.0, 4.0]), name="c", requires_grad=False)
    y = pickle.loads(pickle.dumps(x * c))
    assert sorted(labels_of(build_computational_graph(y))) == ["(2), float64", "c: (2), float64", "multiply",
                                                                 "x: (2), float64"]


def test_remove_split_must_be_a_bool():
    """A truthy non-bool in Chainer's second place (a style given by position: 'default') was taken
    for remove_split=True and the style silently dropped."""
    y = pg.Variable(np.ones(2)) * 2
    with pytest.raises(TypeError, match="remove_split .* must be a bool, got 'default'"):
        build_computational_graph([y], "default")
