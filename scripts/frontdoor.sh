#!/bin/sh
# frontdoor.sh: the JAX front door (frontdoor/compile.py). Makes the virtual
# environment .venv-frontdoor in the checkout from frontdoor/requirements.txt
# (once, and again when that file changes), then runs, in the folder it was
# started from (MODULE:FUNCTION names resolve there and in the checkout),
#   python -m frontdoor.compile ARGS...      (a step function, for one slice)
#   python -m frontdoor.build_zoo ARGS...    (with --zoo first: the zoo)
# or, with --setup alone, only makes the environment (scripts/test.sh).
set -e
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-frontdoor"
if ! cmp -s "$root/frontdoor/requirements.txt" "$venv/requirements.txt"; then
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet -r "$root/frontdoor/requirements.txt"
	cp "$root/frontdoor/requirements.txt" "$venv/requirements.txt"
fi
[ "$1" = "--setup" ] && exit 0
module=frontdoor.compile
if [ "$1" = "--zoo" ]; then
	module=frontdoor.build_zoo
	shift
fi
# A fixed string hash seed: the same module text every run (build_zoo.py).
PYTHONHASHSEED=0 PYTHONPATH="$PWD:$root${PYTHONPATH:+:$PYTHONPATH}" \
	exec "$venv/bin/python" -m "$module" "$@"
