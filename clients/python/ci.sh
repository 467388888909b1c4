#!/usr/bin/env bash
# CI for the Python client: a fresh virtualenv under a temporary directory, the package installed from this
# folder with its test and adapter extras (httpx, pytest, langchain-core, llama-index-core from PyPI) and mypy,
# a type check of the package (mypy --strict: it ships py.typed, so its users' type checkers read its
# annotations), a loci binary built from the repository root, and the test suite against it (tests/conftest.py
# starts the server; tests/test_models_openapi.py checks the models against docs/openapi.json).
# Prints the time of each phase and the total.
#
# Settings (environment): PYTHON (the interpreter that makes the venv, default python3; 3.9 or later),
# LOCI_BIN (a built loci instead of building ./cmd/loci). Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

echo "== venv and pip install loci-client[test,langchain,llama-index] mypy"
"${PYTHON:-python3}" -m venv "$work/venv"
# Pinned to the versions the suite last passed with (ci-constraints.txt), so a new upstream release cannot turn CI
# red on its own; the package's own requirements stay ranges for users.
"$work/venv/bin/python" -m pip install --quiet -c "$here/ci-constraints.txt" "$here[test,langchain,llama-index]" mypy
install_s=$((SECONDS - start))

echo "== mypy --strict src/loci_client"
(cd "$here" && "$work/venv/bin/python" -m mypy --strict --cache-dir "$work/mypy-cache" src/loci_client)
mypy_s=$((SECONDS - start - install_s))

bin=${LOCI_BIN:-}
if [[ -z "$bin" ]]; then
  echo "== go build ./cmd/loci"
  bin="$work/loci"
  (cd "$repo" && go build -o "$bin" ./cmd/loci)
fi
build_s=$((SECONDS - start - install_s - mypy_s))

echo "== pytest clients/python/tests"
cd "$here"
LOCI_BIN="$bin" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
test_s=$((SECONDS - start - install_s - mypy_s - build_s))
echo "== python client CI: $((SECONDS - start))s in all (install ${install_s}s, mypy ${mypy_s}s, build ${build_s}s, tests ${test_s}s)"
