#!/usr/bin/env bash
# Makes the venv VENV (system Python) where it does not exist yet and
# installs the given PyPI packages into it: what scripts/fixture-venv.sh and
# bench/venv.sh share.
#
#   scripts/pypi-venv.sh VENV PACKAGE==VERSION...
#
# Exit codes: 0 installed; 1 venv or pip failed.
set -euo pipefail
VENV="$1"
shift
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$VENV" || exit 1
  "$VENV/bin/pip" install -q --upgrade pip || exit 1
fi
"$VENV/bin/pip" install -q "$@" || exit 1
