"""The polygrad conformance suite: what every backend plugin must pass.

Run it against an installed backend::

    polygrad-conformance dask
    pytest --pyargs polygrad_conformance --polygrad-backend dask

It checks discovery (the entry point loads, BackendInfo is valid, a broken
plugin is one clear failure), array creation and ``pg.to_backend`` round
trips, every op of ``polygrad.ops.REGISTRY`` (forward against the backend's
own namespace, gradients checked numerically, second derivatives), broadcasting,
reductions, indexing backward with repeated indices, function hooks,
``no_backprop_mode``, in-place writes, seeded random numbers and, for lazy
backends, that nothing computes before ``pg.compute``. Known failures live in
``conformance-xfails.txt`` beside the plugin; see ``conformance/README.md``.
"""

__version__ = "0.1.0"
