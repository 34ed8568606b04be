#!/usr/bin/env bash
# Wheels that the device machine's image lacks (../.library/device/KINDS.md: Python 3.12,
# torch, xarray, pandas, scipy, statsmodels, scikit-learn, seaborn, psutil, msgpack, ... are
# there; dask, distributed, netCDF4, pingouin and their own small dependencies are not, and
# nothing can be fetched there). Downloaded here, for CPython 3.12 on x86-64 Linux, into
# _scratch/device_wheels (ignored by git), which the device call carries:
#     bash benchmarks/device_wheels.sh
#     run(command="bash benchmarks/device_run.sh", carry=["_scratch/device_wheels"])
# The versions are the ones this project's CI installs (pip show in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=_scratch/device_wheels
rm -rf "$dest" && mkdir -p "$dest"
pkgs=(dask==2026.8.0 distributed==2026.8.0 netCDF4==1.7.5.1.post1 cftime==1.6.6.1 pingouin==0.7.0
      pandas_flavor partd locket tblib zict tornado importlib_metadata zipp)
.venv/bin/pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d "$dest" "${pkgs[@]}"
ls -la "$dest"
du -sh "$dest"
