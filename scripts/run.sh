#!/bin/sh
# run.sh: set-up command 1 of 2. Installs dependencies, builds tpusim and runs it
# on the example training step that ships in the repo:
#   tpusim run cli/examples/mlp_train_step.hlo --hw hwspecs/v3.yaml
set -e
cd "$(dirname "$0")/.."
. scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/cli/tpusim run cli/examples/mlp_train_step.hlo --hw hwspecs/v3.yaml "$@"
