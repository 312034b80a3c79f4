"""Links: objects that hold parameters (Chainer's Link and Chain), and Linear."""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator

from polygrad.backends import get_backend, to_backend
from polygrad.core.namespace import backend_of_type
from polygrad.core.variable import Variable

__all__ = ["Link", "Chain", "Linear"]


class Link:
    """A holder of parameters (Variables). Assign them inside ``init_scope()``.

    >>> import polygrad as pg
    >>> class Scale(pg.Link):
    ...     def __init__(self):
    ...         super().__init__()
    ...         with self.init_scope():
    ...             self.a = pg.Variable(pg.asarray([2.0]))
    ...     def forward(self, x):
    ...         return self.a * x
    """

    def __init__(self, **params: Any) -> None:
        object.__setattr__(self, "_params", [])
        object.__setattr__(self, "_within_init_scope", False)
        object.__setattr__(self, "name", None)
        with self.init_scope():
            for k, v in params.items():
                setattr(self, k, v)

    @contextlib.contextmanager
    def init_scope(self) -> Iterator[None]:
        """Inside this block, Variables (and, in a Chain, Links) assigned as attributes are registered."""
        old = self._within_init_scope
        object.__setattr__(self, "_within_init_scope", True)
        try:
            yield
        finally:
            object.__setattr__(self, "_within_init_scope", old)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_within_init_scope") and isinstance(value, Variable):
            if value.name is None:
                value.name = name
            if name not in self._params:
                self._params.append(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._params:
            self._params.remove(name)
        super().__delattr__(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise NotImplementedError(f"polygrad: {type(self).__name__} defines neither forward nor __call__")
        return forward(*args, **kwargs)

    # -- parameters -------------------------------------------------------------
    def namedparams(self, include_uninit: bool = True) -> Iterator[tuple[str, Variable]]:
        """``("/name", param)`` pairs, children's prefixed by their path."""
        for name in self._params:
            p = getattr(self, name)
            if include_uninit or p.data is not None:
                yield "/" + name, p

    def params(self, include_uninit: bool = True) -> Iterator[Variable]:
        for _, p in self.namedparams(include_uninit):
            yield p

    def links(self, skipself: bool = False) -> Iterator["Link"]:
        if not skipself:
            yield self

    def cleargrads(self) -> None:
        """Set every parameter's gradient to None."""
        for p in self.params():
            p.cleargrad()

    def zerograds(self) -> None:
        for p in self.params(include_uninit=False):
            p.zerograd()

    def to_backend(self, name: str) -> "Link":
        """Move every parameter to backend ``name`` (in place; returns self)."""
        for p in self.params(include_uninit=False):
            p.data = to_backend(p.data, name)
            if p.grad is not None:
                p.grad = to_backend(p.grad, name)
        return self

    def count_params(self) -> int:
        return sum(int(p.size) for p in self.params(include_uninit=False))


class Chain(Link):
    """A Link made of child Links (registered in ``init_scope()`` or as keyword arguments)."""

    def __init__(self, **links: Any) -> None:
        object.__setattr__(self, "_children", [])
        super().__init__()
        with self.init_scope():
            for k, v in links.items():
                setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_within_init_scope") and isinstance(value, Link):
            if name not in self._children:
                self._children.append(name)
            object.__setattr__(value, "name", name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._children:
            self._children.remove(name)
        super().__delattr__(name)

    def namedparams(self, include_uninit: bool = True) -> Iterator[tuple[str, Variable]]:
        yield from super().namedparams(include_uninit)
        for name in self._children:
            for path, p in getattr(self, name).namedparams(include_uninit):
                yield "/" + name + path, p

    def links(self, skipself: bool = False) -> Iterator[Link]:
        if not skipself:
            yield self
        for name in self._children:
            yield from getattr(self, name).links()

    def children(self) -> Iterator[Link]:
        for name in self._children:
            yield getattr(self, name)


class Linear(Link):
    """Fully connected layer: ``y = x @ W.T + b``, ``W`` of shape (out_size, in_size).

    ``Linear(out_size)`` or ``Linear(None, out_size)`` infers ``in_size`` at the
    first call. ``W`` is drawn from N(0, 1/in_size) with the backend's random
    numbers (``pg.seed`` makes it repeatable); ``b`` starts at zero.

    :param dtype: dtype name or backend dtype (default float32).
    :param backend: backend name (default: the current backend).
    """

    def __init__(self, in_size: int | None, out_size: int | None = None, nobias: bool = False,
                 initialW: Any = None, initial_bias: Any = None, *, dtype: Any = "float32", backend: str | None = None) -> None:
        super().__init__()
        if out_size is None:
            in_size, out_size = None, in_size
        self.out_size = out_size
        self._dtype = dtype
        self._backend_name = backend
        self._initialW = initialW
        with self.init_scope():
            self.W = Variable(None, name="W")
            self.b = None
            if not nobias:
                b = get_backend(backend)
                dt = getattr(b.xp, dtype) if isinstance(dtype, str) else dtype
                bias = b.xp.zeros((out_size,), dtype=dt) if initial_bias is None else b.xp.asarray(initial_bias, dtype=dt)
                self.b = Variable(bias, name="b")
        if in_size is not None:
            self._initialize_params(in_size)

    def _initialize_params(self, in_size: int) -> None:
        b = get_backend(self._backend_name) if self.b is None else backend_of_type(type(self.b.data))
        xp = b.xp
        dt = getattr(xp, self._dtype) if isinstance(self._dtype, str) else self._dtype
        if self._initialW is not None:
            W = xp.asarray(self._initialW, dtype=dt)
        else:
            W = b.rng().normal((self.out_size, in_size), dtype=dt, mean=0.0, std=math.sqrt(1.0 / in_size))
        self.W.data = W

    def forward(self, x: Any) -> Variable:
        from polygrad.functions.nn import linear

        if self.W.data is None:
            data = x.data if isinstance(x, Variable) else x
            self._initialize_params(math.prod(data.shape[1:]))
        return linear(x, self.W, self.b)
