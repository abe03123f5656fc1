#!/usr/bin/env bash
# One-command set-up for cjstats: finds a Python >= 3.12, makes .venv, installs the package, then runs
#   bash scripts/run.sh demo   -> installs cjstats with all extras and runs `cjstats demo` on bundled data
#   bash scripts/run.sh test   -> installs cjstats with test extras and runs the test suite (on every core, up to 4)
#   bash scripts/run.sh ARGS   -> runs `cjstats ARGS` in the environment
# Paths in ARGS are taken from the folder you call it from (the script never changes folder).
# The package is installed only when needed: a stamp file in the venv records the hash of pyproject.toml and the
# extras installed; a changed pyproject.toml reinstalls, another extra installs the union of the extras.
# Set CJSTATS_PYTHON=/path/to/python3.12 to choose the interpreter, CJSTATS_VENV to choose the venv.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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

# install "$root[extra]" unless the stamp says this pyproject.toml is installed with that extra. The stamp keeps the
# set of extras installed so far and a new extra installs the union, so `demo` (all) then `test` (test) then `demo`
# installs twice in all ([all], then [all,test]) instead of once per switch.
ensure_installed() {
  local extra="$1" stamp="$venv/.cjstats-install-stamp" key have="" x union
  key="$("$venv/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$root/pyproject.toml") $root"
  if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$key" ]; then
    have="$(sed -n 2p "$stamp")"
  fi
  for x in $have; do
    if [ "$x" = "$extra" ]; then return 0; fi
  done
  union="$(printf '%s\n' $have "$extra" | sort -u | paste -sd, -)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[$union]"
  printf '%s\n%s\n' "$key" "${union//,/ }" > "$stamp"
}

task="${1:-demo}"
case "$task" in
  test)
    shift || true
    ensure_installed test
    if [ "$#" -eq 0 ]; then set -- "$root/tests"; fi
    # pytest-xdist (in the test extra): one worker per core, at most 4 (each imports PyMC and friends), tests of
    # one module or class on one worker (--dist loadscope: they share their fitted fixtures). `-n 0` runs serially.
    par=()
    case " $* " in
      *" -n "*|*" -n0 "*|*" --numprocesses"*|*" -p no:xdist "*) ;;
      *)
        ncpu="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
        if [ "$ncpu" -gt 4 ]; then ncpu=4; fi
        if [ "$ncpu" -ge 2 ] && "$venv/bin/python" -c 'import xdist' >/dev/null 2>&1; then
          par=(-n "$ncpu" --dist loadscope)
        fi ;;
    esac
    exec "$venv/bin/python" -m pytest --rootdir "$root" -c "$root/pyproject.toml" ${par[@]+"${par[@]}"} "$@"
    ;;
  demo)
    shift || true
    ensure_installed all
    exec "$venv/bin/cjstats" demo "$@"
    ;;
  *)
    ensure_installed all
    exec "$venv/bin/cjstats" "$@"
    ;;
esac
