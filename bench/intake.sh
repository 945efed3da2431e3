#!/usr/bin/env bash
# Recall intake benchmark: the service's scheduler round (RecallService.poll) against 1,000,000 queued file
# requests in PostgreSQL (database stagehand_bench under target/pg): the round that takes them in, the rounds
# while they wait (one per poll interval), a round after a small new request. Usage: bench/intake.sh [files] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dstagehand.db.local-dir=target/pg \
  -Dexec.mainClass=dev.stagehand.bench.IntakeBench -Dexec.args="${1:-1000000} ${2:-5}"
