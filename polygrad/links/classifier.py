"""``L.Classifier``: a predictor with a loss and an accuracy (Chainer's
``chainer.links.Classifier``)."""

from __future__ import annotations

from typing import Any, Callable

from polygrad.links import Chain, Link

__all__ = ["Classifier"]


class Classifier(Chain):
    """A classifier: calling it runs ``predictor`` on the inputs and returns the
    loss against the labels, as Chainer's.

    ``model(x, t)`` sets ``model.y = predictor(x)``, ``model.loss =
    lossfun(model.y, t)`` and, while ``compute_accuracy`` is True,
    ``model.accuracy = accfun(model.y, t)``, and returns the loss; so
    ``optimizer.update(model, x, t)`` trains it. The labels are the argument
    at ``label_key``: an index into the positional arguments (default -1, the
    last) or the name of a keyword argument.

    >>> import polygrad as pg, polygrad.links as L
    >>> model = L.Classifier(L.Linear(2, 3))
    >>> loss = model(pg.asarray([[1.0, 0.0]], dtype="float32"), pg.asarray([2]))
    >>> model.loss is loss, model.accuracy.shape, [name for name, _ in model.namedparams()]
    (True, (), ['/predictor/W', '/predictor/b'])
    """

    compute_accuracy = True

    def __init__(self, predictor: Link, lossfun: Callable | None = None, accfun: Callable | None = None,
                 label_key: int | str = -1) -> None:
        from polygrad.functions import accuracy, softmax_cross_entropy

        if not isinstance(label_key, (int, str)) or isinstance(label_key, bool):
            raise TypeError(f"polygrad: Classifier label_key must be an int or a str, got {label_key!r}")
        super().__init__()
        self.lossfun = softmax_cross_entropy if lossfun is None else lossfun
        self.accfun = accuracy if accfun is None else accfun
        self.label_key = label_key
        self.y = None
        self.loss = None
        self.accuracy = None
        with self.init_scope():
            self.predictor = predictor

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The loss of ``predictor(*args, **kwargs)`` (without the labels) against the labels."""
        key = self.label_key
        if isinstance(key, int):
            if not -len(args) <= key < len(args):
                raise ValueError(
                    f"polygrad: Classifier label_key={key} is out of range for {len(args)} positional arguments"
                )
            t = args[key]
            k = key % len(args)
            args = args[:k] + args[k + 1:]
        else:
            if key not in kwargs:
                raise ValueError(f"polygrad: Classifier label_key={key!r} is not among the keyword arguments")
            kwargs = dict(kwargs)
            t = kwargs.pop(key)
        self.y = None
        self.loss = None
        self.accuracy = None
        self.y = self.predictor(*args, **kwargs)
        self.loss = self.lossfun(self.y, t)
        if self.compute_accuracy:
            self.accuracy = self.accfun(self.y, t)
        return self.loss
