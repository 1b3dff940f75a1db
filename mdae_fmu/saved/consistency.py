"""Checks of a saved analysis once read: its objects hold together (docs/decisions.md §11)."""

from __future__ import annotations


def check(model, analysis) -> None:
    """`FormatError` at the first reference that does not hold."""
