#!/usr/bin/env bash
# The prepared device check, one call of a session lent a GPU machine:
#     bash benchmarks/device_wheels.sh        # here, once: the wheels the device image lacks
#     run(command="bash benchmarks/device_run.sh", carry=["_scratch/device_wheels"], timeout_s=600)
# On the device (its image's python3: torch with CUDA, xarray, pandas, scipy, statsmodels, ...;
# nothing can be fetched there) it
#   1. (device_env.sh) puts the carried wheels in /tmp/lie_stats_deps (--no-deps: the image has
#      the rest) and this checkout on PYTHONPATH; prints the versions and whether CUDA is seen
#      (env.txt);
#   2. runs the tests marked gpu (CUDA against CPU: metrics, activations, a whole extraction,
#      Dask workers on CUDA) -> gpu_tests.log;
#   3. runs benchmarks/gpu.py (160m and 410m shapes on CPU and CUDA, 1.4b on CUDA) ->
#      gpu_results.md / .json, gpu_bench.log. (GPU_ARGS="--rehearse --shapes tiny --cuda-only=" PY=.venv/bin/python
#      rehearses the whole script on a machine without a GPU.)
# Everything lands in $OUT (the device tool returns it). Budget: ~1 min install, <= 3 min
# tests, <= 5 min benchmark; each step has its own timeout so a hang still returns the rest.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
timeout 240 "$PY" -m pytest -m gpu tests/test_metrics.py tests/test_activations.py tests/test_executors.py \
    -q -rs -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log"
echo "pytest exit ${PIPESTATUS[0]}" | tee -a "$OUT/gpu_tests.log"
timeout 330 "$PY" benchmarks/gpu.py --out "$OUT" --work /tmp/lie_stats_gpu ${GPU_ARGS:-} 2>&1 | tee "$OUT/gpu_bench.log"
echo "gpu.py exit ${PIPESTATUS[0]}" | tee -a "$OUT/gpu_bench.log"
