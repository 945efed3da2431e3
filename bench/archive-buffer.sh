#!/usr/bin/env bash
# The archive buffer's figures at scale: its use, files and bytes per state and the family queues, summed over
# every file as before V29 against the kept totals read now (same figures checked), and the totals' upkeep.
#   bench/archive-buffer.sh [files-in-buffer] [evicted] [families]   (defaults 2000000 1000000 20)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.ArchiveBufferBench -Dexec.args="${*:-2000000 1000000 20}"
