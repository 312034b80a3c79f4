"""Symbolic variables for compiled functions (use as ``T``, like ``theano.tensor``).

>>> import polygrad as pg
>>> from polygrad import symbolic as T
>>> x, y = T.scalars('x', 'y')
>>> f = pg.function([x, y], x * y + 1)
>>> f(2, 3)
array(7.)
"""

from polygrad.compile.io import shared
from polygrad.compile.symbolic import (
    SymbolicArray, grad, is_symbolic, matrices, matrix, scalar, scalars, tensor, vector, vectors,
)

__all__ = ["scalar", "scalars", "vector", "vectors", "matrix", "matrices", "tensor", "grad", "shared", "is_symbolic", "SymbolicArray"]
