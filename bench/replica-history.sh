#!/usr/bin/env bash
# The replica history's costs for deleted files (V68, V70): a bulk delete of N tape-only files and of N files with
# one replica each (total, and the history triggers' share), then ?file= of a deleted file with 10^6 rows in
# replica_event_file, with and without its name index.
#   bench/replica-history.sh [files] [rounds]   (defaults 200000 2)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.ReplicaHistoryBench -Dexec.args="${*:-200000 2}"
