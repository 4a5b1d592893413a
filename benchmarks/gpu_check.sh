#!/usr/bin/env bash
# The GPU checks in one command, on a machine with a CUDA GPU (docs, At scale: "A GPU is a first-class
# machine"). From the checkout, after `make install`:
#
#   bash benchmarks/gpu_check.sh [OUT]            # OUT defaults to runs/gpu-check
#   STAGES="tests s3d" bash benchmarks/gpu_check.sh   # some stages only (tests s3d train bf16)
#   TESTS="tests/test_devices.py" STAGES=tests bash benchmarks/gpu_check.sh   # other test files
#
# Stages (each under its own time limit, so one that hangs does not eat the others):
#   tests  the torch-level tests on the default device, the GPU (tests marked `cpu` force the CPU, as
#          everywhere): OUT/tests.xml and the pass/fail list in OUT/summary.md
#   s3d    benchmarks/bench_s3d.py --device cuda: decoding with 1, 2, 4, 8 threads, the network alone,
#          end to end with the encoder's decoding threads (target: within 3x of the network alone)
#   train  benchmarks/bench_train_scale.py on a 1,000-video COIN world: the step model, the endpoint
#          model, the planner and the structured planner of protocols/coin-world-endpoints.toml, on the
#          GPU with the preset's schedule, then 40 steps on the CPU for the per-step ratio
#   bf16   the same on the GPU in fp32 and bf16, 3 seeds, paired by seed (the evidence bf16 needs to
#          become an option of `kepp train`; not run by default)
# Everything lands in OUT: summary.md (machine, commands, pass/fail, the numbers), one log per stage.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-runs/gpu-check}
PY=${PYTHON:-.venv/bin/python}
STAGES=${STAGES:-"tests s3d train"}
WORLD=${WORLD:-runs/bench-train-scale/coin-world-1000}
mkdir -p "$OUT"
export KEPP_THREADS=${KEPP_THREADS:-4} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}

TORCH_TESTS=${TESTS:-"tests/test_devices.py tests/test_device_agnostic.py tests/test_diffusion.py tests/test_training.py
  tests/test_endpoints.py tests/test_endpoints_variants.py tests/test_endpoint_probs.py tests/test_structured_loss.py
  tests/test_structured_training.py tests/test_planner.py tests/test_plan_command.py tests/test_s3d.py
  tests/test_encode_pipeline.py tests/test_extract_shards.py tests/test_features.py tests/test_windows.py
  tests/test_train_runs.py tests/test_faults.py tests/test_eval.py tests/test_decoded_methods.py"}

stage() {  # stage NAME LIMIT_SECONDS COMMAND...: run it, log it, record its exit status
  local name=$1 limit=$2; shift 2
  echo "== $name: $*" | tee -a "$OUT/commands.txt"
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name $rc $((SECONDS - t0))" >> "$OUT/stages.txt"
  tail -n 25 "$OUT/$name.log"
}

rm -f "$OUT/stages.txt" "$OUT/commands.txt"
touch "$OUT/stages.txt"
{ date -u +"%Y-%m-%d %H:%M UTC"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1;
  echo "cores: $(nproc)"; $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'available', torch.cuda.is_available(), torch.cuda.device_count(), 'GPU(s)')"; uptime; } > "$OUT/machine.txt"
cat "$OUT/machine.txt"

for s in $STAGES; do
  case $s in
    tests) stage tests 900 $PY -m pytest $TORCH_TESTS -q -n 4 -p no:cacheprovider --junitxml "$OUT/tests.xml" ;;
    s3d)   stage s3d 900 $PY benchmarks/bench_s3d.py --device cuda --seconds 120 --workers 1 2 4 8 \
             --json "$OUT/s3d.json" ;;
    train) stage render 900 $PY -m kepp_core data synth --from-plans ../shared/data/coin/COIN.json --videos 1000 \
             --fps 2 --size 32 --out "$WORLD"
           stage train-gpu 1200 $PY benchmarks/bench_train_scale.py --root "$WORLD" --device cuda \
             --work "$OUT/train" --json "$OUT/train-gpu.json"
           stage train-cpu 900 $PY benchmarks/bench_train_scale.py --root "$WORLD" --device cpu --steps 40 \
             --endpoint-epochs 2 --threads "$(nproc)" --work "$OUT/train" --json "$OUT/train-cpu.json" ;;
    bf16)  stage bf16 2400 $PY benchmarks/bench_train_scale.py --root "$WORLD" --device cuda --precision fp32 bf16 \
             --seeds 3 --work "$OUT/bf16" --json "$OUT/bf16.json" ;;
    *) echo "unknown stage $s (expected tests s3d train bf16)"; exit 2 ;;
  esac
done

$PY - "$OUT" <<'PY'
"""OUT/summary.md: the machine, every stage's exit status and time, the tests' pass/fail list, the numbers."""
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path

out = Path(sys.argv[1])
lines = ["# GPU check", "", "```", (out / "machine.txt").read_text().strip(), "```", "", "| stage | exit | seconds |",
         "|---|---|---|"]
for row in (out / "stages.txt").read_text().split("\n"):
    if row.strip():
        name, rc, secs = row.split()
        lines.append(f"| {name} | {'ok' if rc == '0' else ('TIMED OUT' if rc == '124' else 'FAILED ' + rc)} | {secs} |")
if (out / "tests.xml").is_file():
    cases = ET.parse(out / "tests.xml").getroot().iter("testcase")
    results = []
    for c in cases:
        verdict = "pass"
        for kind in ("failure", "error", "skipped"):
            if c.find(kind) is not None:
                verdict = {"failure": "FAIL", "error": "ERROR", "skipped": "skip"}[kind]
        results.append((verdict, f"{c.get('classname')}::{c.get('name')}"))
    counts = {v: sum(1 for r, _ in results if r == v) for v in ("pass", "FAIL", "ERROR", "skip")}
    lines += ["", f"## Torch-level tests on the GPU: {counts}", ""]
    lines += [f"- {v} {name}" for v, name in sorted(results, key=lambda r: (r[0] == "pass", r[1]))]
for name in ("s3d", "train-gpu", "train-cpu", "bf16"):
    log = out / f"{name}.log"
    if log.is_file():
        lines += ["", f"## {name}", "", "```", *log.read_text().strip().splitlines()[-30:], "```"]
(out / "summary.md").write_text("\n".join(lines) + "\n")
print(f"wrote {out / 'summary.md'}")
PY
