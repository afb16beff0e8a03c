#!/usr/bin/env bash
# The GPU figures of docs/results.md in one command, on a GPU machine that has PyTorch, JAX and transformers but
# neither Keras nor a network (Python 3.12): the wheels it lacks are fetched here first and travel with the tree.
#
#   tools/gpu_session.sh prepare   here: Keras, keras-hub and the two they need that such a machine lacks, into
#                                  .whl/, and SST-2 with all-MiniLM-L6-v2 (its weights in float16) into .gpu_data/
#                                  (benchmarks/gpu_sst2_finetune.py --pack); git ignores both (.git/info/exclude)
#   tools/gpu_session.sh run [benchmark options]
#                                  there, from the repository root with .whl/ beside it: installs them into
#                                  /tmp/site and runs benchmarks/gpu_benchmark.py (default: the torch engines
#                                  against Hugging Face eager, with --profile), then the JAX engines
#   tools/gpu_session.sh sst2 [benchmark options]
#                                  there, with .whl/ and .gpu_data/ beside it: the second run, a real fine-tune,
#                                  benchmarks/gpu_sst2_finetune.py on all of SST-2 (default: every engine in
#                                  bfloat16 and in float16 with loss scaling)
# The device tool's call: carry [".whl"] for run, [".whl", ".gpu_data"] for sst2 (about 56 MB of its 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(keras==3.15.1 keras-hub==0.32.0 optree==0.20.0 namex==0.1.0)

case "${1:-}" in
    prepare)
        exclude="$(git rev-parse --git-path info/exclude)"
        mkdir -p "$(dirname "$exclude")"
        for ignored in /.whl/ /.gpu_data/; do
            grep -qx "$ignored" "$exclude" 2>/dev/null || echo "$ignored" >> "$exclude"
        done
        python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
            -d .whl "${WHEELS[@]}"
        ls .whl
        "${PYTHON:-.venv/bin/python}" benchmarks/gpu_sst2_finetune.py --pack .gpu_data
        du -sh .whl .gpu_data ;;
    run|sst2)
        command="$1"
        shift
        python3 -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
            .whl/*.whl
        export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
        python3 -c "import torch, jax, transformers, keras; print('torch', torch.__version__, '| jax', jax.__version__,
                    '| transformers', transformers.__version__, '| keras', keras.__version__)"
        if [ "$command" = sst2 ]; then
            python3 benchmarks/gpu_sst2_finetune.py --data .gpu_data/sst2/train.tsv \
                --init .gpu_data/checkpoint_float16 "$@"
        elif [ $# -gt 0 ]; then
            python3 benchmarks/gpu_benchmark.py "$@"
        else
            python3 benchmarks/gpu_benchmark.py --engines hf_eager kbert_torch kbert_torch_compiled hf_compiled --profile
            python3 benchmarks/gpu_benchmark.py --engines hf_eager kbert_jax keras_hub_jax
        fi ;;
    *) echo "usage: tools/gpu_session.sh prepare | run [benchmark options] | sst2 [benchmark options]" >&2; exit 2 ;;
esac
