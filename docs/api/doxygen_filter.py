"""Doxygen's INPUT_FILTER (docs/api/Doxyfile): the headers' plain comments
(Google style, ``//``) read as Doxygen comments, so the C++ reference shows
them without changing the headers (docs/api.md). Lines are never added or
removed, so Doxygen's line numbers stay the header's.

- ``// File: x.h`` opens the file's documentation (``/// @file x.h``);
- a comment on its own line documents what follows it (``///``);
- a comment after a member or enumerator documents that member (``///<``);
- indented comment lines after an empty one or one ending in a colon
  (examples, tables laid out with spaces) are kept as they are laid out
  (``@code ... @endcode``); other indented lines continue a list item;
- placeholders such as ``<root>/<path>`` are text, not HTML tags.

Usage: python3 docs/api/doxygen_filter.py HEADER  (writes to stdout)
"""

import re
import sys

COMMENT = re.compile(r"^(\s*)//(?!/)( ?)(.*)$")
TRAILING = re.compile(r"([;,])(\s*)// (.*)$")
PLACEHOLDER = re.compile(r"<([a-z][a-z_]*)>")


def doxygen_lines(lines):
    out = []
    in_code = False
    opens_block = False  # the previous comment line was empty or ended in a colon
    for line in lines:
        line = line.rstrip("\n")
        match = COMMENT.match(line)
        if match:
            indent, _, text = match.groups()
            if text.startswith("File: ") and not indent:
                out.append(f"/// @file {text[len('File: '):]}")
                continue
            laid_out = text.startswith(" ") and text.strip()
            if laid_out and not in_code and opens_block:
                text = "@code " + text
                in_code = True
            elif not laid_out and in_code:
                out[-1] += " @endcode"
                in_code = False
            if not in_code:
                text = PLACEHOLDER.sub(r"\\<\1\\>", text)
            opens_block = not text.strip() or text.rstrip().endswith(":")
            out.append(f"{indent}/// {text}".rstrip())
            continue
        if in_code:
            out[-1] += " @endcode"
            in_code = False
        opens_block = False
        out.append(TRAILING.sub(r"\1\2///< \3", line))
    if in_code:
        out[-1] += " @endcode"
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as header:
        sys.stdout.write("\n".join(doxygen_lines(header)) + "\n")
