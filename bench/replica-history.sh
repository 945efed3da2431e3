#!/usr/bin/env bash
# The replica history's costs for deleted files (V68, V70): a bulk delete of N tape-only files and of N files with
# one replica each (total, and the history triggers' share), then ?file= of a deleted file with 10^6 rows in
# replica_event_file, with and without its name index.
#   bench/replica-history.sh [files] [rounds]   (defaults 200000 2)
# With file first: one file's history (?file=, and the others) in a dataset of many events, with and without an
# index on replica_event (file_id) (V73), and that index's cost to the write path and to the pruning.
#   bench/replica-history.sh file [events] [writes] [rounds]   (defaults 400000 200000 2)
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/jdk.sh"; find_jdk
exec mvn -B -q test-compile exec:java -Dexec.mainClass=dev.stagehand.bench.ReplicaHistoryBench -Dexec.args="${*:-200000 2}"
