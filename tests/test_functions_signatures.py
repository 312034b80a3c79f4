"""polygrad.functions exports its neural-network functions with Chainer's
parameters and defaults."""

from __future__ import annotations

import pytest

import polygrad.functions as F


SIGNATURES = {
    "leaky_relu": "(x, slope=0.2)", "elu": "(x, alpha=1.0)", "gelu": "(x, approximate=False)",
    "softplus": "(x, beta=1.0)", "logsumexp": "(x, axis=None)",
    "sigmoid_cross_entropy": "(x, t, normalize=True, reduce='mean')",
    "huber_loss": "(x, t, delta, reduce='sum_along_second_axis')", "dropout": "(x, ratio=0.5)",
    "embed_id": "(x, W, ignore_label=None)",
    "batch_normalization": "(x, gamma, beta, eps=2e-05, running_mean=None, running_var=None, decay=0.9)",
    "fixed_batch_normalization": "(x, gamma, beta, mean, var, eps=2e-05)",
    "layer_normalization": "(x, gamma, beta, eps=1e-05)", "convolution_2d": "(x, W, b=None, stride=1, pad=0)",
    "max_pooling_2d": "(x, ksize, stride=None, pad=0, cover_all=True)",
    "average_pooling_2d": "(x, ksize, stride=None, pad=0)", "concat": "(xs, axis=1)", "stack": "(xs, axis=0)",
    "split_axis": "(x, indices_or_sections, axis, force_tuple=True)", "where": "(condition, x, y)",
    "clip": "(x, x_min, x_max)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_chainers(name):
    """Each function is exported from F with Chainer's parameters and defaults."""
    import inspect

    assert name in F.__all__
    assert str(inspect.signature(getattr(F, name))) == SIGNATURES[name]
