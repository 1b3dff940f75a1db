"""Pantelides' index-reduction algorithm, as an independent test oracle for the Σ-method
offsets (docs/theory.md §1.11; RR-9387 §4.2.2, Theorem 21). Not used by the product.

Generalised to higher derivative orders on the leading-derivative pattern (RR-9387 §4.2.2): with
σ'_ij = σ_ij + c_i (c_i = differentiations of equation i so far) and σ_j = max_i σ'_ij, an
equation may be assigned to x_j only through a leading edge σ'_ij = σ_j. Equations are processed
one by one; Pantelides' augmenting-path search from equation i colours the equations and
variables it visits; when it fails, the coloured equations form a structurally singular subset
and are all differentiated (their leading entries move up by one), then the search restarts
from i. The total number of differentiations of each equation is its offset c_i.
"""

from __future__ import annotations


def pantelides_offsets(rows: list[dict[int, int]], n_vars: int, max_rounds: int = 10_000
                       ) -> tuple[list[int], list[int]]:
    n = len(rows)
    c = [0] * n
    assign: dict[int, int] = {}          # variable -> equation

    def leading() -> list[list[int]]:
        top = [-1] * n_vars
        for i, row in enumerate(rows):
            for j, s in row.items():
                top[j] = max(top[j], s + c[i])
        return [[j for j, s in row.items() if s + c[i] == top[j]] for i, row in enumerate(rows)]

    def augment(e: int, lead: list[list[int]], col_e: set[int], col_v: set[int]) -> bool:
        """Pantelides' augmenting-path search from equation e on the leading edges `lead`,
        colouring the equations (col_e) and variables (col_v) it visits."""
        col_e.add(e)
        for j in lead[e]:           # first a free variable
            if j not in assign:
                assign[j] = e
                return True
        for j in lead[e]:
            if j not in col_v:
                col_v.add(j)
                if augment(assign[j], lead, col_e, col_v):
                    assign[j] = e
                    return True
        return False

    rounds = 0
    for i in range(n):
        while True:
            rounds += 1
            if rounds > max_rounds:
                raise RuntimeError("Pantelides did not terminate (structurally singular?)")
            lead = leading()
            for j, k in assign.items():      # assignments stay on leading edges
                assert j in lead[k]
            col_e: set[int] = set()
            col_v: set[int] = set()
            if augment(i, lead, col_e, col_v):
                break
            for e in col_e:
                c[e] += 1
    top = [-1] * n_vars
    for i, row in enumerate(rows):
        for j, s in row.items():
            top[j] = max(top[j], s + c[i])
    return c, top
