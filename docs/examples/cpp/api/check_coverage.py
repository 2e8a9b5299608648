"""Every public C++ name has a runnable example (issue 28, item 5).

Lists the functions (free functions and public member functions), classes,
structs, enums, type aliases and public GPUCOST_ macros declared in
include/gpucost/**/*.h (detail/ excluded) and fails, naming each one, when
one is used in no C++ file under docs/examples/cpp/ (comments do not count:
a function must be called, ``Name(``, a type named, ``Name``). ctest runs it
as ``cpp_api_examples_cover_headers``.

Usage: python3 docs/examples/cpp/api/check_coverage.py [REPO_ROOT]
"""

import pathlib
import re
import sys

# Headers whose examples are still to be written, with why: printed on every
# run so they are not forgotten. Keep this empty.
PENDING = {}

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype",
            "static_cast", "const_cast", "reinterpret_cast", "dynamic_cast", "noexcept",
            "static_assert", "defined", "operator"}


def strip_comments_and_strings(text):
    """The C++ text with comments, string and char literals blanked."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)

    def blank(match):
        s = match.group(0)
        if s.startswith("//") or s.startswith("/*"):
            return re.sub(r"[^\n]", " ", s)
        return s[0] + " " * (len(s) - 2) + s[-1]

    return pattern.sub(blank, text)


def public_names(header_text):
    """(kind, name) pairs declared publicly in one header."""
    names = set()
    text = strip_comments_and_strings(header_text)
    # Macros: public ones are GPUCOST_* not ending in '_' (header guards and
    # internal helpers do).
    for m in re.finditer(r"^\s*#\s*define\s+(GPUCOST_\w+)", text, re.M):
        if not m.group(1).endswith("_"):
            names.add(("macro", m.group(1)))
    # Drop preprocessor lines (with continuations).
    text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M)

    # Walk statements, tracking scopes: ("ns"|"type"|"enum"|"body"|"init", public?).
    stack = [("ns", True)]
    statement = []
    i = 0
    while i < len(text):
        c = text[i]
        kind, public = stack[-1]
        if kind in ("body", "init", "enum"):
            if c == "{":
                stack.append((kind, False))
            elif c == "}":
                stack.pop()
                if not stack or stack[-1][0] not in ("body", "init", "enum"):
                    statement = [] if kind != "init" else statement
            i += 1
            continue
        if c == ":" and kind == "type":
            label = "".join(statement).strip()
            if label in ("public", "private", "protected") and text[i + 1] != ":":
                stack[-1] = ("type", label == "public")
                statement = []
                i += 1
                continue
        if c in ";{}":
            stmt = " ".join("".join(statement).split())
            statement = []
            if c == "}":
                stack.pop()
                i += 1
                continue
            declare(stmt, public, names)
            if c == "{":
                head = re.sub(r"^template\s*<.*?>\s*", "", stmt)
                if re.match(r"(struct|class|union)\b", head):
                    stack.append(("type", head.startswith("struct") or head.startswith("union")))
                elif re.match(r"enum\b", head):
                    stack.append(("enum", False))
                elif re.match(r"(namespace|extern)\b", head):
                    stack.append(("ns", True))
                elif "(" in stmt and "=" not in stmt.split("(")[0]:
                    stack.append(("body", False))
                else:
                    stack.append(("init", False))
                    statement = list(stmt + " ")
            i += 1
            continue
        statement.append(c)
        i += 1
    return names


def declare(stmt, public, names):
    if not public or not stmt:
        return
    head = re.sub(r"^template\s*<.*?>\s*", "", stmt)
    m = re.match(r"(?:struct|class|union)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)", head)
    if m:
        names.add(("type", m.group(1)))
        return
    m = re.match(r"enum(?:\s+class)?\s+(\w+)", head)
    if m:
        names.add(("type", m.group(1)))
        return
    m = re.match(r"using\s+(\w+)\s*=", head)
    if m:
        names.add(("type", m.group(1)))
        return
    if head.startswith(("namespace", "using", "friend", "return", "static_assert")):
        return
    # A function: the first '(' outside <...> and after no '=' is preceded by its name.
    depth = 0
    for j, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "=" and depth == 0:
            return
        elif ch == "(" and depth == 0:
            m = re.search(r"(~?)\b(\w+)\s*$", head[:j])
            if m and not m.group(1) and m.group(2) not in KEYWORDS and not head[:j].rstrip().endswith(">"):
                if not re.search(r"\boperator\s*\S*\s*$", head[:j]):
                    names.add(("function", m.group(2)))
            return


def example_text(root):
    text = []
    for path in sorted((root / "docs" / "examples" / "cpp").rglob("*")):
        if path.suffix in (".cc", ".cpp", ".h") and path.is_file():
            text.append(strip_comments_and_strings(path.read_text(encoding="utf-8")))
    return "\n".join(text)


def main(argv):
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[4]
    include = root / "include" / "gpucost"
    examples = example_text(root)
    missing = []
    total = 0
    for header in sorted(include.rglob("*.h")):
        rel = header.relative_to(include).as_posix()
        if rel.startswith("detail/"):
            continue
        names = public_names(header.read_text(encoding="utf-8"))
        # A constructor is its class: naming the class is its example.
        types = {name for kind, name in names if kind == "type"}
        names = {(kind, name) for kind, name in names if not (kind == "function" and name in types)}
        if rel in PENDING:
            print(f"not checked: {rel} ({len(names)} names): {PENDING[rel]}")
            continue
        for kind, name in sorted(names, key=lambda kn: kn[1]):
            total += 1
            used = (rf"\b{name}\s*\(" if kind == "function" else rf"\b{name}\b")
            if not re.search(used, examples):
                missing.append(f"{rel}: {kind} {name}")
    if missing:
        print(f"{len(missing)} of {total} public names of include/gpucost have no example in docs/examples/cpp/:")
        print("\n".join("  " + m for m in missing))
        return 1
    print(f"{total} public names of include/gpucost, each used in docs/examples/cpp/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
