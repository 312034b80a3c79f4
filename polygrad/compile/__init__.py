"""Theano-style compiled functions: symbolic variables, ``function``, ``In``,
``Out``, shared state and updates."""

from polygrad.compile.program import MissingInputError, Program
from polygrad.compile.compiled import CompiledFunction, ProfileStats, UnusedInputError, function
from polygrad.compile.io import Container, In, Out, SharedVariable, shared
from polygrad.compile.symbolic import DisconnectedInputError

__all__ = ["function", "CompiledFunction", "In", "Out", "Container", "SharedVariable", "shared", "MissingInputError",
           "UnusedInputError", "DisconnectedInputError", "ProfileStats", "Program"]
