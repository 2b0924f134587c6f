#!/usr/bin/env bash
# The GPU check of ovstage's CUDA backend, as `cargo xtask gpu-prepare`
# bundles it (target/gpu-check/). Run on a machine with an NVIDIA GPU:
#
#     bash gpu-check.sh OUTDIR
#
# Every step runs under `timeout` and writes OUTDIR/<step>.log; OUTDIR/steps.txt
# lists each step with its exit status, and OUTDIR/summary.txt says what
# passed. Exit status: 0 all ran steps passed (or no GPU: every step after the
# preflight skipped), 1 a step failed, 3 the bundle's binaries cannot run here
# (glibc older than the build machine's, for example).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: gpu-check.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
: > "$out/steps.txt"
failed=0

step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name"
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$name $rc" >> "$out/steps.txt"
    tail -n 15 "$out/$name.log"
    return $rc
}

# 1. Environment.
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
    nvidia-smi 2>&1 | head -n 20
    uname -a
    ldd --version 2>&1 | head -n 1
    nproc
} > "$out/environment.log" 2>&1
echo "environment 0" >> "$out/steps.txt"
head -n 3 "$out/environment.log"

# 2. Preflight: exit 2 means no GPU, 126/127 that the binary cannot run.
step preflight 60 "$here/bin/ovstage-gpu-check" preflight
rc=$?
cp "$out/preflight.log" "$out/preflight.json" 2>/dev/null
case $rc in
    0) ;;
    2) echo "no GPU: the remaining steps are skipped" | tee "$out/summary.txt"; exit 0 ;;
    126|127) echo "the bundle's binaries cannot run here" | tee "$out/summary.txt"; exit 3 ;;
    *) if grep -q GLIBC "$out/preflight.log"; then echo "glibc too old for the bundle" | tee "$out/summary.txt"; exit 3; fi
       failed=1 ;;
esac

# 3. Our PTX assembled by this machine's toolkit, when it has one.
ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
if [ -n "$ptxas" ]; then
    step ptxas 120 "$ptxas" -arch=sm_90 -v -o /dev/null "$here/rows.ptx" || failed=1
else
    echo "ptxas -1 (not found: skipped)" >> "$out/steps.txt"
fi

# 4. Correctness: every test binary of the bundle, one thread at a time.
for t in "$here"/bin/*.test; do
    name=$(basename "$t" .test)
    filter=()
    if [ -f "$here/filters/$name" ]; then mapfile -t filter < "$here/filters/$name"; fi
    step "test-$name" 300 "$t" --test-threads=1 "${filter[@]}" || failed=1
done

# 5. Throughput figures next to the driver's own copies.
step throughput 300 "$here/bin/ovstage-gpu-check" throughput || failed=1
cp "$out/throughput.log" "$out/throughput.json" 2>/dev/null

# 6. Python: the bundle's wheel against PyTorch's CUDA tensors, where the
# machine's python3 has torch (gpu-check.py prints SKIP when it sees no GPU).
py=$(command -v python3 || true)
if [ -n "$py" ] && "$py" -c "import torch, numpy" > /dev/null 2>&1; then
    site=$(mktemp -d)
    "$py" -m zipfile -e "$(ls "$here"/python/*.whl | head -n 1)" "$site"
    step python 300 env PYTHONPATH="$site" PYTHONUNBUFFERED=1 "$py" "$here/gpu-check.py" "$out" || failed=1
    # The hierarchy computation models on ours and, when OVSTAGE_REFERENCE_PY
    # names a folder holding the published package's `ovstage`, on it.
    step hierarchy-ours 120 env PYTHONPATH="$site" "$py" "$here/hierarchy-probe.py"
    if [ -n "${OVSTAGE_REFERENCE_PY:-}" ]; then
        step hierarchy-reference 120 env PYTHONPATH="$OVSTAGE_REFERENCE_PY" \
            LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${OVSTAGE_REFERENCE_LD_PATH:-}" \
            "$py" "$here/hierarchy-probe.py"
        if diff "$out/hierarchy-reference.log" "$out/hierarchy-ours.log" > "$out/hierarchy-diff.log"; then
            echo "hierarchy models: ours prints what the reference prints"
        else
            echo "hierarchy models differ from the reference:"; cat "$out/hierarchy-diff.log"
        fi
    fi
else
    echo "python -1 (no python3 with torch and numpy: skipped)" >> "$out/steps.txt"
fi

# 7. Optional: the published package's GPU benchmarks side by side, when
# OVSTAGE_REFERENCE_BIN names its bin/ folder (never part of the bundle).
# The binary runs on the reference's library, then on ours copied beside it
# as libovstage.so; OVSTAGE_REFERENCE_LD_PATH adds folders searched last
# (system libraries the reference needs and the machine lacks). Recorded,
# not judged: a case that errors on ours shows in the JSON.
ref=${OVSTAGE_REFERENCE_BIN:-}
if [ -n "$ref" ] && [ -x "$ref/benchmark.ovstage" ]; then
    mine=$(mktemp -d)
    cp "$ref/benchmark.ovstage" "$mine/"
    cp "$ref"/libstdc++.so.6 "$ref"/libgcc_s.so.1 "$mine/" 2>/dev/null
    cp "$here/lib/libovstage.so" "$mine/"
    extra=${OVSTAGE_REFERENCE_LD_PATH:-}
    for round in $(seq "${OVSTAGE_BENCH_ROUNDS:-1}"); do
        for lib in reference ours; do
            if [ $lib = reference ]; then dir=$ref; else dir=$mine; fi
            step "bench-$lib-$round" 240 env LD_LIBRARY_PATH="$dir${extra:+:$extra}" "$dir/benchmark.ovstage" \
                --benchmark_filter="${OVSTAGE_BENCH_FILTER:-_Gpu}" --benchmark_out="$out/bench-$lib-$round.json"
        done
    done
fi

if [ $failed -eq 0 ]; then echo "all steps passed" | tee "$out/summary.txt"; else
    echo "some steps failed: see steps.txt" | tee "$out/summary.txt"; fi
exit $failed
