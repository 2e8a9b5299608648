#!/usr/bin/env bash
# Installs the repaired wheel the way a user would and checks that it is
# self-contained: a fresh venv outside the source tree, `pip install` of the
# wheel (dependencies as wheels only: no build tools), then, from a scratch
# directory, the README's Python example, `gpucost --version` and `gpucost
# demo` (with this machine's Abseil and simdjson masked where it can), and an
# ldd check that every library the extension loads is either inside the
# installed package or one the manylinux policy lets a wheel take from the
# system (glibc, libstdc++, libgcc).
#
# usage: run.sh DIST_DIR SOURCE_DIR PYTHON
set -euo pipefail
dist=$1 source=$2 python=$3

fail() { echo "wheel_install: $*" >&2; exit 1; }
shopt -s nullglob
wheels=("$dist"/gpucost-*-manylinux_*.whl)
[[ ${#wheels[@]} -eq 1 ]] || fail "expected one manylinux wheel in $dist (make wheel), found ${#wheels[@]}: ${wheels[*]:-}"
wheel=${wheels[0]}
echo "wheel: $(basename "$wheel")"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpucost-wheel-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"  # not the checkout: nothing may be imported from the source tree
unset PYTHONPATH LD_LIBRARY_PATH VIRTUAL_ENV

"$python" -m venv "$work/venv"
venv_py=$work/venv/bin/python
"$venv_py" -m pip install -q --disable-pip-version-check --no-compile --only-binary=:all: "$wheel" \
  || fail "pip install $wheel failed"

site=$("$venv_py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
pkg=$("$venv_py" -c 'import gpucost, os; print(os.path.dirname(gpucost.__file__))')
[[ $pkg == "$site/gpucost" ]] || fail "gpucost was imported from $pkg, not from the venv ($site)"

# Typed package: the marker and the extension's stubs are installed.
[[ -f $pkg/py.typed && -f $pkg/_core.pyi ]] || fail "py.typed or _core.pyi missing from $pkg"
# The report's templates are package data (gpucost/templates): the demo below renders them.
[[ -f $pkg/templates/report.html && -f $pkg/templates/table.html ]] || fail "the report's templates are missing from $pkg/templates"
compgen -G "$site/gpucost-*.dist-info/licenses/LICENSE" > /dev/null \
  || compgen -G "$site/gpucost-*.dist-info/LICENSE" > /dev/null || fail "LICENSE missing from the .dist-info"

# Every shared object in the package (the extension and the libraries
# auditwheel bundled) resolves its dependencies inside the package or to the
# system libraries manylinux allows; nothing from the build machine's
# /usr/lib (libabsl_*, libsimdjson) and nothing "not found".
allowed='^(linux-vdso\.so|ld-linux[-a-z0-9_.]*\.so|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libutil\.so|libstdc\+\+\.so|libgcc_s\.so)'
objects=("$pkg"/_core*.so "$site"/gpucost.libs/*.so*)
[[ ${#objects[@]} -ge 1 && -f ${objects[0]} ]] || fail "no extension module in $pkg"
bundled=0
for so in "${objects[@]}"; do
  [[ $so == "$site"/gpucost.libs/* ]] && bundled=$((bundled + 1))
  while read -r name arrow path _; do
    [[ -z $name || $name == statically ]] && continue
    [[ $arrow == "=>" ]] || path=$name  # lines without "=>": the loader, vdso
    if [[ $path == "not" ]]; then fail "$(basename "$so"): $name not found"; fi
    if [[ $path == "$site"/gpucost* ]]; then continue; fi
    [[ $(basename "$name") =~ $allowed ]] || fail "$(basename "$so") loads $name from $path, outside the wheel"
  done < <(ldd "$so")
done
echo "ldd: ${#objects[@]} shared objects, ${bundled} bundled in gpucost.libs, all resolved inside the wheel or to glibc/libstdc++/libgcc"

# One version everywhere: the metadata, gpucost.__version__ and the command.
version=$("$venv_py" -c 'import importlib.metadata as m; print(m.version("gpucost"))')
[[ $("$venv_py" -c 'import gpucost; print(gpucost.__version__)') == "$version" ]] \
  || fail "gpucost.__version__ differs from the wheel's version $version"
[[ $("$work/venv/bin/gpucost" --version) == "gpucost $version" ]] || fail "gpucost --version does not say $version"

# Where it can (root, mount namespaces), the rest runs as on a machine
# without Abseil and simdjson: this machine's copies are bound to /dev/null
# in a private mount namespace for the commands.
masked=()
if [[ $(id -u) == 0 ]] && unshare --mount true 2> /dev/null; then
  cat > "$work/masked" <<'SH'
#!/usr/bin/env bash
set -euo pipefail
for lib in $(ldconfig -p | awk '/libabsl_|libsimdjson/ {print $NF}'); do
  mount --bind /dev/null "$(readlink -f "$lib")"
done
exec "$@"
SH
  chmod +x "$work/masked"
  masked=(unshare --mount "$work/masked")
  if "${masked[@]}" "$venv_py" -c 'import ctypes; ctypes.CDLL("libsimdjson.so")' 2> /dev/null; then
    fail "masking the system's libsimdjson did not work"
  fi
  echo "system Abseil and simdjson masked for the README example and the demo"
else
  echo "not masking the system's Abseil and simdjson (needs root and mount namespaces); ldd above is the check"
fi

# The README's ten lines, as a user pastes them.
"${masked[@]}" "$venv_py" "$source/tests/wheel/readme_example.py" "$source/README.md" > readme.out 2>&1 \
  || fail "the README example failed: $(tail -5 readme.out)"

"${masked[@]}" "$work/venv/bin/gpucost" demo --no-progress > demo.out 2>&1 \
  || fail "gpucost demo failed: $(tail -5 demo.out)"
[[ -s gpucost-demo/report.html ]] || fail "gpucost demo wrote no report"
echo "README example, gpucost --version ($version) and gpucost demo ran from $work"
