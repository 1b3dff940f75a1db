"""Multimode structural analysis: guard normalization, runs (Algorithms 7-13), exploration into
the mode-change automaton (theory note 9334-theory-algorithms §1.4-§2.15)."""

from .describe import automaton_to_json, describe_automaton  # noqa: F401
from .explore import Automaton, ModeChange, RestartInstant, analyze_multimode  # noqa: F401
from .normalize import MultimodeSystem, normalize  # noqa: F401
