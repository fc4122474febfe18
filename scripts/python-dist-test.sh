#!/usr/bin/env bash
# Builds the Python sdist and, from that sdist alone, the wheel (which
# compiles the Rust library through setuptools-rust); then, for every Python
# on this machine inside the package's requires-python, installs the wheel
# into a fresh virtualenv and runs the Python test suite against the
# installed package, with no SICORE_LIBRARY set (run by scripts/test.sh).
#
# Pythons looked at: pyenv's (/root/.pyenv/versions/*, or $PYENV_ROOT) and
# Debian's (/usr/bin/python3.N). Cargo's target directory is the checkout's:
# the sdist's own copy of the crate is compiled, and the dependencies
# already built there are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
step() { printf '\n== %s\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sicore-pydist.XXXXXX")
trap 'rm -rf "$work"' EXIT

step "python: sdist, then the wheel from the sdist (python -m build)"
buildenv=$root/target/pybuild
[ -x "$buildenv/bin/python" ] || python3 -m venv "$buildenv"
"$buildenv/bin/pip" install -q --upgrade pip build packaging
CARGO_TARGET_DIR=$root/target "$buildenv/bin/python" -m build --outdir "$work/dist" bindings/python \
  > "$work/build.log" 2>&1 || { tail -50 "$work/build.log" >&2; exit 1; }
sdist=$(ls "$work"/dist/sicore-*.tar.gz)
wheel=$(ls "$work"/dist/sicore-*.whl)
echo "built $(basename "$sdist") and $(basename "$wheel")"
# SICORE_PYDIST_OUT: a directory to keep both in (scripts/test.sh installs
# the wheel once more, with the test extras).
if [ -n "${SICORE_PYDIST_OUT:-}" ]; then
  rm -rf "$SICORE_PYDIST_OUT" && mkdir -p "$SICORE_PYDIST_OUT"
  cp "$sdist" "$wheel" "$SICORE_PYDIST_OUT/"
fi
# The sdist carries the crate; the wheel carries the library and is
# tagged for this platform, for any Python 3.
tar tzf "$sdist" > "$work/sdist.txt"
grep -q '/rust/Cargo.lock$' "$work/sdist.txt"
grep -q '/rust/src/lib.rs$' "$work/sdist.txt"
# Both editions' protos (the crate's build and tests/test_protos_fresh.py).
grep -q '/rust/proto/si.proto$' "$work/sdist.txt"
grep -q '/rust/proto/si18/si.proto$' "$work/sdist.txt"
grep -q '/rust/proto/si18/sicore.proto$' "$work/sdist.txt"
grep -q '/src/sicore/v1/si_pb2.py$' "$work/sdist.txt"
if grep -q '/rust/target/' "$work/sdist.txt"; then echo "the sdist carries a target directory" >&2; exit 1; fi
case "$(basename "$wheel")" in
  *-py3-none-linux_*.whl) ;;
  *) echo "unexpected wheel tag: $(basename "$wheel")" >&2; exit 1 ;;
esac
python3 -m zipfile -l "$wheel" > "$work/wheel.txt"
grep -q '^sicore/libsicore.so ' "$work/wheel.txt"
for f in sicore/v1/__init__.py sicore/v1/_pool.py sicore/v1/si_pb2.py sicore/v1/si_pb2.pyi \
         sicore/v1/sicore_pb2.py sicore/v1/sicore_pb2.pyi; do
  grep -q "^$f " "$work/wheel.txt" || { echo "the wheel lacks $f" >&2; exit 1; }
done

step "python: the installed wheel's test suite on every Python in requires-python"
spec=$("$buildenv/bin/python" - bindings/python/pyproject.toml <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
print(re.search(r'^requires-python\s*=\s*"([^"]+)"', text, re.M).group(1))
EOF
)
candidates=()
for py in "${PYENV_ROOT:-/root/.pyenv}"/versions/*/bin/python3 /usr/bin/python3.[0-9]*; do
  case "$py" in *-config) continue ;; esac
  [ -x "$py" ] && candidates+=("$py")
done
# Each Python gets a fresh virtualenv made by uv (PyPI, installed into the
# build environment above): about a second to make one and install into
# it, where `python -m venv` and pip took about 19 s of CPU per Python.
# pip itself installs the wheel in scripts/test.sh. Up to three Pythons
# are tested at once (the suite mostly waits); each one's output goes to a
# log, printed in order when all have ended.
"$buildenv/bin/pip" install -q "uv>=0.5"
export UV_PYTHON_DOWNLOADS=never
test_one() {
  local py=$1 version=$2 venv
  venv=$work/venv-$version-$(echo "$py" | md5sum | cut -c1-6)
  "$buildenv/bin/uv" venv -q --python "$py" "$venv"
  "$buildenv/bin/uv" pip install -q --python "$venv/bin/python" "$wheel" "pytest>=7" "pytest-timeout>=2"
  # From outside the checkout: the installed package, its bundled library.
  (cd "$work" && env -u SICORE_LIBRARY "$venv/bin/python" -c '
import sicore, sicore.v1, sys
lib = sicore.find_library()
assert "site-packages" in sicore.__file__, sicore.__file__
assert lib.parent.samefile(__import__("pathlib").Path(sicore.__file__).parent), lib
assert sicore.library_version() == sicore.__version__, (sicore.library_version(), sicore.__version__)
sicore.Scheduler().close()
sicore.v1.Scheduler().stop()
print(f"python {sys.version.split()[0]}: sicore {sicore.library_version()} from {lib}")
')
  (cd "$work" && env -u SICORE_LIBRARY "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    -c "$root/bindings/python/pyproject.toml" --rootdir "$root/bindings/python" "$root/bindings/python/tests")
}
tested=()
skipped=()
n=0
for py in "${candidates[@]}"; do
  version=$("$py" -c 'import platform; print(platform.python_version())' 2>/dev/null) || continue
  if ! "$buildenv/bin/python" -c 'import sys; from packaging.specifiers import SpecifierSet as S; sys.exit(0 if sys.argv[2] in S(sys.argv[1]) else 1)' "$spec" "$version"; then
    skipped+=("$version")
    continue
  fi
  while [ "$(jobs -rp | wc -l)" -ge 3 ]; do wait -n || true; done
  # A failing command ends the job under set -e, before it marks success.
  { test_one "$py" "$version" > "$work/test-$n.log" 2>&1; touch "$work/test-$n.ok"; } &
  tested+=("$version ($py)")
  n=$((n + 1))
done
wait
failed=0
for ((i = 0; i < n; i++)); do
  cat "$work/test-$i.log"
  if [ ! -e "$work/test-$i.ok" ]; then
    echo "the wheel's tests failed on python ${tested[i]} (output above)" >&2
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1
if [ ${#tested[@]} -eq 0 ]; then
  echo "no Python within requires-python ($spec) found" >&2
  exit 1
fi
step "python: wheel tested on ${#tested[@]} Pythons"
printf '  %s\n' "${tested[@]}"
[ ${#skipped[@]} -eq 0 ] || echo "  outside requires-python ($spec), not tested: ${skipped[*]}"
