#!/usr/bin/env bash
# Disk cache benchmark: staging throughput (bulk vs per-file reservations) and release latency under load.
#   bench/cache.sh [files] [threads] [batch]      (defaults 10000 4 100)
#   bench/cache.sh --inventory [copies]           start-up inventory over that many cached copies (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.CacheBench -Dexec.args="${*:-10000 4 100}"
