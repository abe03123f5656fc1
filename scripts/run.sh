#!/usr/bin/env bash
# One-command set-up for cjstats: finds a Python >= 3.12, makes .venv, installs the package, then runs
#   bash scripts/run.sh demo   -> installs cjstats with all extras and runs `cjstats demo` on bundled data
#   bash scripts/run.sh test   -> installs cjstats with test extras and runs the test suite
#   bash scripts/run.sh ARGS   -> runs `cjstats ARGS` in the environment
# Set CJSTATS_PYTHON=/path/to/python3.12 to choose the interpreter yourself.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${CJSTATS_VENV:-$root/.venv}"

ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

find_python() {
  local c p v
  for c in "${CJSTATS_PYTHON:-}" python3.12 python3.13 python3.14 python3 python; do
    [ -n "$c" ] || continue
    p="$(command -v "$c" 2>/dev/null)" || continue
    if ok "$p"; then echo "$p"; return 0; fi
  done
  # pyenv installs a 3.12 whose shim fails until pyenv is told to use it: call the interpreter directly.
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9])(\.[0-9]+)?$' | sort -rV); do
      p="$(pyenv root)/versions/$v/bin/python"
      if [ -x "$p" ] && ok "$p"; then echo "$p"; return 0; fi
    done
  fi
  return 1
}

if [ ! -x "$venv/bin/python" ] || ! ok "$venv/bin/python"; then
  py="$(find_python)" || { echo "cjstats needs Python >= 3.12; none was found (set CJSTATS_PYTHON)." >&2; exit 1; }
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
fi

task="${1:-demo}"
case "$task" in
  test)
    shift || true
    "$venv/bin/python" -m pip install --quiet -e ".[test]"
    exec "$venv/bin/python" -m pytest "$@"
    ;;
  demo)
    shift || true
    "$venv/bin/python" -m pip install --quiet -e ".[all]"
    exec "$venv/bin/cjstats" demo "$@"
    ;;
  *)
    "$venv/bin/python" -m pip install --quiet -e ".[all]"
    exec "$venv/bin/cjstats" "$@"
    ;;
esac
