# Sourced by the device scripts (device_run.sh, device_suite.sh), on the device machine or in a
# rehearsal here (PY=.venv/bin/python): sets OUT (created), PY and PYTHONPATH, moves to the
# checkout's root, installs the carried wheels (_scratch/device_wheels, see device_wheels.sh)
# into /tmp/lie_stats_deps (--no-deps: the image has the rest) and writes the versions and
# whether CUDA is seen to $OUT/env.txt.
OUT=${OUT:-/tmp/lie_stats_device_out}
mkdir -p "$OUT"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
PY=${PY:-python3}
deps=/tmp/lie_stats_deps
rm -rf "$deps"
"$PY" -m pip install --quiet --no-index --no-deps --target "$deps" _scratch/device_wheels/*.whl 2>&1 | tail -5
export PYTHONPATH="$deps:$PWD"
"$PY" - <<'PY' 2>&1 | tee "$OUT/env.txt"
import importlib, platform
print("python", platform.python_version())
for m in ("torch", "numpy", "scipy", "pandas", "xarray", "netCDF4", "dask", "distributed", "statsmodels",
          "pingouin", "sklearn", "matplotlib", "safetensors", "transformers", "psutil", "lie_stats"):
    try:
        print(m, getattr(importlib.import_module(m), "__version__", "?"))
    except Exception as e:  # report every gap in one call
        print(m, "MISSING:", type(e).__name__, e)
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
PY
