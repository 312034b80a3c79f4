"""Theano-style compiled functions: symbolic variables, ``function``, ``In``,
``Out``, shared state and updates."""

from polygrad.compile.program import MissingInputError, Program
from polygrad.compile.compiled import CompiledFunction, function
from polygrad.compile.io import Container, In, Out, SharedVariable, shared

__all__ = ["function", "CompiledFunction", "In", "Out", "Container", "SharedVariable", "shared", "MissingInputError", "Program"]
