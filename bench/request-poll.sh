#!/usr/bin/env bash
# Status polls of a large stage request (native and WLCG GET, a token's scope check) in PostgreSQL (database
# stagehand_bench under target/pg), before V30 and now on the same data, and what V30's counting triggers
# cost a submission and a bulk change. Usage: bench/request-poll.sh [files] [wlcg-files]
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dstagehand.db.local-dir=target/pg \
  -Dexec.mainClass=dev.stagehand.bench.RequestPollBench -Dexec.args="${1:-1000000} ${2:-100000}"
