#!/bin/sh
# build_steps.sh: whole training steps at scale (frontdoor/steps.py). For
# each row of a step-times table (shared/data/step-times/steps.csv), or the
# IDs given, compiles the per-device program XLA's TPU compiler makes for
# that model and slice, into a measurement set `tpusim validate --data OUT`
# reads:
#   sh scripts/build_steps.sh STEPS.csv OUT [ID ...] [--builder auto|jax|maxtext]
# Runs in the front door's environment (.venv-frontdoor, made as
# scripts/frontdoor.sh makes it). MaxText's own code runs in .venv-maxtext
# (Python 3.12, frontdoor/requirements-maxtext.txt), made with
# --setup-maxtext; without it every row takes the JAX builder.
set -e
root="$(cd "$(dirname "$0")/.." && pwd)"
sh "$root/scripts/frontdoor.sh" --setup
if [ "$1" = "--setup-maxtext" ]; then
	venv="$root/.venv-maxtext"
	req="$root/frontdoor/requirements-maxtext.txt"
	if ! cmp -s "$req" "$venv/requirements.txt"; then
		# python3.12 on PATH, else pyenv's 3.12 (its shim answers
		# only where 3.12 is the selected version)
		py="${MAXTEXT_PYTHON:-python3.12}"
		if ! "$py" -V >/dev/null 2>&1 && command -v pyenv >/dev/null; then
			v=$(pyenv versions --bare | grep '^3\.12' | tail -1)
			py="$(pyenv root)/versions/$v/bin/python3.12"
		fi
		rm -rf "$venv"
		"$py" -m venv "$venv"
		"$venv/bin/pip" install --quiet -r "$req"
		cp "$req" "$venv/requirements.txt"
	fi
	exit 0
fi
PYTHONHASHSEED=0 PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" \
	exec "$root/.venv-frontdoor/bin/python" -m frontdoor.steps "$@"
