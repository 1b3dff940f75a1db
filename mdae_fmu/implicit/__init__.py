"""Implicit multimode structural analysis: the modes as propositional formulas over the guards
(binary decision diagrams), analysed once for all modes instead of one by one (issue 17; theory
003 §5.3.3, IsamDAE's approach in ecosystem/compilers-multimode-formats.md §1)."""
