"""Iterators over data sets (Chainer's ``chainer.iterators``): ``SerialIterator``
and the order samplers it shuffles with.

An iterator gives minibatches, lists of examples of a data set (anything with
``len()`` and ``dataset[i]``, such as :class:`polygrad.datasets.TupleDataset`),
and counts epochs; :func:`polygrad.dataset.concat_examples` turns a minibatch
into arrays. The order of the examples is a list of Python ints, so iterating
touches no array library: the examples are read from the data set one by one.
"""

from __future__ import annotations

import random
from typing import Any, Iterator

from polygrad.core.integers import as_int
from polygrad.datasets import _length

__all__ = ["SerialIterator", "OrderSampler", "ShuffleOrderSampler"]


class OrderSampler:
    """Chooses the order of the examples of each epoch (Chainer's ``OrderSampler``):
    ``sampler(current_order, current_position)`` returns the next epoch's order,
    a list of indices of the same length."""

    def __call__(self, current_order: list[int], current_position: int) -> list[int]:
        raise NotImplementedError


class ShuffleOrderSampler(OrderSampler):
    """A new random permutation each epoch (Chainer's ``ShuffleOrderSampler``).

    :param random_state: a ``random.Random``, an integer seed (NumPy's too), or a generator with a
        ``permutation(n)`` method (NumPy's ``RandomState`` or ``Generator``, as
        Chainer code passes); None seeds one from the current backend's random
        generator, so ``pg.seed(n)`` before the sampler is made makes the order
        repeatable.
    """

    def __init__(self, random_state: Any = None) -> None:
        if random_state is None:
            random_state = _seed_from_backend()
        if isinstance(random_state, random.Random) or callable(getattr(random_state, "permutation", None)):
            self._random = random_state
        else:
            self._random = random.Random(_integer(
                random_state, "polygrad.iterators.ShuffleOrderSampler: random_state must be a random.Random, an "
                "integer seed, a generator with a permutation(n) method (numpy.random.RandomState) or None"))

    def __call__(self, current_order: list[int], current_position: int) -> list[int]:
        n = len(current_order)
        if not isinstance(self._random, random.Random):
            return [int(k) for k in self._random.permutation(n)]
        order = list(range(n))
        self._random.shuffle(order)
        return order

    def serialize(self, serializer: Any) -> None:
        """The sampler's state is not saved: a resumed run shuffles anew."""


def _integer(value: Any, rule: str) -> int:
    """``value`` as an int: anything with ``__index__`` (``numpy.int64`` too), but not a boolean;
    else a TypeError of ``rule`` (a float is not truncated)."""
    if (n := as_int(value)) is not None:
        return n
    raise TypeError(f"{rule}, got {type(value).__name__} {value!r}")


def _seed_from_backend() -> int:
    """48 random bits drawn from the current backend's shared generator (which ``pg.seed`` seeds)."""
    from polygrad.backends import compute, get_backend

    b = get_backend()
    info = getattr(b.xp, "__array_namespace_info__", None)
    dtype = info().default_dtypes()["real floating"] if info is not None else b.xp.float32
    (u,) = compute(b.rng().uniform((2,), dtype=dtype))
    return int(float(u[0]) * (1 << 24)) << 24 | int(float(u[1]) * (1 << 24))


def _indices(saved: Any) -> list[int]:
    """The order read from a file (a 1-d integer array) as Python ints: computed once (a lazy
    array), then read element by element from that concrete array."""
    from polygrad.backends import compute, get_array_namespace

    (saved,) = compute(saved)
    xp = get_array_namespace(saved)
    if saved.ndim != 1 or not xp.isdtype(saved.dtype, "integral"):
        raise ValueError(f"polygrad: SerialIterator: the file's order should be a 1-d array of integers, got "
                         f"shape {tuple(saved.shape)} and dtype {saved.dtype}")
    return [int(saved[k]) for k in range(saved.shape[0])]


