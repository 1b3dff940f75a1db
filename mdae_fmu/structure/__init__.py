"""Structural analysis: the weighted bipartite graph, matching, Dulmage–Mendelsohn and BTF
(`graph`), Pryce's Σ-method (`sigma`), latent equations (`latent`), and the per-mode analysis
of a multimode model (`per_mode`, the data contract of this stage)."""
