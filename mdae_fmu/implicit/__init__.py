"""Implicit multimode structural analysis: the modes as propositional formulas over the guards
(binary decision diagrams), analysed once for all modes instead of one by one (issue 17;
docs/theory.md §10.2, IsamDAE's approach, docs/theory.md §1.8)."""
