#!/usr/bin/env bash
# The BOS suite (datasets/pico_bos) trained on a CUDA machine, in one device call:
#     bash benchmarks/device_wheels.sh                  # here, once: the wheels the device image lacks
#     python benchmarks/emergence.py --prepare-text     # here, once: fetch and tokenize the text into
#                                                       # benchmarks/_emergence_state (the device has no network)
#     run(command="bash benchmarks/device_suite.sh",
#         carry=["_scratch/device_wheels", "benchmarks/_emergence_state"], timeout_s=600)
# On the device it trains the three seeds of benchmarks/emergence.py's configuration (GPT-NeoX
# 12 layers x 8 heads, d_head 16, <bos> at position 0 of every window and probe sequence) side
# by side on the one GPU, for the declared STEPS or until TRAIN_S seconds have passed (each run
# then measures and saves the step it reached), saving a checkpoint at every measured step
# (--checkpoints); then `lie-stats extract` builds the suite's cube from them on the GPU. Into
# $OUT: env.txt, train_s{0,1,2}.log, emergence/<run>.{csv,json,png} (the curves),
# pico_bos.nc, extract.log. Commit the cube and curves with the device named (DATA card:
# datasets/pico_bos/README.md).
# Rehearsal on a machine without a GPU, at a tiny size on the committed sample text:
#     REHEARSE=1 PY=.venv/bin/python OUT=/tmp/suite_rehearsal bash benchmarks/device_suite.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
if [ -n "${REHEARSE:-}" ]; then
    device=cpu steps=6 train_s=${TRAIN_S:-300} work=$(mktemp -d)
    args=(--text sample --n-layers 2 --n-heads 2 --d-head 8 --batch-size 4 --seq-len 32 --eval-windows 8
          --probe-seqs 4 --log-until 2 --every 3)
    state=$work/state
else
    device=cuda steps=${STEPS:-20000} train_s=${TRAIN_S:-420} work=/tmp/lie_stats_suite
    args=()
    state=benchmarks/_emergence_state
fi
deadline=$(date -u -d "+${train_s} seconds" +%H:%M)
echo "suite: device $device, steps $steps, deadline $deadline UTC" | tee "$OUT/suite.txt"
for seed in 0 1 2; do
    "$PY" benchmarks/emergence.py --seed "$seed" --steps "$steps" "${args[@]}" --device "$device" \
        --deadline "$deadline" --out "$OUT/emergence" --state "$state" --checkpoints "$work/checkpoints" \
        > "$OUT/train_s$seed.log" 2>&1 &
done
wait
tail -n 2 "$OUT"/train_s*.log
runs=("$work"/checkpoints/bos_*)
timeout 150 "$PY" -m lie_stats extract "${runs[@]}" --families Q,K,V,O,QK,OV --projection none \
    --probe "$work/checkpoints/probe.npz" -o "$OUT/pico_bos.nc" --device "$device" --store-dtype float32 \
    2>&1 | tee "$OUT/extract.log"
echo "extract exit ${PIPESTATUS[0]}" | tee -a "$OUT/extract.log"
