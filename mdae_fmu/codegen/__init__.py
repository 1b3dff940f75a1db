"""Code generation: compiled plan -> C (docs/fmi-mapping.md).

* `plan.compile_model(model, report) -> CompiledModel`: slots, FMI variables, schedule;
* `events.plan_events(model, cm) -> EventPlan`: relations, samples, when-branches;
* `initialization.plan_initialization(model, cm) -> InitPlan`;
* `emit.generate_sources(cm, ev, init, guid) -> {file name: C text}`;
* `blocks` (explicit / linear / Newton block solvers), `cprinter` (sympy -> C by slot).
"""
