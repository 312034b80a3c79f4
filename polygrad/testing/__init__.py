"""Gradient checking, shipped for users to test their own Functions and ops."""

from polygrad.testing.gradcheck import check_backward, check_double_backward, check_grads, numerical_grad

__all__ = ["check_backward", "check_double_backward", "check_grads", "numerical_grad"]
