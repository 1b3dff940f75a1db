"""Multimode structural analysis: guard normalization, runs (Algorithms 7-13), exploration into
the mode-change automaton (docs/theory.md §5.1, §8.1)."""

from .describe import automaton_to_json, describe_automaton  # noqa: F401
from .explore import Automaton, ModeChange, RestartInstant, analyze_multimode  # noqa: F401
from .normalize import MultimodeSystem, normalize  # noqa: F401
