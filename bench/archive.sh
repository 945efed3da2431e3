#!/usr/bin/env bash
# Archive path benchmark: a producer lands files at a steady rate into a bounded buffer while they are
# registered, flushed to tape by file family and evicted (real PostgreSQL and files, simulated LTO-9 library
# on a virtual clock, bytes scaled down 10,000x). Reports whether the buffer stayed below its high-water mark
# and the sustained flush rate beside the producer's and the drives' rates.
#   bench/archive.sh [producer-MB/s] [seconds] [write-drives] [datasets] [file-GB] [buffer-GB] [flush-min-GB] [families, 0: one per dataset]
#   (defaults 600 3600 2 4 2 1000 20 0)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.ArchiveBench -Dexec.args="${*:-600 3600 2 4 2 1000 20 0}"
