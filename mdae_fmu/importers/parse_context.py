"""The state of one parse: names, errors and positions gathered while a file (or, for the XML
importer, the expressions of one file) is read, shared by the parser (`flat_modelica`,
`fast_parser`) and the grammar callbacks of every construct (`*_callbacks`), and the limit on
the tokens one import reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import expr as E
from ..diagnostics import InputError, SourceLoc, file_locations

#: Files larger than this are refused before being read (bytes). The import of typical flat
#: models takes 15 to 25 bytes of memory per byte of text (docs/importers.md, "Limits").
MAX_FILE_BYTES = 128 * 1024 * 1024
#: Most tokens (plus XML elements) one file may have: a 10^6-equation model has about 18.5
#: million. Memory grows with what the tokens declare and build, at most about 250 bytes per
#: token (a file of nothing but short declarations); this bounds the import of any file to
#: about 5 GB (docs/importers.md, "Limits").
MAX_TOKENS = 20_000_000


@dataclass
class ParseContext:
    """Names, errors and positions gathered while parsing one file (or, for the XML importer,
    all the expressions of one file)."""
    filename: str
    text: str = ""
    line0: int = 1          # position of the parsed text in the file (XML attributes)
    col0: int = 1
    note: str = ""          # appended to messages, e.g. "in attribute 'rhs' of <equation>"
    refs: dict = field(default_factory=lambda: {"time": E.TIME})
    consts: dict = field(default_factory=dict)
    # name -> offset of its first use in the text (whole file), or (line, col, note, source)
    first_use: dict = field(default_factory=dict)
    enum_uses: dict = field(default_factory=dict)     # enum literal -> uses
    enum_consumed: dict = field(default_factory=dict)
    der_names: set = field(default_factory=set)
    errors: list = field(default_factory=list)        # (line, col, priority, message, src)
    stmts: dict = field(default_factory=dict)         # id -> pending statement calls
    term_ends: list = field(default_factory=list)     # end offsets of ; then else equation
    words: dict = field(default_factory=dict)  # one copy of each repeated string, names too
    string_params: list = field(default_factory=list)  # (name, value, constant, descr, where)
    folded: dict = field(default_factory=dict)        # id -> (node, value) of constant parts
    tokens_left: int = field(default_factory=lambda: MAX_TOKENS)
    whole_file: bool = True  # `text` is the whole file (False: XML attribute values)
    # the text uses arrays, for-equations, records, enumerations or type aliases: the
    # equations go through `lowering` before the model is built (issue 13)
    extended: bool = False
    inline_types: dict = field(default_factory=dict)  # "enumeration(a,b)" -> EnumDef
    record_names: set = field(default_factory=set)    # records defined so far
    enum_vars: dict = field(default_factory=dict)     # variable -> EnumDef (`lowering`)
    experiment: tuple = ()      # the class annotation's experiment values, where read
    functions: list = field(default_factory=list)     # function definitions (FunctionDef)
    annotations: list = field(default_factory=list)   # offsets of annotations not yet claimed
    calls: list = field(default_factory=list)         # (name, where, nargs) of non-built-ins
    # id -> (node, location) of the String(...) calls not (yet) found in the message of an
    # assert or terminate: any left when the model is built is refused (`string_call`)
    string_calls: dict = field(default_factory=dict)
    # id -> location of the String(x, format = ...) calls among them: supported only where
    # the value is not used (the binding of a String variable, which the model ignores)
    string_formats: dict = field(default_factory=dict)
    string_names: set = field(default_factory=set)    # String variables declared so far
    # (function, array sizes, Integer constants) -> (name, output shapes) of the functions
    # specialized per call sizes so far (`array_functions`): one per key in the whole file,
    # whichever function body or equation calls it
    array_specs: dict = field(default_factory=dict)
    # (offset, its line, the offset where that line starts): positions are counted from the
    # last one requested
    _cursor: tuple = (0, 1, 0)
    # `SourceLoc` of the file's (line, col), made at the first location (`where_loc`)
    _at: Callable[[int, int], SourceLoc] | None = None

    def line_col(self, pos: int) -> tuple[int, int]:
        """Line and column (from 1) of offset ``pos`` of the parsed text. Lines and the start
        of the line are counted from the previous request, so a pass through the text in order
        costs one pass (also along one very long line)."""
        text = self.text
        last, line, start = self._cursor
        if pos >= last:
            newlines = text.count("\n", last, pos)
            if newlines:                    # (the same int object on the same line)
                line += newlines
                start = text.rfind("\n", last, pos) + 1
        elif pos < start:
            line -= text.count("\n", pos, last)
            start = text.rfind("\n", 0, pos) + 1
        self._cursor = (pos, line, start)
        return line, pos - start + 1

    def loc(self, line: int, col: int) -> SourceLoc:
        """File position of (line, col) of the parsed text."""
        if line == 1:
            return SourceLoc(self.filename, self.line0, self.col0 + col - 1)
        return SourceLoc(self.filename, self.line0 + line - 1, col)

    def pos_loc(self, pos: int) -> SourceLoc:
        """File position of offset ``pos`` of the parsed text."""
        line, col = self.line_col(pos)
        if self.line0 == 1 and self.col0 == 1:    # a whole file: no shift (the usual case)
            return SourceLoc(self.filename, line, col)
        return self.loc(line, col)

    def tok_loc(self, tok: tuple) -> SourceLoc:
        """File position of a token ``(type, value, offset)``."""
        return self.pos_loc(tok[2])

    def where_loc(self, where) -> SourceLoc:
        """A location of the intermediate form (a SourceLoc, an offset or a token)."""
        t = type(where)
        if t is int:
            pos = where
        elif t is tuple:
            pos = where[2]
        else:
            return where
        last, line, start = self._cursor        # (`line_col`, inlined for the usual case)
        if pos < start or self.line0 != 1 or self.col0 != 1:
            return self.pos_loc(pos)
        if pos >= last:
            text = self.text
            newlines = text.count("\n", last, pos)
            if newlines:
                line += newlines
                start = text.rfind("\n", last, pos) + 1
        self._cursor = (pos, line, start)
        at = self._at
        if at is None:
            at = self._at = file_locations(self.filename)
        return at(line, pos - start + 1)

    def locator(self) -> Callable[[Any], SourceLoc]:
        """`where_loc` with a cursor of its own, for one pass in text order (a location per
        declaration, per equation): the cursor held in the function's own variables, which
        is cheaper than the context's (it reads no attribute); any other request goes on
        through the context's. A text placed in a file (XML attribute values) gets
        `where_loc` itself."""
        return self.locators()[0]

    def locators(self) -> tuple[Callable[[Any], SourceLoc],
                                Callable[[list], list[SourceLoc]]]:
        """`locator`, and the same for a list of locations at once (the locations of a run
        of equations), both moving the one cursor."""
        if self.line0 != 1 or self.col0 != 1:
            where_loc = self.where_loc
            return where_loc, lambda wheres: [where_loc(w) for w in wheres]
        text = self.text
        count, rfind = text.count, text.rfind
        at = self._at
        if at is None:
            at = self._at = file_locations(self.filename)
        pos_loc = self.pos_loc
        last, line, start = self._cursor

        def loc(where: Any) -> SourceLoc:
            nonlocal last, line, start
            t = type(where)
            if t is int:
                pos = where
            elif t is tuple:
                pos = where[2]
            else:
                return where                # (a SourceLoc already)
            if pos < start:
                return pos_loc(pos)
            if pos >= last:
                newlines = count("\n", last, pos)
                if newlines:
                    line += newlines
                    start = rfind("\n", last, pos) + 1
            last = pos
            return at(line, pos - start + 1)

        def many(wheres: list) -> list[SourceLoc]:
            """`loc` of each of ``wheres``, in one loop (offsets in text order, the usual)."""
            nonlocal last, line, start
            out: list[SourceLoc] = []
            append = out.append
            for pos in wheres:
                if type(pos) is not int or pos < start:
                    append(loc(pos))
                    continue
                if pos >= last:
                    newlines = count("\n", last, pos)
                    if newlines:
                        line += newlines
                        start = rfind("\n", last, pos) + 1
                last = pos
                append(at(line, pos - start + 1))
            return out
        return loc, many

    def error(self, loc, message: str, priority: int = 0) -> tuple:
        """Record an error at ``loc`` (a SourceLoc or an offset); the earliest one in the file
        is raised when parsing ends."""
        loc = self.where_loc(loc)
        src = None if self.whole_file else self.shown_source(loc)
        entry = (loc.line, loc.col, priority, message + self.note, src)
        self.errors.append(entry)
        return entry

    def withdraw(self, entry: tuple):
        """Forget an error recorded by `error` (the construct turned out to be valid)."""
        self.errors.remove(entry)

    def shown_source(self, loc: SourceLoc):
        """The line to show under a message: a line of the file, or the parsed expression text
        (an XML attribute value) placed at its column."""
        if not self.whole_file:
            return " " * (self.col0 - 1) + self.text if "\n" not in self.text else None
        return source_line(self.text, loc.line)

    def raise_first(self):
        if self.errors:
            line, col, _, message, src = min(self.errors, key=lambda e: e[:3])
            if src is None and self.whole_file and self.text:
                src = source_line(self.text, line)
            raise InputError(message, SourceLoc(self.filename, line, col), src)


def source_line(text: str, line: int) -> str | None:
    """Line ``line`` (from 1) of ``text``, without reading more than that line."""
    pos = 0
    for _ in range(line - 1):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return None
    end = text.find("\n", pos)
    return text[pos:] if end < 0 else text[pos:end]


def too_large(loc: SourceLoc) -> InputError:
    """The error of a file with more than `MAX_TOKENS` tokens (and XML elements)."""
    return InputError(f"model too large: more than {MAX_TOKENS:,} tokens (the limit keeps the "
                      "memory of an import under about 5 GB)", loc)


__all__ = ["MAX_FILE_BYTES", "MAX_TOKENS", "ParseContext", "source_line", "too_large"]
