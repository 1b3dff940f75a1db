"""String parameters and constants as FMI 2.0 String variables (issue 13; docs/fmi-mapping.md,
"String parameters").

Value references 0, 1, ... in declaration order (the String value references are their own
space, FMI 2.0 §2.2.7). A parameter is ``causality="parameter" variability="fixed"
initial="exact"``: the host may set it with fmi2SetString in Instantiated and Initialization
Mode only (FMI 2.0 §3.2.3 table, fixed parameters); a constant is ``causality="local"
variability="constant"`` and cannot be set. The runtime (templates/fmi2Functions.c) keeps a
copy of every value set and returns the start value otherwise. No equation reads the Strings
(assert messages were folded at import), so the values are exported for the host to read.

The start values reach the model description escaped as lxml writes attributes (``& < > "``
as entities, tab and line breaks as character references; `mdae_fmu.fmu.model_description`
writes the String variables after the others), and the C source as `c_string` literals
(every byte outside printable ASCII, quotes, backslashes and ``?`` as octal escapes). A
value with a character XML 1.0 cannot hold (a control character other than tab, newline,
carriage return) is refused at export.
"""

from __future__ import annotations

import re

from ..codegen.cprinter import c_comment, c_string
from ..diagnostics import InputError, SourceLoc

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def check_strings(strings) -> None:
    """Refuse a String value that XML 1.0 cannot hold (module docstring)."""
    for p in strings:
        m = _XML_INVALID.search(p.value)
        if m:
            raise InputError(f"String parameter '{p.name}': its value holds the control "
                             f"character {m.group(0)!r}, which modelDescription.xml (XML 1.0) "
                             "cannot hold", p.loc or SourceLoc("<model>", 1, 1))


def strings_source(strings) -> str:
    """``model_strings.c``: the number, start values and settable flags of the Strings."""
    n = len(strings)
    starts = ",\n".join(f"    {c_string(p.value)}  /* {c_comment(p.name, 60)} */"
                        for p in strings) or "    \"\""
    settable = ", ".join("0" if p.constant else "1" for p in strings) or "0"
    return (
        "/* String parameters and constants (mdae_fmu/fmu/strings.py) */\n"
        "#include \"mdae_model.h\"\n\n"
        f"const unsigned int mdae_nstrings = {n};\n"
        f"const char *const mdae_string_start[] = {{\n{starts}\n}};\n"
        f"const unsigned char mdae_string_settable[] = {{{settable}}};\n")
