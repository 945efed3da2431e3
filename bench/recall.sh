#!/usr/bin/env bash
# Recall scheduler benchmark: sample and generated workloads through tape-aware, greedy and fifo on the
# simulated LTO-9 library (8 drives, 2 accessors unless a spec says D/A), side by side with the lower
# bound, then one scheduling pass over 1,000,000 queued file requests.
#   bench/recall.sh            everything (several minutes on 2 cores)
#   bench/recall.sh --quick    samples only, fifo skipped on the 100k workload
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workloads.sh"
SPECS=("$W/bulk-hep-5k.csv" "$W/bulk-climate-5k.csv" "$W/random-user-5k.csv" "$W/multi-experiment-5k.csv"
       "$W/duplicates-5k.csv" "$W/bulk-hep-100k.csv.gz")
EXTRA=()
if [ "${1:-}" != "--quick" ]; then
  EXTRA+=("$(gen bulk-hep 101 8000)" "$(gen bulk-climate 102 8000)" "$(gen random-user 103 4000)"
          "$(gen multi-experiment 104 6000)" "$(gen duplicates 105 4000)")
  EXTRA+=("$(gen bulk-hep 201 5000)@16/1" "$(gen bulk-climate 202 5000)@16/1" "$(gen random-user 203 5000)@16/1"
          "$(gen bulk-hep 301 3000)@4/2" "$(gen random-user 303 3000)@4/2" "$(gen multi-experiment 304 3000)@4/2")
fi
mvn -B -q test-compile
exec mvn -B -q exec:java -Dexec.mainClass=dev.stagehand.bench.RecallBench \
  -Dexec.args="--no-fifo-over 1000000 ${SPECS[*]} ${EXTRA[*]}"
