#!/usr/bin/env bash
# Per-file database work of the recall path: many small files recalled from the simulated library on a fast clock
# (x10000) into a cache holding everything, so each staged file's round trips set the pace. Per round: files staged
# per second, time threads spent blocked on the recall engine's monitor, tape_drive rows written per file, and
# (JFR socket-read and file-force events) where the per-file waits on PostgreSQL and fsync go, by caller.
#   bench/staging-rows.sh [volumes] [files-per-volume] [file-bytes] [gap-bytes] [rounds]   (defaults 4 1000 4096 100000000 3)
#   gap-bytes apart: each file's read starts with a locate (the simulated drive goes LOCATING, then READING); 0: read through
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.StagingRowsBench -Dexec.args="${*:-4 1000 4096 100000000 3}"
