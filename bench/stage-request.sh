#!/usr/bin/env bash
# Stage request benchmark: one 100,000-file request POSTed over real HTTP to the running service on the
# embedded PostgreSQL (database stagehand_bench under target/pg). Usage: bench/stage-request.sh [files] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dstagehand.db.local-dir=target/pg \
  -Dexec.mainClass=dev.stagehand.bench.StageRequestBench -Dexec.args="${1:-100000} ${2:-5}"
