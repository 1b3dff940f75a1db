"""Render the C sources of an FMU from the compiled plan (Jinja2 templates in templates/).

Layout of the generated sources (docs/fmi-mapping.md, "Generated code"):

* ``fmi2Functions.c``, ``mdae_runtime.c``, ``mdae_model.h``: hand-written, identical in every
  FMU (the generic wrapper and runtime);
* ``config.h`` (sizes, GUID, tolerances) and ``model.c`` (tables, events, initialization,
  drift control) from ``config.h.j2`` / ``model.c.j2``;
* ``model_schedule_<k>.c``: the blocks of the schedule, one static function each (a loop
  over a slot table for repeated blocks), split into files of about `UNIT_BYTES` characters
  and called from functions of at most `STATEMENTS_PER_FUNCTION` calls, so that gcc stays
  fast (and parallel) on large models;
* ``model_block_labels.c``, ``model_real_names.c``: beyond `TABLE_UNIT_BYTES`, the name
  tables of model.c as units of their own (`table_units`), so that no unit of a huge model
  is compiled alone after the others.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypedDict, TypeVar

import jinja2
import sympy as sp

from .block_code import BlockCode
from .blocks import BlockPlan, emit_block, gauss_newton_work, newton_work
from .cprinter import SlotPrinter, c_comment, c_string
from .events import ASSERT_TOL, BranchPlan, EventPlan
from .functions import function_sources
from .initialization import InitPlan
from .messages import MAX_DIGITS, MAX_MIN_LENGTH, Message, message_format
from .plan import CompiledModel
from .restarts import LeftPrinter, left_printer, print_over_instant
from .runs import MIN_REPEATS, ShapeKey, find_runs, run_code, shape, strides
from .slots import HOMOTOPY, TIME, Slot, c_slot, name_slots, plain_name, slot_identifiers

STATEMENTS_PER_FUNCTION = 200
# a schedule file (a gcc unit) is closed once it holds this many characters: about 0.3 s of
# gcc -O1; the units are compiled in parallel (mdae_fmu.fmu.build)
UNIT_BYTES = 400_000
PROGRESS_BLOCKS = 1000
STATIC_FILES = ("fmi2Functions.c", "fmi2CoSimulation.c", "mdae_runtime.c", "mdae_sparse.c",
                "mdae_wrapper.h", "mdae_model.h", "mdae_info.c")

TOLERANCES = dict(newton_maxit=50, max_event_iterations=100, hysteresis="1e-10",
                  drift_tol="1e-9", drift_tol_max="1e-7", drift_per_tolerance="100.0",
                  init_tol="1e-10", project_tol="1e-12")


T = TypeVar("T")

#: ``progress(done, total)`` while the schedule is printed
Progress = Callable[[int, int], None]


class ModeSizes(Protocol):
    """What `generate_sources` reads of the multimode sources
    (`mdae_fmu.codegen.layout.ModeSources`; layout imports this module): the C files by name,
    the most consistency equations of a mode and the solver scratch sizes."""

    @property
    def files(self) -> dict[str, str]: ...

    @property
    def ncons(self) -> int: ...

    @property
    def work(self) -> int: ...

    @property
    def perm(self) -> int: ...


def template_environment() -> jinja2.Environment:
    """The Jinja2 environment of the C templates (package data ``mdae_fmu.templates``): no
    autoescaping (the output is C; every name from the model reaches it through
    `cprinter.c_string` / `c_comment` or as a slot index), undefined variables are errors."""
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_load_template), autoescape=False,
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _load_template(name: str) -> str:
    return importlib.resources.files("mdae_fmu.templates").joinpath(name).read_text("utf-8")


def static_sources() -> dict[str, str]:
    """The hand-written wrapper and runtime, unchanged."""
    return {name: _load_template(name) for name in STATIC_FILES}


@dataclass
class _Printers:
    main: SlotPrinter
    shifted: SlotPrinter      # time -> (d->time + teps): right limits of time relations
    #                           (and clock state x -> x + c*teps, events.clock_rates)
    schedule: SlotPrinter     # Reals through the local pointer ``r`` (cheaper for gcc)


def make_printers(cm: CompiledModel, ev: EventPlan) -> _Printers:
    """Printers with the slot map, frozen relations and the event operators."""
    relations = {r.relation: f"d->rel[{k}]" for k, r in enumerate(ev.relations)}
    samples = {(s.start, s.interval): k for k, s in enumerate(ev.samples)}

    def pre_of(p: SlotPrinter, arg: sp.Basic) -> str:
        slot = cm.pre_slots.get(arg)
        if slot is None:
            raise ValueError("edge()/change() apply to a declared variable")
        return p.value(slot)

    functions: dict[str, Callable[[SlotPrinter, Sequence[sp.Basic]], str]] = {
        "initial": lambda p, args: "d->initial",
        "terminal": lambda p, args: "0",
        "sample": lambda p, args: f"d->smp[{samples[(args[0], args[1])]}]",
        "edge": lambda p, args: f"({p._print(args[0])} && !{pre_of(p, args[0])})",
        "change": lambda p, args: f"({p._print(args[0])} != {pre_of(p, args[0])})",
    }
    main = SlotPrinter(dict(cm.slots), relations, functions)
    shifted_slots = dict(cm.slots)
    shifted_slots[cm.table.time] = f"({c_slot(TIME)} + teps)"
    for x, c in ev.clock_rates.items():   # clock states: their right limit (events.py)
        slot, rate = main.symbol(x), main.doprint(c)
        shifted_slots[x] = (f"({slot} + ({rate}) * teps + copysign(CLOCK_ROUNDING * "
                            f"fmax(1.0, fabs({slot})), {rate}))")
    shifted = SlotPrinter(shifted_slots, {}, functions)
    schedule = SlotPrinter(dict(cm.slots), relations, functions, local=True)
    return _Printers(main=main, shifted=shifted, schedule=schedule)


def schedule_units(env: jinja2.Environment, blocks: Sequence[BlockPlan],
                   codes: Sequence[BlockCode], first: int, part: int,
                   comment_name: str, unit_bytes: int | None) -> list[str]:
    """The schedule ``blocks`` (their C ``codes``, global indices from ``first``) as the
    texts of ``model_schedule.c.j2`` numbered from ``part``: one static function per block
    (``block<k>``, headed by its equations and unknowns) and one per run of repeated blocks (a
    loop over its slot table, `mdae_fmu.codegen.runs`), called in schedule order by part
    functions of at most `STATEMENTS_PER_FUNCTION` calls, and the helpers they need (module
    docstring; docs/decisions.md §14). The runs are found over the whole schedule, so the C
    grows with the number of distinct block shapes, not of blocks; a new file starts once the
    current one holds ``unit_bytes`` characters (None: one file), so that gcc compiles units
    of bounded size in parallel, and a run whose slot table is not affine in the copy
    (`mdae_fmu.codegen.runs.strides`) is cut into loops of at most `run_copies` copies so that
    no slot table alone exceeds that size."""
    shapes = [shape(c) for c in codes]
    runs = {i: (p, m) for i, p, m in find_runs([s.key for s in shapes])}
    units: list[str] = []
    unit = _Unit(first=first)

    def describe(i: int) -> str:
        # the model's names of the unknowns make the C readable; in a comment, and with
        # every character outside [A-Za-z0-9_.,()[] +-] shown as '?'
        blk = blocks[i]
        solved_for = ", ".join(str(u) for u in blk.unknowns[:4]) + \
            (", ..." if len(blk.unknowns) > 4 else "")
        return (f"{c_comment(blk.label, 60)} -> {plain_name(solved_for, 80)} "
                f"({codes[i].kind})")

    def flush(next_first: int) -> None:
        nonlocal unit
        units.append(unit.render(env, part + len(units), comment_name))
        unit = _Unit(first=next_first)

    i = 0
    while i < len(blocks):
        k = first + i
        if unit_bytes is not None and unit.size >= unit_bytes:
            flush(k)
        local = k - unit.first
        if i in runs:
            p, m = runs[i]
            copies = [shapes[i + q * p:i + (q + 1) * p] for q in range(m)]
            if strides(copies) is None:     # a full slot table: cut to bound the unit
                cut = run_copies(sum(len(sh.slots) for sh in copies[0]), unit_bytes)
                if m - cut >= MIN_REPEATS:      # the rest of the run: the next loop
                    runs[i + p * cut] = (p, m - cut)
                copies, m = copies[:cut], min(m, cut)
            name = f"run{part + len(units)}_{local}"
            body, text = run_code(name, copies, k, unit.templates,
                                  "; ".join(describe(j) for j in range(i, i + p)))
            unit.add([text, _block_function(f"{name}_loop", body)],
                     f"    if ({name}_loop(inst, d, r)) return 1;")
            i += p * m
        else:
            code = codes[i]
            unit.add(([code.helpers] if code.helpers else [])
                     + [f"/* block {k}: {describe(i)} */\n"
                        + _block_function(f"block{k}", code.body)],
                     f"    if (block{k}(inst, d, r)) return 1;")
            i += 1
    units.append(unit.render(env, part + len(units), comment_name))
    return units


def run_copies(row: int, unit_bytes: int | None) -> int:
    """The most copies one loop of a run takes when a row of its slot table holds ``row``
    slots: about ``unit_bytes`` characters of table (8 per slot), at least `MIN_REPEATS`;
    unbounded without a size bound."""
    if unit_bytes is None:
        return 1 << 62
    return max(MIN_REPEATS, unit_bytes // (8 * max(row, 1)))


@dataclass
class _Unit:
    """One schedule file being filled: its first block, helpers, part-function statements,
    the shared callbacks of its runs (`mdae_fmu.codegen.runs.run_code`) and its size."""
    first: int
    helpers: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    stmts: list[str] = field(default_factory=list)
    templates: dict[ShapeKey | str, str | bool] = field(default_factory=dict)
    size: int = 0

    def add(self, helpers: list[str], stmt: str) -> None:
        self.helpers.extend(helpers)
        self.stmts.append(stmt)
        self.size += sum(len(h) for h in helpers) + len(stmt)
        if len(self.stmts) >= STATEMENTS_PER_FUNCTION:
            self.functions.append("\n".join(self.stmts))
            self.stmts = []

    def render(self, env: jinja2.Environment, part: int, comment_name: str) -> str:
        functions = self.functions + (["\n".join(self.stmts)] if self.stmts else [])
        return env.get_template("model_schedule.c.j2").render(
            part=part, comment_name=comment_name, helpers="\n".join(self.helpers),
            functions=functions)


def _block_function(name: str, body: str) -> str:
    """One block (or loop over repeated blocks) of the schedule as a static C function that
    returns 1 when its solver fails (the comment heading ``body`` names the block)."""
    return (f"static int {name}(ModelInstance *inst, ModelData *d, double *r)\n{{\n"
            f"    (void)inst; (void)d; (void)r;\n{body}\n    return 0;\n}}\n")


def _num_list(values: Iterable[T], fmt: Callable[[T], str] = repr) -> str:
    values = list(values)
    if not values:
        return "0"
    return ", ".join(fmt(v) for v in values)


def _float(v: float) -> str:
    x = float(v)
    if x != x or x in (float("inf"), float("-inf")):
        return "0.0"
    return repr(x)


def generate_sources(cm: CompiledModel, ev: EventPlan, init: InitPlan, guid: str,
                     progress: Progress | None = None, modes: ModeSizes | None = None
                     ) -> dict[str, str]:
    """All C sources of the FMU, by file name (module docstring). ``progress(done, total)``
    is called while the schedule is printed. ``modes``: the per-mode sources of a multimode
    model (`mdae_fmu.codegen.layout.ModeSources`); then ``cm.blocks`` only name the blocks
    and model.c leaves compute/drift/projection to ``model_modes.c``.

    Steps, in the order the expressions are printed (printing may make derivative functions,
    so the order is part of the output): the schedule files (`_schedule_files`), the event
    code (`_event_code`), the code run once the parameters are set (`_parameter_code`), the
    discrete equations, the when-clauses (`_when_code`), the assertions, the initialization
    and consistency residuals (`_residual_code`); then the start tables (`_start_tables`),
    the solver scratch sizes (`_work_sizes`) and the templates."""
    env = template_environment()
    pr = make_printers(cm, ev)
    p = pr.main
    files = static_sources()
    parts = _schedule_files(env, cm, pr, cm.blocks if modes is None else (), progress, files)
    tables = _start_tables(cm)
    events = _event_code(cm, ev, pr)
    calc = _parameter_code(cm, ev, p)
    disc = discrete_code(p, cm.discrete_assignments)
    init_assign = discrete_code(p, init.assignments)
    conds, active, assigns, actions = _when_code(cm, ev, p)
    asserts = [_assert_code(p, cond, msg, level) for cond, msg, level in ev.assertions]
    res = _residual_code(cm, init, p)
    m_i, n_i = len(init.rows), len(init.unknown_slots)
    work, perm = _work_sizes(cm, m_i, n_i, len(res["project_unknowns"]), modes)
    # an initial system whose residual runs the schedule: the schedule's solvers take the
    # scratch after the Gauss-Newton's own (model.c.j2, mdae_init_residual)
    init_work = init_iwork = 0
    if init.needs_compute or init.mode_dependent:
        init_work, init_iwork = gauss_newton_work(m_i, n_i), max(m_i, n_i)
        work, perm = work + init_work, perm + init_iwork
    if modes is not None:
        files.update(modes.files)
    # homotopy() in the model's own code; the generic sources name the slot too (the FMU
    # state checks read it), so they do not count
    lam, generic = c_slot(HOMOTOPY), static_sources()
    homotopy = any(lam in text for name, text in files.items() if name not in generic) \
        or any(lam in text for text in [*res["init"], *disc])
    files["config.h"] = env.get_template("config.h.j2").render(
        comment_name=c_comment(cm.name), guid=guid, nr=cm.n_real, ni=cm.n_int, nb=cm.n_bool,
        nx=len(cm.states), nz=events["nz"], nrel=len(ev.relations), nwhen=len(ev.branches),
        nsample=len(ev.samples), nassign=len(ev.assignment_order),
        nwloop=len(ev.when_loop),
        ncons=len(cm.consistency) if modes is None else modes.ncons, nblocks=len(cm.blocks),
        ninit_rows=m_i, ninit_cols=n_i, homotopy=int(homotopy), work=work, iwork_fire=perm,
        assert_initial=int(any("d->initial" in a for a in asserts)),
        iwork=perm + max(len(ev.branches), 1), max_min_length=MAX_MIN_LENGTH,
        max_digits=MAX_DIGITS, **TOLERANCES)
    held = _HeldTables()
    files["model.c"] = env.get_template("model.c.j2").render(
        comment_name=c_comment(cm.name), schedule_parts=parts,
        block_labels=held.lines("labels", [c_string(b.label) for b in cm.blocks]),
        real_names=held.lines("names", [c_string(n) for n in cm.real_names]),
        real_kind=held.text("real_kind", _num_list(tables["real_kind"], str)),
        int_kind=_num_list(tables["int_kind"], str),
        bool_kind=_num_list(tables["bool_kind"], str),
        when_initial=_num_list([1 if b.has_initial else 0 for b in ev.branches], str),
        when_recheck=_num_list([1 if b.recheck else 0 for b in ev.branches], str),
        when_loop=_num_list([_real_index(t) for t in ev.when_loop], str),
        state_slots=held.text("state_slots", _num_list([s.vector_slot for s in cm.states], str)),
        der_slots=held.text("der_slots", _num_list([s.der_slot for s in cm.states], str)),
        nominals=held.text("nominals", _num_list([s.nominal for s in cm.states], _float)),
        init_unknowns=_num_list(init.unknown_slots, str),
        init_blocks=_num_list([x for rows, slots in init.blocks
                               for x in (len(rows), *rows, *slots)] + [0], str),
        r_start=held.text("r_start", _num_list(tables["r_start"], _float)),
        i_start=_num_list(tables["i_start"], str),
        b_start=_num_list(tables["b_start"], str),
        calc_params="\n".join(calc), discrete_assignments="\n".join(disc),
        initial_assignments="\n".join(init_assign),
        indicators="\n".join(events["ind"]), relation_values="\n".join(events["val"]),
        update_samples="\n".join(events["smp"]), when_conditions="\n".join(conds),
        when_active="\n".join(active), when_assignments="\n".join(assigns),
        when_actions="\n".join(actions),
        discrete_real_changed=res["drt"],
        next_time_event="\n".join(events["nte"]), init_needs_compute=init.needs_compute,
        init_mode_dependent=init.mode_dependent, init_work=init_work, init_iwork=init_iwork,
        init_row_names=[c_string(t) for t in init.descriptions],
        init_row_labels=[c_string(t) for t in init.labels],
        init_residual="\n".join(res["init"]), assertions="\n".join(asserts),
        cons_residual="\n".join(res["cons"]), drift="\n".join(res["drift"]),
        ncons=len(cm.consistency), project_unknowns=_num_list(res["project_unknowns"], str),
        n_project=len(res["project_unknowns"]), multimode=modes is not None,
        assert_tol=repr(ASSERT_TOL))
    # last: printing the equations may have made derivative functions
    files["mdae_functions.c"], files["mdae_functions.h"] = function_sources(cm.table.functions)
    identifiers = slot_identifiers(slot_names(cm))
    if not held.inert():        # a table that could hold a named slot: named with the rest
        files["model.c"] = held.put_back(files["model.c"])
    out = {name: text if name in generic or not name.endswith(".c") else
           name_slots(text, identifiers) for name, text in files.items()}
    out["model.c"] = held.put_back(out["model.c"], table_units(cm.name, held, out))
    return out


#: the name tables of model.c (``mdae_block_labels``, ``mdae_real_names``) go to units of
#: their own when together they exceed this many characters (about 200 000 blocks and
#: variables): model.c was then the one large unit, compiled alone after the others (2 s of
#: gcc at 10^5 equations, 28 s at 10^6: docs/performance.md "stop 41"); the reference models
#: and the families of 10^4 equations keep their single model.c
TABLE_UNIT_BYTES = 4_000_000
#: the units of the name tables (`table_units`): they include no header of the FMU, so they
#: compile while the model description is built (`mdae_fmu.fmu.export`)
TABLE_UNITS = {"labels": ("model_block_labels.c", "mdae_block_labels"),
               "names": ("model_real_names.c", "mdae_real_names")}


def table_units(name: str, held: _HeldTables, files: dict[str, str]) -> dict[str, str]:
    """Beyond `TABLE_UNIT_BYTES`, the name tables held for model.c as units of their own
    (`TABLE_UNITS`), added to ``files``: the marker -> what model.c keeps in their place (a
    comment naming the unit; templates/mdae_wrapper.h declares the tables). Each unit defines
    its table exactly as model.c would (a ``const`` array, so no header is needed)."""
    tables = {key: held.held.get(f"    \x01{key}\x01,\n") for key in TABLE_UNITS}
    if sum(len(t) for t in tables.values() if t) <= TABLE_UNIT_BYTES:
        return {}
    moved = {}
    for key, (unit, symbol) in TABLE_UNITS.items():
        text = tables[key]
        if text is None:
            continue
        files[unit] = (f"/* mdae_fmu generated model code: {c_comment(name)} (do not edit).\n"
                       f" * {symbol} of model.c, a unit of its own (codegen/emit.py). */\n\n"
                       f"const char *const {symbol}[] = {{\n{text}    \"\"}};\n")
        marker = f"    \x01{key}\x01,\n"
        del held.held[marker]
        # model.c keeps the declaration only: `const char *const S[] = {MARKER    ""};`
        moved[f"const char *const {symbol}[] = {{\n{marker}    \"\"}};\n"] = \
            f"/* {symbol}: {unit} */\n"
    return moved


class _HeldTables:
    """The large tables of model.c (names, kinds, start values: most of its text at scale),
    rendered into the template as markers and put back after the slots are named
    (`name_slots`, whose pattern scan of the tables found nothing but cost about half a
    second at 10^5 equations): the text is the one the template gives with the tables in
    place. A marker is ``\x01key\x01``, a byte no generated C holds."""

    def __init__(self) -> None:
        self.held: dict[str, str] = {}      # marker as rendered -> the table's text

    def text(self, key: str, text: str) -> str:
        """The marker of a table rendered as ``{{ text }}``."""
        marker = f"\x01{key}\x01"
        self.held[marker] = text
        return marker

    def lines(self, key: str, items: list[str]) -> list[str]:
        """The one item to render in place of ``items`` in a template loop printing
        ``    {{ s }},`` per line."""
        if not items:
            return items
        marker = f"\x01{key}\x01"
        self.held[f"    {marker},\n"] = "".join(f"    {s},\n" for s in items)
        return [marker]

    def inert(self) -> bool:
        """No table holds a comment opener, so none holds a named slot's text
        (`slots.name_slots` rewrites only ``... /* name */``)."""
        return not any("/*" in t for t in self.held.values())

    def put_back(self, text: str, moved: dict[str, str] | None = None) -> str:
        """``text`` with every marker replaced by its table (each is rendered once), and the
        text of each table moved to a unit of its own by what stays (`table_units`)."""
        for old, new in (moved or {}).items():
            if old not in text:
                raise ValueError("model.c: a moved table is not where the template puts it")
            text = text.replace(old, new, 1)
        for marker, table in self.held.items():
            text = text.replace(marker, table, 1)
        self.held = {}
        return text


def slot_names(cm: CompiledModel) -> dict[str, list[str]]:
    """The model's name of every slot of the value arrays ``r``, ``i``, ``b`` (``""``: a
    hidden slot): the FMI variables' names, the derivatives' and the left limits' names of
    the Real layout (`CompiledModel.real_names`)."""
    names: dict[str, list[str]] = {"r": list(cm.real_names), "i": [""] * cm.n_int,
                                   "b": [""] * cm.n_bool}
    for v in cm.variables:
        array = {"Integer": "i", "Boolean": "b"}.get(v.type)
        if array is not None and 0 <= v.vr < len(names[array]):
            names[array][v.vr] = v.name
    return names


def _schedule_files(env: jinja2.Environment, cm: CompiledModel, pr: _Printers,
                    blocks: Sequence[BlockPlan], progress: Progress | None,
                    files: dict[str, str]) -> list[int]:
    """The block schedule (docs/theory.md §11) as files ``model_schedule_<k>.c`` of about
    `UNIT_BYTES` characters (`schedule_units`), added to ``files`` (one, empty, without
    blocks); their numbers. ``progress(done, total)`` every `PROGRESS_BLOCKS` blocks."""
    codes: list[BlockCode] = []
    for k, blk in enumerate(blocks):
        if progress and k % PROGRESS_BLOCKS == 0:
            progress(k, len(blocks))
        codes.append(emit_block(blk, k, pr.schedule))
    units = schedule_units(env, blocks, codes, 0, 0, c_comment(cm.name), UNIT_BYTES)
    for k, text in enumerate(units):
        files[f"model_schedule_{k}.c"] = text
    return list(range(len(units)))


def _start_tables(cm: CompiledModel) -> dict[str, list[float] | list[int]]:
    """Per value array (Real, Integer, Boolean) the start value and the variable kind of every
    slot (docs/fmi-mapping.md); a computed Real starts at its Newton guess."""
    r_start = [0.0] * max(cm.n_real, 1)
    i_start = [0] * max(cm.n_int, 1)
    b_start = [0] * max(cm.n_bool, 1)
    real_kind = [5] * max(cm.n_real, 1)
    int_kind = [5] * max(cm.n_int, 1)
    bool_kind = [5] * max(cm.n_bool, 1)
    for v in cm.variables:
        start = v.start
        if v.type == "Real":
            real_kind[v.vr] = v.kind
            if start is not None:
                r_start[v.vr] = float(start)
        elif v.type == "Integer":
            int_kind[v.vr] = v.kind
            if start is not None:
                i_start[v.vr] = int(start)
        else:
            bool_kind[v.vr] = v.kind
            if start is not None:
                b_start[v.vr] = 1 if start else 0
    for slot, val in cm.guesses.items():
        r_start[slot] = val
    return dict(r_start=r_start, i_start=i_start, b_start=b_start, real_kind=real_kind,
                int_kind=int_kind, bool_kind=bool_kind)


class EventCode(TypedDict):
    """The C of the event plan (`_event_code`)."""
    ind: list[str]
    val: list[str]
    nte: list[str]
    nz: int
    smp: list[str]


def _event_code(cm: CompiledModel, ev: EventPlan, pr: _Printers) -> EventCode:
    """The C of the event plan (docs/fmi-mapping.md, "Events"): the event indicators of the
    state relations with hysteresis (``ind``, ``nz`` of them), the value of every relation
    at the current values (``val``, `relation_values`), the time events of time relations
    and samples (``nte``) and the sample updates (``smp``)."""
    p = pr.main
    ind: list[str] = []
    nte: list[str] = []
    z = 0
    for k, r in enumerate(ev.relations):
        if r.kind == "state":
            s = p.doprint(r.s)
            if r.rate is not None:
                ind.append(f"    s = {s};\n    ds = {p.doprint(r.rate)};\n"
                           f"    z[{z}] = directed_indicator(d->rel[{k}], s, ds);")
            else:
                ind.append(f"    s = {s};\n    z[{z}] = d->rel[{k}] ? s + MDAE_HYSTERESIS : "
                           f"s - MDAE_HYSTERESIS;")
            z += 1
        else:
            nte.append(f"    c = {p.doprint(r.threshold)};\n"
                       f"    if (c > d->time + teps) t = fmin(t, c);")
    smp: list[str] = []
    for k, sample in enumerate(ev.samples):
        start, h = p.doprint(sample.start), p.doprint(sample.interval)
        # sample() is true in the first instant of the event iteration at a sample time
        # only: in the next instant it is false again, so a Boolean y = sample(...) falls
        # and a when-clause on `not y` fires at the same time (docs/fmi-mapping.md, "Events")
        smp.append(f"    s0 = {start};\n    h = {h};\n    v = 0;\n"
                   f"    if (d->time >= d->smp_next[{k}] - teps) {{\n"
                   f"        m = floor((d->time - s0) / h + 0.5);\n"
                   f"        d->smp_last[{k}] = s0 + m * h;\n"
                   f"        d->smp_next[{k}] = s0 + (m + 1.0) * h;\n"
                   f"        v = fabs(d->time - d->smp_last[{k}]) <= teps;\n    }}\n"
                   f"    n += v != d->smp[{k}];\n    d->smp[{k}] = v;")
        nte.append(f"    t = fmin(t, d->smp_next[{k}]);")
    return EventCode(ind=ind, val=relation_values(cm, ev, pr), nte=nte, nz=z, smp=smp)


def _parameter_code(cm: CompiledModel, ev: EventPlan, p: SlotPrinter) -> list[str]:
    """The C run once the parameters are set: the calculated parameters, the start values
    bound to expressions (after the parameters they read), the sample clocks' first ticks.
    `ValueError` for a sample interval that is not positive."""
    calc = []
    for target, e in cm.calculated_parameters:
        calc.append(f"    {p.value(target)} = {p.doprint(e)};")
    for slot, e in cm.start_bindings:     # after the parameters they read
        calc.append(f"    if (!d->rset[{slot}]) {p.value(cm.slot('r', slot))} = "
                    f"{p.doprint(e)};")
    for k, s in enumerate(ev.samples):
        calc.append(f"    d->smp_next[{k}] = {p.doprint(s.start)};\n"
                    f"    d->smp_last[{k}] = -INFINITY;\n    d->smp[{k}] = 0;")
        if s.interval.is_number and not float(s.interval) > 0:
            raise ValueError("sample interval must be positive")
    return calc


def _when_code(cm: CompiledModel, ev: EventPlan, p: SlotPrinter
               ) -> tuple[list[str], list[str], list[str], list[str]]:
    """The C of the when-clauses (docs/fmi-mapping.md, "Events"): their conditions, which
    branches are active, their assignments, then their actions: a conflict between two
    active branches is an error, each branch's reinits, and each standardized restart of a
    transient mode once however many branches enter it (docs/theory.md §11)."""
    conds = [f"    d->cond[{k}] = ({p.doprint(b.condition)}) ? 1 : 0;"
             for k, b in enumerate(ev.branches)]
    lp = left_printer(cm) if any(b.restart for b in ev.branches) else None
    active = _active_branches(ev)
    assigns = _when_assignments(p, ev)
    actions = [f"    if (act[{k1}] && act[{k2}]) {{\n        mdae_log(inst, LOG_ERROR, fmi2Error, "
               f"\"t = %.17g: %s\", d->time, {c_string(text)});\n        return 1;\n    }}"
               for k1, k2, text in ev.conflicts]
    for k, b in enumerate(ev.branches):
        code = _actions_code(p, b, lp)
        if code:
            actions.append(f"    if (act[{k}]) {{\n{code}\n    }}")
    # a standardized restart is the restart of a transient mode; branches of several clauses
    # that enter the same one (`when c then reinit(x, ...)` and `when c then reinit(z, ...)`)
    # share it, and it is applied once
    restarts: dict[str, tuple[BranchPlan, list[int]]] = {}
    for k, b in enumerate(ev.branches):
        if b.restart:
            restarts.setdefault(b.restart_label, (b, []))[1].append(k)
    for b, ks in restarts.values():
        cond = " || ".join(f"act[{k}]" for k in ks)
        actions.append(f"    if ({cond}) {{\n{_restart_code(b, lp)}\n    }}")
    return conds, active, assigns, actions


class ResidualCode(TypedDict):
    """The C of the residuals and the drift control (`_residual_code`)."""
    init: list[str]
    cons: list[str]
    drift: list[str]
    project_unknowns: list[int]
    drt: str


def _residual_code(cm: CompiledModel, init: InitPlan, p: SlotPrinter) -> ResidualCode:
    """The residuals of the initialization system (``init``) and of the consistency equations
    F^{<c} (``cons``; docs/theory.md §11), the drift measure on them (``drift``), the
    state slots the projection moves (``project_unknowns``) and the check that a discrete Real
    changed (``drt``)."""
    init_res = [f"    F[{k}] = {p.doprint(e)};" for k, (_, e) in enumerate(init.rows)]
    cons_res = [f"    F[{k}] = {p.doprint(e)};" for k, (_, e) in enumerate(cm.consistency)]
    drift = [f"    m = fmax(m, fabs({p.doprint(e)}));" for _, e in cm.consistency]
    state_slot = {s.symbol: s.slot for s in cm.states}
    proj_unknowns = sorted({state_slot[sym] for _, e in cm.consistency
                            for sym in e.free_symbols if sym in state_slot})
    drt = "\n".join(f"    if ({p.value(s)} != {p.value(s.left())}) return 1;"
                    for s in (cm.slot('r', k) for k in cm.discrete_real_slots))
    return ResidualCode(init=init_res, cons=cons_res, drift=drift,
                        project_unknowns=proj_unknowns, drt=drt)


def _work_sizes(cm: CompiledModel, m_i: int, n_i: int, n_p: int, modes: ModeSizes | None
                ) -> tuple[int, int]:
    """The solver scratch sizes (doubles, ints) of the largest Newton block, the initialization
    (``m_i`` x ``n_i``) and the projection (``len(cm.consistency)`` x ``n_p``) least-squares
    problems, and of the multimode sources."""
    block_sizes = [len(b.unknowns) for b in cm.blocks] or [0]
    m_p = len(cm.consistency)
    work = max([newton_work(nb) for nb in block_sizes]
               + [gauss_newton_work(m_i, n_i), gauss_newton_work(m_p, n_p), 1])
    perm = max(block_sizes + [m_i, n_i, m_p, n_p, 1])
    if modes is not None:
        work, perm = max(work, modes.work), max(perm, modes.perm)
    return work, perm


def relation_values(cm: CompiledModel, ev: EventPlan, pr: _Printers) -> list[str]:
    """C lines of ``relations(d, commit)``: each relation's value ``v`` at the current values,
    counted in ``n`` when it differs from the frozen ``d->rel[k]``, stored there when
    ``commit`` (``mdae_update_relations``) and only compared otherwise
    (``mdae_relations_pending``: the event iteration goes on while an instant's solution
    changes a relation, Modelica 3.6 §8.6; docs/fmi-mapping.md, "Events").

    * a time relation: its right limit, the signed distance at ``time + teps``;
    * a state relation of when-conditions only with a rate (`events.relation_rate`): its
      right limit (``right_limit``: on its surface, the side the solution goes to);
    * any other state relation: its exact value, except in the comparison, where the
      instant's solution changes it only beyond half the hysteresis: rounding at a located
      crossing, or a signed distance that the new mode computes as another quantity equal to
      0 on the surface (an ideal diode's ``s = if g then i else -u``), must not start another
      instant (and the mode change it would bring)."""
    p = pr.main
    out = []
    for k, r in enumerate(ev.relations):
        exact = "s > 0.0" if r.strict else "s >= 0.0"
        if r.kind != "state":
            value = f"    s = {pr.shifted.doprint(r.s)};\n    v = s > 0.0;"
        elif r.rate is not None:
            value = (f"    s = {p.doprint(r.s)};\n    ds = {p.doprint(r.rate)};\n"
                     f"    v = right_limit(d, s, ds, {exact});")
        else:
            value = (f"    s = {p.doprint(r.s)};\n"
                     f"    v = commit || fabs(s) > 0.5 * MDAE_HYSTERESIS ? {exact} "
                     f": d->rel[{k}];")
        out.append(f"{value}\n    n += v != d->rel[{k}];\n    if (commit) d->rel[{k}] = v;")
    return out


def assign_cast(target: Slot, value: str) -> str:
    """``value`` converted for its target slot: rounded for an Integer, tested against 0 for
    a Boolean, unchanged for a Real."""
    if target.type == "Integer":
        return f"(int)floor(({value}) + 0.5)"
    if target.type == "Boolean":
        return f"(({value}) != 0)"
    return value


def discrete_code(p: SlotPrinter, assignments: Iterable[tuple[Slot, sp.Basic]]) -> list[str]:
    """C lines of the discrete equations ``(target slot, value)`` (evaluation order)."""
    return [f"    {p.value(t)} = {assign_cast(t, p.doprint(e))};" for t, e in assignments]


def _active_branches(ev: EventPlan) -> list[str]:
    """C lines setting ``act[k]``: branch k fires and no earlier branch of its when-clause
    does (``elsewhen`` priority, Modelica 3.6 §8.3.5)."""
    out = []
    for branch_ids in ev.clauses:
        for j, k in enumerate(branch_ids):
            earlier = "".join(f" && !fire[{e}]" for e in branch_ids[:j])
            out.append(f"    act[{k}] = fire[{k}]{earlier};")
    return out


def _real_index(target: Slot) -> int:
    """``k`` of a Real slot ``d->r[k]``."""
    if not target.real:
        raise ValueError(f"not a Real slot: {target}")
    return target.index


def _when_assignments(p: SlotPrinter, ev: EventPlan) -> list[str]:
    """C of the equations of the when-branches, in the topological order of their
    dependencies (`mdae_fmu.structure.when_clauses.when_assignment_order`): each reads the
    values the equations before it assigned at this instant. A variable takes the value of the
    active branch that assigns it, else its left limit ``pre(v)`` (Modelica 3.6 §8.3.5: a
    when-equation that is not active keeps the previous value), so a branch that the event
    iteration of the instant deactivates (its condition re-evaluated on the new values, module
    `events` docstring) leaves no value behind. Counts in ``n`` the values that change, for the
    event iteration of the runtime (``mdae_when_equations``)."""
    out = []
    groups: list[tuple[Slot, list[tuple[int, sp.Basic]]]] = []
    for k, a in ev.assignment_order:
        kind, target, value, _ = ev.branches[k].actions[a]
        assert isinstance(target, Slot)     # an "assign" action (`when_assignment_order`)
        if groups and groups[-1][0] == target:
            groups[-1][1].append((k, value))
        else:
            groups.append((target, [(k, value)]))
    for slot, cases in groups:
        target = p.value(slot)
        new = assign_cast(slot, "v")
        if slot.real:
            # a Real counts as changed beyond rounding (a block re-solved from its solution
            # may move the last bits); NaN always counts, so it ends in the error of the
            # runtime's bound
            update = (f"if ({target} != v) {{\n        n += !(fabs(v - {target}) <= "
                      f"1e-13 * fmax(1.0, fabs(v)));\n        {target} = v;\n    }}")
        else:
            update = f"if ({target} != {new}) {{ {target} = {new}; n++; }}"
        chain = "    " + " else ".join(f"if (act[{k}]) v = {p.doprint(value)};"
                                      for k, value in cases)
        out.append(f"{chain}\n    else v = {p.value(slot.left())};\n    {update}")
    return out


def _actions_code(p: SlotPrinter, b: BranchPlan, lp: LeftPrinter | None = None) -> str:
    """Actions of one when-branch other than its equations (`_when_assignments`), once the
    equations of the instant are solved: assertions and terminate, then the reinits, whose
    values are all computed before any is applied (they read the states before the event and
    the discrete values of the instant; module `events` docstring). A branch with an analysed
    restart (``b.restart``) skips its reinit statements: the standardized restart of its
    transient mode replaces them (`_restart_code`, applied once for all the branches that
    enter that mode; docs/multimode-fmu.md, "When-clauses")."""
    checks, pre, post = [], [], []
    for k, (kind, target, value, typ) in enumerate(b.actions):
        if kind == "reinit" and b.restart:
            continue
        if kind == "assign":
            continue
        if kind == "reinit":
            assert isinstance(target, Slot)     # ("reinit", state slot, value, "Real")
            pre.append(f"        const double v{k} = {p.doprint(value)};")
            post.append(f"        {p.value(target)} = {assign_cast(target, f'v{k}')};")
        elif kind == "terminate":
            checks.append(f"        d->terminate = 1;\n        mdae_log(inst, LOG_EVENTS, "
                          f"fmi2OK, \"terminate: %s\", {c_string(value)});")
        elif kind == "assert":
            # ("assert", level, condition, message)
            assert isinstance(target, str) and isinstance(typ, tuple)
            checks.append(_assert_code(p, value, typ, target, indent="        "))
    return "\n".join(checks + pre + post)


def _restart_code(b: BranchPlan, lp: LeftPrinter | None) -> str:
    """The standardized restart of the transient mode ``b`` enters, every right-hand side
    evaluated from the left limits before any assignment, and its impulse outputs."""
    pre, post = [f"        /* standardized restart {c_comment(b.restart_label, 60)} */"], []
    assert lp is not None       # made when a branch has a restart (`_when_code`)
    right: dict[int, str] = {}
    for k, (slot, value) in enumerate(b.restart):
        pre.append(f"        const double x{k} = {lp(value)};")
        post.append(f"        {c_slot(lp.real(slot))} = x{k};")
        right[slot] = f"x{k}"
    for k, (slot, num, den) in enumerate(b.impulses):
        n, q = print_over_instant(lp, num, right), print_over_instant(lp, den, right)
        pre.append(f"        const double q{k} = {q};")
        pre.append(f"        const double i{k} = q{k} != 0.0 ? ({n}) / q{k} : 0.0;")
        post.append(f"        {c_slot(lp.real(slot))} = i{k};   /* impulse over the instant */")
    return "\n".join(pre + post)


def assertion_condition(p: SlotPrinter, cond: sp.Basic) -> str:
    """C text of an assertion condition whose order relations hold up to the assertion
    tolerance: ``a >= b`` is accepted when ``a - b >= -MDAE_ASSERT_TOL * max(1, |a|, |b|)``
    (``<=``, ``<``, ``>`` alike). Numerical noise at the scale of event location, restarts and
    drift control does not fire an assertion (docs/multimode-fmu.md, "Assertions")."""
    if isinstance(cond, sp.And):
        return "(" + " && ".join(assertion_condition(p, a) for a in cond.args) + ")"
    if isinstance(cond, sp.Or):
        return "(" + " || ".join(assertion_condition(p, a) for a in cond.args) + ")"
    if isinstance(cond, sp.Not):
        return f"(!{assertion_condition(p, cond.args[0])})"
    if isinstance(cond, sp.core.relational.Relational) and cond.rel_op in ("<", "<=", ">", ">="):
        a, b = (cond.lhs, cond.rhs) if cond.rel_op in (">", ">=") else (cond.rhs, cond.lhs)
        ta, tb = p.doprint(a), p.doprint(b)
        return (f"mdae_assert_ge({ta}, {tb})")
    return p.doprint(cond)


def _assert_code(p: SlotPrinter, cond: sp.Basic, msg: Message, level: str,
                 indent: str = "    ") -> str:
    """The check of one assertion; its message is built when it fails (`message_format`)."""
    test = assertion_condition(p, cond)
    fmt, args, bufs = message_format(p, msg)
    decl = f"{indent}    char {', '.join(bufs)};\n" if bufs else ""
    if level == "warning":
        return (f"{indent}if (!{test}) {{\n{decl}{indent}    mdae_log(inst, LOG_WARNING, "
                f"fmi2Warning, \"t = %.17g: assertion: \"{fmt}, d->time{args});\n{indent}}}")
    return (f"{indent}if (!{test}) {{\n{decl}{indent}    mdae_log(inst, LOG_ERROR, "
            f"fmi2Error, \"t = %.17g: assertion failed: \"{fmt}, d->time{args});\n"
            f"{indent}    return 1;\n{indent}}}")
