"""Code written against the Array API standard runs on Variables and is differentiated."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

import polygrad as pg


def test_xp_style_function_runs_on_variables_and_differentiates():
    """A function written only against `xp = x.__array_namespace__()` runs on Variables and backprops."""

    def soft_threshold_energy(x):
        xp = x.__array_namespace__()
        shrunk = xp.sign(x) * xp.maximum(xp.abs(x) - 0.5, xp.zeros_like(x))
        return xp.sum(shrunk ** 2) + xp.linalg.vector_norm(x)

    data = np.array([-2.0, 0.1, 1.5])
    x = pg.Variable(data)
    y = soft_threshold_energy(x)
    y.backward()
    shrunk = np.sign(data) * np.maximum(np.abs(data) - 0.5, 0)
    expected = 2 * shrunk + data / np.linalg.norm(data)
    np.testing.assert_allclose(x.grad, expected)


def test_scipy_logsumexp_differentiates_through_variables():
    """scipy.special.logsumexp (SCIPY_ARRAY_API=1) accepts a Variable; its gradient is softmax."""
    code = textwrap.dedent(
        """
        import numpy as np, polygrad as pg
        from scipy.special import logsumexp
        x = pg.Variable(np.array([1.0, 2.0, 3.0]))
        y = logsumexp(x)
        assert isinstance(y, pg.Variable), type(y)
        y.backward()
        e = np.exp(x.data - x.data.max())
        np.testing.assert_allclose(x.grad, e / e.sum())
        print("ok")
        """
    )
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
