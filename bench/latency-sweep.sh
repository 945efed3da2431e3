#!/usr/bin/env bash
# Latency sweep for issue 4: generated random-user and multi-experiment workloads at 16/1, 8/2 and 4/2,
# tape-aware's p95 latency against greedy's and the longest wait against the aging limit (4 h).
#   bench/latency-sweep.sh            60 cases (well under a minute on 2 cores; --wide too)
#   bench/latency-sweep.sh --quick    the cases closest to the target at 16/1 only
#   bench/latency-sweep.sh --wide     120 cases: 20 multi-experiment workloads at 12/1, 16/1, 16/2, 24/2, 8/2, 4/2
#   bench/latency-sweep.sh --overload 10 multi-experiment workloads of 8000 files at 4/2: more drive work than
#                                     4 drives do while requests arrive (both campaigns against the aging limit)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workloads.sh"
CASES=()
if [ "${1:-}" = "--quick" ]; then
  for s in 213 228 253; do CASES+=("$(gen random-user $s 3000)@16/1"); done
  for s in 258 262; do CASES+=("$(gen multi-experiment $s 3000)@16/1"); done
elif [ "${1:-}" = "--overload" ]; then
  for s in 282 283 284 285 286 287 288 289 290 291; do CASES+=("$(gen multi-experiment $s 8000)@4/2"); done
elif [ "${1:-}" = "--wide" ]; then
  WL=()
  for sf in 224:3000 229:8000 234:3000 244:5000 254:4000 258:3000 262:3000 266:6000; do
    WL+=("$(gen multi-experiment ${sf%:*} ${sf#*:})"); done
  for s in 270 271 272 273 274 275 276 277 278 279 280 281; do WL+=("$(gen multi-experiment $s $(( 3000 + (s % 3) * 1500 )))"); done
  for w in "${WL[@]}"; do for da in 12/1 16/1 16/2 24/2 8/2 4/2; do CASES+=("$w@$da"); done; done
else
  WL=()
  # SEED:FILES; the seeds closest to the target in earlier sweeps are among them (213, 228, 253, 258, 262, 229)
  for sf in 211:2000 213:3000 218:4000 223:5000 228:3000 233:2000 238:3000 243:4000 248:5000 253:3000 263:4000 268:2000; do
    WL+=("$(gen random-user ${sf%:*} ${sf#*:})"); done
  for sf in 224:3000 229:8000 234:3000 244:5000 254:4000 258:3000 262:3000 266:6000; do
    WL+=("$(gen multi-experiment ${sf%:*} ${sf#*:})"); done
  for da in 16/1 8/2 4/2; do for w in "${WL[@]}"; do CASES+=("$w@$da"); done; done
fi
mvn -B -q test-compile
exec mvn -B -q exec:java -Dexec.mainClass=dev.stagehand.bench.LatencySweep -Dexec.args="${CASES[*]}"
