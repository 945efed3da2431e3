#!/usr/bin/env bash
# Pipeline overlap benchmark: tape reads into the disk cache while a drain empties it; end-to-end time vs the
# slowest stage alone vs the sum of the stages (simulated library on a virtual clock, real PostgreSQL and cache).
#   bench/pipeline.sh [volumes] [files-per-volume] [file-bytes] [drain-bytes/s] [cache-files]   (defaults 4 20 5000000 300000 20)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.PipelineBench -Dexec.args="${*:-4 20 5000000 300000 20}"