class SerialIterator:
    """Minibatches of ``batch_size`` examples of ``dataset``, in order or shuffled
    (Chainer's ``SerialIterator``).

    Each ``next(iterator)`` is a list of examples. With ``repeat=True`` it runs
    forever, the last minibatch of an epoch completed from the start of the
    next one (from as many epochs as it takes, where ``batch_size`` exceeds the
    dataset: every minibatch has ``batch_size`` examples); with ``repeat=False``
    it stops after one epoch (the last minibatch may be shorter), and
    ``reset()`` starts it again.

    >>> import polygrad as pg
    >>> it = pg.iterators.SerialIterator(list(range(5)), 2, shuffle=False)
    >>> next(it), next(it), it.epoch, next(it), it.epoch, it.is_new_epoch, it.epoch_detail
    ([0, 1], [2, 3], 0, [4, 0], 1, True, 1.2)

    :param shuffle: shuffle the examples each epoch (None: True unless an
        ``order_sampler`` is given).
    :param order_sampler: an :class:`OrderSampler` choosing each epoch's order
        (default :class:`ShuffleOrderSampler` when shuffling).

    ``epoch`` counts finished epochs, ``is_new_epoch`` says whether the last
    minibatch finished one, ``epoch_detail`` is the epoch as a float
    (``epoch + current_position / len(dataset)``) and
    ``previous_epoch_detail`` its value before the last minibatch (None before
    the first).
    """

    def __init__(self, dataset: Any, batch_size: int, repeat: bool = True, shuffle: bool | None = None,
                 order_sampler: OrderSampler | None = None) -> None:
        rule = "polygrad.iterators.SerialIterator: batch_size must be a positive integer"
        batch_size = _integer(batch_size, rule)
        if batch_size <= 0:
            raise ValueError(f"{rule}, got {batch_size}")
        if shuffle is not None and order_sampler is not None:
            raise ValueError("polygrad.iterators.SerialIterator: give shuffle or order_sampler, not both")
        if shuffle is None:
            shuffle = order_sampler is None
        if shuffle and order_sampler is None:
            order_sampler = ShuffleOrderSampler()
        self.dataset = dataset
        self.batch_size = batch_size
        self._repeat = bool(repeat)
        self._shuffle = bool(shuffle) or order_sampler is not None
        self.order_sampler = order_sampler
        self.reset()

    # -- iteration -------------------------------------------------------------
    def __iter__(self) -> Iterator[list]:
        return self

    def __next__(self) -> list:
        if not self._repeat and self.epoch > 0:
            raise StopIteration
        # In order, a data set that grew (or shrank) is read to its end.
        n = _length(self.dataset) if self._order is None else self._size
        if not n:
            raise ValueError("polygrad.iterators.SerialIterator: the dataset is empty: there is no minibatch to make")
        # The minibatch is made on local copies of the state, assigned once it is complete: a read that
        # fails (a transient I/O error at an epoch's end) leaves the iterator as it was, and the retry
        # gives this minibatch, with the orders already drawn for it (kept, so that it does not shuffle anew).
        epoch, order, i = self.epoch, self._order, self.current_position
        key = (epoch, i, id(order))
        kept = self.__dict__.pop("_drawn", None)
        drawn = list(kept[1]) if kept is not None and kept[0] == key else []
        orders: list = []

        def draw(position: int) -> list[int]:
            orders.append(drawn.pop(0) if drawn else self._next_order(order, position, n))
            return orders[-1]

        try:
            i_end = i + self.batch_size
            batch = self._examples(order, i, min(i_end, n))
            new_epoch = i_end >= n
            position = i_end
            if new_epoch:
                epoch += 1
                position = 0
                if not self._repeat and order is not None:
                    order = draw(i)  # the end of every epoch draws the next order, as Chainer's
                if self._repeat:
                    # Complete the minibatch from the next epochs: several of them when batch_size
                    # exceeds the dataset (every minibatch has batch_size examples).
                    rest = self.batch_size - len(batch)  # (i_end - n, unless the dataset shrank below i)
                    while True:
                        if order is not None:
                            order = draw(i)
                        i = 0
                        if rest < n:
                            break
                        batch.extend(self._examples(order, 0, n))
                        epoch += 1
                        rest -= n
                    batch.extend(self._examples(order, 0, rest))
                    position = rest
        except BaseException:
            if orders:
                self._drawn = (key, orders)
            raise
        self._size = n
        self._previous_epoch_detail = self.epoch_detail
        self.epoch, self._order, self.current_position, self.is_new_epoch = epoch, order, position, new_epoch
        return batch

    next = __next__  # Chainer's spelling

    def _examples(self, order: list[int] | None, start: int, stop: int) -> list:
        dataset = self.dataset
        if order is None:
            return [dataset[k] for k in range(start, stop)]
        return [dataset[k] for k in order[start:stop]]

    def _next_order(self, current: list[int], position: int, n: int) -> list[int]:
        order = [int(k) for k in self.order_sampler(current, position)]
        if len(order) != n:
            raise ValueError(
                f"polygrad.iterators.SerialIterator: the order sampler gave {len(order)} indices for {n} examples"
            )
        return order

    # -- epochs ------------------------------------------------------------------
    @property
    def epoch_detail(self) -> float:
        return self.epoch + self.current_position / self._size if self._size else float(self.epoch)

    @property
    def previous_epoch_detail(self) -> float | None:
        return None if self._previous_epoch_detail < 0 else self._previous_epoch_detail

    @property
    def repeat(self) -> bool:
        return self._repeat

    def reset(self) -> None:
        """Start again from the first epoch (with a new order when shuffling)."""
        self._size = _length(self.dataset)
        self.current_position = 0
        self.epoch = 0
        self.is_new_epoch = False
        self._previous_epoch_detail = -1.0
        self._order = None
        self.__dict__.pop("_drawn", None)
        if self._shuffle:
            self._order = self._next_order(list(range(self._size)), 0, self._size)

    def finalize(self) -> None:
        """Nothing to release (Chainer's iterators have it)."""

    def __enter__(self) -> "SerialIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finalize()

    # -- saving and loading (pg.serializers) -------------------------------------
    def serialize(self, serializer: Any) -> None:
        """Save or load the position, the epoch and the order (Chainer's keys). A file that
        does not fit this iterator is refused before anything changes: a position or an order
        that is not one of this dataset's, a negative epoch, an order saved by a shuffling
        iterator loaded into one that does not shuffle (it was ignored, and the batches were
        not the saved run's)."""
        loading = getattr(serializer, "loading", False)
        stored = getattr(serializer, "stored", None) if loading else None

        def read(key: str, value: Any) -> tuple[Any, Any]:
            """What this pass assigns, and what the file holds: the first pass of a load hands back
            the iterator's own values, so the file's are checked then, before any object of the
            load (the model and optimizer saved with this iterator) has changed."""
            got = serializer(key, value)
            return got, got if stored is None else stored(key, value)

        position, file_position = (int(v) for v in read("current_position", self.current_position))
        epoch, file_epoch = (int(v) for v in read("epoch", self.epoch))
        is_new_epoch = bool(serializer("is_new_epoch", self.is_new_epoch))
        try:
            previous = serializer("previous_epoch_detail", self._previous_epoch_detail)
        except KeyError:  # a file from before Chainer saved it: estimated as Chainer does
            previous = epoch + (position - self.batch_size) / self._size if self._size else -1.0
            previous = max(previous, 0.0) if epoch + position / max(self._size, 1) > 0 else -1.0
        order = file_order = None
        if not loading:
            if self._order is not None:
                from polygrad.backends import get_backend

                serializer("order", get_backend().xp.asarray(self._order))
        else:
            try:  # (None: the file's own array, read into ints at once; a lazy backend computed each one)
                saved, file_saved = read("order", None)
            except KeyError:
                if self._order is not None:
                    raise
                saved = file_saved = None
            if file_saved is not None and self._order is None:
                raise ValueError("polygrad: SerialIterator: the file holds the order of a shuffling iterator, and this "
                                 "one does not shuffle; make it with shuffle=True (or the file's order_sampler)")
            if file_saved is not None:
                file_order = _indices(file_saved)
                order = None if saved is None else file_order if saved is file_saved else _indices(saved)
        if loading:
            n = self._size
            if not 0 <= file_position < max(n, 1) or file_epoch < 0:
                raise ValueError(f"polygrad: SerialIterator: the file's position {file_position} (epoch {file_epoch}) "
                                 f"is not one of this dataset of {n} examples (a file of another dataset?)")
            if file_order is not None and sorted(file_order) != list(range(n)):
                raise ValueError(f"polygrad: SerialIterator: the file's order of {len(file_order)} examples is not an "
                                 f"order of this dataset of {n} (each index once): a file of another dataset?")
        self.current_position, self.epoch, self.is_new_epoch = position, epoch, is_new_epoch
        self._previous_epoch_detail = float(previous)
        if order is not None:
            self._order = order
