#!/usr/bin/env bash
# The GPU figures of docs/results.md in one command, on a GPU machine that has PyTorch, JAX and transformers but
# neither Keras nor a network (Python 3.12): the wheels it lacks are fetched here first and travel with the tree.
#
#   tools/gpu_session.sh prepare   here: Keras, keras-hub and the two they need that such a machine lacks, into
#                                  .whl/ (git ignores it through .git/info/exclude)
#   tools/gpu_session.sh run [benchmark options]
#                                  there, from the repository root with .whl/ beside it: installs them into
#                                  /tmp/site and runs benchmarks/gpu_benchmark.py (default: the torch engines
#                                  against Hugging Face eager, with --profile), then the JAX engines
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(keras==3.15.1 keras-hub==0.32.0 optree==0.20.0 namex==0.1.0)

case "${1:-}" in
    prepare)
        exclude="$(git rev-parse --git-path info/exclude)"
        mkdir -p "$(dirname "$exclude")"
        grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
        python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
            -d .whl "${WHEELS[@]}"
        ls .whl ;;
    run)
        shift
        python3 -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
            .whl/*.whl
        export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
        python3 -c "import torch, jax, transformers, keras; print('torch', torch.__version__, '| jax', jax.__version__,
                    '| transformers', transformers.__version__, '| keras', keras.__version__)"
        if [ $# -gt 0 ]; then
            python3 benchmarks/gpu_benchmark.py "$@"
        else
            python3 benchmarks/gpu_benchmark.py --engines hf_eager kbert_torch kbert_torch_compiled hf_compiled --profile
            python3 benchmarks/gpu_benchmark.py --engines hf_eager kbert_jax keras_hub_jax
        fi ;;
    *) echo "usage: tools/gpu_session.sh prepare | run [benchmark options]" >&2; exit 2 ;;
esac
