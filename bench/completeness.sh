#!/usr/bin/env bash
# Per-site completeness at scale (replication): D datasets x F files wanted at one site. Prints the full
# recompute (what every engine pass did before) beside a pass after one replica changed (only the datasets
# the triggers marked are aggregated), and the marking's cost on a bulk update.
#   bench/completeness.sh [datasets] [files-per-dataset]   (defaults 1000 1000: 10^6 wanted replicas)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.CompletenessBench -Dexec.args="${*:-1000 1000}"
