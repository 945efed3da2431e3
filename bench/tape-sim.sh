#!/usr/bin/env bash
# Event throughput of the simulated tape library on the virtual clock.
#   bench/tape-sim.sh [files] [volumes] [drives] [accessors]     (defaults 100000 2000 8 2)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.TapeSimBench -Dexec.args="$*"
